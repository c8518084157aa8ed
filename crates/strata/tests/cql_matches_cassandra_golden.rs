//! Scenario: the statement corpus recorded from a real Apache Cassandra 5.0.9
//! (tests/data/cassandra5/statements.jsonl, regenerated with the recorder in
//! tests/data/cassandra5/tools/) is replayed, in order, against Strata's CQL
//! executor; every answer must match Cassandra's: the result kind, the
//! columns (names and types), the rows, the paging, the bind metadata of
//! prepared statements, the error code, and the error message.
//!
//! Where Strata answers differently on purpose, the statement is listed in
//! tests/data/cassandra5/known_differences.json with the reason (docs/cql.md
//! lists the same differences for users). The test fails on any other
//! difference, and on a listed difference that no longer occurs (so the list
//! stays true).

mod common;

use std::collections::BTreeMap;

use common::golden::{answer, differences, executor, quote_big_numbers};
use serde_json::Value as J;
use strata::query::Session;

const CORPUS: &str = include_str!("data/cassandra5/statements.jsonl");
const KNOWN: &str = include_str!("data/cassandra5/known_differences.json");

#[test]
fn cql_answers_as_cassandra_5_does() {
    let dir = tempfile::tempdir().expect("tempdir");
    let exec = executor(dir.path());
    let mut session = Session::default();
    let known: BTreeMap<String, String> =
        serde_json::from_str::<BTreeMap<String, String>>(KNOWN).expect("known_differences.json");
    let mut unexpected = Vec::new();
    let mut known_seen = Vec::new();
    let mut total = 0;
    for (n, text) in CORPUS.lines().enumerate() {
        let line: J = serde_json::from_str(&quote_big_numbers(text)).expect("corpus line");
        total += 1;
        let got = answer(&exec, &mut session, &line);
        let diffs = differences(&line, &got);
        let key = format!("{}", n + 1);
        match (diffs.is_empty(), known.get(&key)) {
            (true, None) => {}
            (true, Some(_)) => unexpected.push(format!(
                "line {key}: listed as a known difference but now matches: remove it from known_differences.json"
            )),
            (false, Some(_)) => known_seen.push(key),
            (false, None) => unexpected.push(format!(
                "line {key}: {}\n    {}",
                line.get("cql").and_then(J::as_str).unwrap_or("<batch>"),
                diffs.join("\n    ")
            )),
        }
    }
    eprintln!(
        "{total} statements: {} differ unexpectedly, {} known differences",
        unexpected.len(),
        known_seen.len()
    );
    assert!(
        unexpected.is_empty(),
        "{} of {total} statements answer differently from Cassandra 5.0.9:\n{}",
        unexpected.len(),
        unexpected.join("\n")
    );
}
