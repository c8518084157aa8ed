//! `strata bench slice`: argument parsing and printing for the slice-read
//! experiment, which lives in the library (`strata_bench::slice`, where the
//! table, the four slices and the checks are described).

use clap::Args;
use std::path::PathBuf;
use strata::{Error, Result};
use strata_bench::slice::{self as bench_slice, SliceBenchOptions};

#[derive(Args, Debug)]
pub struct SliceBenchArgs {
    /// Partition sizes in rows, comma separated.
    #[arg(long, value_delimiter = ',', default_value = "1000,100000,1000000")]
    pub rows: Vec<u64>,
    /// Keep repeating each case for at least this many milliseconds.
    #[arg(long, default_value_t = 300)]
    pub min_millis: u64,
    /// Parent of the per-size data directories (default: the system temp dir).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Keep the data directories.
    #[arg(long)]
    pub keep: bool,
    /// Also write the results as JSON to this file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

pub fn run(args: SliceBenchArgs) -> Result<()> {
    let dir = match &args.dir {
        Some(d) => d.clone(),
        None => std::env::temp_dir().join(format!("strata-bench-slice-{}", std::process::id())),
    };
    let opts = SliceBenchOptions {
        rows_per_partition: args.rows.clone(),
        min_millis_per_case: args.min_millis,
    };
    let report = bench_slice::run(&dir, &opts);
    if !args.keep {
        let _ = std::fs::remove_dir_all(&dir);
    }
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
        std::fs::write(path, text).map_err(|e| Error::io(path, e))?;
    }
    Ok(())
}
