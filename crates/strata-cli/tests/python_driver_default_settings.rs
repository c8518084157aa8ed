//! The Python cassandra-driver (pinned, installed into a virtualenv under
//! target/ by tests/drivers/python_setup.sh) with default settings against
//! `strata serve`: it negotiates the protocol version from its highest down
//! (DSE v2 and v1 are refused as unsupported, then v5 is spoken), loads the
//! whole schema metadata, and runs an application's workload: schema with
//! compaction and compression options, TTL and timestamps, lightweight
//! transactions, deletes, slices in both orders, batches, 10,000 rows paged;
//! then the server restarts on the same port and the same session reconnects
//! and re-runs its prepared statements (tests/drivers/python_default_settings.py).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn python_driver_default_settings() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/python_default_settings.py");
    let mut client = Command::new(common::python());
    client.arg(&script);
    let dir = tempfile::tempdir().unwrap();
    let run = common::run_driver_with_restart(client, dir.path(), &[], &[]);
    run.assert_done("the Python driver");
    assert!(
        run.stdout.contains("connected protocol_version 5"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("prepared after restart ok"),
        "{}",
        run.stdout
    );
}
