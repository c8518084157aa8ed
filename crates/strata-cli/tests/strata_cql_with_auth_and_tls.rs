//! `strata cql HOST PORT` against a server with PasswordAuthenticator and
//! required TLS: with `--ssl`, the test CA and the default superuser's
//! credentials it runs statements; without credentials, without `--ssl`,
//! with a wrong password, or trusting another CA it fails with one
//! connection error line and runs nothing.

mod common;

use std::process::{Command, Output};

fn shell(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("cql")
        .args(args)
        .env_remove("SSL_CERTFILE")
        .output()
        .expect("run strata cql")
}

fn refused(out: &Output, says: &str) {
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{}", common::text(out));
    assert!(out.stdout.is_empty(), "{}", common::text(out));
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.contains("Connection error") && err.contains(says),
        "{err}"
    );
}

#[test]
fn strata_cql_with_auth_and_tls() {
    let secure = common::secure_config();
    let other = common::secure_config();
    let config = secure.config.to_str().unwrap();
    let ca = secure.ca.to_str().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let (server, addr) = common::serve(dir.path(), &["--port", "0", "--config", config]);
    let port = addr.port().to_string();
    let creds = ["-u", "cassandra", "-p", "cassandra"];
    let tls = ["--ssl", "--certfile", ca];

    // The certificate names localhost and 127.0.0.1: both verify.
    for host in ["127.0.0.1", "localhost"] {
        let mut args = vec![host, port.as_str()];
        args.extend(creds);
        args.extend(tls);
        args.extend([
            "-e",
            "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}; \
             CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY, v text); \
             INSERT INTO ks.t (k, v) VALUES (1, 'secret'); SELECT * FROM ks.t",
        ]);
        let ok = shell(&args);
        if host == "127.0.0.1" {
            assert!(ok.status.success(), "{}", common::text(&ok));
            assert!(
                String::from_utf8_lossy(&ok.stdout).contains(" 1 | secret\n"),
                "{}",
                common::text(&ok)
            );
        } else {
            // The keyspace exists now: the first statement fails as
            // Cassandra's would, which shows the connection worked.
            assert!(
                String::from_utf8_lossy(&ok.stderr).contains("AlreadyExists"),
                "{}",
                common::text(&ok)
            );
        }
    }

    let select = ["-e", "SELECT * FROM ks.t"];
    let mut no_creds = vec!["127.0.0.1", port.as_str()];
    no_creds.extend(tls);
    no_creds.extend(select);
    refused(&shell(&no_creds), "requires authentication");

    let mut wrong = vec!["127.0.0.1", port.as_str(), "-u", "cassandra", "-p", "nope"];
    wrong.extend(tls);
    wrong.extend(select);
    let out = shell(&wrong);
    assert_eq!(out.status.code(), Some(1), "{}", common::text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr)
            .contains("Provided username cassandra and/or password are incorrect"),
        "{}",
        common::text(&out)
    );

    let mut plain = vec!["127.0.0.1", port.as_str()];
    plain.extend(creds);
    plain.extend(select);
    refused(&shell(&plain), "");

    let mut untrusted = vec!["127.0.0.1", port.as_str()];
    untrusted.extend(creds);
    untrusted.extend(["--ssl", "--certfile", other.ca.to_str().unwrap()]);
    untrusted.extend(select);
    refused(&shell(&untrusted), "certificate");

    common::stop_server(server);
}
