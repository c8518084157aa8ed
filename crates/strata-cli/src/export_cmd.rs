//! `strata export ks.table --format cassandra --out DIR`: the table's data as
//! Apache Cassandra sstables (library `strata::cassandra::export`), with a
//! progress bar on a terminal and a summary (or `--json`) at the end.

use clap::{Args, ValueEnum};
use std::path::{Path, PathBuf};
use strata::cassandra::export::{export_table, ExportOptions, ExportSummary};
use strata::cassandra::nb::NbCompression;
use strata::Result;

use crate::bounds::range;
use crate::{open_db, split_table_name};

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExportFormat {
    /// Cassandra 4.0/5.0 BIG sstables (version `nb`), for `nodetool import`
    /// and `sstableloader`.
    Cassandra,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ExportCompression {
    /// The table's own compressor (LZ4 or Zstd; dictionaries are left out).
    Table,
    Lz4,
    Zstd,
    None,
}

#[derive(Args, Debug, Clone)]
pub struct ExportArgs {
    /// `keyspace.table`.
    pub table: String,
    /// What to write.
    #[arg(long, value_enum)]
    pub format: ExportFormat,
    /// Directory that receives `<keyspace>/<table>/` (sstables and
    /// schema.cql); the table directory must not hold files yet.
    #[arg(long)]
    pub out: PathBuf,
    /// Compression of the written data [default: table].
    #[arg(long, value_enum, default_value = "table")]
    pub compression: ExportCompression,
    /// Zstd level with `--compression zstd`, -7 to 22 [default: 3].
    #[arg(long, allow_hyphen_values = true, value_parser = range(-7i64, 22,
        "zstd's levels run from -7 (fastest) to 22"))]
    pub zstd_level: Option<i64>,
    /// Start a new sstable once one holds this much uncompressed data, MiB,
    /// 1 to 1048576 [default: 1024].
    #[arg(long, value_parser = range(1u64, 1 << 20, "at most 1 TiB per sstable"))]
    pub sstable_size_mb: Option<u64>,
    /// Print the summary as JSON on stdout.
    #[arg(long)]
    pub json: bool,
}

pub fn run(data_dir: &Path, args: ExportArgs) -> Result<()> {
    let (ks, name) = split_table_name(&args.table)?;
    if args.zstd_level.is_some() && !matches!(args.compression, ExportCompression::Zstd) {
        return Err(strata::Error::InvalidInput(
            "--zstd-level applies to --compression zstd only".into(),
        ));
    }
    let compression = match args.compression {
        ExportCompression::Table => None,
        ExportCompression::Lz4 => Some(NbCompression::Lz4),
        ExportCompression::None => Some(NbCompression::None),
        ExportCompression::Zstd => Some(NbCompression::Zstd {
            level: args.zstd_level.unwrap_or(3) as i32,
        }),
    };
    let ExportFormat::Cassandra = args.format;
    let opts = ExportOptions {
        out: args.out.clone(),
        compression,
        max_sstable_bytes: args.sstable_size_mb.unwrap_or(1024) << 20,
    };
    let bar = crate::terminal_bar(
        !args.json,
        "exporting {bar:40} {pos}/{len} partitions read, ETA {eta}",
    );
    let db = open_db(data_dir)?;
    let mut progress = |done: u64, total: u64| crate::show_progress(&bar, done, total);
    let summary = export_table(&db, ks, name, &opts, &mut progress);
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = summary?;
    db.close()?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&summary)
                .map_err(|e| strata::Error::InvalidInput(e.to_string()))?
        );
    } else {
        print_summary(&summary);
    }
    Ok(())
}

fn print_summary(s: &ExportSummary) {
    println!(
        "exported {}.{} to {}: {} sstable(s), {} partitions, {} rows, {} cells, \
         {} tombstones, {} range-tombstone markers",
        s.keyspace,
        s.table,
        s.directory.display(),
        s.sstables.len(),
        s.partitions,
        s.rows,
        s.cells,
        s.tombstones,
        s.range_tombstone_markers
    );
    println!(
        "  {} bytes of data ({} uncompressed, {}), {:.1} s",
        s.bytes, s.uncompressed_bytes, s.compression, s.seconds
    );
    println!(
        "  create the table in Cassandra with: {}",
        s.schema_file.display()
    );
    for o in &s.options_not_carried {
        println!("  not carried: {o}");
    }
    println!(
        "  then: nodetool import {} {} {}   (or sstableloader -d HOST {})",
        s.keyspace,
        s.table,
        s.directory.display(),
        s.directory.display()
    );
}
