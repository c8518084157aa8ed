//! One element written into a non-frozen `map<int, int>` that already holds
//! N entries (`m[k] = v` as the CQL layer builds it), for N = 100, 1,000 and
//! 10,000, beside a one-cell write to a simple column of another row of the
//! same table in the same invocation (the baseline). Besides the time, it
//! prints the memtable bytes one element write adds, averaged over 2N writes
//! (at least 200) of existing keys, so the figure includes the folds of the
//! memtable's chained rows (each copies the row once per half a row of
//! updates) and not only the cheap extensions between them.
//!
//! The timed element writes rewrite existing keys, so the map keeps its N
//! entries while it is measured. Then reads of the map's row and of the
//! one-cell row, from the memtable and after a flush.
//!
//! Run: `cargo bench -p strata --bench collection_element_write`.

use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion};
use std::sync::Arc;
use strata::db::{Database, DbOptions};
use strata::schema::{ElementWrite, WriteOptions};
use strata::table::Table;
use strata::types::{self, Value};

fn table(dir: &std::path::Path) -> (Database, Arc<Table>) {
    let mut opts = DbOptions::new(strata::clock::SystemClock::new());
    opts.commitlog = None;
    let db = Database::open(dir, opts).expect("open");
    db.create_keyspace("bench").expect("keyspace");
    let t = db
        .create_table_cql(
            "CREATE TABLE bench.m (k int PRIMARY KEY, m map<int, int>, v int) WITH \
             compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': false} \
             AND memtable_flush_threshold_mb = 4096",
        )
        .expect("table");
    (db, t)
}

fn put(t: &Arc<Table>, k: i32, key: i32, now: i64) {
    let schema = t.schema();
    let write = ElementWrite {
        column: "m",
        path: types::element_path(&Value::Int(key)),
        value: Some(types::serialize(&Value::Int(key))),
    };
    let u = schema
        .update_elements(
            &[("k", Value::Int(k))],
            vec![write],
            &WriteOptions::default(),
            now,
            true,
        )
        .expect("update");
    t.apply(&u).expect("apply");
}

/// `v = value` on row 2: the one-cell baseline.
fn put_simple(t: &Arc<Table>, value: i32, now: i64) {
    let u = t
        .schema()
        .update(
            &[("k", Value::Int(2))],
            &[("v", Some(Value::Int(value)))],
            &WriteOptions::default(),
            now,
        )
        .expect("update");
    t.apply(&u).expect("apply");
}

fn element_write(c: &mut Criterion) {
    let clock = strata::clock::SystemClock::new();
    use strata::clock::Clock;
    let mut group = c.benchmark_group("collection_element_write");
    for n in [100, 1_000, 10_000] {
        let dir = tempfile::tempdir().expect("tempdir");
        let (_db, t) = table(dir.path());
        // Row 1 is timed, row 3 measured for memory: each holds n entries.
        for i in 0..n {
            put(&t, 1, i, clock.now_micros());
            put(&t, 3, i, clock.now_micros());
        }
        let bytes = || strata::tablestats::TableStats::of(&t).memtable_memory_bytes;
        let before = bytes();
        let writes = (2 * n).max(200);
        for i in 0..writes {
            put(&t, 3, i % n, clock.now_micros());
        }
        let per_element = (bytes() - before) / u64::from(writes as u32);
        let before = bytes();
        for i in 0..200 {
            put_simple(&t, i, clock.now_micros());
        }
        let per_simple = (bytes() - before) / 200;
        eprintln!(
            "map of {n} entries: {per_element} memtable bytes per element write; \
             simple column: {per_simple} bytes per write"
        );
        let mut next = 0;
        // Timed: existing keys rewritten, so the map keeps its size.
        group.bench_with_input(BenchmarkId::new("element", n), &n, |b, _| {
            b.iter(|| {
                next += 1;
                put(&t, 1, next % n, clock.now_micros());
            })
        });
        group.bench_with_input(BenchmarkId::new("simple_cell", n), &n, |b, _| {
            b.iter(|| put_simple(&t, next, clock.now_micros()))
        });
        // Reads of the map's row (what `SELECT m[k]` reads: the row is read
        // whole, as Cassandra reads it) and of the one-cell row, from the
        // memtable and then from one sstable (chunk cache warm).
        let schema = t.schema();
        let map_row = schema.decorated_key(&[Value::Int(1)]).expect("key");
        let simple_row = schema.decorated_key(&[Value::Int(2)]).expect("key");
        let all = strata::data::ClusteringRange::ALL;
        for place in ["memtable", "sstable"] {
            if place == "sstable" {
                t.flush().expect("flush");
            }
            for (what, key) in [("map_row", &map_row), ("simple_row", &simple_row)] {
                let id = BenchmarkId::new(format!("read_{what}_{place}"), n);
                group.bench_with_input(id, &n, |b, _| {
                    b.iter(|| t.read(key, &all, false, 1).expect("read"))
                });
            }
        }
    }
    group.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .sample_size(20)
        .measurement_time(std::time::Duration::from_secs(3))
        .warm_up_time(std::time::Duration::from_secs(1));
    targets = element_write
}
criterion_main!(benches);
