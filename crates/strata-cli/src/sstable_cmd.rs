//! `strata sstable metadata|scrub|import|expiredblockers`: tools for single
//! sstable files (Cassandra's `sstablemetadata`, offline `sstablescrub`,
//! `nodetool import`, `sstableexpiredblockers`).
//! The work is in `strata::sstable`, `strata::maintenance::scrub_file` and
//! `strata::repair::import_sstables`; this file parses, calls and prints.
//!
//! `metadata` and `scrub` take a file, not a table: they open no database and
//! take no lock, so they work on a copy, beside a running owner, or on a file
//! whose table is gone. `scrub` only reads its input. `import` changes a table
//! and so opens the data directory as its owner.

use crate::format::OutputArgs;
use clap::Subcommand;
use serde_json::json;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::fs::Fs;
use strata::sstable::salvage::read_identity_header;
use strata::sstable::{SSTableIdentity, SSTableReader};
use strata::{repair, Error, Result};

use crate::datadir::{DataDirArgs, DataDirUse};
use crate::open_db;

#[derive(Subcommand, Debug)]
pub enum SstableCommand {
    /// Prints a file's format version, identity (table, generation, columns),
    /// statistics and key range. A file whose tail is damaged still shows its
    /// identity header.
    Metadata {
        file: PathBuf,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Prints an sstable's contents as JSON, as Cassandra's `sstabledump` does:
    /// every partition, row, cell, tombstone and expired cell the file stores,
    /// nothing merged. TARGET is a `*-Data.db` file (read alone), or
    /// `keyspace.table`: each of the table's sstables in turn, opened
    /// read-only (beside a running server too, without its unflushed writes).
    Dump {
        /// A `*-Data.db` file, or `keyspace.table`.
        target: String,
        /// Only this partition (`sstabledump -k`): its key as a CQL value,
        /// a key of several columns as their values joined by ':'.
        #[arg(long, short = 'k')]
        key: Option<String>,
        /// Timestamps and deletion times as numbers (microseconds and
        /// seconds since the epoch) instead of ISO-8601 (`sstabledump -t`).
        #[arg(long, short = 't')]
        raw_timestamps: bool,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Offline salvage: writes every intact partition of a possibly damaged
    /// sstable into a new sstable in --out (works when the tail is destroyed,
    /// for format version 2). Adopt the result with `strata sstable import`.
    Scrub {
        file: PathBuf,
        /// Directory for the salvaged sstable (must exist).
        #[arg(long)]
        out: PathBuf,
        /// Generation (sstable id) of the output; default: the input's own.
        #[arg(long, value_parser = crate::bounds::range(1u64, u64::MAX,
            "sstable ids start at 1"))]
        generation: Option<u64>,
        #[command(flatten)]
        output: OutputArgs,
    },
    /// Adopts sstable files into a table after checking their columns and
    /// reading every partition (Cassandra's `nodetool import`); each becomes a
    /// new level-0 sstable of the table. Cassandra sstables (their
    /// `*-Data.db`, `ma` to `nb`, `oa`, `da`) are read and rewritten as
    /// Strata's, all or none.
    Import {
        /// `keyspace.table`.
        target: String,
        #[arg(required = true)]
        files: Vec<PathBuf>,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// For each fully expired sstable still on disk: what blocks its drop, per
    /// Cassandra's overlap rule, and what the row-level check found in each
    /// blocker (docs/compaction/twcs.md, "Out-of-order writes"). Opens the data
    /// directory read-only: works beside a running owner, but does not see its
    /// unflushed writes.
    Expiredblockers {
        /// `keyspace.table` (or a keyspace, or nothing for every table).
        target: Option<String>,
        #[command(flatten)]
        output: OutputArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
}

impl SstableCommand {
    /// `import` changes a table and opens the data directory; `metadata` and
    /// `scrub` work on a file alone.
    pub fn data_dir_use(&self) -> DataDirUse<'_> {
        match self {
            SstableCommand::Metadata { .. } => DataDirUse::NotThisSubcommand("sstable metadata"),
            SstableCommand::Dump { target, .. } if Path::new(target).is_file() => {
                DataDirUse::NotThisSubcommand("sstable dump FILE")
            }
            SstableCommand::Dump { db, .. } => DataDirUse::Opens(db),
            SstableCommand::Scrub { .. } => DataDirUse::NotThisSubcommand("sstable scrub"),
            SstableCommand::Import { db, .. } | SstableCommand::Expiredblockers { db, .. } => {
                DataDirUse::Opens(db)
            }
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

pub fn run(data_dir: &Path, cmd: SstableCommand) -> Result<()> {
    match cmd {
        SstableCommand::Metadata { file, output } => metadata(&file, output),
        SstableCommand::Dump {
            target,
            key,
            raw_timestamps,
            ..
        } => dump(data_dir, &target, key.as_deref(), raw_timestamps),
        SstableCommand::Scrub {
            file,
            out,
            generation,
            output,
        } => scrub(&file, &out, generation, output),
        SstableCommand::Import {
            target,
            files,
            output,
            ..
        } => import(data_dir, &target, &files, output),
        SstableCommand::Expiredblockers { target, output, .. } => {
            expired_blockers(data_dir, target.as_deref(), output)
        }
    }
}

/// `strata sstable dump`: a file alone, or each sstable of a table.
fn dump(data_dir: &Path, target: &str, key: Option<&str>, raw_timestamps: bool) -> Result<()> {
    use std::io::Write;
    use strata::sstable::dump::{dump as dump_file, file_schema, DumpOptions};
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::new(stdout.lock());
    let io = |e: std::io::Error| Error::InvalidInput(format!("writing the dump: {e}"));
    let options = |reader: &SSTableReader| -> Result<DumpOptions> {
        let key = match key {
            None => None,
            Some(k) => Some(file_schema(reader)?.parse_partition_key(k)?),
        };
        Ok(DumpOptions {
            key,
            raw_timestamps,
        })
    };
    let file = Path::new(target);
    if file.is_file() {
        let id = file
            .file_name()
            .and_then(|n| strata::sstable::parse_data_file_name(&n.to_string_lossy()))
            .unwrap_or(0);
        let reader = Arc::new(SSTableReader::open(&Fs::new(), file, id, None)?);
        dump_file(&reader, &options(&reader)?, &mut out)?;
        return out.flush().map_err(io);
    }
    let (ks, name) = target.split_once('.').ok_or_else(|| {
        Error::InvalidInput(format!("{target} is neither a file nor keyspace.table"))
    })?;
    let db = crate::open_db_read_only(data_dir)?;
    let table = db.table(ks, name)?;
    let view = table.view();
    out.write_all(b"[").map_err(io)?;
    for (i, live) in view.version.iter().enumerate() {
        let reader = &live.handle;
        let sep = if i == 0 { "\n" } else { ",\n" };
        let path = serde_json::to_string(&reader.path().display().to_string()).unwrap_or_default();
        write!(out, "{sep}{{ \"sstable\" : {path},\n  \"partitions\" : ").map_err(io)?;
        dump_file(reader, &options(reader)?, &mut out)?;
        out.write_all(b"}").map_err(io)?;
    }
    out.write_all(if view.version.is_empty() {
        b"]\n"
    } else {
        b"\n]\n"
    })
    .map_err(io)?;
    drop(view);
    out.flush().map_err(io)?;
    db.close()
}

/// A write time from a JSON report as ISO-8601 UTC.
fn micros_text(v: &serde_json::Value) -> String {
    v.as_i64()
        .map(strata::types::iso8601_micros)
        .unwrap_or_else(|| v.to_string())
}

fn expired_blockers(data_dir: &Path, target: Option<&str>, output: OutputArgs) -> Result<()> {
    let db = crate::remote::open_admin_db_read_only(data_dir)?;
    let mut report = Vec::new();
    for t in crate::select_tables(&db, target)? {
        let schema = t.schema();
        report.push(json!({
            "table": schema.qualified_name(),
            "expired": t.expired_blockers(),
        }));
    }
    if output.print_report(&report)? {
        return Ok(());
    }
    for entry in &report {
        outln!("Table: {}", entry["table"].as_str().unwrap_or("?"));
        let Some(checks) = entry["expired"].as_array() else {
            continue;
        };
        if checks.is_empty() {
            outln!("  no fully expired sstable on disk");
        }
        for c in checks {
            let blockers = c["blockers"].as_array().cloned().unwrap_or_default();
            let blocking: Vec<&serde_json::Value> = blockers
                .iter()
                .filter(|b| !b["blocks_because"].is_null())
                .collect();
            let verdict = if blockers.is_empty() {
                "no blocker counts against it: dropped at the strategy's next expiry check"
            } else if blocking.is_empty() {
                "the overlap rule names blockers, the row-level check clears them all: dropped at the next check"
            } else {
                "blocked"
            };
            outln!(
                "  sstable {} (newest write {}): {verdict}",
                c["candidate"],
                micros_text(&c["candidate_max_timestamp_micros"])
            );
            for b in &blockers {
                let why = b["blocks_because"]
                    .as_str()
                    .unwrap_or("no shadowable data in common (cleared)");
                outln!(
                    "    {} {} (oldest write {}): {why}",
                    b["kind"].as_str().unwrap_or("?"),
                    b["id"],
                    micros_text(&b["min_timestamp_micros"])
                );
            }
        }
    }
    Ok(())
}

fn print_identity(i: &SSTableIdentity) {
    outln!(
        "Table: {} (table id {}), generation {}",
        i.qualified_name(),
        i.table_id,
        i.generation
    );
    outln!(
        "Chunk length: {} bytes, codec {:?}, encoding base: timestamp {} us, deletion {} s, ttl {} s",
        i.chunk_length_bytes, i.codec, i.min_timestamp, i.min_local_deletion, i.min_ttl
    );
    outln!("Columns:");
    for c in &i.columns {
        let id = c.id.map(|id| format!(" (id {id})")).unwrap_or_default();
        outln!("  {} {} {}{id}", c.name, c.type_name(), c.role.describe());
    }
}

fn metadata(file: &Path, output: OutputArgs) -> Result<()> {
    let fs = Fs::new();
    let id = file
        .file_name()
        .and_then(|n| strata::sstable::parse_data_file_name(&n.to_string_lossy()))
        .unwrap_or(0);
    let reader = match SSTableReader::open(&fs, file, id, None) {
        Ok(r) => r,
        // Nothing there to salvage: say so plainly.
        Err(e) if !file.is_file() => return Err(e),
        Err(open_error) => {
            // The tail does not open: show what the header says, then fail.
            let header = read_identity_header(&fs, file);
            if !output.is_table() {
                let v = json!({
                    "file": file,
                    "opens": false,
                    "open_error": open_error.to_string(),
                    "format_version": header.as_ref().ok().map(|h| h.1),
                    "identity": header.as_ref().ok().map(|h| &h.0),
                });
                output.print_report(&v)?;
            } else if let Ok((identity, version)) = &header {
                outln!("SSTable: {}", file.display());
                outln!("Format version: {version} (from the identity header)");
                print_identity(identity);
            }
            return Err(Error::InvalidInput(format!(
                "{} does not open ({open_error}); `strata sstable scrub` salvages it",
                file.display()
            )));
        }
    };
    let st = reader.stats();
    if !output.is_table() {
        let v = json!({
            "file": file,
            "opens": true,
            "format_version": reader.format_version(),
            "identity": reader.identity(),
            "file_size_bytes": reader.file_size(),
            "chunk_count": reader.chunk_count(),
            "index_block_count": reader.index_block_count(),
            // Where the data begins: after the identity header (version 2).
            "first_chunk_offset": reader.chunk_ranges().first().map(|c| c.0),
            "partition_count": st.partition_count,
            "row_count": st.row_count,
            "cell_count": st.cell_count,
            "tombstone_count": st.tombstone_count,
            "uncompressed_bytes": st.uncompressed_bytes,
            "compressed_bytes": st.compressed_bytes,
            "min_timestamp_micros": st.min_timestamp_micros,
            "max_timestamp_micros": st.max_timestamp_micros,
            "level": st.level,
            "codec": st.codec,
            "creation_time_seconds": st.creation_time_seconds,
            "first_token": st.first_key.token,
            "first_key_hex": hex(&st.first_key.key),
            "last_token": st.last_key.token,
            "last_key_hex": hex(&st.last_key.key),
            // Format version 5 on; null before (unknown: read for every slice).
            "clustering_coverage": st.coverage.as_ref().map(|c| json!({
                "min_clustering_hex": c.rows.as_ref().map(|r| hex(&r.0)),
                "max_clustering_hex": c.rows.as_ref().map(|r| hex(&r.1)),
                "beyond_rows": c.beyond_rows,
            })),
        });
        output.print_report(&v)?;
        return Ok(());
    }
    outln!("SSTable: {}", file.display());
    outln!("Format version: {}", reader.format_version());
    match reader.identity() {
        Some(i) => print_identity(i),
        None => outln!("Identity: none (format version 1)"),
    }
    outln!(
        "Size: {} bytes, {} chunks, {} index blocks",
        reader.file_size(),
        reader.chunk_count(),
        reader.index_block_count()
    );
    outln!(
        "Partitions: {}, rows {}, cells {}, tombstones {}",
        st.partition_count,
        st.row_count,
        st.cell_count,
        st.tombstone_count
    );
    outln!(
        "Data: {} bytes uncompressed, {} stored ({:?}), level {}",
        st.uncompressed_bytes,
        st.compressed_bytes,
        st.codec,
        st.level
    );
    outln!(
        "Timestamps: {} .. {} ({} .. {} us)",
        strata::types::iso8601_micros(st.min_timestamp_micros),
        strata::types::iso8601_micros(st.max_timestamp_micros),
        st.min_timestamp_micros,
        st.max_timestamp_micros
    );
    outln!(
        "First key: token {} key {}",
        st.first_key.token,
        hex(&st.first_key.key)
    );
    outln!(
        "Last key: token {} key {}",
        st.last_key.token,
        hex(&st.last_key.key)
    );
    match &st.coverage {
        None => outln!("Clustering span: not recorded (format version 4 or older)"),
        Some(c) => outln!(
            "Clustering span: {}{}",
            c.rows
                .as_ref()
                .map_or("no rows".to_string(), |(min, max)| format!(
                    "{} .. {}",
                    hex(min),
                    hex(max)
                )),
            if c.beyond_rows {
                " (and partition deletions, range tombstones or static rows: read for every slice)"
            } else {
                ""
            }
        ),
    }
    Ok(())
}

fn scrub(file: &Path, out: &Path, generation: Option<u64>, output: OutputArgs) -> Result<()> {
    // The output's creation time; the CLI, not the engine, reads the system clock.
    let now_seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs() as i64);
    let report = strata::maintenance::scrub_file(&Fs::new(), file, out, generation, now_seconds)?;
    if output.print_report(&report)? {
        return Ok(());
    }
    let s = &report.salvage;
    let c = &s.counts;
    outln!("Salvage of {}", file.display());
    if let Some(i) = &s.identity {
        outln!(
            "  table {} (table id {}), generation {}",
            i.qualified_name(),
            i.table_id,
            i.generation
        );
    }
    if s.tail_intact {
        outln!("  the file opens: chunks located through its chunk table");
    } else {
        outln!(
            "  the file does not open ({}): chunks found by their checksums",
            s.open_error.as_deref().unwrap_or("?")
        );
    }
    match s.partitions_expected {
        Some(n) => outln!(
            "  partitions recovered: {} of {n} ({} lost)",
            c.partitions_recovered,
            n.saturating_sub(c.partitions_recovered)
        ),
        None => outln!(
            "  partitions recovered: {} (the count written is unknown: the statistics are gone)",
            c.partitions_recovered
        ),
    }
    outln!(
        "  chunks read: {}, chunks lost: {}, file bytes lost: {}, data bytes skipped: {}",
        c.chunks_read,
        c.chunks_lost,
        c.file_bytes_lost,
        c.data_bytes_skipped
    );
    for d in &report.damaged_regions {
        outln!("  damage at offset {}: {}", d.offset, d.reason);
    }
    match &report.output {
        Some(p) => outln!(
            "  written to {}; adopt it with `strata sstable import <keyspace.table> {}`",
            p.display(),
            p.display()
        ),
        None => outln!("  nothing intact to write"),
    }
    Ok(())
}

/// A Cassandra sstable's Data.db (`nb-1-big-Data.db`, `da-1-bti-Data.db`),
/// as its name says.
fn cassandra_data_file(path: &Path) -> Option<strata::cassandra::reader::SSTableName> {
    path.file_name()
        .and_then(|n| n.to_str())
        .and_then(strata::cassandra::reader::SSTableName::parse_data)
}

/// Cassandra sstables given to `sstable import`: all from one directory,
/// imported together as `strata import --from-cassandra` imports them (all
/// or nothing), into a table that exists.
fn import_cassandra(
    data_dir: &Path,
    target: &str,
    files: &[PathBuf],
    output: OutputArgs,
) -> Result<()> {
    let (ks, name) = crate::split_table_name(target)?;
    let dir = files[0].parent().map(Path::to_path_buf).unwrap_or_default();
    let mut names = Vec::new();
    for f in files {
        if f.parent().map(Path::to_path_buf).unwrap_or_default() != dir {
            return Err(Error::InvalidInput(format!(
                "{} and {}: Cassandra sstables are imported from one directory at a time",
                files[0].display(),
                f.display()
            )));
        }
        names.extend(cassandra_data_file(f));
    }
    let db = open_db(data_dir)?;
    let result = db
        .table(ks, name)
        .and_then(|t| strata::cassandra::import::import_sstables(&t, &dir, names, &mut |_, _| {}));
    let closed = db.close();
    let summary = result?;
    closed?;
    if output.print_report(&summary)? {
        return Ok(());
    }
    outln!(
        "{}.{}: {} Cassandra sstable(s) imported",
        summary.keyspace,
        summary.table,
        summary.sstables.len()
    );
    for s in &summary.sstables {
        outln!(
            "  {} ({}) -> sstable {} ({} partitions)",
            s.source.display(),
            s.version,
            s.strata_id,
            s.partitions
        );
    }
    Ok(())
}

fn import(data_dir: &Path, target: &str, files: &[PathBuf], output: OutputArgs) -> Result<()> {
    let cassandra = files
        .iter()
        .filter(|f| cassandra_data_file(f).is_some())
        .count();
    if cassandra == files.len() {
        return import_cassandra(data_dir, target, files, output);
    }
    if cassandra > 0 {
        return Err(Error::InvalidInput(
            "Strata and Cassandra sstables in one import: import them separately".into(),
        ));
    }
    let (ks, name) = crate::split_table_name(target)?;
    let db = open_db(data_dir)?;
    let result = db
        .table(ks, name)
        .and_then(|t| repair::import_sstables(&t, files));
    let closed = db.close();
    let report = result?;
    closed?;
    if output.print_report(&report)? {
        return Ok(());
    }
    outln!(
        "{}: {} sstable(s) imported",
        report.table,
        report.imported.len()
    );
    for (path, id, partitions) in &report.imported {
        outln!(
            "  {} -> sstable {id} ({partitions} partitions)",
            path.display()
        );
    }
    Ok(())
}
