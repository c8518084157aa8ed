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

use crate::admin::SyncModeArg;
use crate::bounds::range;
use crate::datadir::DataDirArgs;
use clap::Args;
use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;
use strata::query::{Authenticator, Executor, NodeInfo};
use strata::{Error, Result};
use strata_server::{ClientAuth, Server, ServerConfig, TlsConfig};
use yaml_rust2::Yaml;

const CONFIG_FILE: &str = "strata.yaml";
const HOST_ID_FILE: &str = "host_id";
const DEFAULT_CLUSTER_NAME: &str = "Test Cluster";
const DEFAULT_DRAIN_SECONDS: u64 = 30;

#[derive(Args, Debug, Clone, Default)]
pub struct ServeArgs {
    /// Address clients connect to (cassandra.yaml rpc_address) [default: 127.0.0.1].
    #[arg(long)]
    pub listen: Option<IpAddr>,
    /// CQL port (native_transport_port); 0 picks a free one [default: 9042].
    #[arg(long)]
    pub port: Option<u16>,
    /// Configuration file with cassandra.yaml key names [default: strata.yaml
    /// in the data directory, when there is one].
    #[arg(long)]
    pub config: Option<PathBuf>,
    /// Seconds in-flight requests get to finish at shutdown before their
    /// connections are closed [default: 30].
    #[arg(long, value_parser = range(0u64, 86_400,
        "at most a day: a drain longer than that waits on a hung client"))]
    pub drain_timeout_seconds: Option<u64>,
    #[arg(skip)]
    file: FileSettings,
}

/// What the configuration file says (contract 1).
#[derive(Debug, Clone, Default)]
struct FileSettings {
    cluster_name: Option<String>,
    rpc_address: Option<IpAddr>,
    native_transport_port: Option<u16>,
    max_frame_size_bytes: Option<u64>,
    max_threads: Option<u64>,
    max_connections: Option<i64>,
    max_connections_per_ip: Option<i64>,
    max_requests_in_flight_per_connection: Option<u64>,
    max_request_data_in_flight_bytes: Option<u64>,
    max_request_data_in_flight_per_ip_bytes: Option<u64>,
    idle_timeout_ms: Option<u64>,
    allow_older_protocols: Option<bool>,
    prepared_statements_cache_size_bytes: Option<u64>,
    authenticator: Option<Authenticator>,
    tls: Option<TlsConfig>,
}

fn bad(key: &str, msg: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("configuration: {key}: {msg}"))
}

/// `16MiB`, `512KiB`, `1GiB`, `100B` or a plain number of `unit_bytes`.
fn parse_size(key: &str, v: &Yaml, unit_bytes: u64) -> Result<u64> {
    match v {
        Yaml::Integer(n) if *n >= 0 => Ok(*n as u64 * unit_bytes),
        Yaml::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num
                .parse()
                .map_err(|_| bad(key, format!("'{s}' is not a size")))?;
            let mult = match unit.trim() {
                "" | "B" => 1,
                "KiB" => 1 << 10,
                "MiB" => 1 << 20,
                "GiB" => 1 << 30,
                other => {
                    return Err(bad(
                        key,
                        format!("unknown unit '{other}' (B, KiB, MiB, GiB)"),
                    ))
                }
            };
            n.checked_mul(mult).ok_or_else(|| bad(key, "too large"))
        }
        _ => Err(bad(key, "expected a size such as 16MiB")),
    }
}

/// `10s`, `500ms`, `2m`, `1h` or a plain number of `unit_ms`.
fn parse_duration_ms(key: &str, v: &Yaml, unit_ms: u64) -> Result<u64> {
    match v {
        Yaml::Integer(n) if *n >= 0 => Ok(*n as u64 * unit_ms),
        Yaml::String(s) => {
            let s = s.trim();
            let split = s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len());
            let (num, unit) = s.split_at(split);
            let n: u64 = num
                .parse()
                .map_err(|_| bad(key, format!("'{s}' is not a duration")))?;
            let mult = match unit.trim() {
                "ms" => 1,
                "s" => 1000,
                "m" => 60_000,
                "h" => 3_600_000,
                other => return Err(bad(key, format!("unknown unit '{other}' (ms, s, m, h)"))),
            };
            n.checked_mul(mult).ok_or_else(|| bad(key, "too large"))
        }
        _ => Err(bad(key, "expected a duration such as 10s")),
    }
}

fn as_int(key: &str, v: &Yaml) -> Result<i64> {
    match v {
        Yaml::Integer(n) => Ok(*n),
        Yaml::String(s) => s
            .trim()
            .parse()
            .map_err(|_| bad(key, format!("'{s}' is not an integer"))),
        _ => Err(bad(key, "expected an integer")),
    }
}

fn as_u64(key: &str, v: &Yaml) -> Result<u64> {
    let n = as_int(key, v)?;
    u64::try_from(n).map_err(|_| bad(key, "must not be negative"))
}

fn as_bool(key: &str, v: &Yaml) -> Result<bool> {
    match v {
        Yaml::Boolean(b) => Ok(*b),
        Yaml::String(s) if s.eq_ignore_ascii_case("true") => Ok(true),
        Yaml::String(s) if s.eq_ignore_ascii_case("false") => Ok(false),
        _ => Err(bad(key, "expected true or false")),
    }
}

fn as_str<'a>(key: &str, v: &'a Yaml) -> Result<&'a str> {
    match v {
        Yaml::String(s) => Ok(s),
        _ => Err(bad(key, "expected a string")),
    }
}

fn as_ip(key: &str, v: &Yaml) -> Result<IpAddr> {
    let s = as_str(key, v)?;
    s.parse().map_err(|_| {
        bad(
            key,
            format!("'{s}' is not an IP address (host names are not resolved)"),
        )
    })
}

fn authenticator(key: &str, v: &Yaml) -> Result<Authenticator> {
    let s = match v {
        // Cassandra 5 also accepts `authenticator: {class_name: ...}`.
        Yaml::Hash(h) => match h.get(&Yaml::String("class_name".into())) {
            Some(c) => as_str(key, c)?,
            None => return Err(bad(key, "expected class_name")),
        },
        other => as_str(key, other)?,
    };
    match s.rsplit('.').next().unwrap_or(s) {
        "AllowAllAuthenticator" => Ok(Authenticator::AllowAll),
        "PasswordAuthenticator" => Ok(Authenticator::Password),
        other => Err(bad(
            key,
            format!("'{other}' is not supported (AllowAllAuthenticator or PasswordAuthenticator)"),
        )),
    }
}

fn tls_options(v: &Yaml, base: &Path) -> Result<Option<TlsConfig>> {
    const KEY: &str = "client_encryption_options";
    let Yaml::Hash(h) = v else {
        return Err(bad(KEY, "expected a map"));
    };
    let (mut enabled, mut optional) = (false, None);
    let (mut keystore, mut truststore, mut client_auth) = (None, None, ClientAuth::None);
    let path = |key: &str, v: &Yaml| -> Result<PathBuf> {
        let p = PathBuf::from(as_str(key, v)?);
        Ok(if p.is_absolute() { p } else { base.join(p) })
    };
    for (k, v) in h {
        let k = as_str(KEY, k)?;
        let key = format!("{KEY}.{k}");
        match k {
            "enabled" => enabled = as_bool(&key, v)?,
            "optional" => optional = Some(as_bool(&key, v)?),
            "keystore" => keystore = Some(path(&key, v)?),
            "truststore" => truststore = Some(path(&key, v)?),
            "require_client_auth" => {
                client_auth = match v {
                    Yaml::String(s) if s == "optional" => ClientAuth::Optional,
                    other => {
                        if as_bool(&key, other)? {
                            ClientAuth::Required
                        } else {
                            ClientAuth::None
                        }
                    }
                }
            }
            "keystore_password" | "truststore_password" => {
                if !matches!(v, Yaml::Null) && !as_str(&key, v)?.is_empty() {
                    return Err(bad(
                        &key,
                        "encrypted keys are not supported: give an unencrypted PEM key",
                    ));
                }
            }
            "store_type" => {
                if as_str(&key, v)? != "PEM" {
                    return Err(bad(&key, "only PEM files are supported"));
                }
            }
            _ => {
                return Err(bad(
                    &key,
                    "unknown option (Strata reads enabled, optional, keystore, truststore, \
                     require_client_auth)",
                ))
            }
        }
    }
    if !enabled {
        return Ok(None);
    }
    let keystore = keystore.ok_or_else(|| {
        bad(
            KEY,
            "enabled needs a keystore (a PEM file with the key and certificate)",
        )
    })?;
    Ok(Some(TlsConfig {
        keystore,
        truststore,
        optional: optional.unwrap_or(false),
        client_auth,
    }))
}

impl FileSettings {
    /// Reads `path`; fills `db` options not given on the command line.
    fn load(path: &Path, db: &mut DataDirArgs, before: &DataDirArgs) -> Result<FileSettings> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidInput(format!("configuration {}: {e}", path.display())))?;
        let docs = yaml_rust2::YamlLoader::load_from_str(&text)
            .map_err(|e| Error::InvalidInput(format!("configuration {}: {e}", path.display())))?;
        let mut s = FileSettings::default();
        let Some(doc) = docs.first() else {
            return Ok(s);
        };
        let Yaml::Hash(map) = doc else {
            return Err(Error::InvalidInput(format!(
                "configuration {}: expected key: value lines",
                path.display()
            )));
        };
        let base = path.parent().unwrap_or(Path::new("."));
        let mut listen_address = None;
        for (k, v) in map {
            let key = as_str("key", k)?;
            if matches!(v, Yaml::Null) {
                continue; // `key:` with no value keeps the default, as in cassandra.yaml
            }
            match key {
                "cluster_name" => s.cluster_name = Some(as_str(key, v)?.to_string()),
                "rpc_address" => s.rpc_address = Some(as_ip(key, v)?),
                "listen_address" => listen_address = Some(as_ip(key, v)?),
                "native_transport_port" => {
                    s.native_transport_port =
                        Some(u16::try_from(as_int(key, v)?).map_err(|_| bad(key, "not a port"))?)
                }
                "native_transport_max_frame_size" => {
                    s.max_frame_size_bytes = Some(parse_size(key, v, 1 << 20)?)
                }
                "native_transport_max_frame_size_in_mb" => {
                    s.max_frame_size_bytes = Some(as_u64(key, v)?.saturating_mul(1 << 20))
                }
                "native_transport_max_threads" => s.max_threads = Some(as_u64(key, v)?),
                "native_transport_max_concurrent_connections" => {
                    s.max_connections = Some(as_int(key, v)?)
                }
                "native_transport_max_concurrent_connections_per_ip" => {
                    s.max_connections_per_ip = Some(as_int(key, v)?)
                }
                "max_requests_in_flight_per_connection" => {
                    s.max_requests_in_flight_per_connection = Some(as_u64(key, v)?)
                }
                "native_transport_max_request_data_in_flight" => {
                    s.max_request_data_in_flight_bytes = Some(parse_size(key, v, 1)?)
                }
                "native_transport_max_request_data_in_flight_per_ip" => {
                    s.max_request_data_in_flight_per_ip_bytes = Some(parse_size(key, v, 1)?)
                }
                "native_transport_idle_timeout" => {
                    s.idle_timeout_ms = Some(parse_duration_ms(key, v, 1)?)
                }
                "native_transport_idle_timeout_in_ms" => s.idle_timeout_ms = Some(as_u64(key, v)?),
                "native_transport_allow_older_protocols" => {
                    s.allow_older_protocols = Some(as_bool(key, v)?)
                }
                "prepared_statements_cache_size" => {
                    s.prepared_statements_cache_size_bytes = Some(parse_size(key, v, 1 << 20)?)
                }
                "prepared_statements_cache_size_mb" => {
                    s.prepared_statements_cache_size_bytes =
                        Some(as_u64(key, v)?.saturating_mul(1 << 20))
                }
                "authenticator" => s.authenticator = Some(authenticator(key, v)?),
                "client_encryption_options" => s.tls = tls_options(v, base)?,
                // Data-directory options: the file fills what the command
                // line left out (contract 2).
                "commitlog_sync" => {
                    let mode = match as_str(key, v)? {
                        "periodic" => SyncModeArg::Periodic,
                        "batch" => SyncModeArg::Batch,
                        "group" => SyncModeArg::Group,
                        other => {
                            return Err(bad(key, format!("'{other}' (periodic, batch or group)")))
                        }
                    };
                    if db.commitlog_sync.is_none() && before.commitlog_sync.is_none() {
                        db.commitlog_sync = Some(mode);
                    }
                }
                "commitlog_sync_period" | "commitlog_sync_period_in_ms" => {
                    let ms = parse_duration_ms(key, v, 1)?;
                    if db.commitlog_sync_period_ms.is_none()
                        && before.commitlog_sync_period_ms.is_none()
                    {
                        db.commitlog_sync_period_ms = Some(ms);
                    }
                }
                "commitlog_sync_group_window" | "commitlog_sync_group_window_in_ms" => {
                    let ms = parse_duration_ms(key, v, 1)?;
                    if db.commitlog_sync_group_window_ms.is_none()
                        && before.commitlog_sync_group_window_ms.is_none()
                    {
                        db.commitlog_sync_group_window_ms = Some(ms);
                    }
                }
                "commitlog_segment_size" | "commitlog_segment_size_in_mb" => {
                    let mb = parse_size(key, v, 1 << 20)? >> 20;
                    if db.commitlog_segment_size_mb.is_none()
                        && before.commitlog_segment_size_mb.is_none()
                    {
                        db.commitlog_segment_size_mb = Some(mb);
                    }
                }
                "concurrent_compactors" => {
                    let n = as_u64(key, v)? as usize;
                    if db.concurrent_compactors.is_none() && before.concurrent_compactors.is_none()
                    {
                        db.concurrent_compactors = Some(n);
                    }
                }
                "compaction_throughput" | "compaction_throughput_mb_per_sec" => {
                    let mb = match v {
                        Yaml::String(t) => {
                            parse_size(
                                key,
                                &Yaml::String(t.trim_end_matches("/s").into()),
                                1 << 20,
                            )? >> 20
                        }
                        other => as_u64(key, other)?,
                    };
                    if db.compaction_throughput_mb_per_sec.is_none()
                        && before.compaction_throughput_mb_per_sec.is_none()
                    {
                        db.compaction_throughput_mb_per_sec = Some(mb);
                    }
                }
                other => {
                    return Err(Error::InvalidInput(format!(
                        "configuration {}: unknown key '{other}': Strata reads cluster_name, \
                         rpc_address, listen_address, native_transport_port, \
                         native_transport_max_frame_size, native_transport_max_threads, \
                         native_transport_max_concurrent_connections(_per_ip), \
                         max_requests_in_flight_per_connection, \
                         native_transport_max_request_data_in_flight(_per_ip), \
                         native_transport_idle_timeout, native_transport_allow_older_protocols, \
                         prepared_statements_cache_size, authenticator, \
                         client_encryption_options, commitlog_sync, commitlog_sync_period, \
                         commitlog_sync_group_window, commitlog_segment_size, \
                         concurrent_compactors, compaction_throughput",
                        path.display()
                    )))
                }
            }
        }
        // Cassandra's rpc_address defaults to listen_address.
        if s.rpc_address.is_none() {
            s.rpc_address = listen_address;
        }
        Ok(s)
    }
}

/// Reads the configuration file (before the data-directory options are
/// resolved, since it may set them).
pub fn merge_config(
    args: &mut ServeArgs,
    db: &mut DataDirArgs,
    before: &DataDirArgs,
) -> Result<()> {
    let data_dir = db
        .data_dir
        .clone()
        .or_else(|| before.data_dir.clone())
        .unwrap_or_else(|| PathBuf::from(crate::datadir::DEFAULT_DATA_DIR));
    let path = match &args.config {
        Some(p) => Some(p.clone()),
        None => Some(data_dir.join(CONFIG_FILE)).filter(|p| p.is_file()),
    };
    if let Some(p) = path {
        args.file = FileSettings::load(&p, db, before)?;
    }
    Ok(())
}

fn limit(v: Option<i64>) -> Option<usize> {
    v.filter(|n| *n >= 0).map(|n| n as usize)
}

/// The server's settings: flags, then the file, then defaults (contract 2).
fn server_config(args: &ServeArgs) -> Result<ServerConfig> {
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
            }
        }
        // No signal handling: serve until the process is killed.
        _ => std::future::pending::<()>().await,
    }
    eprintln!("shutting down: no new connections, finishing requests in flight");
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<(FileSettings, DataDirArgs)> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("strata.yaml");
        std::fs::write(&p, text).unwrap();
        let mut db = DataDirArgs::default();
        let s = FileSettings::load(&p, &mut db, &DataDirArgs::default())?;
        Ok((s, db))
    }

    #[test]
    fn cassandra_yaml_keys_are_read() {
        // `num_tokens:` with no value is skipped, not an unknown key.
        let (s, _) = load(
            "cluster_name: 'Prod'\nlisten_address: 127.0.0.2\nnative_transport_port: 9142\n\
             native_transport_max_frame_size: 32MiB\nnative_transport_idle_timeout: 30s\n\
             authenticator: PasswordAuthenticator\ncommitlog_sync: batch\n\
             commitlog_sync_period: 10000ms\nnum_tokens:\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(s.cluster_name.as_deref(), Some("Prod"));
        assert_eq!(s.rpc_address, Some("127.0.0.2".parse().unwrap()));
        assert_eq!(s.native_transport_port, Some(9142));
        assert_eq!(s.max_frame_size_bytes, Some(32 << 20));
        assert_eq!(s.idle_timeout_ms, Some(30_000));
        assert_eq!(s.authenticator, Some(Authenticator::Password));
    }

    #[test]
    fn file_fills_data_dir_options_the_command_line_left_out() {
        let (_, db) = load("commitlog_sync: group\ncommitlog_sync_group_window: 20ms\n").unwrap();
        assert_eq!(db.commitlog_sync, Some(SyncModeArg::Group));
        assert_eq!(db.commitlog_sync_group_window_ms, Some(20));
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("strata.yaml");
        std::fs::write(&p, "commitlog_sync: group\n").unwrap();
        let mut db = DataDirArgs {
            commitlog_sync: Some(SyncModeArg::Batch),
            ..DataDirArgs::default()
        };
        FileSettings::load(&p, &mut db, &DataDirArgs::default()).unwrap();
        assert_eq!(db.commitlog_sync, Some(SyncModeArg::Batch), "the flag wins");
    }

    #[test]
    fn bad_keys_and_values_name_the_key() {
        let e = load("seed_provider: x\n").unwrap_err().to_string();
        assert!(e.contains("unknown key 'seed_provider'"), "{e}");
        let e = load("native_transport_max_frame_size: 16MB\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("native_transport_max_frame_size"), "{e}");
        let e = load("authenticator: LdapAuthenticator\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("authenticator"), "{e}");
        let e = load("client_encryption_options:\n  enabled: true\n  keystore_password: secret\n  keystore: k.pem\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("keystore_password"), "{e}");
    }

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
