//! Lightweight transactions conditioned on one element or field
//! (`IF m['a'] = 1`, `IF l[0] = 'q'`, `IF u.x > 4`), frozen or not: the
//! condition reads that part of the current value (null when absent), and a
//! failed one answers `[applied] = false` with the conditioned columns.

mod common;

use common::golden::{executor, query};
use strata::query::QueryResult;

#[test]
fn element_and_field_conditions_decide_lwts() {
    let dir = tempfile::tempdir().unwrap();
    let exec = executor(dir.path());
    let run = |cql: &str| query(&exec, cql);
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TYPE ks.a (x int, y text)",
        "CREATE TABLE ks.t (k int PRIMARY KEY, m map<text, int>, fm frozen<map<text, int>>, \
         u a, l list<text>, v int)",
        "INSERT INTO ks.t (k, m, fm, u, l, v) VALUES (1, {'a': 1}, {'b': 2}, {x: 5}, ['p', 'q'], 0)",
    ] {
        run(cql).unwrap();
    }
    let applied = |cql: &str| match run(cql) {
        Ok(QueryResult::Rows(r)) => {
            let names: Vec<String> = r.metadata.columns.iter().map(|c| c.name.clone()).collect();
            (r.rows[0][0] == Some(vec![1]), names)
        }
        other => panic!("{cql}: {other:?}"),
    };
    let cases: &[(&str, bool)] = &[
        ("UPDATE ks.t SET v = 1 WHERE k = 1 IF m['a'] = 1", true),
        ("UPDATE ks.t SET v = 2 WHERE k = 1 IF m['a'] = 2", false),
        ("UPDATE ks.t SET v = 3 WHERE k = 1 IF m['zz'] = null", true),
        (
            "UPDATE ks.t SET v = 4 WHERE k = 1 IF fm['b'] > 1 AND u.x >= 5",
            true,
        ),
        ("UPDATE ks.t SET v = 5 WHERE k = 1 IF u.y = 'n'", false),
        (
            "UPDATE ks.t SET v = 6 WHERE k = 1 IF l[1] IN ('x', 'q')",
            true,
        ),
        ("UPDATE ks.t SET v = 7 WHERE k = 1 IF l[5] = 'q'", false),
    ];
    for (cql, want) in cases {
        assert_eq!(applied(cql).0, *want, "{cql}");
    }
    // A failed condition shows the whole conditioned columns.
    let (ok, names) = applied("UPDATE ks.t SET v = 8 WHERE k = 1 IF m['a'] = 9 AND u.x = 5");
    assert!(!ok);
    assert_eq!(names, ["[applied]", "m", "u"]);
    assert_eq!(
        run("UPDATE ks.t SET v = 9 WHERE k = 1 IF v['a'] = 1").unwrap_err(),
        "Invalid element or field condition on column v of type int"
    );
    let Ok(QueryResult::Rows(r)) = run("SELECT v FROM ks.t WHERE k = 1") else {
        panic!("rows");
    };
    assert_eq!(r.rows, vec![vec![Some(6i32.to_be_bytes().to_vec())]]);
}
