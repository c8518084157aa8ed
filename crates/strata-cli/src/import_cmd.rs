//! `strata import --from-cassandra DIR ks.table`: a Cassandra snapshot's
//! sstables into a table (library `strata::cassandra::import`), creating the
//! keyspace and the table from the snapshot's `schema.cql` when the table
//! does not exist yet. A progress bar on a terminal, a summary (or `--json`)
//! at the end.

use clap::Args;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::cassandra::import::{import_dir, import_sstables, ImportSummary};
use strata::cassandra::reader::SSTableName;
use strata::query::{QueryParams, Session};
use strata::{Error, Result};

use crate::{open_db, split_table_name};

#[derive(Args, Debug, Clone)]
pub struct ImportArgs {
    /// A directory of Cassandra sstables (a `nodetool snapshot` directory,
    /// with its schema.cql) or one `*-Data.db` file.
    #[arg(long = "from-cassandra", value_name = "DIR")]
    pub from: PathBuf,
    /// `keyspace.table` to import into.
    pub table: String,
    #[command(flatten)]
    pub output: crate::format::OutputArgs,
}

pub fn run(data_dir: &Path, args: ImportArgs) -> Result<()> {
    let (ks, name) = split_table_name(&args.table)?;
    let (dir, only) = if args.from.is_file() {
        let file = args
            .from
            .file_name()
            .and_then(|n| n.to_str())
            .and_then(SSTableName::parse_data)
            .ok_or_else(|| {
                Error::InvalidInput(format!(
                    "{}: not a Cassandra Data.db file (named like nb-1-big-Data.db)",
                    args.from.display()
                ))
            })?;
        let dir = args
            .from
            .parent()
            .map(Path::to_path_buf)
            .unwrap_or_default();
        (dir, Some(file))
    } else {
        (args.from.clone(), None)
    };
    let db = Arc::new(open_db(data_dir)?);
    let created = if db.table(ks, name).is_err() {
        Some(create_from_snapshot(&db, &dir, ks, name)?)
    } else {
        None
    };
    let table = db.table(ks, name)?;
    let bar = crate::terminal_bar(
        args.output.is_table(),
        "importing {bar:40} {bytes}/{total_bytes} read (each file twice: checked, then written), ETA {eta}",
    );
    let mut progress = |done: u64, total: u64| crate::show_progress(&bar, done, total);
    let summary = match only {
        Some(n) => import_sstables(&table, &dir, vec![n], &mut progress),
        None => import_dir(&table, &dir, &mut progress),
    };
    if let Some(b) = &bar {
        b.finish_and_clear();
    }
    let summary = summary?;
    drop(table);
    match Arc::try_unwrap(db) {
        Ok(db) => db.close()?,
        Err(_) => return Err(Error::InvalidInput("the database is still in use".into())),
    }
    if !args.output.is_table() {
        let mut v =
            serde_json::to_value(&summary).map_err(|e| Error::InvalidInput(e.to_string()))?;
        v["table_created"] = serde_json::json!(created.is_some());
        v["schema_changes"] = serde_json::json!(created.unwrap_or_default());
        args.output.print_report(&v)?;
    } else {
        print_summary(&summary, created);
    }
    Ok(())
}

/// Cassandra compressors Strata does not write, and why the created table
/// uses LZ4 instead (the imported data is read whatever its compressor).
const COMPRESSORS_REPLACED: [(&str, &str); 2] = [
    ("SnappyCompressor", "Strata has no Snappy compressor"),
    ("DeflateCompressor", "Strata has no Deflate compressor"),
];

/// Runs the snapshot's schema.cql (its CREATE TYPE and CREATE TABLE
/// statements), creating the keyspace first if it is missing; refuses if
/// the file does not define `ks.name`. Returns what was changed on the way
/// (a compressor Strata lacks becomes LZ4Compressor, and says so).
fn create_from_snapshot(
    db: &Arc<strata::db::Database>,
    dir: &Path,
    ks: &str,
    name: &str,
) -> Result<Vec<String>> {
    let path = dir.join("schema.cql");
    let text = std::fs::read_to_string(&path).map_err(|e| {
        Error::InvalidInput(format!(
            "table {ks}.{name} does not exist and {} cannot be read ({e}): create the table first",
            path.display()
        ))
    })?;
    let executor = crate::cql_cmd::embedded_executor(db)?;
    let mut session = Session::default();
    if db.catalog().keyspace(ks).is_err() {
        db.create_keyspace(ks)?;
    }
    let ranges = strata::cql::split_statements(&text)
        .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))?;
    let mut notes = Vec::new();
    for (start, end) in ranges {
        let mut stmt = text[start..end].trim().to_string();
        if stmt.is_empty() {
            continue;
        }
        for (class, why) in COMPRESSORS_REPLACED {
            if stmt.contains(class) {
                stmt = stmt
                    .replace(
                        &format!("org.apache.cassandra.io.compress.{class}"),
                        "LZ4Compressor",
                    )
                    .replace(class, "LZ4Compressor");
                notes.push(format!(
                    "compression {class}: {why}; the table uses LZ4Compressor (the data is read as it is)"
                ));
            }
        }
        let stmt = stmt.as_str();
        executor
            .query(&mut session, stmt, &QueryParams::default())
            .map_err(|e| {
                Error::InvalidInput(format!(
                    "{}: {}: {}",
                    path.display(),
                    first_line(stmt),
                    e.message
                ))
            })?;
    }
    db.table(ks, name).map_err(|_| {
        Error::InvalidInput(format!(
            "{} does not create table {ks}.{name}",
            path.display()
        ))
    })?;
    Ok(notes)
}

fn first_line(s: &str) -> &str {
    s.lines().next().unwrap_or(s)
}

fn print_summary(s: &ImportSummary, created: Option<Vec<String>>) {
    if let Some(notes) = created {
        println!(
            "created {}.{} from the snapshot's schema.cql",
            s.keyspace, s.table
        );
        for n in notes {
            println!("  {n}");
        }
    }
    println!(
        "imported {} Cassandra sstable(s) into {}.{}: {} partitions, {} rows, {} cells, \
         {} tombstones, {} bytes read, {:.1} s",
        s.sstables.len(),
        s.keyspace,
        s.table,
        s.partitions,
        s.rows,
        s.cells,
        s.tombstones,
        s.bytes,
        s.seconds
    );
}
