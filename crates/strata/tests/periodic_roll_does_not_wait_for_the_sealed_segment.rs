//! In periodic mode a roll seals the full segment and leaves its fsync to the
//! syncer thread: writers go on into the new segment while that fsync runs
//! (on a busy disk it took 100-500 ms, and every writer used to wait for it).
//! Nothing is counted durable past the sealed segment until its fsync
//! returns, and everything written is there after a restart.
//!
//! The sealed segment's fsync is held at a barrier (`Fault::HeldSync`) for the
//! whole time the writes are made, so the test does not depend on timing: if
//! the roll waited for that fsync, the writes would not finish (the receive
//! below turns that hang into a failure after a generous minute).

use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;
use strata::clock::SimClock;
use strata::commitlog::{segment_file_name, CommitLogOptions, SyncMode};
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::fs::Fault;
use strata::schema::WriteOptions;
use strata::types::Value;

fn options() -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.concurrent_compactors = 0;
    o.commitlog = Some(CommitLogOptions {
        // The syncer's own period never comes during the test.
        sync: SyncMode::Periodic {
            period: Duration::from_secs(3600),
        },
        segment_size_bytes: 64 * 1024,
        ..CommitLogOptions::default()
    });
    o
}

/// Lets held fsyncs go when the test ends, passed or not.
struct ReleaseOnDrop(Arc<Database>);

impl Drop for ReleaseOnDrop {
    fn drop(&mut self) {
        self.0.fs().faults().release_held();
    }
}

const CREATE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH \
     memtable_flush_threshold_kb = 65536";

#[test]
fn periodic_roll_does_not_wait_for_the_sealed_segment() {
    let dir = tempfile::tempdir().unwrap();
    let db = Arc::new(Database::open(dir.path(), options()).unwrap());
    let t = db.create_table_cql(CREATE).unwrap();
    let log = db.commitlog().unwrap().clone();
    let first = log.stats().active_segment;
    db.fs()
        .faults()
        .inject(&segment_file_name(first), Fault::HeldSync, u64::MAX);
    let synced_before = log.stats().synced_mutations;

    // A failed assertion must not leave the close below waiting for ever.
    let _release = ReleaseOnDrop(db.clone());

    // Writes until the log has rolled, then 100 more into the new segment
    // (less than it holds), all while the sealed segment's fsync is held.
    let (tx, rx) = mpsc::channel();
    let writer = {
        let (t, log) = (t.clone(), log.clone());
        std::thread::spawn(move || {
            let mut k = 0;
            let mut after_roll = 0;
            while after_roll < 100 {
                t.insert(
                    &[
                        ("k", Value::Int(k)),
                        ("v", Value::Text(format!("v{k:0>200}"))),
                    ],
                    &WriteOptions::default(),
                )
                .unwrap();
                k += 1;
                if log.stats().active_segment > first {
                    after_roll += 1;
                }
            }
            let _ = tx.send(k);
        })
    };
    let written = rx
        .recv_timeout(Duration::from_secs(60))
        .expect("writes after the roll waited for the sealed segment's fsync");
    writer.join().unwrap();

    // The syncer is inside that fsync, and nothing was recorded durable
    // past the sealed segment meanwhile.
    db.fs().faults().wait_for_held(1);
    let stats = log.stats();
    assert_eq!(stats.active_segment, first + 1, "{stats:?}");
    assert_eq!(stats.synced_mutations, synced_before, "{stats:?}");

    db.fs().faults().release_held();
    log.sync_now().unwrap();
    let stats = log.stats();
    assert_eq!(stats.synced_mutations, stats.appends, "{stats:?}");
    assert!(stats.poisoned.is_none(), "{stats:?}");

    drop((t, log, _release));
    match Arc::try_unwrap(db) {
        Ok(db) => db.close().unwrap(),
        Err(_) => panic!("database still shared"),
    }
    let db = Database::open(dir.path(), options()).unwrap();
    let t = db.table("ks", "t").unwrap();
    for k in 0..written {
        let rows = t
            .select(&[Value::Int(k)], &ClusteringRange::ALL, false, 1)
            .unwrap();
        assert_eq!(rows.len(), 1, "row {k} lost");
        assert_eq!(rows[0][1].1, Some(Value::Text(format!("v{k:0>200}"))));
    }
    drop(t);
    db.close().unwrap();
}
