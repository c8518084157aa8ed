//! Bad input gets a clear error naming what was wrong, and nothing is written:
//! oversized partition key, oversized value, unknown keyspace/table/column, wrong
//! value type, unknown or out-of-range option (at CREATE and at ALTER).

use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::tablestats::TableStats;
use strata::types::Value;
use strata::Error;

fn open(dir: &std::path::Path) -> Database {
    Database::open(dir, DbOptions::new(SimClock::fixed())).expect("open")
}

#[test]
fn bad_input_is_rejected_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let db = open(dir.path());
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k blob, c int, v text, n bigint, PRIMARY KEY ((k), c)) WITH max_value_size_in_kb = 1",
        )
        .unwrap();
    let w = WriteOptions::default();

    // Partition key over 65,535 bytes (Cassandra's limit).
    let err = t
        .insert(
            &[
                ("k", Value::Blob(vec![1; 65_536])),
                ("c", Value::Int(1)),
                ("v", Value::Text("x".into())),
            ],
            &w,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains("65"),
        "error should name the limit: {err}"
    );

    // A value over the configured limit (1 KiB here).
    let err = t
        .insert(
            &[
                ("k", Value::Blob(vec![1])),
                ("c", Value::Int(1)),
                ("v", Value::Text("x".repeat(2000))),
            ],
            &w,
        )
        .unwrap_err();
    assert!(
        err.to_string().contains('v'),
        "error should name the column: {err}"
    );

    // Unknown column.
    let err = t
        .insert(
            &[
                ("k", Value::Blob(vec![1])),
                ("c", Value::Int(1)),
                ("nope", Value::Int(1)),
            ],
            &w,
        )
        .unwrap_err();
    assert!(err.to_string().contains("nope"), "{err}");

    // Wrong value type.
    let err = t
        .insert(
            &[
                ("k", Value::Blob(vec![1])),
                ("c", Value::Int(1)),
                ("n", Value::Text("1".into())),
            ],
            &w,
        )
        .unwrap_err();
    assert!(err.to_string().contains('n'), "{err}");

    // Missing clustering column.
    assert!(t
        .insert(
            &[("k", Value::Blob(vec![1])), ("v", Value::Text("x".into()))],
            &w
        )
        .is_err());

    // Unknown keyspace / table.
    assert!(matches!(db.table("nope", "t"), Err(Error::NotFound(_))));
    assert!(matches!(db.table("ks", "nope"), Err(Error::NotFound(_))));

    // Nothing was written by any of the above.
    let stats = TableStats::of(&t);
    assert_eq!(stats.local_write_count, 0);
    assert_eq!(stats.memtable_cell_count, 0);
    assert!(t
        .select(
            &[Value::Blob(vec![1])],
            &ClusteringRange::ALL,
            false,
            usize::MAX
        )
        .unwrap()
        .is_empty());

    // Unknown option and out-of-range option at CREATE: no table appears.
    let err = db.create_table_cql("CREATE TABLE ks.u (k int PRIMARY KEY) WITH compaction = {'class': 'LeveledCompactionStrategy', 'fanout': 4}").unwrap_err();
    assert!(matches!(err, Error::InvalidOption { .. }), "{err}");
    assert!(err.to_string().contains("fanout"), "{err}");
    let err = db.create_table_cql("CREATE TABLE ks.u (k int PRIMARY KEY) WITH compression = {'class': 'ZstdCompressor', 'compression_level': 23}").unwrap_err();
    assert!(err.to_string().contains("compression_level"), "{err}");
    assert!(db.table("ks", "u").is_err());

    // Bad ALTER: options unchanged, in memory and after reopen.
    let before = t.schema().options.clone();
    let err = db
        .alter_table_options("ks", "t", "gc_grace_seconds = -1")
        .unwrap_err();
    assert!(err.to_string().contains("gc_grace_seconds"), "{err}");
    let err = db
        .alter_table_options(
            "ks",
            "t",
            "bloom_filter_fp_chance = 0.01 AND bogus_option = 1",
        )
        .unwrap_err();
    assert!(err.to_string().contains("bogus_option"), "{err}");
    assert_eq!(t.schema().options, before);
    db.close().unwrap();
    let db = open(dir.path());
    assert_eq!(db.table("ks", "t").unwrap().schema().options, before);
    assert!(db.table("ks", "u").is_err());
}
