//! `strata-bench-compare`: the same key-value workloads on Strata, RocksDB and
//! fjall in one invocation, with a side-by-side table of ratios (issue 15 item 6).
//!
//! # Running it
//!
//! This crate is its own workspace, excluded from the root one, so that neither
//! the README's commands nor `.ci/run` (`cargo clippy/test --workspace`) compile
//! RocksDB. Once per machine:
//!
//! ```text
//! sudo apt-get install -y clang libclang-dev     # bindgen for librocksdb-sys
//! cd crates/strata-bench-compare
//! cargo build --release -j 1                     # 15-30 minutes (RocksDB's C++)
//! ./target/release/strata-bench-compare --keys 2000000 --json /tmp/compare.json
//! ```
//!
//! Options: `--keys N` (default 2,000,000; the issue's large option is
//! 20,000,000), `--engines strata,rocksdb,fjall` (also `strata-cassandra-l0`:
//! Strata with Cassandra's L0 rule, its default, where `strata` runs LCS with
//! `l0_compaction_trigger` 4 as RocksDB does), `--workloads
//! fillseq,fillrandom,overwrite,readrandom,readmissing,scan,timeseries`,
//! `--rounds R`, `--seed S`, `--dir DIR` (default a directory under the system
//! temp dir; each engine gets a fresh subdirectory, removed after its phase),
//! `--json FILE`, `--log-compression` (Strata's commit log LZ4-compressed per
//! record; the others' logs as they are), `--compact-before-reads` (reads
//! from equal states), `--interleave-reads K` (below); for the time series
//! `--ts-ttl-seconds` (8), `--ts-ttls` (4) and `--ts-series` (1000).
//!
//! # Interleaved reads (`--interleave-reads K`)
//!
//! Engines that run one after the other meet the shared machine's noise at
//! different minutes: in four equal-state rounds of 2026-11-28 one engine's
//! readrandom rate alone swung 92k-132k op/s, so a round's ratio swung
//! 0.80-1.44x. With `K` > 0 every engine's `fillrandom` database is loaded
//! (one engine at a time, alone) and left open in its own process; then each
//! read workload runs in `K` slices, engines alternating slice by slice (A B,
//! B A, ...), one process running at a time. Each engine's figures are its
//! slices' sums, so both sample the same seconds of noise.
//!
//! # What one round does, per database (engines one after the other on each
//! database, rounds interleaved so that a noisy neighbour hits every engine
//! alike)
//!
//! 1. `fillseq`: a fresh database; keys `0..N` in key order; settle.
//! 2. `fillrandom`: a fresh database; the same keys in a seeded random order;
//!    settle. Then on that database: `overwrite` (N puts of uniformly drawn
//!    existing keys, new values; settle), `readrandom` (N gets of drawn existing
//!    keys; every one must be found with a 100-byte value) and `readmissing` (N
//!    gets of keys that sort between existing ones, so that no engine can answer
//!    from a file's key range and each must consult its filters), then `scan`
//!    (below).
//! 3. `timeseries`: a fresh database configured to expire data (Strata TWCS
//!    with a default TTL, RocksDB FIFO with a TTL, fjall FIFO with a TTL),
//!    points written for several TTLs of wall clock, then recent reads
//!    (`timeseries-read`). The design and what each engine does are in
//!    `src/timeseries.rs`; its own table reports write amplification with the
//!    log, bytes on disk against the live data, and the expired data still held.
//!
//! Each database of each engine runs in a process of its own (this binary
//! again, with a hidden `--child` option; the parent only collects the
//! children's JSON lines and prints): peak memory and `/proc/self/io` are then
//! that engine's alone, not inflated by a heap the previous engine freed but
//! the allocator kept. One client thread; every engine has its own flush and
//! compaction threads. Throughput is the operations divided by the loop's
//! time, settling excluded (settle time is reported beside it: an engine that
//! defers work pays there).
//!
//! # Short range scans (`scan`)
//!
//! N/100 scans, each reading the 10 entries that follow a random existing key
//! in the engine's storage order (the start key excluded), each through a new
//! iterator. RocksDB and fjall: a seek, then the next keys in key order.
//! Strata orders partitions by Murmur3 token, so keys adjacent in byte order
//! are scattered over the ring, and a key-range scan would need a different
//! table shape (the keys as clustering columns of a few partitions). Its fair
//! equivalent, and what a Cassandra client paging through a table does, is the
//! 10 partitions that follow the start key's (token, key): `Table::scan` with a
//! paging state that names the start key (CQL `SELECT * FROM kv WHERE
//! token(key) > token(?) LIMIT 10`, the key breaking token ties). So every
//! engine reads 10 neighbours in its own order, from a seek. Every scan is
//! checked against the order computed beforehand (`expected_scans`): exactly 10
//! entries (fewer only at the end of the order), ending on the expected key,
//! with 100-byte values; anything else fails the run. Why N/100: 10 entries a
//! scan make the phase read N/10 entries, enough for a stable p99 (20,000 scans
//! at 2 M keys) in seconds. Its ops/s are scans per second.
//!
//! Strata's scan visits each row as it finds it (`Table::scan_rows`): rows a
//! single sstable holds are handed over as views of its cached chunk, as
//! RocksDB's iterator hands out slices of its block, and each engine copies
//! only the last key. (Built into a `ScanPage` instead, scans ran at
//! 0.53-0.84x this rate: BENCHMARKS.md, "Scans that build nothing".) A disjoint
//! level is one lazy source that opens one sstable at a time.
//!
//! # Data
//!
//! Keys are 16 bytes: the big-endian `2 * id` (existing) or `2 * id + 1`
//! (missing), then 8 bytes of a hash of `id`. Values are 100 bytes: 50 bytes of
//! a seeded hash stream (incompressible) then 50 copies of one byte (half
//! compressible, as db_bench's `--compression_ratio=0.5`). Every engine gets the
//! identical key and value streams for a seed.
//!
//! Strata stores a pair as one partition (the key) with one row and one cell
//! (`value`), each cell with its timestamp, and the row with its liveness info:
//! that costs bytes the others do not write. The "log B/op" and "sstable B/key"
//! columns measure it: the commit log's bytes per write against RocksDB's WAL,
//! and the settled sstables' bytes per key (the space table splits them by
//! content). Strata also hashes the partition key (Murmur3 tokens, as
//! Cassandra), so its `fillseq` is not sequential on disk: it is a
//! random-order load for Strata and a sorted one for the others.
//!
//! # Measures
//!
//! - ops/s, p50 and p99 latency (hdrhistogram, nanosecond resolution, shown in µs).
//! - Write amplification from each engine's own counters over the phase, divided
//!   by the user bytes (N × 116): Strata's `Database::io()` (commit log + flush +
//!   compaction + metadata), RocksDB's statistics (`rocksdb.wal.bytes` +
//!   `rocksdb.flush.write.bytes` + `rocksdb.compact.write.bytes`); fjall keeps
//!   no such counter (shown as `-`). A second, uniform figure for every engine:
//!   this process's `wchar` from `/proc/self/io` (bytes handed to write(2)),
//!   which counts every file the engine writes, whatever its own counters miss.
//! - Bytes on disk: the data directory walked after settling, split by file
//!   kind (`engines::file_kind`, from each engine's layout): log (Strata's
//!   `commitlog/` segments, RocksDB's `*.log` WAL, fjall's `journals/`),
//!   sstables (Strata's `strata-<id>-Data.db`, which holds its index and
//!   filter too; RocksDB's `*.sst`; fjall's `segments/`) and other (manifests,
//!   schema, options, RocksDB's text `LOG`). Logs stay until recycled in Strata
//!   and fjall, while RocksDB deletes a WAL once flushed, so at small key
//!   counts the log dominates the total: compare sstable bytes per key.
//! - The sstables by content, from each engine's own metadata: data blocks as
//!   stored and before compression, index, filter (Strata: the live sstables'
//!   statistics; RocksDB: `rocksdb.aggregated-table-properties`; fjall reports
//!   none). This is where the key-value mapping's cost shows: a pair is one
//!   partition with one row and one cell for Strata, which stores the cell's
//!   timestamp and the row's liveness (and one partition index entry per key),
//!   against RocksDB's key, 8-byte sequence-and-type trailer and value.
//!   Strata's uncompressed data bytes per key show its row encoding against
//!   the 116 user bytes (RocksDB counts its own while writing a table but does
//!   not persist it, so it shows `-`).
//! - Entries in the live sstables per key (`Engine::table_entries`): above 1
//!   when stale versions wait for compaction (after `overwrite`); in the time
//!   series, the expired points still on disk.
//! - Peak memory: the child's `VmHWM` after the phase, with the high-water mark
//!   reset (by writing 5 to `/proc/self/clear_refs`) at the phase's start; the
//!   phases after `fillrandom` include the heap that engine kept from it.

mod engines;
mod timeseries;

use clap::Parser;
use engines::{EngineWrites, FileKind, Result, TableBreakdown};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde_json::{json, Value as Json};
use std::collections::BTreeMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

const KEY_BYTES: usize = 16;
const VALUE_BYTES: usize = 100;
const ALL_WORKLOADS: [&str; 7] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readmissing",
    "scan",
    "timeseries",
];
/// The result rows, in table order: a workload each, and the time series'
/// recent reads beside its writes.
const RESULT_ROWS: [&str; 8] = [
    "fillseq",
    "fillrandom",
    "overwrite",
    "readrandom",
    "readmissing",
    "scan",
    "timeseries",
    "timeseries-read",
];
/// Entries one short scan reads.
const SCAN_ENTRIES: usize = 10;
/// `--keys / KEYS_PER_SCAN` scans (the module doc says why).
const KEYS_PER_SCAN: u64 = 100;

#[derive(Parser, Debug)]
#[command(about = "The same workloads on Strata, RocksDB and fjall, side by side")]
struct Args {
    /// Keys loaded (and operations per workload).
    #[arg(long, default_value_t = 2_000_000)]
    keys: u64,
    /// Comma-separated engines, run in this order within each round.
    #[arg(long, default_value = "strata,rocksdb,fjall", value_delimiter = ',')]
    engines: Vec<String>,
    /// Comma-separated workloads: fillseq, fillrandom, overwrite, readrandom,
    /// readmissing, scan (these four run on the fillrandom database),
    /// timeseries (writes, then recent reads, on a database of its own).
    #[arg(
        long,
        default_value = "fillseq,fillrandom,overwrite,readrandom,readmissing,scan,timeseries",
        value_delimiter = ','
    )]
    workloads: Vec<String>,
    /// Rounds; the table shows each figure's median over rounds.
    #[arg(long, default_value_t = 1)]
    rounds: u32,
    #[arg(long, default_value_t = 15)]
    seed: u64,
    /// Parent of the engines' data directories.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Writes every measurement (all rounds) as JSON.
    #[arg(long)]
    json: Option<PathBuf>,
    /// Time series: a point's TTL, in wall-clock seconds (at least 6).
    #[arg(long, default_value_t = 8)]
    ts_ttl_seconds: u32,
    /// Time series: the write loop lasts this many TTLs (at least 2).
    #[arg(long, default_value_t = 4)]
    ts_ttls: u32,
    /// Time series: series written round-robin.
    #[arg(long, default_value_t = 1000)]
    ts_series: u64,
    /// Compress Strata's commit log (LZ4 per record, `commitlog_compression`).
    /// The others' logs stay as they are: RocksDB compresses its WAL with zstd
    /// only, which this build of RocksDB leaves out (LZ4 alone; adding zstd is
    /// another long C++ build), and fjall 2 cannot compress its journal.
    #[arg(long)]
    log_compression: bool,
    /// Before the reads, compact each engine's sstables into the fewest its
    /// layout allows (Strata: a major compaction; RocksDB: `compact_range`
    /// over everything), so that both read from equal states instead of
    /// whatever L0 the load left (fjall: refused).
    #[arg(long)]
    compact_before_reads: bool,
    /// Run the read workloads (readrandom, readmissing, scan) of every engine
    /// in this many slices, alternating engines slice by slice (A B, then B A,
    /// ...), with every engine's database loaded and open at once (each in its
    /// own process, only one running at a time). Engines one after the other
    /// sample the machine's noise at different minutes; slices of a few
    /// seconds sample it alike, so their ratio is steadier. 0: off (each engine
    /// reads whole, in turn).
    #[arg(long, default_value_t = 0)]
    interleave_reads: u32,
    /// Internal: run one engine on one database in this process and print its
    /// measures as one JSON line (the parent starts one such child per engine,
    /// database and round).
    #[arg(long, hide = true)]
    child: Option<String>,
    /// Internal, with `--child`: `fillseq`, `fillrandom` or `timeseries`.
    #[arg(long, hide = true)]
    child_database: Option<String>,
    /// Internal, with `--child`: the round, which names the data directory.
    #[arg(long, hide = true, default_value_t = 0)]
    child_round: u32,
}

/// A database a child process builds and measures: `fillseq` alone, or
/// `fillrandom` then the workloads that run on its data.
const DATABASES: [(&str, &[&str]); 3] = [
    ("fillseq", &["fillseq"]),
    (
        "fillrandom",
        &[
            "fillrandom",
            "overwrite",
            "readrandom",
            "readmissing",
            "scan",
        ],
    ),
    ("timeseries", &["timeseries"]),
];

/// One workload's figures for one engine in one round. Serialized whole from a
/// child process to the parent (the parent's JSON output is [`Measure::to_json`]).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
struct Measure {
    ops: u64,
    seconds: f64,
    p50_us: f64,
    p99_us: f64,
    settle_seconds: f64,
    /// Engine-counted bytes written during the phase (ops and settle).
    engine_written: EngineWrites,
    /// `/proc/self/io` wchar delta over the phase.
    wchar_bytes: u64,
    /// The data directory's bytes at the phase's end (after settling), in all
    /// and by [`FileKind`].
    disk_bytes: u64,
    disk_log_bytes: u64,
    disk_table_bytes: u64,
    disk_other_bytes: u64,
    /// The live sstables by content, from the engine (write phases only).
    tables: Option<TableBreakdown>,
    /// Entries in the live sstables ([`engines::Engine::table_entries`]).
    table_entries: u64,
    /// Live sstables per level, L0 first ([`engines::Engine::sstables_per_level`]).
    #[serde(default)]
    sstables_per_level: Vec<u64>,
    /// Data-block cache lookups during the phase, `(hits, misses)`
    /// ([`engines::Engine::cache_lookups`]).
    #[serde(default)]
    cache_lookups: Option<(u64, u64)>,
    /// Time series only: the points written less than a TTL before the disk
    /// was measured.
    live_ops: Option<u64>,
    peak_rss_bytes: u64,
    /// Reads that found the key (readrandom must equal ops, readmissing 0).
    found: u64,
}

impl Measure {
    fn ops_per_sec(&self) -> f64 {
        self.ops as f64 / self.seconds.max(1e-9)
    }
    fn user_bytes(&self) -> u64 {
        self.ops * (KEY_BYTES + VALUE_BYTES) as u64
    }
    fn to_json(&self) -> Json {
        json!({
            "ops": self.ops,
            "seconds": self.seconds,
            "ops_per_sec": self.ops_per_sec(),
            "latency_us_p50": self.p50_us,
            "latency_us_p99": self.p99_us,
            "settle_seconds": self.settle_seconds,
            "engine_log_bytes": self.engine_written.log_bytes,
            "engine_flush_bytes": self.engine_written.flush_bytes,
            "engine_compaction_bytes": self.engine_written.compaction_bytes,
            "wchar_bytes": self.wchar_bytes,
            "disk_bytes": self.disk_bytes,
            "disk_log_bytes": self.disk_log_bytes,
            "disk_table_bytes": self.disk_table_bytes,
            "disk_other_bytes": self.disk_other_bytes,
            "table_data_bytes": self.tables.map(|t| t.data_bytes),
            "table_uncompressed_data_bytes": self.tables.and_then(|t| t.uncompressed_data_bytes),
            "table_index_bytes": self.tables.map(|t| t.index_bytes),
            "table_filter_bytes": self.tables.map(|t| t.filter_bytes),
            "table_entries": self.table_entries,
            "sstables_per_level": self.sstables_per_level,
            "cache_hits": self.cache_lookups.map(|c| c.0),
            "cache_misses": self.cache_lookups.map(|c| c.1),
            "live_ops": self.live_ops,
            "peak_rss_bytes": self.peak_rss_bytes,
            "found": self.found,
        })
    }
}

fn main() {
    if let Err(e) = run() {
        eprintln!("strata-bench-compare: {e}");
        std::process::exit(1);
    }
}

fn run() -> Result<()> {
    let args = Args::parse();
    if let Some(engine) = &args.child {
        return run_child(engine, &args);
    }
    for w in &args.workloads {
        if !ALL_WORKLOADS.contains(&w.as_str()) {
            return Err(format!(
                "unknown workload '{w}' (known: {})",
                ALL_WORKLOADS.join(", ")
            )
            .into());
        }
    }
    if args.keys == 0 {
        return Err("--keys must be at least 1".into());
    }
    if args.workloads.iter().any(|w| w == "timeseries") {
        series_config(&args).validate()?;
    }
    let parent = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("strata-bench-compare-{}", std::process::id())),
    };
    std::fs::create_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    let started_utc = utc_now();
    let load_before = load_average()?;
    println!(
        "strata-bench-compare: {} keys, {KEY_BYTES}-byte keys, {VALUE_BYTES}-byte values (half compressible), \
         seed {}, {} round(s), engines {}, logs {}{}{}, load average {load_before}",
        args.keys,
        args.seed,
        args.rounds,
        args.engines.join(","),
        if args.log_compression {
            "Strata's compressed, the others' not"
        } else {
            "uncompressed"
        },
        if args.compact_before_reads {
            ", reads after a full compaction"
        } else {
            ""
        },
        if args.interleave_reads > 0 {
            format!(
                ", reads interleaved in {} slices per workload",
                args.interleave_reads
            )
        } else {
            String::new()
        }
    );
    // results[engine][workload] = one Measure per round.
    let mut results: BTreeMap<String, BTreeMap<String, Vec<Measure>>> = BTreeMap::new();
    for round in 0..args.rounds {
        for (database, workloads) in DATABASES {
            if !workloads
                .iter()
                .any(|w| args.workloads.iter().any(|x| x == w))
            {
                continue;
            }
            let per_engine = if args.interleave_reads > 0 && database == "fillrandom" {
                interleaved_children(database, round, &parent, &args)?
            } else {
                let mut all = Vec::new();
                for engine in &args.engines {
                    all.push((
                        engine.clone(),
                        spawn_child(engine, database, round, &parent, &args)?,
                    ));
                }
                all
            };
            for (engine, w, m) in per_engine
                .into_iter()
                .flat_map(|(e, per)| per.into_iter().map(move |(w, m)| (e.clone(), w, m)))
            {
                let mut levels = if m.sstables_per_level.is_empty() {
                    String::new()
                } else {
                    format!("  sstables per level {:?}", m.sstables_per_level)
                };
                if let Some((hits, misses)) = m.cache_lookups.filter(|c| c.0 + c.1 > 0) {
                    levels += &format!(
                        "  cache hits {:.1}% of {}",
                        100.0 * hits as f64 / (hits + misses) as f64,
                        hits + misses
                    );
                }
                println!(
                    "round {round} {engine:8} {w:12} {:>10.0} ops/s  p50 {:>8.2} us  p99 {:>8.2} us  settle {:>6.1} s{levels}",
                    m.ops_per_sec(),
                    m.p50_us,
                    m.p99_us,
                    m.settle_seconds
                );
                results
                    .entry(engine.clone())
                    .or_default()
                    .entry(w)
                    .or_default()
                    .push(m);
            }
        }
    }
    let load_after = load_average()?;
    println!();
    print_tables(&args, &results);
    println!("\nload average before: {load_before}; after: {load_after}");
    if let Some(path) = &args.json {
        let mut by_engine = serde_json::Map::new();
        for (engine, per) in &results {
            let mut by_w = serde_json::Map::new();
            for (w, ms) in per {
                by_w.insert(
                    w.clone(),
                    Json::Array(ms.iter().map(Measure::to_json).collect()),
                );
            }
            by_engine.insert(engine.clone(), Json::Object(by_w));
        }
        let doc = json!({
            "started_utc": started_utc,
            "keys": args.keys,
            "key_bytes": KEY_BYTES,
            "value_bytes": VALUE_BYTES,
            "seed": args.seed,
            "rounds": args.rounds,
            "ts_ttl_seconds": args.ts_ttl_seconds,
            "ts_ttls": args.ts_ttls,
            "ts_series": args.ts_series,
            "log_compression": args.log_compression,
            "compact_before_reads": args.compact_before_reads,
            "interleave_reads": args.interleave_reads,
            "load_average_before": load_before,
            "load_average_after": load_after,
            "results": by_engine,
        });
        let text = serde_json::to_string_pretty(&doc)?;
        std::fs::write(path, text).map_err(|e| format!("{}: {e}", path.display()))?;
    }
    if args.dir.is_none() {
        std::fs::remove_dir_all(&parent).map_err(|e| format!("{}: {e}", parent.display()))?;
    }
    Ok(())
}

/// The command that runs one engine on one database in a child process
/// ([`spawn_child`]).
fn child_command(
    engine: &str,
    database: &str,
    round: u32,
    parent: &Path,
    args: &Args,
) -> Result<std::process::Command> {
    let exe = std::env::current_exe().map_err(|e| format!("current_exe: {e}"))?;
    let mut c = std::process::Command::new(&exe);
    c.arg("--child")
        .arg(engine)
        .arg("--child-database")
        .arg(database)
        .arg("--child-round")
        .arg(round.to_string())
        .arg("--keys")
        .arg(args.keys.to_string())
        .arg("--workloads")
        .arg(args.workloads.join(","))
        .arg("--seed")
        .arg(args.seed.to_string())
        .arg("--ts-ttl-seconds")
        .arg(args.ts_ttl_seconds.to_string())
        .arg("--ts-ttls")
        .arg(args.ts_ttls.to_string())
        .arg("--ts-series")
        .arg(args.ts_series.to_string())
        .args(args.log_compression.then_some("--log-compression"))
        .args(
            args.compact_before_reads
                .then_some("--compact-before-reads"),
        )
        .arg("--dir")
        .arg(parent)
        .stderr(std::process::Stdio::inherit());
    Ok(c)
}

/// One child's measures: `(workload, measure)` in the order it ran them.
type Measures = Vec<(String, Measure)>;

/// The measures a child printed as its last line.
fn parse_child_measures(what: &str, line: Option<&str>) -> Result<Vec<(String, Measure)>> {
    let line = line.ok_or_else(|| format!("the child process for {what} printed nothing"))?;
    let doc: Json = serde_json::from_str(line)
        .map_err(|e| format!("the child process for {what} printed '{line}': {e}"))?;
    Ok(serde_json::from_value(doc["measures"].clone())
        .map_err(|e| format!("the child process for {what}: {e}"))?)
}

/// Runs `database` (`fillrandom`) of every engine at once, each in its own
/// child process, with the read phases interleaved (`--interleave-reads`):
/// the children load one after the other (each alone on the machine), then
/// every child's read phases run slice by slice, engines alternating in the
/// order A B, B A, A B, ... Only one child runs at a time: the parent hands a
/// child its next slice and waits until it says it waits again (or ends).
fn interleaved_children(
    database: &str,
    round: u32,
    parent: &Path,
    args: &Args,
) -> Result<Vec<(String, Measures)>> {
    struct Running {
        engine: String,
        child: std::process::Child,
        input: std::process::ChildStdin,
        output: std::io::Lines<std::io::BufReader<std::process::ChildStdout>>,
        last: Option<String>,
        ended: bool,
    }
    impl Running {
        /// Reads the child's lines until it waits or ends.
        fn pump(&mut self) -> Result<()> {
            loop {
                match self.output.next() {
                    Some(Ok(line)) if line == WAIT_LINE => return Ok(()),
                    Some(Ok(line)) => self.last = Some(line),
                    Some(Err(e)) => {
                        return Err(format!("reading the {} child: {e}", self.engine).into())
                    }
                    None => {
                        self.ended = true;
                        return Ok(());
                    }
                }
            }
        }
    }
    let mut running = Vec::new();
    for engine in &args.engines {
        let mut child = child_command(engine, database, round, parent, args)?
            .arg("--interleave-reads")
            .arg(args.interleave_reads.to_string())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting the {engine} child: {e}"))?;
        let (Some(input), Some(output)) = (child.stdin.take(), child.stdout.take()) else {
            return Err(format!("the {engine} child has no pipes").into());
        };
        let mut r = Running {
            engine: engine.clone(),
            child,
            input,
            output: std::io::BufReader::new(output).lines(),
            last: None,
            ended: false,
        };
        // Its load runs alone: the next child starts once this one waits.
        r.pump()?;
        running.push(r);
    }
    let mut turn = 0usize;
    while running.iter().any(|r| !r.ended) {
        let mut order: Vec<usize> = (0..running.len()).collect();
        if turn % 2 == 1 {
            order.reverse();
        }
        for i in order {
            let r = &mut running[i];
            if r.ended {
                continue;
            }
            writeln!(r.input, "{GO_LINE}")
                .and_then(|()| r.input.flush())
                .map_err(|e| format!("telling the {} child to go on: {e}", r.engine))?;
            r.pump()?;
        }
        turn += 1;
    }
    let mut out = Vec::new();
    for mut r in running {
        let what = format!("{} {database} round {round}", r.engine);
        let status = r.child.wait().map_err(|e| format!("{what}: {e}"))?;
        if !status.success() {
            return Err(format!("the child process for {what} failed ({status})").into());
        }
        out.push((r.engine, parse_child_measures(&what, r.last.as_deref())?));
    }
    Ok(out)
}

/// Runs one engine on one database in a process of its own: this binary again,
/// with `--child`. Why a process each: the allocator keeps a freed heap, so in
/// one process every engine's peak memory (`VmHWM`) would include the heap the
/// previous engine left behind, and `/proc/self/io` would mix their writes. The
/// child prints one JSON line on stdout, `{"measures": [[workload, Measure],
/// ...]}`; its stderr is this process's, so its errors show as they happen.
fn spawn_child(
    engine: &str,
    database: &str,
    round: u32,
    parent: &Path,
    args: &Args,
) -> Result<Vec<(String, Measure)>> {
    let output = child_command(engine, database, round, parent, args)?
        .stdin(std::process::Stdio::null())
        .output()
        .map_err(|e| format!("the {engine} child: {e}"))?;
    let what = format!("{engine} {database} round {round}");
    if !output.status.success() {
        return Err(format!("the child process for {what} failed ({})", output.status).into());
    }
    let stdout = String::from_utf8_lossy(&output.stdout);
    parse_child_measures(&what, stdout.lines().last())
}

/// The child's side of [`spawn_child`]: one database of one engine, its
/// measures printed as the one line of stdout.
fn run_child(engine: &str, args: &Args) -> Result<()> {
    engines::LOG_COMPRESSION.store(args.log_compression, std::sync::atomic::Ordering::Relaxed);
    let database = args
        .child_database
        .as_deref()
        .ok_or("--child needs --child-database")?;
    let parent = args.dir.as_ref().ok_or("--child needs --dir")?;
    let dir = parent
        .join(format!("{engine}-{}", args.child_round))
        .join(database);
    let measures = run_database(engine, database, &dir, args)?;
    println!("{}", json!({ "measures": measures }));
    Ok(())
}

/// Runs the requested workloads of one database on one engine: `fillseq` on
/// its own database, the others on the `fillrandom` database. Removes the
/// database's directory after.
fn run_database(
    engine: &str,
    database: &str,
    d: &Path,
    args: &Args,
) -> Result<Vec<(String, Measure)>> {
    let wants = |w: &str| args.workloads.iter().any(|x| x == w);
    let mut gate = Gate::new(args.interleave_reads);
    let mut out = Vec::new();
    if database == "fillseq" {
        let mut phase = Phase::start(engine, None, d)?;
        let mut db = engines::open(engine, d)?;
        let ids: Vec<u64> = (0..args.keys).collect();
        let m = phase.write(&mut *db, &ids, 0, args.seed, d)?;
        db.close()?;
        std::fs::remove_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        out.push(("fillseq".to_string(), m));
    } else if database == "fillrandom" {
        let mut phase = Phase::start(engine, None, d)?;
        let mut db = engines::open(engine, d)?;
        let mut rng = ChaCha8Rng::seed_from_u64(args.seed);
        let mut ids: Vec<u64> = (0..args.keys).collect();
        // Fisher-Yates with the seeded stream: the same order for every engine.
        for i in (1..ids.len()).rev() {
            ids.swap(i, rng.gen_range(0..=i));
        }
        let m = phase.write(&mut *db, &ids, 0, args.seed, d)?;
        out.push(("fillrandom".to_string(), m));
        let drawn: Vec<u64> = (0..args.keys)
            .map(|_| rng.gen_range(0..args.keys))
            .collect();
        if wants("overwrite") {
            let mut phase = Phase::start(engine, Some(&*db), d)?;
            let m = phase.write(&mut *db, &drawn, 1, args.seed, d)?;
            out.push(("overwrite".to_string(), m));
        }
        let reads: Vec<u64> = (0..args.keys)
            .map(|_| rng.gen_range(0..args.keys))
            .collect();
        if args.compact_before_reads
            && ["readrandom", "readmissing", "scan"]
                .iter()
                .any(|w| wants(w))
        {
            db.compact_all()?;
        }
        if wants("readrandom") {
            let mut phase = Phase::start(engine, Some(&*db), d)?;
            let m = phase.read(&mut *db, &reads, true, &mut gate, d)?;
            if m.found != m.ops {
                return Err(format!(
                    "{engine}: readrandom found {} of {} existing keys",
                    m.found, m.ops
                )
                .into());
            }
            out.push(("readrandom".to_string(), m));
        }
        if wants("readmissing") {
            let mut phase = Phase::start(engine, Some(&*db), d)?;
            let m = phase.read(&mut *db, &reads, false, &mut gate, d)?;
            if m.found != 0 {
                return Err(format!("{engine}: readmissing found {} absent keys", m.found).into());
            }
            out.push(("readmissing".to_string(), m));
        }
        let starts: Vec<u64> = (0..(args.keys / KEYS_PER_SCAN).max(1))
            .map(|_| rng.gen_range(0..args.keys))
            .collect();
        if wants("scan") {
            let expected = expected_scans(&*db, args.keys, &starts)?;
            let mut phase = Phase::start(engine, Some(&*db), d)?;
            let m = phase.scan(&mut *db, &starts, &expected, &mut gate, d)?;
            out.push(("scan".to_string(), m));
        }
        db.close()?;
        std::fs::remove_dir_all(d).map_err(|e| format!("{}: {e}", d.display()))?;
        // Report only what was asked for (fillrandom may have run as a load only).
        out.retain(|(w, _)| wants(w));
    } else if database == "timeseries" {
        out = timeseries::run(engine, d, &series_config(args))?;
    } else {
        return Err(format!("unknown database '{database}'").into());
    }
    Ok(out)
}

fn series_config(args: &Args) -> timeseries::Config {
    timeseries::Config {
        ttl_seconds: args.ts_ttl_seconds,
        ttls: args.ts_ttls,
        series: args.ts_series,
        reads: args.keys / 10,
        seed: args.seed,
    }
}

/// The process-wide counters at a phase's start.
struct Phase {
    engine: String,
    wchar_start: u64,
    cache_start: Option<(u64, u64)>,
}

impl Phase {
    /// A phase starting now; if its engine is already open, `open` gives it,
    /// so that the phase counts only its own cache lookups (an engine opened
    /// in the phase starts from zero).
    fn start(engine: &str, open: Option<&dyn engines::Engine>, dir: &Path) -> Result<Phase> {
        std::fs::create_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        reset_peak_rss()?;
        Ok(Phase {
            engine: engine.to_string(),
            wchar_start: proc_io("wchar")?,
            cache_start: open.and_then(|db| db.cache_lookups()),
        })
    }

    /// The measure's figures common to every phase, taken at its end.
    fn finish(&self, db: &dyn engines::Engine, dir: &Path, m: &mut Measure) -> Result<()> {
        m.wchar_bytes = proc_io("wchar")?.saturating_sub(self.wchar_start);
        let disk = disk_bytes_by_kind(&self.engine, dir)?;
        m.disk_log_bytes = disk[0];
        m.disk_table_bytes = disk[1];
        m.disk_other_bytes = disk[2];
        m.disk_bytes = disk.iter().sum();
        m.tables = db.tables()?;
        m.table_entries = db.table_entries()?;
        m.sstables_per_level = db.sstables_per_level()?;
        let (h0, m0) = self.cache_start.unwrap_or((0, 0));
        m.cache_lookups = db
            .cache_lookups()
            .map(|(h, mi)| (h.saturating_sub(h0), mi.saturating_sub(m0)));
        m.peak_rss_bytes = peak_rss()?;
        Ok(())
    }

    fn write(
        &mut self,
        db: &mut dyn engines::Engine,
        ids: &[u64],
        version: u64,
        seed: u64,
        dir: &Path,
    ) -> Result<Measure> {
        let before = db.writes();
        let mut hist = new_histogram()?;
        let mut value = [0u8; VALUE_BYTES];
        let started = Instant::now();
        for &id in ids {
            let key = key_bytes(id, true);
            fill_value(&mut value, seed, id, version);
            let t = Instant::now();
            db.put(&key, &value)?;
            hist.saturating_record(t.elapsed().as_nanos() as u64);
        }
        let seconds = started.elapsed().as_secs_f64();
        let settle_started = Instant::now();
        db.settle()?;
        let settle_seconds = settle_started.elapsed().as_secs_f64();
        let after = db.writes();
        let mut m = Measure {
            ops: ids.len() as u64,
            seconds,
            p50_us: quantile_us(&hist, 0.50),
            p99_us: quantile_us(&hist, 0.99),
            settle_seconds,
            engine_written: after.since(&before),
            ..Measure::default()
        };
        self.finish(db, dir, &mut m)?;
        Ok(m)
    }

    fn read(
        &mut self,
        db: &mut dyn engines::Engine,
        ids: &[u64],
        existing: bool,
        gate: &mut Gate,
        dir: &Path,
    ) -> Result<Measure> {
        let mut hist = new_histogram()?;
        let mut found = 0u64;
        let seconds = gate.timed(ids.len(), |slice| {
            for &id in &ids[slice] {
                let key = key_bytes(id, existing);
                let t = Instant::now();
                let got = db.get(&key)?;
                hist.saturating_record(t.elapsed().as_nanos() as u64);
                match got {
                    Some(VALUE_BYTES) => found += 1,
                    Some(n) => {
                        return Err(
                            format!("key {id}: a value of {n} bytes, not {VALUE_BYTES}").into()
                        )
                    }
                    None => {}
                }
            }
            Ok(())
        })?;
        let mut m = Measure {
            ops: ids.len() as u64,
            seconds,
            p50_us: quantile_us(&hist, 0.50),
            p99_us: quantile_us(&hist, 0.99),
            found,
            ..Measure::default()
        };
        self.finish(db, dir, &mut m)?;
        Ok(m)
    }

    /// One short scan from each of `starts` (existing keys), each checked
    /// against `expected` ([`expected_scans`]): a scan that returns another
    /// count, ends on another key or returns a value of another size fails
    /// the run. `ops` counts scans; `found` the entries read.
    fn scan(
        &mut self,
        db: &mut dyn engines::Engine,
        starts: &[u64],
        expected: &[(usize, Option<u64>)],
        gate: &mut Gate,
        dir: &Path,
    ) -> Result<Measure> {
        let mut hist = new_histogram()?;
        let mut entries = 0u64;
        let seconds = gate.timed(starts.len(), |slice| {
            for (&id, &(want, want_last)) in starts[slice.clone()].iter().zip(&expected[slice]) {
                let key = key_bytes(id, true);
                let t = Instant::now();
                let got = db.scan(&key, SCAN_ENTRIES)?;
                hist.saturating_record(t.elapsed().as_nanos() as u64);
                let want_last = want_last.map(|l| key_bytes(l, true).to_vec());
                if got.entries != want
                    || got.last_key != want_last
                    || got.value_bytes != got.entries * VALUE_BYTES
                {
                    return Err(format!(
                        "{}: the scan after key {id} read {} entries ({} value bytes) ending at {:?}; \
                         expected {want} entries of {VALUE_BYTES} bytes ending at {:?}",
                        self.engine, got.entries, got.value_bytes, got.last_key, want_last
                    )
                    .into());
                }
                entries += got.entries as u64;
            }
            Ok(())
        })?;
        let mut m = Measure {
            ops: starts.len() as u64,
            seconds,
            p50_us: quantile_us(&hist, 0.50),
            p99_us: quantile_us(&hist, 0.99),
            found: entries,
            ..Measure::default()
        };
        self.finish(db, dir, &mut m)?;
        Ok(m)
    }
}

/// The line a child prints when it waits for its next read slice, and the one
/// the parent answers with (`--interleave-reads`).
const WAIT_LINE: &str = "wait";
const GO_LINE: &str = "go";

/// How a child runs a read phase: whole, or in slices that each start on the
/// parent's word, so that the parent can alternate engines slice by slice
/// (`--interleave-reads`). Whatever the child does between slices (a phase's
/// end figures, the next phase's set-up) happens before it says it waits, so
/// no two engines ever run at once.
struct Gate {
    slices: usize,
    input: Option<std::io::Lines<std::io::StdinLock<'static>>>,
}

impl Gate {
    fn new(slices: u32) -> Gate {
        Gate {
            slices: slices.max(1) as usize,
            input: (slices > 0).then(|| std::io::stdin().lock().lines()),
        }
    }

    /// Runs a phase of `n` operations as consecutive ranges, one per slice,
    /// each on the parent's word ([`Gate::wait`]); returns the seconds `run`
    /// took over all slices (the waits excluded).
    fn timed(
        &mut self,
        n: usize,
        mut run: impl FnMut(std::ops::Range<usize>) -> Result<()>,
    ) -> Result<f64> {
        let k = self.slices;
        let mut seconds = 0.0;
        for i in 0..k {
            self.wait()?;
            let started = Instant::now();
            run(i * n / k..(i + 1) * n / k)?;
            seconds += started.elapsed().as_secs_f64();
        }
        Ok(seconds)
    }

    /// Tells the parent this child waits, and blocks until it says go (a no-op
    /// when not interleaved).
    fn wait(&mut self) -> Result<()> {
        let Some(input) = &mut self.input else {
            return Ok(());
        };
        let mut out = std::io::stdout().lock();
        writeln!(out, "{WAIT_LINE}")?;
        out.flush()?;
        match input.next() {
            Some(Ok(line)) if line == GO_LINE => Ok(()),
            Some(Ok(line)) => Err(format!("the parent said '{line}', not '{GO_LINE}'").into()),
            Some(Err(e)) => Err(format!("reading the parent's word: {e}").into()),
            None => Err("the parent closed this child's input".into()),
        }
    }
}

/// What the scan from each of `starts` must return in `db`'s storage order:
/// the number of entries and the last key's id. Computed before the phase
/// (the order of all N keys is built, then dropped).
fn expected_scans(
    db: &dyn engines::Engine,
    keys: u64,
    starts: &[u64],
) -> Result<Vec<(usize, Option<u64>)>> {
    // Keys sort by id (the big-endian `2 * id` prefix), so (token, id) is the
    // storage order; the token is 0 for the engines that order by key alone.
    let mut order: Vec<(i64, u64)> = Vec::with_capacity(keys as usize);
    for id in 0..keys {
        order.push((db.order_token(&key_bytes(id, true))?.unwrap_or(0), id));
    }
    order.sort_unstable();
    let mut rank = vec![0u32; keys as usize];
    for (r, &(_, id)) in order.iter().enumerate() {
        rank[id as usize] = r as u32;
    }
    Ok(starts
        .iter()
        .map(|&id| {
            let r = rank[id as usize] as usize;
            let n = SCAN_ENTRIES.min(order.len() - 1 - r);
            (n, (n > 0).then(|| order[r + n].1))
        })
        .collect())
}

/// Quantile `q` of a histogram of nanoseconds, in microseconds.
fn quantile_us(hist: &Histogram<u64>, q: f64) -> f64 {
    hist.value_at_quantile(q) as f64 / 1000.0
}

fn new_histogram() -> Result<Histogram<u64>> {
    Ok(Histogram::new_with_bounds(1, 60_000_000_000, 3)?)
}

/// SplitMix64: the key suffix and the value's incompressible half.
fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Existing keys have an even prefix and missing ones the odd prefix just
/// after, so that a missing key always falls inside some file's key range.
fn key_bytes(id: u64, existing: bool) -> [u8; KEY_BYTES] {
    let mut k = [0u8; KEY_BYTES];
    k[..8].copy_from_slice(&(2 * id + u64::from(!existing)).to_be_bytes());
    k[8..].copy_from_slice(&splitmix(id).to_le_bytes());
    k
}

fn fill_value(v: &mut [u8; VALUE_BYTES], seed: u64, id: u64, version: u64) {
    let half = VALUE_BYTES / 2;
    let mut x = splitmix(seed ^ splitmix(id ^ (version << 56)));
    for chunk in v[..half].chunks_mut(8) {
        x = splitmix(x);
        chunk.copy_from_slice(&x.to_le_bytes()[..chunk.len()]);
    }
    v[half..].fill(b'a' + (id % 26) as u8);
}

fn proc_io(field: &str) -> Result<u64> {
    let text =
        std::fs::read_to_string("/proc/self/io").map_err(|e| format!("/proc/self/io: {e}"))?;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix(field).and_then(|r| r.strip_prefix(':')) {
            return Ok(rest.trim().parse()?);
        }
    }
    Err(format!("/proc/self/io has no '{field}'").into())
}

/// Resets VmHWM to the current RSS (Linux 4.0+), so that a phase's peak is its
/// own and not that of the phases before it in this child process.
fn reset_peak_rss() -> Result<()> {
    std::fs::write("/proc/self/clear_refs", "5")
        .map_err(|e| format!("/proc/self/clear_refs: {e}"))?;
    Ok(())
}

fn peak_rss() -> Result<u64> {
    let text = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("/proc/self/status: {e}"))?;
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("VmHWM:") {
            let kib: u64 = rest.trim().trim_end_matches("kB").trim().parse()?;
            return Ok(kib * 1024);
        }
    }
    Err("/proc/self/status has no VmHWM".into())
}

fn load_average() -> Result<String> {
    let text =
        std::fs::read_to_string("/proc/loadavg").map_err(|e| format!("/proc/loadavg: {e}"))?;
    Ok(text
        .split_whitespace()
        .take(3)
        .collect::<Vec<_>>()
        .join(" "))
}

fn utc_now() -> String {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    format!("{secs} (Unix seconds)")
}

/// The bytes of the files under `dir`: `[log, table, other]` ([`FileKind`]).
/// Apparent sizes (`len`, as `du --apparent-size`), not allocated blocks.
fn disk_bytes_by_kind(engine: &str, dir: &Path) -> Result<[u64; 3]> {
    fn walk(engine: &str, root: &Path, dir: &Path, out: &mut [u64; 3]) -> Result<()> {
        let entries = std::fs::read_dir(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
        for entry in entries {
            let entry = entry.map_err(|e| format!("{}: {e}", dir.display()))?;
            let path = entry.path();
            // A file can vanish between the listing and the stat (a compaction
            // or a log recycle finishing): it no longer counts.
            let meta = match entry.metadata() {
                Ok(m) => m,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
                Err(e) => return Err(format!("{}: {e}", path.display()).into()),
            };
            if meta.is_dir() {
                walk(engine, root, &path, out)?;
                continue;
            }
            let relative = path.strip_prefix(root).unwrap_or(&path);
            let slot = match engines::file_kind(engine, relative) {
                FileKind::Log => 0,
                FileKind::Table => 1,
                FileKind::Other => 2,
            };
            out[slot] += meta.len();
        }
        Ok(())
    }
    let mut out = [0u64; 3];
    walk(engine, dir, dir, &mut out)?;
    Ok(out)
}

fn median(mut xs: Vec<f64>) -> f64 {
    xs.sort_by(|a, b| a.total_cmp(b));
    xs[xs.len() / 2]
}

fn print_tables(args: &Args, results: &BTreeMap<String, BTreeMap<String, Vec<Measure>>>) {
    let engines: Vec<&String> = args
        .engines
        .iter()
        .filter(|e| results.contains_key(*e))
        .collect();
    let get = |e: &str, w: &str| results.get(e).and_then(|p| p.get(w));
    let med = |e: &str, w: &str, f: &dyn Fn(&Measure) -> f64| {
        get(e, w).map(|ms| median(ms.iter().map(f).collect()))
    };
    // Throughput and latency, with Strata's ratio to each other engine.
    let mut header = format!("| {:12} |", "workload");
    for e in &engines {
        header += &format!(" {e} ops/s | {e} p50 µs | {e} p99 µs |");
    }
    let others: Vec<&&String> = engines.iter().filter(|e| e.as_str() != "strata").collect();
    let has_strata = engines.iter().any(|e| e.as_str() == "strata");
    if has_strata {
        for o in &others {
            header += &format!(" strata/{o} ops/s |");
        }
    }
    println!("{header}");
    println!(
        "|{}",
        "---|".repeat(1 + 3 * engines.len() + if has_strata { others.len() } else { 0 })
    );
    for w in RESULT_ROWS
        .iter()
        .filter(|w| engines.iter().any(|e| get(e, w).is_some()))
    {
        let mut line = format!("| {w:12} |");
        for e in &engines {
            match (
                med(e, w, &|m| m.ops_per_sec()),
                med(e, w, &|m| m.p50_us),
                med(e, w, &|m| m.p99_us),
            ) {
                (Some(o), Some(p50), Some(p99)) => {
                    line += &format!(" {o:.0} | {p50:.1} | {p99:.1} |")
                }
                _ => line += " - | - | - |",
            }
        }
        if has_strata {
            for o in &others {
                match (
                    med("strata", w, &|m| m.ops_per_sec()),
                    med(o, w, &|m| m.ops_per_sec()),
                ) {
                    (Some(s), Some(x)) => line += &format!(" {:.2} |", s / x),
                    _ => line += " - |",
                }
            }
        }
        println!("{line}");
    }
    let kv = [
        "fillseq",
        "fillrandom",
        "overwrite",
        "readrandom",
        "readmissing",
        "scan",
    ];
    if !engines
        .iter()
        .any(|e| kv.iter().any(|w| get(e, w).is_some()))
    {
        print_series_table(args, &engines, &get);
        return;
    }
    // Amplification, space and memory of the key-value workloads.
    println!();
    println!("| engine | workload | settle s | WA (engine counters) | WA (wchar) | log B/op | disk MB | disk B/key | sstable B/key | peak RSS MB |");
    println!("|---|---|---|---|---|---|---|---|---|---|");
    for e in &engines {
        for w in kv {
            let Some(ms) = get(e, w) else { continue };
            let is_write = matches!(w, "fillseq" | "fillrandom" | "overwrite");
            let settle = median(ms.iter().map(|m| m.settle_seconds).collect());
            let (wa_engine, wa_wchar, log) = if is_write {
                write_figures(ms)
            } else {
                ("-".to_string(), "-".to_string(), "-".to_string())
            };
            let disk = median(ms.iter().map(|m| m.disk_bytes as f64).collect());
            let tables = median(ms.iter().map(|m| m.disk_table_bytes as f64).collect());
            let rss = median(ms.iter().map(|m| m.peak_rss_bytes as f64).collect());
            println!(
                "| {e} | {w} | {settle:.1} | {wa_engine} | {wa_wchar} | {log} | {:.1} | {:.0} | {:.0} | {:.0} |",
                disk / 1e6,
                disk / args.keys as f64,
                tables / args.keys as f64,
                rss / (1 << 20) as f64
            );
        }
    }
    // Space after settling, by file kind and (from the engines' own metadata)
    // by content of the sstables; per key = per live key (every write phase
    // leaves N keys).
    let writes = ["fillseq", "fillrandom", "overwrite"];
    if !engines
        .iter()
        .any(|e| writes.iter().any(|w| get(e, w).is_some()))
    {
        print_series_table(args, &engines, &get);
        return;
    }
    println!();
    println!("| engine | workload | log MB | sstable MB | other MB | sstable B/key | sstable entries/key | data B/key | uncompressed data B/key | index B/key | filter B/key |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|");
    for e in &engines {
        for w in writes {
            let Some(ms) = get(e, w) else { continue };
            let mb = |f: &dyn Fn(&Measure) -> u64| {
                median(ms.iter().map(|m| f(m) as f64).collect()) / 1e6
            };
            let per_key = |f: &dyn Fn(&TableBreakdown) -> Option<u64>| {
                let vs: Option<Vec<f64>> = ms
                    .iter()
                    .map(|m| m.tables.as_ref().and_then(f).map(|v| v as f64))
                    .collect();
                vs.map_or("-".to_string(), |vs| {
                    format!("{:.1}", median(vs) / args.keys as f64)
                })
            };
            println!(
                "| {e} | {w} | {:.1} | {:.1} | {:.2} | {:.1} | {:.2} | {} | {} | {} | {} |",
                mb(&|m| m.disk_log_bytes),
                mb(&|m| m.disk_table_bytes),
                mb(&|m| m.disk_other_bytes),
                median(ms.iter().map(|m| m.disk_table_bytes as f64).collect()) / args.keys as f64,
                median(ms.iter().map(|m| m.table_entries as f64).collect()) / args.keys as f64,
                per_key(&|t| Some(t.data_bytes)),
                per_key(&|t| t.uncompressed_data_bytes),
                per_key(&|t| Some(t.index_bytes)),
                per_key(&|t| Some(t.filter_bytes)),
            );
        }
    }
    print_series_table(args, &engines, &get);
}

/// The time series' table: amplification with the log, expiry, space.
fn print_series_table<'a>(
    args: &Args,
    engines: &[&String],
    get: &dyn Fn(&str, &str) -> Option<&'a Vec<Measure>>,
) {
    let ts: Vec<(&&String, &Vec<Measure>)> = engines
        .iter()
        .filter_map(|e| get(e, "timeseries").map(|ms| (e, ms)))
        .collect();
    if ts.is_empty() {
        return;
    }
    println!();
    println!(
        "Time series: TTL {} s, written for {} TTLs, {} series (expired held: \
         (sstable entries - live points) / live points, in TTLs; 0 = every expired point gone)",
        args.ts_ttl_seconds, args.ts_ttls, args.ts_series
    );
    println!("| engine | settle s | WA (engine counters) | WA (wchar) | log B/op | written MB | live MB | disk MB | log MB | sstable MB | other MB | sstable B/live point | expired held (TTLs) | peak RSS MB |");
    println!("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|");
    for (e, ms) in ts {
        let (wa_engine, wa_wchar, log) = write_figures(ms);
        let med = |f: &dyn Fn(&Measure) -> f64| median(ms.iter().map(f).collect());
        let live = |m: &Measure| m.live_ops.unwrap_or(0).max(1) as f64;
        let user = (KEY_BYTES + VALUE_BYTES) as f64;
        println!(
            "| {e} | {:.1} | {wa_engine} | {wa_wchar} | {log} | {:.1} | {:.1} | {:.1} | {:.1} | {:.1} | {:.2} | {:.0} | {:.2} | {:.0} |",
            med(&|m| m.settle_seconds),
            med(&|m| m.user_bytes() as f64) / 1e6,
            med(&|m| live(m) * user) / 1e6,
            med(&|m| m.disk_bytes as f64) / 1e6,
            med(&|m| m.disk_log_bytes as f64) / 1e6,
            med(&|m| m.disk_table_bytes as f64) / 1e6,
            med(&|m| m.disk_other_bytes as f64) / 1e6,
            med(&|m| m.disk_table_bytes as f64 / live(m)),
            med(&|m| (m.table_entries as f64 - live(m)) / live(m)),
            med(&|m| m.peak_rss_bytes as f64) / (1 << 20) as f64,
        );
    }
}

/// Write amplification from the engine's counters and from `wchar`, and the
/// log's bytes per write, each the median over rounds; `-` where the engine
/// keeps no counter.
fn write_figures(ms: &[Measure]) -> (String, String, String) {
    let user = |m: &Measure| m.user_bytes().max(1) as f64;
    let wa_engine = if ms.iter().all(|m| m.engine_written.total().is_some()) {
        format!(
            "{:.2}",
            median(
                ms.iter()
                    .map(|m| m.engine_written.total().unwrap_or(0) as f64 / user(m))
                    .collect()
            )
        )
    } else {
        "-".to_string()
    };
    let wa_wchar = format!(
        "{:.2}",
        median(ms.iter().map(|m| m.wchar_bytes as f64 / user(m)).collect())
    );
    let log = if ms.iter().all(|m| m.engine_written.log_bytes.is_some()) {
        format!(
            "{:.0}",
            median(
                ms.iter()
                    .map(|m| m.engine_written.log_bytes.unwrap_or(0) as f64 / m.ops.max(1) as f64)
                    .collect()
            )
        )
    } else {
        "-".to_string()
    };
    (wa_engine, wa_wchar, log)
}
