//! `SELECT m['k']` and `s['x']` on frozen maps and sets, as Cassandra 5
//! answers them: the map's value at the key or the set's element, null when
//! absent, typed as the value (element) type and named as written; a list
//! and a non-collection are refused with Cassandra's messages.

mod common;

use common::golden::{executor, query};
use strata::query::{ColumnType, QueryResult};
use strata::types::CqlType;

#[test]
fn elements_of_frozen_maps_and_sets_are_selected() {
    let dir = tempfile::tempdir().unwrap();
    let exec = executor(dir.path());
    let run = |cql: &str| query(&exec, cql);
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, m frozen<map<text, int>>, s frozen<set<int>>, \
         l frozen<list<int>>, v int)",
        "INSERT INTO ks.t (k, m, s, l, v) VALUES (1, {'a': 1, 'b': 2}, {3, 5}, [7], 0)",
    ] {
        run(cql).unwrap();
    }
    let Ok(QueryResult::Rows(r)) = run("SELECT m['b'], m['z'], s[5], s[4] FROM ks.t WHERE k = 1")
    else {
        panic!("not rows");
    };
    let names: Vec<&str> = r.metadata.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(names, ["m['b']", "m['z']", "s[5]", "s[4]"]);
    assert!(r
        .metadata
        .columns
        .iter()
        .all(|c| c.ty == ColumnType::Native(CqlType::Int)));
    let int = |x: i32| Some(x.to_be_bytes().to_vec());
    assert_eq!(r.rows, vec![vec![int(2), None, int(5), None]]);
    assert_eq!(
        run("SELECT l[0] FROM ks.t WHERE k = 1").unwrap_err(),
        "Element selection is only allowed on sets and maps, but l is a list"
    );
    assert_eq!(
        run("SELECT v[0] FROM ks.t WHERE k = 1").unwrap_err(),
        "Invalid element selection: v is of type int is not a collection"
    );
}
