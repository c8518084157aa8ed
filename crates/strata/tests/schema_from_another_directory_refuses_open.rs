//! Scenario: an operator copies `schema.json` from another data directory
//! (whose `ks.t` has fewer columns), or restores an older copy of this
//! directory's own (from before `ALTER TABLE ADD`), beside a live writer or
//! on a stopped directory.
//!
//! Before, the open went ahead with the copied schema and silently hid the
//! columns it lacks (their cells were taken for a dropped column's). Now the
//! sstables' identity headers, which name the table's UUID and every column
//! with its id, show that the schema is not theirs: a column id at or above
//! the schema's next column id is one the schema never had, and a UUID other
//! than the one the MANIFEST names (the MANIFEST vouching for its files)
//! means another directory's table. The open refuses, naming `strata schema
//! rebuild`, changes nothing, and after the stranger is moved aside the
//! rebuild brings back every column and every acknowledged row.

mod common;

use common::writer::{self, Answer, Writer};
use std::path::{Path, PathBuf};
use strata::db::Database;
use strata::error::Error;
use strata::schema_rebuild::{rebuild_schema, RebuildSchemaOptions};
use strata::types::Value;

#[test]
fn child_entry() {
    writer::child_entry();
}

const WIDE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text, w text) WITH \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";

/// A stopped directory whose `ks.t` has one column more than the other's.
fn wide_directory(dir: &Path) {
    let db = Database::open(dir, writer::options()).unwrap();
    let t = db.create_table_cql(WIDE).unwrap();
    for k in 0..100 {
        t.insert(
            &[
                ("k", Value::Int(k)),
                ("v", Value::Text(common::value(k))),
                ("w", Value::Text(format!("w-{k}"))),
            ],
            &Default::default(),
        )
        .unwrap();
    }
    t.flush().unwrap();
    db.close().unwrap();
}

/// The other directory: `ks.t` with `k` and `v` only (`common::CREATE`).
fn narrow_directory(root: &Path) -> PathBuf {
    let other = root.join("narrow");
    let mut w = Writer::start(&other);
    w.write_all(0..10);
    assert!(matches!(w.quit(), Answer::Done));
    other
}

fn assert_refused_then_rebuilt(dir: &Path, expect: &str) {
    let before = common::tree_listing(dir);
    let err = Database::open(dir, writer::options()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NeedsRepair(_)), "{msg}");
    assert!(msg.contains(expect), "{msg}");
    assert!(msg.contains("strata schema rebuild"), "{msg}");
    assert_eq!(
        common::tree_listing(dir),
        before,
        "a refused open changes nothing"
    );
    std::fs::rename(dir.join("schema.json"), dir.join("schema.json.foreign")).unwrap();
    rebuild_schema(
        &strata::fs::Fs::new(),
        dir,
        &RebuildSchemaOptions::default(),
    )
    .unwrap();
    let db = Database::open(dir, writer::options()).unwrap();
    let t = db.table("ks", "t").unwrap();
    for k in 0..100 {
        let rows = t
            .select(
                &[Value::Int(k)],
                &strata::data::ClusteringRange::ALL,
                false,
                1,
            )
            .unwrap();
        assert_eq!(rows.len(), 1, "key {k}");
        assert_eq!(
            rows[0][2],
            ("w".to_string(), Some(Value::Text(format!("w-{k}"))))
        );
    }
    db.close().unwrap();
}

#[test]
fn schema_of_another_directory_with_fewer_columns_refuses_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    wide_directory(&dir);
    let other = narrow_directory(tmp.path());
    std::fs::copy(other.join("schema.json"), dir.join("schema.json")).unwrap();
    assert_refused_then_rebuilt(&dir, "another data directory");
}

#[test]
fn older_copy_of_the_own_schema_refuses_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let db = Database::open(&dir, writer::options()).unwrap();
    db.create_table_cql(common::CREATE).unwrap();
    db.close().unwrap();
    let older = std::fs::read(dir.join("schema.json")).unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    let mut catalog = db.catalog();
    drop(db);
    // ALTER TABLE ks.t ADD w text, then rows with w, flushed.
    catalog
        .alter_table_add_column("ks", "t", "w", strata::types::CqlType::Text, false)
        .unwrap();
    std::fs::write(dir.join("schema.json"), catalog.to_json().unwrap()).unwrap();
    {
        let db = Database::open(&dir, writer::options()).unwrap();
        let t = db.table("ks", "t").unwrap();
        for k in 0..100 {
            t.insert(
                &[
                    ("k", Value::Int(k)),
                    ("v", Value::Text(common::value(k))),
                    ("w", Value::Text(format!("w-{k}"))),
                ],
                &Default::default(),
            )
            .unwrap();
        }
        db.close().unwrap();
    }
    std::fs::write(dir.join("schema.json"), older).unwrap();
    assert_refused_then_rebuilt(&dir, "never had");
}

#[test]
fn schema_of_another_directory_beside_a_writer_refuses_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let other = narrow_directory(tmp.path());
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    // Same columns, another table UUID: the MANIFEST and its files name this
    // directory's, the copied schema the other's.
    std::fs::copy(other.join("schema.json"), dir.join("schema.json")).unwrap();
    w.write_all(200..300);
    let acked = w.kill();
    let err = Database::open(&dir, writer::options()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NeedsRepair(_)), "{msg}");
    assert!(msg.contains("another data directory"), "{msg}");
    assert!(msg.contains("strata schema rebuild"), "{msg}");
    std::fs::rename(dir.join("schema.json"), dir.join("schema.json.foreign")).unwrap();
    rebuild_schema(
        &strata::fs::Fs::new(),
        &dir,
        &RebuildSchemaOptions::default(),
    )
    .unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}
