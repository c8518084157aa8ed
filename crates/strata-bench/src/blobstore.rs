//! Seed 002's TestDFSIO test, scaled (`strata bench blobstore`, issue 13):
//! write F files of S bytes, delete them all, six runs in a row, under the
//! blob strategy, size-tiered and leveled compaction on identical input.
//!
//! Owns: the experiment's protocol, its measurements, the report and its
//! charts. The file model (table, blocks, checksums) is [`crate::blobfile`].
//! [`run_bench`] creates one fresh database per strategy under the work
//! directory it is given, removes each after its runs, and returns values; it
//! prints nothing. One caller thread; the database runs its own flush thread
//! and `compactors` background compaction threads, as a node would.
//!
//! Time. The database runs on a [`SimClock`]: every timestamp and local
//! deletion time comes from it, so gc grace passes by moving it, not by
//! waiting. Wall time ([`Instant`]) measures throughput and the time to idle.
//! Compaction is unthrottled (`compaction_throughput_mb_per_sec` 0): the
//! figures are the strategies' work, not a limiter's.
//!
//! One run, exactly (what each figure is), in the order (write, then
//! delete; with `clean_first`, the seed's order, step 3 comes first, deleting
//! the previous run's files, and the run ends after step 2 with its files
//! live):
//! 1. The clock moves 1 s: this run's writes are newer than the previous run's
//!    deletions (TestDFSIO reuses its file names every run, so a re-written
//!    file must not be shadowed by its own old tombstone).
//! 2. Write: files `0..F` in order, each block one mutation through the commit
//!    log (`blobfile::write_file`), then one flush. `write_mib_per_s` =
//!    `bytes_ingested` / the wall time of this step, flush included (the data
//!    is in sstables at its end, as a Hadoop job's output is closed); background
//!    compaction runs meanwhile and competes, as in the seed.
//! 3. Delete: the clock moves 1 s; one partition tombstone per file, then one
//!    flush. This is "the end of the run".
//! 4. `bytes_on_disk_after_run`: the table's sstable files on disk at that
//!    moment (`Table::disk_bytes_total`, Cassandra's "space used (total)": live
//!    sstables and replaced ones not yet unlinked), compaction possibly busy.
//! 5. `seconds_to_idle`: wall time from the end of the run until the engine
//!    reports no compaction pending or running (`Database::wait_for_compactions`,
//!    polled every 20 ms: the resolution of the figure) — the seed's "became
//!    idle immediately" against "still compacting for some time".
//! 6. The clock moves `gc_grace_seconds + 1`: every tombstone of the run is
//!    now purgeable. Compaction is woken and waited for again
//!    (`seconds_to_idle_after_gc_grace`). "Idle" includes each task's tail:
//!    the runtime unlinks a task's replaced files and writes its history
//!    record before it stops counting the task as running.
//! 7. `bytes_on_disk_after_idle`: as 4, now. `live_bytes`: the bytes of the
//!    files still live, by the protocol's own bookkeeping (every file is
//!    deleted in 3, so 0). `compaction_bytes_read`: likewise for reads
//!    (the blob strategy's accounting reads count here). `compaction_bytes_written`: bytes the table's
//!    compactions wrote from step 1 to here (the engine's per-cause I/O
//!    counter, `IoCause::Compaction`); `flush_bytes` likewise for flushes.
//!
//! Invariants:
//! 1. Deterministic input: every strategy gets the same files, blocks and
//!    order; only wall-clock figures and the interleaving of background
//!    compaction differ between two runs.
//! 2. Every byte figure but `bytes_ingested` and `live_bytes` (the input,
//!    known by construction) comes from the engine's counters or the files on
//!    disk, never from an estimate.
//! 3. A strategy that does not settle within `idle_timeout_seconds` is
//!    reported (`settled: false`, the timeout as its time), not waited out.

use crate::blobfile::{self, FileShape};
use crate::charts::{draw_line_chart, LineChart};
use serde::Serialize;
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::fs::IoCause;
use strata::table::Table;
use strata::{Error, Result};

/// Simulated start: 2026-01-05, as the time-series bench.
const START_MICROS: i64 = 1_767_571_200_000_000;
const MIB: f64 = (1u64 << 20) as f64;

/// The experiment's shape (`strata bench blobstore` options, one to one).
#[derive(Clone, Debug, Serialize)]
pub struct BlobstoreConfig {
    /// Files written (and deleted) per run (TestDFSIO's `-nrFiles`).
    pub files: u32,
    pub shape: FileShape,
    /// Runs in a row on the same database (the seed's six).
    pub runs: u32,
    /// Strategy labels: `Blob`, `STCS`, `LCS` (and `CFS`, the DSE class name,
    /// which the engine maps to its CFS strategy).
    pub strategies: Vec<String>,
    /// The table's `memtable_flush_threshold_mb`: how much data one L0 sstable
    /// holds (64 MiB by default: four 16 MiB files).
    pub memtable_mb: u32,
    /// The table's gc_grace_seconds (passed in simulated time after each run).
    pub gc_grace_seconds: u32,
    /// Background compaction threads (`concurrent_compactors`).
    pub compactors: usize,
    /// Longest wall wait for compaction to go idle, per wait.
    pub idle_timeout_seconds: u64,
    /// Block contents (`values::value_bytes`).
    pub seed: u64,
    /// The seed's order (`TestDFSIO -clean` *before* each run): a run deletes the
    /// previous run's files, then writes its own, so each run ends with `files`
    /// files live and `bytes_on_disk_*` compare with real live data. Off (the
    /// issue's order): a run writes its files and then deletes them, ending
    /// with nothing live.
    pub clean_first: bool,
    /// Parent of the per-strategy data directories (each removed after use).
    #[serde(skip)]
    pub work_dir: PathBuf,
}

impl Default for BlobstoreConfig {
    fn default() -> Self {
        BlobstoreConfig {
            files: 64,
            shape: FileShape {
                file_size_bytes: 16 << 20,
                block_size_bytes: 1 << 20,
            },
            runs: 6,
            strategies: vec!["Blob".into(), "STCS".into(), "LCS".into()],
            memtable_mb: 64,
            gc_grace_seconds: 3_600,
            compactors: 1,
            idle_timeout_seconds: 600,
            seed: 2,
            clean_first: false,
            work_dir: std::env::temp_dir(),
        }
    }
}

/// A strategy label's `compaction = {...}` body, and the label as reported.
/// Cassandra's defaults otherwise: the comparison is of the strategies as an
/// operator gets them.
pub fn strategy_options(label: &str) -> Result<(String, String)> {
    let (name, class) = match label.to_ascii_uppercase().as_str() {
        // The seed's strategy under its Strata name; `CFSCompactionStrategy`
        // is its alias (DSE's class name).
        "BLOB" => ("Blob", "BlobCompactionStrategy"),
        "CFS" => ("CFS", "CFSCompactionStrategy"),
        "STCS" => ("STCS", "SizeTieredCompactionStrategy"),
        "LCS" => ("LCS", "LeveledCompactionStrategy"),
        other => {
            return Err(Error::InvalidInput(format!(
                "--strategies: unknown strategy '{other}' (Blob, CFS, STCS, LCS)"
            )))
        }
    };
    Ok((name.to_string(), format!("'class': '{class}'")))
}

impl BlobstoreConfig {
    /// Bounds checked before any work (crate invariant 3).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: String| Err(Error::InvalidInput(what));
        self.shape.validate()?;
        if !(1..=100_000).contains(&self.files) {
            return bad("--files must be between 1 and 100000".into());
        }
        if !(1..=100).contains(&self.runs) {
            return bad("--runs must be between 1 and 100".into());
        }
        if !(1..=4096).contains(&self.memtable_mb) {
            return bad("--memtable-mb must be between 1 and 4096".into());
        }
        if !(1..=64).contains(&self.compactors) {
            return bad(
                "--compactors must be between 1 and 64 (the figures are about background \
                 compaction)"
                    .into(),
            );
        }
        if self.strategies.is_empty() {
            return bad("--strategies: name at least one".into());
        }
        for s in &self.strategies {
            // The engine's own parser: a class this build does not know (the
            // blob strategy on a build without it) fails here, before any run.
            let (_, body) = strategy_options(s)?;
            strata::options::TableOptions::parse(&format!("compaction = {{{body}}}"))?;
        }
        let bytes = self.bytes_per_run() as f64 * self.runs as f64;
        if bytes > 1e12 {
            return bad(format!(
                "the bench would write {:.0} GiB per strategy: lower --files, --file-size-mib \
                 or --runs",
                bytes / MIB / 1024.0
            ));
        }
        Ok(())
    }

    /// The input of one run: every file, once.
    pub fn bytes_per_run(&self) -> u64 {
        u64::from(self.files) * self.shape.file_size_bytes
    }
}

/// One run's figures (module docs, "One run, exactly").
#[derive(Clone, Debug, Serialize)]
pub struct RunFigures {
    /// 1-based.
    pub run: u32,
    pub bytes_ingested: u64,
    pub live_bytes: u64,
    pub bytes_on_disk_after_run: u64,
    pub bytes_on_disk_after_idle: u64,
    pub compaction_bytes_written: u64,
    /// Bytes compaction read in the run: merges' inputs, and for the blob
    /// strategy its live-byte accounting (partition headers, and partitions a
    /// newer deletion or a second copy may touch).
    pub compaction_bytes_read: u64,
    pub flush_bytes: u64,
    pub write_mib_per_s: f64,
    pub write_seconds: f64,
    pub delete_seconds: f64,
    pub seconds_to_idle: f64,
    pub seconds_to_idle_after_gc_grace: f64,
    /// Both waits ended with nothing pending (invariant 3).
    pub settled: bool,
    pub sstables_after_run: usize,
    pub sstables_after_idle: usize,
    /// Compaction tasks that finished during the run, and the bytes of the
    /// sstables among their inputs that were dropped whole (no rewrite).
    pub compaction_tasks: usize,
    pub bytes_dropped_whole: u64,
}

/// One strategy's runs.
#[derive(Clone, Debug, Serialize)]
pub struct StrategyResult {
    pub label: String,
    /// The `compaction = {...}` body the table was created with.
    pub compaction: String,
    pub runs: Vec<RunFigures>,
    /// Sum over the runs of compaction bytes written / bytes ingested.
    pub compaction_bytes_per_ingested_byte: f64,
    pub wall_seconds: f64,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub config: BlobstoreConfig,
    /// By label (`Blob`, `STCS`, `LCS`, ...).
    pub strategies: BTreeMap<String, StrategyResult>,
}

/// One chart: file name, caption, unit, the figure of a run.
type Figure = (
    &'static str,
    &'static str,
    &'static str,
    fn(&RunFigures) -> f64,
);

/// Progress: (strategy label, run just finished, its figures).
pub type ProgressFn<'a> = dyn FnMut(&str, &RunFigures) + 'a;

/// Runs every strategy of `cfg` in turn, each on a fresh directory under
/// `cfg.work_dir` (which must not hold one already).
pub fn run_bench(cfg: &BlobstoreConfig, progress: &mut ProgressFn<'_>) -> Result<BenchReport> {
    cfg.validate()?;
    let mut strategies = BTreeMap::new();
    for s in &cfg.strategies {
        let (label, compaction) = strategy_options(s)?;
        let dir = cfg.work_dir.join(format!("blobstore-{label}"));
        if dir.exists() {
            return Err(Error::InvalidInput(format!(
                "{} exists: bench blobstore needs fresh directories",
                dir.display()
            )));
        }
        let r = run_strategy(cfg, &label, &compaction, &dir, progress);
        // The data is of no use once measured; a failed removal only leaves files.
        let _ = std::fs::remove_dir_all(&dir);
        strategies.insert(label, r?);
    }
    Ok(BenchReport {
        config: cfg.clone(),
        strategies,
    })
}

/// All runs of one strategy in `dir`.
pub fn run_strategy(
    cfg: &BlobstoreConfig,
    label: &str,
    compaction: &str,
    dir: &Path,
    progress: &mut ProgressFn<'_>,
) -> Result<StrategyResult> {
    let started = Instant::now();
    let clock = SimClock::new(START_MICROS);
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = cfg.compactors;
    opts.compaction_throughput_mb_per_sec = 0;
    opts.purpose = "strata bench blobstore".into();
    // TestDFSIO reads whole files once: a chunk cache would only copy.
    opts.chunk_cache_bytes = 0;
    let db = Database::open(dir, opts)?;
    let with = format!(
        "compaction = {{{compaction}}} AND gc_grace_seconds = {} \
         AND memtable_flush_threshold_mb = {}",
        cfg.gc_grace_seconds, cfg.memtable_mb
    );
    let table = db.create_table_cql(&blobfile::create_table_cql("cfs.blocks", Some(&with)))?;
    let mut runs = Vec::new();
    for run in 1..=cfg.runs {
        let r = one_run(cfg, &db, &table, &clock, run)?;
        progress(label, &r);
        runs.push(r);
    }
    let ingested: u64 = runs.iter().map(|r| r.bytes_ingested).sum();
    let compacted: u64 = runs.iter().map(|r| r.compaction_bytes_written).sum();
    drop(table);
    db.close()?;
    Ok(StrategyResult {
        label: label.to_string(),
        compaction: compaction.to_string(),
        runs,
        compaction_bytes_per_ingested_byte: compacted as f64 / ingested.max(1) as f64,
        wall_seconds: started.elapsed().as_secs_f64(),
    })
}

/// One run (module docs, steps 1 to 7).
fn one_run(
    cfg: &BlobstoreConfig,
    db: &Database,
    table: &Arc<Table>,
    clock: &SimClock,
    run: u32,
) -> Result<RunFigures> {
    let io_before = table.io();
    let history_before = table.compaction_history().len();
    let timeout = Duration::from_secs(cfg.idle_timeout_seconds);

    let delete = |clock: &SimClock| -> Result<f64> {
        clock.advance_seconds(1);
        let t = Instant::now();
        for f in 0..u64::from(cfg.files) {
            blobfile::delete_file(table, f)?;
        }
        table.flush()?;
        Ok(t.elapsed().as_secs_f64())
    };
    // The seed's order cleans the previous run's files first (none before run 1).
    let mut delete_seconds = 0.0;
    if cfg.clean_first && run > 1 {
        delete_seconds = delete(clock)?;
    }
    clock.advance_seconds(1);
    let t = Instant::now();
    for f in 0..u64::from(cfg.files) {
        blobfile::write_file(table, &cfg.shape, cfg.seed, f)?;
    }
    table.flush()?;
    let write_seconds = t.elapsed().as_secs_f64();
    if !cfg.clean_first {
        delete_seconds = delete(clock)?;
    }
    let run_end = Instant::now();
    let bytes_on_disk_after_run = table.disk_bytes_total()?;
    let sstables_after_run = table.view().sstables().len();

    let settled_run = db.wait_for_compactions(timeout);
    let seconds_to_idle = run_end.elapsed().as_secs_f64();

    clock.advance_seconds(i64::from(cfg.gc_grace_seconds) + 1);
    let t = Instant::now();
    let settled_grace = db.wait_for_compactions(timeout);
    let seconds_to_idle_after_gc_grace = t.elapsed().as_secs_f64();
    let bytes_on_disk_after_idle = table.disk_bytes_total()?;

    let io = table.io();
    let history = table.compaction_history();
    let finished = history.get(history_before..).unwrap_or(&[]);
    let bytes_ingested = cfg.bytes_per_run();
    Ok(RunFigures {
        run,
        bytes_ingested,
        // The order deletes every file of the run in it; the seed's
        // leaves this run's files live.
        live_bytes: if cfg.clean_first { bytes_ingested } else { 0 },
        bytes_on_disk_after_run,
        bytes_on_disk_after_idle,
        compaction_bytes_written: io.written(IoCause::Compaction)
            - io_before.written(IoCause::Compaction),
        compaction_bytes_read: io.read(IoCause::Compaction) - io_before.read(IoCause::Compaction),
        flush_bytes: io.written(IoCause::Flush) - io_before.written(IoCause::Flush),
        write_mib_per_s: bytes_ingested as f64 / MIB / write_seconds.max(1e-9),
        write_seconds,
        delete_seconds,
        seconds_to_idle,
        seconds_to_idle_after_gc_grace,
        settled: settled_run && settled_grace,
        sstables_after_run,
        sstables_after_idle: table.view().sstables().len(),
        compaction_tasks: finished.len(),
        bytes_dropped_whole: finished
            .iter()
            .filter(|r| r.kind == "drop")
            .map(|r| r.bytes_in)
            .sum(),
    })
}

impl BenchReport {
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::InvalidInput(format!("json: {e}")))
    }

    /// The summary table: one line per strategy and run.
    pub fn text(&self) -> String {
        let mut out = format!(
            "{:<6} {:>3} {:>10} {:>12} {:>13} {:>14} {:>9} {:>8} {:>9} {:>9} {:>6}\n",
            "strat",
            "run",
            "write MiB/s",
            "disk run MiB",
            "disk idle MiB",
            "compact. MiB",
            "idle s",
            "idle gc s",
            "dropped",
            "sstables",
            "tasks"
        );
        let mib = |b: u64| b as f64 / MIB;
        for r in self.strategies.values() {
            for f in &r.runs {
                out.push_str(&format!(
                    "{:<6} {:>3} {:>10.1} {:>12.1} {:>13.1} {:>14.1} {:>9.2} {:>8.2} {:>9.1} {:>9} {:>6}{}\n",
                    r.label,
                    f.run,
                    f.write_mib_per_s,
                    mib(f.bytes_on_disk_after_run),
                    mib(f.bytes_on_disk_after_idle),
                    mib(f.compaction_bytes_written),
                    f.seconds_to_idle,
                    f.seconds_to_idle_after_gc_grace,
                    mib(f.bytes_dropped_whole),
                    f.sstables_after_idle,
                    f.compaction_tasks,
                    if f.settled { "" } else { "  (not settled)" }
                ));
            }
            out.push_str(&format!(
                "{:<6} compaction bytes / ingested bytes over all runs: {:.3}\n",
                r.label, r.compaction_bytes_per_ingested_byte
            ));
        }
        out
    }

    /// The charts (SVG) into `dir`, one figure across strategies each, by run:
    /// disk after the run and once idle, compaction bytes, write throughput,
    /// time to idle.
    pub fn write_charts(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let runs = f64::from(self.config.runs);
        // Runs are whole numbers: plotters puts ticks at half runs too, and
        // those stay unlabelled (a label "1" under 0.5, 1.0 and 1.5 read as
        // "1 1 1 2 2 2").
        let run_label = |x: &f64| {
            if (x - x.round()).abs() < 1e-9 {
                format!("{x:.0}")
            } else {
                String::new()
            }
        };
        let mut written = Vec::new();
        let charts: [Figure; 5] = [
            (
                "disk_after_run",
                "Bytes on disk at the end of each run (files deleted, deletions flushed)",
                "MiB",
                |f| f.bytes_on_disk_after_run as f64 / MIB,
            ),
            (
                "disk_after_idle",
                "Bytes on disk once gc grace has passed and compaction is idle",
                "MiB",
                |f| f.bytes_on_disk_after_idle as f64 / MIB,
            ),
            (
                "compaction_written",
                "Bytes written by compaction per run",
                "MiB",
                |f| f.compaction_bytes_written as f64 / MIB,
            ),
            (
                "write_throughput",
                "Write throughput per run (flush included)",
                "MiB/s",
                |f| f.write_mib_per_s,
            ),
            (
                "seconds_to_idle",
                "Wall time from the end of a run until no compaction is pending",
                "seconds",
                |f| f.seconds_to_idle,
            ),
        ];
        for (name, caption, y_desc, value) in charts {
            let series: Vec<(String, Vec<(f64, f64)>)> = self
                .strategies
                .values()
                .map(|r| {
                    (
                        r.label.clone(),
                        r.runs
                            .iter()
                            .map(|f| (f64::from(f.run), value(f)))
                            .collect(),
                    )
                })
                .collect();
            let y_max = series
                .iter()
                .flat_map(|(_, pts)| pts.iter().map(|p| p.1))
                .fold(0.0f64, f64::max);
            let path = dir.join(format!("blobstore_{name}.svg"));
            draw_line_chart(LineChart {
                path: path.clone(),
                width: 900,
                caption: caption.to_string(),
                // Half a run of margin each side: one run is still a chart.
                x: 0.5..runs + 0.5,
                y: 0.0..(y_max * 1.1).max(1e-3),
                x_desc: "run",
                y_desc,
                x_label: Some(&run_label),
                series,
            })?;
            written.push(path);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tiny(dir: &Path, strategies: &[&str]) -> BlobstoreConfig {
        BlobstoreConfig {
            files: 4,
            shape: FileShape {
                file_size_bytes: 256 << 10,
                block_size_bytes: 64 << 10,
            },
            runs: 2,
            strategies: strategies.iter().map(|s| s.to_string()).collect(),
            memtable_mb: 1,
            idle_timeout_seconds: 60,
            work_dir: dir.to_path_buf(),
            ..BlobstoreConfig::default()
        }
    }

    #[test]
    fn bad_configurations_are_refused_naming_the_option() {
        let dir = Path::new("/nonexistent");
        for (cfg, needle) in [
            (
                BlobstoreConfig {
                    files: 0,
                    ..tiny(dir, &["STCS"])
                },
                "--files",
            ),
            (
                BlobstoreConfig {
                    runs: 0,
                    ..tiny(dir, &["STCS"])
                },
                "--runs",
            ),
            (tiny(dir, &["XYZ"]), "unknown strategy 'XYZ'"),
            (tiny(dir, &[]), "--strategies"),
            (
                BlobstoreConfig {
                    files: 100_000,
                    runs: 100,
                    ..tiny(dir, &["STCS"])
                },
                "GiB per strategy",
            ),
        ] {
            let e = cfg.validate().expect_err(needle).to_string();
            assert!(e.contains(needle), "{e}");
        }
        assert!(tiny(dir, &["blob", "stcs", "LCS", "cfs"])
            .validate()
            .is_ok());
        let (label, body) = strategy_options("blob").expect("blob");
        assert_eq!(label, "Blob");
        assert_eq!(body, "'class': 'BlobCompactionStrategy'");
    }

    #[test]
    fn in_the_seeds_order_blob_disk_follows_the_live_files() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = BlobstoreConfig {
            clean_first: true,
            runs: 4,
            ..tiny(dir.path(), &["Blob"])
        };
        let report = run_bench(&cfg, &mut |_, _| {}).expect("bench");
        for f in &report.strategies["Blob"].runs {
            assert_eq!(f.live_bytes, f.bytes_ingested, "{f:?}");
            assert!(f.settled, "{f:?}");
            // The previous run's files were dropped whole; what remains is this
            // run's data (incompressible blocks) and sstable overheads.
            let disk = f.bytes_on_disk_after_idle as f64;
            assert!(
                disk >= f.live_bytes as f64 && disk <= 1.10 * f.live_bytes as f64,
                "run {}: {disk} bytes on disk for {} live",
                f.run,
                f.live_bytes
            );
            assert_eq!(f.compaction_bytes_written, 0, "{f:?}");
        }
    }

    #[test]
    fn size_tiered_runs_measure_every_figure_from_the_engine() {
        let dir = tempfile::tempdir().expect("tempdir");
        let cfg = tiny(dir.path(), &["STCS"]);
        let mut seen = 0;
        let report = run_bench(&cfg, &mut |_, _| seen += 1).expect("bench");
        assert_eq!(seen, 2);
        let r = &report.strategies["STCS"];
        assert_eq!(r.runs.len(), 2);
        for f in &r.runs {
            assert_eq!(f.bytes_ingested, 4 * (256 << 10));
            assert!(f.settled, "{f:?}");
            // Flushes wrote at least the payload (incompressible blocks).
            assert!(f.flush_bytes >= f.bytes_ingested, "{f:?}");
            assert!(f.write_mib_per_s > 0.0);
        }
        assert!(
            !dir.path().join("blobstore-STCS").exists(),
            "the strategy's directory is removed"
        );
        let charts = report
            .write_charts(&dir.path().join("charts"))
            .expect("charts");
        assert_eq!(charts.len(), 5);
        assert!(charts.iter().all(|p| p.exists()));
    }
}
