//! `strata bench lcs-levels`: the arguments of issue 16 item 4's sweep (normal
//! LCS against fixed-levels mode, 10 GiB to 10 TiB, simulator and model, then
//! the real engine at scaled sizes) and the printing of its report. The sweep,
//! its scenario and its acceptance checks are `strata_bench::lcs_levels`;
//! BENCHMARKS.md, "Fixed levels across data sizes", has the figures.

use crate::bounds::{quantity, range, Quantity, Unit};
use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::lcs_levels::{
    self, parse_shapes, LcsLevelsConfig, LcsLevelsReport, DEFAULT_CONFIGS, DEFAULT_ENGINE_CONFIGS,
    DEFAULT_ENGINE_SIZES, DEFAULT_SCALE, DEFAULT_SIZES,
};
use strata_bench::workdir::WorkDir;

#[derive(Args, Debug)]
pub struct LcsLevelsArgs {
    /// Data sizes of the simulated sweep (ingest rate x TTL), comma separated,
    /// in `strata model`'s units, each 1GiB to 100TiB. Runs past 1 TiB take
    /// minutes each.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_SIZES,
          value_parser = quantity(Unit::Size, "1GiB", "100TiB",
              "a simulated case past 100 TiB takes hours"))]
    pub sizes: Vec<Quantity>,
    /// Configurations to simulate: `normal<F>` (normal LCS at fanout F),
    /// `fixed<N>` (fixed-levels mode, N levels, fanout 4) or `fixed<N>f<F>`.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_CONFIGS)]
    pub configs: Vec<String>,
    /// Full-scale data sizes the real engine runs (scaled by `--scale`), each
    /// 1GiB to 10TiB.
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_ENGINE_SIZES,
          value_parser = quantity(Unit::Size, "1GiB", "10TiB",
              "the engine's cost grows as the square of the sstable count"))]
    pub engine_sizes: Vec<Quantity>,
    /// Configurations the real engine runs (same names as `--configs`).
    #[arg(long, value_delimiter = ',', default_value = DEFAULT_ENGINE_CONFIGS)]
    pub engine_configs: Vec<String>,
    /// Only the simulator and the model.
    #[arg(long, conflicts_with = "engine_only")]
    pub skip_engine: bool,
    /// Only the real engine (each case still runs its own simulator beside it).
    #[arg(long)]
    pub engine_only: bool,
    /// Cases at once, one thread each (the simulator and each engine case are
    /// single-threaded). Default 1: this is a shared machine's benchmark. At
    /// most 64.
    #[arg(long, default_value_t = 1, value_parser = range(1usize, 64,
        "one thread each; a machine gains nothing past its core count"))]
    pub jobs: usize,
    /// Engine scale of every byte figure (data, flushes, sstables), in
    /// [1/10240, 1]. Default 1/10240: 160 MiB sstables become 16 KiB (the
    /// engine's minimum), 100 GiB of data 10 MiB.
    #[arg(long, default_value_t = DEFAULT_SCALE, value_parser = range(DEFAULT_SCALE, 1.0,
        "below, 160 MiB sstables would be under the engine's 16 KiB minimum"))]
    pub scale: f64,
    /// Simulated hours of each engine case; the steady window starts at 48 h
    /// (TTL 2 d + gc grace 60 s). 50 to 1000.
    #[arg(long, default_value_t = 96.0, value_parser = range(50.0f64, 1000.0,
        "the steady window starts at 48 h; a thousand hours is ten steady states"))]
    pub engine_hours: f64,
    /// Rows per partition in the engine (64-byte values): 4 keeps ~50
    /// partitions in a 16 KiB sstable. 1 to 100000.
    #[arg(long, default_value_t = 4, value_parser = range(1usize, 100_000,
        "a partition is one mutation, held whole in memory"))]
    pub cells_per_partition: usize,
    /// Seed of the engine's data generator.
    #[arg(long, default_value_t = 16, value_parser = range(0u64, u64::MAX, "any seed"))]
    pub seed: u64,
    /// Where the bench creates its own work directory for the engine's data
    /// directories, removed at the end (default /dev/shm when present: the
    /// figures are byte counts, and tmpfs keeps fsyncs out of the way);
    /// nothing else in it is touched.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub report: super::ReportArgs,
}

pub fn run(args: LcsLevelsArgs) -> Result<()> {
    let values = |q: &[Quantity]| q.iter().map(|q| q.value).collect::<Vec<f64>>();
    let mut config = LcsLevelsConfig {
        sizes: values(&args.sizes),
        configs: parse_shapes("--configs", &args.configs)?,
        engine_sizes: values(&args.engine_sizes),
        engine_configs: parse_shapes("--engine-configs", &args.engine_configs)?,
        simulate: !args.engine_only,
        engine: !args.skip_engine,
        scale: args.scale,
        engine_hours: args.engine_hours,
        cells_per_partition: args.cells_per_partition,
        seed: args.seed,
        jobs: args.jobs,
        work_dir: std::path::PathBuf::new(),
    };
    // Argument errors before any directory is made.
    config.validate()?;
    let work_dir = WorkDir::create_in_memory_default(args.dir.as_deref(), "lcs-levels")?;
    config.work_dir = work_dir.path().to_path_buf();
    let report = lcs_levels::run(&config, &|line| eprintln!("{line}"));
    args.report.finish(
        work_dir,
        report,
        LcsLevelsReport::text,
        LcsLevelsReport::write_charts,
        LcsLevelsReport::to_json,
    )
}
