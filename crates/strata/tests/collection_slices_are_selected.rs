//! `SELECT m['a'..'c']`, `s[2..]`, `m[..'b']` on frozen and non-frozen maps
//! and sets, as Cassandra 5 answers them: the entries (elements) whose key is
//! within the inclusive bounds, null when none, named as written and typed as
//! the collection; `writetime()` of a non-frozen slice lists its elements'
//! write times, `maxwritetime()` the largest.

mod common;

use common::golden::{executor, query};
use strata::query::QueryResult;
use strata::types::{self, CqlType, Value};

#[test]
fn slices_of_maps_and_sets_are_selected() {
    let dir = tempfile::tempdir().unwrap();
    let exec = executor(dir.path());
    let run = |cql: &str| query(&exec, cql);
    for cql in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int PRIMARY KEY, fm frozen<map<text, int>>, s set<int>)",
        "INSERT INTO ks.t (k, fm, s) VALUES (1, {'a': 1, 'b': 2, 'c': 3}, {1, 2}) USING TIMESTAMP 10",
        "UPDATE ks.t USING TIMESTAMP 20 SET s = s + {3, 4} WHERE k = 1",
    ] {
        run(cql).unwrap();
    }
    let Ok(QueryResult::Rows(r)) = run(
        "SELECT fm['b'..'c'], fm[..'a'], fm['x'..], s[2..3], s[5..], \
         writetime(s[2..3]), maxwritetime(s[..2]) FROM ks.t WHERE k = 1",
    ) else {
        panic!("not rows");
    };
    let names: Vec<&str> = r.metadata.columns.iter().map(|c| c.name.as_str()).collect();
    assert_eq!(
        names,
        [
            "fm['b'..'c']",
            "fm[..'a']",
            "fm['x'..]",
            "s[2..3]",
            "s[5..]",
            "writetime(s[2..3])",
            "maxwritetime(s[..2])"
        ]
    );
    let map = |entries: &[(&str, i32)]| {
        Some(types::serialize(&Value::Map(
            entries
                .iter()
                .map(|(k, v)| (Value::Text(k.to_string()), Value::Int(*v)))
                .collect(),
        )))
    };
    let set = |xs: &[i32]| {
        Some(types::serialize(&Value::Set(
            xs.iter().map(|x| Value::Int(*x)).collect(),
        )))
    };
    let times = Some(types::serialize(&Value::List(vec![
        Value::BigInt(10),
        Value::BigInt(20),
    ])));
    assert_eq!(
        r.rows,
        vec![vec![
            map(&[("b", 2), ("c", 3)]),
            map(&[("a", 1)]),
            None,
            set(&[2, 3]),
            None,
            times,
            Some(10i64.to_be_bytes().to_vec()),
        ]]
    );
    assert_eq!(
        r.metadata.columns[5].ty.stored_type(),
        Some(CqlType::List {
            element: std::sync::Arc::new(CqlType::BigInt),
            frozen: true
        })
    );
}
