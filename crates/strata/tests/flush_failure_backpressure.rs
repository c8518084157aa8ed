//! Writers block when flushing cannot keep up, and are refused with a clear error
//! (instead of waiting forever) when flushes keep failing; no applied write is lost,
//! and writing resumes once the fault clears.

use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::fs::Fault;
use strata::schema::WriteOptions;
use strata::tablestats::TableStats;
use strata::types::Value;
use strata::Error;

#[test]
fn failing_flushes_stop_writes_and_lose_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let opts = DbOptions::new(SimClock::fixed());
    let fs = opts.fs.clone();
    let db = Database::open(dir.path(), opts).unwrap();
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k int PRIMARY KEY, v blob) WITH memtable_flush_threshold_kb = 64",
        )
        .unwrap();
    // Every sstable write fails with "no space left" until cleared.
    fs.faults().inject("Data.db", Fault::NoSpace, u64::MAX);
    let w = WriteOptions::default();
    let mut acknowledged = Vec::new();
    let mut refused = None;
    for i in 0..100_000i32 {
        match t.insert(
            &[("k", Value::Int(i)), ("v", Value::Blob(vec![7; 200]))],
            &w,
        ) {
            Ok(()) => acknowledged.push(i),
            Err(e) => {
                refused = Some(e);
                break;
            }
        }
    }
    let err =
        refused.expect("writes must be refused once pending memtables are full and flushes fail");
    assert!(matches!(err, Error::Poisoned(_)), "{err}");
    assert!(
        err.to_string().contains("flush"),
        "the error says why: {err}"
    );
    let stats = TableStats::of(&t);
    assert!(
        stats.pending_flushes >= 2,
        "memtables wait for flush: {}",
        stats.pending_flushes
    );
    assert_eq!(stats.sstable_count, 0);
    assert_eq!(stats.writes_refused, 1, "the refusal is counted");

    // Every acknowledged write is still readable from the pending memtables.
    for &i in acknowledged.iter().step_by(97) {
        let rows = t
            .select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
            .unwrap();
        assert_eq!(rows.len(), 1, "row {i} lost");
    }

    // Space returns: the background retry flushes, writes are accepted again.
    fs.faults().clear();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    loop {
        if t.insert(&[("k", Value::Int(-1)), ("v", Value::Blob(vec![1]))], &w)
            .is_ok()
        {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "writes did not resume"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    t.flush().unwrap();
    let stats = TableStats::of(&t);
    assert_eq!(stats.pending_flushes, 0);
    assert!(stats.sstable_count >= 2);
    let t: Arc<_> = t;
    for &i in acknowledged.iter().step_by(89) {
        assert_eq!(
            t.select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
                .unwrap()
                .len(),
            1
        );
    }
    db.close().unwrap();
    // And everything survives a reopen.
    let db = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).unwrap();
    let t = db.table("ks", "t").unwrap();
    for &i in acknowledged.iter().step_by(83) {
        assert_eq!(
            t.select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
                .unwrap()
                .len(),
            1
        );
    }
}
