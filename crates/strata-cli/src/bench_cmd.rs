//! `strata bench`: whole-workload benchmarks with fixed parameters.
//!
//! `strata bench commitlog` measures write throughput and latency in each commit
//! log sync mode (periodic, batch, group) with 1, 4 and 16 writer threads, and how
//! many mutations share each fsync (`CommitLogStats`). Every run gets a fresh data
//! directory (under `--dir`, default a new directory in the system temp dir, which
//! must be a real disk for fsync costs to mean anything), deleted afterwards
//! unless `--keep`.
//!
//! Contract:
//! 1. A run writes a fixed number of operations (`--ops`, split evenly across
//!    threads), each one `INSERT` of one small row into its own partition; it
//!    stops early once `--max-seconds` pass (fsync-bound runs on a slow disk), and
//!    reports the operations actually done.
//! 2. The timed region is the writes only: opening, table creation and the final
//!    close are outside it. Counters are read before close, so the final sync of
//!    `close` is not counted.
//! 3. Latency is per operation, from the call to its acknowledgment (for batch
//!    and group this includes waiting for the covering fsync), in microseconds.

use crate::admin::SyncModeArg;
use clap::{Args, Subcommand};
use hdrhistogram::Histogram;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strata::clock::SystemClock;
use strata::commitlog::CommitLogOptions;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::types::Value;
use strata::{Error, Result};

#[path = "bench_lcs.rs"]
mod bench_lcs;
#[path = "bench_slice_cmd.rs"]
mod bench_slice_cmd;

#[derive(Subcommand, Debug)]
pub enum BenchCommand {
    /// Write throughput per commit-log sync mode and writer-thread count.
    Commitlog(CommitlogBenchArgs),
    /// Seed 000's leveling-multiplier experiment on the real engine (bench_lcs.rs).
    LcsFanout(bench_lcs::LcsFanoutArgs),
    /// Issue 11: 10-row slice reads from partitions of 1e3..1e6 rows (bench_slice_cmd.rs).
    Slice(bench_slice_cmd::SliceBenchArgs),
}

#[derive(Args, Debug)]
pub struct CommitlogBenchArgs {
    /// Operations per run (split across the threads).
    #[arg(long, default_value_t = 20_000)]
    pub ops: u64,
    /// Writer-thread counts to run, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1,4,16")]
    pub threads: Vec<usize>,
    /// Sync modes to run, comma separated.
    #[arg(
        long,
        value_enum,
        value_delimiter = ',',
        default_value = "periodic,batch,group"
    )]
    pub modes: Vec<SyncModeArg>,
    /// `group` mode window for this benchmark, milliseconds.
    #[arg(long, default_value_t = 2)]
    pub group_window_ms: u64,
    /// `periodic` mode period for this benchmark, milliseconds.
    #[arg(long, default_value_t = 10_000)]
    pub period_ms: u64,
    /// Stop a run after this many seconds even if `--ops` are not done.
    #[arg(long, default_value_t = 20.0)]
    pub max_seconds: f64,
    /// Bytes of the value column of each row.
    #[arg(long, default_value_t = 64)]
    pub value_size: usize,
    /// Parent of the per-run data directories (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the per-run data directories.
    #[arg(long)]
    pub keep: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// One (mode, threads) run.
#[derive(Clone, Debug, Serialize)]
pub struct CommitlogRun {
    pub sync_mode: SyncModeArg,
    /// The group window (group) or period (periodic), milliseconds; 0 for batch.
    pub sync_ms: u64,
    pub threads: usize,
    pub ops: u64,
    pub errors: u64,
    pub duration_seconds: f64,
    pub ops_per_second: f64,
    pub latency_us_p50: u64,
    pub latency_us_p99: u64,
    pub latency_us_max: u64,
    pub fsyncs: u64,
    pub synced_mutations: u64,
    pub mutations_per_fsync: f64,
}

#[derive(Serialize)]
struct BenchOutput<'a> {
    benchmark: &'static str,
    ops_per_run: u64,
    value_size_bytes: usize,
    runs: &'a [CommitlogRun],
}

pub fn run(cmd: BenchCommand) -> Result<()> {
    match cmd {
        BenchCommand::Commitlog(args) => commitlog(args),
        BenchCommand::LcsFanout(args) => bench_lcs::run(args),
        BenchCommand::Slice(args) => bench_slice_cmd::run(args),
    }
}

fn histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 120_000_000, 3)
        .map_err(|e| Error::InvalidInput(format!("histogram: {e}")))
}

/// Most writer threads one `bench commitlog` run may start.
const MAX_BENCH_THREADS: usize = 1024;

fn commitlog(args: CommitlogBenchArgs) -> Result<()> {
    if args.ops == 0 || args.threads.contains(&0) || args.threads.is_empty() {
        return Err(Error::InvalidInput(
            "--ops and every --threads value must be at least 1".into(),
        ));
    }
    // One OS thread each: a typo must be an error, not a failed spawn's panic.
    if let Some(t) = args.threads.iter().find(|&&t| t > MAX_BENCH_THREADS) {
        return Err(Error::InvalidInput(format!(
            "--threads {t} is more than {MAX_BENCH_THREADS}"
        )));
    }
    let parent = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("strata-bench-commitlog-{}", std::process::id())),
    };
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
    let mut runs = Vec::new();
    for &mode in &args.modes {
        for &threads in &args.threads {
            let dir = parent.join(format!("{mode:?}-{threads}t").to_lowercase());
            let r = one_run(&args, mode, threads, &dir);
            if !args.keep {
                let _ = std::fs::remove_dir_all(&dir);
            }
            let r = r?;
            println!(
                "{:<9} {:>5} {:>7} {:>7} {:>8.2} {:>9.0} {:>8} {:>8} {:>7} {:>10.2}",
                format!("{mode:?}").to_lowercase(),
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
            runs.push(r);
        }
    }
    if !args.keep && args.dir.is_none() {
        let _ = std::fs::remove_dir(&parent);
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&BenchOutput {
            benchmark: "commitlog",
            ops_per_run: args.ops,
            value_size_bytes: args.value_size,
            runs: &runs,
        })
        .map_err(|e| Error::InvalidInput(format!("JSON: {e}")))?;
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    let errors: u64 = runs.iter().map(|r| r.errors).sum();
    if errors > 0 {
        return Err(Error::InvalidInput(format!("{errors} writes failed")));
    }
    Ok(())
}

fn one_run(
    args: &CommitlogBenchArgs,
    mode: SyncModeArg,
    threads: usize,
    dir: &Path,
) -> Result<CommitlogRun> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::io(dir, e))?;
    }
    let sync_ms = match mode {
        SyncModeArg::Periodic => args.period_ms,
        SyncModeArg::Batch => 0,
        SyncModeArg::Group => args.group_window_ms,
    };
    let mut opts = DbOptions::new(SystemClock::new());
    opts.commitlog = Some(CommitLogOptions {
        sync: mode.to_mode(
            Duration::from_millis(args.period_ms),
            Duration::from_millis(args.group_window_ms),
        ),
        ..CommitLogOptions::default()
    });
    let db = Database::open(dir, opts)?;
    let table =
        db.create_table_cql("CREATE TABLE bench.commitlog (k bigint PRIMARY KEY, v blob)")?;
    let value = vec![0xabu8; args.value_size];
    let per_thread = args.ops.div_ceil(threads as u64);
    let deadline = Duration::from_secs_f64(args.max_seconds.max(0.001));
    let errors = AtomicU64::new(0);
    let started = Instant::now();
    let results: Vec<Result<(u64, Histogram<u64>)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let table = &table;
                let value = &value;
                let errors = &errors;
                s.spawn(move || -> Result<(u64, Histogram<u64>)> {
                    let mut h = histogram()?;
                    let first = t as u64 * per_thread;
                    let last = (first + per_thread).min(args.ops);
                    let mut done = 0u64;
                    for k in first..last {
                        if started.elapsed() > deadline {
                            break;
                        }
                        let op = Instant::now();
                        let r = table.insert(
                            &[
                                ("k", Value::BigInt(k as i64)),
                                ("v", Value::Blob(value.clone())),
                            ],
                            &WriteOptions::default(),
                        );
                        if r.is_err() {
                            errors.fetch_add(1, Ordering::Relaxed);
                        }
                        let _ = h.record((op.elapsed().as_micros() as u64).max(1));
                        done += 1;
                    }
                    Ok((done, h))
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::InvalidInput("a writer thread panicked".into())))
            })
            .collect()
    });
    let elapsed = started.elapsed().as_secs_f64();
    let stats = db.commitlog().map(|l| l.stats()).unwrap_or_default();
    db.close()?;
    let mut total = histogram()?;
    let mut ops = 0u64;
    for r in results {
        let (done, h) = r?;
        ops += done;
        total
            .add(&h)
            .map_err(|e| Error::InvalidInput(format!("histogram: {e}")))?;
    }
    Ok(CommitlogRun {
        sync_mode: mode,
        sync_ms,
        threads,
        ops,
        errors: errors.load(Ordering::Relaxed),
        duration_seconds: elapsed,
        ops_per_second: if elapsed > 0.0 {
            ops as f64 / elapsed
        } else {
            0.0
        },
        latency_us_p50: total.value_at_quantile(0.50),
        latency_us_p99: total.value_at_quantile(0.99),
        latency_us_max: total.max(),
        fsyncs: stats.fsyncs,
        synced_mutations: stats.synced_mutations,
        mutations_per_fsync: stats.mutations_per_fsync,
    })
}
