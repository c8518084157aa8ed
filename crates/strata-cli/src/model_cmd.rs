//! `strata model`, `strata model advise` and `strata simulate`: the compaction
//! model and simulator of issue 5 (`strata::model`, `strata::sim`) on the command
//! line. No data directory is touched. The simulator's configuration from a
//! preset and overrides is `strata_bench::simulate`; this file parses and prints.
//!
//! Sizes take decimal and binary units (`169GB`, `160MiB`, `1.5TB`), rates a size
//! per second (`1MB/s`), durations `2d`, `48h`, `60s`. The seed's own figures are
//! in binary units (169 GiB, 160 MiB, 1 MiB/s): see docs/compaction/model.md.

use clap::{Args, Subcommand};
use std::fmt::Write as _;
use std::path::PathBuf;
use strata::model::{
    self, parse_duration_seconds, parse_rate_bytes_per_second, parse_size_bytes, AdviseInput,
    ModelInput, ModelOutput, ModelStrategy, Prediction,
};
use strata::sim::{self, SimResult};
use strata::{Error, Result};
use strata_bench::simulate::SimulateOverrides;

#[derive(Args, Debug)]
#[command(args_conflicts_with_subcommands = true)]
pub struct ModelArgs {
    #[command(subcommand)]
    pub advise: Option<ModelSub>,
    #[command(flatten)]
    pub predict: PredictArgs,
}

#[derive(Subcommand, Debug)]
pub enum ModelSub {
    /// Ranks strategies and parameters for a workload and a disk budget.
    Advise(AdviseArgs),
}

#[derive(Args, Debug)]
pub struct PredictArgs {
    /// stcs, lcs, twcs or dtcs.
    #[arg(long, default_value = "lcs")]
    pub strategy: String,
    /// Live data size (default: ingest rate x TTL).
    #[arg(long)]
    pub data_size: Option<String>,
    /// LCS sstable_size_in_mb (also in fixed-levels mode): a bare number
    /// is MiB, as in the CQL option (`160`); or with a unit (`160MiB`).
    #[arg(long, default_value = "160MiB")]
    pub sstable_size: String,
    #[arg(long, default_value_t = 10)]
    pub fanout: u32,
    /// LCS fixed-levels mode: number of levels (0 = off).
    #[arg(long, default_value_t = 0)]
    pub level_count: u32,
    /// LCS `l0_size_tiered`: L0 below one sstable's worth merged by size tiers
    /// (refined model; the seed's formula assumes it anyway).
    #[arg(long)]
    pub l0_size_tiered: bool,
    /// LCS `l0_compaction_trigger`: L0 goes to L1 at this many sstables and is
    /// never merged within itself (0 = off, Cassandra's rule; refined model).
    #[arg(long, default_value_t = 0)]
    pub l0_compaction_trigger: u32,
    /// Memtable flush size (default 256 MiB: the seed's unstated flush size lies in
    /// (64, 256] MiB; 256 MiB is the benchmark's default too).
    #[arg(long, default_value = "256MiB")]
    pub flush_size: String,
    #[arg(long)]
    pub ingest_rate: Option<String>,
    #[arg(long)]
    pub ttl: Option<String>,
    #[arg(long, default_value = "10d")]
    pub gc_grace: String,
    #[arg(long, default_value_t = 4)]
    pub min_threshold: u32,
    /// TWCS window (default TTL / 20).
    #[arg(long)]
    pub window: Option<String>,
    /// Show the refined model's figures as the primary ones (both are printed).
    #[arg(long)]
    pub refined: bool,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct AdviseArgs {
    #[arg(long)]
    pub data_size: Option<String>,
    #[arg(long)]
    pub ingest_rate: String,
    #[arg(long)]
    pub ttl: Option<String>,
    #[arg(long, default_value = "10d")]
    pub gc_grace: String,
    #[arg(long, default_value = "256MiB")]
    pub flush_size: String,
    /// Share of operations that are reads (0..1).
    #[arg(long, default_value_t = 0.5)]
    pub read_fraction: f64,
    /// Disk the table may use: data plus the largest compaction's temporary space.
    #[arg(long)]
    pub free_disk: String,
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// A seed node preset (A: fanout 10, 160 MiB; B: 4, 160 MiB; C: 4, 1 GiB;
    /// 1 MiB/s, TTL 2d, gc grace 60 s, 88 h). Explicit options override it.
    #[arg(long)]
    pub node: Option<char>,
    /// stcs, lcs, twcs or dtcs (the real deciders; twcs and dtcs cut flushes and
    /// merges by time window, as the engine does).
    #[arg(long)]
    pub strategy: Option<String>,
    #[arg(long)]
    pub fanout: Option<u32>,
    /// LCS sstable size: a bare number is MiB, as sstable_size_in_mb (`160`);
    /// or with a unit (`160MiB`). Rounded to whole MiB.
    #[arg(long)]
    pub sstable_size: Option<String>,
    #[arg(long)]
    pub level_count: Option<u32>,
    /// Extra compaction sub-options in CQL map syntax, e.g. "'min_threshold': 8".
    #[arg(long)]
    pub options: Option<String>,
    #[arg(long)]
    pub ingest_rate: Option<String>,
    #[arg(long)]
    pub flush_size: Option<String>,
    /// TTL of every write (0 = none).
    #[arg(long)]
    pub ttl: Option<String>,
    #[arg(long)]
    pub gc_grace: Option<String>,
    #[arg(long)]
    pub duration: Option<String>,
    #[arg(long, default_value = "1h")]
    pub sample_interval: String,
    /// Compaction throughput limit (default: unthrottled, compaction takes no time).
    #[arg(long)]
    pub throughput: Option<String>,
    #[arg(long, default_value_t = 2)]
    pub concurrent_compactors: usize,
    /// Skip the per-task invariant checks (level disjointness, the kept
    /// metadata against a rebuild, ...): they cost O(n log n) per task, so
    /// runs of thousands of sstables and more use this.
    #[arg(long)]
    pub no_checks: bool,
    /// Width of the write-time buckets of each simulated sstable (default
    /// `max(60s, TTL / 256)`). Without TTL nothing is purged, so a coarser
    /// width (`1h`) saves memory and time in long runs; results may then differ
    /// slightly (where time windows cut, float rounding of sizes).
    #[arg(long)]
    pub bucket_width: Option<String>,
    /// Write the whole result (series included) as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the time series as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

fn gb(bytes: f64) -> String {
    format!("{:.1} GB", bytes / 1e9)
}

fn to_json<T: serde::Serialize>(v: &T) -> Result<String> {
    serde_json::to_string_pretty(v).map_err(|e| Error::InvalidInput(format!("JSON: {e}")))
}

pub fn run_model(args: ModelArgs) -> Result<()> {
    match args.advise {
        Some(ModelSub::Advise(a)) => run_advise(a),
        None => run_predict(args.predict),
    }
}

fn opt<T>(v: &Option<String>, parse: fn(&str) -> Result<T>) -> Result<Option<T>> {
    v.as_deref().map(parse).transpose()
}

fn run_predict(a: PredictArgs) -> Result<()> {
    let input = ModelInput {
        strategy: ModelStrategy::parse(&a.strategy)?,
        data_bytes: opt(&a.data_size, parse_size_bytes)?,
        sstable_bytes: strata::model::parse_sstable_size_bytes(&a.sstable_size)?,
        fanout: a.fanout,
        level_count: a.level_count,
        flush_bytes: parse_size_bytes(&a.flush_size)?,
        ingest_bytes_per_second: opt(&a.ingest_rate, parse_rate_bytes_per_second)?,
        ttl_seconds: opt(&a.ttl, parse_duration_seconds)?,
        gc_grace_seconds: parse_duration_seconds(&a.gc_grace)?,
        min_threshold: a.min_threshold,
        window_seconds: opt(&a.window, parse_duration_seconds)?,
        l0_size_tiered: a.l0_size_tiered,
        l0_compaction_trigger: a.l0_compaction_trigger,
        ..ModelInput::default()
    };
    let out = model::predict(&input, a.refined)?;
    if a.json {
        println!("{}", to_json(&out)?);
    } else {
        print!("{}", model_text(&out));
    }
    Ok(())
}

/// One line of the side-by-side table: name and how to print a prediction's figure.
type Row = (&'static str, fn(&Prediction) -> String);

/// Seed formula and refined model side by side, then the refined breakdown.
fn model_text(out: &ModelOutput) -> String {
    let mut t = String::new();
    let rows: [Row; 8] = [
        ("levels", |p| format!("{:.2}", p.levels)),
        ("write_amplification", |p| {
            format!("{:.2}", p.write_amplification)
        }),
        ("io_rate_mb_s", |p| {
            p.io_rate_mb_s.map_or("-".into(), |r| format!("{r:.1}"))
        }),
        ("sstables_per_read", |p| {
            format!("{:.0}", p.sstables_per_read)
        }),
        ("space_amplification", |p| {
            format!("{:.3}", p.space_amplification)
        }),
        ("data on disk", |p| gb(p.data_bytes)),
        ("sstable size", |p| {
            format!("{:.0} MiB", p.sstable_bytes / model::MIB)
        }),
        ("peak space", |p| gb(p.peak_space_bytes)),
    ];
    let _ = writeln!(
        t,
        "{} model ({} shown first with --json)",
        out.strategy.name(),
        out.model
    );
    let _ = writeln!(t, "{:<22} {:>14} {:>14}", "", "seed formula", "refined");
    for (name, f) in rows {
        let _ = writeln!(t, "{name:<22} {:>14} {:>14}", f(&out.seed), f(&out.refined));
    }
    let _ = writeln!(t, "\nwrite amplification, seed formula:");
    for term in &out.seed.terms {
        let _ = writeln!(t, "  {:<40} {:>7.2}", term.name, term.write_amplification);
    }
    let _ = writeln!(t, "write amplification, refined:");
    for term in &out.refined.terms {
        let _ = writeln!(t, "  {:<40} {:>7.2}", term.name, term.write_amplification);
    }
    t
}

fn run_advise(a: AdviseArgs) -> Result<()> {
    let input = AdviseInput {
        data_bytes: opt(&a.data_size, parse_size_bytes)?,
        ingest_bytes_per_second: parse_rate_bytes_per_second(&a.ingest_rate)?,
        ttl_seconds: opt(&a.ttl, parse_duration_seconds)?,
        gc_grace_seconds: parse_duration_seconds(&a.gc_grace)?,
        flush_bytes: parse_size_bytes(&a.flush_size)?,
        read_fraction: a.read_fraction,
        free_disk_bytes: parse_size_bytes(&a.free_disk)?,
    };
    let advice = model::advise(&input)?;
    if a.json {
        println!("{}", to_json(&advice)?);
        return Ok(());
    }
    println!(
        "{:>4}  {:<34} {:>8} {:>9} {:>10} {:>10} {:>7}  note",
        "rank", "choice", "WA", "MB/s", "sst/read", "peak", "score"
    );
    for c in &advice.choices {
        println!(
            "{:>4}  {:<34} {:>8.2} {:>9.1} {:>10.0} {:>10} {:>7}  {}",
            c.rank,
            c.label,
            c.write_amplification,
            c.io_rate_mb_s,
            c.sstables_per_read,
            gb(c.peak_space_bytes),
            c.score.map_or("-".into(), |s| format!("{s:.2}")),
            c.rejected.as_deref().unwrap_or("")
        );
    }
    println!("\ndecided by: {}", advice.deciding_constraint);
    println!("{}", advice.explanation);
    if let Some(best) = advice.choices.first().filter(|c| c.rejected.is_none()) {
        println!("compaction = {}", best.options);
    }
    Ok(())
}

fn simulate_overrides(a: &SimulateArgs) -> SimulateOverrides {
    SimulateOverrides {
        node: a.node,
        strategy: a.strategy.clone(),
        fanout: a.fanout,
        sstable_size: a.sstable_size.clone(),
        level_count: a.level_count,
        options: a.options.clone(),
        ingest_rate: a.ingest_rate.clone(),
        flush_size: a.flush_size.clone(),
        ttl: a.ttl.clone(),
        gc_grace: a.gc_grace.clone(),
        duration: a.duration.clone(),
        sample_interval: a.sample_interval.clone(),
        throughput: a.throughput.clone(),
        concurrent_compactors: a.concurrent_compactors,
        no_checks: a.no_checks,
        bucket_width: a.bucket_width.clone(),
    }
}

pub fn run_simulate(a: SimulateArgs) -> Result<()> {
    let (cfg, notes) = simulate_overrides(&a).config()?;
    for note in &notes {
        eprintln!("{note}");
    }
    let r = sim::run(&cfg)?;
    println!("strategy: {} {}", r.strategy, cfg.compaction);
    println!(
        "{:>6} {:>9} {:>7} {:>7} {:>10} {:>9}  levels (sstables)",
        "hour", "IO MB/s", "WA", "levels", "data", "sstables"
    );
    for s in &r.series {
        let levels: Vec<String> = s.levels.iter().map(|l| l.sstables.to_string()).collect();
        println!(
            "{:>6.1} {:>9.2} {:>7.2} {:>7} {:>10} {:>9}  [{}]",
            s.time_seconds as f64 / 3600.0,
            s.io_rate_mb_s,
            s.write_amplification,
            s.fractional_levels
                .map_or("-".into(), |l| format!("{l:.2}")),
            gb(s.data_bytes as f64),
            s.sstables,
            levels.join(", ")
        );
    }
    println!(
        "\nsummary: write amplification {:.2} over the run, {:.2} from hour {:.0} ({:.1} MB/s of write I/O); \
         levels {}; data {} (steady mean {}); {} sstables (max {}); tasks: {} merges, {} moves, {} drops, {} rewrites; \
         {} decisions in {:.2} s wall",
        r.write_amplification,
        r.steady_write_amplification,
        r.steady_from_seconds as f64 / 3600.0,
        r.steady_io_rate_mb_s,
        r.steady_levels.map_or("-".into(), |l| format!("{l:.2}")),
        gb(r.final_data_bytes as f64),
        gb(r.steady_data_bytes),
        r.final_sstables,
        r.max_sstables,
        r.tasks.merges,
        r.tasks.moves,
        r.tasks.drops,
        r.tasks.rewrites,
        r.tasks.decisions,
        r.elapsed_wall_seconds
    );
    if let Some(path) = &a.json {
        std::fs::write(path, to_json(&r)?).map_err(|e| Error::io(path, e))?;
    }
    if let Some(path) = &a.csv {
        std::fs::write(path, csv(&r)).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}

fn csv(r: &SimResult) -> String {
    let mut out = String::from(
        "time_seconds,bytes_flushed,bytes_compacted,io_rate_mb_s,write_amplification,data_bytes,sstables,fractional_levels,level_sstables,level_bytes\n",
    );
    for s in &r.series {
        let counts: Vec<String> = s.levels.iter().map(|l| l.sstables.to_string()).collect();
        let bytes: Vec<String> = s.levels.iter().map(|l| l.bytes.to_string()).collect();
        let _ = writeln!(
            out,
            "{},{},{},{:.4},{:.4},{},{},{},{},{}",
            s.time_seconds,
            s.bytes_flushed,
            s.bytes_compacted,
            s.io_rate_mb_s,
            s.write_amplification,
            s.data_bytes,
            s.sstables,
            s.fractional_levels
                .map_or(String::new(), |l| format!("{l:.4}")),
            counts.join(";"),
            bytes.join(";")
        );
    }
    out
}
