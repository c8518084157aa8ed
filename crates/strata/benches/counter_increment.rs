//! A counter increment (`c = c + 1` as the CQL layer builds it, resolved by
//! `Table::apply_counters`: a read of the row under the partition's lock,
//! then the write) beside a plain `bigint` write of the same keys in the
//! same invocation (the baseline), over 10,000 rows, first with every row in
//! the memtable, then with every row flushed to one sstable (the increment's
//! read goes to the sstable; the chunk cache is warm).
//!
//! Run: `cargo bench -p strata --bench counter_increment`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::sync::Arc;
use strata::clock::Clock;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const ROWS: i32 = 10_000;

fn tables(dir: &std::path::Path) -> (Database, Arc<Table>, Arc<Table>) {
    let mut opts = DbOptions::new(strata::clock::SystemClock::new());
    opts.commitlog = None;
    let db = Database::open(dir, opts).expect("open");
    db.create_keyspace("bench").expect("keyspace");
    let options = "WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': false} \
                   AND memtable_flush_threshold_mb = 4096";
    let c = db
        .create_table_cql(&format!(
            "CREATE TABLE bench.c (k int PRIMARY KEY, n counter) {options}"
        ))
        .expect("counter table");
    let v = db
        .create_table_cql(&format!(
            "CREATE TABLE bench.v (k int PRIMARY KEY, n bigint) {options}"
        ))
        .expect("bigint table");
    (db, c, v)
}

fn increment(t: &Arc<Table>, k: i32) {
    let u = t
        .schema()
        .update_counters(&[("k", Value::Int(k))], &[("n", 1)], 0)
        .expect("update");
    t.apply_counters(u).expect("apply");
}

fn write(t: &Arc<Table>, k: i32, now: i64) {
    let u = t
        .schema()
        .update(
            &[("k", Value::Int(k))],
            &[("n", Some(Value::BigInt(i64::from(k))))],
            &WriteOptions::default(),
            now,
        )
        .expect("update");
    t.apply(&u).expect("apply");
}

fn counter_increment(c: &mut Criterion) {
    let clock = strata::clock::SystemClock::new();
    let mut group = c.benchmark_group("counter_increment");
    let dir = tempfile::tempdir().expect("tempdir");
    let (_db, counters, plain) = tables(dir.path());
    for k in 0..ROWS {
        increment(&counters, k);
        write(&plain, k, clock.now_micros());
    }
    for (place, flush) in [("memtable", false), ("sstable", true)] {
        if flush {
            counters.flush().expect("flush");
            plain.flush().expect("flush");
        }
        let mut next = 0;
        group.bench_with_input(BenchmarkId::new("increment", place), &place, |b, _| {
            b.iter(|| {
                next = (next + 7919) % ROWS;
                increment(&counters, next);
            })
        });
        group.bench_with_input(BenchmarkId::new("bigint_write", place), &place, |b, _| {
            b.iter(|| {
                next = (next + 7919) % ROWS;
                write(&plain, next, clock.now_micros());
            })
        });
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .measurement_time(std::time::Duration::from_secs(3))
        .warm_up_time(std::time::Duration::from_secs(1));
    targets = counter_increment
}
criterion_main!(benches);
