//! Observing pending compaction work changes no strategy state.
//!
//! `Database::wait_for_compactions` (and `compactionstats`' pending figures) once
//! asked the strategy for its `next_task` outside the decision lock, which moved
//! LCS's round-robin pointer from a thread that was only looking: the task then
//! decided was not the one that was pending. Here level 1 holds several
//! sstables over its target, so each real LCS decision moves round robin to the
//! next one; between decisions the test observes many times, and the task then
//! decided must be exactly the one observed before.

use std::sync::Arc;
use std::time::Duration;
use strata::clock::SimClock;
use strata::compaction::CompactionTask;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

/// 1 MiB sstables, fanout 2: level 1's target is 2 MiB.
const CREATE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH compaction = \
    {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 2}";

/// About 1 KiB per row that no block codec can shrink (xorshift letters), so
/// sstable sizes follow the bytes written.
fn write(t: &Arc<Table>, keys: std::ops::Range<i32>) {
    for k in keys {
        let mut x = (k as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let v: String = (0..1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                char::from(b'a' + (x % 26) as u8)
            })
            .collect();
        t.insert(
            &[("k", Value::Int(k)), ("v", Value::Text(v))],
            &WriteOptions::default(),
        )
        .expect("insert");
    }
}

/// Looks at the pending work every way the library offers, `times` times.
fn observe(db: &Database, t: &Table, times: usize) {
    for _ in 0..times {
        // Nothing runs in the background (no compactors): never settles.
        assert!(!db.wait_for_compactions(Duration::from_millis(1)));
        assert!(t.pending_compaction_tasks() > 0);
        let _ = t.compaction_level_scores();
        let _ = t.peek_compaction_task();
    }
}

#[test]
fn observing_compactions_changes_no_strategy_state() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.commitlog = None;
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db.create_table_cql(CREATE).expect("create");
    for batch in 0..5 {
        write(&t, batch * 1000..(batch + 1) * 1000);
        t.flush().expect("flush");
    }
    // Everything into level 1, split at 1 MiB: about 5 disjoint sstables there,
    // 2.5 times the level's target.
    let ids: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    t.compact_user_defined(&ids, 1, db.compaction_limiter())
        .expect("compact into L1");
    let l1 = t.view().version.count_at_level(1);
    assert!(l1 >= 4, "level 1 holds {l1} sstables");

    let mut decided_ids = Vec::new();
    for round in 0..3 {
        let pending = t.peek_compaction_task().expect("level 1 is over target");
        observe(&db, &t, 10);
        assert_eq!(
            t.peek_compaction_task().as_ref(),
            Some(&pending),
            "round {round}: observing changed what is pending"
        );
        let decided = t.next_compaction_task().expect("a task");
        assert_eq!(
            decided, pending,
            "round {round}: observing moved the strategy's round robin"
        );
        assert!(
            matches!(
                decided,
                CompactionTask::Move { to_level: 2, .. }
                    | CompactionTask::Merge {
                        output_level: 2,
                        ..
                    }
            ),
            "{decided:?}"
        );
        decided_ids.push(decided.input_ids());
        t.run_compaction(&decided, db.compaction_limiter())
            .expect("run");
    }
    // The real decisions did move round robin along level 1.
    decided_ids.dedup();
    assert_eq!(decided_ids.len(), 3, "{decided_ids:?}");
}
