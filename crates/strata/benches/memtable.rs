//! Memtable micro-benchmark: insert throughput and memory overhead per cell of
//! [`Memtable`] against two baselines holding the same rows, measured in one run.
//!
//! What it measures (the acceptance figures; results in BENCHMARKS.md,
//! section "Memtable"):
//! 1. Inserts (rows) per second with 1 and 2 writer threads for three workloads:
//!    - `random-partitions`: N distinct random 8-byte partition keys, one row each
//!      (cassandra-stress's default shape: no clustering).
//!    - `few-partitions`: 16 partitions, one row per mutation, random 8-byte
//!      clustering keys.
//!    - `few-partitions-batch32`: as above, 32 rows per mutation (the batched
//!      update the copy-on-write B-tree is built for, seed 004 / CASSANDRA-6271).
//!
//!    Every row is one CQL INSERT: row marker plus 5 regular cells of 34-byte
//!    values, all at one timestamp. N = [`INSERTS`] rows per iteration in total,
//!    split evenly between the threads; each thread has its own keys (disjoint
//!    partition sets), so threads meet only in shared structure, not on a row.
//! 2. Overhead bytes per cell beyond the logical key, clustering and value bytes,
//!    measured with a counting global allocator (same method for all three), plus
//!    the memtable's own `memory_bytes()` accounting for comparison. Printed and
//!    written to `target/memtable-overhead.json`.
//!
//! Fairness rules (why the baselines look the way they do):
//! - All three structures consume the same prebuilt `PartitionUpdate`s and all
//!   three encode each row with `strata::encoding::encode_row` inside the timed
//!   region, so the comparison is about the container, not the row representation.
//! - Baseline keys are `(token-ordered partition key, clustering)`: 8 bytes of
//!   sign-flipped big-endian token then the key bytes, so memcmp order is the
//!   memtable's token order. Keys and values are exact-size `Box<[u8]>` (tighter
//!   than `Vec<u8>`, i.e. favourable to the baselines).
//! - On a duplicate key the baselines just replace the value (no reconciliation);
//!   with random 8-byte keys duplicates practically never occur, so neither side
//!   pays for merging.
//! - The `RwLock<BTreeMap>` baseline takes its write lock once per mutation (the
//!   cheapest way it can apply a mutation atomically). The skiplist inserts row by
//!   row and so does not give mutation atomicity, which the memtable does.
//! - Building, dropping and freeing a structure are outside the timed region.
//!
//! Thread-safety of the harness: the counting allocator is process-global; it
//! counts only while [`COUNTING`] is set, which happens only in the single-threaded
//! overhead pass, never while throughput is being timed (its only cost then is one
//! relaxed load of a read-only cache line per allocation).

use criterion::{criterion_group, BenchmarkId, Criterion, SamplingMode, Throughput};
use crossbeam_skiplist::SkipMap;
use parking_lot::{Mutex, RwLock};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::alloc::{GlobalAlloc, Layout, System};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, Ordering};
use std::time::{Duration, Instant};
use strata::data::{Cell, DecoratedKey, LivenessInfo, PartitionUpdate, Row};
use strata::encoding::{encode_row, EncodingBase};
use strata::memtable::Memtable;

/// Rows inserted per timed iteration, across all threads.
const INSERTS: usize = 100_000;
const PARTITION_KEY_BYTES: usize = 8;
const CLUSTERING_BYTES: usize = 8;
const REGULAR_COLUMNS: u32 = 5;
const VALUE_BYTES: usize = 34;
const FEW_PARTITIONS: usize = 16;
const BATCH_ROWS: usize = 32;
const NOW_MICROS: i64 = 1_700_000_000_000_000;
const SEED: u64 = 0x5EED_0004;

// ---------------------------------------------------------------------------
// Counting allocator
// ---------------------------------------------------------------------------

/// Counts live bytes while [`COUNTING`] is set: the bytes requested from the
/// allocator, and an estimate of what glibc malloc really reserves for them
/// (chunk = request + 8-byte header, rounded up to 16, at least 32 bytes).
struct CountingAlloc;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE_REQUESTED_BYTES: AtomicI64 = AtomicI64::new(0);
static LIVE_CHUNK_BYTES: AtomicI64 = AtomicI64::new(0);

fn glibc_chunk_bytes(size: usize) -> i64 {
    ((size + 8 + 15) & !15).max(32) as i64
}

fn note_alloc(size: usize, sign: i64) {
    if COUNTING.load(Ordering::Relaxed) {
        LIVE_REQUESTED_BYTES.fetch_add(sign * size as i64, Ordering::Relaxed);
        LIVE_CHUNK_BYTES.fetch_add(sign * glibc_chunk_bytes(size), Ordering::Relaxed);
    }
}

// SAFETY: every call is forwarded unchanged to `System`; the wrapper only counts.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            note_alloc(layout.size(), 1);
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            note_alloc(layout.size(), 1);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        note_alloc(layout.size(), -1);
        System.dealloc(ptr, layout)
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            note_alloc(layout.size(), -1);
            note_alloc(new_size, 1);
        }
        p
    }
}

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

// ---------------------------------------------------------------------------
// Workloads
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Workload {
    RandomPartitions,
    FewPartitions,
    FewPartitionsBatch32,
}

impl Workload {
    const ALL: [Workload; 3] = [
        Workload::RandomPartitions,
        Workload::FewPartitions,
        Workload::FewPartitionsBatch32,
    ];

    fn name(self) -> &'static str {
        match self {
            Workload::RandomPartitions => "random-partitions",
            Workload::FewPartitions => "few-partitions",
            Workload::FewPartitionsBatch32 => "few-partitions-batch32",
        }
    }

    fn rows_per_mutation(self) -> usize {
        match self {
            Workload::FewPartitionsBatch32 => BATCH_ROWS,
            _ => 1,
        }
    }
}

fn random_bytes(rng: &mut ChaCha8Rng, n: usize) -> Vec<u8> {
    let mut b = vec![0u8; n];
    rng.fill(&mut b[..]);
    b
}

/// One CQL INSERT: row marker and every regular column at one timestamp.
fn insert_row(rng: &mut ChaCha8Rng, clustering: Vec<u8>, timestamp_micros: i64) -> Row {
    let mut row = Row::new(clustering);
    row.liveness = LivenessInfo::new(timestamp_micros);
    for column in 0..REGULAR_COLUMNS {
        row.add_cell(Cell::live(
            column,
            timestamp_micros,
            random_bytes(rng, VALUE_BYTES),
        ));
    }
    row
}

/// Calls `sink` with thread `thread`'s share (of `threads`) of the workload's
/// mutations, one at a time, so the overhead pass never holds the whole input.
fn for_each_update(
    workload: Workload,
    thread: usize,
    threads: usize,
    mut sink: impl FnMut(PartitionUpdate),
) {
    let mut rng = ChaCha8Rng::seed_from_u64(SEED ^ ((workload as u64) << 32) ^ thread as u64);
    let rows = INSERTS / threads;
    // Disjoint partition sets per thread: thread t owns partitions
    // [t * per_thread, (t + 1) * per_thread) of the few.
    let per_thread = FEW_PARTITIONS / threads;
    let few: Vec<DecoratedKey> = (thread * per_thread..(thread + 1) * per_thread)
        .map(|p| DecoratedKey::new(&(p as u64).to_be_bytes()))
        .collect();
    let mut written = 0;
    while written < rows {
        let ts = NOW_MICROS + written as i64;
        let update = match workload {
            Workload::RandomPartitions => {
                let mut u = PartitionUpdate::new(DecoratedKey::new(&random_bytes(
                    &mut rng,
                    PARTITION_KEY_BYTES,
                )));
                u.add_row(insert_row(&mut rng, Vec::new(), ts));
                u
            }
            Workload::FewPartitions | Workload::FewPartitionsBatch32 => {
                let key = few[rng.gen_range(0..few.len())].clone();
                // A fresh key per mutation, as a real write path would decode it.
                let mut u = PartitionUpdate::new(DecoratedKey::new(&key.key));
                for _ in 0..workload.rows_per_mutation().min(rows - written) {
                    let ck = random_bytes(&mut rng, CLUSTERING_BYTES);
                    u.add_row(insert_row(&mut rng, ck, ts));
                }
                u
            }
        };
        written += update.rows.len();
        sink(update);
    }
}

fn prebuilt_inputs(workload: Workload, threads: usize) -> Vec<Vec<PartitionUpdate>> {
    (0..threads)
        .map(|t| {
            let mut v = Vec::new();
            for_each_update(workload, t, threads, |u| v.push(u));
            v
        })
        .collect()
}

// ---------------------------------------------------------------------------
// Structures under test
// ---------------------------------------------------------------------------

trait Structure: Sync {
    const NAME: &'static str;
    fn new() -> Self;
    fn apply(&self, update: &PartitionUpdate);
    /// The structure's own memory accounting, if it keeps one.
    fn accounted_bytes(&self) -> Option<u64> {
        None
    }
}

impl Structure for Memtable {
    const NAME: &'static str = "strata-memtable";

    fn new() -> Self {
        Memtable::new(1, NOW_MICROS)
    }

    fn apply(&self, update: &PartitionUpdate) {
        Memtable::apply(self, update);
    }

    fn accounted_bytes(&self) -> Option<u64> {
        Some(self.memory_bytes())
    }
}

type FlatKey = (Box<[u8]>, Box<[u8]>);

/// Sign-flipped big-endian token, then the key: memcmp order is token order.
fn token_ordered_key(key: &DecoratedKey) -> Box<[u8]> {
    let mut out = Vec::with_capacity(8 + key.key.len());
    out.extend_from_slice(&((key.token as u64) ^ (1 << 63)).to_be_bytes());
    out.extend_from_slice(&key.key);
    out.into_boxed_slice()
}

fn encoded(row: &Row, base: &EncodingBase) -> Box<[u8]> {
    // Same initial capacity guess as the memtable's `MemRow::encode`.
    let mut buf = Vec::with_capacity(row.clustering.len() + 16 + row.cells.len() * 8);
    encode_row(row, base, &mut buf);
    buf.into_boxed_slice()
}

struct SkipListBaseline {
    base: EncodingBase,
    map: SkipMap<FlatKey, Box<[u8]>>,
}

impl Structure for SkipListBaseline {
    const NAME: &'static str = "crossbeam-skiplist";

    fn new() -> Self {
        SkipListBaseline {
            base: EncodingBase::around(NOW_MICROS),
            map: SkipMap::new(),
        }
    }

    fn apply(&self, update: &PartitionUpdate) {
        let pk = token_ordered_key(&update.key);
        for row in &update.rows {
            let ck = row.clustering.clone().into_boxed_slice();
            self.map.insert((pk.clone(), ck), encoded(row, &self.base));
        }
    }
}

struct BTreeMapBaseline {
    base: EncodingBase,
    map: RwLock<BTreeMap<FlatKey, Box<[u8]>>>,
}

impl Structure for BTreeMapBaseline {
    const NAME: &'static str = "btreemap-rwlock";

    fn new() -> Self {
        BTreeMapBaseline {
            base: EncodingBase::around(NOW_MICROS),
            map: RwLock::new(BTreeMap::new()),
        }
    }

    fn apply(&self, update: &PartitionUpdate) {
        // Encode outside the lock, as the memtable does.
        let pk = token_ordered_key(&update.key);
        let rows: Vec<(FlatKey, Box<[u8]>)> = update
            .rows
            .iter()
            .map(|row| {
                (
                    (pk.clone(), row.clustering.clone().into_boxed_slice()),
                    encoded(row, &self.base),
                )
            })
            .collect();
        let mut map = self.map.write();
        for (k, v) in rows {
            map.insert(k, v);
        }
    }
}

// ---------------------------------------------------------------------------
// Throughput
// ---------------------------------------------------------------------------

/// One timed call's insert rate (or, in the summary, the median of a case's).
#[derive(Clone, Copy)]
struct Rate {
    structure: &'static str,
    workload: &'static str,
    threads: usize,
    rows_per_second: f64,
}

/// Every timed call's rate, for the end-of-run summary (criterion keeps its
/// estimates to itself).
static RATES: Mutex<Vec<Rate>> = Mutex::new(Vec::new());

/// Applies `inputs` (one slice per thread) to a fresh structure; returns the time
/// spent inserting only.
fn timed_fill<S: Structure>(inputs: &[Vec<PartitionUpdate>]) -> Duration {
    let target = S::new();
    let start = Instant::now();
    if let [only] = inputs {
        for u in only {
            target.apply(u);
        }
    } else {
        let target = &target;
        std::thread::scope(|s| {
            for part in inputs {
                s.spawn(move || {
                    for u in part {
                        target.apply(u);
                    }
                });
            }
        });
    }
    let elapsed = start.elapsed();
    drop(target);
    elapsed
}

fn bench_one<S: Structure>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    workload: Workload,
    threads: usize,
    inputs: &[Vec<PartitionUpdate>],
) {
    group.bench_with_input(BenchmarkId::new(S::NAME, threads), &threads, |b, _| {
        b.iter_custom(|iters| {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                total += timed_fill::<S>(inputs);
            }
            let rate = (iters as usize * INSERTS) as f64 / total.as_secs_f64();
            RATES.lock().push(Rate {
                structure: S::NAME,
                workload: workload.name(),
                threads,
                rows_per_second: rate,
            });
            total
        })
    });
}

fn bench_inserts(c: &mut Criterion) {
    for workload in Workload::ALL {
        for threads in [1, 2] {
            let inputs = prebuilt_inputs(workload, threads);
            let mut group = c.benchmark_group(format!("memtable-insert/{}", workload.name()));
            group.throughput(Throughput::Elements(INSERTS as u64));
            group.sampling_mode(SamplingMode::Flat);
            bench_one::<Memtable>(&mut group, workload, threads, &inputs);
            bench_one::<SkipListBaseline>(&mut group, workload, threads, &inputs);
            bench_one::<BTreeMapBaseline>(&mut group, workload, threads, &inputs);
            group.finish();
        }
    }
}

// ---------------------------------------------------------------------------
// Memory overhead
// ---------------------------------------------------------------------------

/// Bytes a structure holds after one single-threaded fill of a workload.
struct Footprint {
    structure: &'static str,
    workload: &'static str,
    cells: u64,
    logical_bytes: u64,
    requested_bytes: i64,
    chunk_bytes: i64,
    accounted_bytes: Option<u64>,
}

impl Footprint {
    fn per_cell(&self, bytes: i64) -> f64 {
        (bytes - self.logical_bytes as i64) as f64 / self.cells as f64
    }
}

fn measure<S: Structure>(workload: Workload) -> Footprint {
    let mut cells = 0u64;
    let mut logical_bytes = 0u64;
    let mut seen_partitions = std::collections::HashSet::new();
    // Inputs are generated and dropped inside the counting window, so what stays
    // live is exactly what the structure kept (including a partition key it
    // shares with its input, which a clone-by-Arc would otherwise hide).
    LIVE_REQUESTED_BYTES.store(0, Ordering::SeqCst);
    LIVE_CHUNK_BYTES.store(0, Ordering::SeqCst);
    COUNTING.store(true, Ordering::SeqCst);
    let target = S::new();
    for_each_update(workload, 0, 1, |u| {
        if seen_partitions.insert(u.key.key.to_vec()) {
            logical_bytes += u.key.key.len() as u64;
        }
        for row in &u.rows {
            cells += row.cells.len() as u64;
            logical_bytes += row.clustering.len() as u64;
            logical_bytes += row.cells.iter().map(|c| c.value.len() as u64).sum::<u64>();
        }
        target.apply(&u);
    });
    // The bookkeeping set above is not part of the structure: take its bytes
    // out by measuring around its drop.
    let before_drop = LIVE_REQUESTED_BYTES.load(Ordering::SeqCst);
    let before_drop_chunks = LIVE_CHUNK_BYTES.load(Ordering::SeqCst);
    drop(seen_partitions);
    let set_bytes = before_drop - LIVE_REQUESTED_BYTES.load(Ordering::SeqCst);
    let set_chunks = before_drop_chunks - LIVE_CHUNK_BYTES.load(Ordering::SeqCst);
    let requested_bytes = before_drop - set_bytes;
    let chunk_bytes = before_drop_chunks - set_chunks;
    COUNTING.store(false, Ordering::SeqCst);
    let accounted_bytes = target.accounted_bytes();
    drop(target);
    Footprint {
        structure: S::NAME,
        workload: workload.name(),
        cells,
        logical_bytes,
        requested_bytes,
        chunk_bytes,
        accounted_bytes,
    }
}

fn measure_overhead() -> Vec<Footprint> {
    let mut out = Vec::new();
    for workload in Workload::ALL {
        out.push(measure::<Memtable>(workload));
        out.push(measure::<SkipListBaseline>(workload));
        out.push(measure::<BTreeMapBaseline>(workload));
    }
    // Cross-check the logical byte count against the memtable's own `data_bytes`.
    for workload in Workload::ALL {
        let m = Memtable::new(1, NOW_MICROS);
        for_each_update(workload, 0, 1, |u| {
            m.apply(&u);
        });
        let ours = out
            .iter()
            .find(|f| f.workload == workload.name())
            .map_or(0, |f| f.logical_bytes);
        assert_eq!(
            ours,
            m.data_bytes(),
            "logical bytes disagree with Memtable::data_bytes for {}",
            workload.name()
        );
    }
    out
}

fn target_dir() -> PathBuf {
    std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../target"))
}

fn write_json(footprints: &[Footprint], medians: &[Rate]) {
    let overhead: Vec<serde_json::Value> = footprints
        .iter()
        .map(|f| {
            serde_json::json!({
                "structure": f.structure,
                "workload": f.workload,
                "rows": INSERTS,
                "cells": f.cells,
                "logical_bytes": f.logical_bytes,
                "allocator_requested_bytes": f.requested_bytes,
                "allocator_glibc_chunk_bytes_estimate": f.chunk_bytes,
                "accounted_bytes": f.accounted_bytes,
                "overhead_bytes_per_cell_requested": f.per_cell(f.requested_bytes),
                "overhead_bytes_per_cell_glibc_chunks": f.per_cell(f.chunk_bytes),
                "overhead_bytes_per_cell_accounted": f.accounted_bytes.map(|a| f.per_cell(a as i64)),
            })
        })
        .collect();
    let throughput: Vec<serde_json::Value> = medians
        .iter()
        .map(|r| {
            serde_json::json!({
                "structure": r.structure,
                "workload": r.workload,
                "threads": r.threads,
                "inserts_per_second_median": r.rows_per_second,
                "ratio_vs_skiplist": vs_skiplist(medians, r),
            })
        })
        .collect();
    let doc = serde_json::json!({ "overhead": overhead, "throughput": throughput });
    let path = target_dir().join("memtable-overhead.json");
    let text = serde_json::to_string_pretty(&doc).unwrap_or_default();
    match std::fs::write(&path, text) {
        Ok(()) => println!("wrote {}", path.display()),
        Err(e) => println!("could not write {}: {e}", path.display()),
    }
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    match v.len() {
        0 => f64::NAN,
        n if n % 2 == 1 => v[n / 2],
        n => (v[n / 2 - 1] + v[n / 2]) / 2.0,
    }
}

/// `r`'s rate over the skiplist's in the same workload and thread count.
fn vs_skiplist(medians: &[Rate], r: &Rate) -> Option<f64> {
    medians
        .iter()
        .find(|m| {
            m.structure == SkipListBaseline::NAME
                && m.workload == r.workload
                && m.threads == r.threads
        })
        .map(|m| r.rows_per_second / m.rows_per_second)
}

fn print_summary(footprints: &[Footprint]) {
    let all = RATES.lock().clone();
    let mut medians = Vec::new();
    for workload in Workload::ALL {
        for threads in [1, 2] {
            for structure in [
                Memtable::NAME,
                SkipListBaseline::NAME,
                BTreeMapBaseline::NAME,
            ] {
                let v: Vec<f64> = all
                    .iter()
                    .filter(|r| {
                        r.structure == structure
                            && r.workload == workload.name()
                            && r.threads == threads
                    })
                    .map(|r| r.rows_per_second)
                    .collect();
                if !v.is_empty() {
                    medians.push(Rate {
                        structure,
                        workload: workload.name(),
                        threads,
                        rows_per_second: median(v),
                    });
                }
            }
        }
    }
    println!();
    println!("== Insert throughput ({INSERTS} rows x {REGULAR_COLUMNS} cells per iteration; median of timed calls) ==");
    println!(
        "{:<24} {:<20} {:>7} {:>14} {:>12}",
        "workload", "structure", "threads", "inserts/s", "vs skiplist"
    );
    for r in &medians {
        let ratio = vs_skiplist(&medians, r).map_or(String::from("-"), |x| format!("{x:.2}x"));
        println!(
            "{:<24} {:<20} {:>7} {:>14.0} {:>12}",
            r.workload, r.structure, r.threads, r.rows_per_second, ratio
        );
    }
    println!();
    println!(
        "== Overhead per cell beyond key + clustering + value bytes ({INSERTS} rows, 1 thread) =="
    );
    println!(
        "{:<24} {:<20} {:>12} {:>12} {:>12} {:>15}",
        "workload", "structure", "logical B", "alloc B/cell", "glibc B/cell", "own acct B/cell"
    );
    for f in footprints {
        let own = f.accounted_bytes.map_or(String::from("-"), |a| {
            format!("{:.1}", f.per_cell(a as i64))
        });
        println!(
            "{:<24} {:<20} {:>12} {:>12.1} {:>12.1} {:>15}",
            f.workload,
            f.structure,
            f.logical_bytes,
            f.per_cell(f.requested_bytes),
            f.per_cell(f.chunk_bytes),
            own
        );
    }
    write_json(footprints, &medians);
}

fn config() -> Criterion {
    // Small samples: the whole bench (18 cases) must finish in under two minutes
    // on a 2-core shared machine; within-run ratios are what matter.
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_inserts
}

fn main() {
    benches();
    Criterion::default().configure_from_args().final_summary();
    let footprints = measure_overhead();
    print_summary(&footprints);
}
