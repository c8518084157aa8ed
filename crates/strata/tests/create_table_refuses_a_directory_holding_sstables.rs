//! A table created again under the name of an old one, with other column types,
//! used to adopt the old sstables (and `verify`, `scrub` and `compact` passed on
//! the mismatched data). Now a missing schema with table data refuses to open,
//! and creating a table over a directory that holds sstables is refused, naming
//! `strata sstable import`, which checks columns before adopting anything.

mod common;

use strata::error::Error;

#[test]
fn a_new_table_does_not_adopt_an_old_tables_sstables() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 100, 1);
    // The operator moves the schema aside and starts over with other types.
    std::fs::remove_file(dir.path().join("schema.json")).unwrap();
    std::fs::remove_file(common::table_dir(dir.path()).join("MANIFEST")).unwrap();
    let db = strata::db::Database::open(dir.path(), common::options());
    // Still table data on disk: refused (not an empty catalog).
    assert!(db.is_err());
    // Even with the old directory kept under a fresh data directory's schema,
    // create_table refuses a directory that holds sstables.
    let fresh = tempfile::tempdir().unwrap();
    let db = common::open(fresh.path());
    let tdir = common::table_dir(fresh.path());
    std::fs::create_dir_all(&tdir).unwrap();
    for f in common::sstables(&common::table_dir(dir.path())) {
        std::fs::copy(&f, tdir.join(f.file_name().unwrap())).unwrap();
    }
    let err = db
        .create_table_cql("CREATE TABLE ks.t (k text PRIMARY KEY, v blob)")
        .unwrap_err();
    assert!(matches!(err, Error::AlreadyExists(_)), "{err}");
    assert!(err.to_string().contains("strata sstable import"), "{err}");
    assert!(
        db.table("ks", "t").is_err(),
        "the refused table was created"
    );
    db.close().unwrap();
}
