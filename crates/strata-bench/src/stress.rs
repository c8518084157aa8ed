//! The cassandra-stress-like workload behind `strata stress write|read|delete`.
//!
//! Owns: the stress table's shape, the values written, which partition each
//! operation touches, the worker threads and their latency histograms. The
//! command line (strata-cli `stress.rs`) opens the database, calls
//! [`ensure_table`] and [`run_workload`], and prints. Any thread may call; a run
//! starts `threads` workers and one progress thread, all joined before return.
//!
//! Workloads:
//! - `Standard`: table `stress.standard1 (key blob, ck int, c0..c{n-1} blob,
//!   PRIMARY KEY ((key), ck))`. One operation writes (or reads) one partition:
//!   its `rows_per_partition` rows in one mutation, like cassandra-stress's
//!   batched partition inserts.
//! - `Blob` (seed 002, issue 13): table `stress.blocks`, files as partitions of
//!   fixed-size blocks ([`crate::blobfile`]). One operation writes one file
//!   (one mutation per block), reads one back checking every block's checksum
//!   and content, or deletes one whole. A file that reads back with a block
//!   missing or corrupt is a failed operation, its blocks also counted in
//!   `misses` / `wrong_values`.
//!
//! `delete` removes the partition an operation touches with one partition
//! tombstone, in either workload (a whole file in `Blob`).
//!
//! Invariants:
//! 1. Determinism (so `read` with the same configuration visits exactly the rows
//!    `write` produced): operation `i` runs on thread `i % threads`; the
//!    partition it touches is `i % partitions` for `Seq`, or the next draw of
//!    that thread's ChaCha8 stream seeded from `seed` and the thread number for
//!    `Uniform`. Values are a function of (seed, partition, row, column), so
//!    reads verify content, not only presence. Timestamps come from the
//!    database clock.
//! 2. A failed operation is counted in `failed_ops`, never in `total_ops`.
//!    A mixed run draws write-or-read from a stream of its own, so its
//!    partition draws are those of a write run with the same arguments.
//! 3. A configuration whose mutation (a partition in `Standard`, a block in
//!    `Blob`) cannot fit the commit log's mutation limit is refused before the
//!    table is created.
//! 4. Paced runs (`rate`): operation `i` is due `i / rate` seconds after the
//!    start and never starts earlier; with `fixed` its latency counts from
//!    then (coordinated omission corrected, as cassandra-stress's `fixed`),
//!    with `throttle` from its actual start.
//! 5. Operations are handed out one at a time from a shared counter, to
//!    whichever thread is free (as cassandra-stress's threads share its rate
//!    limiter): a thread held up by one slow operation delays that operation
//!    only, not every `threads`-th one behind it. What operation `i` does (its
//!    partition, write or read) depends on the seed and `i` alone, so a run is
//!    the same set of operations whatever the thread count.

use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::data::{ClusteringRange, PartitionUpdate};
use strata::db::Database;
use strata::read::merge_partition;
use strata::schema::{TableSchema, WriteOptions};
use strata::table::Table;
use strata::types::Value;
use strata::{Error, Result};

use crate::blobfile::{self, FileShape};
use crate::values::splitmix;
pub use crate::values::value_bytes;

pub const KEYSPACE: &str = "stress";
pub const TABLE: &str = "standard1";
/// The blob workload's table (beside `standard1`, so both can share a directory).
pub const BLOB_TABLE: &str = "blocks";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Write,
    Read,
    /// One partition tombstone per operation (a whole file in `Blob`).
    Delete,
    /// Writes and reads in the ratio [`StressConfig::mix`] (cassandra-stress
    /// `mixed ratio(write=1,read=3)`): a read of a partition not yet written
    /// is a miss, expected and counted, not an error.
    Mixed,
}

/// A target rate (cassandra-stress `-rate fixed=N/s` or `throttle=N/s`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Rate {
    /// Operations per second over all threads.
    pub ops_per_second: f64,
    /// `fixed`: latency counts from each operation's intended start, so a
    /// stall delays every operation queued behind it and shows in the
    /// percentiles (coordinated omission corrected). `throttle`: the same
    /// pacing, latency from the actual start (service time only).
    pub fixed: bool,
}

/// Which table and operations a run uses (module docs, "Workloads").
#[derive(Clone, Debug)]
pub enum Workload {
    Standard,
    /// Files of `FileShape`, one partition each.
    Blob(FileShape),
    /// A user profile's table and statements (`stress_profile`): a write is
    /// its insert, a read one of its queries, chosen by `query_weights`
    /// (one per query, in the profile's order).
    User {
        workload: Arc<crate::stress_profile::UserWorkload>,
        query_weights: Vec<u32>,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Population {
    /// Operation i touches partition i (mod `partitions`).
    Seq,
    /// Partitions drawn uniformly from a seeded stream per thread.
    Uniform,
    /// Normal around the middle partition, 99.7% within the range (as
    /// cassandra-stress `gaussian(1..N)`, its standard deviation a sixth of
    /// the range); draws outside it are drawn again.
    Gaussian,
    /// Zipf with exponent 1 over the partitions: partition 0 the most
    /// popular (hot keys).
    Zipf,
}

/// One run's shape; the command line's `strata stress` options, one to one
/// (their bounds and defaults are checked there).
#[derive(Clone, Debug)]
pub struct StressConfig {
    pub mode: Mode,
    pub workload: Workload,
    /// Operations; each writes or reads one partition.
    pub ops: u64,
    /// Client threads (at least 1).
    pub threads: usize,
    /// Distinct partitions (default: `ops`).
    pub partitions: Option<u64>,
    pub population: Population,
    /// Rows written (and read) per partition in one mutation.
    pub rows_per_partition: u32,
    /// Regular columns per row.
    pub columns: u32,
    /// Bytes per column value.
    pub value_size: usize,
    /// Table options in CQL form, applied at creation, or by ALTER to an
    /// existing table only with `alter_table`.
    pub table_options: Option<String>,
    /// Whether `table_options` may change an existing table.
    pub alter_table: bool,
    pub seed: u64,
    /// `Mixed`: (writes, reads) out of `writes + reads` operations.
    pub mix: (u32, u32),
    /// Pace operations to a rate; `None`: as fast as they go.
    pub rate: Option<Rate>,
    /// Run for this long instead of `ops` operations (the count then bounds
    /// nothing but the partition numbers of `Seq`).
    pub duration: Option<Duration>,
}

/// One second's progress line, handed to the caller's callback.
#[derive(Clone, Copy, Debug)]
pub struct Progress {
    pub total_ops: u64,
    pub ops_per_second: f64,
    pub rows_per_second: f64,
    /// The interval's latency percentiles, ms.
    pub latency_ms_mean: f64,
    pub latency_ms_p50: f64,
    pub latency_ms_p95: f64,
    pub latency_ms_p99: f64,
    pub latency_ms_p999: f64,
    pub latency_ms_max: f64,
    pub elapsed_seconds: f64,
    pub failed_ops: u64,
}

#[derive(Serialize, Debug)]
pub struct LatencyMs {
    pub mean: f64,
    pub p50: f64,
    pub p95: f64,
    pub p99: f64,
    pub p999: f64,
    pub max: f64,
}

#[derive(Serialize, Debug)]
pub struct Summary {
    pub mode: String,
    /// Operations that succeeded; failed ones are never counted as done.
    pub total_ops: u64,
    pub op_rate: f64,
    pub row_rate: f64,
    /// Rows written, read or deleted by the operations that succeeded.
    pub total_rows: u64,
    /// MiB of values per second: written by `write`, read and verified by
    /// `read`; 0 for `delete` (a tombstone moves no value bytes).
    pub mib_rate: f64,
    /// `failed_ops + wrong_values`: anything that makes the run exit non-zero.
    pub errors: u64,
    /// Operations that returned an error (a full disk, a refused write, ...).
    pub failed_ops: u64,
    /// Operations that wrote and that read (both kinds in a mixed run).
    pub write_ops: u64,
    pub read_ops: u64,
    /// Reads only: rows found with a value other than the one written.
    pub wrong_values: u64,
    pub misses: u64,
    pub duration_seconds: f64,
    pub latency_ms: LatencyMs,
    /// The first operation error, if any (not in the JSON summary).
    #[serde(skip)]
    pub first_error: Option<String>,
}

pub fn partition_key(p: u64) -> Value {
    Value::Blob(p.to_be_bytes().to_vec())
}

/// Opens the stress table, creating it (or applying `table_options` to it) as
/// the configuration says; refuses a configuration that cannot run (invariant 3).
pub fn ensure_table(db: &Database, args: &StressConfig) -> Result<Arc<Table>> {
    match &args.workload {
        Workload::Blob(shape) => return ensure_blob_table(db, args, shape),
        // Set up (created if missing) when the profile was bound.
        Workload::User { workload, .. } => return Ok(workload.table().clone()),
        Workload::Standard => {}
    }
    if args.columns == 0 {
        return Err(Error::InvalidInput("--columns must be at least 1".into()));
    }
    if args.rows_per_partition == 0 {
        return Err(Error::InvalidInput(
            "--rows-per-partition must be at least 1".into(),
        ));
    }
    // Each cell costs its value plus a few bytes of framing; checked before the
    // run so a too-wide partition is one clear error, not one per operation.
    let per_row = u64::from(args.columns) * (args.value_size as u64 + 8) + 16;
    let estimate = u64::from(args.rows_per_partition).saturating_mul(per_row);
    check_mutation_limit(db, estimate, || {
        format!(
            "one partition of --rows-per-partition {} x --columns {} x --value-size {}",
            args.rows_per_partition, args.columns, args.value_size
        )
    })?;
    open_or_create(
        db,
        TABLE,
        args,
        |schema| {
            let regular = schema.regular_columns().count() as u32;
            (regular != args.columns).then(|| {
                format!(
                    "{KEYSPACE}.{TABLE} exists with {regular} columns; --columns {} does not match",
                    args.columns
                )
            })
        },
        || {
            let cols: Vec<String> = (0..args.columns).map(|c| format!("c{c} blob")).collect();
            format!(
                "CREATE TABLE {KEYSPACE}.{TABLE} (key blob, ck int, {}, PRIMARY KEY ((key), ck))",
                cols.join(", ")
            )
        },
    )
}

/// Invariant 3 for the blob workload: one block is one mutation.
fn ensure_blob_table(db: &Database, args: &StressConfig, shape: &FileShape) -> Result<Arc<Table>> {
    shape.validate()?;
    // The block's bytes, its crc and key, and the row's framing.
    check_mutation_limit(db, shape.block_size_bytes + 64, || {
        format!(
            "one block of --block-size-kib {}",
            shape.block_size_bytes >> 10
        )
    })?;
    open_or_create(
        db,
        BLOB_TABLE,
        args,
        |schema| {
            (!blobfile::is_block_table(schema)).then(|| {
                format!(
                    "{KEYSPACE}.{BLOB_TABLE} exists without the block table's columns \
                     (file, block, data, crc)"
                )
            })
        },
        || blobfile::create_table_cql(&format!("{KEYSPACE}.{BLOB_TABLE}"), None),
    )
}

/// Refuses a mutation of about `estimate` bytes above the commit log's limit.
fn check_mutation_limit(db: &Database, estimate: u64, what: impl Fn() -> String) -> Result<()> {
    if let Some(log) = db.commitlog() {
        let limit = log.options().max_mutation_bytes();
        if estimate > limit {
            return Err(Error::InvalidInput(format!(
                "{} is about {estimate} bytes, above the commit log's mutation limit of {limit} \
                 bytes (max_mutation_size)",
                what()
            )));
        }
    }
    Ok(())
}

/// Opens `stress.<name>` (checking its shape with `mismatch`, then applying
/// `table_options` by ALTER when `alter_table` allows it, refusing them
/// otherwise) or creates it from `create` plus the options.
fn open_or_create(
    db: &Database,
    name: &str,
    args: &StressConfig,
    mismatch: impl Fn(&TableSchema) -> Option<String>,
    create: impl Fn() -> String,
) -> Result<Arc<Table>> {
    match db.table(KEYSPACE, name) {
        Ok(t) => {
            if let Some(why) = mismatch(&t.schema()) {
                return Err(Error::InvalidInput(why));
            }
            if let Some(opts) = &args.table_options {
                if !args.alter_table {
                    return Err(Error::InvalidInput(format!(
                        "table {KEYSPACE}.{name} exists: --table-options would change it \
                         (ALTER TABLE); add --alter to change it, or leave the options out"
                    )));
                }
                db.alter_table_options(KEYSPACE, name, opts)?;
            }
            Ok(t)
        }
        Err(Error::NotFound(_)) => {
            let mut cql = create();
            if let Some(opts) = &args.table_options {
                cql.push_str(" WITH ");
                cql.push_str(opts);
            }
            db.create_table_cql(&cql)
        }
        Err(e) => Err(e),
    }
}

/// The regular column names `c0 .. c<columns-1>`, formatted once per thread
/// and column count, not once per operation: with the growth of the row's
/// value list below, the load generator's own allocations were 12% of a
/// writer thread's time in `stress write` (BENCHMARKS.md, "Write path (issue
/// 15)"), measured as if the engine spent it.
fn column_names(columns: u32) -> std::rc::Rc<[String]> {
    thread_local! {
        static NAMES: std::cell::RefCell<Option<std::rc::Rc<[String]>>> =
            const { std::cell::RefCell::new(None) };
    }
    NAMES.with(|cached| {
        let mut cached = cached.borrow_mut();
        match &*cached {
            Some(names) if names.len() == columns as usize => names.clone(),
            _ => {
                let names: std::rc::Rc<[String]> = (0..columns).map(|c| format!("c{c}")).collect();
                *cached = Some(names.clone());
                names
            }
        }
    })
}

/// Builds the one mutation that writes partition `p`'s rows. Linear in the row
/// count: rows are generated in clustering order (`ck` ascending), so each one is
/// appended, not merged into a copy of everything before it (which made 20,000
/// rows take 15 s).
pub fn build_update(
    schema: &TableSchema,
    args: &StressConfig,
    p: u64,
    now_micros: i64,
) -> Result<PartitionUpdate> {
    let names = column_names(args.columns);
    let mut update: Option<PartitionUpdate> = None;
    for r in 0..args.rows_per_partition {
        let mut row: Vec<(&str, Value)> = Vec::with_capacity(2 + names.len());
        row.push(("key", partition_key(p)));
        row.push(("ck", Value::Int(r as i32)));
        for (c, name) in names.iter().enumerate() {
            row.push((
                name.as_str(),
                Value::Blob(value_bytes(args.seed, p, r, c as u32, args.value_size)),
            ));
        }
        let mut u = schema.insert(&row, &WriteOptions::default(), now_micros)?;
        match update.as_mut() {
            None => update = Some(u),
            Some(acc) => {
                for row in std::mem::take(&mut u.rows) {
                    if acc
                        .rows
                        .last()
                        .is_none_or(|l| l.clustering < row.clustering)
                    {
                        acc.rows.push(row);
                    } else {
                        acc.add_row(row);
                    }
                }
                // No rows left in `u`: only its deletion and static row merge.
                merge_partition(acc, u);
            }
        }
    }
    update.ok_or_else(|| Error::InvalidInput("no rows".into()))
}

/// Reads partition `p` and counts (missing rows, wrong values).
pub fn verify_partition(
    table: &Table,
    schema: &TableSchema,
    args: &StressConfig,
    p: u64,
) -> Result<(u64, u64)> {
    let key = schema.decorated_key(&[partition_key(p)])?;
    let result = table.read(&key, &ClusteringRange::ALL, false, usize::MAX)?;
    let mut misses = 0u64;
    let mut wrong = 0u64;
    let mut rows = result.rows.iter().peekable();
    for r in 0..args.rows_per_partition {
        let ck = schema.encode_clustering(&[Value::Int(r as i32)])?;
        while rows.peek().is_some_and(|row| row.clustering < ck) {
            rows.next();
        }
        match rows.peek() {
            Some(row) if row.clustering == ck => {
                for c in 0..args.columns {
                    let expected = value_bytes(args.seed, p, r, c, args.value_size);
                    let ok = row
                        .cells
                        .iter()
                        .any(|cell| cell.column == c && cell.value == expected);
                    if !ok {
                        wrong += 1;
                        break;
                    }
                }
            }
            _ => misses += 1,
        }
    }
    Ok((misses, wrong))
}

fn new_histogram() -> Histogram<u64> {
    // 1 µs .. 60 s at 3 significant digits; bounds are constants, so this cannot fail.
    Histogram::new_with_bounds(1, 60_000_000, 3)
        .unwrap_or_else(|_| Histogram::new(3).expect("3 sigfig histogram"))
}

/// One operation on partition (or file) `p`: `Ok((missing rows, wrong rows,
/// outcome))`, the outer error for an operation the engine refused, the inner
/// one for a blob file that read back damaged (invariant 2: failed, with its
/// blocks counted).
/// What one operation did: rows it found missing, values it found wrong,
/// rows it wrote or read when that is not the run's fixed figure, and its
/// result.
type OpOutcome = (u64, u64, Option<u64>, Result<()>);

/// Operation `i` of the run, on partition `p` of `partitions`.
#[allow(clippy::too_many_arguments)]
fn operation(
    table: &Arc<Table>,
    schema: &TableSchema,
    args: &StressConfig,
    mode: Mode,
    p: u64,
    i: u64,
    partitions: u64,
    clock: &dyn strata::clock::Clock,
) -> Result<OpOutcome> {
    let done = |()| (0, 0, None, Ok(()));
    match (mode, &args.workload) {
        (Mode::Write, Workload::User { workload, .. }) => workload
            .insert(p, partitions, i)
            .map(|o| (0, 0, Some(o.rows), Ok(()))),
        (
            Mode::Read,
            Workload::User {
                workload,
                query_weights,
            },
        ) => {
            let q = pick_weighted(
                query_weights,
                splitmix(args.seed ^ splitmix(i) ^ MIX_STREAM),
            );
            workload
                .query(q, p, i)
                .map(|o| (u64::from(o.empty), 0, Some(o.rows), Ok(())))
        }
        (Mode::Delete, Workload::User { .. }) => Err(Error::InvalidInput(
            "a user profile runs its insert and its queries; delete is not one of them".into(),
        )),
        // Chosen per operation before this call.
        (Mode::Mixed, _) => Err(Error::InvalidInput(
            "a mixed run chooses write or read per operation".into(),
        )),
        (Mode::Write, Workload::Standard) => build_update(schema, args, p, clock.now_micros())
            .and_then(|u| table.apply(&u))
            .map(done),
        (Mode::Read, Workload::Standard) => verify_partition(table, schema, args, p)
            .map(|(miss, wrong)| (miss, wrong, None, Ok(()))),
        (Mode::Delete, Workload::Standard) => schema
            .delete_partition(
                &[("key", partition_key(p))],
                &WriteOptions::default(),
                clock.now_micros(),
            )
            .and_then(|u| table.apply(&u))
            .map(done),
        (Mode::Write, Workload::Blob(shape)) => {
            blobfile::write_file(table, shape, args.seed, p).map(done)
        }
        (Mode::Read, Workload::Blob(shape)) => blobfile::verify_file(table, shape, args.seed, p)
            .map(|check| {
                let (miss, bad) = (u64::from(check.missing), u64::from(check.corrupt));
                (miss, bad, None, check.into_result(p))
            }),
        (Mode::Delete, Workload::Blob(_)) => blobfile::delete_file(table, p).map(done),
    }
}

/// The index of `weights` a draw `h` lands on, each index as likely as its
/// weight (the weights are not all zero).
fn pick_weighted(weights: &[u32], h: u64) -> usize {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let mut x = h % total.max(1);
    for (i, &w) in weights.iter().enumerate() {
        if x < u64::from(w) {
            return i;
        }
        x -= u64::from(w);
    }
    0
}

/// Seeds the mixed run's write-or-read choices apart from its partition draws.
const MIX_STREAM: u64 = 0x6d69_7865_645f_7277;

/// The partition operation `i` touches (invariant 1): `Seq` by its number,
/// the others by the thread's next draw.
fn draw(population: Population, partitions: u64, i: u64, seed: u64) -> u64 {
    use rand_distr::Distribution;
    if population == Population::Seq {
        return i % partitions;
    }
    // A generator of operation i's own (invariant 5), made only when a draw
    // needs one.
    let rng = &mut ChaCha8Rng::seed_from_u64(seed ^ splitmix(i));
    match population {
        Population::Seq => i % partitions,
        Population::Uniform => rng.gen_range(0..partitions),
        Population::Gaussian => {
            let mid = (partitions - 1) as f64 / 2.0;
            let sd = partitions as f64 / 6.0;
            match rand_distr::Normal::new(mid, sd) {
                Ok(normal) => loop {
                    let x = normal.sample(rng).round();
                    if x >= 0.0 && x < partitions as f64 {
                        return x as u64;
                    }
                },
                Err(_) => rng.gen_range(0..partitions),
            }
        }
        Population::Zipf => match rand_distr::Zipf::new(partitions, 1.0) {
            // Ranks 1..=N, rank 1 the most drawn; partition = rank - 1.
            Ok(z) => (z.sample(rng) as u64).clamp(1, partitions) - 1,
            Err(_) => rng.gen_range(0..partitions),
        },
    }
}

/// Rows one operation touches and the value bytes it moves (for the rates).
fn rows_and_bytes_per_op(args: &StressConfig) -> (u64, u64) {
    let (rows, bytes) = match &args.workload {
        Workload::Standard => {
            let rows = u64::from(args.rows_per_partition);
            (
                rows,
                rows * u64::from(args.columns) * args.value_size as u64,
            )
        }
        Workload::Blob(shape) => (u64::from(shape.blocks()), shape.file_size_bytes),
        // Counted per operation (rows written or returned); bytes not known.
        Workload::User { .. } => (1, 0),
    };
    match args.mode {
        Mode::Delete => (rows, 0),
        Mode::Write | Mode::Read | Mode::Mixed => (rows, bytes),
    }
}

/// Runs the workload on `table` (invariants 1 and 2). `progress` is called about
/// once a second from the progress thread while workers run.
pub fn run_workload(
    db: &Database,
    table: &Arc<Table>,
    args: &StressConfig,
    progress: &(dyn Fn(&Progress) + Sync),
) -> Result<Summary> {
    let threads = args.threads.max(1);
    let partitions = args.partitions.unwrap_or(args.ops).max(1);
    let (rows_per_op, bytes_per_op) = rows_and_bytes_per_op(args);
    // A timed run stops at its deadline; its operation count bounds nothing.
    let ops = if args.duration.is_some() {
        u64::MAX
    } else {
        args.ops
    };
    let done = AtomicU64::new(0);
    let next_op = AtomicU64::new(0);
    let rows_done = AtomicU64::new(0);
    let written = AtomicU64::new(0);
    let read = AtomicU64::new(0);
    let failed = AtomicU64::new(0);
    let errors = AtomicU64::new(0);
    let misses = AtomicU64::new(0);
    let finished = AtomicBool::new(false);
    let interval: Vec<Mutex<Histogram<u64>>> =
        (0..threads).map(|_| Mutex::new(new_histogram())).collect();
    let first_error: Mutex<Option<String>> = Mutex::new(None);
    let schema = table.schema();
    let clock = db.clock().clone();
    let started = Instant::now();
    let totals: Vec<Histogram<u64>> = std::thread::scope(|s| {
        let reporter = s.spawn(|| {
            let mut last_done = 0u64;
            let mut last_rows = 0u64;
            let mut last = Instant::now();
            while !finished.load(Ordering::Acquire) {
                std::thread::sleep(Duration::from_millis(100));
                if last.elapsed() < Duration::from_secs(1) {
                    continue;
                }
                let mut h = new_histogram();
                for m in &interval {
                    let mut g = m.lock();
                    let _ = h.add(&*g);
                    g.reset();
                }
                let now_done = done.load(Ordering::Relaxed);
                let secs = last.elapsed().as_secs_f64();
                let q = |x: f64| h.value_at_quantile(x) as f64 / 1000.0;
                let now_rows = rows_done.load(Ordering::Relaxed);
                let ops_per_second = (now_done - last_done) as f64 / secs;
                progress(&Progress {
                    total_ops: now_done,
                    ops_per_second,
                    rows_per_second: (now_rows - last_rows) as f64 / secs,
                    latency_ms_mean: h.mean() / 1000.0,
                    latency_ms_p50: q(0.5),
                    latency_ms_p95: q(0.95),
                    latency_ms_p99: q(0.99),
                    latency_ms_p999: q(0.999),
                    latency_ms_max: h.max() as f64 / 1000.0,
                    elapsed_seconds: started.elapsed().as_secs_f64(),
                    failed_ops: failed.load(Ordering::Relaxed),
                });
                last_done = now_done;
                last_rows = now_rows;
                last = Instant::now();
            }
        });
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (written, read, rows_done, next_op) = (&written, &read, &rows_done, &next_op);
                let (done, failed, errors, misses, interval, first_error, schema, clock) = (
                    &done,
                    &failed,
                    &errors,
                    &misses,
                    &interval,
                    &first_error,
                    &schema,
                    &clock,
                );
                s.spawn(move || {
                    let mut total = new_histogram();
                    let deadline = args.duration.map(|d| started + d);
                    loop {
                        // Invariant 5: the next operation goes to whichever
                        // thread is free, as a client's connection pool would.
                        let i = next_op.fetch_add(1, Ordering::Relaxed);
                        if i >= ops || deadline.is_some_and(|d| Instant::now() >= d) {
                            break;
                        }
                        let p = draw(args.population, partitions, i, args.seed);
                        let mode = match args.mode {
                            Mode::Mixed => {
                                // A stream of its own: the partition draws
                                // stay those of a write or read run with the
                                // same arguments.
                                let (w, r) = args.mix;
                                let total = u64::from(w) + u64::from(r);
                                let h = splitmix(args.seed ^ splitmix(i) ^ MIX_STREAM ^ 1);
                                if h % total.max(1) < u64::from(w) {
                                    Mode::Write
                                } else {
                                    Mode::Read
                                }
                            }
                            m => m,
                        };
                        // Paced: operation i is due i / rate seconds in.
                        let intended = args.rate.map(|r| {
                            started + Duration::from_secs_f64(i as f64 / r.ops_per_second)
                        });
                        if let Some(due) = intended {
                            let now = Instant::now();
                            if due > now {
                                std::thread::sleep(due - now);
                            }
                        }
                        let op_start = match (intended, args.rate) {
                            (Some(due), Some(r)) if r.fixed => due,
                            _ => Instant::now(),
                        };
                        let outcome =
                            operation(table, schema, args, mode, p, i, partitions, clock.as_ref())
                                .and_then(|(miss, wrong, rows, result)| {
                                    misses.fetch_add(miss, Ordering::Relaxed);
                                    errors.fetch_add(wrong, Ordering::Relaxed);
                                    if result.is_ok() {
                                        rows_done.fetch_add(
                                            rows.unwrap_or(rows_per_op),
                                            Ordering::Relaxed,
                                        );
                                    }
                                    result
                                });
                        let micros = (op_start.elapsed().as_micros() as u64).clamp(1, 60_000_000);
                        let _ = total.record(micros);
                        let _ = interval[t].lock().record(micros);
                        match outcome {
                            Ok(()) => {
                                done.fetch_add(1, Ordering::Relaxed);
                                match mode {
                                    Mode::Write => written.fetch_add(1, Ordering::Relaxed),
                                    Mode::Read => read.fetch_add(1, Ordering::Relaxed),
                                    Mode::Delete | Mode::Mixed => 0,
                                };
                            }
                            Err(e) => {
                                failed.fetch_add(1, Ordering::Relaxed);
                                first_error.lock().get_or_insert_with(|| e.to_string());
                            }
                        }
                    }
                    total
                })
            })
            .collect();
        let totals = workers
            .into_iter()
            .map(|w| w.join().unwrap_or_else(|_| new_histogram()))
            .collect();
        finished.store(true, Ordering::Release);
        let _ = reporter.join();
        totals
    });
    let duration = started.elapsed().as_secs_f64().max(1e-9);
    let mut h = new_histogram();
    for t in &totals {
        let _ = h.add(t);
    }
    let ms = |v: u64| v as f64 / 1000.0;
    let total_ops = done.load(Ordering::Relaxed);
    Ok(Summary {
        mode: format!("{:?}", args.mode).to_lowercase(),
        total_ops,
        op_rate: total_ops as f64 / duration,
        row_rate: rows_done.load(Ordering::Relaxed) as f64 / duration,
        total_rows: rows_done.load(Ordering::Relaxed),
        mib_rate: total_ops as f64 * bytes_per_op as f64 / duration / (1 << 20) as f64,
        errors: failed.load(Ordering::Relaxed) + errors.load(Ordering::Relaxed),
        failed_ops: failed.load(Ordering::Relaxed),
        write_ops: written.load(Ordering::Relaxed),
        read_ops: read.load(Ordering::Relaxed),
        wrong_values: errors.load(Ordering::Relaxed),
        misses: misses.load(Ordering::Relaxed),
        duration_seconds: duration,
        latency_ms: LatencyMs {
            mean: h.mean() / 1000.0,
            p50: ms(h.value_at_quantile(0.5)),
            p95: ms(h.value_at_quantile(0.95)),
            p99: ms(h.value_at_quantile(0.99)),
            p999: ms(h.value_at_quantile(0.999)),
            max: ms(h.max()),
        },
        first_error: first_error.into_inner(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::db::DbOptions;

    /// `strata stress write`'s defaults (cassandra-stress's 5 columns of 34 bytes).
    fn write_config() -> StressConfig {
        StressConfig {
            mode: Mode::Write,
            workload: Workload::Standard,
            ops: 100_000,
            threads: 1,
            partitions: None,
            population: Population::Seq,
            rows_per_partition: 1,
            columns: 5,
            value_size: 34,
            table_options: None,
            alter_table: false,
            seed: 1,
            mix: (1, 1),
            rate: None,
            duration: None,
        }
    }

    fn no_progress(_: &Progress) {}

    /// A database with the default options in a directory of its own.
    fn open_db() -> (tempfile::TempDir, Database) {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(
            dir.path(),
            DbOptions::new(strata::clock::SystemClock::new()),
        )
        .unwrap();
        (dir, db)
    }

    #[test]
    fn a_partition_above_the_mutation_limit_is_one_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        // The default limit (128 MiB since issue 13) is above anything this
        // test should build; 16 MiB (the old default) keeps it small.
        let mut o = DbOptions::new(strata::clock::SystemClock::new());
        o.commitlog = Some(strata::commitlog::CommitLogOptions {
            max_mutation_size_bytes: 16 * 1024 * 1024,
            ..strata::commitlog::CommitLogOptions::default()
        });
        let db = Database::open(dir.path(), o).unwrap();
        // 100,000 rows x 5 columns x 34 bytes: about 21 MB, above 16 MiB.
        let args = StressConfig {
            rows_per_partition: 100_000,
            ..write_config()
        };
        let err = ensure_table(&db, &args).unwrap_err().to_string();
        assert!(err.contains("mutation limit"), "{err}");
        assert!(db.table(KEYSPACE, TABLE).is_err(), "table created anyway");
        db.close().unwrap();
    }

    #[test]
    fn wide_partitions_are_built_in_clustering_order() {
        let (_dir, db) = open_db();
        let args = StressConfig {
            rows_per_partition: 5000,
            value_size: 4,
            ..write_config()
        };
        let table = ensure_table(&db, &args).unwrap();
        let schema = table.schema();
        let u = build_update(&schema, &args, 7, 1).unwrap();
        assert_eq!(u.rows.len(), 5000);
        assert!(u.rows.windows(2).all(|w| w[0].clustering < w[1].clustering));
        assert!(u.rows.iter().all(|r| r.cells.len() == 5));
        db.close().unwrap();
    }

    #[test]
    fn failed_operations_are_not_counted_as_done() {
        let dir = tempfile::tempdir().unwrap();
        let args = StressConfig {
            ops: 40,
            threads: 2,
            ..write_config()
        };
        let db = Database::open(
            dir.path(),
            DbOptions::new(strata::clock::SystemClock::new()),
        )
        .unwrap();
        ensure_table(&db, &args).unwrap();
        db.close().unwrap();
        // A read-only open refuses every write: all 40 operations fail.
        let mut opts = DbOptions::new(strata::clock::SystemClock::new());
        opts.read_only = true;
        let db = Database::open(dir.path(), opts).unwrap();
        let table = db.table(KEYSPACE, TABLE).unwrap();
        let s = run_workload(&db, &table, &args, &no_progress).unwrap();
        assert_eq!(s.total_ops, 0);
        assert_eq!(s.failed_ops, 40);
        assert_eq!(s.errors, 40);
        assert_eq!(s.op_rate, 0.0);
        assert!(
            s.first_error.is_some(),
            "the refusal is kept for the caller"
        );
        drop(table);
        db.close().unwrap();
    }

    #[test]
    fn key_distributions_stay_in_range_with_their_shapes() {
        let n = 1000u64;
        let mut counts = vec![0u64; n as usize];
        for i in 0..20_000 {
            counts[draw(Population::Zipf, n, i, 7) as usize] += 1;
        }
        // Zipf: partition 0 the most drawn, about twice partition 1.
        let top = counts
            .iter()
            .enumerate()
            .max_by_key(|(_, c)| **c)
            .map(|(i, _)| i);
        assert_eq!(top, Some(0));
        assert!(
            counts[0] > counts[1] * 3 / 2,
            "{} vs {}",
            counts[0],
            counts[1]
        );
        let mut sum = 0u64;
        for i in 0..20_000 {
            let p = draw(Population::Gaussian, n, i, 7);
            assert!(p < n);
            sum += p;
        }
        let mean = sum as f64 / 20_000.0;
        assert!((mean - 499.5).abs() < 10.0, "gaussian mean {mean}");
        for i in 0..100 {
            assert_eq!(draw(Population::Seq, n, i + 2000, 7), i);
            assert_eq!(draw(Population::Zipf, 1, i, 7), 0);
            assert_eq!(draw(Population::Gaussian, 1, i, 7), 0);
        }
    }

    #[test]
    fn a_mixed_run_writes_and_reads_in_its_ratio_and_a_timed_run_stops() {
        let (_dir, db) = open_db();
        let args = StressConfig {
            mode: Mode::Mixed,
            mix: (1, 3),
            ops: 4000,
            partitions: Some(100),
            threads: 2,
            ..write_config()
        };
        let table = ensure_table(&db, &args).unwrap();
        let s = run_workload(&db, &table, &args, &no_progress).unwrap();
        assert_eq!(s.write_ops + s.read_ops, 4000);
        assert_eq!(s.errors, 0, "every row read back as written");
        let share = s.read_ops as f64 / 4000.0;
        assert!((share - 0.75).abs() < 0.05, "reads {share}");
        // Each partition is one thread's (operation i on thread i % 2, on
        // partition i % 100), so its reads after its first write find it: the
        // misses are the reads that came first, a few per partition.
        assert!(
            s.misses < s.read_ops / 4,
            "{} misses in {} reads",
            s.misses,
            s.read_ops
        );

        // A run whose time is up before it starts does nothing, however many
        // operations it was given; a rate paces without changing what is done.
        let timed = StressConfig {
            mode: Mode::Write,
            duration: Some(Duration::ZERO),
            ..args.clone()
        };
        assert_eq!(
            run_workload(&db, &table, &timed, &no_progress)
                .unwrap()
                .total_ops,
            0
        );
        let paced = StressConfig {
            mode: Mode::Write,
            ops: 50,
            rate: Some(Rate {
                ops_per_second: 1e9,
                fixed: true,
            }),
            ..args
        };
        let s = run_workload(&db, &table, &paced, &no_progress).unwrap();
        assert_eq!((s.total_ops, s.write_ops), (50, 50));
        db.close().unwrap();
    }
}
