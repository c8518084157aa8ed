//! The Rust `scylla` driver (pinned in Cargo.toml) with default session
//! settings against `strata serve`: schema with compaction and compression
//! options (and the driver's own metadata load seeing it), prepared writes with
//! TTL and timestamps, lightweight transactions and their `[applied]` answers,
//! row and range deletes, slices in both orders, 10,000 rows paged, then a
//! restart of the server on the same data directory and port, after which the
//! same session reconnects and re-runs its prepared statements: the new server
//! has no prepared statements, so each EXECUTE is answered Unprepared and the
//! driver prepares again before the call returns.

mod common;
mod scylla_workload;

use scylla::client::session_builder::SessionBuilder;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scylla_driver_default_settings() {
    let dir = tempfile::tempdir().unwrap();
    scylla_workload::run(dir.path(), &[], |addr| {
        SessionBuilder::new().known_node(addr)
    })
    .await;
}
