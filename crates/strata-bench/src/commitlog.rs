//! Commit-log write benchmark behind `strata bench commitlog`: write throughput
//! and latency in each commit-log sync mode (periodic, batch, group) with several
//! writer-thread counts, and how many mutations share each fsync
//! (`CommitLogStats`).
//!
//! Owns: the per-run data directories, the writer threads and their histograms.
//! Called from one thread; a run starts its writers and joins them before
//! returning. Every run gets a fresh data directory inside a work directory of
//! the benchmark's own, created new under `dir` (default the system temp dir,
//! which must be a real disk for fsync costs to mean anything) and deleted
//! afterwards unless `keep`; nothing else under `dir` is touched.
//!
//! Contract:
//! 1. A run writes a fixed number of operations (`ops`, split evenly across
//!    threads), each one `INSERT` of one small row into its own partition; it
//!    stops early once `max_seconds` pass (fsync-bound runs on a slow disk), and
//!    reports the operations actually done.
//! 2. The timed region is the writes only: opening, table creation and the final
//!    close are outside it. Counters are read before close, so the final sync of
//!    `close` is not counted.
//! 3. Latency is per operation, from the call to its acknowledgment (for batch
//!    and group this includes waiting for the covering fsync), in microseconds.

use hdrhistogram::Histogram;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};
use strata::clock::SystemClock;
use strata::commitlog::{CommitLogOptions, SyncMode};
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::types::Value;
use strata::{Error, Result};

/// A commit-log sync mode without its period (Cassandra's `commitlog_sync`
/// values); the benchmark supplies the period or window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SyncKind {
    Periodic,
    Batch,
    Group,
}

impl SyncKind {
    pub fn to_mode(self, period: Duration, window: Duration) -> SyncMode {
        match self {
            SyncKind::Periodic => SyncMode::Periodic { period },
            SyncKind::Batch => SyncMode::Batch,
            SyncKind::Group => SyncMode::Group { window },
        }
    }

    /// Lower-case name, as the command line and the JSON spell it.
    pub fn name(self) -> &'static str {
        match self {
            SyncKind::Periodic => "periodic",
            SyncKind::Batch => "batch",
            SyncKind::Group => "group",
        }
    }
}

/// What to run; `strata bench commitlog`'s options, one to one.
#[derive(Clone, Debug)]
pub struct CommitlogBenchConfig {
    /// Operations per run (split across the threads).
    pub ops: u64,
    /// Writer-thread counts to run.
    pub threads: Vec<usize>,
    /// Sync modes to run.
    pub modes: Vec<SyncKind>,
    /// `group` mode window, milliseconds.
    pub group_window_ms: u64,
    /// `periodic` mode period, milliseconds.
    pub period_ms: u64,
    /// Stop a run after this many seconds even if `ops` are not done.
    pub max_seconds: f64,
    /// Bytes of the value column of each row.
    pub value_size: usize,
    /// Where the benchmark's own work directory is created (default: the
    /// system temp dir).
    pub dir: Option<PathBuf>,
    /// Keep the per-run data directories.
    pub keep: bool,
}

impl CommitlogBenchConfig {
    /// Refuses what cannot run, naming the option; [`run`] calls it first.
    pub fn validate(&self) -> Result<()> {
        if self.ops == 0 || self.threads.contains(&0) || self.threads.is_empty() {
            return Err(Error::InvalidInput(
                "--ops and every --threads value must be at least 1".into(),
            ));
        }
        // One OS thread each: a typo must be an error, not a failed spawn's panic.
        if let Some(t) = self.threads.iter().find(|&&t| t > MAX_BENCH_THREADS) {
            return Err(Error::InvalidInput(format!(
                "--threads {t} is more than {MAX_BENCH_THREADS}"
            )));
        }
        if self.ops > MAX_BENCH_OPS {
            return Err(Error::InvalidInput(format!(
                "--ops {} is more than {MAX_BENCH_OPS}",
                self.ops
            )));
        }
        // A value is cloned per write on every thread: an absurd size was a
        // capacity-overflow panic or an allocation abort.
        if self.value_size > MAX_BENCH_VALUE_BYTES {
            return Err(Error::InvalidInput(format!(
                "--value-size {} is more than {MAX_BENCH_VALUE_BYTES} bytes",
                self.value_size
            )));
        }
        // It becomes a Duration: infinity or NaN panicked there.
        if !(self.max_seconds.is_finite()
            && (MIN_BENCH_SECONDS..=MAX_BENCH_SECONDS).contains(&self.max_seconds))
        {
            return Err(Error::InvalidInput(format!(
                "--max-seconds {} is not in {MIN_BENCH_SECONDS}..={MAX_BENCH_SECONDS}",
                self.max_seconds
            )));
        }
        Ok(())
    }
}

/// One (mode, threads) run.
#[derive(Clone, Debug, Serialize)]
pub struct CommitlogRun {
    pub sync_mode: SyncKind,
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

fn histogram() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 120_000_000, 3)
        .map_err(|e| Error::InvalidInput(format!("histogram: {e}")))
}

/// Most writer threads one `bench commitlog` run may start.
pub const MAX_BENCH_THREADS: usize = 1024;
/// Most operations per run (each run also stops at `--max-seconds`).
pub const MAX_BENCH_OPS: u64 = 1_000_000_000_000;
/// Largest value per row: the stress workload's bound, far past a commit-log
/// benchmark's interest and within the default max_mutation_size.
pub const MAX_BENCH_VALUE_BYTES: usize = 16 << 20;
/// Shortest and longest time limit of one run, seconds.
pub const MIN_BENCH_SECONDS: f64 = 0.001;
pub const MAX_BENCH_SECONDS: f64 = 86_400.0;

/// Runs every (mode, threads) pair in order, handing each result to `on_run` as
/// it completes (contract 1-3). Fails on the first run that cannot open or
/// write its data directory; writes refused by the engine are counted in
/// [`CommitlogRun::errors`], not fatal.
pub fn run(
    args: &CommitlogBenchConfig,
    on_run: &mut dyn FnMut(&CommitlogRun),
) -> Result<Vec<CommitlogRun>> {
    args.validate()?;
    // A directory of the run's own under --dir (crate invariant 4): the
    // per-run directories below it are new, and only it is removed.
    let mut work =
        crate::workdir::WorkDir::create_on_disk_default(args.dir.as_deref(), "commitlog")?;
    if args.keep {
        work.keep();
    }
    let mut runs = Vec::new();
    for &mode in &args.modes {
        for &threads in &args.threads {
            let dir = work
                .path()
                .join(format!("{mode:?}-{threads}t").to_lowercase());
            let r = one_run(args, mode, threads, &dir);
            if !args.keep {
                let _ = std::fs::remove_dir_all(&dir);
            }
            let r = r?;
            on_run(&r);
            runs.push(r);
        }
    }
    Ok(runs)
}

/// The `--json` file: the runs with the parameters they share.
pub fn to_json(args: &CommitlogBenchConfig, runs: &[CommitlogRun]) -> Result<String> {
    serde_json::to_string_pretty(&BenchOutput {
        benchmark: "commitlog",
        ops_per_run: args.ops,
        value_size_bytes: args.value_size,
        runs,
    })
    .map_err(|e| Error::InvalidInput(format!("JSON: {e}")))
}

fn one_run(
    args: &CommitlogBenchConfig,
    mode: SyncKind,
    threads: usize,
    dir: &Path,
) -> Result<CommitlogRun> {
    if dir.exists() {
        return Err(Error::InvalidInput(format!(
            "{} exists: each run needs a fresh directory (--modes and --threads list it twice?)",
            dir.display()
        )));
    }
    let sync_ms = match mode {
        SyncKind::Periodic => args.period_ms,
        SyncKind::Batch => 0,
        SyncKind::Group => args.group_window_ms,
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

#[cfg(test)]
mod tests {
    use super::*;

    fn config(dir: &Path) -> CommitlogBenchConfig {
        CommitlogBenchConfig {
            ops: 200,
            threads: vec![1, 2],
            modes: vec![SyncKind::Batch],
            group_window_ms: 2,
            period_ms: 10_000,
            max_seconds: 20.0,
            value_size: 16,
            dir: Some(dir.to_path_buf()),
            keep: false,
        }
    }

    #[test]
    fn every_pair_runs_every_operation_and_leaves_no_directory() {
        let dir = tempfile::tempdir().unwrap();
        let mut seen = Vec::new();
        let runs = run(&config(dir.path()), &mut |r| seen.push(r.threads)).unwrap();
        assert_eq!(seen, vec![1, 2], "on_run sees each run as it completes");
        for r in &runs {
            assert_eq!(r.ops, 200);
            assert_eq!(r.errors, 0);
            assert!(r.fsyncs > 0, "batch mode syncs: {r:?}");
        }
        assert!(std::fs::read_dir(dir.path()).unwrap().next().is_none());
        let json: serde_json::Value =
            serde_json::from_str(&to_json(&config(dir.path()), &runs).unwrap()).unwrap();
        assert_eq!(json["runs"][0]["sync_mode"], "batch");
    }

    #[test]
    fn zero_or_too_many_threads_are_refused_before_any_run() {
        let dir = tempfile::tempdir().unwrap();
        for threads in [vec![0], vec![], vec![MAX_BENCH_THREADS + 1]] {
            let c = CommitlogBenchConfig {
                threads,
                ..config(dir.path())
            };
            let err = run(&c, &mut |_| panic!("ran")).unwrap_err().to_string();
            assert!(err.contains("--threads"), "{err}");
        }
    }
}
