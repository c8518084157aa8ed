//! After a full disk, the database must be able to reopen: replay flushes in
//! memtable-sized steps instead of holding the whole backlog in one memtable, and
//! its flushes are not refused by `max_disk_bytes`, since they are what lets the
//! commit log go. Before, a reopen under the quota that the backlog had filled was
//! refused, and replay needed free space for the whole backlog at once.

mod common;

use std::sync::atomic::Ordering;
use strata::db::Database;
use strata::tablestats::TableStats;

#[test]
fn a_backlog_replays_in_steps_under_the_quota_that_it_filled() {
    let dir = tempfile::tempdir().unwrap();
    let rows = 6_000;
    {
        let db = common::open(dir.path());
        // Memtables large enough that nothing flushes while writing: the whole
        // backlog is only in the commit log when the process dies.
        let t = db
            .create_table_cql(
                "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH memtable_flush_threshold_kb = 65536",
            )
            .unwrap();
        common::write(&t, 0..rows);
        assert_eq!(TableStats::of(&t).sstable_count, 0);
        // Small memtables from now on (no write follows, so nothing switches).
        db.alter_table_options("ks", "t", "memtable_flush_threshold_kb = 64")
            .unwrap();
        // Dropped without close: no flush, as after a crash.
        drop(db);
    }
    let log_bytes: u64 = std::fs::read_dir(dir.path().join("commitlog"))
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    assert!(log_bytes > 200_000, "backlog of {log_bytes} bytes");

    // The quota is what the directory already holds: no room for anything new.
    let mut opts = common::options();
    opts.table.max_disk_bytes = Some(log_bytes + 4096);
    let db = Database::open(dir.path(), opts).unwrap();
    let t = db.table("ks", "t").unwrap();
    let steps = t.metrics.replay_flush_count.load(Ordering::Relaxed);
    assert!(steps >= 3, "replay flushed {steps} times");
    assert!(
        TableStats::of(&t).sstable_count as u64 > steps,
        "{}",
        TableStats::of(&t).sstable_count
    );
    assert_eq!(common::readable(&t, 0..rows), rows as usize);
    // Outside recovery the quota holds again.
    assert!(t.flushed_position().is_some());
    db.close().unwrap();
}
