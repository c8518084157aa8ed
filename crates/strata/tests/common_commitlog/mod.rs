//! Helpers of the commit-log segment tests (issue 10, "a missing segment is
//! corruption"): a database whose log has many small segments, a crash that
//! leaves them on disk (drop without close: nothing is flushed), and the open
//! that must refuse, naming the missing segment.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::time::Duration;
use strata::clock::SimClock;
use strata::commitlog::{list_segments, segment_file_name, CommitLogOptions, SyncMode};
use strata::db::{Database, DbOptions};
use strata::fs::Fs;
use strata::schema::WriteOptions;
use strata::types::Value;

/// Large memtables: nothing flushes unless a test says so, so every segment
/// written after the last flush is still needed.
pub const CREATE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH \
     memtable_flush_threshold_kb = 16384 AND \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";

/// The smallest segments (4 KiB, about 100 rows each), periodic sync.
pub fn options(ignore_replay_errors: bool) -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.concurrent_compactors = 0;
    o.commitlog = Some(CommitLogOptions {
        sync: SyncMode::Periodic {
            period: Duration::from_secs(3600),
        },
        segment_size_bytes: 4096,
        ignore_replay_errors,
        ..CommitLogOptions::default()
    });
    o
}

pub fn value(k: i32) -> String {
    format!("value-{k}-{}", "y".repeat((k % 5) as usize))
}

pub fn write(db: &Database, range: std::ops::Range<i32>) {
    let t = db.table("ks", "t").expect("table");
    for k in range {
        t.insert(
            &[("k", Value::Int(k)), ("v", Value::Text(value(k)))],
            &WriteOptions::default(),
        )
        .expect("insert");
    }
}

/// Keys of `range` that read back with their value.
pub fn readable(db: &Database, range: std::ops::Range<i32>) -> usize {
    let t = db.table("ks", "t").expect("table");
    range
        .filter(|&k| {
            t.select(
                &[Value::Int(k)],
                &strata::data::ClusteringRange::ALL,
                false,
                1,
            )
            .is_ok_and(|rows| rows.len() == 1 && rows[0][1].1 == Some(Value::Text(value(k))))
        })
        .count()
}

pub fn log_dir(data: &Path) -> PathBuf {
    data.join("commitlog")
}

/// `(id, path)` of the segment files, oldest first.
pub fn segments(data: &Path) -> Vec<(u64, PathBuf)> {
    list_segments(&Fs::new(), &log_dir(data)).expect("list segments")
}

/// Creates the table, writes keys `0..flushed` and flushes them (retiring the
/// segments that held them), writes `flushed..total` (only in the log), and
/// crashes: the database is dropped without close.
pub fn crash_with_segments(data: &Path, flushed: i32, total: i32) {
    let db = Database::open(data, options(false)).expect("open");
    db.create_table_cql(CREATE).expect("create");
    write(&db, 0..flushed);
    if flushed > 0 {
        db.table("ks", "t").expect("table").flush().expect("flush");
    }
    write(&db, flushed..total);
    drop(db);
}

/// Opening must fail with `Error::Corruption` naming segment `id`.
pub fn assert_open_names_missing(data: &Path, id: u64) {
    let name = segment_file_name(id);
    match Database::open(data, options(false)) {
        Err(strata::Error::Corruption { path, reason, .. }) => {
            assert!(
                path.ends_with(&name),
                "path {} should name {name}: {reason}",
                path.display()
            );
            assert!(reason.contains(&name), "{reason}");
            assert!(reason.contains("missing"), "{reason}");
        }
        Err(e) => panic!("expected corruption naming {name}, got {e}"),
        Ok(_) => panic!("open succeeded although {name} is missing"),
    }
}

/// With `ignore_replay_errors` the open goes on, lists `id` as missing and
/// keeps every row not held by it; the next plain open is clean.
pub fn assert_ignore_goes_on(data: &Path, id: u64) {
    {
        let db = Database::open(data, options(true)).expect("open with ignore_replay_errors");
        let stats = db.replay_stats();
        assert!(
            stats.missing_segments.contains(&segment_file_name(id)),
            "{stats:?}"
        );
        assert!(
            stats
                .corruptions
                .iter()
                .any(|c| c.contains(&segment_file_name(id))),
            "{:?}",
            stats.corruptions
        );
        db.close().expect("close");
    }
    let db = Database::open(data, options(false)).expect("the loss was recorded once reported");
    assert!(db.replay_stats().missing_segments.is_empty());
    db.close().expect("close");
}
