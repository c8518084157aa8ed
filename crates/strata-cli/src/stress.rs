//! `strata stress`: a cassandra-stress-like load generator, `write`, `read` or
//! `delete`, over the standard table or (`--workload blob`) files of
//! fixed-size blocks. The workload (table shape, values, populations, workers,
//! verification) is `strata_bench::stress` and `strata_bench::blobfile`;
//! this file parses the arguments with their bounds, opens the data directory,
//! calls the library and prints its progress and summary as cassandra-stress
//! lays them out.

use crate::bounds::range;
use crate::{open_db, print_tablestats};
use clap::{Args, ValueEnum};
use std::path::Path;
use strata::{Error, Result};
use strata_bench::blobfile::FileShape;
use strata_bench::stress::{self as workload, Progress, StressConfig, Summary};
use strata_bench::workdir::write_new_or_regular;

// Bounds on the arguments: generous for any real run, but a typo (an extra
// zero or three) gets a clear error instead of a panic or an hours-long run.
const MAX_OPS: u64 = 1_000_000_000_000;
const MAX_THREADS: usize = 1024;
const MAX_ROWS_PER_PARTITION: u32 = 1_000_000;
const MAX_COLUMNS: u32 = 1024;
const MAX_VALUE_SIZE: usize = 16 << 20;
/// Default operations: cassandra-stress's 100,000 partitions, but 64 files for
/// the blob workload (16 MiB each by default: 1 GiB, TestDFSIO's shape scaled).
const DEFAULT_OPS: u64 = 100_000;
const DEFAULT_BLOB_FILES: u64 = 64;
const DEFAULT_FILE_SIZE_KIB: u64 = 16 << 10;
const DEFAULT_BLOCK_SIZE_KIB: u64 = 1 << 10;
/// A file of 64 GiB is far past this machine; a typo, not a plan.
const MAX_FILE_SIZE_KIB: u64 = 64 << 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    Write,
    /// Reads back and verifies what `write` wrote with the same options.
    Read,
    /// Deletes each partition touched (a whole file with --workload blob).
    Delete,
    /// Writes and reads in --ratio (cassandra-stress `mixed`); reads verify
    /// what they find, and a read of a partition not yet written is a miss,
    /// counted but not an error.
    Mixed,
    /// Your own table and queries from a cassandra-stress YAML profile
    /// (--profile), in --ratio: `insert=1,NAME=3` runs the profile's insert
    /// once for every three runs of its query NAME (cassandra-stress `user`).
    User,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum WorkloadArg {
    /// `stress.standard1`: --rows-per-partition rows of --columns values each.
    Standard,
    /// `stress.blocks`: files of --file-size-kib as partitions of
    /// --block-size-kib blocks, one row each with its CRC-32C (the TestDFSIO
    /// blob test's data model).
    Blob,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Population {
    /// Operation i touches partition i (mod --partitions).
    Seq,
    /// Partitions drawn uniformly from a seeded stream per thread.
    Uniform,
    /// Normal around the middle partition, a sixth of the range its
    /// standard deviation (cassandra-stress `gaussian`).
    Gaussian,
    /// Zipf, exponent 1: partition 0 the hottest (hot keys).
    Zipf,
}

#[derive(Args, Debug, Clone)]
pub struct StressArgs {
    pub mode: Mode,
    #[arg(long, value_enum, default_value_t = WorkloadArg::Standard)]
    pub workload: WorkloadArg,
    /// Number of operations (each writes, reads or deletes one partition: one
    /// file with --workload blob), at most 10^12 [default: 100000; 64 with
    /// --workload blob].
    #[arg(short = 'n', long, value_parser = range(1u64, MAX_OPS,
        "10^12 operations is days of work at any rate; a larger count is a typo"))]
    pub ops: Option<u64>,
    /// Client threads, 1 to 1024.
    #[arg(long, default_value_t = 1, value_parser = range(1usize, MAX_THREADS,
        "one OS thread each"))]
    pub threads: usize,
    /// Number of distinct partitions (default: --ops), at most 10^12.
    #[arg(long, value_parser = range(1u64, MAX_OPS,
        "as many as operations at the most: 10^12"))]
    pub partitions: Option<u64>,
    #[arg(long, value_enum, default_value_t = Population::Seq)]
    pub population: Population,
    /// Rows written (and read) per partition in one mutation, 1 to 1,000,000;
    /// the mutation must also fit the commit log's max_mutation_size
    /// [default: 1].
    #[arg(long, value_parser = range(1u32, MAX_ROWS_PER_PARTITION,
        "a partition's rows go in one mutation, held whole in memory"))]
    pub rows_per_partition: Option<u32>,
    /// Regular columns per row, 1 to 1024 [default: 5, as cassandra-stress].
    #[arg(long, value_parser = range(1u32, MAX_COLUMNS,
        "a table of more columns is not the stress table's shape"))]
    pub columns: Option<u32>,
    /// Bytes per column value, at most 16 MiB [default: 34, as
    /// cassandra-stress].
    #[arg(long, value_parser = range(0usize, MAX_VALUE_SIZE,
        "values are held in memory per thread and in one mutation: at most 16 MiB"))]
    pub value_size: Option<usize>,
    /// `user`: the cassandra-stress YAML profile (keyspace, table, column
    /// distributions, insert, queries; docs/stress.md).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<std::path::PathBuf>,
    /// Blob workload: bytes of each file, KiB [default: 16384].
    #[arg(long, value_parser = range(1u64, MAX_FILE_SIZE_KIB,
        "a file of more than 64 GiB is far past this machine"))]
    pub file_size_kib: Option<u64>,
    /// Blob workload: bytes of each block (one row, one mutation), KiB, 1 to
    /// 16384 [default: 1024].
    #[arg(long, value_parser = range(1u64, 16 << 10,
        "a block is one row and one mutation, held whole in memory: at most 16 MiB"))]
    pub block_size_kib: Option<u64>,
    /// Table options in CQL form, e.g. "compaction = {'class':
    /// 'LeveledCompactionStrategy'}", for the table this run creates; an
    /// existing table is changed only with --alter.
    #[arg(long)]
    pub table_options: Option<String>,
    /// The mix of a `mixed` run, as cassandra-stress writes it:
    /// `write=1,read=3` [default: write=1,read=1]; of a `user` run, the
    /// profile's `insert` and query names: `insert=1,simple1=3` [default:
    /// insert=1].
    #[arg(long)]
    pub ratio: Option<String>,
    /// Pace the run: `fixed=N/s` (latency from each operation's intended
    /// start, so stalls show: coordinated omission corrected) or
    /// `throttle=N/s` (latency from the actual start); N over all threads,
    /// at most 10^9 [default: as fast as it goes].
    #[arg(long)]
    pub rate: Option<String>,
    /// Run for this long (`30s`, `10m`, `2h`; at most 7 days) instead of -n
    /// operations; partitions then default to 1,000,000.
    #[arg(long)]
    pub duration: Option<String>,
    /// Change an existing stress table to --table-options (ALTER TABLE).
    #[arg(long, requires = "table_options")]
    pub alter: bool,
    #[arg(long, default_value_t = 1, value_parser = range(0u64, u64::MAX,
        "any seed"))]
    pub seed: u64,
    /// Also write the summary as JSON to this file.
    #[arg(long)]
    pub json: Option<std::path::PathBuf>,
    /// Also write a report of throughput and latency percentiles over the
    /// run, interval by interval (cassandra-stress's -graph): FILE.html, a
    /// page with the summary and the chart, or FILE.svg, the chart alone.
    #[arg(long, value_name = "FILE")]
    pub graph: Option<std::path::PathBuf>,
    /// After a write or delete run, wait up to this many seconds for compaction to finish
    /// its pending work before printing stats (0 = don't wait; at most a day).
    #[arg(long, default_value_t = 0, value_parser = range(0u64, 86_400,
        "a longer wait is better done by `strata compactionstats` in a loop"))]
    pub wait_for_compaction: u64,
    /// Do not print the table's stats after the run.
    #[arg(long)]
    pub no_tablestats: bool,
}

/// Default partitions of a timed run (cassandra-stress's population for
/// `duration=`: 1..1000000).
const DEFAULT_TIMED_PARTITIONS: u64 = 1_000_000;
/// Longest `--duration`.
const MAX_DURATION_SECONDS: u64 = 7 * 86_400;
/// Highest `--rate`.
const MAX_RATE: f64 = 1e9;

/// `name=weight,...`: each weight a whole number up to 1,000,000, at least
/// one above 0; `bad` words the error with the command's own example.
fn parse_weights<'a>(text: &'a str, bad: &dyn Fn(&str) -> Error) -> Result<Vec<(&'a str, u32)>> {
    let mut out = Vec::new();
    for part in text.split(',') {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| bad("expected name=weight"))?;
        let n: u32 = v
            .trim()
            .parse()
            .map_err(|_| bad("a weight is a whole number"))?;
        if n > 1_000_000 {
            return Err(bad("a weight is at most 1000000"));
        }
        out.push((k.trim(), n));
    }
    if out.iter().all(|(_, n)| *n == 0) {
        return Err(bad("at least one weight above 0"));
    }
    Ok(out)
}

/// `write=1,read=3`.
fn parse_ratio(text: &str) -> Result<(u32, u32)> {
    let bad =
        |why: &str| Error::InvalidInput(format!("--ratio {text}: {why} (e.g. write=1,read=3)"));
    let (mut w, mut r) = (0u32, 0u32);
    for (k, n) in parse_weights(text, &bad)? {
        match k {
            "write" | "insert" => w = n,
            "read" | "simple1" => r = n,
            other => return Err(bad(&format!("'{other}' is not write or read"))),
        }
    }
    Ok((w, r))
}

/// `fixed=1000/s` or `throttle=1000/s`.
fn parse_rate(text: &str) -> Result<workload::Rate> {
    let bad = |why: &str| {
        Error::InvalidInput(format!(
            "--rate {text}: {why} (fixed=N/s or throttle=N/s, N from 1 to 10^9)"
        ))
    };
    let (kind, n) = text
        .split_once('=')
        .ok_or_else(|| bad("expected fixed= or throttle="))?;
    let fixed = match kind {
        "fixed" => true,
        "throttle" => false,
        _ => return Err(bad("expected fixed= or throttle=")),
    };
    let n: f64 = n
        .trim_end_matches("/s")
        .parse()
        .map_err(|_| bad("not a number"))?;
    if !(1.0..=MAX_RATE).contains(&n) {
        return Err(bad("out of range"));
    }
    Ok(workload::Rate {
        ops_per_second: n,
        fixed,
    })
}

/// `30s`, `10m`, `2h`, `1d`.
fn parse_duration(text: &str) -> Result<std::time::Duration> {
    let bad = |why: &str| {
        Error::InvalidInput(format!(
            "--duration {text}: {why} (e.g. 30s, 10m, 2h; at most 7 days)"
        ))
    };
    let split = text
        .find(|c: char| !c.is_ascii_digit())
        .unwrap_or(text.len());
    let (num, unit) = text.split_at(split);
    let n: u64 = num
        .parse()
        .map_err(|_| bad("expected a number and a unit"))?;
    let secs = match unit {
        "s" => Some(n),
        "m" => n.checked_mul(60),
        "h" => n.checked_mul(3600),
        "d" => n.checked_mul(86_400),
        _ => return Err(bad("the unit is s, m, h or d")),
    };
    match secs {
        Some(s) if (1..=MAX_DURATION_SECONDS).contains(&s) => Ok(std::time::Duration::from_secs(s)),
        _ => Err(bad("out of range")),
    }
}

/// A `user` run's profile and mix, read before the data directory opens;
/// the workload is bound to its table once it has.
pub struct UserPlan {
    profile: strata_bench::stress_profile::Profile,
    insert_weight: u32,
    query_weights: Vec<u32>,
}

/// `insert=1,simple1=3` against the profile's query names.
fn parse_user_ratio(
    text: Option<&str>,
    profile: &strata_bench::stress_profile::Profile,
) -> Result<(u32, Vec<u32>)> {
    let names: Vec<&str> = profile.queries.iter().map(|q| q.name.as_str()).collect();
    let Some(text) = text else {
        return Ok((1, vec![0; names.len()]));
    };
    let bad = |why: &str| {
        Error::InvalidInput(format!(
            "--ratio {text}: {why} (insert=N and the profile's queries: {})",
            if names.is_empty() {
                "none".to_string()
            } else {
                names.join(", ")
            }
        ))
    };
    let mut insert = 0u32;
    let mut queries = vec![0u32; names.len()];
    for (k, n) in parse_weights(text, &bad)? {
        match k {
            "insert" => insert = n,
            name => match names.iter().position(|q| *q == name) {
                Some(i) => queries[i] = n,
                None => {
                    return Err(bad(&format!(
                        "'{name}' is not insert or a query of the profile"
                    )))
                }
            },
        }
    }
    Ok((insert, queries))
}

impl StressArgs {
    /// A `user` run's plan; `None` for the other modes, which refuse
    /// `--profile`.
    fn user_plan(&self) -> Result<Option<UserPlan>> {
        if self.mode != Mode::User {
            if self.profile.is_some() {
                return Err(Error::InvalidInput(
                    "--profile is the profile of `strata stress user`".into(),
                ));
            }
            return Ok(None);
        }
        let Some(path) = &self.profile else {
            return Err(Error::InvalidInput(
                "`strata stress user` needs --profile FILE (a cassandra-stress YAML profile)"
                    .into(),
            ));
        };
        // The stress table's own options would be silently ignored: the
        // profile defines the table.
        for (given, name) in [
            (self.rows_per_partition.is_some(), "--rows-per-partition"),
            (self.columns.is_some(), "--columns"),
            (self.value_size.is_some(), "--value-size"),
            (self.table_options.is_some(), "--table-options"),
            (self.file_size_kib.is_some(), "--file-size-kib"),
            (self.block_size_kib.is_some(), "--block-size-kib"),
            (self.workload != WorkloadArg::Standard, "--workload"),
        ] {
            if given {
                return Err(Error::InvalidInput(format!(
                    "{name} shapes the stress table; a user run's table is its profile's"
                )));
            }
        }
        let meta = std::fs::metadata(path).map_err(|e| Error::io(path, e))?;
        if meta.len() > 1 << 20 {
            return Err(Error::InvalidInput(format!(
                "--profile {}: {} bytes; a profile is at most 1 MiB",
                path.display(),
                meta.len()
            )));
        }
        let text = std::fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
        let profile = strata_bench::stress_profile::Profile::parse(&text)
            .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?;
        let (insert_weight, query_weights) = parse_user_ratio(self.ratio.as_deref(), &profile)?;
        Ok(Some(UserPlan {
            profile,
            insert_weight,
            query_weights,
        }))
    }

    fn config(&self) -> Result<StressConfig> {
        let workload = match self.workload {
            WorkloadArg::Standard => {
                // Given with the standard workload they would be silently
                // ignored: refuse them instead.
                for (given, name) in [
                    (self.file_size_kib.is_some(), "--file-size-kib"),
                    (self.block_size_kib.is_some(), "--block-size-kib"),
                ] {
                    if given {
                        return Err(Error::InvalidInput(format!(
                            "{name} is an option of the blob workload (--workload blob)"
                        )));
                    }
                }
                workload::Workload::Standard
            }
            WorkloadArg::Blob => workload::Workload::Blob(FileShape {
                file_size_bytes: self.file_size_kib.unwrap_or(DEFAULT_FILE_SIZE_KIB) << 10,
                block_size_bytes: self.block_size_kib.unwrap_or(DEFAULT_BLOCK_SIZE_KIB) << 10,
            }),
        };
        let default_ops = match workload {
            workload::Workload::Blob(_) => DEFAULT_BLOB_FILES,
            workload::Workload::Standard | workload::Workload::User { .. } => DEFAULT_OPS,
        };
        if self.ratio.is_some() && !matches!(self.mode, Mode::Mixed | Mode::User) {
            return Err(Error::InvalidInput(
                "--ratio is the mix of `strata stress mixed` and `strata stress user`".into(),
            ));
        }
        let mix = match (&self.ratio, self.mode) {
            (Some(r), Mode::Mixed) => parse_ratio(r)?,
            // A user run's mix comes from its plan.
            _ => (1, 1),
        };
        let rate = self.rate.as_deref().map(parse_rate).transpose()?;
        let duration = self.duration.as_deref().map(parse_duration).transpose()?;
        if duration.is_some() && self.ops.is_some() {
            return Err(Error::InvalidInput(
                "give -n or --duration, not both".into(),
            ));
        }
        let partitions = match (self.partitions, duration) {
            (None, Some(_)) => Some(DEFAULT_TIMED_PARTITIONS),
            (p, _) => p,
        };
        Ok(StressConfig {
            mode: match self.mode {
                Mode::Write => workload::Mode::Write,
                Mode::Read => workload::Mode::Read,
                Mode::Delete => workload::Mode::Delete,
                Mode::Mixed => workload::Mode::Mixed,
                // Bound to the profile in `run`.
                Mode::User => workload::Mode::Mixed,
            },
            mix,
            rate,
            duration,
            workload,
            ops: self.ops.unwrap_or(default_ops),
            threads: self.threads,
            partitions,
            population: match self.population {
                Population::Seq => workload::Population::Seq,
                Population::Uniform => workload::Population::Uniform,
                Population::Gaussian => workload::Population::Gaussian,
                Population::Zipf => workload::Population::Zipf,
            },
            rows_per_partition: self.rows_per_partition.unwrap_or(1),
            columns: self.columns.unwrap_or(5),
            value_size: self.value_size.unwrap_or(34),
            table_options: self.table_options.clone(),
            alter_table: self.alter,
            seed: self.seed,
        })
    }
}

pub fn run(data_dir: &Path, args: StressArgs) -> Result<()> {
    // Argument errors before the data directory is opened (or created).
    let mut config = args.config()?;
    let plan = args.user_plan()?;
    for (flag, path) in [("--json", &args.json), ("--graph", &args.graph)] {
        if let Some(path) = path {
            refuse_inside(data_dir, flag, path)?;
        }
    }
    if let Some(path) = &args.graph {
        strata_bench::stress_report::ReportKind::of(path)?;
    }
    let db = std::sync::Arc::new(open_db(data_dir)?);
    if let Some(plan) = plan {
        let executor = std::sync::Arc::new(crate::cql_cmd::embedded_executor(&db)?);
        let bound = strata_bench::stress_profile::UserWorkload::setup(
            &db,
            executor,
            plan.profile,
            args.seed,
        )?;
        let reads: u32 = plan.query_weights.iter().sum();
        config.mode = match (plan.insert_weight, reads) {
            (_, 0) => workload::Mode::Write,
            (0, _) => workload::Mode::Read,
            _ => workload::Mode::Mixed,
        };
        config.mix = (plan.insert_weight, reads);
        config.workload = workload::Workload::User {
            workload: std::sync::Arc::new(bound),
            query_weights: plan.query_weights,
        };
    }
    let table = workload::ensure_table(&db, &config)?;
    // cassandra-stress's interval columns (latencies in ms, per interval).
    println!(
        "{:>12} {:>9} {:>9} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>8} {:>7}",
        "total ops", "op/s", "row/s", "mean", "med", ".95", ".99", ".999", "max", "time", "errors"
    );
    let intervals = std::sync::Mutex::new(Vec::new());
    let mut summary = workload::run_workload(&db, &table, &config, &|p: &Progress| {
        print_progress(p);
        if args.graph.is_some() {
            // A poisoned lock only means a progress line panicked; the
            // intervals already pushed are whole.
            intervals.lock().unwrap_or_else(|e| e.into_inner()).push(*p);
        }
    })?;
    if args.mode == Mode::User {
        summary.mode = "user".into();
    }
    if let Some(e) = &summary.first_error {
        eprintln!("first error: {e}");
    }
    print_summary(&summary, &args);
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&summary)
            .map_err(|e| Error::InvalidInput(format!("JSON: {e}")))?;
        write_new_or_regular(path, text.as_bytes())?;
    }
    if let Some(path) = &args.graph {
        let command: Vec<String> = std::env::args().collect();
        strata_bench::stress_report::write_report(
            path,
            &format!("strata stress {}", summary.mode),
            &command.join(" "),
            &intervals.lock().unwrap_or_else(|e| e.into_inner()),
            &summary,
        )?;
    }
    if args.mode != Mode::Read {
        // The commit log already made the run durable; flushing makes the stats
        // show the data (or the deletions) as sstables and lets compaction see
        // all of it.
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
        print_tablestats(
            std::slice::from_ref(&table),
            crate::format::OutputArgs::default(),
            false,
        )?;
    }
    // The user workload's executor holds the database too.
    drop((table, config));
    let db = std::sync::Arc::try_unwrap(db)
        .map_err(|_| Error::InvalidInput("the database is still in use".into()))?;
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
    // In a mixed run a read may come before its partition's first write; a
    // user query that finds nothing is counted, as cassandra-stress counts
    // its rows, not checked.
    if summary.misses > 0 && !matches!(args.mode, Mode::Mixed | Mode::User) {
        return Err(Error::InvalidInput(format!(
            "{} rows expected but not found",
            summary.misses
        )));
    }
    Ok(())
}

/// `--json FILE` must not name a file in the data directory: the directory
/// holds only the engine's own files, and overwriting one (a MANIFEST) would
/// lose data.
fn refuse_inside(data_dir: &Path, flag: &str, file: &Path) -> Result<()> {
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    let (Ok(dir), Ok(parent)) = (data_dir.canonicalize(), parent.canonicalize()) else {
        // A data directory not yet created holds nothing; a missing parent
        // fails the write itself, with its own error.
        return Ok(());
    };
    if parent.starts_with(&dir) {
        return Err(Error::InvalidInput(format!(
            "{flag} {}: the file would be inside the data directory {}, which holds only \
             the engine's own files",
            file.display(),
            data_dir.display()
        )));
    }
    Ok(())
}

fn print_progress(p: &Progress) {
    println!(
        "{:>12} {:>9.0} {:>9.0} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.2} {:>8.1} {:>7}",
        p.total_ops,
        p.ops_per_second,
        p.rows_per_second,
        p.latency_ms_mean,
        p.latency_ms_p50,
        p.latency_ms_p95,
        p.latency_ms_p99,
        p.latency_ms_p999,
        p.latency_ms_max,
        p.elapsed_seconds,
        p.failed_ops
    );
}

fn print_summary(s: &Summary, args: &StressArgs) {
    let secs = s.duration_seconds;
    println!();
    println!("Results ({}):", s.mode);
    println!("Op rate                   : {:>12.0} op/s", s.op_rate);
    println!("Row rate                  : {:>12.0} row/s", s.row_rate);
    println!("Value rate                : {:>12.1} MiB/s", s.mib_rate);
    println!("Latency mean              : {:>12.3} ms", s.latency_ms.mean);
    println!("Latency median            : {:>12.3} ms", s.latency_ms.p50);
    println!("Latency 95th percentile   : {:>12.3} ms", s.latency_ms.p95);
    println!("Latency 99th percentile   : {:>12.3} ms", s.latency_ms.p99);
    println!("Latency 99.9th percentile : {:>12.3} ms", s.latency_ms.p999);
    println!("Latency max               : {:>12.3} ms", s.latency_ms.max);
    println!("Total partitions          : {:>12}", s.total_ops);
    println!("Total rows                : {:>12}", s.total_rows);
    println!("Failed operations         : {:>12}", s.failed_ops);
    if matches!(args.mode, Mode::Mixed | Mode::User) {
        println!("Writes                    : {:>12}", s.write_ops);
        println!("Reads                     : {:>12}", s.read_ops);
    }
    if args.mode == Mode::User {
        println!("Queries returning no rows : {:>12}", s.misses);
    } else if matches!(args.mode, Mode::Read | Mode::Mixed) {
        // Blob workload: rows are blocks, "wrong" is a failed checksum or content.
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
    fn ratios_rates_and_durations_parse_or_say_why() {
        assert_eq!(parse_ratio("write=1,read=3").unwrap(), (1, 3));
        assert_eq!(parse_ratio("read=2").unwrap(), (0, 2));
        for bad in [
            "write=0,read=0",
            "write=x",
            "scan=1",
            "write",
            "write=2000000",
        ] {
            let e = parse_ratio(bad).unwrap_err().to_string();
            assert!(e.contains("--ratio"), "{bad}: {e}");
        }
        let r = parse_rate("fixed=1000/s").unwrap();
        assert!(r.fixed && r.ops_per_second == 1000.0);
        assert!(!parse_rate("throttle=5/s").unwrap().fixed);
        for bad in [
            "fixed=0/s",
            "fixed=1e12/s",
            "steady=5/s",
            "fixed=NaN/s",
            "fixed=inf/s",
        ] {
            assert!(parse_rate(bad).is_err(), "{bad}");
        }
        assert_eq!(parse_duration("10s").unwrap().as_secs(), 10);
        assert_eq!(parse_duration("2h").unwrap().as_secs(), 7200);
        for bad in ["0s", "8d", "10", "s", "99999999999999999999d", "5w"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn timed_runs_take_a_population_and_refuse_a_count() {
        let a = parse(&["write", "--duration", "10s"]).unwrap();
        let c = a.config().unwrap();
        assert_eq!(c.partitions, Some(DEFAULT_TIMED_PARTITIONS));
        let a = parse(&["write", "--duration", "10s", "-n", "5"]).unwrap();
        assert!(a.config().is_err());
        let a = parse(&["write", "--ratio", "write=1"]).unwrap();
        assert!(a.config().unwrap_err().to_string().contains("mixed"));
    }
}
