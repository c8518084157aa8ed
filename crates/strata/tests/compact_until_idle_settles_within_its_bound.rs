//! The library's entry point for running compactions without background threads
//! (`Database::compact_until_idle`, `Table::compact_until_idle`, what the LCS
//! benchmark needs): it runs tasks until none is pending, and refuses to go past
//! its bound while work remains, without leaving a chosen task unrun.

use std::time::Duration;
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::types::Value;

/// Five flushes in L0 of a leveled table: more than L0's trigger.
const CREATE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH compaction = \
    {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1}";

#[test]
fn compact_until_idle_settles_within_its_bound() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.commitlog = None;
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db.create_table_cql(CREATE).expect("create");
    for flush in 0..5 {
        for k in flush * 100..flush * 100 + 150 {
            t.insert(
                &[("k", Value::Int(k)), ("v", Value::Text(format!("v{k}")))],
                &WriteOptions::default(),
            )
            .expect("insert");
        }
        t.flush().expect("flush");
    }
    assert!(t.peek_compaction_task().is_some(), "L0 needs compaction");
    let before = t.view().sstables().len();

    // A bound of zero tasks with work pending: an error, and nothing chosen or
    // marked busy (the next decision still sees every sstable).
    assert!(db.compact_until_idle(0).is_err());
    assert!(t.busy_sstables().is_empty());
    assert_eq!(t.view().sstables().len(), before);

    let records = db.compact_until_idle(100).expect("settles");
    assert!(!records.is_empty());
    assert_eq!(t.peek_compaction_task(), None);
    assert!(db.wait_for_compactions(Duration::from_millis(1)));
    assert!(t.view().sstables().len() < before);
    // Settled: the table-level entry point finds nothing more to do.
    assert!(t
        .compact_until_idle(db.compaction_limiter(), 10)
        .expect("idle")
        .is_empty());
    // Every row is still there.
    for k in 0..550 {
        let rows = t
            .select(
                &[Value::Int(k)],
                &strata::data::ClusteringRange::ALL,
                false,
                10,
            )
            .expect("read");
        assert_eq!(rows.len(), 1, "key {k}");
    }
}
