//! `strata`: the operator's command line for a Strata data directory.
//!
//! Every command opens the database in `--data-dir`, does its work and closes it
//! (flushing memtables: until the commit log lands, closing is what makes writes
//! durable). Commands that print figures print JSON with `--json`.

mod admin;
mod bench_cmd;
mod compaction_cmd;
mod model_cmd;
mod repair_cmd;
mod sstable_cmd;
mod stress;

use clap::{Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use strata::db::Database;
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
    #[command(flatten)]
    commitlog: admin::CommitLogFlags,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// A cassandra-stress-like load generator.
    Stress(stress::StressArgs),
    /// Major compaction (or --user-defined), as `nodetool compact`.
    Compact(compaction_cmd::CompactArgs),
    /// Rewrites each sstable alone, purging what gc grace allows (`nodetool garbagecollect`).
    Garbagecollect(compaction_cmd::TargetJsonArgs),
    /// Pending and active compactions (`nodetool compactionstats`).
    Compactionstats(compaction_cmd::TargetJsonArgs),
    /// Past compactions (`nodetool compactionhistory`).
    Compactionhistory(compaction_cmd::TargetJsonArgs),
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
    /// Checks every checksum of every sstable, as `nodetool verify`; exits
    /// non-zero if anything is damaged.
    Verify(admin::VerifyArgs),
    /// Rewrites every sstable keeping every readable partition, as `nodetool scrub`.
    Scrub(admin::ScrubArgs),
    /// Hard-link snapshot of the tables' sstables, as `nodetool snapshot`.
    Snapshot(admin::SnapshotArgs),
    /// Lists snapshots with their true size, as `nodetool listsnapshots`.
    Listsnapshots(admin::ListSnapshotsArgs),
    /// Removes snapshots, as `nodetool clearsnapshot`.
    Clearsnapshot(admin::ClearSnapshotArgs),
    /// Commit-log tools: dump a segment, print the log's counters.
    #[command(subcommand)]
    Commitlog(admin::CommitlogCommand),
    /// Manifest repair: `manifest rebuild ks.table` after a lost MANIFEST.
    #[command(subcommand)]
    Manifest(repair_cmd::ManifestCommand),
    /// Schema repair: `schema rebuild` after a lost schema.json.
    #[command(subcommand)]
    Schema(repair_cmd::SchemaCommand),
    /// Files that open moved aside instead of deleting: `list`, `purge`.
    #[command(subcommand)]
    Quarantine(repair_cmd::QuarantineCommand),
    /// Single sstable files: `metadata FILE`, offline `scrub FILE --out DIR`,
    /// `import ks.table FILE...`.
    #[command(subcommand)]
    Sstable(sstable_cmd::SstableCommand),
    /// Whole-workload benchmarks.
    #[command(subcommand)]
    Bench(bench_cmd::BenchCommand),
    /// Analytical compaction model (seed 000): levels, write amplification,
    /// sstables per read, space; `model advise` ranks the choices.
    Model(model_cmd::ModelArgs),
    /// Runs the real compaction strategies over synthetic sstables in simulated time.
    Simulate(model_cmd::SimulateArgs),
}

fn main() -> ExitCode {
    // Rust ignores SIGPIPE, turning a closed stdout (`strata tablestats | head`)
    // into a panic in println!; a command-line tool should just exit.
    // SAFETY: setting a signal disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    admin::set_commitlog_flags(&cli.commitlog);
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Opens the data directory as its owner (takes the lock; refused while another
/// process owns it). Prints what open reported on stderr.
pub(crate) fn open_db(dir: &std::path::Path) -> strata::Result<Database> {
    report_warnings(Database::open(dir, admin::db_options())?)
}

/// Opens the data directory for inspection only: no lock, nothing written, works
/// beside a running owner and on a read-only file system (docs/DURABILITY.md,
/// "Ownership").
pub(crate) fn open_db_read_only(dir: &std::path::Path) -> strata::Result<Database> {
    let mut opts = admin::db_options();
    opts.read_only = true;
    report_warnings(Database::open(dir, opts)?)
}

fn report_warnings(db: Database) -> strata::Result<Database> {
    for w in db.warnings() {
        eprintln!("warning: {w}");
    }
    // --ignore-replay-errors must never skip records without a word.
    let replay = db.replay_stats();
    if replay.corrupt_records_skipped > 0 || !replay.corruptions.is_empty() {
        eprintln!(
            "warning: commit-log replay skipped {} damaged region(s), {} bytes \
             (--ignore-replay-errors); what they held is lost:",
            replay.corrupt_records_skipped, replay.corrupt_bytes_skipped
        );
        for c in &replay.corruptions {
            eprintln!("warning:   {c}");
        }
    }
    Ok(db)
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
        Command::Compact(args) => compaction_cmd::compact(&cli.data_dir, args),
        Command::Garbagecollect(args) => compaction_cmd::garbage_collect(&cli.data_dir, args),
        Command::Compactionstats(args) => compaction_cmd::compaction_stats(&cli.data_dir, args),
        Command::Compactionhistory(args) => compaction_cmd::compaction_history(&cli.data_dir, args),
        Command::Verify(args) => admin::verify(&cli.data_dir, args),
        Command::Scrub(args) => admin::scrub(&cli.data_dir, args),
        Command::Snapshot(args) => admin::snapshot(&cli.data_dir, args),
        Command::Listsnapshots(args) => admin::list_snapshots(&cli.data_dir, args),
        Command::Clearsnapshot(args) => admin::clear_snapshot(&cli.data_dir, args),
        Command::Commitlog(cmd) => admin::commitlog(&cli.data_dir, cmd),
        Command::Manifest(cmd) => repair_cmd::manifest(&cli.data_dir, cmd),
        Command::Schema(cmd) => repair_cmd::schema(&cli.data_dir, cmd),
        Command::Quarantine(cmd) => repair_cmd::quarantine(&cli.data_dir, cmd),
        Command::Sstable(cmd) => sstable_cmd::run(&cli.data_dir, cmd),
        Command::Bench(cmd) => bench_cmd::run(cmd),
        Command::Model(args) => model_cmd::run_model(args),
        Command::Simulate(args) => model_cmd::run_simulate(args),
        Command::Tablestats { target, json } => {
            let db = open_db_read_only(&cli.data_dir)?;
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
            // IF NOT EXISTS on an existing table succeeds without creating anything:
            // say which happened.
            let statement = strata::schema::CreateTableStatement::parse(&cql)?;
            let existed = db
                .table(&statement.schema.keyspace, &statement.schema.name)
                .is_ok();
            let t = db.create_table_cql(&cql)?;
            let verb = if existed {
                "exists already:"
            } else {
                "created"
            };
            println!("{verb} {}", t.schema().qualified_name());
            db.close()
        }
    }
}
