//! The Python cassandra-driver (pinned, installed into a virtualenv under
//! target/ by tests/drivers/python_setup.sh) with default settings against
//! `strata serve`: it negotiates the protocol version from its highest down
//! (DSE v2 and v1 are refused as unsupported, then v5 is spoken), loads the
//! whole schema metadata, and runs DDL, prepared writes, reads in both
//! orders, a batch and paging (tests/drivers/python_default_settings.py).

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn python_driver_default_settings() {
    let drivers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers");
    let setup = Command::new("bash")
        .arg(drivers.join("python_setup.sh"))
        .output()
        .expect("run python_setup.sh");
    assert!(
        setup.status.success(),
        "installing the Python driver failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let python = String::from_utf8_lossy(&setup.stdout).trim().to_string();

    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let run = Command::new(&python)
        .arg(drivers.join("python_default_settings.py"))
        .arg(addr.ip().to_string())
        .arg(addr.port().to_string())
        .output()
        .expect("run the Python driver");
    let err = common::stop_server(server);
    assert!(
        run.status.success(),
        "Python driver failed:\n{}\n{}\nserver stderr:\n{err}",
        String::from_utf8_lossy(&run.stdout),
        String::from_utf8_lossy(&run.stderr)
    );
    let out = String::from_utf8_lossy(&run.stdout);
    assert!(out.contains("connected protocol_version 5"), "{out}");
    assert!(out.trim_end().ends_with("done"), "{out}");
}
