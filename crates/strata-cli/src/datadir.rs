//! The data-directory options (`--data-dir`, the commit-log and disk flags) and
//! where a command line may give them.
//!
//! Only commands that open a data directory take these options, so only their
//! `--help` lists them: `strata model --help` does not mention `--data-dir`.
//! Each such command flattens [`DataDirArgs`] into its own arguments, and the
//! top level flattens it too, so both `strata --data-dir D stress write` (the
//! README's form, option before the subcommand) and `strata stress write
//! --data-dir D --commitlog-sync batch` work. `global = true` would have done
//! that in one line, but clap then copies the options into every subcommand's
//! help, which is what this module exists to stop.
//!
//! Contract:
//! 1. [`resolve`] is the one place the two positions meet: an option given
//!    before the subcommand and again after it is refused (which would win is
//!    not obvious), never silently overridden.
//! 2. A data-directory option given before a command that never opens a data
//!    directory (`strata --data-dir D model`) is an error naming the option and
//!    the command, not ignored. Before a command family that holds one
//!    (`sstable`: `import` opens one, `metadata` does not) it is accepted for the
//!    family, as scripts write `strata --data-dir D sstable ...` uniformly, and a
//!    subcommand that does not use it gets a warning naming it: never silence.
//! 3. Defaults are applied here, once, after merging; the fields stay `Option`
//!    so that "not given" and "given the default" differ (contract 1 needs it).
//! 4. Between the flags and the defaults sits the configuration file
//!    (`--config`, else `strata.yaml` in the data directory: config.rs): a
//!    flag wins over it, it wins over a default, and [`Resolved::settings`]
//!    says which gave each value.

use crate::admin::{CommitLogFlags, LogCompressionArg, SyncModeArg};
use crate::bounds::range;
use crate::config::{self, ConfigFile, Setting};
use clap::Args;
use std::path::PathBuf;
use strata::commitlog::CommitLogOptions;
use strata::{Error, Result};

pub(crate) const DEFAULT_DATA_DIR: &str = "strata-data";
const DEFAULT_SYNC_PERIOD_MS: u64 = 10_000;
const DEFAULT_GROUP_WINDOW_MS: u64 = 10;
const DEFAULT_SEGMENT_SIZE_MB: u64 = 32;
const DEFAULT_DISK_RESERVE_MB: u64 = 64;
const DEFAULT_COMPACTION_THROUGHPUT_MB_PER_SEC: u64 = 64;
const DEFAULT_CONCURRENT_COMPACTORS: usize = 1;
const DEFAULT_CHUNK_CACHE_MB: u64 = (strata::db::DEFAULT_CHUNK_CACHE_BYTES >> 20) as u64;

/// Options of commands that open a data directory (see docs/DURABILITY.md).
#[derive(Args, Debug, Clone, Default)]
pub struct DataDirArgs {
    /// Data directory, created if missing [default: strata-data].
    #[arg(long)]
    pub data_dir: Option<PathBuf>,
    /// Configuration file, with cassandra.yaml's key names (docs/configuration.md)
    /// [default: strata.yaml in the data directory, when there is one]. Flags
    /// win over it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// When writes are fsynced and acknowledged (Cassandra's commitlog_sync)
    /// [default: periodic].
    #[arg(long = "commitlog-sync", value_enum)]
    pub commitlog_sync: Option<SyncModeArg>,
    /// fsync period of `periodic` mode (commitlog_sync_period), milliseconds,
    /// 1 to 3600000 [default: 10000].
    #[arg(long, value_parser = range(1u64, 3_600_000,
        "the period is how much acknowledged data a power loss may take: at most an hour"))]
    pub commitlog_sync_period_ms: Option<u64>,
    /// Shortest gap between fsyncs in `group` mode (commitlog_sync_group_window),
    /// ms, 0 to 60000 [default: 10].
    #[arg(long, value_parser = range(0u64, 60_000,
        "writers wait up to one window for their fsync: at most a minute"))]
    pub commitlog_sync_group_window_ms: Option<u64>,
    /// Segment size (commitlog_segment_size), MiB, 1 to 1024 [default: 32]. A
    /// record larger than a segment gets a segment of its own.
    #[arg(long, value_parser = range(1u64, 1024,
        "replay reads a segment whole: at most 1 GiB, as Cassandra's commitlog_segment_size"))]
    pub commitlog_segment_size_mb: Option<u64>,
    /// Largest mutation accepted (Cassandra's max_mutation_size), MiB, 1 to 1024;
    /// a larger one is refused with one line and nothing written [default: 128].
    #[arg(long, value_parser = range(1u64, 1024,
        "a mutation is held whole in memory and in one commit-log record: at most 1 GiB"))]
    pub max_mutation_size_mb: Option<u64>,
    /// Skip corrupt commit-log records at replay instead of refusing to open
    /// (Cassandra's -Dcassandra.commitlog.ignorereplayerrors=true).
    #[arg(long)]
    pub ignore_replay_errors: bool,
    /// Compress each commit-log record with LZ4 when that saves bytes
    /// (Cassandra's commitlog_compression); replay reads either [default: none].
    #[arg(long = "commitlog-compression", value_enum)]
    pub commitlog_compression: Option<LogCompressionArg>,
    /// Data-directory size limit, bytes: flushes and compactions that would pass
    /// it are refused and counted (Strata's max_disk_bytes; unset = free space
    /// only), 0 to 2^60.
    #[arg(long, value_parser = range(0u64, 1 << 60,
        "1 EiB is past any file system; leave it unset for no limit"))]
    pub max_disk_bytes: Option<u64>,
    /// Free space kept in reserve on the file system: a flush or compaction that
    /// would leave less is refused (Strata's disk_reserve_bytes), MiB, 0 to
    /// 1048576 [default: 64].
    #[arg(long, value_parser = range(0u64, 1 << 20,
        "a reserve past 1 TiB refuses every flush on any disk this runs on"))]
    pub disk_reserve_mb: Option<u64>,
    /// Compaction write throughput limit, MiB/s, 0 = unlimited (Cassandra's
    /// compaction_throughput_mb_per_sec), 0 to 1048576 [default: 64].
    #[arg(long, value_parser = range(0u64, 1 << 20,
        "1 TiB/s is past any disk; 0 is unlimited"))]
    pub compaction_throughput_mb_per_sec: Option<u64>,
    /// Background compaction threads (Cassandra's concurrent_compactors), 0 to 64
    /// [default: 1].
    #[arg(long, value_parser = range(0usize, strata::db::MAX_CONCURRENT_COMPACTORS,
        "one thread each; a machine gains nothing past its core count"))]
    pub concurrent_compactors: Option<usize>,
    /// Decompressed-chunk cache for reads, MiB, 0 disables it (Cassandra's
    /// file_cache_size), 0 to 1048576 [default: 128].
    #[arg(long, value_parser = range(0u64, 1 << 20,
        "the cache is memory: 1 TiB is past any machine this runs on"))]
    pub chunk_cache_mb: Option<u64>,
    /// Let tables use TWCS's unsafe_aggressive_sstable_expiration (dropping
    /// expired sstables without the overlap check, which can resurrect deleted
    /// data); without it CREATE and ALTER refuse that option (Cassandra's
    /// -Dcassandra.allow_unsafe_aggressive_sstable_expiration=true).
    #[arg(long)]
    pub allow_unsafe_aggressive_sstable_expiration: bool,
}

impl DataDirArgs {
    /// Each option from `self`, else from `other`.
    fn or(&self, other: &DataDirArgs) -> DataDirArgs {
        DataDirArgs {
            data_dir: self.data_dir.clone().or_else(|| other.data_dir.clone()),
            config: self.config.clone().or_else(|| other.config.clone()),
            commitlog_sync: self.commitlog_sync.or(other.commitlog_sync),
            commitlog_sync_period_ms: self
                .commitlog_sync_period_ms
                .or(other.commitlog_sync_period_ms),
            commitlog_sync_group_window_ms: self
                .commitlog_sync_group_window_ms
                .or(other.commitlog_sync_group_window_ms),
            commitlog_segment_size_mb: self
                .commitlog_segment_size_mb
                .or(other.commitlog_segment_size_mb),
            max_mutation_size_mb: self.max_mutation_size_mb.or(other.max_mutation_size_mb),
            ignore_replay_errors: self.ignore_replay_errors || other.ignore_replay_errors,
            commitlog_compression: self.commitlog_compression.or(other.commitlog_compression),
            max_disk_bytes: self.max_disk_bytes.or(other.max_disk_bytes),
            disk_reserve_mb: self.disk_reserve_mb.or(other.disk_reserve_mb),
            compaction_throughput_mb_per_sec: self
                .compaction_throughput_mb_per_sec
                .or(other.compaction_throughput_mb_per_sec),
            concurrent_compactors: self.concurrent_compactors.or(other.concurrent_compactors),
            chunk_cache_mb: self.chunk_cache_mb.or(other.chunk_cache_mb),
            allow_unsafe_aggressive_sstable_expiration: self
                .allow_unsafe_aggressive_sstable_expiration
                || other.allow_unsafe_aggressive_sstable_expiration,
        }
    }

    /// The long names of the options given, for error messages.
    fn given(&self) -> Vec<&'static str> {
        let mut v = Vec::new();
        let mut note = |set: bool, name: &'static str| {
            if set {
                v.push(name);
            }
        };
        note(self.data_dir.is_some(), "--data-dir");
        note(self.config.is_some(), "--config");
        note(self.commitlog_sync.is_some(), "--commitlog-sync");
        note(
            self.commitlog_sync_period_ms.is_some(),
            "--commitlog-sync-period-ms",
        );
        note(
            self.commitlog_sync_group_window_ms.is_some(),
            "--commitlog-sync-group-window-ms",
        );
        note(
            self.commitlog_segment_size_mb.is_some(),
            "--commitlog-segment-size-mb",
        );
        note(
            self.max_mutation_size_mb.is_some(),
            "--max-mutation-size-mb",
        );
        note(self.ignore_replay_errors, "--ignore-replay-errors");
        note(
            self.commitlog_compression.is_some(),
            "--commitlog-compression",
        );
        note(self.max_disk_bytes.is_some(), "--max-disk-bytes");
        note(self.disk_reserve_mb.is_some(), "--disk-reserve-mb");
        note(
            self.compaction_throughput_mb_per_sec.is_some(),
            "--compaction-throughput-mb-per-sec",
        );
        note(
            self.concurrent_compactors.is_some(),
            "--concurrent-compactors",
        );
        note(self.chunk_cache_mb.is_some(), "--chunk-cache-mb");
        note(
            self.allow_unsafe_aggressive_sstable_expiration,
            "--allow-unsafe-aggressive-sstable-expiration",
        );
        v
    }
}

/// Whether a parsed command opens a data directory.
pub enum DataDirUse<'a> {
    /// It does, with these options given after the subcommand.
    Opens(&'a DataDirArgs),
    /// It never does (`model`, `simulate`, `token`, `bench`).
    Never,
    /// It would, but this invocation connects to a server instead (`cql
    /// HOST`): options given before or after are refused.
    Connects(&'a DataDirArgs),
    /// Its family does, this subcommand (named, e.g. `sstable metadata`) does not.
    NotThisSubcommand(&'static str),
}

/// A command's data directory and flags, resolved.
#[derive(Debug)]
pub struct Resolved {
    /// `None` for a command that opens no data directory.
    pub data_dir: Option<(PathBuf, CommitLogFlags)>,
    /// Options given that the command does not use (contract 2), for stderr.
    pub warnings: Vec<String>,
    /// The configuration file read, if any (contract 4).
    pub config: Option<ConfigFile>,
    /// Every data-directory setting in effect and its source.
    pub settings: Vec<Setting>,
}

impl Resolved {
    fn none(warnings: Vec<String>) -> Resolved {
        Resolved {
            data_dir: None,
            warnings,
            config: None,
            settings: Vec::new(),
        }
    }
}

/// Merges the options given before the subcommand (`before`) with those of the
/// command itself and applies the file and the defaults (contracts 1-4).
pub fn resolve(before: &DataDirArgs, use_: DataDirUse<'_>, command: &str) -> Result<Resolved> {
    let after = match use_ {
        DataDirUse::Opens(after) => after,
        DataDirUse::Never => {
            return match before.given().first() {
                None => Ok(Resolved::none(Vec::new())),
                Some(name) => Err(Error::InvalidInput(format!(
                    "`strata {command}` opens no data directory: {name} does not apply to it"
                ))),
            }
        }
        DataDirUse::Connects(after) => {
            let mut given = before.given();
            given.extend(after.given());
            return match given.first() {
                None => Ok(Resolved::none(Vec::new())),
                Some(name) => Err(Error::InvalidInput(format!(
                    "`strata {command} HOST` connects to a server and opens no data directory: {name} does not apply to it"
                ))),
            };
        }
        DataDirUse::NotThisSubcommand(sub) => {
            return Ok(Resolved::none(
                before
                    .given()
                    .iter()
                    .map(|name| {
                        format!(
                            "{name} is not used by `strata {sub}`, which opens no data directory"
                        )
                    })
                    .collect(),
            ))
        }
    };
    let twice: Vec<&str> = before
        .given()
        .into_iter()
        .filter(|n| after.given().contains(n))
        .collect();
    if let Some(name) = twice.first() {
        return Err(Error::InvalidInput(format!(
            "{name} given both before and after `{command}`: give it once"
        )));
    }
    let flags = after.or(before);
    // The file: --config, else strata.yaml in the data directory the flags
    // (or the default) name; a --config file may name the directory itself.
    let default_dir = PathBuf::from(DEFAULT_DATA_DIR);
    let config = match config::locate(
        flags.config.as_deref(),
        flags.data_dir.as_deref().unwrap_or(&default_dir),
    ) {
        Some(path) => {
            let file = ConfigFile::load(&path)?;
            file.check_ranges()?;
            Some(file)
        }
        None => None,
    };
    let given = match &config {
        Some(file) => flags.or(&file.data),
        None => flags.clone(),
    };
    let data_dir = given.data_dir.clone().unwrap_or(default_dir);
    if let (Some(file), None) = (&config, &flags.config) {
        // Found in the data directory: it cannot move the node elsewhere.
        if let Some(named) = &file.data.data_dir {
            if named != &data_dir {
                return Err(Error::InvalidInput(format!(
                    "configuration {}: data_file_directories names {}, but the file is in {}; \
                     give the file with --config to use another directory",
                    file.path.display(),
                    named.display(),
                    data_dir.display()
                )));
            }
        }
    }
    let resolved = CommitLogFlags {
        commitlog_sync: given.commitlog_sync.unwrap_or(SyncModeArg::Periodic),
        commitlog_sync_period_ms: given
            .commitlog_sync_period_ms
            .unwrap_or(DEFAULT_SYNC_PERIOD_MS),
        commitlog_sync_group_window_ms: given
            .commitlog_sync_group_window_ms
            .unwrap_or(DEFAULT_GROUP_WINDOW_MS),
        commitlog_segment_size_mb: given
            .commitlog_segment_size_mb
            .unwrap_or(DEFAULT_SEGMENT_SIZE_MB),
        max_mutation_size_mb: given
            .max_mutation_size_mb
            .unwrap_or(CommitLogOptions::DEFAULT_MAX_MUTATION_SIZE_BYTES >> 20),
        ignore_replay_errors: given.ignore_replay_errors,
        commitlog_compression: given
            .commitlog_compression
            .unwrap_or(LogCompressionArg::None),
        max_disk_bytes: given.max_disk_bytes,
        disk_reserve_mb: given.disk_reserve_mb.unwrap_or(DEFAULT_DISK_RESERVE_MB),
        compaction_throughput_mb_per_sec: given
            .compaction_throughput_mb_per_sec
            .unwrap_or(DEFAULT_COMPACTION_THROUGHPUT_MB_PER_SEC),
        concurrent_compactors: given
            .concurrent_compactors
            .unwrap_or(DEFAULT_CONCURRENT_COMPACTORS),
        chunk_cache_mb: given.chunk_cache_mb.unwrap_or(DEFAULT_CHUNK_CACHE_MB),
        allow_unsafe_aggressive_sstable_expiration: given
            .allow_unsafe_aggressive_sstable_expiration,
    };
    let settings = config::data_settings(&data_dir, &flags, config.as_ref(), &resolved);
    Ok(Resolved {
        data_dir: Some((data_dir, resolved)),
        warnings: Vec::new(),
        config,
        settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_dir(d: &str) -> DataDirArgs {
        DataDirArgs {
            data_dir: Some(PathBuf::from(d)),
            ..DataDirArgs::default()
        }
    }

    #[test]
    fn either_position_works_and_defaults_fill_the_rest() {
        let none = DataDirArgs::default();
        for (before, after) in [(with_dir("x"), none.clone()), (none.clone(), with_dir("x"))] {
            let r = resolve(&before, DataDirUse::Opens(&after), "stress").unwrap();
            let (dir, flags) = r.data_dir.unwrap();
            assert_eq!(dir, PathBuf::from("x"));
            assert_eq!(flags.commitlog_sync, SyncModeArg::Periodic);
            assert_eq!(flags.commitlog_sync_period_ms, 10_000);
            assert_eq!(flags.concurrent_compactors, 1);
            assert_eq!(flags.disk_reserve_mb, 64);
        }
        let (dir, _) = resolve(&none, DataDirUse::Opens(&none), "flush")
            .unwrap()
            .data_dir
            .unwrap();
        assert_eq!(dir, PathBuf::from("strata-data"));
    }

    #[test]
    fn an_option_given_twice_is_refused_by_name() {
        let err = resolve(&with_dir("a"), DataDirUse::Opens(&with_dir("b")), "stress")
            .unwrap_err()
            .to_string();
        assert!(err.contains("--data-dir given both"), "{err}");
    }

    #[test]
    fn a_command_without_a_data_directory_refuses_its_options() {
        assert!(resolve(&DataDirArgs::default(), DataDirUse::Never, "model")
            .unwrap()
            .data_dir
            .is_none());
        let sync = DataDirArgs {
            commitlog_sync: Some(SyncModeArg::Batch),
            ..DataDirArgs::default()
        };
        let err = resolve(&sync, DataDirUse::Never, "model")
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("`strata model` opens no data directory: --commitlog-sync"),
            "{err}"
        );
    }

    #[test]
    fn a_shell_connecting_to_a_server_refuses_options_on_either_side() {
        let none = DataDirArgs::default();
        assert!(resolve(&none, DataDirUse::Connects(&none), "cql")
            .unwrap()
            .data_dir
            .is_none());
        for (before, after) in [(with_dir("x"), none.clone()), (none.clone(), with_dir("x"))] {
            let err = resolve(&before, DataDirUse::Connects(&after), "cql")
                .unwrap_err()
                .to_string();
            assert!(
                err.contains("`strata cql HOST` connects to a server and opens no data directory: --data-dir"),
                "{err}"
            );
        }
    }

    #[test]
    fn a_family_member_without_a_data_directory_warns_about_unused_options() {
        let r = resolve(
            &with_dir("d"),
            DataDirUse::NotThisSubcommand("sstable metadata"),
            "sstable",
        )
        .unwrap();
        assert!(r.data_dir.is_none());
        assert_eq!(
            r.warnings,
            vec!["--data-dir is not used by `strata sstable metadata`, which opens no data directory"]
        );
    }
}
