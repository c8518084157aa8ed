//! A clock stepped back between runs used to make every new write invisible
//! behind older data with no warning (a write stamped by the clock loses to any
//! newer timestamp already stored). Now open warns, naming both times.

mod common;

use strata::clock::SimClock;
use strata::db::{Database, DbOptions};

const T1: i64 = 1_795_581_169_000_000; // 2026-11-25T04:32:49Z

fn open_at(dir: &std::path::Path, micros: i64) -> Database {
    let mut o = DbOptions::new(SimClock::new(micros));
    o.concurrent_compactors = 0;
    Database::open(dir, o).unwrap()
}

#[test]
fn a_clock_behind_the_newest_write_is_warned_about() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = open_at(dir.path(), T1);
        let t = db.create_table_cql(common::CREATE).unwrap();
        common::write(&t, 0..10);
        db.close().unwrap();
    }
    // Same time or later: no warning.
    let db = open_at(dir.path(), T1 + 1_000_000);
    assert!(db.warnings().is_empty(), "{:?}", db.warnings());
    db.close().unwrap();
    // An hour behind: warned, with both instants.
    let db = open_at(dir.path(), T1 - 3_600_000_000);
    let w = db
        .warnings()
        .iter()
        .find(|w| w.contains("clock"))
        .unwrap_or_else(|| panic!("no clock warning: {:?}", db.warnings()));
    assert!(w.contains("2026-11-25T04:32:49"), "{w}");
    assert!(w.contains("2026-11-25T03:32:49"), "{w}");
    db.close().unwrap();
}
