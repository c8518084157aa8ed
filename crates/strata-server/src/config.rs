//! The server's settings: where it listens, its limits, TLS. Each documents
//! its default, unit, trade-off and the `cassandra.yaml` key it follows.
//!
//! Invariants:
//! 1. [`ServerConfig::validate`] refuses a setting the server could not honour
//!    (a zero limit, a frame size above the protocol's 256 MiB) with an error
//!    naming the `cassandra.yaml` key, before anything listens.
//! 2. [`ServerConfig::settings`] lists every effective setting under its
//!    `cassandra.yaml` name, for `system_views.settings`.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

/// The default CQL port (`native_transport_port`).
pub const DEFAULT_PORT: u16 = 9042;
/// The protocol's own ceiling on an envelope (section 2.5: 256 MB).
pub const PROTOCOL_MAX_FRAME_BYTES: usize = 256 << 20;

/// TLS for client connections (`client_encryption_options`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TlsConfig {
    /// PEM file holding the private key and the certificate chain
    /// (`keystore`, as Cassandra's `PEMBasedSslContextFactory` reads it).
    pub keystore: PathBuf,
    /// PEM file of the certificate authorities client certificates must chain
    /// to (`truststore`); needed when client certificates are asked for.
    pub truststore: Option<PathBuf>,
    /// `optional: true`: TLS and plaintext on one port, told apart by the
    /// first byte a client sends; `false`: TLS only.
    pub optional: bool,
    /// `require_client_auth`.
    pub client_auth: ClientAuth,
}

/// Whether client certificates are asked for (`require_client_auth`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ClientAuth {
    /// `false`: none asked.
    None,
    /// `optional`: asked for and verified when given.
    Optional,
    /// `true`: a client without a certificate the truststore vouches for is
    /// refused during the handshake.
    Required,
}

impl ClientAuth {
    pub fn name(self) -> &'static str {
        match self {
            ClientAuth::None => "false",
            ClientAuth::Optional => "optional",
            ClientAuth::Required => "true",
        }
    }
}

#[derive(Clone, Debug)]
pub struct ServerConfig {
    /// Address and port clients connect to (`rpc_address`, `native_transport_port`).
    /// Default 127.0.0.1:9042: loopback only until the operator says otherwise.
    pub listen: SocketAddr,
    /// Largest envelope (header and body) a client may send, bytes
    /// (`native_transport_max_frame_size`, default 16 MiB). A larger one is
    /// refused with an Invalid error and its bytes skipped; the connection
    /// stays. Larger frames let bigger batches in at the price of buffering
    /// them whole.
    pub max_frame_size_bytes: usize,
    /// Statements executing at once across all connections
    /// (`native_transport_max_threads`, default 128): each holds a blocking
    /// thread while it reads or writes the disk. More lets more slow
    /// statements overlap; each costs a thread stack.
    pub max_threads: usize,
    /// Open connections in total (`native_transport_max_concurrent_connections`,
    /// default unlimited). Connections past it are closed at once, as Cassandra does.
    pub max_connections: Option<usize>,
    /// Open connections from one client address
    /// (`native_transport_max_concurrent_connections_per_ip`, default unlimited).
    pub max_connections_per_ip: Option<usize>,
    /// Requests one connection may have in flight (decoded, not yet answered
    /// on the socket), default 1024. Strata's own limit (Cassandra bounds
    /// only bytes): past it the connection stops reading, or answers
    /// Overloaded to a client that asked for THROW_ON_OVERLOAD. It bounds the
    /// responses a client that stops reading can make the server hold.
    pub max_requests_in_flight_per_connection: usize,
    /// Bytes of request bodies in flight over all connections
    /// (`native_transport_max_request_data_in_flight`, default 256 MiB). Past
    /// it a connection stops reading until its own requests are answered
    /// (backpressure), or answers Overloaded with THROW_ON_OVERLOAD.
    pub max_request_data_in_flight_bytes: u64,
    /// The same per client address
    /// (`native_transport_max_request_data_in_flight_per_ip`, default 64 MiB).
    pub max_request_data_in_flight_per_ip_bytes: u64,
    /// Close a connection that neither sent nor received anything for this
    /// long (`native_transport_idle_timeout`, default off).
    pub idle_timeout: Option<Duration>,
    /// Accept protocol v3 and v4 (`native_transport_allow_older_protocols`,
    /// default true); `false` leaves v5 only.
    pub allow_older_protocols: bool,
    /// Memory for prepared statements, bytes (`prepared_statements_cache_size`,
    /// default 10 MiB); the least recently used are evicted past it, and a
    /// client executing one gets Unprepared and prepares it again.
    pub prepared_statements_cache_size_bytes: usize,
    /// TLS (`client_encryption_options`); `None`: plaintext only.
    pub tls: Option<TlsConfig>,
    /// A statement that takes longer than this is logged as slow
    /// (`slow_query_log_timeout`, default 500 ms; `None`, written 0, logs
    /// none). The log gathers them over 5 s, as Cassandra's monitoring task
    /// does, so an overloaded node writes a line per interval rather than
    /// one per request.
    pub slow_query_log_timeout: Option<Duration>,
    /// Run statements on the runtime's worker that decoded them instead of
    /// handing each to the blocking pool. Only for a database whose writes
    /// never wait for an fsync (the periodic commit log): a statement then
    /// blocks a worker only for reads the page cache misses and flush
    /// back-pressure, and the hand-off it saves is most of a short
    /// statement's cost. With batch or group sync a write waits for its
    /// fsync, and it must not hold a worker (nor serialize the writes a
    /// shared fsync would cover): those run on the blocking pool.
    pub inline_statements: bool,
}

impl Default for ServerConfig {
    fn default() -> ServerConfig {
        ServerConfig {
            listen: SocketAddr::from(([127, 0, 0, 1], DEFAULT_PORT)),
            max_frame_size_bytes: 16 << 20,
            max_threads: 128,
            max_connections: None,
            max_connections_per_ip: None,
            max_requests_in_flight_per_connection: 1024,
            max_request_data_in_flight_bytes: 256 << 20,
            max_request_data_in_flight_per_ip_bytes: 64 << 20,
            idle_timeout: None,
            allow_older_protocols: true,
            prepared_statements_cache_size_bytes: 10 << 20,
            tls: None,
            slow_query_log_timeout: Some(Duration::from_millis(500)),
            inline_statements: false,
        }
    }
}

impl ServerConfig {
    /// Invariant 1.
    pub fn validate(&self) -> Result<(), String> {
        if self.max_frame_size_bytes < 1024 || self.max_frame_size_bytes > PROTOCOL_MAX_FRAME_BYTES
        {
            return Err(format!(
                "native_transport_max_frame_size must be between 1 KiB and 256 MiB, got {} bytes",
                self.max_frame_size_bytes
            ));
        }
        if self.max_threads == 0 {
            return Err("native_transport_max_threads must be at least 1".into());
        }
        if self.max_connections == Some(0) {
            return Err("native_transport_max_concurrent_connections must be at least 1 (or -1 for no limit)".into());
        }
        if self.max_connections_per_ip == Some(0) {
            return Err("native_transport_max_concurrent_connections_per_ip must be at least 1 (or -1 for no limit)".into());
        }
        if self.max_requests_in_flight_per_connection == 0
            || self.max_requests_in_flight_per_connection > 32768
        {
            return Err(
                "max_requests_in_flight_per_connection must be between 1 and 32768 (the stream ids a connection has)"
                    .into(),
            );
        }
        if self.max_request_data_in_flight_bytes == 0
            || self.max_request_data_in_flight_per_ip_bytes == 0
        {
            return Err(
                "native_transport_max_request_data_in_flight(_per_ip) must be at least 1 byte"
                    .into(),
            );
        }
        if let Some(tls) = &self.tls {
            if tls.client_auth != ClientAuth::None && tls.truststore.is_none() {
                return Err(
                    "client_encryption_options: require_client_auth needs a truststore".into(),
                );
            }
        }
        Ok(())
    }

    /// Invariant 2.
    pub fn settings(&self) -> Vec<(String, String)> {
        let opt = |v: Option<usize>| v.map_or("-1".to_string(), |n| n.to_string());
        let mut s = vec![
            ("rpc_address".into(), self.listen.ip().to_string()),
            (
                "native_transport_port".into(),
                self.listen.port().to_string(),
            ),
            (
                "native_transport_max_frame_size".into(),
                format!("{}B", self.max_frame_size_bytes),
            ),
            (
                "native_transport_max_threads".into(),
                self.max_threads.to_string(),
            ),
            (
                "native_transport_max_concurrent_connections".into(),
                opt(self.max_connections),
            ),
            (
                "native_transport_max_concurrent_connections_per_ip".into(),
                opt(self.max_connections_per_ip),
            ),
            (
                "max_requests_in_flight_per_connection".into(),
                self.max_requests_in_flight_per_connection.to_string(),
            ),
            (
                "native_transport_max_request_data_in_flight".into(),
                format!("{}B", self.max_request_data_in_flight_bytes),
            ),
            (
                "native_transport_max_request_data_in_flight_per_ip".into(),
                format!("{}B", self.max_request_data_in_flight_per_ip_bytes),
            ),
            (
                "native_transport_idle_timeout".into(),
                format!("{}ms", self.idle_timeout.map_or(0, |d| d.as_millis())),
            ),
            (
                "native_transport_allow_older_protocols".into(),
                self.allow_older_protocols.to_string(),
            ),
            (
                "prepared_statements_cache_size".into(),
                format!("{}B", self.prepared_statements_cache_size_bytes),
            ),
            (
                "slow_query_log_timeout".into(),
                format!(
                    "{}ms",
                    self.slow_query_log_timeout.map_or(0, |d| d.as_millis())
                ),
            ),
            (
                "client_encryption_options_enabled".into(),
                self.tls.is_some().to_string(),
            ),
        ];
        if let Some(tls) = &self.tls {
            s.push((
                "client_encryption_options_optional".into(),
                tls.optional.to_string(),
            ));
            s.push((
                "client_encryption_options_require_client_auth".into(),
                tls.client_auth.name().to_string(),
            ));
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn defaults_validate_and_bad_values_name_their_key() {
        assert!(ServerConfig::default().validate().is_ok());
        let c = ServerConfig {
            max_frame_size_bytes: 512 << 20,
            ..ServerConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .contains("native_transport_max_frame_size"));
        let c = ServerConfig {
            max_threads: 0,
            ..ServerConfig::default()
        };
        assert!(c
            .validate()
            .unwrap_err()
            .contains("native_transport_max_threads"));
        let c = ServerConfig {
            tls: Some(TlsConfig {
                keystore: "k.pem".into(),
                truststore: None,
                optional: false,
                client_auth: ClientAuth::Required,
            }),
            ..ServerConfig::default()
        };
        assert!(c.validate().unwrap_err().contains("truststore"));
    }

    #[test]
    fn settings_use_cassandra_names() {
        let s = ServerConfig::default().settings();
        let get = |k: &str| s.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone());
        assert_eq!(get("native_transport_port").as_deref(), Some("9042"));
        assert_eq!(
            get("native_transport_max_frame_size").as_deref(),
            Some("16777216B")
        );
        assert_eq!(get("native_transport_idle_timeout").as_deref(), Some("0ms"));
    }
}
