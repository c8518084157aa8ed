//! The DataStax/Apache Java driver 4.x (java-driver-core 4.18.1, built by
//! tests/drivers/java_setup.sh) against a `strata serve` with
//! `PasswordAuthenticator` and required TLS (`common::secure_config`): with
//! the default superuser's credentials and an SSL context trusting the test
//! CA (host name validation on), the whole workload of
//! java_driver_default_settings.rs passes, the restart on the same port
//! included (the session reconnects over TLS and authenticates again). Without
//! credentials or with a wrong password, connecting fails at once with an
//! `AuthenticationException` (inside the driver's `AllNodesFailedException`)
//! carrying the server's message; without TLS the server closes the
//! connection, and trusting another CA the handshake fails; each time the
//! client exits instead of hanging.

mod common;
mod java_client;

use java_client::{java_classpath, JavaClient};
use std::time::Duration;

/// How long a refused connection may take to be reported.
const REFUSAL: Duration = Duration::from_secs(60);

#[test]
fn java_driver_with_auth_and_tls() {
    let classpath = java_classpath();
    let secure = common::secure_config();
    let config = secure.config.to_str().expect("config path");
    let ca = secure.ca.to_str().expect("CA path");
    // A CA that signed nothing the server has.
    let other = common::secure_config();
    let other_ca = other.ca.to_str().expect("CA path");
    let dir = tempfile::tempdir().expect("tempdir");
    let (server, addr) = common::serve(dir.path(), &["--port", "0", "--config", config]);

    // Refused: each run must fail, for the reason given, and exit (the
    // driver's own exception is on its stdout).
    for (what, args, kind, cause) in [
        (
            "without credentials",
            vec!["--ca", ca],
            "auth",
            "AuthenticationException",
        ),
        (
            "with a wrong password",
            vec!["--user", "cassandra", "--password", "wrong", "--ca", ca],
            "auth",
            "AuthenticationException",
        ),
        (
            "without TLS",
            vec!["--user", "cassandra", "--password", "cassandra"],
            "tls",
            "ClosedConnectionException",
        ),
        (
            "trusting another CA",
            vec![
                "--user",
                "cassandra",
                "--password",
                "cassandra",
                "--ca",
                other_ca,
            ],
            "tls",
            "SSLHandshakeException",
        ),
    ] {
        let mut args = args;
        args.extend(["--expect-failure", kind]);
        let (status, out, err) = JavaClient::start(&classpath, addr, &args).finish(REFUSAL);
        assert!(
            status.success(),
            "connecting {what} did not fail as expected ({status}):\n{out}\n{err}"
        );
        assert!(
            out.lines()
                .any(|l| l == format!("failed as expected: {kind}")),
            "{what}:\n{out}"
        );
        assert!(out.contains(cause), "{what}: no {cause} in:\n{out}");
    }

    // Accepted: the whole workload, over TLS and authenticated.
    let client = JavaClient::start(
        &classpath,
        addr,
        &[
            "--user",
            "cassandra",
            "--password",
            "cassandra",
            "--ca",
            ca,
            "--restart",
        ],
    );
    java_client::restart_and_finish(client, server, dir.path(), addr, &["--config", config]);
}
