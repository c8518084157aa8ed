//! The Python cassandra-driver against `strata serve` with
//! PasswordAuthenticator and required TLS: the whole workload of the
//! default-settings test (restart included) passes with the default
//! superuser's credentials over TLS verified against the test CA; without
//! credentials the driver is refused with an authentication error, and
//! without TLS it is refused at connect; both fail at once, not by timeout.

mod common;

use std::path::Path;
use std::process::Command;

#[test]
fn python_driver_with_auth_and_tls() {
    let script =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/python_default_settings.py");
    let python = common::python();
    let secure = common::secure_config();
    let config = secure.config.to_str().expect("utf-8 path");
    let ca = secure.ca.to_str().expect("utf-8 path");
    let dir = tempfile::tempdir().unwrap();

    let mut client = Command::new(&python);
    client.arg(&script);
    let creds = ["--user", "cassandra", "--password", "cassandra", "--ca", ca];
    let run = common::run_driver_with_restart(client, dir.path(), &["--config", config], &creds);
    run.assert_done("the Python driver with credentials and TLS");
    assert!(
        run.stdout.contains("prepared after restart ok"),
        "{}",
        run.stdout
    );

    // TLS but no credentials: refused by the authenticator.
    let mut client = Command::new(&python);
    client.arg(&script);
    let run = common::run_driver_with_restart(
        client,
        dir.path(),
        &["--config", config],
        &["--ca", ca, "--expect-failure", "auth"],
    );
    run.assert_done("the Python driver without credentials");
    assert!(run.stdout.contains("refused:"), "{}", run.stdout);

    // Credentials but plaintext: the server speaks only TLS.
    let mut client = Command::new(&python);
    client.arg(&script);
    let run = common::run_driver_with_restart(
        client,
        dir.path(),
        &["--config", config],
        &[
            "--user",
            "cassandra",
            "--password",
            "cassandra",
            "--expect-failure",
            "tls",
        ],
    );
    run.assert_done("the Python driver without TLS");
    assert!(run.stdout.contains("refused:"), "{}", run.stdout);
}
