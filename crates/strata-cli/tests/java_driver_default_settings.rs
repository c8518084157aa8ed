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

use java_client::{java_classpath, JavaClient, PHASE};

#[test]
fn java_driver_default_settings() {
    let classpath = java_classpath();
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let mut client = JavaClient::start(&classpath, addr, &["--restart"]);
    client.wait_for("ready for restart");

    // Restart on the same data directory and port while the session waits.
    let first = common::stop_server(server);
    let port = addr.port().to_string();
    let (server, again) = common::serve(dir.path(), &["--port", &port]);
    assert_eq!(again, addr, "the server came back on the same address");
    client.send("restarted");

    let (status, out, err) = client.finish(PHASE);
    let second = common::stop_server(server);
    assert!(
        status.success(),
        "Java driver failed ({status}):\n{out}\n{err}\nserver stderr before the restart:\n{first}\nafter:\n{second}"
    );
    for line in [
        "connected protocol V5",
        "created keyspace jd and 3 tables",
        "lightweight transactions: applied and not applied, with the current values",
        "after restart: prepared statements, LWTs, batch, metadata and paging all work",
    ] {
        assert!(out.lines().any(|l| l == line), "no {line:?} in:\n{out}");
    }
    assert!(
        out.contains("paging: 10000 rows in 31 pages (simple), 10000 rows in 31 pages (prepared"),
        "{out}"
    );
    assert!(out.contains("reconnected after"), "{out}");
    assert!(out.trim_end().ends_with("done"), "{out}");
}
