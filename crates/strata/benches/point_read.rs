//! A point read through `Table::read` on a key-value table shaped as the
//! comparison harness's (16-byte keys, 100-byte values, LZ4, Bloom filters
//! at 0.01) with three live sstables of 700k keys each, so every read tests
//! three filters of about 0.85 MiB: a key none of them holds (the harness's
//! readmissing, almost all filter and bookkeeping) and a key one holds (its
//! chunk cached after the first pass). Compaction is off so the three stay.
//!
//! Run: `cargo bench -p strata --bench point_read` (about 25 s of loading
//! first). Compare builds by running each in turn (`--save-baseline` /
//! `--baseline`), alternating, on this noisy machine.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Duration;
use strata::clock::Clock;
use strata::data::{ClusteringRange, DecoratedKey};
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::types::Value;

const SSTABLES: usize = 3;
const KEYS_PER_SSTABLE: usize = 700_000;
const LOOKUPS: usize = 1 << 16;

fn point_read(c: &mut Criterion) {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::new(strata::clock::SystemClock::new());
    opts.commitlog = None;
    let db = Database::open(dir.path(), opts).expect("open");
    db.create_keyspace("bench").expect("keyspace");
    let table = db
        .create_table_cql(
            "CREATE TABLE bench.kv (key blob PRIMARY KEY, value blob) WITH compaction = \
             {'class': 'SizeTieredCompactionStrategy', 'enabled': false} AND compression = \
             {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16} AND bloom_filter_fp_chance = 0.01 \
             AND memtable_flush_threshold_mb = 256",
        )
        .expect("table");
    let schema = table.schema();
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let opts = WriteOptions::default();
    let clock = strata::clock::SystemClock::new();
    let mut present = Vec::new();
    for _ in 0..SSTABLES {
        for _ in 0..KEYS_PER_SSTABLE {
            let key: [u8; 16] = rng.gen();
            let mut value = [0u8; 100];
            rng.fill(&mut value[..50]);
            let row = [
                ("key", Value::Blob(key.to_vec())),
                ("value", Value::Blob(value.to_vec())),
            ];
            let update = schema
                .insert(&row, &opts, clock.now_micros())
                .expect("insert");
            table.apply(&update).expect("apply");
            if present.len() < LOOKUPS && rng.gen_ratio(1, 16) {
                present.push(key);
            }
        }
        table.flush().expect("flush");
    }
    assert_eq!(table.view().sstables().len(), SSTABLES);
    let decorate = |k: &[u8]| -> DecoratedKey {
        schema
            .decorated_key(&[Value::Blob(k.to_vec())])
            .expect("key")
    };
    let absent: Vec<DecoratedKey> = (0..LOOKUPS)
        .map(|_| decorate(&rng.gen::<[u8; 16]>()))
        .collect();
    let present: Vec<DecoratedKey> = present.iter().map(|k| decorate(k)).collect();
    let mut g = c.benchmark_group("point_read_3_sstables");
    g.sample_size(40)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for (name, keys) in [("absent", &absent), ("present", &present)] {
        let mut i = 0;
        g.bench_function(name, |b| {
            b.iter(|| {
                i = (i + 1) % keys.len();
                let r = table
                    .read(black_box(&keys[i]), &ClusteringRange::ALL, false, 1)
                    .expect("read");
                assert_eq!(r.rows.len(), usize::from(name == "present"));
            })
        });
    }
    g.finish();
    drop(table);
    db.close().expect("close");
}

criterion_group!(benches, point_read);
criterion_main!(benches);
