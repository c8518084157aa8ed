//! `strata serve`: the data directory served to CQL clients.
//!
//! Opens the database as its owner, builds the executor with this node's
//! identity, and runs the CQL server until SIGTERM or SIGINT; then stops
//! accepting, lets the requests already read finish, flushes every memtable
//! and closes the database. Settings come from the command line, else from a
//! configuration file with `cassandra.yaml` key names (`--config`, or
//! `strata.yaml` in the data directory), else defaults.
//!
//! Contract:
//! 1. The configuration file is read whole before anything opens: an unknown
//!    key, a value of the wrong type or unit is an error naming the key, and
//!    nothing is served (no setting is silently ignored).
//! 2. A flag given on the command line wins over the file.
//! 3. The node's host id is kept in `host_id` in the data directory, written
//!    once (temporary file, fsync, rename) and the same on every start.
//! 4. The address actually bound is printed on stdout as
//!    `listening for CQL clients on ADDR` (with `--port 0`, the chosen port).

use crate::bounds::range;
use crate::config::ServerFile;
use clap::Args;
use std::net::{IpAddr, SocketAddr};
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;
use strata::query::{Authenticator, Executor, NodeInfo};
use strata::{Error, Result};
use strata_server::{Server, ServerConfig};

const HOST_ID_FILE: &str = "host_id";
pub(crate) const DEFAULT_CLUSTER_NAME: &str = "Test Cluster";
const DEFAULT_DRAIN_SECONDS: u64 = 30;

#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Address clients connect to (cassandra.yaml rpc_address) [default: 127.0.0.1].
    #[arg(long)]
    pub listen: Option<IpAddr>,
    /// CQL port (native_transport_port); 0 picks a free one [default: 9042].
    #[arg(long)]
    pub port: Option<u16>,
    /// Seconds in-flight requests get to finish at shutdown before their
    /// connections are closed [default: 30].
    #[arg(long, value_parser = range(0u64, 86_400,
        "at most a day: a drain longer than that waits on a hung client"))]
    pub drain_timeout_seconds: Option<u64>,
    /// The configuration file's server settings (config.rs), set once the
    /// data directory is resolved.
    #[arg(skip)]
    pub file: ServerFile,
}

fn limit(v: Option<i64>) -> Option<usize> {
    v.filter(|n| *n >= 0).map(|n| n as usize)
}

/// The server's settings: flags, then the file, then defaults (contract 2).
pub(crate) fn server_config(args: &ServeArgs) -> Result<ServerConfig> {
    let f = &args.file;
    let d = ServerConfig::default();
    let ip = args.listen.or(f.rpc_address).unwrap_or(d.listen.ip());
    let port = args
        .port
        .or(f.native_transport_port)
        .unwrap_or(d.listen.port());
    let usize_of =
        |v: Option<u64>, dflt: usize| v.map_or(dflt, |n| usize::try_from(n).unwrap_or(usize::MAX));
    let config = ServerConfig {
        listen: SocketAddr::new(ip, port),
        max_frame_size_bytes: usize_of(f.max_frame_size_bytes, d.max_frame_size_bytes),
        max_threads: usize_of(f.max_threads, d.max_threads),
        max_connections: match f.max_connections {
            Some(n) => limit(Some(n)),
            None => d.max_connections,
        },
        max_connections_per_ip: match f.max_connections_per_ip {
            Some(n) => limit(Some(n)),
            None => d.max_connections_per_ip,
        },
        max_requests_in_flight_per_connection: usize_of(
            f.max_requests_in_flight_per_connection,
            d.max_requests_in_flight_per_connection,
        ),
        max_request_data_in_flight_bytes: f
            .max_request_data_in_flight_bytes
            .unwrap_or(d.max_request_data_in_flight_bytes),
        max_request_data_in_flight_per_ip_bytes: f
            .max_request_data_in_flight_per_ip_bytes
            .unwrap_or(d.max_request_data_in_flight_per_ip_bytes),
        idle_timeout: f
            .idle_timeout_ms
            .filter(|ms| *ms > 0)
            .map(Duration::from_millis),
        allow_older_protocols: f.allow_older_protocols.unwrap_or(d.allow_older_protocols),
        prepared_statements_cache_size_bytes: usize_of(
            f.prepared_statements_cache_size_bytes,
            d.prepared_statements_cache_size_bytes,
        ),
        tls: f.tls.clone(),
        slow_query_log_timeout: match f.slow_query_log_timeout_ms {
            Some(ms) => Some(Duration::from_millis(ms)).filter(|d| !d.is_zero()),
            None => d.slow_query_log_timeout,
        },
        // Set from the commit-log mode once the data directory is known.
        inline_statements: false,
    };
    config
        .validate()
        .map_err(|e| Error::InvalidInput(format!("configuration: {e}")))?;
    Ok(config)
}

/// The node's id, created once in the data directory (contract 3).
fn host_id(dir: &Path) -> Result<[u8; 16]> {
    let path = dir.join(HOST_ID_FILE);
    if let Ok(text) = std::fs::read_to_string(&path) {
        return parse_uuid(text.trim()).ok_or_else(|| {
            Error::InvalidInput(format!(
                "{} does not hold a UUID; restore it or remove it to give this node a new id",
                path.display()
            ))
        });
    }
    let id = random_uuid();
    let tmp = dir.join(format!("{HOST_ID_FILE}.tmp"));
    let io = |p: &Path| {
        let p = p.to_path_buf();
        move |e| Error::io(p, e)
    };
    {
        use std::io::Write;
        let mut f = std::fs::File::create(&tmp).map_err(io(&tmp))?;
        writeln!(f, "{}", format_uuid(&id)).map_err(io(&tmp))?;
        f.sync_all().map_err(io(&tmp))?;
    }
    std::fs::rename(&tmp, &path).map_err(io(&path))?;
    std::fs::File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(io(dir))?;
    Ok(id)
}

fn random_uuid() -> [u8; 16] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    let mut id = [0u8; 16];
    for (i, chunk) in id.chunks_mut(8).enumerate() {
        let mut h = RandomState::new().build_hasher();
        h.write_usize(i);
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos()),
        );
        chunk.copy_from_slice(&h.finish().to_be_bytes());
    }
    id[6] = (id[6] & 0x0F) | 0x40; // version 4
    id[8] = (id[8] & 0x3F) | 0x80; // RFC 4122 variant
    id
}

fn format_uuid(id: &[u8; 16]) -> String {
    let h: String = id.iter().map(|b| format!("{b:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

fn parse_uuid(s: &str) -> Option<[u8; 16]> {
    let hex: String = s.chars().filter(|c| *c != '-').collect();
    if hex.len() != 32 {
        return None;
    }
    let mut id = [0u8; 16];
    for (i, b) in id.iter_mut().enumerate() {
        *b = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    Some(id)
}

/// When this process started serving (Unix seconds) and the address bound.
static SERVING: std::sync::OnceLock<(i64, String)> = std::sync::OnceLock::new();
/// `strata drain` asks the server to stop, as SIGTERM does.
static SHUTDOWN: tokio::sync::Notify = tokio::sync::Notify::const_new();

/// The time this process started serving, if it serves.
pub fn started_at() -> Option<i64> {
    SERVING.get().map(|s| s.0)
}

/// The address this process serves on, if it serves.
pub fn bound_address() -> Option<String> {
    SERVING.get().map(|s| s.1.clone())
}

/// Stops the server as SIGTERM would (`strata drain`).
pub fn request_shutdown() {
    SHUTDOWN.notify_one();
}

pub fn run(data_dir: &Path, args: ServeArgs) -> Result<()> {
    let mut config = server_config(&args)?;
    // Before the data directory opens, so its replay is in the log.
    let log = crate::logging::init_server(crate::logging::flag(), data_dir)?;
    eprintln!("logging to {}", log.display());
    // Statements run on the runtime's workers only when no write waits for
    // an fsync (ServerConfig::inline_statements).
    config.inline_statements = matches!(
        crate::admin::db_options().commitlog.map(|c| c.sync),
        Some(strata::commitlog::SyncMode::Periodic { .. })
    );
    let db = Arc::new(crate::open_db(data_dir)?);
    let listener = Server::listen(config.listen).map_err(|e| Error::InvalidInput(e.to_string()))?;
    let node = NodeInfo {
        listen_address: config.listen.ip(),
        // The bound port, which `--port 0` chose.
        native_port: listener
            .local_addr()
            .map_err(|e| Error::InvalidInput(format!("cannot listen: {e}")))?
            .port(),
        cluster_name: args
            .file
            .cluster_name
            .clone()
            .unwrap_or_else(|| DEFAULT_CLUSTER_NAME.to_string()),
        data_center: "datacenter1".to_string(),
        rack: "rack1".to_string(),
        // Drivers and cqlsh pick their schema queries and features from it; the
        // executor follows Cassandra 5.0.9, so it names that release.
        release_version: strata::query::RELEASE_VERSION.to_string(),
        host_id: host_id(data_dir)?,
    };
    let auth = args.file.authenticator.unwrap_or(Authenticator::AllowAll);
    let executor = Arc::new(Executor::new(db.clone(), node, auth)?);
    // Admin commands from the CLI, run on this database (remote.rs).
    let endpoint = crate::remote::start(data_dir, db.clone())?;
    let drain = Duration::from_secs(args.drain_timeout_seconds.unwrap_or(DEFAULT_DRAIN_SECONDS));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        // Executor calls run on the blocking pool, bounded by the server at
        // native_transport_max_threads; the margin is for the runtime's own.
        .max_blocking_threads(config.max_threads + 16)
        .thread_name("strata-cql")
        .build()
        .map_err(|e| Error::InvalidInput(format!("cannot start the server's runtime: {e}")))?;
    let tls = config.tls.is_some();
    let served = runtime.block_on(async {
        let server = Server::with_listener(config, executor.clone(), listener).await?;
        let addr = server.local_addr()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        let _ = SERVING.set((now, addr.ip().to_string()));
        println!(
            "listening for CQL clients on {addr} ({})",
            if tls { "encrypted" } else { "unencrypted" }
        );
        use std::io::Write;
        let _ = std::io::stdout().flush();
        server.run(shutdown_signal(), drain).await
    });
    drop(runtime);
    drop(executor);
    // Stops accepting and waits for admin commands still running.
    drop(endpoint);
    served.map_err(|e| Error::InvalidInput(format!("serving: {e}")))?;
    eprintln!(
        "stopped serving; flushing and closing {}",
        data_dir.display()
    );
    match Arc::try_unwrap(db) {
        Ok(db) => {
            db.flush_all()?;
            db.close()
        }
        // Unreachable once the server returned (it holds the last other
        // reference); still flush what can be flushed rather than lose it.
        Err(db) => {
            db.flush_all()?;
            Err(Error::InvalidInput(
                "the database is still in use after the server stopped; flushed, not closed".into(),
            ))
        }
    }
}

/// Completes on SIGTERM or SIGINT.
async fn shutdown_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    let term = signal(SignalKind::terminate());
    let int = signal(SignalKind::interrupt());
    match (term, int) {
        (Ok(mut t), Ok(mut i)) => {
            tokio::select! {
                _ = t.recv() => {}
                _ = i.recv() => {}
                _ = SHUTDOWN.notified() => {}
            }
        }
        // No signal handling: serve until drained or killed.
        _ => SHUTDOWN.notified().await,
    }
    eprintln!("shutting down: no new connections, finishing requests in flight");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_id_is_created_once_and_kept() {
        let dir = tempfile::tempdir().unwrap();
        let a = host_id(dir.path()).unwrap();
        let b = host_id(dir.path()).unwrap();
        assert_eq!(a, b);
        assert_eq!(a[6] >> 4, 4);
        assert_eq!(parse_uuid(&format_uuid(&a)), Some(a));
        std::fs::write(dir.path().join(HOST_ID_FILE), "not a uuid\n").unwrap();
        assert!(host_id(dir.path()).is_err());
    }
}
