//! `strata`: the operator's command line for a Strata data directory (the
//! binary, src/bin/strata.rs, only calls [`main`]; tests walk [`Cli`]'s command tree).
//!
//! Commands that work on a data directory open the database in `--data-dir`, do
//! their work and close it; only they take the data-directory options, before or
//! after the subcommand (datadir.rs). `model`, `simulate`, `token`, `bench` and
//! the single-file tools open none. Commands that print figures print JSON with
//! `--json`. This crate parses, calls the library (`strata`, `strata_bench`) and
//! prints; it holds no engine or experiment logic.

#[macro_use]
mod remote;
mod admin;
mod bench_cmd;
pub mod bounds;
mod compaction_cmd;
mod config;
mod cql_cmd;
mod datadir;
mod export_cmd;
mod format;
mod import_cmd;
mod logging;
mod model_cmd;
mod node_cmd;
mod repair_cmd;
mod serve_cmd;
mod sstable_cmd;
mod stress;

use clap::{Parser, Subcommand};
use datadir::{DataDirArgs, DataDirUse};
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use strata::db::Database;
use strata::table::Table;
use strata::tablestats::TableStats;
use strata::types::{self, CqlType};

#[derive(Parser, Debug)]
#[command(
    name = "strata",
    version,
    about = "Strata: a wide-column LSM storage engine with Cassandra's data model"
)]
pub struct Cli {
    /// Data-directory options, accepted here (before the subcommand) for the
    /// commands that open a data directory; refused for the others.
    #[command(flatten)]
    data: DataDirArgs,
    /// Which log events to show: a level (error, warn, info, debug, trace,
    /// off; `info` shows every flush and compaction) or a filter such as
    /// `warn,strata::compaction=debug`. Default: STRATA_LOG, else RUST_LOG,
    /// else `warn` (commands, on stderr) or `info` (`serve`, into
    /// logs/strata.log in the data directory).
    #[arg(long, global = true, value_name = "LEVEL")]
    log_level: Option<String>,
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// A CQL shell (as cqlsh), connected to a server (HOST [PORT]) or on a
    /// data directory: `-e`, `-f FILE`, or an interactive prompt.
    Cql {
        #[command(flatten)]
        args: cql_cmd::CqlArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Serves the data directory to CQL clients (cqlsh, the drivers) on
    /// 127.0.0.1:9042 until SIGTERM or SIGINT, then flushes and closes it.
    Serve {
        #[command(flatten)]
        args: serve_cmd::ServeArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// A cassandra-stress-like load generator.
    Stress {
        #[command(flatten)]
        args: stress::StressArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Major compaction (or --user-defined), as `nodetool compact`.
    Compact {
        #[command(flatten)]
        args: compaction_cmd::CompactArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Rewrites each sstable alone, purging what gc grace allows (`nodetool garbagecollect`).
    Garbagecollect {
        #[command(flatten)]
        args: compaction_cmd::TargetJsonArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Pending and active compactions (`nodetool compactionstats`).
    Compactionstats {
        #[command(flatten)]
        args: compaction_cmd::TargetJsonArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Past compactions (`nodetool compactionhistory`).
    Compactionhistory {
        #[command(flatten)]
        args: compaction_cmd::TargetJsonArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Per-table statistics, as `nodetool tablestats`.
    Tablestats {
        /// `keyspace` or `keyspace.table`; all tables when absent.
        target: Option<String>,
        #[command(flatten)]
        out: format::OutputArgs,
        /// Sizes in KiB, MiB, GiB instead of bytes (nodetool's -H).
        #[arg(short = 'H', long = "human-readable")]
        human: bool,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Flushes memtables to sstables, as `nodetool flush`.
    Flush {
        /// `keyspace` or `keyspace.table`; all tables when absent.
        target: Option<String>,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// This node: host id, load, uptime, memory, cache, compaction
    /// throughput (`nodetool info`).
    Info(node_cmd::FormatArgs),
    /// This node's state, address, load and ownership (`nodetool status`):
    /// UN while a server runs, DN otherwise.
    Status(node_cmd::FormatArgs),
    /// Read and write latency, sstables per read, partition size and cell
    /// count at nodetool's percentiles (`nodetool tablehistograms`).
    Tablehistograms(node_cmd::HistogramsArgs),
    /// The live sstables that hold a partition (`nodetool getsstables`).
    Getsstables(node_cmd::GetsstablesArgs),
    /// Changes a running server's compaction throughput limit until it
    /// stops (`nodetool setcompactionthroughput`).
    Setcompactionthroughput(node_cmd::ThroughputArgs),
    /// The compaction throughput limit in effect (`nodetool getcompactionthroughput`).
    Getcompactionthroughput {
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Stops a running server's background compaction of the tables until
    /// it is enabled again or the server stops (`nodetool disableautocompaction`).
    Disableautocompaction(node_cmd::TargetArgs),
    /// Lets a running server compact the tables again (`nodetool enableautocompaction`).
    Enableautocompaction(node_cmd::TargetArgs),
    /// Whether each table compacts in the background (`nodetool statusautocompaction`).
    Statusautocompaction(node_cmd::TargetFormatArgs),
    /// Stops a running server's compactions (`nodetool stop COMPACTION`):
    /// they abort between partitions and keep their inputs.
    Stop(node_cmd::TargetArgs),
    /// Flushes every memtable (`nodetool drain`); a running server then stops
    /// serving and exits, as after SIGTERM.
    Drain {
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Prints the Murmur3 token of a partition key value (Cassandra-compatible).
    Token {
        /// CQL type of the key, e.g. `bigint`, `text`, `uuid`, `frozen<list<int>>`.
        #[arg(value_name = "TYPE")]
        ty: String,
        /// The value, in CQL literal form (blobs as 0x...).
        value: String,
        #[command(flatten)]
        out: format::OutputArgs,
    },
    /// Changes a table's options, the CQL way (`ALTER TABLE ks.t WITH ...`):
    /// `strata alter-table ks.t "compression = {'class': 'ZstdCompressor'}"`.
    /// New sstables use them; existing ones keep theirs until rewritten
    /// (`upgradesstables`, compaction), as in Cassandra.
    AlterTable {
        /// `keyspace.table`.
        table: String,
        /// The WITH clause: `option = value [AND option = value ...]`.
        options: String,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Creates a table from a CQL `CREATE TABLE` statement (and its keyspace).
    CreateTable {
        cql: String,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Checks every checksum of every sstable, as `nodetool verify`; exits
    /// non-zero if anything is damaged.
    Verify {
        #[command(flatten)]
        args: admin::VerifyArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Rewrites every sstable keeping every readable partition, as `nodetool scrub`.
    Scrub {
        #[command(flatten)]
        args: admin::ScrubArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Rewrites sstables whose compression or format differs from the table's,
    /// smallest first, within the disk space there is (`nodetool upgradesstables`).
    Upgradesstables {
        #[command(flatten)]
        args: admin::UpgradeArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Trains a compression dictionary on a sample of a table's sstables and
    /// makes it the one new sstables use (`nodetool traincompressiondictionary`).
    Traincompressiondictionary {
        #[command(flatten)]
        args: admin::TrainArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Writes a table's data as Apache Cassandra sstables (`--format
    /// cassandra`: version `nb`, what Cassandra 4.0 and 5.0 write) that
    /// `nodetool import` and `sstableloader` load, with schema.cql to create
    /// the table there (docs/cassandra.md).
    Export {
        #[command(flatten)]
        args: export_cmd::ExportArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Imports Apache Cassandra sstables (`--from-cassandra DIR`: a
    /// snapshot directory or one Data.db; versions ma to nb, oa, da) into a
    /// table, creating it from the snapshot's schema.cql if missing
    /// (docs/cassandra.md).
    Import {
        #[command(flatten)]
        args: import_cmd::ImportArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Hard-link snapshot of the tables' sstables, as `nodetool snapshot`.
    Snapshot {
        #[command(flatten)]
        args: admin::SnapshotArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Lists snapshots with their true size, as `nodetool listsnapshots`.
    Listsnapshots {
        #[command(flatten)]
        args: admin::ListSnapshotsArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// Removes snapshots, as `nodetool clearsnapshot`.
    Clearsnapshot {
        #[command(flatten)]
        args: admin::ClearSnapshotArgs,
        #[command(flatten)]
        db: DataDirArgs,
    },
    /// The node's settings: `config show` prints each one in effect and
    /// where it came from (a flag, the configuration file, or the default).
    #[command(subcommand)]
    Config(config::ConfigCommand),
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
    /// Analytical compaction model (the leveling-multiplier experiment's
    /// published formulas and a refined model): levels, write amplification,
    /// sstables per read, space; `model advise` ranks the choices.
    Model(model_cmd::ModelArgs),
    /// Runs the real compaction strategies over synthetic sstables in simulated time.
    Simulate(model_cmd::SimulateArgs),
}

/// The `strata` binary's whole run: parse, run, print an error on failure.
pub fn main() -> ExitCode {
    // Rust ignores SIGPIPE, turning a closed stdout (`strata tablestats | head`)
    // into a panic in println!; a command-line tool should just exit.
    // SAFETY: setting a signal disposition to the default before any thread starts.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
    let cli = Cli::parse();
    // The server logs into its data directory once it knows it; a command
    // logs to stderr from here on. A bad filter stops either at once.
    let logs = match cli.command {
        Command::Serve { .. } => logging::check(cli.log_level.as_deref()),
        _ => logging::init_command(cli.log_level.as_deref()),
    };
    if let Err(e) = logs {
        eprintln!("error: {e}");
        return ExitCode::FAILURE;
    }
    logging::remember(cli.log_level.clone());
    // A server owning the directory runs admin commands itself.
    if remote::served(&cli.command) {
        if let Ok(resolved) =
            datadir::resolve(&cli.data, cli.command.data_dir_use(), cli.command.name())
        {
            if let Some((dir, _)) = &resolved.data_dir {
                if let Some(code) = remote::forward(dir) {
                    return code;
                }
            }
        }
    }
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

/// A progress bar drawn on stderr with `template`, when `wanted` (not for a
/// `--json` run) and stderr is a terminal; `None` otherwise, so piped and
/// scripted runs print no control characters.
pub(crate) fn terminal_bar(wanted: bool, template: &str) -> Option<indicatif::ProgressBar> {
    use std::io::IsTerminal;
    (wanted && std::io::stderr().is_terminal()).then(|| {
        let b = indicatif::ProgressBar::new(0);
        b.set_style(
            indicatif::ProgressStyle::with_template(template)
                .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar()),
        );
        b
    })
}

/// Moves `bar`, if there is one, to `done` of `total`.
pub(crate) fn show_progress(bar: &Option<indicatif::ProgressBar>, done: u64, total: u64) {
    if let Some(b) = bar {
        b.set_length(total);
        b.set_position(done);
    }
}

/// `keyspace.table` split in two; the error says what was expected.
pub(crate) fn split_table_name(target: &str) -> strata::Result<(&str, &str)> {
    target.split_once('.').ok_or_else(|| {
        strata::Error::InvalidInput(format!("'{target}': name the table as keyspace.table"))
    })
}

/// The one table `target` (`keyspace.table`) names.
pub(crate) fn select_one_table(db: &Database, target: &str) -> strata::Result<Arc<Table>> {
    let (ks, name) = split_table_name(target)?;
    db.table(ks, name)
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

pub(crate) fn print_tablestats(
    tables: &[Arc<Table>],
    out: format::OutputArgs,
    human: bool,
) -> strata::Result<()> {
    let stats: Vec<_> = tables.iter().map(|t| TableStats::of(t)).collect();
    if !out.print_report(&stats)? {
        outln!("Total number of tables: {}", stats.len());
        outln!("----------------");
        for s in &stats {
            outln!("Keyspace : {}", s.keyspace);
            out!("{}", s.to_text_with(human));
            outln!("----------------");
        }
    }
    Ok(())
}

impl Command {
    /// Whether the command opens a data directory, with its own options (the
    /// match is exhaustive: a new command must decide).
    fn data_dir_use(&self) -> DataDirUse<'_> {
        match self {
            Command::Cql { args, db } if args.connects() => DataDirUse::Connects(db),
            Command::Stress { db, .. }
            | Command::Cql { db, .. }
            | Command::Serve { db, .. }
            | Command::Compact { db, .. }
            | Command::Garbagecollect { db, .. }
            | Command::Compactionstats { db, .. }
            | Command::Compactionhistory { db, .. }
            | Command::Tablestats { db, .. }
            | Command::Flush { db, .. }
            | Command::CreateTable { db, .. }
            | Command::AlterTable { db, .. }
            | Command::Verify { db, .. }
            | Command::Scrub { db, .. }
            | Command::Upgradesstables { db, .. }
            | Command::Traincompressiondictionary { db, .. }
            | Command::Snapshot { db, .. }
            | Command::Export { db, .. }
            | Command::Import { db, .. }
            | Command::Listsnapshots { db, .. }
            | Command::Clearsnapshot { db, .. }
            | Command::Getcompactionthroughput { db }
            | Command::Drain { db } => DataDirUse::Opens(db),
            Command::Info(a) | Command::Status(a) => DataDirUse::Opens(&a.db),
            Command::Getsstables(a) => DataDirUse::Opens(&a.db),
            Command::Tablehistograms(a) => DataDirUse::Opens(&a.db),
            Command::Setcompactionthroughput(a) => DataDirUse::Opens(&a.db),
            Command::Disableautocompaction(a)
            | Command::Enableautocompaction(a)
            | Command::Stop(a) => DataDirUse::Opens(&a.db),
            Command::Statusautocompaction(a) => DataDirUse::Opens(&a.db),
            Command::Commitlog(cmd) => cmd.data_dir_use(),
            Command::Config(cmd) => DataDirUse::Opens(cmd.data_dir_args()),
            Command::Manifest(cmd) => DataDirUse::Opens(cmd.data_dir_args()),
            Command::Schema(cmd) => DataDirUse::Opens(cmd.data_dir_args()),
            Command::Quarantine(cmd) => DataDirUse::Opens(cmd.data_dir_args()),
            Command::Sstable(cmd) => cmd.data_dir_use(),
            Command::Token { .. }
            | Command::Bench(_)
            | Command::Model(_)
            | Command::Simulate(_) => DataDirUse::Never,
        }
    }

    /// The subcommand's name as typed, for error messages.
    fn name(&self) -> &'static str {
        match self {
            Command::Stress { .. } => "stress",
            Command::Cql { .. } => "cql",
            Command::Serve { .. } => "serve",
            Command::Compact { .. } => "compact",
            Command::Garbagecollect { .. } => "garbagecollect",
            Command::Compactionstats { .. } => "compactionstats",
            Command::Compactionhistory { .. } => "compactionhistory",
            Command::Tablestats { .. } => "tablestats",
            Command::Flush { .. } => "flush",
            Command::Token { .. } => "token",
            Command::Info(_) => "info",
            Command::Status(_) => "status",
            Command::Getsstables(_) => "getsstables",
            Command::Tablehistograms(_) => "tablehistograms",
            Command::Setcompactionthroughput(_) => "setcompactionthroughput",
            Command::Getcompactionthroughput { .. } => "getcompactionthroughput",
            Command::Disableautocompaction(_) => "disableautocompaction",
            Command::Enableautocompaction(_) => "enableautocompaction",
            Command::Statusautocompaction(_) => "statusautocompaction",
            Command::Stop(_) => "stop",
            Command::Drain { .. } => "drain",
            Command::CreateTable { .. } => "create-table",
            Command::AlterTable { .. } => "alter-table",
            Command::Verify { .. } => "verify",
            Command::Scrub { .. } => "scrub",
            Command::Upgradesstables { .. } => "upgradesstables",
            Command::Traincompressiondictionary { .. } => "traincompressiondictionary",
            Command::Snapshot { .. } => "snapshot",
            Command::Export { .. } => "export",
            Command::Import { .. } => "import",
            Command::Listsnapshots { .. } => "listsnapshots",
            Command::Clearsnapshot { .. } => "clearsnapshot",
            Command::Commitlog(_) => "commitlog",
            Command::Config(_) => "config",
            Command::Manifest(_) => "manifest",
            Command::Schema(_) => "schema",
            Command::Quarantine(_) => "quarantine",
            Command::Sstable(_) => "sstable",
            Command::Bench(_) => "bench",
            Command::Model(_) => "model",
            Command::Simulate(_) => "simulate",
        }
    }
}

fn run(cli: Cli) -> strata::Result<()> {
    let resolved = datadir::resolve(&cli.data, cli.command.data_dir_use(), cli.command.name())?;
    for w in &resolved.warnings {
        eprintln!("warning: {w}");
    }
    // Commands without a data directory never read it (resolve returned None).
    let data_dir = match &resolved.data_dir {
        Some((dir, flags)) => {
            admin::set_commitlog_flags(flags);
            dir.clone()
        }
        None => PathBuf::new(),
    };
    let mut command = cli.command;
    if let Some(ip) = resolved.config.as_ref().and_then(|c| c.server.rpc_address) {
        node_cmd::remember_listen(ip.to_string());
    }
    match &mut command {
        Command::Serve { args, .. } => {
            if let Some(file) = &resolved.config {
                args.file = file.server.clone();
            }
        }
        // Settings only: the data directory is named, never opened.
        Command::Config(cmd) => return config::run(cmd, &resolved),
        _ => {}
    }
    dispatch(command, data_dir)
}

/// Runs `command` on `data_dir` (resolved), offline or for the admin
/// endpoint of a running server (remote.rs).
fn dispatch(command: Command, data_dir: PathBuf) -> strata::Result<()> {
    match command {
        Command::Stress { args, .. } => stress::run(&data_dir, args),
        Command::Cql { args, .. } => cql_cmd::run(&data_dir, args),
        Command::Serve { args, .. } => serve_cmd::run(&data_dir, args),
        Command::Compact { args, .. } => compaction_cmd::compact(&data_dir, args),
        Command::Garbagecollect { args, .. } => compaction_cmd::garbage_collect(&data_dir, args),
        Command::Compactionstats { args, .. } => compaction_cmd::compaction_stats(&data_dir, args),
        Command::Compactionhistory { args, .. } => {
            compaction_cmd::compaction_history(&data_dir, args)
        }
        Command::Verify { args, .. } => admin::verify(&data_dir, args),
        Command::Scrub { args, .. } => admin::scrub(&data_dir, args),
        Command::Upgradesstables { args, .. } => admin::upgradesstables(&data_dir, args),
        Command::Traincompressiondictionary { args, .. } => {
            admin::train_compression_dictionary(&data_dir, args)
        }
        Command::Snapshot { args, .. } => admin::snapshot(&data_dir, args),
        Command::Export { args, .. } => export_cmd::run(&data_dir, args),
        Command::Import { args, .. } => import_cmd::run(&data_dir, args),
        Command::Listsnapshots { args, .. } => admin::list_snapshots(&data_dir, args),
        Command::Clearsnapshot { args, .. } => admin::clear_snapshot(&data_dir, args),
        Command::Commitlog(cmd) => admin::commitlog(&data_dir, cmd),
        Command::Info(a) => node_cmd::info(&data_dir, &a),
        Command::Status(a) => {
            let listen = serve_cmd::bound_address().unwrap_or_else(node_cmd::configured_listen);
            node_cmd::status(&data_dir, &a, &listen)
        }
        Command::Getsstables(a) => node_cmd::getsstables(&data_dir, &a),
        Command::Tablehistograms(a) => node_cmd::table_histograms(&data_dir, &a),
        Command::Setcompactionthroughput(a) => node_cmd::set_compaction_throughput(&data_dir, &a),
        Command::Getcompactionthroughput { .. } => node_cmd::get_compaction_throughput(&data_dir),
        Command::Disableautocompaction(a) => node_cmd::set_auto_compaction(&data_dir, &a, false),
        Command::Enableautocompaction(a) => node_cmd::set_auto_compaction(&data_dir, &a, true),
        Command::Statusautocompaction(a) => node_cmd::status_auto_compaction(&data_dir, &a),
        Command::Stop(a) => node_cmd::stop(&data_dir, &a),
        Command::Drain { .. } => node_cmd::drain(&data_dir),
        // Handled in run(), which has the resolved settings.
        Command::Config(_) => Err(strata::Error::InvalidInput(
            "`strata config` reads settings; it has nothing to run on a data directory".into(),
        )),
        Command::Manifest(cmd) => repair_cmd::manifest(&data_dir, cmd),
        Command::Schema(cmd) => repair_cmd::schema(&data_dir, cmd),
        Command::Quarantine(cmd) => repair_cmd::quarantine(&data_dir, cmd),
        Command::Sstable(cmd) => sstable_cmd::run(&data_dir, cmd),
        Command::Bench(cmd) => bench_cmd::run(cmd),
        Command::Model(args) => model_cmd::run_model(args),
        Command::Simulate(args) => model_cmd::run_simulate(args),
        Command::Tablestats {
            target, out, human, ..
        } => {
            let db = remote::open_admin_db_read_only(&data_dir)?;
            let tables = select_tables(&db, target.as_deref())?;
            print_tablestats(&tables, out, human)?;
            db.close()
        }
        Command::Flush { target, .. } => {
            let db = remote::open_admin_db(&data_dir)?;
            for t in select_tables(&db, target.as_deref())? {
                t.flush()?;
            }
            db.close()
        }
        Command::Token { ty, value, out } => {
            let ty = CqlType::from_descriptor(&ty)?;
            let v = strata::cql::literal::parse_value(&ty, &value)?;
            let bytes = types::serialize(&v);
            if bytes.is_empty() {
                return Err(strata::Error::InvalidInput(
                    "a partition key cannot be empty".into(),
                ));
            }
            let token = strata::token::token_of(&bytes);
            #[derive(serde::Serialize)]
            struct TokenReport<'a> {
                r#type: String,
                value: &'a str,
                token: i64,
            }
            let report = TokenReport {
                r#type: ty.name(),
                value: &value,
                token,
            };
            if !out.print_report(&report)? {
                println!("{token}");
            }
            Ok(())
        }
        Command::AlterTable { table, options, .. } => {
            let (ks, name) = split_table_name(&table)?;
            let db = open_db(&data_dir)?;
            db.alter_table_options(ks, name, &options)?;
            let t = db.table(ks, name)?;
            println!("altered {table}: {}", t.schema().options);
            db.close()
        }
        Command::CreateTable { cql, .. } => {
            let db = open_db(&data_dir)?;
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Clap's own consistency checks over every command: no flag or short
    /// flag twice (`-F` and `-H` sit beside many others), every `requires`
    /// and `conflicts_with` naming a flag that exists.
    #[test]
    fn the_command_line_is_consistent() {
        use clap::CommandFactory;
        Cli::command().debug_assert();
    }
}
