//! `strata bench timeseries`: the arguments of seed 003's time-series test and
//! the printing of its report. The workload and its measurements are
//! `strata_bench::timeseries` (method in its module contract and in
//! BENCHMARKS.md, "Time series (seed 003)").

use crate::bounds::range;
use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::timeseries::{self, BenchConfig, TimeseriesConfig};
use strata_bench::workdir::WorkDir;

#[derive(Args, Debug)]
pub struct TimeseriesArgs {
    /// Series (one partition each), 1 to 1000000.
    #[arg(long, default_value_t = 100, value_parser = range(1u32, 1_000_000,
        "every series is a partition the reads pick from"))]
    pub series: u32,
    /// Simulated ingest, rows per second over all series, 0.000001 to 1000000.
    #[arg(long, default_value_t = 0.5, value_parser = range(1e-6f64, 1e6,
        "a positive, finite rate; the run's row count is bounded as well"))]
    pub rows_per_second: f64,
    /// Bytes of each row's value, at most 1 MiB.
    #[arg(long, default_value_t = 64, value_parser = range(0usize, 1 << 20,
        "time-series rows are small; each is held in memory until flushed"))]
    pub value_size: usize,
    /// The table's default_time_to_live, seconds, 1 to 630720000 (20 years).
    #[arg(long, default_value_t = 4 * 86_400, value_parser = range(1u32, 630_720_000,
        "Cassandra's own ceiling on a TTL is 20 years; the workload is about expiry"))]
    pub ttl: u32,
    /// gc_grace_seconds.
    #[arg(long, default_value_t = 3_600, value_parser = range(0u32, u32::MAX,
        "any gc_grace_seconds the table takes"))]
    pub gc_grace: u32,
    /// Days of the write-only phase (the published test ran a week, then added reads),
    /// 0 to 3650.
    #[arg(long, default_value_t = 14.0, value_parser = range(0.0f64, 3650.0,
        "ten years of simulated time; the run's row count is bounded as well"))]
    pub write_days: f64,
    /// Days with 10% "most recent N" reads added, 0 to 3650.
    #[arg(long, default_value_t = 3.0, value_parser = range(0.0f64, 3650.0,
        "ten years of simulated time; the run's row count is bounded as well"))]
    pub recent_read_days: f64,
    /// Days with cold reads added as well, 0 to 3650.
    #[arg(long, default_value_t = 3.0, value_parser = range(0.0f64, 3650.0,
        "ten years of simulated time; the run's row count is bounded as well"))]
    pub cold_read_days: f64,
    /// Share of late writes (old timestamps) in the out-of-order runs, 0 to 0.9.
    #[arg(long, default_value_t = 0.01, value_parser = range(0.0f64, 0.9,
        "at least 10% of writes stay in order, or nothing is late"))]
    pub late_fraction: f64,
    /// Oldest age of a late write, seconds, 3600 to 315360000 (10 years).
    #[arg(long, default_value_t = 2 * 86_400, value_parser = range(3_600u64, 315_360_000,
        "at least an hour to be late at all; at most ten years of simulated time"))]
    pub late_max_age: u64,
    /// Simulated seconds between flushes (compaction runs after each), 1 to
    /// 21600 (the sampling interval, 6 h).
    #[arg(long, default_value_t = 3_600, value_parser = range(1u64, 6 * 3_600,
        "at least one flush per six-hour sample"))]
    pub flush_seconds: u64,
    /// Strategies to run, comma separated: DTCS, TWCS, STCS, LCS.
    #[arg(long, value_delimiter = ',', default_value = "DTCS,TWCS,STCS,LCS")]
    pub strategies: Vec<String>,
    /// Skip the out-of-order pair (TWCS with late writes, segregation on and off).
    #[arg(long)]
    pub no_out_of_order: bool,
    /// Also run segregation alone and the row-level expiry check alone (with
    /// late writes), to see what each mechanism does.
    #[arg(long)]
    pub mechanisms: bool,
    #[arg(long, default_value_t = 3, value_parser = range(0u64, u64::MAX, "any seed"))]
    pub seed: u64,
    /// Where the bench creates its own work directory for the per-run data
    /// directories, removed at the end (default /dev/shm when present: the
    /// figures are bytes and counts, and tmpfs keeps fsyncs out of the way);
    /// nothing else in it is touched.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub report: super::ReportArgs,
}

pub fn run(args: TimeseriesArgs) -> Result<()> {
    let base = TimeseriesConfig {
        series: args.series,
        rows_per_second: args.rows_per_second,
        value_size: args.value_size,
        ttl_seconds: args.ttl,
        gc_grace_seconds: args.gc_grace,
        write_days: args.write_days,
        recent_read_days: args.recent_read_days,
        cold_read_days: args.cold_read_days,
        late_max_age_seconds: args.late_max_age,
        flush_seconds: args.flush_seconds,
        seed: args.seed,
        ..TimeseriesConfig::default()
    };
    let mut config = BenchConfig {
        base,
        late_fraction: args.late_fraction,
        work_dir: std::path::PathBuf::new(),
        strategies: args.strategies.clone(),
        out_of_order: !args.no_out_of_order,
        mechanisms: args.mechanisms,
    };
    // Argument errors before any directory is made.
    config.validate()?;
    let work_dir = WorkDir::create_in_memory_default(args.dir.as_deref(), "timeseries")?;
    config.work_dir = work_dir.path().to_path_buf();
    let mut last = String::new();
    let report = timeseries::run_bench(&config, &mut |label, day| {
        let line = format!("{label}: day {}", day.floor());
        if line != last {
            eprintln!("{line}");
            last = line;
        }
    });
    // Each run removes its own directory; the parent is ours, removed here.
    args.report.finish(
        work_dir,
        report,
        timeseries::BenchReport::text,
        timeseries::BenchReport::write_charts,
        timeseries::BenchReport::to_json,
    )
}
