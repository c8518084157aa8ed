//! `strata bench`: whole-workload benchmarks with fixed parameters.
//!
//! `strata bench commitlog` measures write throughput and latency in each commit
//! log sync mode with several writer-thread counts (`strata_bench::commitlog`,
//! whose contract says what is timed); `strata bench lcs-fanout` runs seed 000's
//! leveling-multiplier experiment (`strata_bench::lcs_fanout`, arguments in
//! bench_lcs.rs); `strata bench lcs-levels` issue 16's sweep of normal against
//! fixed-levels LCS over data sizes (`strata_bench::lcs_levels`, arguments in
//! bench_lcs_levels.rs); `strata bench blobstore` seed 002's TestDFSIO test
//! (`strata_bench::blobstore`, arguments in bench_blobstore.rs); `strata bench
//! compression` seed 001's codec matrix (`strata_bench::compression`, arguments
//! in bench_compression.rs). This file parses the arguments, calls the library and prints.

use crate::admin::SyncModeArg;
use crate::bounds::range;
use clap::{Args, Subcommand};
use std::path::PathBuf;
use strata::{Error, Result};
use strata_bench::commitlog::{self as bench, CommitlogBenchConfig};
use strata_bench::workdir::{write_new_or_regular, WorkDir};

#[path = "bench_blobstore.rs"]
mod bench_blobstore;
#[path = "bench_compression.rs"]
mod bench_compression;
#[path = "bench_lcs.rs"]
mod bench_lcs;
#[path = "bench_lcs_levels.rs"]
mod bench_lcs_levels;
#[path = "bench_slice_cmd.rs"]
mod bench_slice_cmd;
#[path = "bench_timeseries.rs"]
mod bench_timeseries;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Write throughput per commit-log sync mode and writer-thread count.
    Commitlog(CommitlogBenchArgs),
    /// The leveling-multiplier experiment on the real engine: LCS nodes A, B and C
    /// (fanout and sstable size), scaled, beside the model and the simulator.
    LcsFanout(bench_lcs::LcsFanoutArgs),
    /// Normal LCS against fixed levels from 10 GiB to 10 TiB (simulator and
    /// model), then the real engine at scaled sizes.
    LcsLevels(bench_lcs_levels::LcsLevelsArgs),
    /// The time-series experiment in simulated time: DTCS, TWCS, STCS and LCS on
    /// identical input, then TWCS with late writes, segregation on and off.
    Timeseries(bench_timeseries::TimeseriesArgs),
    /// 10-row slice reads from partitions of 1e3..1e6 rows.
    Slice(bench_slice_cmd::SliceBenchArgs),
    /// The TestDFSIO blob test: write files of fixed-size blocks, delete them,
    /// six runs; the blob strategy, STCS and LCS on identical input.
    Blobstore(bench_blobstore::BlobstoreArgs),
    /// The compression experiment: none, LZ4, zstd 1/3/9 on two archive-shaped
    /// datasets; ratio, write cost, whole-partition read latency at 50..200 readers.
    Compression(bench_compression::CompressionArgs),
    /// The copy-on-write B-tree memtable experiment: the memtable against a
    /// skiplist and a locked BTreeMap (inserts/s per workload and thread count,
    /// bytes per cell, flush iteration rate).
    Memtable(MemtableBenchArgs),
}

#[derive(Args, Debug)]
pub struct MemtableBenchArgs {
    /// Writer-thread counts, comma separated, each 1 to 64.
    #[arg(long, value_delimiter = ',', default_value = "1,2,4", value_parser = range(1usize, 64,
        "one OS thread each, over one shared memtable"))]
    pub threads: Vec<usize>,
    /// Runs per case (the median is reported, and every run's ratio), 1 to 50.
    #[arg(long, default_value_t = 3, value_parser = range(1usize, 50,
        "each run repeats every case: 50 already takes hours"))]
    pub runs: usize,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CommitlogBenchArgs {
    /// Operations per run (split across the threads), at most 10^12.
    #[arg(long, default_value_t = 20_000, value_parser = range(1u64, bench::MAX_BENCH_OPS,
        "each run also stops at --max-seconds; a larger count is a typo"))]
    pub ops: u64,
    /// Writer-thread counts to run, comma separated, each 1 to 1024.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16",
          value_parser = range(1usize, bench::MAX_BENCH_THREADS, "one OS thread each"))]
    pub threads: Vec<usize>,
    /// Sync modes to run, comma separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "periodic,batch,group"
    )]
    pub modes: Vec<SyncModeArg>,
    /// `group` mode window for this benchmark, milliseconds, 0 to 60000.
    #[arg(long, default_value_t = 2, value_parser = range(0u64, 60_000,
        "writers wait up to one window for their fsync: at most a minute"))]
    pub group_window_ms: u64,
    /// `periodic` mode period for this benchmark, milliseconds, 1 to 3600000.
    #[arg(long, default_value_t = 10_000, value_parser = range(1u64, 3_600_000,
        "the commit log's own bound on commitlog_sync_period: at most an hour"))]
    pub period_ms: u64,
    /// Stop a run after this many seconds even if `--ops` are not done,
    /// 0.001 to 86400.
    #[arg(long, default_value_t = 20.0, value_parser = range(
        bench::MIN_BENCH_SECONDS, bench::MAX_BENCH_SECONDS,
        "a time limit of a day at most, and a finite one"))]
    pub max_seconds: f64,
    /// Bytes of the value column of each row, at most 16 MiB.
    #[arg(long, default_value_t = 64, value_parser = range(0usize, bench::MAX_BENCH_VALUE_BYTES,
        "each writer thread holds the value and copies it per write"))]
    pub value_size: usize,
    /// Where the benchmark creates its own work directory for the per-run data
    /// directories (default: the system temp dir); nothing else in it is touched.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the work directory and the per-run data directories.
    #[arg(long)]
    pub keep: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Where an experiment's report goes besides stdout (timeseries, blobstore).
#[derive(Args, Debug)]
pub struct ReportArgs {
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the SVG charts into this directory.
    #[arg(long)]
    pub charts: Option<PathBuf>,
}

impl ReportArgs {
    /// Ends an experiment that ran in `work_dir` (a directory of its own,
    /// removed here whether it succeeded or not), then prints the report's
    /// text, draws its charts and writes its JSON as asked.
    pub fn finish<R>(
        &self,
        work_dir: WorkDir,
        report: Result<R>,
        text: fn(&R) -> String,
        charts: fn(&R, &std::path::Path) -> Result<Vec<PathBuf>>,
        json: fn(&R) -> Result<String>,
    ) -> Result<()> {
        drop(work_dir);
        let report = report?;
        print!("{}", text(&report));
        if let Some(dir) = &self.charts {
            let written = charts(&report, dir)?;
            println!("{} charts written to {}", written.len(), dir.display());
        }
        if let Some(path) = &self.json {
            write_new_or_regular(path, json(&report)?.as_bytes())?;
        }
        Ok(())
    }
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Commitlog(args) => commitlog(args),
        BenchCommand::LcsFanout(args) => bench_lcs::run(args),
        BenchCommand::LcsLevels(args) => bench_lcs_levels::run(args),
        BenchCommand::Timeseries(args) => bench_timeseries::run(args),
        BenchCommand::Slice(args) => bench_slice_cmd::run(args),
        BenchCommand::Blobstore(args) => bench_blobstore::run(args),
        BenchCommand::Compression(args) => bench_compression::run(args),
        BenchCommand::Memtable(args) => memtable(args),
    }
}

fn memtable(args: MemtableBenchArgs) -> Result<()> {
    let cfg = strata_bench::memtable::MemtableConfig {
        threads: args.threads.clone(),
        runs: args.runs,
    };
    let report = strata_bench::memtable::run_bench(&cfg, &mut |line| eprintln!("{line}"))?;
    print!("{}", report.text());
    if let Some(path) = &args.json {
        write_new_or_regular(path, report.to_json()?.as_bytes())?;
    }
    Ok(())
}

fn commitlog(args: CommitlogBenchArgs) -> Result<()> {
    let config = CommitlogBenchConfig {
        ops: args.ops,
        threads: args.threads.clone(),
        modes: args.modes.iter().map(|m| m.kind()).collect(),
        group_window_ms: args.group_window_ms,
        period_ms: args.period_ms,
        max_seconds: args.max_seconds,
        value_size: args.value_size,
        dir: args.dir.clone(),
        keep: args.keep,
    };
    // Argument errors before the header.
    config.validate()?;
    println!(
        "{:<9} {:>5} {:>7} {:>7} {:>8} {:>9} {:>8} {:>8} {:>7} {:>10}",
        "mode",
        "ms",
        "threads",
        "ops",
        "seconds",
        "ops/s",
        "p50 us",
        "p99 us",
        "fsyncs",
        "mut/fsync"
    );
    let runs = bench::run(&config, &mut |r| {
        println!(
            "{:<9} {:>5} {:>7} {:>7} {:>8.2} {:>9.0} {:>8} {:>8} {:>7} {:>10.2}",
            r.sync_mode.name(),
            r.sync_ms,
            r.threads,
            r.ops,
            r.duration_seconds,
            r.ops_per_second,
            r.latency_us_p50,
            r.latency_us_p99,
            r.fsyncs,
            r.mutations_per_fsync
        );
    })?;
    if let Some(path) = &args.json {
        let text = bench::to_json(&config, &runs)?;
        write_new_or_regular(path, text.as_bytes())?;
    }
    let errors: u64 = runs.iter().map(|r| r.errors).sum();
    if errors > 0 {
        return Err(Error::InvalidInput(format!("{errors} writes failed")));
    }
    Ok(())
}
