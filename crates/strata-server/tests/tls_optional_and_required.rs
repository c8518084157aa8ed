//! client_encryption_options with rustls, certificates generated here:
//! - optional: TLS and plaintext clients on one port (told apart by the first
//!   byte), both speak CQL, and system_views.clients' figures see the TLS one;
//! - required: a plaintext client is cut off, a TLS one served;
//! - require_client_auth: a client without a certificate signed by the
//!   truststore's CA fails the handshake, one with it is served;
//! - a keystore that holds no key is refused at start, naming the file.

mod common;

use common::{Client, TestServer};
use rcgen::{BasicConstraints, CertificateParams, IsCa, KeyPair};
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName};
use std::sync::Arc;
use strata_server::frame::Opcode;
use strata_server::{ClientAuth, ServerConfig, TlsConfig};
use tokio::net::TcpStream;

struct Pki {
    dir: tempfile::TempDir,
    ca_der: CertificateDer<'static>,
    client_chain: Vec<CertificateDer<'static>>,
    client_key: PrivateKeyDer<'static>,
}

/// A CA, a server certificate for localhost signed by it (key and chain in
/// one PEM file, as Cassandra's PEM keystore holds them), and a client
/// certificate signed by it.
fn pki() -> Pki {
    let dir = tempfile::tempdir().unwrap();
    let ca_key = KeyPair::generate().unwrap();
    let mut ca_params = CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = IsCa::Ca(BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = KeyPair::generate().unwrap();
    let server = CertificateParams::new(vec!["localhost".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    std::fs::write(
        dir.path().join("keystore.pem"),
        format!("{}{}{}", server_key.serialize_pem(), server.pem(), ca.pem()),
    )
    .unwrap();
    std::fs::write(dir.path().join("truststore.pem"), ca.pem()).unwrap();
    std::fs::write(dir.path().join("cert-only.pem"), server.pem()).unwrap();
    let client_key = KeyPair::generate().unwrap();
    let client = CertificateParams::new(vec!["client".to_string()])
        .unwrap()
        .signed_by(&client_key, &ca, &ca_key)
        .unwrap();
    Pki {
        ca_der: ca.der().clone(),
        client_chain: vec![client.der().clone()],
        client_key: PrivateKeyDer::try_from(client_key.serialize_der()).unwrap(),
        dir,
    }
}

fn tls_config(pki: &Pki, optional: bool, client_auth: ClientAuth) -> ServerConfig {
    ServerConfig {
        tls: Some(TlsConfig {
            keystore: pki.dir.path().join("keystore.pem"),
            truststore: Some(pki.dir.path().join("truststore.pem")),
            optional,
            client_auth,
        }),
        ..ServerConfig::default()
    }
}

async fn tls_client(
    addr: std::net::SocketAddr,
    pki: &Pki,
    with_cert: bool,
) -> std::io::Result<Client> {
    let mut roots = rustls::RootCertStore::empty();
    roots.add(pki.ca_der.clone()).unwrap();
    let builder = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .unwrap()
    .with_root_certificates(roots);
    let config = if with_cert {
        builder
            .with_client_auth_cert(pki.client_chain.clone(), pki.client_key.clone_key())
            .unwrap()
    } else {
        builder.with_no_client_auth()
    };
    let connector = tokio_rustls::TlsConnector::from(Arc::new(config));
    let sock = TcpStream::connect(addr).await?;
    let tls = connector
        .connect(ServerName::try_from("localhost").unwrap(), sock)
        .await?;
    Ok(Client::over(Box::new(tls), 4))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_optional_and_required() {
    let pki = pki();

    // Optional: both kinds on one port.
    let server = TestServer::start(tls_config(&pki, true, ClientAuth::None)).await;
    let mut secure = tls_client(server.addr, &pki, false).await.unwrap();
    assert!(secure.startup(&[]).await.is(Opcode::Ready));
    assert!(secure
        .request(Opcode::Options, &[])
        .await
        .is(Opcode::Supported));
    let mut plain = Client::connect(server.addr, 4).await;
    assert!(plain
        .startup(&[("COMPRESSION", "lz4")])
        .await
        .is(Opcode::Ready));
    assert!(plain
        .request(Opcode::Options, &[])
        .await
        .is(Opcode::Supported));
    let clients = strata::query::ServerState::clients(&*server_state(&server));
    let tls: Vec<_> = clients.iter().filter(|c| c.ssl_enabled).collect();
    assert_eq!(tls.len(), 1, "{clients:?}");
    assert!(tls[0]
        .ssl_protocol
        .as_deref()
        .unwrap_or("")
        .starts_with("TLSv1."));
    assert!(!tls[0].ssl_cipher_suite.as_deref().unwrap_or("").is_empty());
    server.stop().await;

    // Required: plaintext is cut off.
    let server = TestServer::start(tls_config(&pki, false, ClientAuth::None)).await;
    let mut plain = Client::connect(server.addr, 4).await;
    let _ = plain
        .write_raw(&Client::envelope(4, 0, 0, Opcode::Options as u8, &[]))
        .await;
    assert!(plain.recv().await.is_none(), "no CQL answer without TLS");
    let mut secure = tls_client(server.addr, &pki, false).await.unwrap();
    assert!(secure.startup(&[]).await.is(Opcode::Ready));
    server.stop().await;

    // Client certificates required.
    let server = TestServer::start(tls_config(&pki, false, ClientAuth::Required)).await;
    let refused = match tls_client(server.addr, &pki, false).await {
        // TLS 1.3: the client learns of the refusal on its first read.
        Ok(mut c) => {
            c.send(0, Opcode::Options, &[]).await;
            c.recv().await.is_none()
        }
        Err(_) => true,
    };
    assert!(refused, "a client without a certificate is refused");
    let mut with_cert = tls_client(server.addr, &pki, true).await.unwrap();
    assert!(with_cert.startup(&[]).await.is(Opcode::Ready));
    common::eventually("the refused handshake is counted", || {
        server.stats.snapshot().tls_handshake_failures >= 1
    })
    .await;
    server.stop().await;

    // A keystore without a key: refused at start.
    let bad = ServerConfig {
        tls: Some(TlsConfig {
            keystore: pki.dir.path().join("cert-only.pem"),
            truststore: None,
            optional: false,
            client_auth: ClientAuth::None,
        }),
        listen: "127.0.0.1:0".parse().unwrap(),
        ..ServerConfig::default()
    };
    let dir = tempfile::tempdir().unwrap();
    let db = strata::db::Database::open(
        dir.path(),
        strata::db::DbOptions::new(strata::clock::SimClock::fixed()),
    )
    .unwrap();
    let executor = Arc::new(
        strata::query::Executor::new(
            Arc::new(db),
            common::node_info(),
            strata::query::Authenticator::AllowAll,
        )
        .unwrap(),
    );
    let err = match strata_server::Server::bind(bad, executor).await {
        Ok(_) => panic!("a keystore without a key must be refused"),
        Err(e) => e.to_string(),
    };
    assert!(
        err.contains("cert-only.pem") && err.contains("private key"),
        "{err}"
    );
}

/// The executor's view of the server (what `system_views.clients` reads).
fn server_state(server: &TestServer) -> Arc<dyn strata::query::ServerState> {
    server.server_state()
}
