//! `strata bench blobstore`: the arguments of seed 002's TestDFSIO test and the
//! printing of its report. The protocol and its measurements are
//! `strata_bench::blobstore` (what each figure is, exactly, in its module
//! contract and in BENCHMARKS.md, "Large immutable blocks (seed 002)").

use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::blobfile::FileShape;
use strata_bench::blobstore::{self, BlobstoreConfig};

#[derive(Args, Debug)]
pub struct BlobstoreArgs {
    /// Files written, then deleted, per run (TestDFSIO's -nrFiles).
    #[arg(long, default_value_t = 64)]
    pub files: u32,
    /// Size of each file, MiB (TestDFSIO's -fileSize; the seed wrote 1000 x 1 GB
    /// on four nodes).
    #[arg(long, default_value_t = 16)]
    pub file_size_mib: u64,
    /// Size of each block, KiB: one clustering row and one mutation each.
    #[arg(long, default_value_t = 1024)]
    pub block_size_kib: u64,
    /// Runs in a row on the same database (the seed ran six).
    #[arg(long, default_value_t = 6)]
    pub runs: u32,
    /// Strategies, comma separated: Blob (BlobCompactionStrategy), STCS, LCS;
    /// CFS names the DSE class CFSCompactionStrategy.
    #[arg(long, value_delimiter = ',', default_value = "Blob,STCS,LCS")]
    pub strategies: Vec<String>,
    /// The table's memtable_flush_threshold_mb: data per flushed sstable.
    #[arg(long, default_value_t = 64)]
    pub memtable_mb: u32,
    /// The table's gc_grace_seconds, passed in simulated time after each run.
    #[arg(long, default_value_t = 3_600)]
    pub gc_grace: u32,
    /// Background compaction threads.
    #[arg(long, default_value_t = 1)]
    pub compactors: usize,
    /// Longest wait for compaction to go idle, wall seconds per wait.
    #[arg(long, default_value_t = 600)]
    pub idle_timeout: u64,
    #[arg(long, default_value_t = 2)]
    pub seed: u64,
    /// The seed's order: each run first deletes the previous run's files
    /// (TestDFSIO -clean), then writes its own, so runs end with the files live.
    /// Default: write, then delete (runs end with nothing live).
    #[arg(long)]
    pub clean_first: bool,
    /// Parent of the per-strategy data directories (default: the system temp
    /// directory; not /dev/shm: the figures are about I/O, and a strategy can
    /// hold several GiB). Named `--dir` as in the other benches: `--data-dir` is
    /// the data directory a command opens, and a bench creates its own.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub report: super::ReportArgs,
}

pub fn run(args: BlobstoreArgs) -> Result<()> {
    let work_dir = args
        .dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("strata-bench-blobstore-{}", std::process::id()));
    let config = BlobstoreConfig {
        files: args.files,
        shape: FileShape {
            file_size_bytes: args.file_size_mib.saturating_mul(1 << 20),
            block_size_bytes: args.block_size_kib.saturating_mul(1 << 10),
        },
        runs: args.runs,
        strategies: args.strategies.clone(),
        memtable_mb: args.memtable_mb,
        gc_grace_seconds: args.gc_grace,
        compactors: args.compactors,
        idle_timeout_seconds: args.idle_timeout,
        seed: args.seed,
        clean_first: args.clean_first,
        work_dir: work_dir.clone(),
    };
    // Argument errors before any directory is made.
    config.validate()?;
    let report = blobstore::run_bench(&config, &mut |label, r| {
        eprintln!(
            "{label}: run {} written at {:.1} MiB/s, idle after {:.2} s",
            r.run, r.write_mib_per_s, r.seconds_to_idle
        );
    });
    // Each run removes its own directory; the parent is ours, removed here.
    args.report.finish(
        &work_dir,
        report,
        blobstore::BenchReport::text,
        blobstore::BenchReport::write_charts,
        blobstore::BenchReport::to_json,
    )
}
