//! TLS for client connections with rustls: the acceptor built from PEM files,
//! the first-byte sniffing that lets TLS and plaintext share a port
//! (`client_encryption_options.optional`), and the stream type connections
//! read and write either way.
//!
//! Mapping from Cassandra's `client_encryption_options`: `keystore` is a PEM
//! file holding the private key and the certificate chain, as Cassandra's
//! `PEMBasedSslContextFactory` reads it; `truststore` a PEM file of CA
//! certificates client certificates must chain to. JKS and PKCS12 stores and
//! encrypted private keys (`keystore_password`) are refused with an error
//! saying so; `protocol` and `cipher_suites` are rustls's safe defaults
//! (TLS 1.2 and 1.3, forward-secret AEAD suites only).
//!
//! Invariants:
//! 1. A bad keystore or truststore is an error at start, naming the file, never
//!    a server that accepts connections and then fails every handshake.
//! 2. In optional mode a connection is TLS exactly when its first byte is
//!    0x16 (a TLS handshake record); no CQL version byte is 0x16 (22), so the
//!    two never collide, as with Cassandra's `OptionalSslHandler`.

use crate::config::{ClientAuth, TlsConfig};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer};
use std::io;
use std::path::Path;
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::TlsAcceptor;

/// The first byte of a TLS handshake record.
pub const TLS_HANDSHAKE_BYTE: u8 = 0x16;

fn provider() -> Arc<rustls::crypto::CryptoProvider> {
    Arc::new(rustls::crypto::ring::default_provider())
}

fn read_certs(path: &Path, what: &str) -> Result<Vec<CertificateDer<'static>>, String> {
    let iter = CertificateDer::pem_file_iter(path).map_err(|e| {
        format!(
            "client_encryption_options: cannot read {what} {}: {e}",
            path.display()
        )
    })?;
    let certs: Vec<_> = iter
        .collect::<Result<_, _>>()
        .map_err(|e| format!("client_encryption_options: {what} {}: {e}", path.display()))?;
    if certs.is_empty() {
        return Err(format!(
            "client_encryption_options: {what} {} holds no PEM certificate (JKS and PKCS12 stores are not supported: convert them to PEM)",
            path.display()
        ));
    }
    Ok(certs)
}

/// Builds the acceptor (invariant 1).
pub fn acceptor(cfg: &TlsConfig) -> Result<TlsAcceptor, String> {
    let certs = read_certs(&cfg.keystore, "keystore")?;
    let key = PrivateKeyDer::from_pem_file(&cfg.keystore).map_err(|e| {
        format!(
            "client_encryption_options: keystore {} holds no unencrypted private key \
             (PKCS#8, PKCS#1 or SEC1 PEM; encrypted keys and keystore_password are not supported): {e}",
            cfg.keystore.display()
        )
    })?;
    let builder = rustls::ServerConfig::builder_with_provider(provider())
        .with_safe_default_protocol_versions()
        .map_err(|e| format!("client_encryption_options: {e}"))?;
    let builder = match (cfg.client_auth, &cfg.truststore) {
        (ClientAuth::None, _) => builder.with_no_client_auth(),
        (_, None) => {
            return Err("client_encryption_options: require_client_auth needs a truststore".into())
        }
        (auth, Some(path)) => {
            let mut roots = rustls::RootCertStore::empty();
            for c in read_certs(path, "truststore")? {
                roots.add(c).map_err(|e| {
                    format!(
                        "client_encryption_options: truststore {}: {e}",
                        path.display()
                    )
                })?;
            }
            let mut v = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots),
                provider(),
            );
            if auth == ClientAuth::Optional {
                v = v.allow_unauthenticated();
            }
            let verifier = v
                .build()
                .map_err(|e| format!("client_encryption_options: truststore: {e}"))?;
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder.with_single_cert(certs, key).map_err(|e| {
        format!(
            "client_encryption_options: keystore {}: {e}",
            cfg.keystore.display()
        )
    })?;
    Ok(TlsAcceptor::from(Arc::new(config)))
}

/// A client connection, plaintext or TLS.
pub enum Stream {
    Plain(TcpStream),
    Tls(Box<tokio_rustls::server::TlsStream<TcpStream>>),
}

impl Stream {
    /// `(protocol, cipher suite)` of a TLS connection, as
    /// `system_views.clients` shows them (`TLSv1.3`, `TLS13_AES_256_GCM_SHA384`).
    pub fn tls_info(&self) -> Option<(String, String)> {
        match self {
            Stream::Plain(_) => None,
            Stream::Tls(s) => {
                let (_, conn) = s.get_ref();
                let protocol = match conn.protocol_version() {
                    Some(rustls::ProtocolVersion::TLSv1_3) => "TLSv1.3".to_string(),
                    Some(rustls::ProtocolVersion::TLSv1_2) => "TLSv1.2".to_string(),
                    Some(other) => format!("{other:?}"),
                    None => String::new(),
                };
                let suite = conn
                    .negotiated_cipher_suite()
                    .and_then(|s| s.suite().as_str())
                    .unwrap_or("")
                    .to_string();
                Some((protocol, suite))
            }
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

/// Whether to run the TLS handshake on `sock` (invariant 2): always when TLS
/// is required, on a first byte of 0x16 when optional. `Ok(None)`: the peer
/// closed before sending anything.
pub async fn wants_tls(sock: &TcpStream, optional: bool) -> io::Result<Option<bool>> {
    if !optional {
        return Ok(Some(true));
    }
    let mut first = [0u8; 1];
    let n = sock.peek(&mut first).await?;
    if n == 0 {
        return Ok(None);
    }
    Ok(Some(first[0] == TLS_HANDSHAKE_BYTE))
}
