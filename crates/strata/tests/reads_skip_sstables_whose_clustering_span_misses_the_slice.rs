//! A read of a row or a slice skips the sstables whose clustering span (the
//! stats' coverage, format version 5) cannot hold anything in its range: a
//! recent point of a time series reads its own flush and not every newer one
//! holding later points of the same series, and the newest N points of an
//! unbounded slice open only the flushes that hold them (an sstable is opened
//! when the merge reaches its first row). An sstable with a range
//! tombstone, a partition deletion or a static row is always read (they reach
//! beyond its rows). Every answer is checked, not only the count of sstables
//! read.

mod common;
use common::options;
use std::sync::Arc;
use strata::data::ClusteringRange;
use strata::db::Database;
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

fn at(ts: i64) -> WriteOptions {
    WriteOptions {
        timestamp_micros: Some(ts),
        ttl_seconds: None,
    }
}

/// Series `k`'s points in `[from, to]` (inclusive), reversed or not: their
/// times and values, and how many sstables the read consulted.
fn slice(t: &Table, k: i64, from: i64, to: i64, reversed: bool) -> (Vec<(i64, String)>, usize) {
    let schema = t.schema();
    let key = schema.decorated_key(&[Value::BigInt(k)]).expect("key");
    let (a, b) = ([Value::BigInt(from)], [Value::BigInt(to)]);
    let range = schema
        .clustering_range((&a[..], true), (&b[..], true))
        .expect("range");
    let consulted = t
        .read(&key, &range, reversed, usize::MAX)
        .expect("read")
        .sstables_read;
    let rows = t
        .select(&[Value::BigInt(k)], &range, reversed, usize::MAX)
        .expect("select")
        .into_iter()
        .map(|row| {
            let mut time = 0;
            let mut value = String::new();
            for (name, v) in row {
                match (name.as_str(), v) {
                    ("t", Some(Value::BigInt(x))) => time = x,
                    ("v", Some(Value::Text(s))) => value = s,
                    _ => {}
                }
            }
            (time, value)
        })
        .collect();
    (rows, consulted)
}

fn point(t: &Table, k: i64, time: i64) -> (Vec<(i64, String)>, usize) {
    slice(t, k, time, time, false)
}

fn value(k: i64, time: i64) -> String {
    format!("{k}@{time}")
}

fn expected(k: i64, times: impl Iterator<Item = i64>) -> Vec<(i64, String)> {
    times.map(|time| (time, value(k, time))).collect()
}

/// Five flushes, each the next 100 points of series 1 to 3 (time `100 * f`
/// to `100 * f + 99` in flush `f`).
fn write_five_flushes(t: &Arc<Table>) {
    for f in 0..5i64 {
        for k in 1..=3i64 {
            for time in 100 * f..100 * f + 100 {
                t.insert(
                    &[
                        ("k", Value::BigInt(k)),
                        ("t", Value::BigInt(time)),
                        ("v", Value::Text(value(k, time))),
                    ],
                    &at(1_000 + time),
                )
                .expect("insert");
            }
        }
        t.flush().expect("flush");
    }
}

/// A fresh database with `ks.ts` of these columns (`k bigint, t bigint`
/// first, clustered by `t`, compaction off) and five flushes of it.
fn five_flushes(columns: &str) -> (tempfile::TempDir, Database, Arc<Table>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), options()).expect("open");
    let t = db
        .create_table_cql(&format!(
            "CREATE TABLE ks.ts (k bigint, t bigint, {columns}, PRIMARY KEY (k, t)) \
             WITH compaction = {{'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}}"
        ))
        .expect("table");
    write_five_flushes(&t);
    (dir, db, t)
}

#[test]
fn slices_read_only_the_sstables_whose_clustering_span_they_meet() {
    let (_dir, db, t) = five_flushes("v text");
    assert_eq!(t.view().sstables().len(), 5);

    // A point reads its own flush: the newer ones hold only later points.
    assert_eq!(point(&t, 2, 150), (expected(2, 150..151), 1));
    assert_eq!(point(&t, 3, 499), (expected(3, 499..500), 1));
    assert_eq!(point(&t, 1, 0), (expected(1, 0..1), 1));
    // A slice across two flushes reads those two, in either direction.
    assert_eq!(slice(&t, 1, 150, 250, false), (expected(1, 150..251), 2));
    assert_eq!(
        slice(&t, 1, 150, 250, true),
        (expected(1, (150..251).rev()), 2)
    );
    // The whole partition reads all five; a slice beyond every span none.
    assert_eq!(slice(&t, 2, 0, 1_000, false), (expected(2, 0..500), 5));
    assert_eq!(slice(&t, 2, 500, 1_000, false), (vec![], 0));
    assert_eq!(slice(&t, 2, -10, -1, false), (vec![], 0));

    // The first N rows of an unbounded slice: an sstable is opened only when
    // the merge reaches its first row, so the newest N points read the
    // newest flush, and the oldest the oldest.
    let newest = |limit: usize, reversed: bool| {
        let key = t.schema().decorated_key(&[Value::BigInt(3)]).expect("key");
        let r = t
            .read(&key, &ClusteringRange::ALL, reversed, limit)
            .expect("read");
        let times: Vec<i64> = r
            .rows
            .iter()
            .map(|row| i64::from_be_bytes(row.clustering[..8].try_into().expect("8 bytes")))
            .map(|t| t ^ i64::MIN)
            .collect();
        (times, r.sstables_read)
    };
    assert_eq!(newest(10, true), ((490..500).rev().collect(), 1));
    assert_eq!(newest(150, true), ((350..500).rev().collect(), 2));
    assert_eq!(newest(10, false), ((0..10).collect(), 1));
    assert_eq!(newest(usize::MAX, false).1, 5);

    // A range tombstone in a newer flush reaches beyond its rows: that
    // sstable is always read, and its deletion applies. Newer than every
    // other sstable, it settles a point it covers alone (`read::read_row`);
    // a point it does not cover reads its own flush too.
    let schema = t.schema();
    let delete = schema
        .delete_range(
            &[("k", Value::BigInt(1))],
            (&[Value::BigInt(140)], true),
            (&[Value::BigInt(160)], true),
            &at(10_000),
            0,
        )
        .expect("delete");
    t.apply(&delete).expect("apply");
    t.flush().expect("flush");
    assert_eq!(point(&t, 1, 150), (vec![], 1));
    assert_eq!(
        slice(&t, 1, 100, 199, false).0,
        expected(1, (100..140).chain(161..200))
    );
    assert_eq!(point(&t, 1, 130), (expected(1, 130..131), 2));
    // Another series' point: the tombstone's sstable does not hold the
    // partition, and its Bloom filter (exact for so few keys) says so.
    assert_eq!(point(&t, 2, 150).0, expected(2, 150..151));
    drop(t);
    db.close().expect("close");
}

#[test]
fn an_sstable_with_a_static_row_is_read_for_every_slice() {
    let (_dir, db, t) = five_flushes("s text static, v text");
    assert_eq!(point(&t, 2, 150), (expected(2, 150..151), 1));
    // A static value in a newer flush: that sstable is read for every slice.
    t.insert(
        &[("k", Value::BigInt(2)), ("s", Value::Text("meta".into()))],
        &at(20_000),
    )
    .expect("static");
    t.flush().expect("flush");
    let schema = t.schema();
    let key = schema.decorated_key(&[Value::BigInt(2)]).expect("key");
    let (a, b) = ([Value::BigInt(150)], [Value::BigInt(150)]);
    let range = schema
        .clustering_range((&a[..], true), (&b[..], true))
        .expect("range");
    let r = t.read(&key, &range, false, 1).expect("read");
    assert_eq!(r.sstables_read, 2);
    let s = r.static_row.expect("the static row is read");
    assert_eq!(s.cells.len(), 1);
    assert_eq!(point(&t, 2, 150).0, expected(2, 150..151));
    drop(t);
    db.close().expect("close");
}
