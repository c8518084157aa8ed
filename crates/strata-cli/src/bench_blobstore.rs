//! `strata bench blobstore`: the arguments of seed 002's TestDFSIO test and the
//! printing of its report. The protocol and its measurements are
//! `strata_bench::blobstore` (what each figure is, exactly, in its module
//! contract and in BENCHMARKS.md, "Large immutable blocks (seed 002)").

use crate::bounds::range;
use clap::Args;
use std::path::PathBuf;
use strata::Result;
use strata_bench::blobfile::FileShape;
use strata_bench::blobstore::{self, BlobstoreConfig};
use strata_bench::workdir::WorkDir;

#[derive(Args, Debug)]
pub struct BlobstoreArgs {
    /// Files written, then deleted, per run (TestDFSIO's -nrFiles), 1 to 100000.
    #[arg(long, default_value_t = 64, value_parser = range(1u32, 100_000,
        "the published test wrote 1000; a hundred times that is no longer its test"))]
    pub files: u32,
    /// Size of each file, MiB (TestDFSIO's -fileSize; the published test wrote
    /// 1000 x 1 GB on four nodes), 1 to 65536.
    #[arg(long, default_value_t = 16, value_parser = range(1u64, 64 << 10,
        "a file of more than 64 GiB is far past this machine"))]
    pub file_size_mib: u64,
    /// Size of each block, KiB: one clustering row and one mutation each, 1 to
    /// 16384.
    #[arg(long, default_value_t = 1024, value_parser = range(1u64, 16 << 10,
        "a block is one mutation, held whole in memory: at most 16 MiB"))]
    pub block_size_kib: u64,
    /// Runs in a row on the same database (the published test ran six), 1 to 100.
    #[arg(long, default_value_t = 6, value_parser = range(1u32, 100,
        "the published test ran six; a hundred shows the trend as well"))]
    pub runs: u32,
    /// Strategies, comma separated: Blob (BlobCompactionStrategy), STCS, LCS;
    /// CFS names the DSE class CFSCompactionStrategy.
    #[arg(long, value_delimiter = ',', default_value = "Blob,STCS,LCS")]
    pub strategies: Vec<String>,
    /// The table's memtable_flush_threshold_mb: data per flushed sstable, 1
    /// to 4096.
    #[arg(long, default_value_t = 64, value_parser = range(1u32, 4096,
        "the memtable is memory: at most 4 GiB"))]
    pub memtable_mb: u32,
    /// The table's gc_grace_seconds, passed in simulated time after each run.
    #[arg(long, default_value_t = 3_600, value_parser = range(0u32, u32::MAX,
        "any gc_grace_seconds the table takes: simulated time passes it at once"))]
    pub gc_grace: u32,
    /// Background compaction threads, 1 to 64.
    #[arg(long, default_value_t = 1, value_parser = range(1usize, 64,
        "one thread each, and the figures are about background compaction"))]
    pub compactors: usize,
    /// Longest wait for compaction to go idle, wall seconds per wait, 1 to 86400.
    #[arg(long, default_value_t = 600, value_parser = range(1u64, 86_400,
        "a day; compaction that has not settled by then is a finding, not a wait"))]
    pub idle_timeout: u64,
    #[arg(long, default_value_t = 2, value_parser = range(0u64, u64::MAX, "any seed"))]
    pub seed: u64,
    /// The published test's order: each run first deletes the previous run's files
    /// (TestDFSIO -clean), then writes its own, so runs end with the files live.
    /// Default: write, then delete (runs end with nothing live).
    #[arg(long)]
    pub clean_first: bool,
    /// Where the bench creates its own work directory for the per-strategy
    /// data directories, removed at the end (default: the system temp
    /// directory; not /dev/shm: the figures are about I/O, and a strategy can
    /// hold several GiB); nothing else in it is touched. Named `--dir` as in
    /// the other benches: `--data-dir` is the data directory a command opens,
    /// and a bench creates its own.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    #[command(flatten)]
    pub report: super::ReportArgs,
}

pub fn run(args: BlobstoreArgs) -> Result<()> {
    let mut config = BlobstoreConfig {
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
        work_dir: std::path::PathBuf::new(),
    };
    // Argument errors before any directory is made.
    config.validate()?;
    let work_dir = WorkDir::create_on_disk_default(args.dir.as_deref(), "blobstore")?;
    config.work_dir = work_dir.path().to_path_buf();
    let report = blobstore::run_bench(&config, &mut |label, r| {
        eprintln!(
            "{label}: run {} written at {:.1} MiB/s, idle after {:.2} s",
            r.run, r.write_mib_per_s, r.seconds_to_idle
        );
    });
    // Each run removes its own directory; the parent is ours, removed here.
    args.report.finish(
        work_dir,
        report,
        blobstore::BenchReport::text,
        blobstore::BenchReport::write_charts,
        blobstore::BenchReport::to_json,
    )
}
