//! `strata bench compression`: the arguments of seed 001's codec matrix and the
//! printing of its report. The datasets, the protocol and what each figure is
//! are `strata_bench::compression` (its module contract) and BENCHMARKS.md,
//! "Compression (seed 001)".

use crate::bounds::range;
use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::compression::{self, CompressionConfig};
use strata_bench::workdir::WorkDir;

#[derive(Args, Debug)]
pub struct CompressionArgs {
    /// Raw bytes per dataset, MiB (the generators' column values; the published
    /// tables are 60 GB and 1 TB, scaled to a 2-core machine), 1 to 16384.
    #[arg(long, default_value_t = 64, value_parser = range(1u64, 16_384,
        "each dataset is written once per codec, five times in all: 16 GiB makes 80"))]
    pub raw_mib: u64,
    /// Concurrent reader threads, comma separated (the published test's Gatling
    /// users), each 1 to 256.
    #[arg(long, value_delimiter = ',', default_value = "50,100,150,200",
          value_parser = range(1usize, 256,
              "one OS thread each; the published test went to 200 readers"))]
    pub concurrency: Vec<usize>,
    /// Wall seconds of whole-partition reads per codec and concurrency, 0.001
    /// to 3600.
    #[arg(long, default_value_t = 4.0, value_parser = range(0.001f64, 3600.0,
        "an hour per case; a finite, positive time"))]
    pub read_seconds: f64,
    /// Rounds the reads are split into, codecs interleaved in each, 1 to 100.
    #[arg(long, default_value_t = 2, value_parser = range(1u32, 100,
        "more rounds only cut each one shorter"))]
    pub rounds: u32,
    /// The tables' chunk_length_in_kb (Cassandra's default 16), 1 to 1024.
    #[arg(long, default_value_t = 16, value_parser = range(1u32, 1024,
        "the table option's own range (chunk_length_in_kb)"))]
    pub chunk_kb: u32,
    /// The tables' memtable_flush_threshold_mb, 1 to 4096.
    #[arg(long, default_value_t = 32, value_parser = range(1u32, 4096,
        "the memtable is memory: at most 4 GiB"))]
    pub memtable_mb: u32,
    /// max_disk_bytes of the recompression experiment, MiB: LZ4 filled to 60%
    /// of it, then upgradesstables -a to Zstd 3 under it (0 skips it), at most
    /// 16384.
    #[arg(long, default_value_t = 256, value_parser = range(0u64, 16_384,
        "the experiment writes 60% of it: as much data as --raw-mib at most"))]
    pub recompression_quota_mb: u64,
    /// The databases' decompressed-chunk cache, MiB; 0 (default) makes every
    /// read decompress, so latencies compare codecs. At most 65536.
    #[arg(long, default_value_t = 0, value_parser = range(0u64, 64 << 10,
        "the cache is memory: 64 GiB is past this machine"))]
    pub chunk_cache_mb: u64,
    #[arg(long, default_value_t = 1, value_parser = range(0u64, u64::MAX, "any seed"))]
    pub seed: u64,
    /// Where the bench creates its own work directory for the per-codec data
    /// directories, removed at the end (default: the system temp directory);
    /// nothing else in it is touched. Named `--dir` as in the other benches.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub report: super::ReportArgs,
}

pub fn run(args: CompressionArgs) -> Result<()> {
    let mut config = CompressionConfig {
        raw_mib_per_dataset: args.raw_mib,
        concurrency: args.concurrency.clone(),
        read_seconds: args.read_seconds,
        rounds: args.rounds,
        chunk_kb: args.chunk_kb,
        memtable_mb: args.memtable_mb,
        recompression_quota_mib: args.recompression_quota_mb,
        chunk_cache_mib: args.chunk_cache_mb,
        seed: args.seed,
        work_dir: std::path::PathBuf::new(),
    };
    // Argument errors before any directory is made.
    config.validate()?;
    let work_dir = WorkDir::create_on_disk_default(args.dir.as_deref(), "compression")?;
    config.work_dir = work_dir.path().to_path_buf();
    let report = compression::run_bench(&config, &mut |dataset, codec, what| {
        eprintln!("{dataset} {codec}: {what}");
    });
    args.report.finish(
        work_dir,
        report,
        compression::CompressionReport::text,
        compression::CompressionReport::write_charts,
        compression::CompressionReport::to_json,
    )
}
