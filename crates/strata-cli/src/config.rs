//! The configuration file, `strata.yaml`: a node's settings in one place,
//! under `cassandra.yaml`'s names wherever Cassandra has the setting, so an
//! operator's habits and most of their file carry over.
//!
//! Contract:
//! 1. The file is `--config FILE`, else `strata.yaml` in the data directory
//!    when there is one, else there is none. Every command that opens a data
//!    directory reads it; `serve` also takes its server settings from it.
//! 2. It is read whole before anything opens. An unknown key, a value of the
//!    wrong type or unit, and a `cassandra.yaml` key Strata has no setting
//!    for (`memtable_heap_space`, `key_cache_size`, ...) are errors that name
//!    the key and why: no setting is silently ignored. `key:` with no value
//!    keeps the default, as in `cassandra.yaml`.
//! 3. A flag on the command line wins over the file, and the file over the
//!    default; [`Setting`] records which one gave each value, for
//!    `strata config show`.
//! 4. Nothing here writes: reading the configuration changes no file.

use crate::admin::{LogCompressionArg, SyncModeArg};
use crate::datadir::DataDirArgs;
use std::collections::BTreeSet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use strata::query::Authenticator;
use strata::{Error, Result};
use strata_server::{ClientAuth, TlsConfig};
use yaml_rust2::Yaml;

/// The file's name in the data directory.
pub const CONFIG_FILE: &str = "strata.yaml";

/// What the file says: data-directory settings, server settings, and which
/// setting names it gave (contract 3).
#[derive(Debug, Clone, Default)]
pub struct ConfigFile {
    pub path: PathBuf,
    /// The data-directory settings it names, as if given as flags.
    pub data: DataDirArgs,
    pub server: ServerFile,
    /// The settings it gave, under their [`Setting::name`].
    pub set: BTreeSet<&'static str>,
}

/// The server's settings from the file (`strata serve`).
#[derive(Debug, Clone, Default)]
pub struct ServerFile {
    pub cluster_name: Option<String>,
    pub rpc_address: Option<IpAddr>,
    pub native_transport_port: Option<u16>,
    pub max_frame_size_bytes: Option<u64>,
    pub max_threads: Option<u64>,
    pub max_connections: Option<i64>,
    pub max_connections_per_ip: Option<i64>,
    pub max_requests_in_flight_per_connection: Option<u64>,
    pub max_request_data_in_flight_bytes: Option<u64>,
    pub max_request_data_in_flight_per_ip_bytes: Option<u64>,
    pub idle_timeout_ms: Option<u64>,
    pub allow_older_protocols: Option<bool>,
    pub prepared_statements_cache_size_bytes: Option<u64>,
    pub slow_query_log_timeout_ms: Option<u64>,
    pub authenticator: Option<Authenticator>,
    pub tls: Option<TlsConfig>,
}

/// Where a setting's value came from (contract 3).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Source {
    /// The command line, with the flag's name.
    Flag(&'static str),
    /// The configuration file.
    File(PathBuf),
    Default,
}

impl std::fmt::Display for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Flag(name) => write!(f, "command line ({name})"),
            Source::File(p) => write!(f, "{}", p.display()),
            Source::Default => f.write_str("default"),
        }
    }
}

/// One effective setting, as `strata config show` prints it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Setting {
    /// Its `cassandra.yaml` name, or Strata's where Cassandra has none.
    pub name: &'static str,
    pub value: String,
    pub source: Source,
}

/// Keys of `cassandra.yaml` that Strata has no setting for, each with why
/// (contract 2: refused by name rather than ignored).
const NOT_IN_STRATA: &[(&str, &str)] = &[
    ("memtable_heap_space", "Strata sizes memtables per table: the table option memtable_flush_threshold_mb"),
    ("memtable_offheap_space", "Strata sizes memtables per table: the table option memtable_flush_threshold_mb"),
    ("memtable_allocation_type", "Strata has one memtable kind (an arena B-tree, off the allocator's heap)"),
    ("memtable_cleanup_threshold", "Strata flushes a table's memtable at its memtable_flush_threshold_mb"),
    ("memtable_flush_writers", "Strata flushes on one thread per data directory; memtables waiting for it are bounded per table"),
    ("key_cache_size", "Strata has no key cache: its partition index is held in memory"),
    ("row_cache_size", "Strata has no row cache"),
    ("counter_cache_size", "Strata has no counter cache"),
    ("num_tokens", "Strata is a single node: it owns the whole ring"),
    ("seed_provider", "Strata is a single node: there are no seeds"),
    ("hints_directory", "Strata is a single node: there are no hints"),
    ("commitlog_directory", "the commit log is always commitlog/ in the data directory"),
    ("saved_caches_directory", "Strata saves no caches"),
];

pub(crate) fn bad(key: &str, msg: impl std::fmt::Display) -> Error {
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

/// Compaction throughput as `64MiB/s` (Cassandra 5) or a number of MiB/s.
fn parse_throughput_mb(key: &str, v: &Yaml) -> Result<u64> {
    match v {
        Yaml::String(t) => Ok(parse_size(
            key,
            &Yaml::String(t.trim().trim_end_matches("/s").into()),
            1 << 20,
        )? >> 20),
        other => as_u64(key, other),
    }
}

/// `commitlog_compression: {class_name: LZ4Compressor}` as in
/// `cassandra.yaml`, or `none` / `lz4`.
fn commitlog_compression(key: &str, v: &Yaml) -> Result<LogCompressionArg> {
    let class = match v {
        Yaml::Hash(h) => match h.get(&Yaml::String("class_name".into())) {
            Some(c) => as_str(key, c)?,
            None => return Err(bad(key, "expected class_name")),
        },
        other => as_str(key, other)?,
    };
    match class.rsplit('.').next().unwrap_or(class) {
        "LZ4Compressor" | "lz4" => Ok(LogCompressionArg::Lz4),
        "none" => Ok(LogCompressionArg::None),
        other => Err(bad(
            key,
            format!("'{other}' is not supported (LZ4Compressor, or none)"),
        )),
    }
}

/// Which file applies (contract 1): `explicit`, else `strata.yaml` in
/// `data_dir` when it exists.
pub fn locate(explicit: Option<&Path>, data_dir: &Path) -> Option<PathBuf> {
    match explicit {
        Some(p) => Some(p.to_path_buf()),
        None => Some(data_dir.join(CONFIG_FILE)).filter(|p| p.is_file()),
    }
}

impl ConfigFile {
    /// Reads and checks the whole file (contract 2).
    pub fn load(path: &Path) -> Result<ConfigFile> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::InvalidInput(format!("configuration {}: {e}", path.display())))?;
        let docs = yaml_rust2::YamlLoader::load_from_str(&text)
            .map_err(|e| Error::InvalidInput(format!("configuration {}: {e}", path.display())))?;
        let mut c = ConfigFile {
            path: path.to_path_buf(),
            ..ConfigFile::default()
        };
        let Some(doc) = docs.first() else {
            return Ok(c);
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
                continue;
            }
            let name = c
                .read(key, v, base, &mut listen_address)
                .map_err(|e| c.located(e))?;
            c.set.insert(name);
        }
        // Cassandra's rpc_address defaults to listen_address.
        if c.server.rpc_address.is_none() && listen_address.is_some() {
            c.server.rpc_address = listen_address;
            c.set.insert("rpc_address");
        }
        Ok(c)
    }

    /// Reads one key; returns the name of the setting it gave.
    fn read(
        &mut self,
        key: &str,
        v: &Yaml,
        base: &Path,
        listen_address: &mut Option<IpAddr>,
    ) -> Result<&'static str> {
        let s = &mut self.server;
        let d = &mut self.data;
        Ok(match key {
            "cluster_name" => {
                s.cluster_name = Some(as_str(key, v)?.to_string());
                "cluster_name"
            }
            "rpc_address" => {
                s.rpc_address = Some(as_ip(key, v)?);
                "rpc_address"
            }
            "listen_address" => {
                *listen_address = Some(as_ip(key, v)?);
                "listen_address"
            }
            "native_transport_port" => {
                s.native_transport_port =
                    Some(u16::try_from(as_int(key, v)?).map_err(|_| bad(key, "not a port"))?);
                "native_transport_port"
            }
            "native_transport_max_frame_size" | "native_transport_max_frame_size_in_mb" => {
                s.max_frame_size_bytes = Some(parse_size(key, v, 1 << 20)?);
                "native_transport_max_frame_size"
            }
            "native_transport_max_threads" => {
                s.max_threads = Some(as_u64(key, v)?);
                "native_transport_max_threads"
            }
            "native_transport_max_concurrent_connections" => {
                s.max_connections = Some(as_int(key, v)?);
                "native_transport_max_concurrent_connections"
            }
            "native_transport_max_concurrent_connections_per_ip" => {
                s.max_connections_per_ip = Some(as_int(key, v)?);
                "native_transport_max_concurrent_connections_per_ip"
            }
            "max_requests_in_flight_per_connection" => {
                s.max_requests_in_flight_per_connection = Some(as_u64(key, v)?);
                "max_requests_in_flight_per_connection"
            }
            "native_transport_max_request_data_in_flight" => {
                s.max_request_data_in_flight_bytes = Some(parse_size(key, v, 1)?);
                "native_transport_max_request_data_in_flight"
            }
            "native_transport_max_request_data_in_flight_per_ip" => {
                s.max_request_data_in_flight_per_ip_bytes = Some(parse_size(key, v, 1)?);
                "native_transport_max_request_data_in_flight_per_ip"
            }
            "native_transport_idle_timeout" | "native_transport_idle_timeout_in_ms" => {
                s.idle_timeout_ms = Some(parse_duration_ms(key, v, 1)?);
                "native_transport_idle_timeout"
            }
            "native_transport_allow_older_protocols" => {
                s.allow_older_protocols = Some(as_bool(key, v)?);
                "native_transport_allow_older_protocols"
            }
            "prepared_statements_cache_size" | "prepared_statements_cache_size_mb" => {
                s.prepared_statements_cache_size_bytes = Some(parse_size(key, v, 1 << 20)?);
                "prepared_statements_cache_size"
            }
            "slow_query_log_timeout" | "slow_query_log_timeout_in_ms" => {
                s.slow_query_log_timeout_ms = Some(parse_duration_ms(key, v, 1)?);
                "slow_query_log_timeout"
            }
            "authenticator" => {
                s.authenticator = Some(authenticator(key, v)?);
                "authenticator"
            }
            "client_encryption_options" => {
                s.tls = tls_options(v, base)?;
                "client_encryption_options"
            }
            "data_file_directories" => {
                let dirs = match v {
                    Yaml::Array(a) => a,
                    _ => return Err(bad(key, "expected a list of one directory")),
                };
                let [dir] = dirs.as_slice() else {
                    return Err(bad(
                        key,
                        format!(
                            "{} directories given: Strata keeps a node's data in one directory",
                            dirs.len()
                        ),
                    ));
                };
                let p = PathBuf::from(as_str(key, dir)?);
                d.data_dir = Some(if p.is_absolute() { p } else { base.join(p) });
                "data_file_directories"
            }
            "commitlog_sync" => {
                d.commitlog_sync = Some(match as_str(key, v)? {
                    "periodic" => SyncModeArg::Periodic,
                    "batch" => SyncModeArg::Batch,
                    "group" => SyncModeArg::Group,
                    other => return Err(bad(key, format!("'{other}' (periodic, batch or group)"))),
                });
                "commitlog_sync"
            }
            "commitlog_sync_period" | "commitlog_sync_period_in_ms" => {
                d.commitlog_sync_period_ms = Some(parse_duration_ms(key, v, 1)?);
                "commitlog_sync_period"
            }
            "commitlog_sync_group_window" | "commitlog_sync_group_window_in_ms" => {
                d.commitlog_sync_group_window_ms = Some(parse_duration_ms(key, v, 1)?);
                "commitlog_sync_group_window"
            }
            "commitlog_segment_size" | "commitlog_segment_size_in_mb" => {
                d.commitlog_segment_size_mb = Some(parse_size(key, v, 1 << 20)? >> 20);
                "commitlog_segment_size"
            }
            "max_mutation_size" | "max_mutation_size_in_kb" => {
                let unit = if key.ends_with("_in_kb") {
                    1 << 10
                } else {
                    1 << 20
                };
                d.max_mutation_size_mb = Some(parse_size(key, v, unit)? >> 20);
                "max_mutation_size"
            }
            "commitlog_compression" => {
                d.commitlog_compression = Some(commitlog_compression(key, v)?);
                "commitlog_compression"
            }
            "max_disk_size" => {
                d.max_disk_bytes = Some(parse_size(key, v, 1 << 20)?);
                "max_disk_size"
            }
            "disk_reserve" => {
                d.disk_reserve_mb = Some(parse_size(key, v, 1 << 20)? >> 20);
                "disk_reserve"
            }
            "compaction_throughput" | "compaction_throughput_mb_per_sec" => {
                d.compaction_throughput_mb_per_sec = Some(parse_throughput_mb(key, v)?);
                "compaction_throughput"
            }
            "concurrent_compactors" => {
                d.concurrent_compactors =
                    Some(usize::try_from(as_u64(key, v)?).map_err(|_| bad(key, "too large"))?);
                "concurrent_compactors"
            }
            "file_cache_size" | "file_cache_size_in_mb" => {
                d.chunk_cache_mb = Some(parse_size(key, v, 1 << 20)? >> 20);
                "file_cache_size"
            }
            "allow_unsafe_aggressive_sstable_expiration" => {
                d.allow_unsafe_aggressive_sstable_expiration = as_bool(key, v)?;
                "allow_unsafe_aggressive_sstable_expiration"
            }
            other => {
                if let Some((_, why)) = NOT_IN_STRATA
                    .iter()
                    .find(|(k, _)| other == *k || other.starts_with(&format!("{k}_")))
                {
                    return Err(bad(other, format!("not a Strata setting: {why}")));
                }
                return Err(bad(
                    other,
                    "unknown key (docs/configuration.md lists every key Strata reads)",
                ));
            }
        })
    }
}

/// `value` for `key` checked by the parser of the flag that sets the same
/// thing, so the file and the command line share one range and one reason.
fn check_as_flag(key: &str, flag: &str, value: u64) -> Result<()> {
    use clap::Args;
    let cmd = DataDirArgs::augment_args(clap::Command::new("strata"));
    let raw = value.to_string();
    match cmd.try_get_matches_from(["strata", &format!("--{flag}"), &raw]) {
        Ok(_) => Ok(()),
        Err(e) => {
            let text = e.to_string();
            let line = text
                .lines()
                .next()
                .unwrap_or("")
                .trim_start_matches("error: ");
            Err(bad(key, format!("{line} (the range of --{flag})")))
        }
    }
}

impl ConfigFile {
    /// `e` with the file's name appended.
    fn located(&self, e: Error) -> Error {
        match e {
            Error::InvalidInput(m) => {
                Error::InvalidInput(format!("{m} (in {})", self.path.display()))
            }
            other => other,
        }
    }

    /// Checks the file's data-directory values against the flags' ranges.
    pub fn check_ranges(&self) -> Result<()> {
        let d = &self.data;
        let checks: [(&str, &str, Option<u64>); 8] = [
            (
                "commitlog_sync_period",
                "commitlog-sync-period-ms",
                d.commitlog_sync_period_ms,
            ),
            (
                "commitlog_sync_group_window",
                "commitlog-sync-group-window-ms",
                d.commitlog_sync_group_window_ms,
            ),
            (
                "commitlog_segment_size",
                "commitlog-segment-size-mb",
                d.commitlog_segment_size_mb,
            ),
            (
                "max_mutation_size",
                "max-mutation-size-mb",
                d.max_mutation_size_mb,
            ),
            ("max_disk_size", "max-disk-bytes", d.max_disk_bytes),
            ("disk_reserve", "disk-reserve-mb", d.disk_reserve_mb),
            (
                "compaction_throughput",
                "compaction-throughput-mb-per-sec",
                d.compaction_throughput_mb_per_sec,
            ),
            ("file_cache_size", "chunk-cache-mb", d.chunk_cache_mb),
        ];
        for (key, flag, value) in checks {
            if let Some(v) = value {
                check_as_flag(key, flag, v).map_err(|e| self.located(e))?;
            }
        }
        if let Some(n) = d.concurrent_compactors {
            check_as_flag("concurrent_compactors", "concurrent-compactors", n as u64)
                .map_err(|e| self.located(e))?;
        }
        Ok(())
    }
}

/// The data-directory settings in effect and where each came from
/// (contract 3). `flags` holds only what the command line gave; `resolved`
/// is the result of flags, file and defaults.
pub fn data_settings(
    data_dir: &Path,
    flags: &DataDirArgs,
    file: Option<&ConfigFile>,
    resolved: &crate::admin::CommitLogFlags,
) -> Vec<Setting> {
    let source = |name: &'static str, flag: &'static str, given: bool| {
        if given {
            Source::Flag(flag)
        } else if let Some(f) = file.filter(|f| f.set.contains(name)) {
            Source::File(f.path.clone())
        } else {
            Source::Default
        }
    };
    let mut out = Vec::new();
    let mut add = |name: &'static str, flag: &'static str, given: bool, value: String| {
        out.push(Setting {
            name,
            value,
            source: source(name, flag, given),
        })
    };
    let r = resolved;
    add(
        "data_file_directories",
        "--data-dir",
        flags.data_dir.is_some(),
        data_dir.display().to_string(),
    );
    add(
        "commitlog_sync",
        "--commitlog-sync",
        flags.commitlog_sync.is_some(),
        enum_name(r.commitlog_sync),
    );
    add(
        "commitlog_sync_period",
        "--commitlog-sync-period-ms",
        flags.commitlog_sync_period_ms.is_some(),
        format!("{}ms", r.commitlog_sync_period_ms),
    );
    add(
        "commitlog_sync_group_window",
        "--commitlog-sync-group-window-ms",
        flags.commitlog_sync_group_window_ms.is_some(),
        format!("{}ms", r.commitlog_sync_group_window_ms),
    );
    add(
        "commitlog_segment_size",
        "--commitlog-segment-size-mb",
        flags.commitlog_segment_size_mb.is_some(),
        format!("{}MiB", r.commitlog_segment_size_mb),
    );
    add(
        "max_mutation_size",
        "--max-mutation-size-mb",
        flags.max_mutation_size_mb.is_some(),
        format!("{}MiB", r.max_mutation_size_mb),
    );
    add(
        "commitlog_compression",
        "--commitlog-compression",
        flags.commitlog_compression.is_some(),
        enum_name(r.commitlog_compression),
    );
    add(
        "max_disk_size",
        "--max-disk-bytes",
        flags.max_disk_bytes.is_some(),
        r.max_disk_bytes
            .map_or_else(|| "unlimited".to_string(), |b| format!("{b}B")),
    );
    add(
        "disk_reserve",
        "--disk-reserve-mb",
        flags.disk_reserve_mb.is_some(),
        format!("{}MiB", r.disk_reserve_mb),
    );
    add(
        "compaction_throughput",
        "--compaction-throughput-mb-per-sec",
        flags.compaction_throughput_mb_per_sec.is_some(),
        if r.compaction_throughput_mb_per_sec == 0 {
            "unlimited".to_string()
        } else {
            format!("{}MiB/s", r.compaction_throughput_mb_per_sec)
        },
    );
    add(
        "concurrent_compactors",
        "--concurrent-compactors",
        flags.concurrent_compactors.is_some(),
        r.concurrent_compactors.to_string(),
    );
    add(
        "file_cache_size",
        "--chunk-cache-mb",
        flags.chunk_cache_mb.is_some(),
        format!("{}MiB", r.chunk_cache_mb),
    );
    add(
        "allow_unsafe_aggressive_sstable_expiration",
        "--allow-unsafe-aggressive-sstable-expiration",
        flags.allow_unsafe_aggressive_sstable_expiration,
        r.allow_unsafe_aggressive_sstable_expiration.to_string(),
    );
    add(
        "ignore_replay_errors",
        "--ignore-replay-errors",
        flags.ignore_replay_errors,
        r.ignore_replay_errors.to_string(),
    );
    out
}

/// A flag value's name as typed on the command line.
fn enum_name<T: clap::ValueEnum>(v: T) -> String {
    v.to_possible_value()
        .map_or_else(String::new, |p| p.get_name().to_string())
}

/// `strata config ...`.
#[derive(clap::Subcommand, Debug)]
pub enum ConfigCommand {
    /// Prints every setting in effect, its value and where it came from (a
    /// flag, the configuration file, or the default). Reads the file and the
    /// flags only: the data directory is not opened.
    Show {
        #[command(flatten)]
        output: crate::format::OutputArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
}

impl ConfigCommand {
    pub fn data_dir_args(&self) -> &DataDirArgs {
        match self {
            ConfigCommand::Show { db, .. } => db,
        }
    }
}

/// The server's settings in effect, from the file or the defaults
/// (`serve`'s own flags, `--listen` and `--port`, are not given here).
fn server_settings(file: Option<&ConfigFile>) -> Result<Vec<Setting>> {
    let server = file.map(|f| f.server.clone()).unwrap_or_default();
    let args = crate::serve_cmd::ServeArgs {
        file: server.clone(),
        ..crate::serve_cmd::ServeArgs::default()
    };
    let config = crate::serve_cmd::server_config(&args)?;
    let source = |key: &str| match file {
        Some(f) if f.set.iter().any(|s| key.starts_with(s)) => Source::File(f.path.clone()),
        _ => Source::Default,
    };
    let mut out = vec![Setting {
        name: "cluster_name",
        value: server
            .cluster_name
            .clone()
            .unwrap_or_else(|| crate::serve_cmd::DEFAULT_CLUSTER_NAME.to_string()),
        source: source("cluster_name"),
    }];
    for (name, value) in config.settings() {
        // settings() names are 'static cassandra.yaml names; keep them so.
        let Some(name) = SERVER_NAMES.iter().find(|n| **n == name) else {
            continue;
        };
        out.push(Setting {
            name,
            value,
            source: source(name),
        });
    }
    out.push(Setting {
        name: "authenticator",
        value: match server.authenticator.unwrap_or(Authenticator::AllowAll) {
            Authenticator::AllowAll => "AllowAllAuthenticator",
            Authenticator::Password => "PasswordAuthenticator",
        }
        .to_string(),
        source: source("authenticator"),
    });
    Ok(out)
}

/// The names [`strata_server::ServerConfig::settings`] uses.
const SERVER_NAMES: &[&str] = &[
    "rpc_address",
    "native_transport_port",
    "native_transport_max_frame_size",
    "native_transport_max_threads",
    "native_transport_max_concurrent_connections",
    "native_transport_max_concurrent_connections_per_ip",
    "max_requests_in_flight_per_connection",
    "native_transport_max_request_data_in_flight",
    "native_transport_max_request_data_in_flight_per_ip",
    "native_transport_idle_timeout",
    "native_transport_allow_older_protocols",
    "prepared_statements_cache_size",
    "slow_query_log_timeout",
    "client_encryption_options_enabled",
    "client_encryption_options_optional",
    "client_encryption_options_require_client_auth",
    "client_encryption_options_keystore",
    "client_encryption_options_truststore",
];

/// Runs a `config` subcommand on the resolved settings.
pub fn run(cmd: &ConfigCommand, resolved: &crate::datadir::Resolved) -> Result<()> {
    match cmd {
        ConfigCommand::Show { output, .. } => {
            let mut all = resolved.settings.clone();
            all.extend(server_settings(resolved.config.as_ref())?);
            let rows: Vec<Vec<String>> = all
                .iter()
                .map(|s| vec![s.name.to_string(), readable(&s.value), s.source.to_string()])
                .collect();
            crate::out!(
                "{}",
                crate::format::render(output.format(), &["setting", "value", "source"], &rows)
            );
            Ok(())
        }
    }
}

/// `16777216B` as `16MiB`: a byte count in the largest unit that divides it
/// exactly (so the value still reads back as the same setting); anything else
/// unchanged.
fn readable(value: &str) -> String {
    let Some(n) = value.strip_suffix('B').and_then(|d| d.parse::<u64>().ok()) else {
        return value.to_string();
    };
    for (shift, unit) in [(30, "GiB"), (20, "MiB"), (10, "KiB")] {
        if n != 0 && n % (1u64 << shift) == 0 {
            return format!("{}{unit}", n >> shift);
        }
    }
    value.to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn load(text: &str) -> Result<ConfigFile> {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join(CONFIG_FILE);
        std::fs::write(&p, text).unwrap();
        let c = ConfigFile::load(&p)?;
        c.check_ranges()?;
        Ok(c)
    }

    #[test]
    fn cassandra_yaml_keys_are_read() {
        // `num_tokens:` with no value is skipped, not refused.
        let c = load(
            "cluster_name: 'Prod'\nlisten_address: 127.0.0.2\nnative_transport_port: 9142\n\
             native_transport_max_frame_size: 32MiB\nnative_transport_idle_timeout: 30s\n\
             authenticator: PasswordAuthenticator\ncommitlog_sync: batch\n\
             commitlog_sync_period: 10000ms\nnum_tokens:\nslow_query_log_timeout: 200ms\n\
             file_cache_size: 256MiB\ncompaction_throughput: 16MiB/s\n\
             commitlog_compression:\n  class_name: LZ4Compressor\n\
             max_mutation_size_in_kb: 2048\n",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let s = &c.server;
        assert_eq!(s.cluster_name.as_deref(), Some("Prod"));
        assert_eq!(s.rpc_address, Some("127.0.0.2".parse().unwrap()));
        assert_eq!(s.native_transport_port, Some(9142));
        assert_eq!(s.max_frame_size_bytes, Some(32 << 20));
        assert_eq!(s.idle_timeout_ms, Some(30_000));
        assert_eq!(s.slow_query_log_timeout_ms, Some(200));
        assert_eq!(s.authenticator, Some(Authenticator::Password));
        let d = &c.data;
        assert_eq!(d.commitlog_sync, Some(SyncModeArg::Batch));
        assert_eq!(d.commitlog_sync_period_ms, Some(10_000));
        assert_eq!(d.chunk_cache_mb, Some(256));
        assert_eq!(d.compaction_throughput_mb_per_sec, Some(16));
        assert_eq!(d.commitlog_compression, Some(LogCompressionArg::Lz4));
        assert_eq!(d.max_mutation_size_mb, Some(2));
        assert!(c.set.contains("rpc_address"), "from listen_address");
        assert!(!c.set.contains("num_tokens"));
    }

    #[test]
    fn bad_keys_and_values_name_the_key_and_the_file() {
        let e = load("seed_provider: x\n").unwrap_err().to_string();
        assert!(e.contains("seed_provider: not a Strata setting"), "{e}");
        assert!(e.contains(CONFIG_FILE), "{e}");
        let e = load("no_such_thing: 1\n").unwrap_err().to_string();
        assert!(e.contains("no_such_thing: unknown key"), "{e}");
        let e = load("key_cache_size_in_mb: 100\n").unwrap_err().to_string();
        assert!(e.contains("no key cache"), "{e}");
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
        let e = load("data_file_directories: [a, b]\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("2 directories"), "{e}");
    }

    #[test]
    fn values_are_held_to_the_flags_ranges() {
        let e = load("concurrent_compactors: 100\n")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("concurrent_compactors") && e.contains("0..=64"),
            "{e}"
        );
        assert!(!e.contains("invalid input: invalid input"), "{e}");
        let e = load("commitlog_sync_period: 0ms\n")
            .unwrap_err()
            .to_string();
        assert!(e.contains("1..=3600000"), "{e}");
        load("concurrent_compactors: 64\ncommitlog_sync_period: 1ms\n").unwrap();
    }

    #[test]
    fn byte_counts_read_in_the_largest_exact_unit() {
        assert_eq!(readable("16777216B"), "16MiB");
        assert_eq!(readable("3072B"), "3KiB");
        assert_eq!(readable("1073741824B"), "1GiB");
        assert_eq!(readable("1000B"), "1000B");
        assert_eq!(readable("0B"), "0B");
        assert_eq!(readable("periodic"), "periodic");
    }
}
