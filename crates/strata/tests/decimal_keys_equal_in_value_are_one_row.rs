//! Decimal clustering values equal in value (`1.5` and `1.50`, `0` and `0.00`, `100`
//! and `1E+2`) are one clustering, as in Cassandra's `DecimalType`: the later write
//! updates that row, and a read by either spelling finds it, from the memtable,
//! after a flush, and after a compaction that merges two sstables holding the
//! different spellings (issue 10, item 7). The row reads back in the canonical
//! spelling (`types::canonical`: `1.5`, `0`, `100`).

use std::sync::Arc;
use strata::clock::SimClock;
use strata::cql::literal::parse_value;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::{format_value, CqlType, Value};

fn dec(s: &str) -> Value {
    parse_value(&CqlType::Decimal, s).expect("decimal literal")
}

fn at(ts: i64) -> WriteOptions {
    WriteOptions {
        timestamp_micros: Some(ts),
        ttl_seconds: None,
    }
}

fn put(t: &Arc<Table>, k: i32, c: &str, v: &str, ts: i64) {
    t.insert(
        &[
            ("k", Value::Int(k)),
            ("c", dec(c)),
            ("v", Value::Text(v.into())),
        ],
        &at(ts),
    )
    .expect("insert");
}

/// Every live row of partition `k` as (clustering as text, v).
fn rows(t: &Table, k: i32, range: &ClusteringRange) -> Vec<(String, String)> {
    t.select(&[Value::Int(k)], range, false, usize::MAX)
        .expect("select")
        .into_iter()
        .map(|row| {
            let get = |name: &str| {
                row.iter()
                    .find(|(n, _)| n == name)
                    .and_then(|(_, v)| v.clone())
                    .unwrap_or_else(|| panic!("column {name} missing in {row:?}"))
            };
            let v = match get("v") {
                Value::Text(s) => s,
                other => panic!("v is {other:?}"),
            };
            (format_value(&get("c")), v)
        })
        .collect()
}

/// The rows a read restricted to exactly clustering `c` (as spelled) returns.
fn by_spelling(t: &Table, k: i32, c: &str) -> Vec<(String, String)> {
    let one = [dec(c)];
    let range = t
        .schema()
        .clustering_range((&one, true), (&one, true))
        .expect("range");
    rows(t, k, &range)
}

fn pairs(expected: &[(&str, &str)]) -> Vec<(String, String)> {
    expected
        .iter()
        .map(|(c, v)| (c.to_string(), v.to_string()))
        .collect()
}

/// Partition 1 holds, for each class, a first spelling written at ts 10 and a
/// second at ts 20; each class must be one row holding the second value,
/// found by every spelling of the class.
fn check_partition_one(t: &Table, when: &str) {
    assert_eq!(
        rows(t, 1, &ClusteringRange::ALL),
        pairs(&[
            ("-70", "neg-new"),
            ("0", "zero-new"),
            ("1.5", "one-and-a-half-new"),
            ("100", "hundred-new"),
        ]),
        "{when}: one row per value, later write wins"
    );
    for (spellings, expected) in [
        (
            &["1.5", "1.50", "15E-1", "1.500000"][..],
            ("1.5", "one-and-a-half-new"),
        ),
        (&["0", "0.00", "0E+3", "-0.0"], ("0", "zero-new")),
        (&["100", "1E+2", "100.0", "0.1E+3"], ("100", "hundred-new")),
        (&["-70", "-7.0E+1", "-70.00"], ("-70", "neg-new")),
    ] {
        for s in spellings {
            assert_eq!(
                by_spelling(t, 1, s),
                pairs(&[expected]),
                "{when}: read by spelling {s}"
            );
        }
    }
    // A range whose bounds are spelled differently from the stored rows.
    let (lo, hi) = ([dec("0.000")], [dec("1.50")]);
    let range = t
        .schema()
        .clustering_range((&lo, false), (&hi, true))
        .expect("range");
    assert_eq!(
        rows(t, 1, &range),
        pairs(&[("1.5", "one-and-a-half-new")]),
        "{when}: (0.000, 1.50] excludes 0 and includes 1.5"
    );
}

#[test]
fn decimal_keys_equal_in_value_are_one_row() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.d (k int, c decimal, v text, PRIMARY KEY (k, c)) WITH \
             compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
        )
        .expect("create");

    // Memtable: both spellings of each value land in the one memtable.
    for (first, second, name) in [
        ("1.5", "1.50", "one-and-a-half"),
        ("0", "0.00", "zero"),
        ("100", "1E+2", "hundred"),
        ("-7.0E+1", "-70", "neg"),
    ] {
        put(&t, 1, first, &format!("{name}-old"), 10);
        put(&t, 1, second, &format!("{name}-new"), 20);
    }
    // A later write of an older timestamp loses, whatever its spelling.
    put(&t, 1, "1.5000", "stale", 5);
    check_partition_one(&t, "memtable");

    t.flush().expect("flush");
    assert_eq!(t.view().sstables().len(), 1);
    check_partition_one(&t, "after flush");

    // Two sstables, each with one spelling: the older spelling first, then the
    // newer one (1.5 / 1.50) and the other way round (100.0 newer, flushed first).
    put(&t, 2, "1.5", "first-sstable", 10);
    put(&t, 2, "100.0", "newer-in-first", 40);
    t.flush().expect("flush");
    put(&t, 2, "1.50", "second-sstable", 20);
    put(&t, 2, "1E+2", "older-in-second", 30);
    t.flush().expect("flush");
    assert_eq!(t.view().sstables().len(), 3);
    let expected = pairs(&[("1.5", "second-sstable"), ("100", "newer-in-first")]);
    assert_eq!(
        rows(&t, 2, &ClusteringRange::ALL),
        expected,
        "read merging two sstables"
    );

    t.compact_major(db.compaction_limiter()).expect("compact");
    assert_eq!(
        t.view().sstables().len(),
        1,
        "major compaction merged everything"
    );
    // With one sstable and an empty memtable, the rows read are the rows stored:
    // the compaction wrote one row per value, not one per spelling.
    assert_eq!(
        rows(&t, 2, &ClusteringRange::ALL),
        expected,
        "after compaction"
    );
    for s in ["1.5", "1.50", "1.500"] {
        assert_eq!(
            by_spelling(&t, 2, s),
            pairs(&[("1.5", "second-sstable")]),
            "after compaction, by {s}"
        );
    }
    for s in ["100", "1E+2", "100.0"] {
        assert_eq!(
            by_spelling(&t, 2, s),
            pairs(&[("100", "newer-in-first")]),
            "after compaction, by {s}"
        );
    }
    check_partition_one(&t, "after compaction");

    // And after a reopen (the canonical bytes are what is stored).
    db.close().expect("close");
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("reopen");
    let t = db.table("ks", "d").expect("table");
    check_partition_one(&t, "after reopen");
    assert_eq!(rows(&t, 2, &ClusteringRange::ALL), expected, "after reopen");
    db.close().expect("close");
}

#[test]
fn descending_decimal_clustering_is_one_row_too() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.d (k int, c decimal, v text, PRIMARY KEY (k, c)) \
             WITH CLUSTERING ORDER BY (c DESC)",
        )
        .expect("create");
    put(&t, 1, "2.50", "two-and-a-half-old", 10);
    put(&t, 1, "-0.10", "minus-tenth", 10);
    t.flush().expect("flush");
    put(&t, 1, "2.5", "two-and-a-half-new", 20);
    put(&t, 1, "25E-1", "two-and-a-half-stale", 15);
    assert_eq!(
        rows(&t, 1, &ClusteringRange::ALL),
        pairs(&[("2.5", "two-and-a-half-new"), ("-0.1", "minus-tenth")]),
        "DESC order, one row per value"
    );
    assert_eq!(
        by_spelling(&t, 1, "2.500"),
        pairs(&[("2.5", "two-and-a-half-new")])
    );
    db.close().expect("close");
}
