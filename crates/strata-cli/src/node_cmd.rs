//! nodetool's node-level commands: `info`, `status`, `getsstables`, the
//! compaction throughput and auto-compaction switches, `stop` and `drain`.
//!
//! Contract:
//! 1. Against a running server (its admin socket, remote.rs) each acts on
//!    the server's open database; offline, the ones that only read open the
//!    directory read-only.
//! 2. A command that changes what a running process does
//!    (`setcompactionthroughput`, `disable/enableautocompaction`, `stop`)
//!    has nothing to act on offline, where the process would end with the
//!    command: it says so in one line and changes nothing, naming the
//!    persistent setting to use instead.
//! 3. Figures print with `--format table|json|yaml` (format.rs); sizes are
//!    human-readable, times ISO-8601 UTC.

use crate::datadir::DataDirArgs;
use crate::format::{render, Format, OutputArgs};
use crate::remote;
use clap::Args;
use std::path::Path;
use strata::fs::{IoCause, IoTag};
use strata::{Error, Result};

/// `--format`, and the data-directory options.
#[derive(Args, Debug)]
pub struct FormatArgs {
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub db: DataDirArgs,
}

/// An optional `keyspace[.table]`.
#[derive(Args, Debug)]
pub struct TargetArgs {
    /// `keyspace` or `keyspace.table`; every table when absent.
    pub target: Option<String>,
    #[command(flatten)]
    pub db: DataDirArgs,
}

/// An optional `keyspace[.table]` and `--format`.
#[derive(Args, Debug)]
pub struct TargetFormatArgs {
    /// `keyspace` or `keyspace.table`; every table when absent.
    pub target: Option<String>,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub db: DataDirArgs,
}

#[derive(Args, Debug)]
pub struct GetsstablesArgs {
    /// `keyspace.table`.
    pub table: String,
    /// The partition key as a CQL value; a key of several columns as their
    /// values joined by ':' (as nodetool takes it).
    pub key: String,
    #[command(flatten)]
    pub db: DataDirArgs,
}

#[derive(Args, Debug)]
pub struct ThroughputArgs {
    /// MiB/s; 0 is unlimited.
    #[arg(value_parser = crate::bounds::range(0u64, 1 << 20,
        "1 TiB/s is past any disk; 0 is unlimited"))]
    pub mib_per_sec: u64,
    #[command(flatten)]
    pub db: DataDirArgs,
}

/// The address a server of this directory would listen on (its
/// configuration file's), for an offline `status`.
static CONFIGURED_LISTEN: std::sync::OnceLock<String> = std::sync::OnceLock::new();

pub fn remember_listen(ip: String) {
    let _ = CONFIGURED_LISTEN.set(ip);
}

pub fn configured_listen() -> String {
    CONFIGURED_LISTEN
        .get()
        .cloned()
        .unwrap_or_else(|| "127.0.0.1".to_string())
}

/// Why a runtime switch has nothing to act on offline (contract 2).
fn needs_server(data_dir: &Path, what: &str, instead: &str) -> Error {
    Error::InvalidInput(format!(
        "no server owns {}: {what} acts on a running server, and this process would end with \
         the command; {instead}",
        data_dir.display()
    ))
}

fn host_id(data_dir: &Path) -> String {
    std::fs::read_to_string(data_dir.join("host_id"))
        .map(|s| s.trim().to_string())
        .unwrap_or_else(|_| "none yet (given at the first `strata serve`)".into())
}

/// Live sstable bytes over every table.
fn load(db: &strata::db::Database) -> u64 {
    db.tables()
        .iter()
        .map(|t| {
            t.view()
                .version
                .iter()
                .map(|l| l.handle.file_size())
                .sum::<u64>()
        })
        .sum()
}

/// The process's resident memory, from /proc (Linux).
fn resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// `strata info` (nodetool info).
pub fn info(data_dir: &Path, args: &FormatArgs) -> Result<()> {
    let served = remote::served_db().is_some();
    let db = remote::open_admin_db_read_only(data_dir)?;
    let h = crate::admin::human_bytes;
    let mut rows = vec![
        ("ID", host_id(data_dir)),
        ("Native Transport active", served.to_string()),
        ("Load", h(load(&db))),
        ("Data directory", data_dir.display().to_string()),
        ("Tables", db.tables().len().to_string()),
    ];
    if let Some(started) = crate::serve_cmd::started_at() {
        rows.push(("Started", strata::types::iso8601_seconds(started)));
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs() as i64);
        rows.push(("Uptime (seconds)", (now - started).max(0).to_string()));
    }
    if served {
        if let Some(rss) = resident_bytes() {
            rows.push(("Memory (resident)", h(rss)));
        }
    }
    rows.push(("Data Center", "datacenter1".into()));
    rows.push(("Rack", "rack1".into()));
    let rate = db.compaction_limiter().rate();
    rows.push((
        "Compaction throughput",
        if rate == 0 {
            "unlimited".into()
        } else {
            format!("{} MiB/s", rate >> 20)
        },
    ));
    if let Some(c) = db.fs().chunk_cache().map(|c| c.stats()) {
        rows.push((
            "Chunk Cache",
            format!(
                "entries {}, size {}, capacity {}, {} hits, {} requests, {:.3} recent hit rate",
                c.entries,
                h(c.size_bytes),
                h(c.capacity_bytes),
                c.hits,
                c.hits + c.misses,
                c.hit_rate()
            ),
        ));
    }
    let rows: Vec<Vec<String>> = rows
        .into_iter()
        .map(|(k, v)| vec![k.to_string(), v])
        .collect();
    crate::out!(
        "{}",
        render(args.output.format(), &["name", "value"], &rows)
    );
    db.close()
}

/// `strata status` (nodetool status): this one node.
pub fn status(data_dir: &Path, args: &FormatArgs, listen: &str) -> Result<()> {
    let served = remote::served_db().is_some();
    let db = remote::open_admin_db_read_only(data_dir)?;
    let row = vec![
        // Up when a server answers; Normal: a single node never moves.
        if served { "UN" } else { "DN" }.to_string(),
        listen.to_string(),
        crate::admin::human_bytes(load(&db)),
        "1".to_string(),
        "100.0%".to_string(),
        host_id(data_dir),
        "rack1".to_string(),
    ];
    if args.output.format() == Format::Table {
        outln!("Datacenter: datacenter1");
        outln!("=======================");
        outln!("Status=Up/Down");
        outln!("|/ State=Normal/Leaving/Joining/Moving");
    }
    crate::out!(
        "{}",
        render(
            args.output.format(),
            &["status", "address", "load", "tokens", "owns", "host_id", "rack"],
            &[row]
        )
    );
    db.close()
}

/// `strata getsstables ks.t KEY`: the live sstables that hold the partition.
pub fn getsstables(data_dir: &Path, args: &GetsstablesArgs) -> Result<()> {
    let (ks, name) = crate::split_table_name(&args.table)?;
    let db = remote::open_admin_db_read_only(data_dir)?;
    let table = db.table(ks, name)?;
    let key = table.schema().parse_partition_key(&args.key)?;
    let view = table.view();
    for live in view.version.iter() {
        if live.handle.holds(&key, IoTag::new(IoCause::UserRead))? {
            outln!("{}", live.handle.path().display());
        }
    }
    drop(view);
    db.close()
}

/// `strata setcompactionthroughput MIB`.
pub fn set_compaction_throughput(data_dir: &Path, args: &ThroughputArgs) -> Result<()> {
    let Some(db) = remote::served_db() else {
        return Err(needs_server(
            data_dir,
            "setcompactionthroughput",
            "set compaction_throughput in strata.yaml or give --compaction-throughput-mb-per-sec",
        ));
    };
    let before = db.compaction_limiter().rate() >> 20;
    db.compaction_limiter()
        .set_rate(args.mib_per_sec.saturating_mul(1 << 20));
    outln!(
        "compaction throughput: {} MiB/s, was {} MiB/s (0 is unlimited; until the server stops)",
        args.mib_per_sec,
        before
    );
    Ok(())
}

/// `strata getcompactionthroughput`: the running server's limit, or the one
/// a process opening the directory would use.
pub fn get_compaction_throughput(data_dir: &Path) -> Result<()> {
    let (rate, whose) = match remote::served_db() {
        Some(db) => (db.compaction_limiter().rate() >> 20, "the running server"),
        None => (
            crate::admin::db_options().compaction_throughput_mb_per_sec,
            "no server runs; what a process opening the directory would use",
        ),
    };
    let _ = data_dir;
    if rate == 0 {
        outln!("Current compaction throughput: unlimited ({whose})");
    } else {
        outln!("Current compaction throughput: {rate} MiB/s ({whose})");
    }
    Ok(())
}

/// `strata disable/enableautocompaction [ks[.t]]`.
pub fn set_auto_compaction(data_dir: &Path, args: &TargetArgs, enabled: bool) -> Result<()> {
    let verb = if enabled {
        "enableautocompaction"
    } else {
        "disableautocompaction"
    };
    let Some(db) = remote::served_db() else {
        return Err(needs_server(
            data_dir,
            verb,
            "for a switch that outlives a restart, ALTER TABLE ... WITH compaction =              {..., 'enabled': 'false'}",
        ));
    };
    let tables = crate::select_tables(&db, args.target.as_deref())?;
    for t in &tables {
        t.set_auto_compaction(enabled);
    }
    outln!(
        "automatic compaction {} for {} table(s), until the server stops",
        if enabled { "enabled" } else { "disabled" },
        tables.len()
    );
    Ok(())
}

/// `strata statusautocompaction [ks[.t]]`.
pub fn status_auto_compaction(data_dir: &Path, args: &TargetFormatArgs) -> Result<()> {
    let db = remote::open_admin_db_read_only(data_dir)?;
    let mut rows = Vec::new();
    for t in crate::select_tables(&db, args.target.as_deref())? {
        let s = t.schema();
        let on = t.auto_compaction_enabled() && s.options.compaction.common().enabled;
        rows.push(vec![
            s.keyspace.clone(),
            s.name.clone(),
            if on { "running" } else { "not running" }.to_string(),
        ]);
    }
    crate::out!(
        "{}",
        render(
            args.output.format(),
            &["keyspace", "table", "status"],
            &rows
        )
    );
    db.close()
}

/// `strata stop [ks[.t]]` (nodetool stop COMPACTION): running compactions
/// abort between partitions, their inputs kept.
pub fn stop(data_dir: &Path, args: &TargetArgs) -> Result<()> {
    let Some(db) = remote::served_db() else {
        return Err(needs_server(
            data_dir,
            "stop",
            "offline, no compaction runs but the command's own",
        ));
    };
    let mut n = 0;
    for t in crate::select_tables(&db, args.target.as_deref())? {
        n += t.active_compactions().len();
        t.cancel_compactions();
    }
    outln!("asked {n} running compaction(s) to stop; their inputs stay");
    Ok(())
}

/// `strata drain`: every memtable flushed; a running server then stops
/// serving and exits, as after SIGTERM.
pub fn drain(data_dir: &Path) -> Result<()> {
    let db = remote::open_admin_db(data_dir)?;
    db.flush_all()?;
    let served = matches!(db, remote::AdminDb::Served(_));
    db.close()?;
    if served {
        crate::serve_cmd::request_shutdown();
        outln!("drained: every memtable flushed; the server stops serving and exits");
    } else {
        outln!("drained: every memtable flushed, the commit log folded into sstables");
    }
    Ok(())
}

#[derive(Args, Debug)]
pub struct HistogramsArgs {
    /// `keyspace.table`.
    pub table: String,
    #[command(flatten)]
    pub output: OutputArgs,
    #[command(flatten)]
    pub db: DataDirArgs,
}

/// `strata tablehistograms ks.t` (nodetool's): latency and sstables per read
/// since the process opened the table, partition size and cell count over
/// its live sstables.
pub fn table_histograms(data_dir: &Path, args: &HistogramsArgs) -> Result<()> {
    let (ks, name) = crate::split_table_name(&args.table)?;
    let db = remote::open_admin_db_read_only(data_dir)?;
    let table = db.table(ks, name)?;
    let rows = strata::tablestats::histograms(&table);
    let cell = |v: Option<u64>| v.map_or_else(|| "-".to_string(), |n| n.to_string());
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| {
            vec![
                r.percentile.clone(),
                cell(r.read_latency_micros),
                cell(r.write_latency_micros),
                cell(r.sstables_per_read),
                cell(r.partition_size_bytes),
                cell(r.cell_count),
            ]
        })
        .collect();
    if args.output.format() == Format::Table {
        crate::outln!("{ks}/{name} histograms");
    }
    crate::out!(
        "{}",
        render(
            args.output.format(),
            &[
                "percentile",
                "read_latency_micros",
                "write_latency_micros",
                "sstables_per_read",
                "partition_size_bytes",
                "cell_count"
            ],
            &rows
        )
    );
    drop(table);
    db.close()
}
