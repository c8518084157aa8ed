//! Writes that never reached an sstable come back from the commit log after a
//! crash (here: the database is dropped without close, so nothing is flushed),
//! in every sync mode; replay skips what a table already flushed, and after
//! recovery's flush the replayed segments are no longer needed.

use std::time::Duration;
use strata::clock::SimClock;
use strata::commitlog::{CommitLogOptions, SyncMode};
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::tablestats::TableStats;
use strata::types::Value;

fn options(clock: &std::sync::Arc<SimClock>, sync: SyncMode) -> DbOptions {
    let mut o = DbOptions::new(clock.clone());
    o.commitlog = Some(CommitLogOptions {
        sync,
        segment_size_bytes: 256 * 1024,
        ..CommitLogOptions::default()
    });
    o
}

fn rows(db: &Database, n: i32) -> usize {
    let t = db.table("ks", "t").unwrap();
    (0..n)
        .filter(|&i| {
            t.select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
                .unwrap()
                .len()
                == 1
        })
        .count()
}

#[test]
fn unflushed_writes_are_replayed_in_every_sync_mode() {
    for sync in [
        SyncMode::Periodic {
            period: Duration::from_secs(10),
        },
        SyncMode::Batch,
        SyncMode::Group {
            window: Duration::from_millis(1),
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let clock = SimClock::fixed();
        {
            let db = Database::open(dir.path(), options(&clock, sync)).unwrap();
            let t = db
                .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH memtable_flush_threshold_kb = 64")
                .unwrap();
            for i in 0..1500 {
                t.insert(
                    &[
                        ("k", Value::Int(i)),
                        ("v", Value::Text(format!("value {i}"))),
                    ],
                    &WriteOptions::default(),
                )
                .unwrap();
            }
            // Some data reached sstables through background flushes, the rest only
            // the commit log. Crash: drop without close.
            assert!(TableStats::of(&t).local_write_count == 1500);
        }
        let db = Database::open(dir.path(), options(&clock, sync)).unwrap();
        assert_eq!(
            rows(&db, 1500),
            1500,
            "{sync:?}: every acknowledged write survives"
        );
        let replay = db.replay_stats().clone();
        assert!(
            replay.records_replayed > 0,
            "{sync:?}: something was replayed: {replay:?}"
        );
        assert!(
            replay.records_replayed + replay.records_skipped_flushed >= 1500,
            "{replay:?}"
        );
        db.close().unwrap();
        // After a clean close (drain) nothing is left to replay.
        let db = Database::open(dir.path(), options(&clock, sync)).unwrap();
        assert_eq!(
            db.replay_stats().records_replayed,
            0,
            "{sync:?}: {:?}",
            db.replay_stats()
        );
        assert_eq!(rows(&db, 1500), 1500);
        let segments = db.commitlog().unwrap().stats().segments_live;
        assert!(
            segments <= 2,
            "{sync:?}: flushed segments are deleted, {segments} live"
        );
    }
}
