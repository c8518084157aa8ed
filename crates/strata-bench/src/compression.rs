//! Seed 001's codec matrix, scaled (`strata bench compression`, issue 14 part
//! 5, first half): two datasets shaped like the seed's software-archive tables,
//! each written once per codec into a fresh database, then read back whole
//! partition by whole partition by 50..200 concurrent readers.
//!
//! Owns: the two dataset generators ([`Dataset`]), the measurement protocol,
//! the report and its charts. [`run_bench`] creates its databases under the
//! work directory it is given, removes each dataset's databases once measured,
//! and returns values; it prints nothing. One caller thread; reads spawn the
//! reader threads of one (codec, concurrency) cell at a time.
//!
//! Glossary:
//! - **raw bytes**: the generator's bytes, the sum of the serialized column
//!   values (keys included) of every row; known by construction.
//! - **uncompressed bytes** / **compressed bytes**: the sstables' data stream
//!   before and after chunk compression (the engine's statistics);
//!   `compression_ratio` = compressed / uncompressed, as tablestats prints it
//!   ("SSTable Compression Ratio", lower is smaller).
//!
//! The protocol, per dataset:
//! 1. Plan: the partition count is the smallest count whose raw bytes reach
//!    `raw_mib_per_dataset`; every codec writes exactly these partitions.
//! 2. Per codec, in a fresh database (no commit log: the log is not
//!    compressed by table compression, so it would only add the same cost to
//!    every codec; no background compaction: the compaction below is the only
//!    one, so its work is the same for every codec): write every partition in
//!    order (rows of a partition in batches of [`BATCH_ROWS`]), flush, then one
//!    major compaction, leaving one sstable that holds every byte (so the ratio
//!    covers all data, not the last flush). `write_seconds` is the wall time of
//!    all of it, `cpu_seconds` the process CPU time (user + system, getrusage)
//!    over the same span: the writer, the flush thread and the compaction,
//!    i.e. what the seed's "CPU cost" of a codec is made of. `write_mib_per_s`
//!    = uncompressed bytes / `write_seconds` (the bytes the codec processed).
//! 3. Reads, with every codec's database of the dataset open at once: for each
//!    of `rounds` rounds, for each concurrency, for each codec, `c` threads read
//!    whole partitions (`Table::read`, all rows) for `read_seconds / rounds`,
//!    each partition drawn by a seeded stream that is the same for every codec.
//!    Latency of each read (µs) goes into an hdrhistogram per (codec,
//!    concurrency). Interleaving the codecs round by round (as `bench slice`
//!    interleaves sizes) makes a burst of load from another process on this
//!    shared machine hit every codec alike, since the figures that matter
//!    compare codecs at equal concurrency.
//!
//! What the read figures are, on this machine: the data fits in the page cache
//! (it was just written, and we cannot drop caches without root), so a read
//! costs index lookups, chunk decompression and decoding: the codec's CPU
//! cost, not disk. With 2 cores, 50..200 threads mostly queue for a CPU, and
//! most of that wait falls between reads (unmeasured); a reader preempted in
//! the middle of a read waits for its turn among N runnable threads, so a
//! fraction of a percent of the reads take milliseconds. That puts the mean
//! above p99 and makes mean and max vary by tens of percent between runs (the
//! first default-scale run, BENCHMARKS.md "Compression (seed 001)"), while
//! p50..p95 stay put. Compare codecs at equal concurrency (ratios), as the
//! seed does, on p50..p95. An open-loop reader (requests on a schedule,
//! latency from the scheduled start, as the seed's Gatling users) would count
//! the queueing itself; not built.
//!
//! `zstd_dict` is `ZstdWithDictsCompressor` at level 3, written the way an
//! operator would meet it: the table is created with the class, the first
//! flush (no dictionary yet) is written with plain zstd and the engine then
//! trains its dictionary from the flushed data, later flushes use it, and the
//! major compaction rewrites everything with it. Training time is inside
//! `write_seconds` and `cpu_seconds`; the dictionary's bytes are reported
//! (`dictionary_bytes`) and are not in `compressed_bytes` (stored once per
//! table, not per sstable).
//!
//! Last, the recompression experiment (second half of part 5,
//! [`crate::recompression`]): the directory-listing dataset written with LZ4
//! to 60% of a `max_disk_bytes` quota (`recompression_quota_mib`), switched to
//! Zstd 3 and rewritten by `upgradesstables -a`; the run with a snapshot
//! present is refused with its estimate. `"recompression"` in the report.
//!
//! Invariants:
//! 1. Deterministic input: partition `i` of a dataset is a function of (seed,
//!    dataset, i) alone; every codec gets the same partitions in the same order,
//!    and every reader stream is the same for every codec.
//! 2. A read that returns a different row count than the generator wrote for
//!    that partition is an error, not a latency: a fast wrong answer cannot
//!    pass as a result.
//! 3. The ratio and byte figures come from the engine's sstable statistics
//!    (`TableStats::of`), after compaction left exactly one sstable (checked).
//! 4. Bad options are an `Error::InvalidInput` naming the option, before any
//!    directory is made.

use crate::charts::{draw_line_chart, LineChart};
use crate::values::splitmix;
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::clock::{Clock, SimClock};
use strata::data::{ClusteringRange, PartitionUpdate};
use strata::db::{Database, DbOptions};
use strata::schema::{TableSchema, WriteOptions};
use strata::table::Table;
use strata::tablestats::TableStats;
use strata::types::Value;
use strata::{Error, Result};

const MIB: f64 = (1u64 << 20) as f64;
/// Simulated start: 2026-01-05, as the other benches.
const START_MICROS: i64 = 1_767_571_200_000_000;
/// Rows per applied mutation: keeps a multi-MiB directory from becoming one
/// giant mutation (a client would page its inserts too), and is far above the
/// mean directory, so almost every partition is one mutation.
pub const BATCH_ROWS: usize = 1024;
/// The seed's concurrencies (users of its Gatling runs).
pub const SEED_CONCURRENCY: [usize; 4] = [50, 100, 150, 200];
/// Largest directory, in entries: the seed's largest partition is 43 MB
/// (`Compacted partition maximum bytes: 43388628`); scaled to the MiB range
/// (~4 MiB at ~65 bytes an entry) so that a 64 MiB dataset can hold it.
pub const MAX_DIRECTORY_ENTRIES: u64 = 1 << 16;
/// Lomax (Pareto II) shape and scale of the entries per directory: mean
/// `scale / (shape - 1)` = 37 entries, ~34 once truncated at
/// [`MAX_DIRECTORY_ENTRIES`]; at ~57 bytes an entry in the engine's row format
/// that is ~1.9 KB a partition, the seed's `Compacted partition mean bytes:
/// 1867` (a scale of 9 gave 1343 bytes in a 2 MiB trial run). A power-law tail
/// (P(n > 27000) ~ 4e-5, so a 64 MiB dataset holds a MiB-sized directory or
/// two) and small directories common (median ~8 entries), as in a software
/// archive.
const DIR_SHAPE: f64 = 1.3;
const DIR_SCALE: f64 = 11.0;

/// A codec of the matrix: its report key and its `compression = {...}` body.
pub const CODECS: [(&str, &str); 6] = [
    ("none", "'enabled': 'false'"),
    ("lz4", "'class': 'LZ4Compressor'"),
    ("zstd1", "'class': 'ZstdCompressor', 'compression_level': 1"),
    ("zstd3", "'class': 'ZstdCompressor', 'compression_level': 3"),
    ("zstd9", "'class': 'ZstdCompressor', 'compression_level': 9"),
    // Trained by the engine after the first flush (module docs).
    (
        "zstd_dict",
        "'class': 'ZstdWithDictsCompressor', 'compression_level': 3",
    ),
];

// ---------------------------------------------------------------------------
// Datasets
// ---------------------------------------------------------------------------

/// The two datasets (seed 001's tables).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub enum Dataset {
    /// `content_by_sha1_git`: a partition keyed by a 20-byte hash (sha1_git)
    /// holding one row (rarely two) clustered by the 8-byte token of the
    /// content it names (a Murmur3 token: a hash too), the archive's schema.
    /// 28 raw bytes, ~41 bytes a partition in the sstable data stream
    /// (Cassandra's row format makes it 60 bytes); two thirds hash bytes,
    /// so little to compress. A third hash column (a first version) made
    /// every codec store every chunk raw: no codec saved the 1/8 the engine
    /// requires to keep a compressed chunk.
    SmallRows,
    /// `directory_entry`: a partition keyed by the directory's 20-byte hash,
    /// one row per entry clustered by file name, with permissions, entry type
    /// and the 20-byte hash of the target; heavy-tailed sizes.
    DirectoryEntries,
}

pub const DATASETS: [Dataset; 2] = [Dataset::SmallRows, Dataset::DirectoryEntries];

/// One generated row: column values by name, in schema order.
pub type GenRow = Vec<(&'static str, Value)>;

/// One generated partition.
#[derive(Clone, Debug, PartialEq)]
pub struct GenPartition {
    /// The partition key's value (a 20-byte hash).
    pub key: Vec<u8>,
    pub rows: Vec<GenRow>,
    /// Raw bytes (glossary): the sum of the rows' column values, key included.
    pub raw_bytes: u64,
}

/// Common file names (a quarter of the files of a directory): what makes names
/// repeat across directories, as in any source tree.
const COMMON_FILES: [&str; 32] = [
    "README.md",
    "README",
    "LICENSE",
    "COPYING",
    "Makefile",
    "Makefile.am",
    "CMakeLists.txt",
    ".gitignore",
    "setup.py",
    "__init__.py",
    "index.js",
    "package.json",
    "main.c",
    "main.go",
    "go.mod",
    "Cargo.toml",
    "lib.rs",
    "mod.rs",
    "index.html",
    "style.css",
    "pom.xml",
    "build.gradle",
    "configure.ac",
    "ChangeLog",
    "NEWS",
    "AUTHORS",
    "INSTALL",
    "requirements.txt",
    ".travis.yml",
    "Dockerfile",
    "config.h",
    "utils.py",
];
const COMMON_DIRS: [&str; 16] = [
    "src",
    "test",
    "tests",
    "lib",
    "doc",
    "docs",
    "include",
    "bin",
    "build",
    "examples",
    "scripts",
    "utils",
    ".github",
    "vendor",
    "assets",
    "resources",
];
/// Stems of other names (joined with `_` or digits), then an extension.
const STEMS: [&str; 48] = [
    "util",
    "config",
    "parser",
    "lexer",
    "server",
    "client",
    "handler",
    "manager",
    "test",
    "helper",
    "common",
    "types",
    "model",
    "view",
    "controller",
    "data",
    "file",
    "stream",
    "buffer",
    "cache",
    "error",
    "log",
    "event",
    "queue",
    "thread",
    "socket",
    "http",
    "json",
    "xml",
    "image",
    "font",
    "user",
    "admin",
    "auth",
    "session",
    "storage",
    "index",
    "table",
    "node",
    "tree",
    "graph",
    "math",
    "string",
    "array",
    "list",
    "map",
    "core",
    "api",
];
/// Extensions by rough frequency in source archives (repeats weight them).
const EXTENSIONS: [&str; 24] = [
    ".c", ".c", ".h", ".h", ".py", ".py", ".js", ".js", ".java", ".go", ".rs", ".cpp", ".hpp",
    ".md", ".txt", ".html", ".css", ".json", ".xml", ".png", ".svg", ".sh", ".rb", ".php",
];

/// Permissions as git stores them (the `perms` column): regular file,
/// executable, symlink, directory, submodule (revision).
const PERM_FILE: i32 = 0o100644;
const PERM_EXEC: i32 = 0o100755;
const PERM_LINK: i32 = 0o120000;
const PERM_DIR: i32 = 0o040000;
const PERM_REV: i32 = 0o160000;

impl Dataset {
    /// The report key (`small_rows`, `directory_entries`).
    pub fn key(self) -> &'static str {
        match self {
            Dataset::SmallRows => "small_rows",
            Dataset::DirectoryEntries => "directory_entries",
        }
    }

    /// The seed's table the dataset imitates.
    pub fn seed_table(self) -> &'static str {
        match self {
            Dataset::SmallRows => "content_by_sha1_git",
            Dataset::DirectoryEntries => "directory_entry",
        }
    }

    /// The `CREATE TABLE` (the seed's schemas, as the archive declares them).
    pub fn create_table_cql(self, with: &str) -> String {
        match self {
            Dataset::SmallRows => format!(
                "CREATE TABLE archive.content_by_sha1_git (sha1_git blob, target_token bigint, \
                 PRIMARY KEY ((sha1_git), target_token)) WITH {with}"
            ),
            Dataset::DirectoryEntries => format!(
                "CREATE TABLE archive.directory_entry (directory_id blob, name blob, \
                 target blob, perms int, type ascii, PRIMARY KEY ((directory_id), name)) \
                 WITH {with}"
            ),
        }
    }

    /// The stream of partition `i` (invariant 1): seeded from (seed, dataset, i)
    /// through separate SplitMix rounds, so neighbouring partitions are
    /// unrelated.
    fn rng(self, seed: u64, i: u64) -> ChaCha8Rng {
        let tag = match self {
            Dataset::SmallRows => 0x5111,
            Dataset::DirectoryEntries => 0xd1e,
        };
        ChaCha8Rng::seed_from_u64(splitmix(seed ^ splitmix(tag ^ splitmix(i))))
    }

    /// Rows of partition `i`, without generating them: the first draw of the
    /// partition's stream is its row count (what a read must return).
    pub fn rows_in(self, seed: u64, i: u64) -> u64 {
        let mut rng = self.rng(seed, i);
        self.draw_rows(&mut rng)
    }

    fn draw_rows(self, rng: &mut ChaCha8Rng) -> u64 {
        let u: f64 = rng.gen();
        match self {
            // Two contents sharing a sha1_git (or two tokens for one content)
            // are rare; 1% keeps the multi-row path exercised.
            Dataset::SmallRows => 1 + u64::from(u < 0.01),
            // Lomax by inversion; `1 - u` is in (0, 1], so the power is finite.
            Dataset::DirectoryEntries => {
                let x = DIR_SCALE * ((1.0 - u).powf(-1.0 / DIR_SHAPE) - 1.0);
                (1 + x as u64).min(MAX_DIRECTORY_ENTRIES)
            }
        }
    }

    /// The partition key of partition `i` (for reads: cheaper than generating).
    pub fn partition_key(self, seed: u64, i: u64) -> Vec<u8> {
        let mut rng = self.rng(seed, i);
        self.draw_rows(&mut rng);
        hash20(&mut rng)
    }

    /// Partition `i` (invariant 1).
    pub fn partition(self, seed: u64, i: u64) -> GenPartition {
        let mut rng = self.rng(seed, i);
        let n = self.draw_rows(&mut rng);
        let key = hash20(&mut rng);
        let mut raw_bytes = key.len() as u64;
        let mut rows = Vec::with_capacity(n as usize);
        match self {
            Dataset::SmallRows => {
                for _ in 0..n {
                    let token: i64 = rng.gen();
                    raw_bytes += 8;
                    rows.push(vec![
                        ("sha1_git", Value::Blob(key.clone())),
                        ("target_token", Value::BigInt(token)),
                    ]);
                }
            }
            Dataset::DirectoryEntries => {
                let mut names = HashSet::with_capacity(n as usize);
                for j in 0..n {
                    let kind: f64 = rng.gen();
                    let (ty, perms, mut name) = if kind < 0.84 {
                        let p: f64 = rng.gen();
                        let perms = if p < 0.88 {
                            PERM_FILE
                        } else if p < 0.98 {
                            PERM_EXEC
                        } else {
                            PERM_LINK
                        };
                        ("file", perms, file_name(&mut rng))
                    } else if kind < 0.99 {
                        ("dir", PERM_DIR, dir_name(&mut rng))
                    } else {
                        ("rev", PERM_REV, format!("{}-{}", pick(&mut rng, &STEMS), j))
                    };
                    // Names are the clustering key: a repeat would merge two
                    // entries and break the row count readers check.
                    if names.contains(&name) {
                        name = format!("{j}_{name}");
                    }
                    names.insert(name.clone());
                    let target = hash20(&mut rng);
                    raw_bytes += (name.len() + target.len() + 4 + ty.len()) as u64;
                    rows.push(vec![
                        ("directory_id", Value::Blob(key.clone())),
                        ("name", Value::Blob(name.into_bytes())),
                        ("target", Value::Blob(target)),
                        ("perms", Value::Int(perms)),
                        ("type", Value::Ascii(ty.to_string())),
                    ]);
                }
            }
        }
        GenPartition {
            key,
            rows,
            raw_bytes,
        }
    }
}

/// A 20-byte hash (sha1 / sha1_git): incompressible by construction.
fn hash20(rng: &mut ChaCha8Rng) -> Vec<u8> {
    let mut h = vec![0u8; 20];
    rng.fill(&mut h[..]);
    h
}

fn pick<'a>(rng: &mut ChaCha8Rng, from: &[&'a str]) -> &'a str {
    from[rng.gen_range(0..from.len())]
}

fn file_name(rng: &mut ChaCha8Rng) -> String {
    let r: f64 = rng.gen();
    if r < 0.25 {
        return pick(rng, &COMMON_FILES).to_string();
    }
    let stem = pick(rng, &STEMS);
    let ext = pick(rng, &EXTENSIONS);
    if r < 0.55 {
        format!("{stem}{ext}")
    } else if r < 0.85 {
        format!("{stem}_{}{ext}", pick(rng, &STEMS))
    } else {
        format!("{stem}{}{ext}", rng.gen_range(0..100u32))
    }
}

fn dir_name(rng: &mut ChaCha8Rng) -> String {
    if rng.gen::<f64>() < 0.5 {
        pick(rng, &COMMON_DIRS).to_string()
    } else {
        pick(rng, &STEMS).to_string()
    }
}

/// Partitions of a dataset and their raw bytes (protocol step 1).
#[derive(Clone, Debug, Serialize)]
pub struct DatasetPlan {
    pub partitions: u64,
    pub rows: u64,
    pub raw_bytes: u64,
    /// Raw bytes of the largest partition (the tail).
    pub max_partition_raw_bytes: u64,
}

/// The smallest prefix of the dataset whose raw bytes reach `target_bytes`.
pub fn plan(dataset: Dataset, seed: u64, target_bytes: u64) -> DatasetPlan {
    let mut p = DatasetPlan {
        partitions: 0,
        rows: 0,
        raw_bytes: 0,
        max_partition_raw_bytes: 0,
    };
    while p.raw_bytes < target_bytes {
        let part = dataset.partition(seed, p.partitions);
        p.partitions += 1;
        p.rows += part.rows.len() as u64;
        p.raw_bytes += part.raw_bytes;
        p.max_partition_raw_bytes = p.max_partition_raw_bytes.max(part.raw_bytes);
    }
    p
}

// ---------------------------------------------------------------------------
// Configuration and report
// ---------------------------------------------------------------------------

/// The experiment's shape (`strata bench compression` options, one to one).
#[derive(Clone, Debug, Serialize)]
pub struct CompressionConfig {
    /// Raw bytes per dataset, MiB (64 by default: the matrix runs in minutes
    /// on 2 cores; the seed's tables are 60 GB and 1 TB).
    pub raw_mib_per_dataset: u64,
    /// Reader-thread counts (the seed's 50, 100, 150, 200 users).
    pub concurrency: Vec<usize>,
    /// Wall seconds of reads per (codec, concurrency), over all rounds.
    pub read_seconds: f64,
    /// Rounds the reads of each (codec, concurrency) are split into.
    pub rounds: u32,
    /// `chunk_length_in_kb` of every table (Cassandra's default 16).
    pub chunk_kb: u32,
    /// `memtable_flush_threshold_mb` of every table.
    pub memtable_mb: u32,
    /// The recompression experiment's `max_disk_bytes`, MiB (0 skips it).
    pub recompression_quota_mib: u64,
    /// The databases' chunk cache, MiB. 0 (the default): every read reads and
    /// decompresses its chunks, so the latencies compare codecs.
    #[serde(default)]
    pub chunk_cache_mib: u64,
    pub seed: u64,
    /// Parent of the per-codec data directories (each removed after use).
    #[serde(skip)]
    pub work_dir: PathBuf,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig {
            raw_mib_per_dataset: 64,
            concurrency: SEED_CONCURRENCY.to_vec(),
            read_seconds: 4.0,
            rounds: 2,
            chunk_kb: 16,
            memtable_mb: 32,
            recompression_quota_mib: 256,
            chunk_cache_mib: 0,
            seed: 1,
            work_dir: std::env::temp_dir(),
        }
    }
}

impl CompressionConfig {
    /// Bounds checked before any work (invariant 4).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::InvalidInput(what.to_string()));
        if !(1..=16_384).contains(&self.raw_mib_per_dataset) {
            return bad("--raw-mib must be between 1 and 16384");
        }
        if self.concurrency.is_empty() || self.concurrency.iter().any(|&c| !(1..=256).contains(&c))
        {
            return bad("--concurrency: one or more thread counts between 1 and 256");
        }
        if !(self.read_seconds > 0.0 && self.read_seconds <= 3600.0) {
            return bad("--read-seconds must be above 0 and at most 3600");
        }
        if !(1..=100).contains(&self.rounds) {
            return bad("--rounds must be between 1 and 100");
        }
        if !(1..=1024).contains(&self.chunk_kb) {
            return bad("--chunk-kb must be between 1 and 1024");
        }
        if !(1..=4096).contains(&self.memtable_mb) {
            return bad("--memtable-mb must be between 1 and 4096");
        }
        for (_, body) in CODECS {
            strata::options::TableOptions::parse(&self.table_options(body))?;
        }
        Ok(())
    }

    /// The `WITH` clause of a codec's table.
    /// The chunk length goes with a compressor only: the engine refuses it
    /// beside `'enabled': 'false'` (uncompressed sstables keep the default
    /// chunk grid, so `none` still reads through the same chunk path).
    fn table_options(&self, compression: &str) -> String {
        let chunk = if compression.contains("'class'") {
            format!(", 'chunk_length_in_kb': {}", self.chunk_kb)
        } else {
            String::new()
        };
        format!(
            "compression = {{{compression}{chunk}}} AND memtable_flush_threshold_mb = {}",
            self.memtable_mb
        )
    }
}

/// Latency of whole-partition reads at one concurrency, milliseconds.
#[derive(Clone, Debug, Serialize)]
pub struct Latency {
    pub p50: f64,
    pub p75: f64,
    pub p95: f64,
    pub p99: f64,
    pub mean: f64,
    pub max: f64,
    pub reads: u64,
    pub reads_per_second: f64,
}

/// One codec on one dataset.
#[derive(Clone, Debug, Serialize)]
pub struct CodecResult {
    /// The `compression = {...}` body the table was created with.
    pub compression: String,
    /// compressed / uncompressed (tablestats' "SSTable Compression Ratio").
    pub compression_ratio: f64,
    pub uncompressed_bytes: u64,
    pub compressed_bytes: u64,
    /// The sstable files (data, index, filter, ...): tablestats' space used.
    pub space_used_live_bytes: u64,
    pub write_mib_per_s: f64,
    pub write_seconds: f64,
    pub cpu_seconds: f64,
    /// Compaction left one sstable (invariant 3).
    pub sstable_count: usize,
    /// tablestats' "Compacted partition mean/maximum bytes".
    pub compacted_partition_mean_bytes: u64,
    pub compacted_partition_maximum_bytes: u64,
    /// By concurrency (`"50"`, ...).
    pub read_latency_ms: BTreeMap<String, Latency>,
    /// The table's compression dictionary, bytes (dictionary classes only):
    /// stored once per table, outside `compressed_bytes`.
    pub dictionary_bytes: Option<u64>,
    /// What the engine's last dictionary training did (stored, or declined
    /// because the dictionary gained too little on its sample, with both
    /// ratios): why `zstd_dict` may equal `zstd3`.
    pub dictionary_note: Option<String>,
}

#[derive(Clone, Debug, Serialize)]
pub struct CompressionReport {
    pub config: CompressionConfig,
    /// By dataset key, then codec key.
    pub datasets: BTreeMap<String, BTreeMap<String, CodecResult>>,
    /// By dataset key: what was written.
    pub dataset_plans: BTreeMap<String, DatasetPlan>,
    /// Seed 001's worry as an experiment (module docs); `None` when
    /// `recompression_quota_mib` is 0.
    pub recompression: Option<crate::recompression::Recompression>,
}

/// Progress: (dataset key, codec key, what just finished).
pub type ProgressFn<'a> = dyn FnMut(&str, &str, &str) + 'a;

// ---------------------------------------------------------------------------
// The protocol
// ---------------------------------------------------------------------------

/// Runs the matrix: every dataset, every codec, every concurrency, under
/// `cfg.work_dir` (per-codec directories there must not exist yet).
pub fn run_bench(
    cfg: &CompressionConfig,
    progress: &mut ProgressFn<'_>,
) -> Result<CompressionReport> {
    cfg.validate()?;
    let mut report = CompressionReport {
        config: cfg.clone(),
        datasets: BTreeMap::new(),
        dataset_plans: BTreeMap::new(),
        recompression: None,
    };
    for dataset in DATASETS {
        let plan = plan(dataset, cfg.seed, cfg.raw_mib_per_dataset << 20);
        progress(
            dataset.key(),
            "-",
            &format!(
                "{} partitions, {} rows, {:.1} MiB raw",
                plan.partitions,
                plan.rows,
                plan.raw_bytes as f64 / MIB
            ),
        );
        let dirs: Vec<PathBuf> = CODECS
            .iter()
            .map(|(codec, _)| {
                cfg.work_dir
                    .join(format!("compression-{}-{codec}", dataset.key()))
            })
            .collect();
        if let Some(d) = dirs.iter().find(|d| d.exists()) {
            return Err(Error::InvalidInput(format!(
                "{} exists: bench compression needs fresh directories",
                d.display()
            )));
        }
        let r = run_dataset(cfg, dataset, &plan, &dirs, progress);
        // The data is of no use once measured; a failed removal only leaves files.
        for d in &dirs {
            let _ = std::fs::remove_dir_all(d);
        }
        report.datasets.insert(dataset.key().to_string(), r?);
        report.dataset_plans.insert(dataset.key().to_string(), plan);
    }
    if cfg.recompression_quota_mib > 0 {
        progress(
            "directory_entries",
            "recompression",
            "LZ4 to Zstd 3 under a quota",
        );
        let dataset = Dataset::DirectoryEntries;
        let create = dataset.create_table_cql(&format!(
            "compression = {{'class': 'LZ4Compressor', 'chunk_length_in_kb': {}}} AND \
             compaction = {{'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}} AND \
             memtable_flush_threshold_mb = {}",
            cfg.chunk_kb, cfg.memtable_mb
        ));
        let seed = cfg.seed;
        // Each batch (one flush): about 1/64 of the quota of directories (a
        // directory averages ~2 KiB), so the fill stops close to 60% and no
        // single flush is a large share of the quota.
        let per_batch = ((cfg.recompression_quota_mib << 20) / 64 / 2048).max(1);
        let mut fill = |t: &Arc<Table>, batch: u64| -> Result<()> {
            let schema = t.schema();
            let now = t.clock().now_micros();
            for i in batch * per_batch..(batch + 1) * per_batch {
                apply_partition(t, &schema, &dataset.partition(seed, i), now)?;
            }
            Ok(())
        };
        report.recompression = Some(crate::recompression::run(
            &cfg.work_dir,
            cfg.recompression_quota_mib << 20,
            &create,
            &mut fill,
        )?);
    }
    Ok(report)
}

/// One dataset: every codec written (step 2), then the interleaved reads (step 3).
fn run_dataset(
    cfg: &CompressionConfig,
    dataset: Dataset,
    plan: &DatasetPlan,
    dirs: &[PathBuf],
    progress: &mut ProgressFn<'_>,
) -> Result<BTreeMap<String, CodecResult>> {
    let mut open: Vec<(&str, Database, Arc<Table>, CodecResult)> = Vec::new();
    let mut out = BTreeMap::new();
    for ((codec, body), dir) in CODECS.iter().zip(dirs) {
        let (db, table, result) = write_codec(cfg, dataset, plan, body, dir)?;
        progress(
            dataset.key(),
            codec,
            &format!(
                "ratio {:.4}, {:.1} MiB/s, {:.2} CPU s",
                result.compression_ratio, result.write_mib_per_s, result.cpu_seconds
            ),
        );
        open.push((codec, db, table, result));
    }
    // hist[codec][concurrency]
    let mut hists: Vec<Vec<Histogram<u64>>> = open
        .iter()
        .map(|_| cfg.concurrency.iter().map(|_| new_histogram()).collect())
        .collect();
    let mut elapsed = vec![vec![0.0f64; cfg.concurrency.len()]; open.len()];
    let budget = Duration::from_secs_f64(cfg.read_seconds / f64::from(cfg.rounds));
    for round in 0..cfg.rounds {
        for (ci, &threads) in cfg.concurrency.iter().enumerate() {
            for (k, (_, _, table, _)) in open.iter().enumerate() {
                let stream = splitmix(u64::from(round) << 32 | threads as u64);
                let (h, secs) = read_cell(
                    table,
                    dataset,
                    cfg.seed,
                    plan.partitions,
                    threads,
                    stream,
                    budget,
                )?;
                hists[k][ci]
                    .add(&h)
                    .map_err(|e| Error::InvalidInput(format!("histogram: {e}")))?;
                elapsed[k][ci] += secs;
            }
            progress(
                dataset.key(),
                "*",
                &format!("round {} reads at {threads} threads done", round + 1),
            );
        }
    }
    for (k, (codec, db, table, mut result)) in open.into_iter().enumerate() {
        for (ci, &threads) in cfg.concurrency.iter().enumerate() {
            let h = &hists[k][ci];
            let ms = |us: u64| us as f64 / 1000.0;
            result.read_latency_ms.insert(
                threads.to_string(),
                Latency {
                    p50: ms(h.value_at_quantile(0.50)),
                    p75: ms(h.value_at_quantile(0.75)),
                    p95: ms(h.value_at_quantile(0.95)),
                    p99: ms(h.value_at_quantile(0.99)),
                    mean: h.mean() / 1000.0,
                    max: ms(h.max()),
                    reads: h.len(),
                    reads_per_second: h.len() as f64 / elapsed[k][ci].max(1e-9),
                },
            );
        }
        drop(table);
        db.close()?;
        out.insert(codec.to_string(), result);
    }
    Ok(out)
}

/// Process CPU time, user + system, seconds (all threads: writer, flush,
/// compaction). getrusage rather than /proc/self/stat: microsecond resolution
/// instead of clock ticks, and no parsing.
fn process_cpu_seconds() -> Result<f64> {
    // SAFETY: getrusage writes one `rusage` into the pointer it is given, which
    // points at a zeroed, properly aligned local.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    if rc != 0 {
        return Err(Error::InvalidInput(format!(
            "getrusage: {}",
            std::io::Error::last_os_error()
        )));
    }
    let tv = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(tv(u.ru_utime) + tv(u.ru_stime))
}

/// Protocol step 2 for one codec: a fresh database, every partition written,
/// flushed, major-compacted to one sstable; the database is returned open for
/// the reads.
fn write_codec(
    cfg: &CompressionConfig,
    dataset: Dataset,
    plan: &DatasetPlan,
    compression: &str,
    dir: &Path,
) -> Result<(Database, Arc<Table>, CodecResult)> {
    let clock = SimClock::new(START_MICROS);
    let mut opts = DbOptions::new(clock.clone());
    // Reads measure the codec unless a cache is asked for (module docs).
    opts.chunk_cache_bytes = (cfg.chunk_cache_mib as usize) << 20;
    opts.commitlog = None;
    opts.concurrent_compactors = 0;
    opts.compaction_throughput_mb_per_sec = 0;
    opts.purpose = "strata bench compression".into();
    let db = Database::open(dir, opts)?;
    db.create_keyspace("archive")?;
    let table = db.create_table_cql(&dataset.create_table_cql(&cfg.table_options(compression)))?;
    let schema = table.schema();
    let limiter = db.compaction_limiter().clone();
    let cpu_before = process_cpu_seconds()?;
    let started = Instant::now();
    for i in 0..plan.partitions {
        let part = dataset.partition(cfg.seed, i);
        // Each partition a microsecond later: write times differ as a real
        // archive's do, which the row codec stores as deltas.
        clock.advance_micros(1);
        apply_partition(&table, &schema, &part, clock.now_micros())?;
    }
    table.flush()?;
    table.compact_major(&limiter)?;
    let write_seconds = started.elapsed().as_secs_f64();
    let cpu_seconds = process_cpu_seconds()? - cpu_before;
    let stats = TableStats::of(&table);
    let view = table.view();
    let (compressed_bytes, uncompressed_bytes) = view
        .sstables()
        .iter()
        .map(|s| (s.stats().compressed_bytes, s.stats().uncompressed_bytes))
        .fold((0, 0), |(c, u), (c2, u2)| (c + c2, u + u2));
    drop(view);
    if stats.sstable_count != 1 {
        return Err(Error::InvalidInput(format!(
            "{} {compression}: {} sstables after major compaction, expected 1",
            dataset.key(),
            stats.sstable_count
        )));
    }
    let result = CodecResult {
        compression: compression.to_string(),
        compression_ratio: stats.sstable_compression_ratio,
        uncompressed_bytes,
        compressed_bytes,
        space_used_live_bytes: stats.space_used_live_bytes,
        write_mib_per_s: uncompressed_bytes as f64 / MIB / write_seconds.max(1e-9),
        write_seconds,
        cpu_seconds,
        sstable_count: stats.sstable_count,
        compacted_partition_mean_bytes: stats.compacted_partition_mean_bytes,
        compacted_partition_maximum_bytes: stats.compacted_partition_maximum_bytes,
        read_latency_ms: BTreeMap::new(),
        dictionary_bytes: stats
            .compression_dictionary
            .as_ref()
            .and_then(|d| d.current_id.map(|_| d.current_bytes)),
        dictionary_note: stats
            .compression_dictionary
            .as_ref()
            .and_then(|d| d.last_training.clone()),
    };
    Ok((db, table, result))
}

/// Writes one generated partition, rows sorted by clustering, in mutations of
/// at most [`BATCH_ROWS`] rows.
fn apply_partition(
    table: &Arc<Table>,
    schema: &TableSchema,
    part: &GenPartition,
    now_micros: i64,
) -> Result<()> {
    let wo = WriteOptions::default();
    let mut rows = Vec::with_capacity(part.rows.len());
    let mut key = None;
    for r in &part.rows {
        let u = schema.insert(r, &wo, now_micros)?;
        key.get_or_insert_with(|| u.key.clone());
        rows.extend(u.rows);
    }
    let Some(key) = key else {
        return Ok(());
    };
    rows.sort_by(|a, b| a.clustering.cmp(&b.clustering));
    for chunk in rows.chunks(BATCH_ROWS) {
        let mut update = PartitionUpdate::new(key.clone());
        update.rows = chunk.to_vec();
        table.apply(&update)?;
    }
    Ok(())
}

fn new_histogram() -> Histogram<u64> {
    // 1 µs .. 60 s at 3 significant digits; bounds are constants, so this cannot fail.
    Histogram::new_with_bounds(1, 60_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).expect("3 sigfig histogram"))
}

/// One (codec, concurrency) cell of one round: `threads` readers for `budget`;
/// the merged histogram (µs) and the wall seconds the cell took.
fn read_cell(
    table: &Arc<Table>,
    dataset: Dataset,
    seed: u64,
    partitions: u64,
    threads: usize,
    stream: u64,
    budget: Duration,
) -> Result<(Histogram<u64>, f64)> {
    let started = Instant::now();
    let deadline = started + budget;
    let results: Vec<Result<Histogram<u64>>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let table = table.clone();
                s.spawn(move || {
                    // The same stream for every codec (invariant 1).
                    let mut rng =
                        ChaCha8Rng::seed_from_u64(splitmix(seed ^ splitmix(stream ^ t as u64)));
                    read_until(&table, dataset, seed, partitions, &mut rng, deadline)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(Error::InvalidInput("a reader thread panicked".into())))
            })
            .collect()
    });
    let mut merged = new_histogram();
    for r in results {
        merged
            .add(&r?)
            .map_err(|e| Error::InvalidInput(format!("histogram: {e}")))?;
    }
    Ok((merged, started.elapsed().as_secs_f64()))
}

/// One reader: whole partitions until `deadline` (at least one read), each
/// checked against the generator's row count (invariant 2).
fn read_until(
    table: &Table,
    dataset: Dataset,
    seed: u64,
    partitions: u64,
    rng: &mut ChaCha8Rng,
    deadline: Instant,
) -> Result<Histogram<u64>> {
    let schema = table.schema();
    let mut h = new_histogram();
    loop {
        let i = rng.gen_range(0..partitions);
        let key = schema.decorated_key(&[Value::Blob(dataset.partition_key(seed, i))])?;
        let expected = dataset.rows_in(seed, i);
        let t = Instant::now();
        let r = table.read(&key, &ClusteringRange::ALL, false, usize::MAX)?;
        let us = t.elapsed().as_micros() as u64;
        if r.rows.len() as u64 != expected {
            return Err(Error::InvalidInput(format!(
                "{} partition {i}: read {} rows, wrote {expected}",
                dataset.key(),
                r.rows.len()
            )));
        }
        h.saturating_record(us.max(1));
        if Instant::now() >= deadline {
            return Ok(h);
        }
    }
}

// ---------------------------------------------------------------------------
// Report text and charts
// ---------------------------------------------------------------------------

/// The seed's figures beside which ours are printed: size reduction of zstd 3
/// against LZ4 (content_by_sha1_git "~5%", 186 -> 178 GB; directory_entry "a
/// little less than 15%", ratio 0.703 -> 0.603).
pub fn seed_zstd3_gain(dataset: Dataset) -> &'static str {
    match dataset {
        Dataset::SmallRows => "~5% (186 -> 178 GB)",
        Dataset::DirectoryEntries => "a little less than 15% (0.703 -> 0.603)",
    }
}

impl CompressionReport {
    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::InvalidInput(format!("json: {e}")))
    }

    fn codec(&self, dataset: Dataset, codec: &str) -> Option<&CodecResult> {
        self.datasets.get(dataset.key())?.get(codec)
    }

    /// Size of `codec` relative to LZ4's, as a reduction (0.05 = 5% smaller).
    pub fn gain_vs_lz4(&self, dataset: Dataset, codec: &str) -> Option<f64> {
        let lz4 = self.codec(dataset, "lz4")?.compressed_bytes as f64;
        let other = self.codec(dataset, codec)?.compressed_bytes as f64;
        (lz4 > 0.0).then(|| 1.0 - other / lz4)
    }

    /// The report: per dataset, the write figures per codec, the latency per
    /// codec and concurrency, and the seed's claims beside ours.
    pub fn text(&self) -> String {
        let mut out = String::new();
        for dataset in DATASETS {
            let Some(codecs) = self.datasets.get(dataset.key()) else {
                continue;
            };
            if let Some(p) = self.dataset_plans.get(dataset.key()) {
                out.push_str(&format!(
                    "\n== {} (as {}): {} partitions, {} rows, {:.1} MiB raw, largest partition {:.2} MiB raw\n",
                    dataset.key(),
                    dataset.seed_table(),
                    p.partitions,
                    p.rows,
                    p.raw_bytes as f64 / MIB,
                    p.max_partition_raw_bytes as f64 / MIB
                ));
            }
            out.push_str(&format!(
                "{:<10} {:>8} {:>9} {:>11} {:>8} {:>8} {:>10}\n",
                "codec", "ratio", "vs lz4", "write MiB/s", "write s", "CPU s", "mean part B"
            ));
            for (codec, _) in CODECS {
                match codecs.get(codec) {
                    None => {}
                    Some(r) => out.push_str(&format!(
                        "{:<10} {:>8.4} {:>8.1}% {:>11.1} {:>8.2} {:>8.2} {:>10}\n",
                        codec,
                        r.compression_ratio,
                        100.0 * self.gain_vs_lz4(dataset, codec).unwrap_or(f64::NAN),
                        r.write_mib_per_s,
                        r.write_seconds,
                        r.cpu_seconds,
                        r.compacted_partition_mean_bytes
                    )),
                }
            }
            out.push_str(&format!(
                "{:<10} {:>7} {:>9} {:>9} {:>9} {:>9} {:>9} {:>9} {:>12}\n",
                "codec",
                "threads",
                "p50 ms",
                "p75 ms",
                "p95 ms",
                "p99 ms",
                "mean ms",
                "reads/s",
                "mean vs lz4"
            ));
            for (codec, _) in CODECS {
                let Some(r) = codecs.get(codec) else {
                    continue;
                };
                for c in &self.config.concurrency {
                    let Some(l) = r.read_latency_ms.get(&c.to_string()) else {
                        continue;
                    };
                    let lz4_mean = self
                        .codec(dataset, "lz4")
                        .and_then(|x| x.read_latency_ms.get(&c.to_string()))
                        .map_or(f64::NAN, |x| x.mean);
                    out.push_str(&format!(
                        "{:<10} {:>7} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.3} {:>9.0} {:>11.2}x\n",
                        codec,
                        c,
                        l.p50,
                        l.p75,
                        l.p95,
                        l.p99,
                        l.mean,
                        l.reads_per_second,
                        l.mean / lz4_mean
                    ));
                }
            }
            out.push_str(&format!(
                "zstd3 vs lz4: {:.1}% smaller (the published study, {}: {})\n",
                100.0 * self.gain_vs_lz4(dataset, "zstd3").unwrap_or(f64::NAN),
                dataset.seed_table(),
                seed_zstd3_gain(dataset)
            ));
            if let (Some(d), Some(z)) = (
                self.codec(dataset, "zstd_dict"),
                self.codec(dataset, "zstd3"),
            ) {
                out.push_str(&format!(
                    "zstd_dict vs zstd3: {:.1}% smaller ({}; target: >= 10% on small rows)\n",
                    100.0 * (1.0 - d.compressed_bytes as f64 / z.compressed_bytes.max(1) as f64),
                    match (d.dictionary_bytes, &d.dictionary_note) {
                        (Some(b), _) => format!("dictionary of {b} bytes, stored once"),
                        (None, Some(n)) => format!("no dictionary: {n}"),
                        (None, None) => "no dictionary trained".to_string(),
                    }
                ));
            }
        }
        if let Some(r) = &self.recompression {
            let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
            out.push_str(&format!(
                "recompression under a {:.0} MiB quota: LZ4 {:.1} MiB (disk {:.1} MiB) -> Zstd 3 \
                 {:.1} MiB (ratio {:.3}); dry-run estimate {:.1} MiB; peak extra {:.1} MiB \
                 (largest sstable {:.1} MiB); with a snapshot: {}\n",
                mib(r.quota_bytes),
                mib(r.lz4_bytes),
                mib(r.filled_bytes),
                mib(r.final_bytes),
                r.final_ratio,
                mib(r.dry_run_estimate_bytes),
                mib(r.peak_extra_bytes),
                mib(r.largest_sstable_bytes),
                r.refusal_message.as_deref().unwrap_or("not refused")
            ));
        }
        out
    }

    /// The charts (SVG) into `dir`: the ratio per codec for both datasets, and
    /// per dataset the p99 read latency against the concurrency per codec.
    pub fn write_charts(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut written = Vec::new();
        // Codecs on x, by index; a line per dataset (plotters' line charts are
        // the shared chart style; the points are what matter).
        let measured: Vec<&str> = CODECS.iter().map(|(c, _)| *c).collect();
        let names = measured.clone();
        let codec_label = move |x: &f64| {
            let i = x.round();
            if (x - i).abs() < 1e-6 && i >= 0.0 {
                names
                    .get(i as usize)
                    .map_or(String::new(), |s| s.to_string())
            } else {
                String::new()
            }
        };
        let series: Vec<(String, Vec<(f64, f64)>)> = DATASETS
            .iter()
            .map(|d| {
                let pts = measured
                    .iter()
                    .enumerate()
                    .filter_map(|(i, c)| self.codec(*d, c).map(|r| (i as f64, r.compression_ratio)))
                    .collect();
                (d.key().to_string(), pts)
            })
            .collect();
        let path = dir.join("compression_ratio.svg");
        draw_line_chart(LineChart {
            path: path.clone(),
            width: 900,
            caption: "SSTable compression ratio (compressed / uncompressed) per codec".into(),
            x: -0.5..measured.len() as f64 - 0.5,
            y: 0.0..1.1,
            x_desc: "codec",
            y_desc: "ratio",
            x_label: Some(&codec_label),
            series,
        })?;
        written.push(path);
        let max_c = self.config.concurrency.iter().copied().max().unwrap_or(1) as f64;
        for d in DATASETS {
            let series: Vec<(String, Vec<(f64, f64)>)> = measured
                .iter()
                .filter_map(|c| {
                    let r = self.codec(d, c)?;
                    let pts = self
                        .config
                        .concurrency
                        .iter()
                        .filter_map(|t| {
                            r.read_latency_ms
                                .get(&t.to_string())
                                .map(|l| (*t as f64, l.p99))
                        })
                        .collect();
                    Some((c.to_string(), pts))
                })
                .collect();
            let y_max = series
                .iter()
                .flat_map(|(_, p)| p.iter().map(|x| x.1))
                .fold(0.0f64, f64::max);
            let path = dir.join(format!("read_p99_{}.svg", d.key()));
            draw_line_chart(LineChart {
                path: path.clone(),
                width: 900,
                caption: format!(
                    "{}: p99 whole-partition read latency vs concurrent readers (2 cores)",
                    d.key()
                ),
                x: 0.0..max_c * 1.05,
                y: 0.0..(y_max * 1.1).max(1e-3),
                x_desc: "concurrent readers",
                y_desc: "p99 ms",
                x_label: None,
                series,
            })?;
            written.push(path);
        }
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_are_deterministic_and_distinct() {
        for d in DATASETS {
            assert_eq!(d.partition(7, 3), d.partition(7, 3));
            assert_ne!(d.partition(7, 3).key, d.partition(7, 4).key);
            assert_ne!(d.partition(7, 3).key, d.partition(8, 3).key);
            for i in 0..200 {
                let p = d.partition(7, i);
                assert_eq!(p.rows.len() as u64, d.rows_in(7, i), "{d:?} {i}");
                assert_eq!(p.key, d.partition_key(7, i));
                assert_eq!(p.key.len(), 20);
            }
        }
    }

    #[test]
    fn small_rows_are_a_hash_and_a_token() {
        let p = plan(Dataset::SmallRows, 1, 4 << 20);
        let mean = p.raw_bytes as f64 / p.partitions as f64;
        // 20-byte key, 8-byte token (+1% two-row partitions).
        assert!((28.0..28.5).contains(&mean), "{mean}");
    }

    #[test]
    fn directory_sizes_have_the_seeds_mean_and_a_heavy_tail() {
        let d = Dataset::DirectoryEntries;
        let p = plan(d, 1, 64 << 20);
        let mean_entries = p.rows as f64 / p.partitions as f64;
        let mean_bytes = p.raw_bytes as f64 / p.partitions as f64;
        // Lomax mean 30 entries, ~2 lost to truncation; the tail makes the
        // sample mean noisy, hence the band.
        assert!((26.0..44.0).contains(&mean_entries), "{mean_entries}");
        // Raw bytes (no engine overhead) a little under the seed's 1867.
        assert!((900.0..1900.0).contains(&mean_bytes), "{mean_bytes}");
        // The tail reaches the MiB range...
        assert!(p.max_partition_raw_bytes > 1 << 20, "{p:?}");
        // ...while most directories are small (median well under the mean).
        let mut sizes: Vec<u64> = (0..2000).map(|i| d.rows_in(1, i)).collect();
        sizes.sort_unstable();
        assert!(sizes[1000] < 12, "median {}", sizes[1000]);
        assert!(sizes[0] >= 1);
        assert!(sizes.iter().all(|&n| n <= MAX_DIRECTORY_ENTRIES));
    }

    #[test]
    fn directory_names_are_unique_and_realistic() {
        let d = Dataset::DirectoryEntries;
        let mut common = 0usize;
        let mut total = 0usize;
        for i in 0..300 {
            let p = d.partition(2, i);
            let names: HashSet<Vec<u8>> = p
                .rows
                .iter()
                .filter_map(|r| match &r[1] {
                    ("name", Value::Blob(b)) => Some(b.clone()),
                    _ => None,
                })
                .collect();
            assert_eq!(names.len(), p.rows.len(), "names are the clustering key");
            total += names.len();
            common += names
                .iter()
                .filter(|n| {
                    COMMON_FILES
                        .iter()
                        .chain(&COMMON_DIRS)
                        .any(|c| c.as_bytes() == &n[..])
                })
                .count();
        }
        let share = common as f64 / total as f64;
        assert!((0.1..0.5).contains(&share), "{share}");
    }

    #[test]
    fn bad_configurations_are_refused_naming_the_option() {
        for (cfg, needle) in [
            (
                CompressionConfig {
                    raw_mib_per_dataset: 0,
                    ..CompressionConfig::default()
                },
                "--raw-mib",
            ),
            (
                CompressionConfig {
                    concurrency: vec![],
                    ..CompressionConfig::default()
                },
                "--concurrency",
            ),
            (
                CompressionConfig {
                    read_seconds: 0.0,
                    ..CompressionConfig::default()
                },
                "--read-seconds",
            ),
            (
                CompressionConfig {
                    chunk_kb: 0,
                    ..CompressionConfig::default()
                },
                "--chunk-kb",
            ),
        ] {
            let e = cfg.validate().expect_err(needle).to_string();
            assert!(e.contains(needle), "{e}");
        }
        assert!(CompressionConfig::default().validate().is_ok());
    }
}
