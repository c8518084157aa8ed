//! Scenario: a read-only command (`tablestats`, `verify`) after a clean
//! shutdown that flushed everything.
//!
//! Before, every read-only open warned that the commit log held "writes not
//! yet flushed" whenever a segment held any record, flushed or not: after a
//! clean shutdown the active segment still holds the records its tables have
//! flushed past, so the warning was always there and meant nothing. Now the
//! records are counted against each table's flushed position: none after a
//! clean shutdown, the exact number after a crash.

mod common;

use strata::db::Database;

fn read_only() -> strata::db::DbOptions {
    let mut o = common::options();
    o.read_only = true;
    o
}

#[test]
fn clean_shutdown_leaves_nothing_to_warn_of_and_a_crash_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 300, 2);
    let db = Database::open(dir.path(), read_only()).unwrap();
    assert!(
        db.warnings().iter().all(|w| !w.contains("not yet flushed")),
        "{:?}",
        db.warnings()
    );
    db.close().unwrap();

    // A crash with 40 unflushed writes: exactly those are reported.
    let db = common::open(dir.path());
    common::write(&db.table("ks", "t").unwrap(), 300..340);
    drop(db);
    let db = Database::open(dir.path(), read_only()).unwrap();
    let w = db.warnings().join("\n");
    assert!(w.contains("holds 40 record(s)"), "{w}");
    assert!(w.contains("not yet flushed"), "{w}");
    db.close().unwrap();
}
