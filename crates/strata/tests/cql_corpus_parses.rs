//! A corpus of real-world CQL (Cassandra's documentation and cqlsh's test
//! script, `tests/data/cql_corpus.cql`) splits into its statements and every
//! statement parses; each prints as CQL that parses to the same text again.

use strata::cql::{parse_statement, split_statements};

#[test]
fn cql_corpus_parses() {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/data/cql_corpus.cql");
    let script = std::fs::read_to_string(path).expect("read the corpus");
    let ranges = split_statements(&script).expect("split the corpus");
    assert!(ranges.len() >= 150, "only {} statements", ranges.len());
    let mut failures = Vec::new();
    for &(start, end) in &ranges {
        let text = &script[start..end];
        match parse_statement(text) {
            Ok(parsed) => {
                let printed = parsed.statement.to_string();
                let again = parse_statement(&printed)
                    .unwrap_or_else(|e| panic!("{text}\nprinted as {printed}\n{e}"));
                assert_eq!(again.statement.to_string(), printed, "{text}");
                assert_eq!(again.markers.len(), parsed.markers.len(), "{text}");
            }
            Err(e) => failures.push(format!("{text}\n  -> {e}")),
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}
