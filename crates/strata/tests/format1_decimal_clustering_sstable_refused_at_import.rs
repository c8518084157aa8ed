//! A format-1 sstable (written before decimal clustering keys compared by value)
//! offered to a table with a decimal clustering column is refused by `sstable
//! import`, naming why, and nothing changes; the same file is accepted by a table
//! whose clustering has no decimal, since only decimal encodings changed
//! (issue 10, item 7; docs/FORMAT.md, "Decimal clustering keys").

mod common;

use strata::cql::literal::parse_value;
use strata::data::ClusteringRange;
use strata::fs::Fs;
use strata::schema::WriteOptions;
use strata::sstable::{SSTableWriter, WriterOptions};
use strata::types::{CqlType, Value};

#[test]
fn format1_files_are_refused_only_where_decimal_keys_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(&dir.path().join("data"));
    let prices = db
        .create_table_cql(
            "CREATE TABLE ks.prices (k int, price decimal, v text, PRIMARY KEY (k, price))",
        )
        .unwrap();
    let plain = db
        .create_table_cql(
            "CREATE TABLE ks.plain (k int, price decimal, v text, PRIMARY KEY (k, v))",
        )
        .unwrap();
    // Rows built by the current schema, written without an identity header: the
    // layout of a format-1 file.
    let schema = prices.schema();
    let update = schema
        .insert(
            &[
                ("k", Value::Int(1)),
                ("price", parse_value(&CqlType::Decimal, "1.5").unwrap()),
                ("v", Value::Text("a".into())),
            ],
            &WriteOptions::default(),
            1,
        )
        .unwrap();
    let out = dir.path().join("old");
    std::fs::create_dir_all(&out).unwrap();
    let mut w = SSTableWriter::create(&Fs::new(), &out, 7, WriterOptions::default()).unwrap();
    w.append(&update).unwrap();
    let reader = w.finish().unwrap();
    assert_eq!(reader.format_version(), 1);
    let file = reader.path().to_path_buf();
    drop(reader);

    let err = strata::repair::import_sstables(&prices, std::slice::from_ref(&file)).unwrap_err();
    assert!(matches!(err, strata::Error::InvalidInput(_)), "{err}");
    assert!(err.to_string().contains("format-1"), "{err}");
    assert!(prices.view().sstables().is_empty());
    assert!(prices
        .select(&[Value::Int(1)], &ClusteringRange::ALL, false, 10)
        .unwrap()
        .is_empty());
    assert!(file.exists(), "the refused file must be left where it was");

    // A table without a decimal clustering column takes a format-1 file.
    let schema = plain.schema();
    let update = schema
        .insert(
            &[
                ("k", Value::Int(1)),
                ("price", parse_value(&CqlType::Decimal, "1.50").unwrap()),
                ("v", Value::Text("a".into())),
            ],
            &WriteOptions::default(),
            1,
        )
        .unwrap();
    let out = dir.path().join("old-plain");
    std::fs::create_dir_all(&out).unwrap();
    let mut w = SSTableWriter::create(&Fs::new(), &out, 8, WriterOptions::default()).unwrap();
    w.append(&update).unwrap();
    let file = w.finish().unwrap().path().to_path_buf();
    strata::repair::import_sstables(&plain, &[file]).unwrap();
    assert_eq!(
        plain
            .select(&[Value::Int(1)], &ClusteringRange::ALL, false, 10)
            .unwrap()
            .len(),
        1
    );
    drop((prices, plain));
    db.close().unwrap();
}
