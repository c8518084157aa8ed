//! `strata`: the operator's command line for a Strata data directory.
//!
//! Every command opens the database in `--data-dir`, does its work and closes it
//! (flushing memtables: until the commit log lands, closing is what makes writes
//! durable). Commands that print figures print JSON with `--json`.

mod stress;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use strata::clock::SystemClock;
use strata::db::{Database, DbOptions};
use strata::table::Table;
use strata::types::{self, CqlType};

#[derive(Parser, Debug)]
#[command(
    name = "strata",
    version,
    about = "Strata: a wide-column LSM storage engine with Cassandra's data model"
)]
struct Cli {
    /// Data directory (created if missing).
    #[arg(long, global = true, default_value = "strata-data")]
    data_dir: PathBuf,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// A cassandra-stress-like load generator.
    Stress(stress::StressArgs),
    /// Per-table statistics, as `nodetool tablestats`.
    Tablestats {
        /// `keyspace` or `keyspace.table`; all tables when absent.
        target: Option<String>,
        #[arg(long)]
        json: bool,
    },
    /// Flushes memtables to sstables, as `nodetool flush`.
    Flush {
        /// `keyspace` or `keyspace.table`; all tables when absent.
        target: Option<String>,
    },
    /// Prints the Murmur3 token of a partition key value (Cassandra-compatible).
    Token {
        /// CQL type of the key, e.g. `bigint`, `text`, `uuid`.
        #[arg(value_name = "TYPE")]
        ty: String,
        /// The value, in CQL literal form (blobs as 0x...).
        value: String,
        #[arg(long)]
        json: bool,
    },
    /// Creates a table from a CQL `CREATE TABLE` statement (and its keyspace).
    CreateTable { cql: String },
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

pub(crate) fn open_db(dir: &std::path::Path) -> strata::Result<Database> {
    Database::open(dir, DbOptions::new(SystemClock::new()))
}

/// Tables named by `target` (`ks`, `ks.table`, or all).
pub(crate) fn select_tables(
    db: &Database,
    target: Option<&str>,
) -> strata::Result<Vec<Arc<Table>>> {
    match target {
        None => Ok(db.tables()),
        Some(t) => match t.split_once('.') {
            Some((ks, name)) => Ok(vec![db.table(ks, name)?]),
            None => {
                let tables: Vec<_> = db
                    .tables()
                    .into_iter()
                    .filter(|tb| tb.schema().keyspace == t)
                    .collect();
                if tables.is_empty() {
                    return Err(strata::Error::NotFound(format!("keyspace {t}")));
                }
                Ok(tables)
            }
        },
    }
}

pub(crate) fn print_tablestats(tables: &[Arc<Table>], json: bool) -> strata::Result<()> {
    let stats: Vec<_> = tables.iter().map(|t| t.stats()).collect();
    if json {
        let text = serde_json::to_string_pretty(&stats)
            .map_err(|e| strata::Error::InvalidInput(format!("JSON: {e}")))?;
        println!("{text}");
    } else {
        println!("Total number of tables: {}", stats.len());
        println!("----------------");
        for s in &stats {
            println!("Keyspace : {}", s.keyspace);
            print!("{}", s.to_text());
            println!("----------------");
        }
    }
    Ok(())
}

fn run(cli: Cli) -> strata::Result<()> {
    match cli.command {
        Command::Stress(args) => stress::run(&cli.data_dir, args),
        Command::Tablestats { target, json } => {
            let db = open_db(&cli.data_dir)?;
            let tables = select_tables(&db, target.as_deref())?;
            print_tablestats(&tables, json)?;
            db.close()
        }
        Command::Flush { target } => {
            let db = open_db(&cli.data_dir)?;
            for t in select_tables(&db, target.as_deref())? {
                t.flush()?;
            }
            db.close()
        }
        Command::Token { ty, value, json } => {
            let ty = CqlType::parse(&ty)?;
            let v = types::parse_value(ty, &value)?;
            let bytes = types::serialize(&v);
            if bytes.is_empty() {
                return Err(strata::Error::InvalidInput(
                    "a partition key cannot be empty".into(),
                ));
            }
            let token = strata::token::token_of(&bytes);
            if json {
                println!(
                    "{}",
                    serde_json::json!({ "type": ty.name(), "value": value, "token": token })
                );
            } else {
                println!("{token}");
            }
            Ok(())
        }
        Command::CreateTable { cql } => {
            let db = open_db(&cli.data_dir)?;
            let t = db.create_table_cql(&cql)?;
            println!("created {}", t.schema().qualified_name());
            db.close()
        }
    }
}
