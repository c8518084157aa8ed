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
use strata::model::{self, AdviseInput, ModelInput, ModelOutput, ModelStrategy, Prediction};
use strata::sim::{self, SimResult};
use strata::{Error, Result};
use strata_bench::simulate::SimulateOverrides;
use strata_bench::workdir::write_new_or_regular;

use crate::bounds::{quantity, range, Bounded, Quantity, QuantityParser, Unit};

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
    /// Live data size (default: ingest rate x TTL), 1B to 1048576TiB.
    #[arg(long, value_parser = data_size())]
    pub data_size: Option<Quantity>,
    /// LCS sstable_size_in_mb (also in fixed-levels mode): a bare number
    /// is MiB, as in the CQL option (`160`); or with a unit (`160MiB`); 1 to
    /// 1048576 MiB.
    #[arg(long, default_value = "160MiB", value_parser = sstable_size())]
    pub sstable_size: Quantity,
    /// LCS fanout_size, 2 to 1000.
    #[arg(long, default_value_t = 10, value_parser = fanout())]
    pub fanout: u32,
    /// LCS fixed-levels mode: number of levels (0 = off), at most 10.
    #[arg(long, default_value_t = 0, value_parser = level_count())]
    pub level_count: u32,
    /// LCS `l0_size_tiered`: L0 below one sstable's worth merged by size tiers
    /// (refined model; the published formula assumes it anyway).
    #[arg(long)]
    pub l0_size_tiered: bool,
    /// LCS `l0_compaction_trigger`: L0 goes to L1 at this many sstables and is
    /// never merged within itself (0 = off, Cassandra's rule; refined model),
    /// at most 32.
    #[arg(long, default_value_t = 0, value_parser = range(0u32,
        strata::options::MAX_L0_COMPACTION_TRIGGER as u32, "the table option's own range"))]
    pub l0_compaction_trigger: u32,
    /// Memtable flush size (default 256 MiB: the leveling-multiplier experiment's
    /// unstated flush size lies in (64, 256] MiB; 256 MiB is the benchmark's
    /// default too), 1KiB to 1TiB.
    #[arg(long, default_value = "256MiB", value_parser = flush_size())]
    pub flush_size: Quantity,
    /// Ingest rate, 1B/s to 1TiB/s.
    #[arg(long, value_parser = ingest_rate())]
    pub ingest_rate: Option<Quantity>,
    /// TTL of every write, 1s to 7300d (Cassandra's 20-year ceiling).
    #[arg(long, value_parser = ttl())]
    pub ttl: Option<Quantity>,
    /// gc_grace_seconds, 0s to 49710d.
    #[arg(long, default_value = "10d", value_parser = gc_grace())]
    pub gc_grace: Quantity,
    /// STCS min_threshold, 2 to 4294967295.
    #[arg(long, default_value_t = 4, value_parser = min_threshold())]
    pub min_threshold: u32,
    /// TWCS window (default TTL / 20), 1s to 3650d.
    #[arg(long, value_parser = quantity(Unit::Duration, "1s", "3650d",
        "a time window of ten years holds all the data there is"))]
    pub window: Option<Quantity>,
    /// Show the refined model's figures as the primary ones (both are printed).
    #[arg(long)]
    pub refined: bool,
    #[command(flatten)]
    pub output: crate::format::OutputArgs,
}

#[derive(Args, Debug)]
pub struct AdviseArgs {
    /// Live data size, 1B to 1048576TiB.
    #[arg(long, value_parser = data_size())]
    pub data_size: Option<Quantity>,
    /// Ingest rate, 1B/s to 1TiB/s.
    #[arg(long, value_parser = ingest_rate())]
    pub ingest_rate: Quantity,
    /// TTL of every write, 1s to 7300d.
    #[arg(long, value_parser = ttl())]
    pub ttl: Option<Quantity>,
    /// gc_grace_seconds, 0s to 49710d.
    #[arg(long, default_value = "10d", value_parser = gc_grace())]
    pub gc_grace: Quantity,
    /// Memtable flush size, 1KiB to 1TiB.
    #[arg(long, default_value = "256MiB", value_parser = flush_size())]
    pub flush_size: Quantity,
    /// Share of operations that are reads (0..1).
    #[arg(long, default_value_t = 0.5, value_parser = range(0.0f64, 1.0,
        "a share of all operations"))]
    pub read_fraction: f64,
    /// Disk the table may use: data plus the largest compaction's temporary
    /// space, 1B to 1048576TiB.
    #[arg(long, value_parser = data_size())]
    pub free_disk: Quantity,
    #[command(flatten)]
    pub output: crate::format::OutputArgs,
}

#[derive(Args, Debug)]
pub struct SimulateArgs {
    /// A node preset of the leveling-multiplier experiment (A: fanout 10,
    /// 160 MiB; B: 4, 160 MiB; C: 4, 1 GiB; 1 MiB/s, TTL 2d, gc grace 60 s,
    /// 88 h). Explicit options override it.
    #[arg(long)]
    pub node: Option<char>,
    /// stcs, lcs, twcs or dtcs (the real deciders; twcs and dtcs cut flushes and
    /// merges by time window, as the engine does).
    #[arg(long)]
    pub strategy: Option<String>,
    /// LCS fanout_size, 2 to 1000.
    #[arg(long, value_parser = fanout())]
    pub fanout: Option<u32>,
    /// LCS sstable size: a bare number is MiB, as sstable_size_in_mb (`160`);
    /// or with a unit (`160MiB`). Rounded to whole MiB; 1 to 1048576 MiB.
    #[arg(long, value_parser = sstable_size())]
    pub sstable_size: Option<Quantity>,
    /// LCS fixed-levels mode: number of levels (0 = off), at most 10.
    #[arg(long, value_parser = level_count())]
    pub level_count: Option<u32>,
    /// Extra compaction sub-options in CQL map syntax, e.g. "'min_threshold': 8".
    #[arg(long)]
    pub options: Option<String>,
    /// Ingest rate, 1B/s to 1TiB/s.
    #[arg(long, value_parser = ingest_rate())]
    pub ingest_rate: Option<Quantity>,
    /// Memtable flush size, 1KiB to 1TiB.
    #[arg(long, value_parser = flush_size())]
    pub flush_size: Option<Quantity>,
    /// TTL of every write (0 = none), at most 7300d.
    #[arg(long, value_parser = quantity(Unit::Duration, "0s", "7300d",
        "Cassandra's ceiling on a TTL is 20 years"))]
    pub ttl: Option<Quantity>,
    /// gc_grace_seconds, 0s to 49710d.
    #[arg(long, value_parser = gc_grace())]
    pub gc_grace: Option<Quantity>,
    /// Simulated time, 1s to 3650d (and at most 10,000,000 flushes).
    #[arg(long, value_parser = quantity(Unit::Duration, "1s", "3650d",
        "ten years of simulated time; the number of flushes is bounded as well"))]
    pub duration: Option<Quantity>,
    /// Time between samples of the series, 1s to 3650d (and at most 1,000,000
    /// samples).
    #[arg(long, default_value = "1h", value_parser = quantity(Unit::Duration, "1s", "3650d",
        "one sample a second at the finest; the number of samples is bounded as well"))]
    pub sample_interval: Quantity,
    /// Compaction throughput limit (default: unthrottled, compaction takes no
    /// time), 1B/s to 1TiB/s.
    #[arg(long, value_parser = quantity(Unit::Rate, "1B/s", "1TiB/s",
        "a positive rate; past 1 TiB/s leave it unthrottled"))]
    pub throughput: Option<Quantity>,
    /// Compactions at once in simulated time, 1 to 64.
    #[arg(long, default_value_t = 2, value_parser = range(1usize, 64,
        "as the engine's concurrent_compactors"))]
    pub concurrent_compactors: usize,
    /// Skip the per-task invariant checks (level disjointness, the kept
    /// metadata against a rebuild, ...): they cost O(n log n) per task, so
    /// runs of thousands of sstables and more use this.
    #[arg(long)]
    pub no_checks: bool,
    /// Width of the write-time buckets of each simulated sstable (default
    /// `max(60s, TTL / 256)`). Without TTL nothing is purged, so a coarser
    /// width (`1h`) saves memory and time in long runs; results may then differ
    /// slightly (where time windows cut, float rounding of sizes). 1s to 3650d.
    #[arg(long, value_parser = quantity(Unit::Duration, "1s", "3650d",
        "a bucket is at least a second of writes, at most ten years"))]
    pub bucket_width: Option<Quantity>,
    /// Write the whole result (series included) as JSON.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the time series as CSV.
    #[arg(long)]
    pub csv: Option<PathBuf>,
}

// The ranges shared by `model`, `model advise` and `simulate`.
fn data_size() -> QuantityParser {
    quantity(
        Unit::Size,
        "1B",
        "1048576TiB",
        "the model is arithmetic, but past an exabyte no node holds it",
    )
}

fn sstable_size() -> QuantityParser {
    quantity(
        Unit::SstableSize,
        "1",
        "1048576",
        "sstable_size_in_mb's own range: 1 MiB to 1 TiB",
    )
}

fn flush_size() -> QuantityParser {
    quantity(
        Unit::Size,
        "1KiB",
        "1TiB",
        "a memtable flush is memory: a kibibyte at least, a tebibyte at most",
    )
}

fn ingest_rate() -> QuantityParser {
    quantity(
        Unit::Rate,
        "1B/s",
        "1TiB/s",
        "a positive rate no disk exceeds",
    )
}

fn ttl() -> QuantityParser {
    quantity(
        Unit::Duration,
        "1s",
        "7300d",
        "Cassandra's ceiling on a TTL is 20 years",
    )
}

fn gc_grace() -> QuantityParser {
    quantity(
        Unit::Duration,
        "0s",
        "49710d",
        "gc_grace_seconds is a 32-bit count of seconds",
    )
}

fn fanout() -> Bounded<u32> {
    range(2u32, 1000, "LCS fanout_size's own range")
}

fn level_count() -> Bounded<u32> {
    range(0u32, 10, "LCS level_count's own range (0 is off)")
}

fn min_threshold() -> Bounded<u32> {
    range(2u32, u32::MAX, "the table option's own range")
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

/// The value of an optional quantity (bytes, bytes per second or seconds).
fn value(q: &Option<Quantity>) -> Option<f64> {
    q.as_ref().map(|q| q.value)
}

/// The text of an optional quantity, for the simulator's overrides.
fn text(q: &Option<Quantity>) -> Option<String> {
    q.as_ref().map(|q| q.text.clone())
}

fn run_predict(a: PredictArgs) -> Result<()> {
    let input = ModelInput {
        strategy: ModelStrategy::parse(&a.strategy)?,
        data_bytes: value(&a.data_size),
        sstable_bytes: a.sstable_size.value,
        fanout: a.fanout,
        level_count: a.level_count,
        flush_bytes: a.flush_size.value,
        ingest_bytes_per_second: value(&a.ingest_rate),
        ttl_seconds: value(&a.ttl),
        gc_grace_seconds: a.gc_grace.value,
        min_threshold: a.min_threshold,
        window_seconds: value(&a.window),
        l0_size_tiered: a.l0_size_tiered,
        l0_compaction_trigger: a.l0_compaction_trigger,
        ..ModelInput::default()
    };
    let out = model::predict(&input, a.refined)?;
    if !a.output.print_report(&out)? {
        print!("{}", model_text(&out));
    }
    Ok(())
}

/// One line of the side-by-side table: name and how to print a prediction's figure.
type Row = (&'static str, fn(&Prediction) -> String);

/// Published formula and refined model side by side, then the refined breakdown.
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
    let shown = match out.model {
        "published" => "published formula",
        other => other,
    };
    let _ = writeln!(
        t,
        "{} model ({shown} shown first with --format json)",
        out.strategy.name(),
    );
    let _ = writeln!(
        t,
        "{:<22} {:>17} {:>14}",
        "", "published formula", "refined"
    );
    for (name, f) in rows {
        let _ = writeln!(t, "{name:<22} {:>17} {:>14}", f(&out.seed), f(&out.refined));
    }
    let _ = writeln!(t, "\nwrite amplification, published formula:");
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
        data_bytes: value(&a.data_size),
        ingest_bytes_per_second: a.ingest_rate.value,
        ttl_seconds: value(&a.ttl),
        gc_grace_seconds: a.gc_grace.value,
        flush_bytes: a.flush_size.value,
        read_fraction: a.read_fraction,
        free_disk_bytes: a.free_disk.value,
    };
    let advice = model::advise(&input)?;
    if a.output.print_report(&advice)? {
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
        sstable_size: text(&a.sstable_size),
        level_count: a.level_count,
        options: a.options.clone(),
        ingest_rate: text(&a.ingest_rate),
        flush_size: text(&a.flush_size),
        ttl: text(&a.ttl),
        gc_grace: text(&a.gc_grace),
        duration: text(&a.duration),
        sample_interval: a.sample_interval.text.clone(),
        throughput: text(&a.throughput),
        concurrent_compactors: a.concurrent_compactors,
        no_checks: a.no_checks,
        bucket_width: text(&a.bucket_width),
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
        write_new_or_regular(path, to_json(&r)?.as_bytes())?;
    }
    if let Some(path) = &a.csv {
        write_new_or_regular(path, csv(&r).as_bytes())?;
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
