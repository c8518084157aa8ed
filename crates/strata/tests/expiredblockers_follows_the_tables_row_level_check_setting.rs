//! `strata sstable expiredblockers` must say what the table will do. With
//! `row_level_expiry_check: false` the table keeps every fully expired sstable
//! Cassandra's overlap rule blocks, so the report must show those sstables as
//! blocked, never as "cleared: dropped at the next check".
//!
//! TWCS with 1-hour windows and a 1-hour TTL: windows W0 and W1 expire after
//! two hours, while a late write (timestamp five hours old, ten-hour TTL from
//! its arrival) lives on in its own small sstable. The overlap rule blocks both
//! windows; the row-level check would clear them (the late write is a row
//! neither holds), but it is off for this table.

use std::sync::Arc;
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const HOUR: i64 = 3_600;
const HOUR_MICROS: i64 = 3_600_000_000;
const H0: i64 = 491_000; // hours since the epoch (2026-01-05)

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

fn run(row_level: bool) -> (Vec<u64>, Vec<strata::compaction::expiry::ExpiryCheck>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::fixed();
    clock.set_micros(H0 * HOUR_MICROS);
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    db.create_table_cql(&format!(
        "CREATE TABLE ks.ts (k int, t bigint, v text, PRIMARY KEY (k, t)) WITH \
         gc_grace_seconds = 0 AND compaction = {{'class': 'TimeWindowCompactionStrategy', \
         'compaction_window_unit': 'HOURS', 'compaction_window_size': 1, \
         'expired_sstable_check_frequency_seconds': 0, 'row_level_expiry_check': {row_level}}}"
    ))
    .expect("create");
    let t = db.table("ks", "ts").expect("table");
    for hour in 0..2 {
        clock.set_micros((H0 + hour) * HOUR_MICROS);
        for k in 0..8 {
            for r in 0..5 {
                let ts = (H0 + hour) * HOUR_MICROS + r * 60_000_000;
                write(&t, k, ts, ts, HOUR as u32);
            }
        }
        if hour == 1 {
            let old = (H0 - 5) * HOUR_MICROS;
            write(&t, 0, old, old, 10 * HOUR as u32);
        }
        t.flush().expect("flush");
    }
    clock.set_micros((H0 + 3) * HOUR_MICROS);
    let limiter = db.compaction_limiter().clone();
    t.compact_until_idle(&limiter, 1000).expect("compact");
    let live: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    (live, t.expired_blockers())
}

#[test]
fn with_the_row_level_check_off_every_kept_sstable_is_reported_blocked() {
    let (live, report) = run(false);
    assert!(
        report.len() >= 2,
        "both expired windows are still on disk with the check off: {report:?}"
    );
    for c in &report {
        assert!(live.contains(&c.candidate));
        assert!(
            !c.blockers.is_empty() && !c.unshadowed(),
            "sstable {} is kept by the table, so the report must show it blocked: {c:?}",
            c.candidate
        );
        for b in &c.blockers {
            let why = b.blocks_because.as_deref().unwrap_or("");
            assert!(why.contains("row_level_expiry_check: false"), "{why}");
        }
    }
}

#[test]
fn with_the_row_level_check_on_the_cleared_windows_are_gone() {
    // The same data with the check on: both windows were dropped; the late
    // write's sstable is all that is left, and it has not expired.
    let (live, report) = run(true);
    assert_eq!(live.len(), 1, "only the late write's sstable: {live:?}");
    assert!(report.is_empty(), "{report:?}");
}
