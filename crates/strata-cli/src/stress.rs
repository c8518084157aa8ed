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
    /// Number of operations (each writes or reads one partition).
    #[arg(short = 'n', long, default_value_t = 100_000)]
    pub ops: u64,
    #[arg(long, default_value_t = 1)]
    pub threads: usize,
    /// Number of distinct partitions (default: --ops).
    #[arg(long)]
    pub partitions: Option<u64>,
    #[arg(long, value_enum, default_value_t = Population::Seq)]
    pub population: Population,
    #[arg(long, default_value_t = 1)]
    pub rows_per_partition: u32,
    /// Regular columns per row (cassandra-stress default: 5).
    #[arg(long, default_value_t = 5)]
    pub columns: u32,
    /// Bytes per column value (cassandra-stress default: 34).
    #[arg(long, default_value_t = 34)]
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
    /// its pending work before printing stats (0 = don't wait).
    #[arg(long, default_value_t = 0)]
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
    pub total_ops: u64,
    pub op_rate: f64,
    pub row_rate: f64,
    pub errors: u64,
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
        let u = schema.insert(&row, &WriteOptions::default(), now_micros)?;
        match update.as_mut() {
            None => update = Some(u),
            Some(acc) => merge_partition(acc, u),
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
    if summary.errors > 0 {
        return Err(Error::InvalidInput(format!(
            "{} operations failed",
            summary.errors
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
        "{:>10} {:>12} {:>10} {:>9}",
        "total ops", "op/s", "p99 ms", "time s"
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
                    "{:>10} {:>12.0} {:>10.3} {:>9.1}",
                    now_done,
                    (now_done - last_done) as f64 / secs,
                    h.value_at_quantile(0.99) as f64 / 1000.0,
                    started.elapsed().as_secs_f64()
                );
                last_done = now_done;
                last = Instant::now();
            }
        });
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let (done, errors, misses, interval, first_error, schema, clock) = (
                    &done,
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
                        if let Err(e) = outcome {
                            errors.fetch_add(1, Ordering::Relaxed);
                            first_error.lock().get_or_insert_with(|| e.to_string());
                        }
                        done.fetch_add(1, Ordering::Relaxed);
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
        errors: errors.load(Ordering::Relaxed),
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
    println!("Total errors              : {:>12}", s.errors);
    if args.mode == Mode::Read {
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

    #[test]
    fn values_are_deterministic_and_distinct() {
        assert_eq!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 3, 4, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 3, 5, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(2, 2, 3, 4, 34));
        assert_eq!(value_bytes(9, 9, 9, 9, 0).len(), 0);
        assert_eq!(value_bytes(9, 9, 9, 9, 1000).len(), 1000);
    }
}
