//! The DataStax/Apache Java driver 4.x (java-driver-core 4.18.1, built with
//! Maven into target/ by tests/drivers/java_setup.sh) with default settings
//! against `strata serve`: it negotiates protocol v5, loads the schema
//! metadata (tables with compaction and compression options, as the driver
//! parses and describes them), runs prepared writes with TTL and timestamps,
//! lightweight transactions and their `[applied]` rows, row, range and
//! partition deletes, slices in both orders, 10,000 rows paged (simple and
//! prepared statements, the async pages and the paging state) and logged and
//! unlogged batches (tests/drivers/java). Then the server restarts on the same
//! data directory and port while the client waits; the same session
//! reconnects by itself, re-runs its prepared statements (the new server has
//! none, and the driver prepares them again without the caller seeing it) and
//! reads what was written before the restart.

mod common;
mod java_client;

use java_client::{java_classpath, JavaClient};

#[test]
fn java_driver_default_settings() {
    let classpath = java_classpath();
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let client = JavaClient::start(&classpath, addr, &["--restart"]);
    // Restart on the same data directory and port while the session waits.
    let out = java_client::restart_and_finish(client, server, dir.path(), addr, &[]);
    assert!(
        out.contains("paging: 10000 rows in 31 pages (simple), 10000 rows in 31 pages (prepared"),
        "{out}"
    );
    assert!(out.contains("reconnected after"), "{out}");
}
