//! Operator commands over a data directory: `verify`, `scrub`, `snapshot`,
//! `listsnapshots`, `clearsnapshot`, `commitlog dump|stats`, and the database
//! options every command that opens a data directory honours (parsed and
//! resolved in datadir.rs).
//!
//! The work is done by `strata::maintenance` and `strata::commitlog`; this file
//! parses arguments, picks tables and prints (text as nodetool prints it, or JSON
//! with `--json`).
//!
//! Contract:
//! 1. `main` calls [`set_commitlog_flags`] once, before a command that opens a
//!    data directory runs;
//!    [`db_options`] then builds every database's options from those flags.
//! 2. `verify` exits non-zero when it finds corruption (after printing every
//!    problem with its file and offset), so scripts can gate on it.
//! 3. `commitlog dump` reads the segment without opening the database (no replay,
//!    no repair): it is safe on a directory another process has open.

use clap::{Args, Subcommand, ValueEnum};
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;
use std::time::Duration;
use strata::clock::SystemClock;
use strata::commitlog::{self, CommitLogOptions, SyncMode};
use strata::db::{Database, DbOptions};
use strata::fs::Fs;
use strata::maintenance::{self, ScrubOptions};
use strata::{Error, Result};
use strata_bench::commitlog::SyncKind;

use crate::bounds::range;
use crate::datadir::{DataDirArgs, DataDirUse};
use crate::format::OutputArgs;
use crate::remote::{open_admin_db, open_admin_db_read_only, AdminDb};
use crate::select_tables;

// ---------------------------------------------------------------------------
// Data-directory flags

/// `--commitlog-sync` values (Cassandra's `commitlog_sync`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum SyncModeArg {
    /// Acknowledge at once, fsync every --commitlog-sync-period-ms.
    Periodic,
    /// Acknowledge after the fsync covering the write; writers share fsyncs.
    Batch,
    /// As batch, at most one fsync per --commitlog-sync-group-window-ms.
    Group,
}

/// `--commitlog-compression` values (Cassandra's `commitlog_compression`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum LogCompressionArg {
    /// Records as encoded.
    None,
    /// Each record LZ4-compressed on its own when that saves bytes.
    Lz4,
}

impl LogCompressionArg {
    pub fn to_library(self) -> strata::commitlog::LogCompression {
        match self {
            LogCompressionArg::None => strata::commitlog::LogCompression::None,
            LogCompressionArg::Lz4 => strata::commitlog::LogCompression::Lz4,
        }
    }
}

impl SyncModeArg {
    /// The library's name for the same mode (the mapping is the only logic here).
    pub fn kind(self) -> SyncKind {
        match self {
            SyncModeArg::Periodic => SyncKind::Periodic,
            SyncModeArg::Batch => SyncKind::Batch,
            SyncModeArg::Group => SyncKind::Group,
        }
    }

    pub fn to_mode(self, period: Duration, window: Duration) -> SyncMode {
        self.kind().to_mode(period, window)
    }
}

/// The data-directory flags, resolved (defaults applied) by `datadir::resolve`
/// from wherever the command line gave them; meanings in `datadir::DataDirArgs`.
#[derive(Debug, Clone)]
pub struct CommitLogFlags {
    pub commitlog_sync: SyncModeArg,
    pub commitlog_sync_period_ms: u64,
    pub commitlog_sync_group_window_ms: u64,
    pub commitlog_segment_size_mb: u64,
    pub max_mutation_size_mb: u64,
    pub ignore_replay_errors: bool,
    pub commitlog_compression: LogCompressionArg,
    pub max_disk_bytes: Option<u64>,
    pub disk_reserve_mb: u64,
    pub compaction_throughput_mb_per_sec: u64,
    pub concurrent_compactors: usize,
    pub chunk_cache_mb: u64,
    pub allow_unsafe_aggressive_sstable_expiration: bool,
}

impl CommitLogFlags {
    pub fn options(&self) -> CommitLogOptions {
        CommitLogOptions {
            sync: self.commitlog_sync.to_mode(
                Duration::from_millis(self.commitlog_sync_period_ms),
                Duration::from_millis(self.commitlog_sync_group_window_ms),
            ),
            segment_size_bytes: self.commitlog_segment_size_mb.saturating_mul(1024 * 1024),
            max_mutation_size_bytes: self.max_mutation_size_mb.saturating_mul(1024 * 1024),
            ignore_replay_errors: self.ignore_replay_errors,
            compression: self.commitlog_compression.to_library(),
        }
    }
}

static COMMITLOG_OPTIONS: OnceLock<CommitLogOptions> = OnceLock::new();
/// (max_disk_bytes, compaction throughput MiB/s, concurrent compactors, reserve
/// bytes, chunk cache bytes).
static ENGINE_FLAGS: OnceLock<(Option<u64>, u64, usize, u64, usize)> = OnceLock::new();
/// The command line, recorded in the data directory's lock for whoever is refused.
static PURPOSE: OnceLock<String> = OnceLock::new();
static ALLOW_UNSAFE_EXPIRATION: OnceLock<bool> = OnceLock::new();

/// Records the parsed flags (contract 1). A second call is ignored.
pub fn set_commitlog_flags(flags: &CommitLogFlags) {
    let _ = COMMITLOG_OPTIONS.set(flags.options());
    let _ = ENGINE_FLAGS.set((
        flags.max_disk_bytes,
        flags.compaction_throughput_mb_per_sec,
        flags.concurrent_compactors,
        flags.disk_reserve_mb.saturating_mul(1024 * 1024),
        usize::try_from(flags.chunk_cache_mb.saturating_mul(1024 * 1024)).unwrap_or(usize::MAX),
    ));
    let _ = PURPOSE.set(std::env::args().collect::<Vec<_>>().join(" "));
    let _ = ALLOW_UNSAFE_EXPIRATION.set(flags.allow_unsafe_aggressive_sstable_expiration);
}

/// Options for opening a database from the command line: the system clock and
/// the commit log the data-directory flags describe (validated at open, with errors that
/// name the option).
pub fn db_options() -> DbOptions {
    let mut opts = DbOptions::new(SystemClock::new());
    opts.commitlog = Some(COMMITLOG_OPTIONS.get().cloned().unwrap_or_default());
    if let Some(purpose) = PURPOSE.get() {
        opts.purpose = purpose.clone();
    }
    if let Some(&(max_disk, throughput, compactors, reserve, cache)) = ENGINE_FLAGS.get() {
        opts.chunk_cache_bytes = cache;
        opts.table.max_disk_bytes = max_disk;
        opts.table.disk_reserve_bytes = reserve;
        opts.compaction_throughput_mb_per_sec = throughput;
        opts.concurrent_compactors = compactors;
    }
    opts.table.allow_unsafe_aggressive_sstable_expiration =
        ALLOW_UNSAFE_EXPIRATION.get().copied().unwrap_or(false);
    opts
}

// ---------------------------------------------------------------------------
// Shared helpers

/// Bytes as nodetool prints them (binary units, two decimals).
pub fn human_bytes(bytes: u64) -> String {
    strata::tablestats::human_bytes(bytes)
}

fn with_db<T>(data_dir: &Path, f: impl FnOnce(&Database) -> Result<T>) -> Result<T> {
    finish_with(open_admin_db(data_dir)?, f)
}

/// As [`with_db`], for commands that only look (no lock, nothing written).
fn with_db_read_only<T>(data_dir: &Path, f: impl FnOnce(&Database) -> Result<T>) -> Result<T> {
    finish_with(open_admin_db_read_only(data_dir)?, f)
}

fn finish_with<T>(db: AdminDb, f: impl FnOnce(&Database) -> Result<T>) -> Result<T> {
    let r = f(&db);
    let closed = db.close();
    let value = r?;
    closed?;
    Ok(value)
}

// ---------------------------------------------------------------------------
// verify

#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    #[command(flatten)]
    pub out: OutputArgs,
}

#[derive(Serialize)]
struct VerifyOutput {
    clean: bool,
    problems: usize,
    /// Missing or unreadable commit-log segments, if any.
    commitlog: Option<String>,
    tables: Vec<maintenance::VerifyReport>,
}

/// `strata verify`: every checksum of every live sstable (contract 2).
pub fn verify(data_dir: &Path, args: VerifyArgs) -> Result<()> {
    let (reports, log_problem) = with_db_read_only(data_dir, |db| {
        let reports = select_tables(db, args.target.as_deref())?
            .iter()
            .map(|t| maintenance::verify(t))
            .collect::<Vec<_>>();
        Ok((reports, db.commitlog_problem().map(str::to_string)))
    })?;
    let problems: usize = reports.iter().map(|r| r.problems.len()).sum::<usize>()
        + usize::from(log_problem.is_some());
    let report = VerifyOutput {
        clean: problems == 0,
        problems,
        commitlog: log_problem.clone(),
        tables: reports.clone(),
    };
    if !args.out.print_report(&report)? {
        for r in &reports {
            let verdict = if r.is_clean() { "OK" } else { "CORRUPT" };
            outln!(
                "{}.{}: {} sstables, {} checked: {verdict}",
                r.keyspace,
                r.table,
                r.sstables_checked,
                human_bytes(r.bytes_checked)
            );
            for p in &r.problems {
                match p.offset {
                    Some(off) => outln!("  {} @ offset {off}: {}", p.path.display(), p.reason),
                    None => outln!("  {}: {}", p.path.display(), p.reason),
                }
            }
        }
    }
    if let Some(problem) = &log_problem {
        if args.out.is_table() {
            outln!("commit log: CORRUPT: {problem}");
        }
    }
    match reports.iter().flat_map(|r| &r.problems).next() {
        None if log_problem.is_none() => Ok(()),
        None => Err(Error::corruption(
            data_dir.join("commitlog"),
            0,
            format!(
                "verify found the commit log damaged: {}",
                log_problem.unwrap_or_default()
            ),
        )),
        Some(first) => Err(Error::corruption(
            &first.path,
            first.offset.unwrap_or(0),
            format!(
                "verify found {problems} damaged chunk(s) or block(s); run `strata scrub` to rewrite without them"
            ),
        )),
    }
}

// ---------------------------------------------------------------------------
// scrub

#[derive(Args, Debug)]
pub struct ScrubArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    /// Snapshot the sstables before rewriting them (keeps every original, and
    /// so doubles the space the scrub needs). Off by default.
    #[arg(long, conflicts_with = "no_snapshot")]
    pub snapshot: bool,
    /// Take no snapshot: the default; accepted as nodetool spells it.
    #[arg(long)]
    pub no_snapshot: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `strata scrub`: rewrites every sstable keeping every readable partition.
pub fn scrub(data_dir: &Path, args: ScrubArgs) -> Result<()> {
    let opts = ScrubOptions {
        snapshot: args.snapshot,
    };
    let reports = with_db(data_dir, |db| {
        select_tables(db, args.target.as_deref())?
            .iter()
            .map(|t| maintenance::scrub(t, opts))
            .collect::<Result<Vec<_>>>()
    })?;
    if args.out.print_report(&reports)? {
        return Ok(());
    }
    for r in &reports {
        for w in &r.warnings {
            errln!("warning: {}.{}: {w}", r.keyspace, r.table);
        }
        outln!(
            "{}.{}: {} sstables scrubbed, {} partitions kept, {} dropped, {} -> {}{}",
            r.keyspace,
            r.table,
            r.sstables.len(),
            r.partitions_kept,
            r.partitions_dropped,
            human_bytes(r.bytes_in),
            human_bytes(r.bytes_out),
            r.snapshot
                .as_ref()
                .map(|s| format!(" (originals in snapshot {s})"))
                .unwrap_or_default()
        );
        for s in &r.sstables {
            if let Some(why) = &s.skipped {
                outln!("  {} skipped: {why}", s.path.display());
            }
            for b in &s.bad_regions {
                outln!(
                    "  dropped unreadable partitions in {} @ offset {}: {}{}",
                    b.path.display(),
                    b.offset,
                    b.reason,
                    b.after_key_hex
                        .as_ref()
                        .map(|k| format!(" (after key 0x{k})"))
                        .unwrap_or_default()
                );
            }
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// snapshots

#[derive(Args, Debug)]
pub struct SnapshotArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    /// Snapshot name (default: the current time in milliseconds, as nodetool).
    #[arg(short = 't', long = "tag")]
    pub name: Option<String>,
    /// Do not flush memtables first.
    #[arg(long)]
    pub skip_flush: bool,
}

/// `strata snapshot`: flushes (unless `--skip-flush`), then hard-links every live
/// sstable of the selected tables.
pub fn snapshot(data_dir: &Path, args: SnapshotArgs) -> Result<()> {
    with_db(data_dir, |db| {
        let name = match &args.name {
            Some(n) => n.clone(),
            None => db.clock().now_micros().div_euclid(1000).to_string(),
        };
        let tables = select_tables(db, args.target.as_deref())?;
        outln!(
            "Requested creating snapshot(s) for [{}] with snapshot name [{name}]",
            args.target.as_deref().unwrap_or("all keyspaces")
        );
        for t in &tables {
            if !args.skip_flush {
                t.flush()?;
            }
            maintenance::snapshot(t, &name)?;
        }
        outln!("Snapshot directory: {name}");
        Ok(())
    })
}

#[derive(Args, Debug)]
pub struct ListSnapshotsArgs {
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `strata listsnapshots`, laid out as nodetool's.
pub fn list_snapshots(data_dir: &Path, args: ListSnapshotsArgs) -> Result<()> {
    let snaps = with_db_read_only(data_dir, |db| {
        let mut all = Vec::new();
        for t in db.tables() {
            all.extend(maintenance::list_snapshots(&t)?);
        }
        Ok(all)
    })?;
    if !args.out.is_table() {
        // The records as stored, with their time also as ISO-8601 UTC, as
        // the table prints it.
        let mut list = Vec::with_capacity(snaps.len());
        for s in &snaps {
            let mut v =
                serde_json::to_value(s).map_err(|e| Error::InvalidInput(format!("JSON: {e}")))?;
            if let Some(o) = v.as_object_mut() {
                o.insert(
                    "created_at".into(),
                    s.created_at_micros
                        .map(strata::types::iso8601_micros)
                        .into(),
                );
            }
            list.push(v);
        }
        args.out.print_report(&list)?;
        return Ok(());
    }
    outln!("Snapshot Details: ");
    if snaps.is_empty() {
        outln!("There are no snapshots");
        return Ok(());
    }
    outln!(
        "{:<28} {:<16} {:<20} {:>12} {:>12} {:>20}",
        "Snapshot name",
        "Keyspace name",
        "Column family name",
        "True size",
        "Size on disk",
        "Creation time (UTC)"
    );
    for s in &snaps {
        outln!(
            "{:<28} {:<16} {:<20} {:>12} {:>12} {:>20}",
            s.name,
            s.keyspace,
            s.table,
            human_bytes(s.true_size_bytes),
            human_bytes(s.size_on_disk_bytes),
            s.created_at_micros
                .map(strata::types::iso8601_seconds_of_micros)
                .unwrap_or_else(|| "?".into())
        );
    }
    let total: u64 = snaps.iter().map(|s| s.true_size_bytes).sum();
    outln!();
    outln!("Total TrueDiskSpaceUsed: {}", human_bytes(total));
    Ok(())
}

#[derive(Args, Debug)]
pub struct ClearSnapshotArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    /// The snapshot to remove.
    #[arg(short = 't', long = "tag", conflicts_with = "all")]
    pub name: Option<String>,
    /// Remove every snapshot of the selected tables.
    #[arg(long)]
    pub all: bool,
}

/// `strata clearsnapshot -t NAME | --all [ks[.table]]`.
pub fn clear_snapshot(data_dir: &Path, args: ClearSnapshotArgs) -> Result<()> {
    if args.name.is_none() && !args.all {
        return Err(Error::InvalidInput(
            "clearsnapshot needs -t NAME or --all".into(),
        ));
    }
    with_db(data_dir, |db| {
        let mut removed = 0usize;
        for t in select_tables(db, args.target.as_deref())? {
            let report = match &args.name {
                // A table without this snapshot is not an error when several are named.
                Some(n) => match maintenance::clear_snapshot(&t, Some(n)) {
                    Err(Error::NotFound(_)) => maintenance::ClearedSnapshots::default(),
                    other => other?,
                },
                None => maintenance::clear_snapshot(&t, None)?,
            };
            for why in &report.skipped {
                errln!("warning: skipped {why}");
            }
            let names = report.cleared;
            for n in &names {
                outln!("cleared snapshot {n} of {}", t.schema().qualified_name());
            }
            removed += names.len();
        }
        match (&args.name, removed) {
            (Some(n), 0) => Err(Error::NotFound(format!("snapshot '{n}'"))),
            _ => Ok(()),
        }
    })
}

// ---------------------------------------------------------------------------
// commitlog

#[derive(Subcommand, Debug)]
pub enum CommitlogCommand {
    /// Prints every record (or damaged region) of a segment file, without opening
    /// the database.
    Dump {
        /// A `CommitLog-<version>-<id>.log` file.
        segment: PathBuf,
        #[command(flatten)]
        out: OutputArgs,
    },
    /// Reads the commit log without opening the database (writes nothing, runs
    /// beside a running owner): its segments, the retired-segment record, the
    /// records their tables have not flushed, and whether any segment is missing.
    Stats {
        #[command(flatten)]
        out: OutputArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
}

impl CommitlogCommand {
    /// `stats` reads the data directory; `dump` reads one segment file.
    pub fn data_dir_use(&self) -> DataDirUse<'_> {
        match self {
            CommitlogCommand::Dump { .. } => DataDirUse::NotThisSubcommand("commitlog dump"),
            CommitlogCommand::Stats { db, .. } => DataDirUse::Opens(db),
        }
    }
}

pub fn commitlog(data_dir: &Path, cmd: CommitlogCommand) -> Result<()> {
    match cmd {
        CommitlogCommand::Dump { segment, out } => dump(&segment, out),
        CommitlogCommand::Stats { out, .. } => {
            let report = strata::db::commitlog_report(&Fs::new(), data_dir)?;
            if out.print_report(&report)? {
                return Ok(());
            }
            outln!("Commit log: {}", report.dir.display());
            outln!("Segments: {}", report.segments.len());
            for s in &report.segments {
                outln!(
                    "  {} ({} bytes, {} records{}){}",
                    s.path.display(),
                    s.size_bytes,
                    s.records,
                    if s.sealed { ", sealed" } else { "" },
                    s.problem
                        .as_deref()
                        .map(|p| format!(": {p}"))
                        .unwrap_or_default()
                );
            }
            match &report.retired {
                Some(r) if r.is_empty() => outln!("Retired: none"),
                Some(r) => outln!(
                    "Retired: {}",
                    r.iter()
                        .map(|(lo, hi)| format!("{lo}-{hi}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
                None => outln!("Retired: no record"),
            }
            let u = &report.unflushed;
            outln!(
                "Not yet flushed: {} records ({} bytes) in {} segments",
                u.records,
                u.bytes,
                u.segments
            );
            match (&report.problem, &report.not_checked) {
                (Some(p), _) => outln!("Problem: {p}"),
                (None, Some(why)) => outln!("Segment sequence: {why}"),
                (None, None) => outln!("Segment sequence: complete"),
            }
            Ok(())
        }
    }
}

fn dump(segment: &Path, out: OutputArgs) -> Result<()> {
    let d = commitlog::dump_segment(&Fs::new(), segment)?;
    if out.print_report(&d)? {
        return Ok(());
    }
    outln!(
        "Segment {} (id {}, format v{}, {} bytes, {} frames)",
        d.path.display(),
        d.segment_id,
        d.format_version,
        d.file_bytes,
        d.records.len()
    );
    outln!(
        "{:>10} {:>10} {:>8} {:>6} {:>21} {:>5} {:>6} {:>17}  key / problem",
        "offset",
        "end",
        "bytes",
        "table",
        "token",
        "rows",
        "cells",
        "max ts (us)"
    );
    for r in &d.records {
        if r.seal {
            outln!(
                "{:>10} {:>10} {:>8}  SEAL (a newer segment was begun after this one)",
                r.offset,
                r.end_offset,
                r.size_bytes
            );
            continue;
        }
        match (&r.mutation, &r.error) {
            (Some(m), _) => outln!(
                "{:>10} {:>10} {:>8} {:>6} {:>21} {:>5} {:>6} {:>17}  0x{}{}{}",
                r.offset,
                r.end_offset,
                r.size_bytes,
                r.table_id.map(|t| t.to_string()).unwrap_or_default(),
                m.token,
                m.rows,
                m.cells,
                m.max_timestamp_micros,
                m.key_hex,
                if m.partition_deletion {
                    " (partition deletion)"
                } else {
                    ""
                },
                if r.compressed { " (compressed)" } else { "" }
            ),
            (None, err) => outln!(
                "{:>10} {:>10} {:>8} {:>6} {:>21} {:>5} {:>6} {:>17}  {}: {}",
                r.offset,
                r.end_offset,
                r.size_bytes,
                r.table_id.map(|t| t.to_string()).unwrap_or_default(),
                "-",
                "-",
                "-",
                "-",
                if r.tail { "TAIL" } else { "BAD" },
                err.as_deref().unwrap_or("unreadable")
            ),
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// traincompressiondictionary

#[derive(Args, Debug)]
pub struct TrainArgs {
    /// `keyspace.table`.
    pub table: String,
    /// Largest dictionary, KiB [default: the table's
    /// training_max_dictionary_size, 64 KiB].
    #[arg(long, value_parser = range(1usize, 1024,
        "zstd dictionaries past 1 MiB gain nothing and cost memory in every reader"))]
    pub max_dict_size_kb: Option<usize>,
    /// Most data sampled, MiB [default: the table's
    /// training_max_total_sample_size, 10 MiB].
    #[arg(long, value_parser = range(1usize, 1024,
        "the sample is held in memory while training"))]
    pub max_sample_mb: Option<usize>,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `strata traincompressiondictionary ks.t`: trains and stores a dictionary,
/// and says what it gains on the sample.
pub fn train_compression_dictionary(data_dir: &Path, args: TrainArgs) -> Result<()> {
    let opts = strata::table_dictionary::TrainOptions {
        max_dictionary_bytes: args.max_dict_size_kb.map(|k| k * 1024),
        max_sample_bytes: args.max_sample_mb.map(|m| m << 20),
    };
    let report = with_db(data_dir, |db| {
        let t = crate::select_one_table(db, &args.table)?;
        t.train_compression_dictionary(&opts)
    })?;
    if args.out.print_report(&report)? {
        return Ok(());
    }
    let r = &report;
    match r.dictionary_id {
        Some(id) => outln!(
            "{}.{}: dictionary {id} ({}) trained on {} from {} sstables in {:.2} s",
            r.keyspace,
            r.table,
            human_bytes(r.dictionary_bytes as u64),
            human_bytes(r.sample_bytes),
            r.sampled_sstables,
            r.seconds
        ),
        None => outln!("{}.{}: no dictionary stored", r.keyspace, r.table),
    }
    outln!(
        "  {}: ratio {:.3} with it, {:.3} without{}",
        r.measured_with,
        r.ratio_with_dictionary,
        r.ratio_without_dictionary,
        r.ratio_with_previous
            .map(|p| format!(", {p:.3} with the previous one"))
            .unwrap_or_default()
    );
    for n in &r.notes {
        outln!("  {n}");
    }
    Ok(())
}

// ---------------------------------------------------------------------------
// upgradesstables

#[derive(Args, Debug)]
pub struct UpgradeArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    /// Rewrite every sstable, not only those whose compression or format differs
    /// from the table's (nodetool's -a / --include-all-sstables). A killed `-a`
    /// run starts over; without it the next run continues where it stopped.
    #[arg(short = 'a', long = "include-all-sstables")]
    pub all: bool,
    /// Rewrites at a time; the space check counts them all [default: 1].
    #[arg(long, default_value_t = 1, value_parser = range(1usize, 64,
        "one rewrite thread each, and each needs its own room on disk"))]
    pub jobs: usize,
    /// Estimate the new size (sampled chunks) and the peak extra space; write nothing.
    #[arg(long)]
    pub dry_run: bool,
    /// With --dry-run: also the sampled size under none, LZ4, Zstd 1, 3 and 9,
    /// and zstd 3 and LZ4 with a dictionary (the table's, or one trained on
    /// the sample and not stored).
    #[arg(long, requires = "dry_run")]
    pub estimate_all: bool,
    /// Snapshot the table first (off by default: a snapshot keeps every old file
    /// alive, so the run needs room for the whole new table).
    #[arg(long)]
    pub snapshot: bool,
    #[command(flatten)]
    pub out: OutputArgs,
}

/// `strata upgradesstables`: rewrites sstables written with other compression
/// settings (or an older format), smallest first, within the disk space there is.
pub fn upgradesstables(data_dir: &Path, args: UpgradeArgs) -> Result<()> {
    let opts = strata::upgrade::UpgradeOptions {
        all: args.all,
        jobs: args.jobs,
        dry_run: args.dry_run,
        estimate_all: args.estimate_all,
        snapshot: args.snapshot,
    };
    let bar = crate::terminal_bar(
        args.out.is_table() && !args.dry_run,
        "{bar:40} {bytes}/{total_bytes} {bytes_per_sec} ETA {eta}",
    );
    let reports = with_db(data_dir, |db| {
        let mut out = Vec::new();
        for t in select_tables(db, args.target.as_deref())? {
            let name = t.schema().qualified_name();
            let mut progress = |done: u64, total: u64| match &bar {
                Some(_) => crate::show_progress(&bar, done, total),
                None if args.out.is_table() => errln!("{name}: {done} of {total} bytes rewritten"),
                None => {}
            };
            out.push(strata::upgrade::upgrade_sstables(&t, &opts, &mut progress)?);
        }
        Ok(out)
    })?;
    if let Some(b) = bar {
        b.finish_and_clear();
    }
    if args.out.print_report(&reports)? {
        return Ok(());
    }
    for r in &reports {
        for w in &r.warnings {
            errln!("warning: {}.{}: {w}", r.keyspace, r.table);
        }
        let verb = if r.dry_run {
            "would rewrite"
        } else {
            "rewrote"
        };
        outln!(
            "{}.{}: {verb} {} sstables to {}: {} -> ~{} estimated{}; peak extra space ~{}{}",
            r.keyspace,
            r.table,
            if r.dry_run {
                r.candidates.len()
            } else {
                r.rewritten.len()
            },
            r.target,
            human_bytes(r.bytes_before),
            human_bytes(r.estimated_bytes_after),
            if r.dry_run {
                String::new()
            } else {
                format!(", {} now", human_bytes(r.bytes_after))
            },
            human_bytes(r.peak_extra_bytes_estimate),
            r.headroom_bytes
                .map(|h| format!(" of {} allowed", human_bytes(h)))
                .unwrap_or_default()
        );
        for e in &r.setting_estimates {
            outln!(
                "  {:<40} ratio {:.3}  ~{}",
                e.setting,
                e.ratio,
                human_bytes(e.estimated_bytes)
            );
        }
        if let Some(s) = &r.snapshot {
            outln!("  originals in snapshot {s}");
        }
    }
    Ok(())
}
