//! Building a partition key from typed values (`TableSchema::decorated_key`),
//! the first step of every typed read and write: a one-column key (the
//! usual table, and the comparison harness's) and a two-column composite.
//!
//! Run: `cargo bench -p strata --bench keys`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::time::Duration;
use strata::schema::TableSchema;
use strata::types::{CqlType, Value};

fn keys(c: &mut Criterion) {
    let one = TableSchema::builder("ks", "kv")
        .partition_key("k", CqlType::Blob)
        .column("v", CqlType::Blob)
        .build()
        .expect("schema");
    let two = TableSchema::builder("ks", "c")
        .partition_key("a", CqlType::Int)
        .partition_key("b", CqlType::Text)
        .column("v", CqlType::Blob)
        .build()
        .expect("schema");
    let key = [7u8; 16];
    let mut g = c.benchmark_group("decorated_key");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2));
    g.bench_function("one_blob_column_16B", |b| {
        b.iter(|| {
            one.decorated_key(&[Value::Blob(black_box(&key).to_vec())])
                .expect("key")
        })
    });
    g.bench_function("int_and_text_columns", |b| {
        b.iter(|| {
            two.decorated_key(&[Value::Int(black_box(7)), Value::Text("series-42".into())])
                .expect("key")
        })
    });
    g.finish();
}

criterion_group!(benches, keys);
criterion_main!(benches);
