//! The Rust `scylla` driver against `strata serve` with PasswordAuthenticator
//! and required TLS: the default-settings workload (restart included) passes
//! with the default superuser's credentials over TLS verified against the
//! test CA (the driver names the server by its IP address, which the
//! certificate carries); without credentials the session is refused with an
//! authentication error, and without TLS it fails to connect on what the
//! server answered.

mod common;
mod scylla_workload;

use std::sync::Arc;

use rustls::pki_types::pem::PemObject;
use rustls::pki_types::CertificateDer;
use scylla::client::session_builder::SessionBuilder;

/// A rustls client trusting only the test CA, with ring as its provider (the
/// driver's rustls also carries aws-lc-rs, so the default is ambiguous).
fn tls(ca: &std::path::Path) -> Arc<rustls::ClientConfig> {
    let mut roots = rustls::RootCertStore::empty();
    for cert in CertificateDer::pem_file_iter(ca).expect("ca.pem") {
        roots
            .add(cert.expect("CA certificate"))
            .expect("trust the CA");
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .expect("protocol versions")
    .with_root_certificates(roots)
    .with_no_client_auth();
    Arc::new(config)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scylla_driver_with_auth_and_tls() {
    let secure = common::secure_config();
    let config = secure.config.to_str().expect("utf-8 path").to_string();
    let tls = tls(&secure.ca);
    let dir = tempfile::tempdir().unwrap();

    {
        let tls = tls.clone();
        scylla_workload::run(dir.path(), &["--config", &config], move |addr| {
            SessionBuilder::new()
                .known_node(addr)
                .user("cassandra", "cassandra")
                .tls_context(Some(tls.clone()))
        })
        .await;
    }

    let (server, addr) = common::serve(dir.path(), &["--port", "0", "--config", &config]);
    let no_credentials = SessionBuilder::new()
        .known_node(addr.to_string())
        .tls_context(Some(tls.clone()))
        .build()
        .await
        .expect_err("a session without credentials is refused");
    let text = no_credentials.to_string();
    assert!(text.to_lowercase().contains("authent"), "{text}");

    let plaintext = SessionBuilder::new()
        .known_node(addr.to_string())
        .user("cassandra", "cassandra")
        .build()
        .await
        .expect_err("a plaintext session is refused");
    // Refused by what the server answered, not by the driver giving up.
    let plaintext = plaintext.to_string();
    assert!(
        !plaintext.to_lowercase().contains("timed out"),
        "{plaintext}"
    );
    eprintln!("without credentials: {text}\nwithout TLS: {plaintext}");
    common::stop_server(server);
}
