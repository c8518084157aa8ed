//! A late write with an old timestamp (a repair or a hint delivering an old
//! event) must not pin every expired window behind it (issue 12 point 3), and
//! must still be protected where an expired sstable really shadows it.
//!
//! TWCS with 1-hour windows and a 1-hour TTL: window sstables W0 and W1 expire
//! after two hours, while the late write, whose TTL counts from its arrival,
//! lives for ten. Cassandra's overlap rule blocks both drops (the late write's
//! timestamp is older than their newest data); the row-level check lets them
//! go because the late write is a row neither of them holds. When the late
//! write instead overwrites a row W0 holds (with an older timestamp, so W0's
//! expired cell shadows it), W0 stays until the late write itself expires, and
//! the row never reappears.

mod common;

use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const HOUR: i64 = 3_600;
const HOUR_MICROS: i64 = 3_600_000_000;
const H0: i64 = 491_000; // hours since the epoch (2026-01-05, after SimClock::fixed())

fn write(t: &Arc<Table>, k: i32, event_micros: i64, ts: i64, ttl: u32) {
    t.insert(
        &[
            ("k", Value::Int(k)),
            ("t", Value::BigInt(event_micros)),
            ("v", Value::Text(format!("{k}@{event_micros}"))),
        ],
        &WriteOptions {
            timestamp_micros: Some(ts),
            ttl_seconds: Some(ttl),
        },
    )
    .expect("insert");
}

/// Runs the scenario; `overwrite` makes the late write hit a row W0 holds.
/// Returns (ids of W0 and W1, ids dropped by compaction, table).
fn scenario(dir: &std::path::Path, overwrite: bool) -> (Vec<u64>, Vec<u64>, Arc<Table>, Database) {
    let clock = SimClock::fixed();
    clock.set_micros(H0 * HOUR_MICROS);
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir, opts).expect("open");
    db.create_table_cql(
        "CREATE TABLE ks.ts (k int, t bigint, v text, PRIMARY KEY (k, t)) WITH \
         gc_grace_seconds = 0 AND compaction = {'class': 'TimeWindowCompactionStrategy', \
         'compaction_window_unit': 'HOURS', 'compaction_window_size': 1, \
         'expired_sstable_check_frequency_seconds': 0}",
    )
    .expect("create");
    let t = db.table("ks", "ts").expect("table");
    // Hour 0: window W0, eight series, five events each, TTL one hour.
    for k in 0..8 {
        for r in 0..5 {
            let ts = H0 * HOUR_MICROS + r * 60_000_000;
            write(&t, k, ts, ts, HOUR as u32);
        }
    }
    t.flush().expect("flush W0");
    // Hour 1: window W1, and one late write of series 0 with a timestamp five
    // hours old and a ten-hour TTL from now.
    clock.set_micros((H0 + 1) * HOUR_MICROS);
    for k in 0..8 {
        for r in 0..5 {
            let ts = (H0 + 1) * HOUR_MICROS + r * 60_000_000;
            write(&t, k, ts, ts, HOUR as u32);
        }
    }
    let old_ts = (H0 - 5) * HOUR_MICROS;
    let event = if overwrite { H0 * HOUR_MICROS } else { old_ts };
    write(&t, 0, event, old_ts, 10 * HOUR as u32);
    t.flush().expect("flush W1 and the late write");
    let windows: Vec<u64> = {
        let view = t.view();
        let mut w: Vec<(i64, u64)> = view
            .sstables()
            .iter()
            .filter(|s| s.stats().min_timestamp_micros >= H0 * HOUR_MICROS)
            .map(|s| (s.stats().min_timestamp_micros, s.id()))
            .collect();
        w.sort_unstable();
        w.into_iter().map(|(_, id)| id).collect()
    };
    assert_eq!(
        windows.len(),
        2,
        "W0 and W1, the late write apart (segregation)"
    );
    // Two hours later both windows have expired; the late write has not.
    clock.set_micros((H0 + 3) * HOUR_MICROS);
    let limiter = db.compaction_limiter().clone();
    let records = t.compact_until_idle(&limiter, 1000).expect("compact");
    let dropped: Vec<u64> = records
        .iter()
        .filter(|r| r.kind == "drop")
        .flat_map(|r| r.inputs.clone())
        .collect();
    (windows, dropped, t, db)
}

fn rows(t: &Arc<Table>, k: i32) -> Vec<String> {
    t.select(&[Value::Int(k)], &ClusteringRange::ALL, false, usize::MAX)
        .expect("select")
        .iter()
        .map(|r| format!("{:?}", r))
        .collect()
}

#[test]
fn late_old_writes_pin_no_window_they_do_not_share_a_row_with() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (windows, dropped, t, _db) = scenario(dir.path(), false);
    for w in &windows {
        assert!(
            dropped.contains(w),
            "window sstable {w} dropped: {dropped:?}"
        );
    }
    assert!(windows.iter().all(|w| !t.view().version.contains(*w)));
    // The late write is all that is left, and it reads back.
    assert_eq!(rows(&t, 0).len(), 1);
    assert!((1..8).all(|k| rows(&t, k).is_empty()));
}

#[test]
fn an_expired_sstable_that_shadows_a_late_write_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (windows, dropped, t, _db) = scenario(dir.path(), true);
    let w0 = windows[0];
    assert!(
        !dropped.contains(&w0),
        "W0's expired cell shadows the late write's older value: dropping W0 \
         would resurrect it"
    );
    assert!(t.view().version.contains(w0));
    // The report names the late write's sstable as W0's blocker, and why.
    let report = t.expired_blockers();
    let w0_report = report
        .iter()
        .find(|c| c.candidate == w0)
        .expect("W0 is reported as expired");
    assert!(!w0_report.unshadowed());
    assert!(
        w0_report.blockers.iter().any(|b| b
            .blocks_because
            .as_deref()
            .is_some_and(|w| w.contains("same row"))),
        "{w0_report:?}"
    );
    // W1 shares no row with the late write: it goes.
    assert!(dropped.contains(&windows[1]), "{dropped:?}");
    // The overwritten row stays deleted (expired), never the late older value.
    assert!(rows(&t, 0).is_empty(), "{:?}", rows(&t, 0));
}
