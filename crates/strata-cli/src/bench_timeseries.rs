//! `strata bench timeseries`: the arguments of seed 003's time-series test and
//! the printing of its report. The workload and its measurements are
//! `strata_bench::timeseries` (method in its module contract and in
//! BENCHMARKS.md, "Time series (seed 003)").

use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::timeseries::{self, BenchConfig, TimeseriesConfig};

#[derive(Args, Debug)]
pub struct TimeseriesArgs {
    /// Series (one partition each).
    #[arg(long, default_value_t = 100)]
    pub series: u32,
    /// Simulated ingest, rows per second over all series.
    #[arg(long, default_value_t = 0.5)]
    pub rows_per_second: f64,
    /// Bytes of each row's value.
    #[arg(long, default_value_t = 64)]
    pub value_size: usize,
    /// The table's default_time_to_live, seconds.
    #[arg(long, default_value_t = 4 * 86_400)]
    pub ttl: u32,
    /// gc_grace_seconds.
    #[arg(long, default_value_t = 3_600)]
    pub gc_grace: u32,
    /// Days of the write-only phase (the seed ran a week, then added reads).
    #[arg(long, default_value_t = 14.0)]
    pub write_days: f64,
    /// Days with 10% "most recent N" reads added.
    #[arg(long, default_value_t = 3.0)]
    pub recent_read_days: f64,
    /// Days with cold reads added as well.
    #[arg(long, default_value_t = 3.0)]
    pub cold_read_days: f64,
    /// Share of late writes (old timestamps) in the out-of-order runs.
    #[arg(long, default_value_t = 0.01)]
    pub late_fraction: f64,
    /// Oldest age of a late write, seconds.
    #[arg(long, default_value_t = 2 * 86_400)]
    pub late_max_age: u64,
    /// Simulated seconds between flushes (compaction runs after each).
    #[arg(long, default_value_t = 3_600)]
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
    #[arg(long, default_value_t = 3)]
    pub seed: u64,
    /// Parent of the per-run data directories (default /dev/shm when present:
    /// the figures are bytes and counts, and tmpfs keeps fsyncs out of the way).
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
    let late_check = TimeseriesConfig {
        late_fraction: args.late_fraction,
        ..base.clone()
    };
    late_check.validate()?;
    let work_dir = super::bench_work_dir(args.dir.as_deref(), "timeseries");
    let config = BenchConfig {
        base,
        late_fraction: args.late_fraction,
        work_dir: work_dir.clone(),
        strategies: args.strategies.clone(),
        out_of_order: !args.no_out_of_order,
        mechanisms: args.mechanisms,
    };
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
        &work_dir,
        report,
        timeseries::BenchReport::text,
        timeseries::BenchReport::write_charts,
        timeseries::BenchReport::to_json,
    )
}
