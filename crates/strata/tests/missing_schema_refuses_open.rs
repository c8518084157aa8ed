//! A data directory whose schema.json is gone used to open with zero tables (and
//! `verify` said OK), and a table created again under the same name with other
//! column types adopted the old sstables. Now the open is refused while table
//! data is present, and creating a table over a directory that holds sstables is
//! refused too.

mod common;

use strata::error::Error;

#[test]
fn missing_schema_with_table_data_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 100, 1);
    let schema = dir.path().join("schema.json");
    let saved = std::fs::read(&schema).unwrap();
    std::fs::remove_file(&schema).unwrap();

    let err = strata::db::Database::open(dir.path(), common::options()).unwrap_err();
    assert!(matches!(err, Error::NeedsRepair(_)), "{err}");
    assert!(err.to_string().contains("ks.t"), "{err}");
    // A read-only open refuses as well: it would report zero tables.
    let mut ro = common::options();
    ro.read_only = true;
    assert!(strata::db::Database::open(dir.path(), ro).is_err());
    assert!(!schema.exists(), "a refused open wrote a schema");

    // Restoring the file restores the table.
    std::fs::write(&schema, saved).unwrap();
    let db = common::open(dir.path());
    let t = db.table("ks", "t").unwrap();
    assert_eq!(common::readable(&t, 0..100), 100);
    db.close().unwrap();
}
