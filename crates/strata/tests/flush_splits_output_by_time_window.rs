//! A TWCS table cuts its flushes and its merges by time window (issue 11's output
//! splitting, issue 12's segregation): one memtable holding writes from three
//! hours, plus one write two days old, flushes as four sstables, each inside one
//! window; a major compaction keeps one sstable per window; every row reads back
//! throughout. With `split_output_by_window: false` the same flush is one
//! sstable spanning two days.

mod common;

use std::sync::Arc;
use strata::data::ClusteringRange;
use strata::db::Database;
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const HOUR_MICROS: i64 = 3_600_000_000;

fn create(db: &Database, split: bool) -> Arc<Table> {
    db.create_table_cql(&format!(
        "CREATE TABLE ks.ts (k int, t bigint, v text, PRIMARY KEY (k, t)) WITH \
         compaction = {{'class': 'TimeWindowCompactionStrategy', \
         'compaction_window_unit': 'HOURS', 'compaction_window_size': 1, \
         'enabled': 'false', 'split_output_by_window': '{split}'}}"
    ))
    .expect("create table");
    db.table("ks", "ts").expect("table")
}

/// Writes row `t` of partitions 0..8 at timestamp `ts` (hours since the epoch
/// plus a minute per row).
fn write_hour(t: &Arc<Table>, hour: i64, rows: i64) {
    for k in 0..8 {
        for r in 0..rows {
            let ts = hour * HOUR_MICROS + r * 60_000_000;
            t.insert(
                &[
                    ("k", Value::Int(k)),
                    ("t", Value::BigInt(ts)),
                    ("v", Value::Text(format!("{k}-{ts}"))),
                ],
                &WriteOptions {
                    timestamp_micros: Some(ts),
                    ttl_seconds: None,
                },
            )
            .expect("insert");
        }
    }
}

fn windows_of(t: &Arc<Table>) -> Vec<(i64, i64)> {
    let view = t.view();
    let mut w: Vec<(i64, i64)> = view
        .sstables()
        .iter()
        .map(|s| {
            (
                s.stats().min_timestamp_micros.div_euclid(HOUR_MICROS),
                s.stats().max_timestamp_micros.div_euclid(HOUR_MICROS),
            )
        })
        .collect();
    w.sort_unstable();
    w
}

fn rows_of(t: &Arc<Table>) -> usize {
    (0..8)
        .map(|k| {
            t.select(&[Value::Int(k)], &ClusteringRange::ALL, false, usize::MAX)
                .expect("select")
                .len()
        })
        .sum()
}

#[test]
fn twcs_flush_and_compaction_write_one_sstable_per_window() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = common::open(dir.path());
    let t = create(&db, true);
    let now_hour = 480_000; // 2024-10-03
    for h in 0..3 {
        write_hour(&t, now_hour + h, 5);
    }
    // A repair or a hint brings a write with a two-day-old timestamp.
    write_hour(&t, now_hour - 48, 1);
    t.flush().expect("flush");
    assert_eq!(
        windows_of(&t),
        vec![
            (now_hour - 48, now_hour - 48),
            (now_hour, now_hour),
            (now_hour + 1, now_hour + 1),
            (now_hour + 2, now_hour + 2),
        ],
        "one flush, one sstable per window"
    );
    assert_eq!(rows_of(&t), 8 * 16);

    // A second flush into two of the windows, then a major compaction: still one
    // sstable per window, the windows merged.
    write_hour(&t, now_hour + 2, 3);
    write_hour(&t, now_hour - 48, 2);
    t.flush().expect("flush");
    assert_eq!(windows_of(&t).len(), 6);
    let limiter = db.compaction_limiter().clone();
    t.compact_major(&limiter).expect("major compaction");
    assert_eq!(
        windows_of(&t),
        vec![
            (now_hour - 48, now_hour - 48),
            (now_hour, now_hour),
            (now_hour + 1, now_hour + 1),
            (now_hour + 2, now_hour + 2),
        ],
        "major compaction keeps windows apart"
    );
    // Rows written twice (same key and timestamp) are one row.
    assert_eq!(rows_of(&t), 8 * 17);
    drop(t);
    db.close().expect("close");

    // Reopened: the same sstables, the same rows.
    let db = common::open(dir.path());
    let t = db.table("ks", "ts").expect("table");
    assert_eq!(windows_of(&t).len(), 4);
    assert_eq!(rows_of(&t), 8 * 17);
}

#[test]
fn without_segregation_one_flush_is_one_sstable() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = common::open(dir.path());
    let t = create(&db, false);
    let now_hour = 480_000;
    write_hour(&t, now_hour, 3);
    write_hour(&t, now_hour - 48, 1);
    t.flush().expect("flush");
    assert_eq!(windows_of(&t), vec![(now_hour - 48, now_hour)]);
}
