//! A lost `schema.json` of a table whose columns are a frozen user-defined
//! type, a nested frozen map and a tuple clustering key is rebuilt from the
//! sstables' identity headers, which carry each composite type whole (the
//! UDT's fields included): the columns come back with their types and the
//! options of the newest snapshot's schema.cql (which names the type), the
//! keyspace gets its user-defined type back (so `system_schema.types` lists
//! it, DESCRIBE prints it and new tables can use it), and every acknowledged
//! row reads as written,
//! those in sstables and those only in the commit log alike.

mod common;

use common::golden::executor;
use strata::query::{QueryParams, QueryResult, Session};
use strata::schema_rebuild::{rebuild_schema, RebuildSchemaOptions};

fn run(exec: &strata::query::Executor, cql: &str) -> QueryResult {
    exec.query(&mut Session::default(), cql, &QueryParams::default())
        .unwrap_or_else(|e| panic!("{cql}: {}", e.message))
        .result
}

fn rows(exec: &strata::query::Executor, cql: &str) -> Vec<Vec<Option<Vec<u8>>>> {
    match run(exec, cql) {
        QueryResult::Rows(r) => r.rows,
        other => panic!("{cql}: {other:?}"),
    }
}

const SELECT: &str = "SELECT k, c, a, m, na, l FROM ks.t";

#[test]
fn schema_rebuild_restores_user_types_and_composite_columns() {
    let dir = tempfile::tempdir().unwrap();
    let before = {
        let exec = executor(dir.path());
        for cql in [
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
            "CREATE TYPE ks.addr (street text, nr int)",
            "CREATE TABLE ks.t (k int, c tuple<int, text>, a frozen<addr>, \
             m frozen<map<text, frozen<list<int>>>>, na addr, l list<int>, PRIMARY KEY (k, c)) \
             WITH gc_grace_seconds = 3600",
            "INSERT INTO ks.t (k, c, a, m, na, l) VALUES (1, (1, 'x'), {street: 'Main', nr: 5}, \
             {'a': [1, 2]}, {nr: 3}, [4, 5])",
            "UPDATE ks.t SET na.street = 'Up', l = l + [6] WHERE k = 1 AND c = (1, 'x')",
            "INSERT INTO ks.t (k, c, a, m) VALUES (1, (null, 'y'), {nr: 7}, {})",
        ] {
            run(&exec, cql);
        }
        exec.database().flush_all().unwrap();
        // A snapshot's schema.cql names the type: the rebuild reads it with
        // the types the headers carry and takes its options.
        let t = exec.database().table("ks", "t").unwrap();
        let snap = strata::maintenance::snapshot(&t, "before").unwrap();
        // It creates the type before the table, as Cassandra's does, and
        // replays into an empty directory.
        let script = std::fs::read_to_string(snap.path.join("schema.cql")).unwrap();
        assert!(
            script.starts_with("CREATE TYPE IF NOT EXISTS ks.addr (\n    street text,\n    nr int\n);\nCREATE TABLE"),
            "{script}"
        );
        let elsewhere = tempfile::tempdir().unwrap();
        let fresh = executor(elsewhere.path());
        run(
            &fresh,
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        );
        for (start, end) in strata::cql::parser::split_statements(&script).unwrap() {
            run(&fresh, &script[start..end]);
        }
        let copy = fresh.database().catalog().table("ks", "t").unwrap().clone();
        assert_eq!(copy.options.gc_grace_seconds, 3600);
        // Acknowledged, only in the commit log.
        run(
            &exec,
            "INSERT INTO ks.t (k, c, a, m) VALUES (2, (0, ''), {street: 'Side'}, {'z': []})",
        );
        rows(&exec, SELECT)
        // Dropped without a close: nothing more is flushed.
    };
    assert_eq!(before.len(), 3);
    std::fs::remove_file(dir.path().join("schema.json")).unwrap();
    let fs = strata::fs::Fs::new();
    let report = rebuild_schema(&fs, dir.path(), &RebuildSchemaOptions::default()).unwrap();
    assert!(report.written, "{report:?}");
    assert!(
        report.tables.iter().all(|t| t.options_from.is_some()),
        "options from the snapshot: {report:?}"
    );

    let exec = executor(dir.path());
    let schema = exec.database().catalog().table("ks", "t").unwrap().clone();
    assert_eq!(schema.options.gc_grace_seconds, 3600);
    let types: Vec<String> = schema.columns.iter().map(|c| c.ty.name()).collect();
    assert_eq!(
        types,
        [
            "int",
            "frozen<tuple<int, text>>",
            "frozen<addr>",
            "frozen<map<text, frozen<list<int>>>>",
            "addr",
            "list<int>"
        ]
    );
    assert_eq!(rows(&exec, SELECT), before, "every row, both placements");
    let listed = rows(
        &exec,
        "SELECT type_name FROM system_schema.types WHERE keyspace_name = 'ks'",
    );
    assert_eq!(listed, vec![vec![Some(b"addr".to_vec())]]);
    let described = rows(&exec, "DESCRIBE KEYSPACE ks");
    let statements: Vec<String> = described
        .iter()
        .map(|r| String::from_utf8(r[3].clone().unwrap()).unwrap())
        .collect();
    assert_eq!(
        statements[1], "CREATE TYPE ks.addr (\n    street text,\n    nr int\n);",
        "the type between the keyspace and its tables: {statements:?}"
    );
    // The type is usable again, and protected again.
    run(
        &exec,
        "CREATE TABLE ks.u (k int PRIMARY KEY, a frozen<addr>)",
    );
    let refused = exec
        .query(
            &mut Session::default(),
            "DROP TYPE ks.addr",
            &QueryParams::default(),
        )
        .unwrap_err();
    assert!(
        refused.message.contains("still used by tables t, u"),
        "{}",
        refused.message
    );
}
