//! `memtable_flush_period_in_ms` (Cassandra's table option): a memtable is
//! flushed once it has existed for a whole period on the engine clock, even
//! if it is far from full; an empty one is looked at again a period later
//! (Cassandra's checks run at creation + k periods); 0 turns it off.
//!
//! Everything runs on a simulated clock: the test moves time and calls the
//! check the flush thread and the write path call, then flushes what was
//! queued on this thread. The database's own flush thread runs the same check
//! about once a second and may get there first; the assertions are on the
//! outcome (sstables on disk), which is the same whoever checks.

use std::sync::Arc;
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const SECOND: i64 = 1_000_000;

fn write(t: &Arc<Table>, k: i32) {
    t.insert(
        &[("k", Value::Int(k)), ("v", Value::Text(format!("v{k}")))],
        &WriteOptions::default(),
    )
    .expect("insert");
}

/// Flushes whatever the check queued, here, and returns the sstable count.
fn settle(t: &Arc<Table>) -> usize {
    while t.flush_oldest().expect("flush") {}
    t.view().sstables().len()
}

fn open(dir: &std::path::Path, clock: Arc<SimClock>, period_ms: u32) -> (Database, Arc<Table>) {
    let mut opts = DbOptions::new(clock);
    opts.concurrent_compactors = 0;
    let db = Database::open(dir, opts).expect("open");
    let t = db
        .create_table_cql(&format!(
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH memtable_flush_period_in_ms = {period_ms}"
        ))
        .expect("create");
    (db, t)
}

#[test]
fn a_memtable_is_flushed_a_period_after_it_was_created() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::fixed();
    let (_db, t) = open(dir.path(), clock.clone(), 60_000);
    assert_eq!(t.schema().options.memtable_flush_period_in_ms, 60_000);
    write(&t, 1);
    clock.advance_micros(59 * SECOND);
    t.flush_if_period_expired();
    assert_eq!(settle(&t), 0, "59 s: not yet");
    clock.advance_micros(SECOND);
    t.flush_if_period_expired();
    assert_eq!(
        settle(&t),
        1,
        "60 s: one row, flushed although the memtable is tiny"
    );
}

#[test]
fn an_empty_memtable_is_checked_again_a_period_later() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::fixed();
    let (_db, t) = open(dir.path(), clock.clone(), 60_000);
    // The memtable was created at open (time 0). At 60 s it is empty: no
    // flush, and the next check is at 120 s.
    clock.advance_micros(60 * SECOND);
    t.flush_if_period_expired();
    clock.advance_micros(10 * SECOND);
    // A write at 70 s (the write path checks too) does not flush yet...
    write(&t, 1);
    assert_eq!(settle(&t), 0);
    clock.advance_micros(49 * SECOND);
    t.flush_if_period_expired();
    assert_eq!(settle(&t), 0, "119 s");
    // ... the check at 120 s does.
    clock.advance_micros(SECOND);
    t.flush_if_period_expired();
    assert_eq!(settle(&t), 1);
}

#[test]
fn a_write_past_the_period_queues_the_flush_itself() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::fixed();
    let (_db, t) = open(dir.path(), clock.clone(), 1_000);
    write(&t, 1);
    clock.advance_micros(2 * SECOND);
    // No explicit check: the write finds the memtable past its period.
    write(&t, 2);
    assert_eq!(settle(&t), 1);
    let rows = t
        .select(
            &[Value::Int(2)],
            &strata::data::ClusteringRange::ALL,
            false,
            1,
        )
        .expect("select");
    assert_eq!(rows.len(), 1);
}

#[test]
fn zero_means_off() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::fixed();
    let (_db, t) = open(dir.path(), clock.clone(), 0);
    write(&t, 1);
    clock.advance_micros(10 * 86_400 * SECOND);
    t.flush_if_period_expired();
    write(&t, 2);
    assert_eq!(settle(&t), 0);
}
