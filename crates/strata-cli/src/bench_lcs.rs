//! `strata bench lcs-fanout`: the arguments of seed 000's leveling-multiplier
//! experiment and the printing of its report. The experiment itself (data,
//! scheduling, measurements, model and simulator beside it, charts) is
//! `strata_bench::lcs_fanout`; its method is in that module's contract and in
//! BENCHMARKS.md, "Leveling multiplier experiment (real engine)".

use crate::bounds::range;
use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::lcs_fanout::{self, LcsFanoutConfig};

#[derive(Args, Debug)]
pub struct LcsFanoutArgs {
    /// Scale factor for every byte figure (ingest rate, sstable and flush sizes);
    /// times stay full scale (TTL 2 days, gc grace 60 s, `--hours`).
    /// Default 1/160: 1 MiB sstables for A and B (~30 partitions of 512 rows
    /// each); 0.0001 to 1. A scale that leaves fewer than ~10 partitions per
    /// sstable runs with a warning: its figures mean nothing.
    #[arg(long, default_value_t = 0.00625, value_parser = range(0.0001f64, 1.0,
        "below 1/10000, 160 MiB sstables would be under the engine's 16 KiB minimum"))]
    pub scale: f64,
    /// Simulated hours to run (the experiment's published run was 88), 0.01 to
    /// 1000. The steady window starts at 48 h (TTL 2 days + gc grace 60 s).
    #[arg(long, default_value_t = 88.0, value_parser = range(0.01f64, 1000.0,
        "the published run was 88 hours; ten times that shows every trend"))]
    pub hours: f64,
    /// Rows (the published experiment's "columns") per partition; it had 512.
    /// 1 to 100000.
    #[arg(long, default_value_t = 512, value_parser = range(1usize, 100_000,
        "a partition is one mutation, held whole in memory"))]
    pub cells_per_partition: usize,
    /// Nodes to run, comma separated: A (fanout 10, 160 MiB), B (4, 160 MiB), C (4, 1 GiB).
    #[arg(long, value_delimiter = ',', default_value = "A,B,C")]
    pub nodes: Vec<char>,
    /// Memtable flush size at full scale, MiB on disk, 1 to 65536.
    #[arg(long, default_value_t = 256.0, value_parser = range(1.0f64, 65_536.0,
        "the published figures imply a flush in (64, 256] MiB; 64 GiB is past any memtable"))]
    pub flush_mib: f64,
    /// Run every node with the LCS option `l0_size_tiered` (L0 below one
    /// sstable's worth merged by size tiers, not whole on every flush).
    #[arg(long)]
    pub l0_size_tiered: bool,
    /// Seed of the data generator.
    #[arg(long, default_value_t = 7871, value_parser = range(0u64, u64::MAX, "any seed"))]
    pub seed: u64,
    /// Where the experiment creates its own work directory for the per-node
    /// data directories, removed at the end (default /dev/shm when present:
    /// the counters measure bytes, and tmpfs keeps fsyncs from dominating);
    /// nothing else in it is touched.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the data directories.
    #[arg(long)]
    pub keep: bool,
    /// Run the nodes one after the other instead of one thread each (each node
    /// is single-threaded: writes, flushes and compactions on one thread).
    #[arg(long)]
    pub sequential: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
    /// Write the three SVG charts into this directory.
    #[arg(long)]
    pub charts: Option<PathBuf>,
}

pub fn run(args: LcsFanoutArgs) -> Result<()> {
    let config = LcsFanoutConfig {
        scale: args.scale,
        hours: args.hours,
        cells_per_partition: args.cells_per_partition,
        nodes: args.nodes.clone(),
        flush_mib: args.flush_mib,
        l0_size_tiered: args.l0_size_tiered,
        seed: args.seed,
        dir: args.dir.clone(),
        keep: args.keep,
        sequential: args.sequential,
    };
    let report = lcs_fanout::run(&config, &|line| eprintln!("{line}"))?;
    print!("{}", report.text());
    println!("total wall time: {:.0} s", report.total_wall_seconds);
    if let Some(dir) = &args.charts {
        report.write_charts(dir)?;
        println!("charts written to {}", dir.display());
    }
    if let Some(path) = &args.json {
        strata_bench::workdir::write_new_or_regular(path, report.to_json()?.as_bytes())?;
    }
    Ok(())
}
