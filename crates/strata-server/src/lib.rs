//! Strata's CQL native protocol server: the wire half of `strata serve`.
//!
//! Owns protocol versions (v3, v4, v5), compression (v4 LZ4/Snappy bodies, v5
//! checksummed and LZ4 segments), stream ids and concurrent requests per
//! connection, the prepared-statement cache, the SASL exchange, TLS, limits
//! and events. What a statement means is the library's [`Executor`]; nothing
//! here parses CQL or touches the database (DESIGN.md 1).
//!
//! Module map:
//! - [`wire`]: the spec's notations, bounded reads.
//! - [`frame`]: envelope headers, opcodes, v4 body compression.
//! - [`segment`]: v5 segments (CRC24 header, CRC32 payload, LZ4).
//! - [`request`] / [`response`]: message bodies.
//! - `conn`: one connection's reader and writer tasks.
//! - [`limits`], [`prepared`], [`tls`], [`config`].
//! - [`client`]: a blocking v4 client (the shell's `strata cql HOST`).
//!
//! Threads: a tokio runtime runs the accept loop and two tasks per connection
//! (a reader that decodes and dispatches, a writer that encodes and flushes);
//! executor calls run on the runtime's blocking pool, at most
//! `native_transport_max_threads` at once.
//!
//! Invariants:
//! 1. No input panics the server or grows its memory without bound: every
//!    length from the network is bounded before it allocates (frames by
//!    `native_transport_max_frame_size`, segments by 17 bits), a connection
//!    holds at most `max_requests_in_flight_per_connection` requests between
//!    decoding and writing the answer, and request bytes in flight are bounded
//!    globally and per address (a connection past them stops reading).
//! 2. A request's in-flight permit and bytes are released only once its
//!    answer is written to the socket, so a client that stops reading stops
//!    its own connection's reads, not anyone else's.
//! 3. Responses carry the stream id of their request; events carry -1.
//! 4. [`Server::run`] returns only after every connection task ended and no
//!    statement is executing, so the caller may flush and close the database.

pub mod client;
pub mod config;
mod conn;
pub mod frame;
pub mod limits;
pub mod prepared;
pub mod request;
pub mod response;
pub mod segment;
pub mod slow;
pub mod tls;
pub mod wire;

pub use config::{ClientAuth, ServerConfig, TlsConfig};

use parking_lot::Mutex;
use std::collections::HashMap;
use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;
use strata::query::{ClientInfo, Executor, ServerState};
use tokio::net::TcpListener;
use tokio::sync::{broadcast, watch, Semaphore};

/// The CQL version SUPPORTED advertises: Cassandra 5.0's
/// (`QueryProcessor.CQL_VERSION`), since the executor follows its grammar.
pub const CQL_VERSION: &str = "3.4.7";
/// Protocol versions spoken, lowest first.
pub const SUPPORTED_VERSIONS: [u8; 3] = [3, 4, 5];
/// The version Cassandra 5 prefers (`ProtocolVersion.CURRENT`), named when
/// older versions are refused.
pub const CURRENT_VERSION: u8 = 5;

/// `4/v4`, as `ProtocolVersion.toString` writes a version.
pub fn version_name(v: u8) -> String {
    format!("{v}/v{v}")
}

/// Counters of what the server did, for tests and the operator.
#[derive(Debug, Default)]
pub struct Stats {
    pub connections_accepted: AtomicU64,
    /// Closed at once by the connection limits.
    pub connections_refused: AtomicU64,
    pub requests: AtomicU64,
    /// Statements run in their connection's reader (short single-partition
    /// EXECUTEs, `conn` invariant 4) rather than as tasks of their own.
    pub requests_in_reader: AtomicU64,
    /// Decoded and not yet answered on the socket.
    pub requests_in_flight: AtomicU64,
    /// Times a connection stopped reading for want of in-flight room.
    pub reads_paused: AtomicU64,
    /// Requests answered Overloaded (THROW_ON_OVERLOAD).
    pub overloaded: AtomicU64,
    /// Envelopes refused for their size.
    pub frames_too_big: AtomicU64,
    /// Protocol errors answered (bad bytes, wrong messages).
    pub protocol_errors: AtomicU64,
    /// Connections closed on a fatal protocol error.
    pub fatal_closes: AtomicU64,
    pub accept_errors: AtomicU64,
    pub tls_handshake_failures: AtomicU64,
    /// Events dropped for a registered connection that did not keep up.
    pub events_dropped: AtomicU64,
}

/// A snapshot of [`Stats`] and the live gauges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StatsSnapshot {
    pub connections_open: usize,
    pub connections_accepted: u64,
    pub connections_refused: u64,
    pub requests: u64,
    pub requests_in_reader: u64,
    pub requests_in_flight: u64,
    pub request_bytes_in_flight: u64,
    pub reads_paused: u64,
    pub overloaded: u64,
    pub frames_too_big: u64,
    pub protocol_errors: u64,
    pub fatal_closes: u64,
    pub accept_errors: u64,
    pub tls_handshake_failures: u64,
    pub events_dropped: u64,
    pub statements_executing: usize,
}

/// One connection as `system_views.clients` shows it.
pub(crate) struct ClientEntry {
    pub peer: SocketAddr,
    pub request_count: AtomicU64,
    pub protocol_version: AtomicU8,
    pub ssl: Option<(String, String)>,
    pub authenticated: AtomicBool,
    pub meta: Mutex<ClientMeta>,
}

#[derive(Default)]
pub(crate) struct ClientMeta {
    pub stage: &'static str,
    pub username: Option<String>,
    pub driver_name: Option<String>,
    pub driver_version: Option<String>,
    pub keyspace: Option<String>,
}

/// An event for REGISTERed connections.
#[derive(Debug)]
pub(crate) struct Event {
    pub ty: request::EventType,
    /// The EVENT body (type and fields), the same for every version v3+.
    pub body: Vec<u8>,
}

/// What every connection shares.
pub(crate) struct Shared {
    pub executor: Arc<Executor>,
    pub config: ServerConfig,
    pub prepared: prepared::PreparedCache,
    pub events: broadcast::Sender<Arc<Event>>,
    pub limits: Arc<limits::Limits>,
    pub exec_slots: Arc<Semaphore>,
    pub stats: Stats,
    pub slow: slow::SlowLog,
    pub clients: Mutex<HashMap<u64, Arc<ClientEntry>>>,
    pub next_client_id: AtomicU64,
    pub tls: Option<tokio_rustls::TlsAcceptor>,
    pub supported: Vec<(String, Vec<String>)>,
    pub shutdown: watch::Receiver<bool>,
}

impl Shared {
    fn snapshot(&self) -> StatsSnapshot {
        let s = &self.stats;
        let l = |a: &AtomicU64| a.load(Ordering::Relaxed);
        StatsSnapshot {
            connections_open: self.limits.connections(),
            connections_accepted: l(&s.connections_accepted),
            connections_refused: l(&s.connections_refused),
            requests: l(&s.requests),
            requests_in_reader: l(&s.requests_in_reader),
            requests_in_flight: l(&s.requests_in_flight),
            request_bytes_in_flight: self.limits.bytes_in_flight(),
            reads_paused: l(&s.reads_paused),
            overloaded: l(&s.overloaded),
            frames_too_big: l(&s.frames_too_big),
            protocol_errors: l(&s.protocol_errors),
            fatal_closes: l(&s.fatal_closes),
            accept_errors: l(&s.accept_errors),
            tls_handshake_failures: l(&s.tls_handshake_failures),
            events_dropped: l(&s.events_dropped),
            statements_executing: self.config.max_threads - self.exec_slots.available_permits(),
        }
    }
}

/// The server's side of the virtual tables (`system_views.clients`, `settings`).
struct State {
    shared: std::sync::Weak<Shared>,
}

impl ServerState for State {
    fn clients(&self) -> Vec<ClientInfo> {
        let Some(shared) = self.shared.upgrade() else {
            return Vec::new();
        };
        let entries: Vec<Arc<ClientEntry>> = shared.clients.lock().values().cloned().collect();
        entries
            .iter()
            .map(|c| {
                let m = c.meta.lock();
                ClientInfo {
                    address: c.peer.ip(),
                    port: c.peer.port(),
                    // Cassandra resolves the peer's name; a lookup per row
                    // would make the table as slow as DNS, so the address.
                    hostname: c.peer.ip().to_string(),
                    username: m.username.clone(),
                    connection_stage: m.stage.to_string(),
                    protocol_version: c.protocol_version.load(Ordering::Relaxed),
                    driver_name: m.driver_name.clone(),
                    driver_version: m.driver_version.clone(),
                    request_count: c.request_count.load(Ordering::Relaxed),
                    ssl_enabled: c.ssl.is_some(),
                    ssl_protocol: c.ssl.as_ref().map(|s| s.0.clone()),
                    ssl_cipher_suite: c.ssl.as_ref().map(|s| s.1.clone()),
                    keyspace: m.keyspace.clone(),
                }
            })
            .collect()
    }

    fn settings(&self) -> Vec<(String, String)> {
        self.shared
            .upgrade()
            .map(|s| s.config.settings())
            .unwrap_or_default()
    }
}

/// A bound, not yet serving, CQL server.
pub struct Server {
    shared: Arc<Shared>,
    listener: TcpListener,
    shutdown_tx: watch::Sender<bool>,
}

/// Reads the server's counters while it runs.
#[derive(Clone)]
pub struct StatsHandle(Arc<Shared>);

impl StatsHandle {
    pub fn snapshot(&self) -> StatsSnapshot {
        self.0.snapshot()
    }

    /// Statements in the prepared cache.
    pub fn prepared_statements(&self) -> usize {
        self.0.prepared.len()
    }

    /// The server's side of the virtual tables, as the executor sees it.
    pub fn server_state(&self) -> Arc<dyn ServerState> {
        Arc::new(State {
            shared: Arc::downgrade(&self.0),
        })
    }
}

impl Server {
    /// Validates the configuration, builds TLS, binds the listening socket
    /// and installs the server's state into the executor.
    pub async fn bind(config: ServerConfig, executor: Arc<Executor>) -> io::Result<Server> {
        let listener = Self::listen(config.listen)?;
        Self::with_listener(config, executor, listener).await
    }

    /// Binds `addr` (port 0: a free port) before the server exists, so that
    /// the caller can tell the executor the port clients reach it on
    /// (`system.local.rpc_port`) and then start the server on it with
    /// [`Server::with_listener`].
    pub fn listen(addr: SocketAddr) -> io::Result<std::net::TcpListener> {
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| io::Error::new(e.kind(), format!("cannot listen on {addr}: {e}")))?;
        listener.set_nonblocking(true)?;
        Ok(listener)
    }

    /// As [`Server::bind`], on a socket [`Server::listen`] bound.
    pub async fn with_listener(
        config: ServerConfig,
        executor: Arc<Executor>,
        listener: std::net::TcpListener,
    ) -> io::Result<Server> {
        config
            .validate()
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let tls = match &config.tls {
            Some(t) => {
                Some(tls::acceptor(t).map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?)
            }
            None => None,
        };
        let listener = TcpListener::from_std(listener)?;
        let (shutdown_tx, shutdown_rx) = watch::channel(false);
        let supported = vec![
            ("CQL_VERSION".to_string(), vec![CQL_VERSION.to_string()]),
            (
                "COMPRESSION".to_string(),
                vec!["snappy".to_string(), "lz4".to_string()],
            ),
            (
                "PROTOCOL_VERSIONS".to_string(),
                SUPPORTED_VERSIONS
                    .iter()
                    .filter(|v| config.allow_older_protocols || **v >= CURRENT_VERSION)
                    .map(|v| version_name(*v))
                    .collect(),
            ),
        ];
        let shared = Arc::new(Shared {
            executor: executor.clone(),
            prepared: prepared::PreparedCache::new(config.prepared_statements_cache_size_bytes),
            events: broadcast::channel(1024).0,
            limits: Arc::new(limits::Limits::new(
                config.max_connections,
                config.max_connections_per_ip,
                config.max_request_data_in_flight_bytes,
                config.max_request_data_in_flight_per_ip_bytes,
            )),
            exec_slots: Arc::new(Semaphore::new(config.max_threads)),
            stats: Stats::default(),
            slow: slow::SlowLog::new(config.slow_query_log_timeout),
            clients: Mutex::new(HashMap::new()),
            next_client_id: AtomicU64::new(1),
            tls,
            supported,
            shutdown: shutdown_rx,
            config,
        });
        executor.set_server_state(Arc::new(State {
            shared: Arc::downgrade(&shared),
        }));
        Ok(Server {
            shared,
            listener,
            shutdown_tx,
        })
    }

    pub fn local_addr(&self) -> io::Result<SocketAddr> {
        self.listener.local_addr()
    }

    pub fn stats(&self) -> StatsHandle {
        StatsHandle(self.shared.clone())
    }

    /// Serves until `shutdown` completes, then stops accepting, lets every
    /// connection finish the requests it read (answers written), waits up to
    /// `drain` for them, closes what is left, and returns once no statement
    /// executes (invariant 4).
    pub async fn run(self, shutdown: impl Future<Output = ()>, drain: Duration) -> io::Result<()> {
        let Server {
            shared,
            listener,
            shutdown_tx,
        } = self;
        let mut tasks = tokio::task::JoinSet::new();
        let slow_reports = {
            let shared = shared.clone();
            tokio::spawn(async move {
                let mut every = tokio::time::interval(slow::INTERVAL);
                every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
                loop {
                    every.tick().await;
                    shared.slow.report();
                }
            })
        };
        tokio::pin!(shutdown);
        loop {
            tokio::select! {
                _ = &mut shutdown => break,
                accepted = listener.accept() => match accepted {
                    Ok((sock, peer)) => {
                        match shared.limits.admit(peer.ip()) {
                            Ok(slot) => {
                                shared.stats.connections_accepted.fetch_add(1, Ordering::Relaxed);
                                let shared = shared.clone();
                                tasks.spawn(async move {
                                    conn::serve(shared, sock, peer, slot).await;
                                });
                            }
                            Err(_) => {
                                // Cassandra closes a connection past the
                                // limits without an answer (its
                                // ConnectionLimitHandler).
                                shared.stats.connections_refused.fetch_add(1, Ordering::Relaxed);
                                drop(sock);
                            }
                        }
                    }
                    Err(_) => {
                        // Out of file descriptors or a connection reset
                        // before accept: keep serving the others; pause so
                        // that a persistent error does not spin a core.
                        shared.stats.accept_errors.fetch_add(1, Ordering::Relaxed);
                        tokio::time::sleep(Duration::from_millis(50)).await;
                    }
                },
                Some(_) = tasks.join_next(), if !tasks.is_empty() => {}
            }
        }
        drop(listener);
        let _ = shutdown_tx.send(true);
        let drained =
            tokio::time::timeout(drain, async { while tasks.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            tasks.shutdown().await;
        }
        // Statements already handed to the blocking pool run to their end.
        let all = shared.config.max_threads as u32;
        let _ = shared.exec_slots.acquire_many(all).await;
        slow_reports.abort();
        shared.slow.report();
        Ok(())
    }
}
