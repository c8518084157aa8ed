//! A read of one whole row consults sstables newest write first and stops
//! once the ones left are older than everything it has found (Cassandra's
//! timestamp-ordered "names" read): a row rewritten whole reads one sstable,
//! a row missing a column or its marker in the newer sstable reads on, a
//! deletion newer than the rest settles it, a row that is nowhere reads every
//! admitted sstable whose clustering span holds it, and a table with a static column never stops early. The
//! answers are the full read's in every case.

mod common;
use common::options;
use std::sync::Arc;
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

/// The row `(k, c)`: its regular values and how many sstables the read consulted.
fn read(t: &Table, k: i64, c: i64) -> (Vec<Option<Value>>, usize) {
    let schema = t.schema();
    let key = schema.decorated_key(&[Value::BigInt(k)]).expect("key");
    let ck = [Value::BigInt(c)];
    let range = schema
        .clustering_range((&ck[..], true), (&ck[..], true))
        .expect("range");
    let result = t.read(&key, &range, false, 1).expect("read");
    let typed = t
        .select(&[Value::BigInt(k)], &range, false, 1)
        .expect("select");
    let values = typed
        .first()
        .map(|row| row.iter().skip(2).map(|(_, v)| v.clone()).collect())
        .unwrap_or_default();
    (values, result.sstables_read)
}

fn insert(t: &Arc<Table>, c: i64, v: &str, w: &str, ts: i64) {
    t.insert(
        &[
            ("k", Value::BigInt(1)),
            ("c", Value::BigInt(c)),
            ("v", Value::Text(v.into())),
            ("w", Value::Text(w.into())),
        ],
        &at(ts),
    )
    .expect("insert");
    t.flush().expect("flush");
}

fn text(s: &str) -> Option<Value> {
    Some(Value::Text(s.into()))
}

#[test]
fn a_point_read_stops_once_older_sstables_cannot_change_the_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), options()).expect("open");
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k bigint, c bigint, v text, w text, PRIMARY KEY (k, c)) \
             WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
        )
        .expect("table");

    // Rewritten whole: the newest sstable settles it.
    insert(&t, 1, "a", "b", 10);
    insert(&t, 1, "a2", "b2", 20);
    assert_eq!(read(&t, 1, 1), (vec![text("a2"), text("b2")], 1));

    // An update of one column has no row marker: the older sstable is read
    // for the marker and the other column.
    t.update(
        &[("k", Value::BigInt(1)), ("c", Value::BigInt(1))],
        &[("v", Some(Value::Text("a3".into())))],
        &at(30),
    )
    .expect("update");
    t.flush().expect("flush");
    assert_eq!(read(&t, 1, 1), (vec![text("a3"), text("b2")], 2));

    // An sstable written later with an older timestamp comes after the newer
    // ones in the read's order; its stale values lose.
    insert(&t, 1, "old", "old", 5);
    assert_eq!(read(&t, 1, 1), (vec![text("a3"), text("b2")], 2));

    // A whole-row rewrite newer than everything settles it again.
    insert(&t, 1, "a4", "b4", 40);
    assert_eq!(read(&t, 1, 1), (vec![text("a4"), text("b4")], 1));

    // A deletion newer than every other sstable: one sstable, no row.
    t.delete_row(&[("k", Value::BigInt(1)), ("c", Value::BigInt(1))], &at(50))
        .expect("delete");
    t.flush().expect("flush");
    assert_eq!(read(&t, 1, 1), (vec![], 1));

    // A row that is nowhere, outside every sstable's clustering span: none is
    // read (tests/reads_skip_sstables_whose_clustering_span_misses_the_slice.rs).
    // Inside spans, every sstable holding the partition is: rows 0 and 3 in
    // two flushes each, and the read of row 2 consults those two.
    assert_eq!(read(&t, 1, 2), (vec![], 0));
    for ts in [60, 70] {
        t.insert(
            &[
                ("k", Value::BigInt(1)),
                ("c", Value::BigInt(0)),
                ("v", Value::Text("low".into())),
            ],
            &at(ts),
        )
        .expect("insert");
        insert(&t, 3, "high", "high", ts);
    }
    assert_eq!(read(&t, 1, 2), (vec![], 2));

    // With a static column, every sstable may add to the static row: no
    // early stop, whatever the timestamps.
    let s = db
        .create_table_cql(
            "CREATE TABLE ks.s (k bigint, c bigint, st text static, v text, w text, \
             PRIMARY KEY (k, c)) \
             WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
        )
        .expect("table");
    insert(&s, 1, "a", "b", 10);
    insert(&s, 1, "a2", "b2", 20);
    assert_eq!(read(&s, 1, 1), (vec![None, text("a2"), text("b2")], 2));
    drop((t, s));
    db.close().expect("close");
}
