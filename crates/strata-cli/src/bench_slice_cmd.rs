//! `strata bench slice`: argument parsing and printing for the slice-read
//! experiment, which lives in the library (`strata_bench::slice`, where the
//! table, the four slices and the checks are described).

use crate::bounds::range;
use clap::Args;
use std::path::PathBuf;
use strata::{Error, Result};
use strata_bench::slice::{self as bench_slice, SliceBenchOptions};
use strata_bench::workdir::{write_new_or_regular, WorkDir};

#[derive(Args, Debug)]
pub struct SliceBenchArgs {
    /// Partition sizes in rows, comma separated, each at least 20, at most
    /// 10,000,000 rows in all.
    #[arg(long, value_delimiter = ',', default_value = "1000,100000,1000000",
          value_parser = range(bench_slice::MIN_ROWS_PER_PARTITION, bench_slice::MAX_TOTAL_ROWS,
              "every size is loaded into memory at once; 20 rows make two distinct slices"))]
    pub rows: Vec<u64>,
    /// Keep repeating each case for at least this many milliseconds, at most
    /// 600000.
    #[arg(long, default_value_t = 300, value_parser = range(0u64, bench_slice::MAX_MILLIS_PER_CASE,
        "ten minutes per case measures nothing a shorter run does not"))]
    pub min_millis: u64,
    /// Where the benchmark creates its own work directory, removed at the end
    /// (default: the system temp dir); nothing else in it is touched.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the work directory.
    #[arg(long)]
    pub keep: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn run(args: SliceBenchArgs) -> Result<()> {
    let opts = SliceBenchOptions {
        rows_per_partition: args.rows.clone(),
        min_millis_per_case: args.min_millis,
    };
    // Argument errors before anything is created (crate invariant 3).
    opts.validate()?;
    let mut work = WorkDir::create_on_disk_default(args.dir.as_deref(), "slice")?;
    if args.keep {
        work.keep();
        eprintln!("data directories kept in {}", work.path().display());
    }
    let report = bench_slice::run(work.path(), &opts);
    drop(work);
    let report = report?;
    println!(
        "{:>10} {:<9} {:<7} {:<8} {:>12} {:>7}",
        "rows", "source", "slice", "dir", "us/read", "reads"
    );
    for c in &report.cases {
        println!(
            "{:>10} {:<9} {:<7} {:<8} {:>12.2} {:>7}",
            c.rows_per_partition, c.source, c.position, c.direction, c.micros_per_read, c.reads
        );
    }
    if let Some(path) = &args.json {
        let text = serde_json::to_string_pretty(&report)
            .map_err(|e| Error::InvalidInput(format!("JSON: {e}")))?;
        write_new_or_regular(path, text.as_bytes())?;
    }
    Ok(())
}
