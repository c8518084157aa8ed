//! `strata bench compression`: the arguments of seed 001's codec matrix and the
//! printing of its report. The datasets, the protocol and what each figure is
//! are `strata_bench::compression` (its module contract) and BENCHMARKS.md,
//! "Compression (seed 001)".

use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::compression::{self, CompressionConfig};

#[derive(Args, Debug)]
pub struct CompressionArgs {
    /// Raw bytes per dataset, MiB (the generators' column values; the seed's
    /// tables are 60 GB and 1 TB, scaled to a 2-core machine).
    #[arg(long, default_value_t = 64)]
    pub raw_mib: u64,
    /// Concurrent reader threads, comma separated (the seed's Gatling users).
    #[arg(long, value_delimiter = ',', default_value = "50,100,150,200")]
    pub concurrency: Vec<usize>,
    /// Wall seconds of whole-partition reads per codec and concurrency.
    #[arg(long, default_value_t = 4.0)]
    pub read_seconds: f64,
    /// Rounds the reads are split into, codecs interleaved in each.
    #[arg(long, default_value_t = 2)]
    pub rounds: u32,
    /// The tables' chunk_length_in_kb (Cassandra's default 16).
    #[arg(long, default_value_t = 16)]
    pub chunk_kb: u32,
    /// The tables' memtable_flush_threshold_mb.
    #[arg(long, default_value_t = 32)]
    pub memtable_mb: u32,
    /// max_disk_bytes of the recompression experiment, MiB: LZ4 filled to 60%
    /// of it, then upgradesstables -a to Zstd 3 under it (0 skips it).
    #[arg(long, default_value_t = 256)]
    pub recompression_quota_mb: u64,
    /// The databases' decompressed-chunk cache, MiB; 0 (default) makes every
    /// read decompress, so latencies compare codecs.
    #[arg(long, default_value_t = 0)]
    pub chunk_cache_mb: u64,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Parent of the per-codec data directories (default: the system temp
    /// directory). Named `--dir` as in the other benches.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub report: super::ReportArgs,
}

pub fn run(args: CompressionArgs) -> Result<()> {
    let work_dir = args
        .dir
        .clone()
        .unwrap_or_else(std::env::temp_dir)
        .join(format!("strata-bench-compression-{}", std::process::id()));
    let config = CompressionConfig {
        raw_mib_per_dataset: args.raw_mib,
        concurrency: args.concurrency.clone(),
        read_seconds: args.read_seconds,
        rounds: args.rounds,
        chunk_kb: args.chunk_kb,
        memtable_mb: args.memtable_mb,
        recompression_quota_mib: args.recompression_quota_mb,
        chunk_cache_mib: args.chunk_cache_mb,
        seed: args.seed,
        work_dir: work_dir.clone(),
    };
    // Argument errors before any directory is made.
    config.validate()?;
    let report = compression::run_bench(&config, &mut |dataset, codec, what| {
        eprintln!("{dataset} {codec}: {what}");
    });
    args.report.finish(
        &work_dir,
        report,
        compression::CompressionReport::text,
        compression::CompressionReport::write_charts,
        compression::CompressionReport::to_json,
    )
}
