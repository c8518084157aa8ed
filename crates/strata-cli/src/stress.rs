//! `strata stress`: a cassandra-stress-like load generator.
//!
//! Workload: table `stress.standard1 (key blob, ck int, c0..c{n-1} blob,
//! PRIMARY KEY ((key), ck))`. One operation writes (or reads) one partition: its
//! `--rows-per-partition` rows in one mutation, like cassandra-stress's batched
//! partition inserts.
//!
//! Determinism (so `read` with the same arguments visits exactly the rows `write`
//! produced): operation `i` runs on thread `i % threads`; the partition it touches
//! is `i % partitions` for `seq`, or the next draw of that thread's ChaCha8 stream
//! seeded from `--seed` and the thread number for `uniform`. Values are a
//! function of (seed, partition, row, column), so reads verify content, not only
//! presence. Timestamps come from the database clock.

use crate::{open_db, print_tablestats};
use clap::builder::RangedU64ValueParser;
use clap::{Args, ValueEnum};
use hdrhistogram::Histogram;
use parking_lot::Mutex;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::path::Path;
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

const KEYSPACE: &str = "stress";
const TABLE: &str = "standard1";

// Bounds on the arguments: generous for any real run, but a typo (an extra
// zero or three) gets a clear error instead of a panic or an hours-long run.
const MAX_OPS: u64 = 1_000_000_000_000;
const MAX_THREADS: u64 = 1024;
const MAX_ROWS_PER_PARTITION: i64 = 1_000_000;
const MAX_COLUMNS: i64 = 1024;
const MAX_VALUE_SIZE: u64 = 16 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Write,
    Read,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Population {
    /// Operation i touches partition i (mod --partitions).
    Seq,
    /// Partitions drawn uniformly from a seeded stream per thread.
    Uniform,
}

#[derive(Args, Debug, Clone)]
pub struct StressArgs {
    pub mode: Mode,
    /// Number of operations (each writes or reads one partition), at most 10^12.
    #[arg(short = 'n', long, default_value_t = 100_000,
          value_parser = clap::value_parser!(u64).range(1..=MAX_OPS))]
    pub ops: u64,
    /// Client threads, 1 to 1024.
    #[arg(long, default_value_t = 1,
          value_parser = RangedU64ValueParser::<usize>::new().range(1..=MAX_THREADS))]
    pub threads: usize,
    /// Number of distinct partitions (default: --ops).
    #[arg(long, value_parser = clap::value_parser!(u64).range(1..))]
    pub partitions: Option<u64>,
    #[arg(long, value_enum, default_value_t = Population::Seq)]
    pub population: Population,
    /// Rows written (and read) per partition in one mutation, 1 to 1,000,000;
    /// the mutation must also fit the commit log's limit (half a segment).
    #[arg(long, default_value_t = 1,
          value_parser = clap::value_parser!(u32).range(1..=MAX_ROWS_PER_PARTITION))]
    pub rows_per_partition: u32,
    /// Regular columns per row, 1 to 1024 (cassandra-stress default: 5).
    #[arg(long, default_value_t = 5,
          value_parser = clap::value_parser!(u32).range(1..=MAX_COLUMNS))]
    pub columns: u32,
    /// Bytes per column value, at most 16 MiB (cassandra-stress default: 34).
    #[arg(long, default_value_t = 34,
          value_parser = RangedU64ValueParser::<usize>::new().range(0..=MAX_VALUE_SIZE))]
    pub value_size: usize,
    /// Table options in CQL form, e.g. "compaction = {'class': 'LeveledCompactionStrategy'}".
    #[arg(long)]
    pub table_options: Option<String>,
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Also write the summary as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// After a write run, wait up to this many seconds for compaction to finish
    /// its pending work before printing stats (0 = don't wait; at most a day).
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=86_400))]
    pub wait_for_compaction: u64,
    /// Do not print the table's stats after the run.
    #[arg(long)]
    pub no_tablestats: bool,
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
    /// `failed_ops + wrong_values`: anything that makes the run exit non-zero.
    pub errors: u64,
    /// Operations that returned an error (a full disk, a refused write, ...).
    pub failed_ops: u64,
    /// Reads only: rows found with a value other than the one written.
    pub wrong_values: u64,
    pub misses: u64,
    pub duration_seconds: f64,
    pub latency_ms: LatencyMs,
}

fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of (partition, row, column): deterministic, so reads can verify it.
fn value_bytes(seed: u64, partition: u64, row: u32, column: u32, size: usize) -> Vec<u8> {
    let mut state =
        splitmix(seed ^ splitmix(partition ^ splitmix(((row as u64) << 32) | column as u64)));
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        state = splitmix(state);
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(size);
    out
}

fn partition_key(p: u64) -> Value {
    Value::Blob(p.to_be_bytes().to_vec())
}

fn ensure_table(db: &Database, args: &StressArgs) -> Result<Arc<Table>> {
    if args.columns == 0 {
        return Err(Error::InvalidInput("--columns must be at least 1".into()));
    }
    if args.rows_per_partition == 0 {
        return Err(Error::InvalidInput(
            "--rows-per-partition must be at least 1".into(),
        ));
    }
    if let Some(log) = db.commitlog() {
        // Each cell costs its value plus a few bytes of framing; checked before the
        // run so a too-wide partition is one clear error, not one per operation.
        let per_row = u64::from(args.columns) * (args.value_size as u64 + 8) + 16;
        let estimate = u64::from(args.rows_per_partition).saturating_mul(per_row);
        let limit = log.options().max_mutation_bytes();
        if estimate > limit {
            return Err(Error::InvalidInput(format!(
                "one partition of --rows-per-partition {} x --columns {} x --value-size {} is \
                 about {estimate} bytes, above the commit log's mutation limit of {limit} bytes \
                 (half of --commitlog-segment-size-mb)",
                args.rows_per_partition, args.columns, args.value_size
            )));
        }
    }
    match db.table(KEYSPACE, TABLE) {
        Ok(t) => {
            let regular = t.schema().regular_columns().count() as u32;
            if regular != args.columns {
                return Err(Error::InvalidInput(format!(
                    "{KEYSPACE}.{TABLE} exists with {regular} columns; --columns {} does not match",
                    args.columns
                )));
            }
            if let Some(opts) = &args.table_options {
                db.alter_table_options(KEYSPACE, TABLE, opts)?;
            }
            Ok(t)
        }
        Err(Error::NotFound(_)) => {
            let cols: Vec<String> = (0..args.columns).map(|c| format!("c{c} blob")).collect();
            let mut cql = format!(
                "CREATE TABLE {KEYSPACE}.{TABLE} (key blob, ck int, {}, PRIMARY KEY ((key), ck))",
                cols.join(", ")
            );
            if let Some(opts) = &args.table_options {
                cql.push_str(" WITH ");
                cql.push_str(opts);
            }
            db.create_table_cql(&cql)
        }
        Err(e) => Err(e),
    }
}

/// Builds the one mutation that writes partition `p`'s rows. Linear in the row
/// count: rows are generated in clustering order (`ck` ascending), so each one is
/// appended, not merged into a copy of everything before it (which made 20,000
/// rows take 15 s).
fn build_update(
    schema: &TableSchema,
    args: &StressArgs,
    p: u64,
    now_micros: i64,
) -> Result<PartitionUpdate> {
    let names: Vec<String> = (0..args.columns).map(|c| format!("c{c}")).collect();
    let mut update: Option<PartitionUpdate> = None;
    for r in 0..args.rows_per_partition {
        let mut row: Vec<(&str, Value)> =
            vec![("key", partition_key(p)), ("ck", Value::Int(r as i32))];
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
fn verify_partition(
    table: &Table,
    schema: &TableSchema,
    args: &StressArgs,
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

pub fn run(data_dir: &Path, args: StressArgs) -> Result<()> {
    let db = open_db(data_dir)?;
    let table = ensure_table(&db, &args)?;
    let summary = run_workload(&db, &table, &args)?;
    print_summary(&summary, &args);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::InvalidInput(format!("JSON: {e}")))?;
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    if args.mode == Mode::Write {
        // The commit log already made the run durable; flushing makes the stats
        // show the data as sstables and lets compaction see all of it.
        table.flush()?;
        if args.wait_for_compaction > 0 {
            let settled =
                db.wait_for_compactions(std::time::Duration::from_secs(args.wait_for_compaction));
            if !settled {
                eprintln!(
                    "compaction still has pending work after {} s",
                    args.wait_for_compaction
                );
            }
        }
    }
    if !args.no_tablestats {
        println!();
        print_tablestats(std::slice::from_ref(&table), false)?;
    }
    db.close()?;
    if summary.failed_ops > 0 {
        return Err(Error::InvalidInput(format!(
            "{} of {} operations failed",
            summary.failed_ops,
            summary.failed_ops + summary.total_ops
        )));
    }
    if summary.wrong_values > 0 {
        return Err(Error::InvalidInput(format!(
            "{} rows read back with values other than those written",
            summary.wrong_values
        )));
    }
    if summary.misses > 0 {
        return Err(Error::InvalidInput(format!(
            "{} rows expected but not found",
            summary.misses
        )));
    }
    Ok(())
}

fn run_workload(db: &Database, table: &Arc<Table>, args: &StressArgs) -> Result<Summary> {
    let threads = args.threads.max(1);
    let partitions = args.partitions.unwrap_or(args.ops).max(1);
    let done = AtomicU64::new(0);
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
    println!(
        "{:>10} {:>12} {:>10} {:>9} {:>10}",
        "total ops", "op/s", "p99 ms", "time s", "failed"
    );
    let totals: Vec<Histogram<u64>> = std::thread::scope(|s| {
        let reporter = s.spawn(|| {
            let mut last_done = 0u64;
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
                println!(
                    "{:>10} {:>12.0} {:>10.3} {:>9.1} {:>10}",
                    now_done,
                    (now_done - last_done) as f64 / secs,
                    h.value_at_quantile(0.99) as f64 / 1000.0,
                    started.elapsed().as_secs_f64(),
                    failed.load(Ordering::Relaxed)
                );
                last_done = now_done;
                last = Instant::now();
            }
        });
        let workers: Vec<_> = (0..threads)
            .map(|t| {
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
                    let mut rng = ChaCha8Rng::seed_from_u64(args.seed ^ splitmix(t as u64 + 1));
                    let mut total = new_histogram();
                    let mut i = t as u64;
                    while i < args.ops {
                        let p = match args.population {
                            Population::Seq => i % partitions,
                            Population::Uniform => rng.gen_range(0..partitions),
                        };
                        let op_start = Instant::now();
                        let outcome = match args.mode {
                            Mode::Write => build_update(schema, args, p, clock.now_micros())
                                .and_then(|u| table.apply(&u)),
                            Mode::Read => {
                                verify_partition(table, schema, args, p).map(|(miss, wrong)| {
                                    misses.fetch_add(miss, Ordering::Relaxed);
                                    errors.fetch_add(wrong, Ordering::Relaxed);
                                })
                            }
                        };
                        let micros = (op_start.elapsed().as_micros() as u64).clamp(1, 60_000_000);
                        let _ = total.record(micros);
                        let _ = interval[t].lock().record(micros);
                        match outcome {
                            Ok(()) => {
                                done.fetch_add(1, Ordering::Relaxed);
                            }
                            Err(e) => {
                                failed.fetch_add(1, Ordering::Relaxed);
                                first_error.lock().get_or_insert_with(|| e.to_string());
                            }
                        }
                        i += threads as u64;
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
    if let Some(e) = first_error.lock().as_ref() {
        eprintln!("first error: {e}");
    }
    let ms = |v: u64| v as f64 / 1000.0;
    let total_ops = done.load(Ordering::Relaxed);
    Ok(Summary {
        mode: format!("{:?}", args.mode).to_lowercase(),
        total_ops,
        op_rate: total_ops as f64 / duration,
        row_rate: total_ops as f64 * args.rows_per_partition as f64 / duration,
        errors: failed.load(Ordering::Relaxed) + errors.load(Ordering::Relaxed),
        failed_ops: failed.load(Ordering::Relaxed),
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
    })
}

fn print_summary(s: &Summary, args: &StressArgs) {
    let secs = s.duration_seconds;
    println!();
    println!("Results ({}):", s.mode);
    println!("Op rate                   : {:>12.0} op/s", s.op_rate);
    println!("Row rate                  : {:>12.0} row/s", s.row_rate);
    println!("Latency mean              : {:>12.3} ms", s.latency_ms.mean);
    println!("Latency median            : {:>12.3} ms", s.latency_ms.p50);
    println!("Latency 95th percentile   : {:>12.3} ms", s.latency_ms.p95);
    println!("Latency 99th percentile   : {:>12.3} ms", s.latency_ms.p99);
    println!("Latency 99.9th percentile : {:>12.3} ms", s.latency_ms.p999);
    println!("Latency max               : {:>12.3} ms", s.latency_ms.max);
    println!("Total partitions          : {:>12}", s.total_ops);
    println!(
        "Total rows                : {:>12}",
        s.total_ops * args.rows_per_partition as u64
    );
    println!("Failed operations         : {:>12}", s.failed_ops);
    if args.mode == Mode::Read {
        println!("Rows with wrong values    : {:>12}", s.wrong_values);
        println!("Rows expected, not found  : {:>12}", s.misses);
    }
    println!(
        "Total operation time      :     {:02}:{:02}:{:02}",
        (secs as u64) / 3600,
        (secs as u64 / 60) % 60,
        secs as u64 % 60
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use strata::db::DbOptions;

    #[derive(Parser)]
    struct Cmd {
        #[command(flatten)]
        args: StressArgs,
    }

    fn parse(line: &[&str]) -> std::result::Result<StressArgs, clap::Error> {
        Cmd::try_parse_from(std::iter::once("stress").chain(line.iter().copied())).map(|c| c.args)
    }

    #[test]
    fn arguments_past_their_bounds_are_refused_by_name() {
        for (line, name) in [
            (&["write", "--threads", "100000"][..], "--threads"),
            (&["write", "--threads", "0"][..], "--threads"),
            (
                &["write", "--rows-per-partition", "10000000"][..],
                "--rows-per-partition",
            ),
            (&["write", "--columns", "0"][..], "--columns"),
            (&["write", "--columns", "5000"][..], "--columns"),
            (&["write", "--value-size", "100000000"][..], "--value-size"),
            (&["write", "-n", "0"][..], "--ops"),
            (&["write", "--partitions", "0"][..], "--partitions"),
        ] {
            let err = match parse(line) {
                Ok(_) => panic!("{line:?} accepted"),
                Err(e) => e.to_string(),
            };
            assert!(err.contains(name), "{line:?}: {err}");
        }
        assert!(parse(&["write", "--threads", "1024", "--columns", "1024"]).is_ok());
    }

    #[test]
    fn a_partition_above_the_mutation_limit_is_one_clear_error() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(
            dir.path(),
            DbOptions::new(strata::clock::SystemClock::new()),
        )
        .unwrap();
        // 100,000 rows x 5 columns x 34 bytes: about 21 MB, above 16 MiB.
        let args = parse(&["write", "--rows-per-partition", "100000"]).unwrap();
        let err = ensure_table(&db, &args).unwrap_err().to_string();
        assert!(err.contains("mutation limit"), "{err}");
        assert!(db.table(KEYSPACE, TABLE).is_err(), "table created anyway");
        db.close().unwrap();
    }

    #[test]
    fn wide_partitions_are_built_in_clustering_order() {
        let dir = tempfile::tempdir().unwrap();
        let db = Database::open(
            dir.path(),
            DbOptions::new(strata::clock::SystemClock::new()),
        )
        .unwrap();
        let args = parse(&["write", "--rows-per-partition", "5000", "--value-size", "4"]).unwrap();
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
        let args = parse(&["write", "-n", "40", "--threads", "2"]).unwrap();
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
        let s = run_workload(&db, &table, &args).unwrap();
        assert_eq!(s.total_ops, 0);
        assert_eq!(s.failed_ops, 40);
        assert_eq!(s.errors, 40);
        assert_eq!(s.op_rate, 0.0);
        drop(table);
        db.close().unwrap();
    }

    #[test]
    fn values_are_deterministic_and_distinct() {
        assert_eq!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 3, 4, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 3, 5, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(2, 2, 3, 4, 34));
        assert_eq!(value_bytes(9, 9, 9, 9, 0).len(), 0);
        assert_eq!(value_bytes(9, 9, 9, 9, 1000).len(), 1000);
    }
}
