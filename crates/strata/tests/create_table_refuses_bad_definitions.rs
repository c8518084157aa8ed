//! CREATE TABLE through `Database` refuses bad definitions with a one-line error
//! and changes nothing, neither on disk nor in the catalog (issue 10, item 6):
//! duplicate and case-variant column names (unquoted names ignore case; a quoted
//! `"K"` is another column), over-long names, keyspace and table names outside
//! `[A-Za-z0-9_]{1,48}`, and reserved keyspace names (`system`, `system_*`, and
//! the names of Strata's own entries in the data directory). `IF NOT EXISTS` on an
//! existing table succeeds and returns it unchanged, even with another definition,
//! as Cassandra does; without it the existing table is an error naming it.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::error::Error;
use strata::schema::{CreateTableStatement, MAX_COLUMN_NAME_LENGTH};

/// Every file and directory under `dir` (relative path → size and contents hash).
fn tree(dir: &Path, root: &Path, out: &mut BTreeMap<String, (u64, u32)>) {
    for e in std::fs::read_dir(dir).expect("read_dir") {
        let p = e.expect("entry").path();
        let rel = p
            .strip_prefix(root)
            .expect("under root")
            .display()
            .to_string();
        if p.is_dir() {
            out.insert(format!("{rel}/"), (0, 0));
            tree(&p, root, out);
        } else {
            let bytes = std::fs::read(&p).expect("read");
            out.insert(rel, (bytes.len() as u64, crc32c::crc32c(&bytes)));
        }
    }
}

fn snapshot(dir: &Path) -> BTreeMap<String, (u64, u32)> {
    let mut out = BTreeMap::new();
    tree(dir, dir, &mut out);
    out
}

fn open(dir: &Path) -> Database {
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.concurrent_compactors = 0;
    Database::open(dir, opts).expect("open")
}

#[test]
fn create_table_refuses_bad_definitions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = open(dir.path());
    let existing = db
        .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        .expect("create ks.t");
    let catalog = db.catalog();
    let disk = snapshot(dir.path());
    assert!(disk.contains_key("ks/t/"), "{disk:?}");

    let long_column = "c".repeat(100_000);
    let column_129 = "c".repeat(MAX_COLUMN_NAME_LENGTH + 1);
    let name_49 = "n".repeat(49);
    let long_table = "t".repeat(100_000);
    let refused: Vec<(String, &str)> = vec![
        // Columns.
        (
            "CREATE TABLE ks.dup (k int PRIMARY KEY, k text)".into(),
            "column 'k' is defined twice",
        ),
        (
            "CREATE TABLE ks.dup (k int PRIMARY KEY, K text)".into(),
            "K is the same column as k",
        ),
        (
            "CREATE TABLE ks.dup (k int PRIMARY KEY, v int, \"v\" text)".into(),
            "\"v\" is the same column as v",
        ),
        (
            "CREATE TABLE ks.dup (k int, c int, PRIMARY KEY (k, c, c))".into(),
            "PRIMARY KEY names column 'c' twice",
        ),
        (
            format!("CREATE TABLE ks.long (k int PRIMARY KEY, {long_column} text)"),
            "too long",
        ),
        (
            format!("CREATE TABLE ks.long (k int PRIMARY KEY, {column_129} text)"),
            "at most 128 characters",
        ),
        // Keyspace and table names.
        (
            format!("CREATE TABLE ks.{name_49} (k int PRIMARY KEY)"),
            "invalid table name",
        ),
        (
            format!("CREATE TABLE {name_49}.t (k int PRIMARY KEY)"),
            "invalid keyspace name",
        ),
        (
            format!("CREATE TABLE ks.\"{long_table}\" (k int PRIMARY KEY)"),
            "invalid table name",
        ),
        (
            "CREATE TABLE ks.\"a.b\" (k int PRIMARY KEY)".into(),
            "invalid table name",
        ),
        (
            "CREATE TABLE \"..\".t (k int PRIMARY KEY)".into(),
            "invalid keyspace name",
        ),
        (
            "CREATE TABLE \"k s\".t (k int PRIMARY KEY)".into(),
            "invalid keyspace name",
        ),
        // Reserved keyspaces: Cassandra's, and Strata's own data-directory entries.
        (
            "CREATE TABLE system.t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE SYSTEM.t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE system_schema.t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE \"System_Auth\".t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE commitlog.t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE \"CommitLog\".t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE quarantine.t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE snapshots.t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        (
            "CREATE TABLE \"LOCK\".t (k int PRIMARY KEY)".into(),
            "reserved",
        ),
        // One directory on a case-insensitive file system.
        (
            "CREATE TABLE \"KS\".u (k int PRIMARY KEY)".into(),
            "differs only in case",
        ),
        (
            "CREATE TABLE ks.\"T\" (k int PRIMARY KEY)".into(),
            "differs only in case",
        ),
    ];
    for (cql, needle) in &refused {
        let shown = &cql[..cql.len().min(80)];
        match db.create_table_cql(cql) {
            Err(e @ Error::InvalidInput(_)) => {
                let m = e.to_string();
                assert!(m.contains(needle), "{shown}: {m}");
                assert!(!m.contains('\n') && m.len() < 400, "one short line: {m}");
            }
            other => panic!("{shown}: expected InvalidInput, got {other:?}"),
        }
        assert_eq!(db.catalog(), catalog, "{shown}: catalog unchanged");
        assert_eq!(snapshot(dir.path()), disk, "{shown}: disk unchanged");
    }
    // The keyspace API refuses the same names.
    for ks in ["system", "system_distributed", "commitlog", "Snapshots"] {
        assert!(
            matches!(db.create_keyspace(ks), Err(Error::InvalidInput(m)) if m.contains("reserved")),
            "{ks}"
        );
    }
    assert_eq!(snapshot(dir.path()), disk);

    // An existing table: an error naming it without IF NOT EXISTS ...
    match db.create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)") {
        Err(Error::AlreadyExists(m)) => assert!(m.contains("ks.t"), "{m}"),
        other => panic!("expected AlreadyExists, got {other:?}"),
    }
    // ... and the existing table, unchanged, with it (even if the definition differs).
    for cql in [
        "CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY, v text)",
        "create table if not exists KS.T (k text, other blob, PRIMARY KEY (k, other)) \
         WITH gc_grace_seconds = 1",
    ] {
        let t = db.create_table_cql(cql).expect(cql);
        assert!(Arc::ptr_eq(&t, &existing), "{cql}: the existing table");
        assert_eq!(t.schema().to_cql(), existing.schema().to_cql());
    }
    assert_eq!(db.catalog(), catalog, "IF NOT EXISTS changed nothing");
    assert_eq!(snapshot(dir.path()), disk, "IF NOT EXISTS wrote nothing");
    // IF NOT EXISTS still validates the statement itself.
    assert!(matches!(
        db.create_table_cql("CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY, k text)"),
        Err(Error::InvalidInput(_))
    ));

    // What CQL allows is still allowed: quoted names keep their case.
    let quoted = db
        .create_table_cql("CREATE TABLE IF NOT EXISTS ks.q (k int PRIMARY KEY, \"K\" text)")
        .expect("\"K\" and k are two columns");
    assert_eq!(quoted.schema().columns.len(), 2);
    let stmt = CreateTableStatement::parse("CREATE TABLE IF NOT EXISTS ks.q (k int PRIMARY KEY)")
        .expect("parse");
    assert!(stmt.if_not_exists);
    db.close().expect("close");

    // Nothing refused appears after a reopen either.
    let db = open(dir.path());
    let after = db.catalog();
    let names: Vec<String> = after.keyspaces.keys().cloned().collect();
    assert_eq!(names, ["ks"]);
    let tables: Vec<&String> = after.keyspaces["ks"].tables.keys().collect();
    assert_eq!(tables, ["q", "t"]);
    db.close().expect("close");
}
