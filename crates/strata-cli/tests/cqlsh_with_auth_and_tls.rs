//! cqlsh against `strata serve` with PasswordAuthenticator and required TLS:
//! with `--ssl`, the test CA as its certificate file and the default
//! superuser's credentials, the golden script gives the golden output;
//! without credentials, or without `--ssl`, cqlsh reports a connection error
//! and runs nothing.

mod common;
mod cqlsh_run;

#[test]
fn cqlsh_with_auth_and_tls() {
    let secure = common::secure_config();
    let config = secure.config.to_str().expect("utf-8 path");
    let ca = secure.ca.to_str().expect("utf-8 path");
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = common::serve(dir.path(), &["--port", "0", "--config", config]);
    let host = addr.ip().to_string();
    let port = addr.port().to_string();
    let tls_env = [("SSL_CERTFILE", ca), ("SSL_VALIDATE", "true")];

    let (raw, status) = cqlsh_run::run(
        &[
            "--ssl",
            "-u",
            "cassandra",
            "-p",
            "cassandra",
            "-f",
            "cqlsh_script.cql",
            &host,
            &port,
        ],
        &tls_env,
    );
    // cqlsh's own caution about -p comes first; the rest is the golden run.
    let caution = "\nWarning: Using a password on the command line interface can be insecure.\n\
                   Recommendation: use the credentials file to securely provide the password.\n\n";
    let raw = raw
        .strip_prefix(caution)
        .unwrap_or_else(|| panic!("cqlsh's caution about -p missing:\n{raw}"));
    cqlsh_run::assert_matches_golden(raw, "");
    assert_eq!(status.code(), Some(2), "cqlsh exit status");

    let (raw, status) = cqlsh_run::run(
        &["--ssl", "-e", "SELECT * FROM system.local", &host, &port],
        &tls_env,
    );
    assert!(!status.success(), "{raw}");
    assert!(
        raw.contains("Connection error") && raw.contains("requires authentication"),
        "{raw}"
    );

    let (raw, status) = cqlsh_run::run(
        &[
            "-u",
            "cassandra",
            "-p",
            "cassandra",
            "-e",
            "SELECT * FROM system.local",
            &host,
            &port,
        ],
        &[],
    );
    assert!(!status.success(), "{raw}");
    assert!(raw.contains("Connection error"), "{raw}");
    common::stop_server(server);
}
