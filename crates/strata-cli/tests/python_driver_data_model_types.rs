//! The Python cassandra-driver (pinned, in a virtualenv under target/, see
//! tests/drivers/python_setup.sh) against `strata serve` with frozen
//! collections (nested), non-frozen collections and a UDT changed element by
//! element, tuples, a frozen user-defined type registered as a
//! Python class, time, duration, vector<float, 3> and counters (prepared
//! increments and a COUNTER batch): prepared binds and
//! literals, clustering order and slices on a frozen list, UDT field
//! selection; the server then restarts on the same port and every read must
//! answer the same (tests/drivers/python_data_model.py).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn python_driver_reads_and_writes_every_composite_type() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/python_data_model.py");
    let mut client = Command::new(common::python());
    client.arg(&script);
    let dir = tempfile::tempdir().unwrap();
    let run = common::run_driver_with_restart(client, dir.path(), &[], &[]);
    run.assert_done("the Python driver");
    assert!(
        run.stdout.contains("before restart reads ok"),
        "{}",
        run.stdout
    );
    assert!(
        run.stdout.contains("after restart reads ok"),
        "{}",
        run.stdout
    );
}
