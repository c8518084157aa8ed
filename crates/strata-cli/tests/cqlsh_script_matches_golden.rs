//! cqlsh (pinned, installed into a virtualenv under target/ by
//! tests/drivers/cqlsh_setup.sh) runs tests/drivers/cqlsh_script.cql against
//! `strata serve`: schema with compaction and compression options, DESCRIBE,
//! writes with TTL and timestamps, slices in both orders, row and range
//! deletes, lightweight transactions and a few errors. Its output, stdout and
//! stderr interleaved as a person at the terminal sees them, must equal
//! tests/drivers/cqlsh_script.expected; the only value normalised is the
//! remaining TTL, which counts down with the clock.

mod common;
mod cqlsh_run;

use cqlsh_run::{normalise, TTL_PLACEHOLDER};

#[test]
fn cqlsh_script_matches_golden() {
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let host = addr.ip().to_string();
    let port = addr.port().to_string();
    let (raw, status) = cqlsh_run::run(&["-f", "cqlsh_script.cql", &host, &port], &[]);
    let server_err = common::stop_server(server);
    cqlsh_run::assert_matches_golden(&raw, &server_err);
    // The script has errors on purpose; cqlsh reports them by its exit code.
    assert_eq!(status.code(), Some(2), "cqlsh exit status");
}

#[test]
fn normalise_keeps_a_ttl_the_write_cannot_have() {
    let table = |v: &str| format!("\n ttl(v)\n--------\n {v}\n\n(1 rows)\n");
    assert!(normalise(&table("86399")).contains(TTL_PLACEHOLDER));
    assert!(normalise(&table("86400")).contains(TTL_PLACEHOLDER));
    for kept in ["86401", "null", "3600", "80000"] {
        assert_eq!(normalise(&table(kept)), table(kept), "{kept}");
    }
}
