//! The database: a data directory of keyspaces and tables, the schema catalog, and
//! the background flush executor.
//!
//! Layout on disk:
//! ```text
//! <data_dir>/schema.json             the catalog (atomically replaced)
//! <data_dir>/commitlog/              commit-log segments (see docs/DURABILITY.md)
//! <data_dir>/<keyspace>/<table>/     one directory per table:
//!     MANIFEST                       live sstables (see manifest)
//!     strata-<id>-Data.db            sstables (see docs/FORMAT.md)
//! ```
//!
//! Threads: `Database` is `Send + Sync`; share it behind an `Arc`. One flush thread
//! serves every table (2-core machines: more flush writers only contend).
//! `concurrent_compactors` threads take tasks from one
//! [`crate::compaction::runtime::Scheduler`] (round robin over tables, each decision
//! under the table's decision lock); `wait_for_compactions` observes through the
//! same scheduler without advancing any strategy's state.
//!
//! Invariants:
//! 1. A table is usable only after the catalog naming it is durable.
//! 2. Every acknowledged write is in the commit log first (as durable as its sync
//!    mode promises); `close()` additionally flushes every memtable (Cassandra's
//!    `drain`) so the next open has nothing to replay.
//! 3. Recovery replays each table's records newer than its manifest's flushed
//!    position, then flushes before the database accepts writes.

use crate::clock::Clock;
use crate::commitlog::{CommitLog, CommitLogOptions, LogExpectation, ReplayStats};
use crate::compaction::executor::{CompactionRecord, RateLimiter};
use crate::compaction::runtime::{run_task, Scheduler, Signal};
use crate::dirlock::DirLock;
use crate::error::{Error, Result};
use crate::fs::{EntryKind, Fs, IoCause, IoSnapshot, IoTag};
use crate::schema::{Catalog, TableSchema};
use crate::table::{FlushJob, Table, TableRuntimeOptions};
use crate::types::CqlType;
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

/// Open tables by (keyspace, name).
type TableMap = BTreeMap<(String, String), Arc<Table>>;

pub(crate) const SCHEMA_FILE: &str = "schema.json";
pub(crate) const COMMITLOG_DIR: &str = "commitlog";

/// How to open a database.
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// Source of every "now" (DESIGN.md §3).
    pub clock: Arc<dyn Clock>,
    /// The file-system layer; tests pass one with armed faults.
    pub fs: Fs,
    pub table: TableRuntimeOptions,
    /// The commit log (default: periodic sync every 10 s, 32 MiB segments).
    /// `None` runs without one: unflushed writes are lost on a crash (benchmarks
    /// that isolate compaction use this).
    pub commitlog: Option<CommitLogOptions>,
    /// Background compaction threads (Cassandra's `concurrent_compactors`;
    /// default 1 on a 2-core machine). 0 disables background compaction.
    pub concurrent_compactors: usize,
    /// Compaction write throughput limit in MiB/s, 0 = unlimited (Cassandra's
    /// `compaction_throughput_mb_per_sec`, default 64).
    pub compaction_throughput_mb_per_sec: u64,
    /// Open for inspection only (docs/DURABILITY.md, "Ownership"): no lock is
    /// taken, nothing is written (no commit-log segment, no quarantine, no flush,
    /// no compaction), the commit log is not replayed (its unflushed records are
    /// reported, not shown), and every change is refused with `Error::ReadOnly`.
    /// Works on a read-only file system and beside a running owner.
    pub read_only: bool,
    /// What the owner is doing, recorded in the directory's lock so that a
    /// refused process can name it (for example the command line).
    pub purpose: String,
    /// Bytes of decompressed chunks kept for user reads (Cassandra's
    /// `file_cache_size`, RocksDB's block cache); 0 disables it. Default 128
    /// MiB. Compaction and maintenance reads bypass it. The partition-index
    /// blocks sstable readers pin have a budget as large as this beside it
    /// (`chunk_cache::PINNED_SHARE`).
    pub chunk_cache_bytes: usize,
}

/// Default of [`DbOptions::chunk_cache_bytes`].
pub const DEFAULT_CHUNK_CACHE_BYTES: usize = 128 << 20;

impl DbOptions {
    pub fn new(clock: Arc<dyn Clock>) -> DbOptions {
        DbOptions {
            clock,
            fs: Fs::new(),
            table: TableRuntimeOptions::default(),
            commitlog: Some(CommitLogOptions::default()),
            concurrent_compactors: 1,
            compaction_throughput_mb_per_sec: 64,
            read_only: false,
            purpose: "strata (library)".to_string(),
            chunk_cache_bytes: DEFAULT_CHUNK_CACHE_BYTES,
        }
    }

    /// Checks the options that no table option covers, before anything is opened.
    pub fn validate(&self) -> Result<()> {
        if self.concurrent_compactors > MAX_CONCURRENT_COMPACTORS {
            return Err(Error::option(
                "concurrent_compactors",
                format!(
                    "{} is more than {MAX_CONCURRENT_COMPACTORS} (one thread each; a machine \
                     gains nothing past its core count)",
                    self.concurrent_compactors
                ),
            ));
        }
        Ok(())
    }
}

/// How often the flush thread looks for memtables past their table's
/// `memtable_flush_period_in_ms` when no flush is queued (real time; the
/// period itself is on the engine clock).
const PERIOD_CHECK_INTERVAL: Duration = Duration::from_secs(1);

/// Upper bound of `concurrent_compactors`: each is a thread, and an absurd value
/// (a typo of 100000) used to panic spawning them.
pub const MAX_CONCURRENT_COMPACTORS: usize = 64;

pub struct Database {
    dir: PathBuf,
    opts: DbOptions,
    catalog: Mutex<Catalog>,
    tables: Arc<RwLock<TableMap>>,
    compaction_signal: Arc<Signal>,
    /// Decides, for every table, which compaction runs next.
    scheduler: Arc<Scheduler>,
    compactors: Mutex<Vec<JoinHandle<()>>>,
    limiter: Arc<RateLimiter>,
    flush_tx: Sender<FlushJob>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    stopping: Arc<AtomicBool>,
    commitlog: Option<Arc<CommitLog>>,
    replay: ReplayStats,
    /// Read-only opens: missing or unreadable commit-log segments (a read-write
    /// open refuses them instead).
    log_problem: Option<String>,
    /// What open found and reported (quarantined files, unreadable sstables, a
    /// clock behind the data, unreplayed log in a read-only open).
    warnings: Vec<String>,
    /// Held for the database's lifetime by a read-write open; `None` read-only.
    /// Shared with the owner checks of the commit log and the manifests.
    lock: Option<Arc<DirLock>>,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("dir", &self.dir).finish()
    }
}

impl Database {
    /// Opens (creating if needed) the database in `dir`: takes the directory's
    /// lock (read-write), loads and checks the schema, opens every table, replays
    /// the commit log and starts the background threads.
    pub fn open(dir: &Path, opts: DbOptions) -> Result<Database> {
        opts.validate()?;
        let fs = opts.fs.clone();
        if opts.chunk_cache_bytes > 0 {
            fs.set_chunk_cache(Arc::new(crate::chunk_cache::ChunkCache::new(
                opts.chunk_cache_bytes,
            )));
        }
        let lock = if opts.read_only {
            if !dir.is_dir() {
                return Err(Error::NotFound(format!("data directory {}", dir.display())));
            }
            None
        } else {
            fs.create_dir_all(dir)?;
            let lock = Arc::new(DirLock::acquire(dir, &opts.purpose)?);
            // The one walk of the data directory: from here on the fs layer
            // keeps its usage (the disk-space guard's `max_disk_bytes`).
            fs.track_usage(dir)?;
            Some(lock)
        };
        let mut catalog = load_catalog(&fs, dir)?;
        let mut warnings = check_table_dirs(&fs, dir, &catalog)?;
        check_real_dir(&fs, &dir.join(COMMITLOG_DIR))?;
        // Every refusal a table's open would make, before the commit log's open
        // changes anything: a refused open changes nothing.
        for t in catalog.keyspaces.values().flat_map(|ks| ks.tables.values()) {
            if !catalog
                .legacy_decimal_clustering
                .contains(&t.qualified_name())
            {
                crate::table::check_before_open(&fs, &dir.join(&t.keyspace).join(&t.name), t)?;
            }
        }
        let flushed = flushed_positions(&fs, dir, &catalog)?;
        let expect = LogExpectation {
            tables: flushed
                .values()
                .map(|(name, pos)| (name.clone(), *pos))
                .collect(),
        };
        let mut opts = opts;
        let mut log_problem = None;
        if opts.read_only {
            let log_dir = dir.join(COMMITLOG_DIR);
            let unflushed = crate::commitlog::unflushed_records(&fs, &log_dir, &|id| {
                flushed.get(&id).map(|(_, p)| *p)
            })?;
            if unflushed.records > 0 {
                warnings.push(format!(
                    "the commit log holds {} record(s) ({} bytes, in {} segment(s)) that their \
                     tables have not flushed, not replayed by this read-only open: writes not \
                     yet flushed are not shown",
                    unflushed.records, unflushed.bytes, unflushed.segments
                ));
            }
            // A read-write open refuses a log with missing segments; a read-only
            // one does not replay, so it reports the loss instead. Beside a live
            // owner the log changes under the check (a segment sealed and its
            // successor created between listing and reading looks like a lost
            // one), and the owner's own open already checked it: only an unowned
            // log, unowned before and after, is judged.
            let unowned = || crate::dirlock::current_holder(dir).is_none();
            if unowned() {
                let problem = crate::commitlog::check_segment_sequence(&fs, &log_dir, &expect)?;
                if unowned() {
                    log_problem = problem;
                    warnings.extend(log_problem.clone());
                }
            }
            opts.commitlog = None;
            opts.concurrent_compactors = 0;
        }
        // Saturating: an absurd limit means "unlimited", never a wrapped small one.
        let compaction_throughput = opts
            .compaction_throughput_mb_per_sec
            .saturating_mul(1024 * 1024);
        let commitlog = match &opts.commitlog {
            Some(o) => {
                let log =
                    CommitLog::open_expecting(&fs, &dir.join(COMMITLOG_DIR), o.clone(), &expect)?;
                if let Some(lock) = &lock {
                    log.set_owner_check(lock.owner_check());
                }
                Some(Arc::new(log))
            }
            None => None,
        };
        if !opts.read_only {
            // Tables created before table UUIDs get theirs now, once (schema
            // invariant 8), after every check that could refuse the open; the
            // catalog is durable before any file names them.
            let known = |t: &TableSchema| {
                crate::table::uuid_named_by_files(&fs, &dir.join(&t.keyspace).join(&t.name))
            };
            if !catalog.assign_missing_uuids(&known)?.is_empty() {
                write_catalog(&fs, dir, &catalog)?;
            }
        }
        let (flush_tx, flush_rx) = channel::<FlushJob>();
        let tables: Arc<RwLock<TableMap>> = Arc::new(RwLock::new(BTreeMap::new()));
        let period_tables = tables.clone();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop_seen = stopping.clone();
        let flusher = std::thread::Builder::new()
            .name("strata-flush".into())
            .spawn(move || {
                loop {
                    let job = match flush_rx.recv_timeout(PERIOD_CHECK_INTERVAL) {
                        Ok(job) => job,
                        Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                            // memtable_flush_period_in_ms: idle tables too.
                            let open: Vec<Arc<Table>> =
                                period_tables.read().values().cloned().collect();
                            for t in open {
                                t.flush_if_period_expired();
                            }
                            continue;
                        }
                        Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break,
                    };
                    match job {
                        FlushJob::Shutdown => break,
                        FlushJob::Flush(table) => {
                            // A failure is recorded on the table (writers see it once
                            // memory fills up); retry after a pause so a transient
                            // ENOSPC clears without operator action.
                            // The retry stops at shutdown, so a database whose
                            // disk stays full can still be dropped.
                            while let Err(_e) = table.flush_oldest() {
                                if stop_seen.load(Ordering::Acquire) {
                                    break;
                                }
                                std::thread::sleep(std::time::Duration::from_millis(200));
                                if table.view().pending_flushes() == 0 {
                                    break;
                                }
                            }
                        }
                    }
                }
            })
            .map_err(|e| Error::io(dir, e))?;
        let mut db = Database {
            dir: dir.to_path_buf(),
            opts,
            catalog: Mutex::new(catalog.clone()),
            tables,
            compaction_signal: Arc::new(Signal::default()),
            scheduler: Arc::new(Scheduler::new()),
            compactors: Mutex::new(Vec::new()),
            limiter: Arc::new(RateLimiter::new(compaction_throughput)),
            flush_tx,
            flusher: Mutex::new(Some(flusher)),
            stopping,
            commitlog,
            replay: ReplayStats::default(),
            log_problem,
            warnings,
            lock,
        };
        for ks in catalog.keyspaces.values() {
            for t in ks.tables.values() {
                if catalog
                    .legacy_decimal_clustering
                    .contains(&t.qualified_name())
                {
                    db.warnings
                        .push(Catalog::legacy_decimal_reason(&t.qualified_name()));
                    continue;
                }
                let table = db.open_table(t.clone())?;
                db.warnings.extend(table.open_notes().iter().cloned());
            }
        }
        db.replay = db.recover()?;
        if let Some(w) = db.clock_behind_data() {
            db.warnings.push(w);
        }
        db.start_compactors()?;
        Ok(db)
    }

    /// A read-only open's finding that commit-log segments are missing or cannot
    /// be read (`verify` fails on it).
    pub fn commitlog_problem(&self) -> Option<&str> {
        self.log_problem.as_deref()
    }

    /// What open found and reported; the CLI prints these on stderr.
    pub fn warnings(&self) -> &[String] {
        &self.warnings
    }

    pub fn is_read_only(&self) -> bool {
        self.opts.read_only
    }

    /// A warning when the clock is behind the newest write timestamp on disk: a
    /// write stamped by this clock would then sort *before* data already written
    /// and be invisible behind it, silently (DESIGN.md §3 makes every "now" the
    /// clock's, so nothing else would notice).
    fn clock_behind_data(&self) -> Option<String> {
        let newest = self
            .tables()
            .iter()
            .flat_map(|t| {
                t.view()
                    .sstables()
                    .iter()
                    .map(|s| s.stats().max_timestamp_micros)
                    .filter(|&ts| ts != i64::MIN)
                    .collect::<Vec<_>>()
            })
            .max()?;
        let now = self.opts.clock.now_micros();
        (newest > now).then(|| {
            format!(
                "the clock ({}) is behind the newest write timestamp in {} ({}, {:.1} s ahead): \
                 writes stamped by this clock lose to that data until the clock passes it; \
                 check the system time",
                format_micros_utc(now),
                self.dir.display(),
                format_micros_utc(newest),
                (newest - now) as f64 / 1e6
            )
        })
    }

    /// Replays the commit log into the tables' memtables (records newer than each
    /// table's flushed position), then flushes the tables that received any, so
    /// the replayed segments can go (invariant 3).
    fn recover(&self) -> Result<ReplayStats> {
        let Some(log) = &self.commitlog else {
            return Ok(ReplayStats::default());
        };
        let by_id: std::collections::HashMap<u64, Arc<Table>> = self
            .tables()
            .into_iter()
            .map(|t| (t.schema().id, t))
            .collect();
        // Tables kept but not opened: their records stay in the log, unreplayed.
        let kept: std::collections::HashSet<u64> = {
            let catalog = self.catalog.lock();
            catalog
                .keyspaces
                .values()
                .flat_map(|ks| ks.tables.values())
                .filter(|t| {
                    catalog
                        .legacy_decimal_clustering
                        .contains(&t.qualified_name())
                })
                .map(|t| t.id)
                .collect()
        };
        for t in by_id.values() {
            if let Some(pos) = t.flushed_position() {
                log.ensure_after(pos)?;
            }
            t.recovering.store(true, Ordering::Release);
        }
        let replayed = (|| {
            let stats = log.replay(
                &|id| by_id.get(&id).and_then(|t| t.flushed_position()),
                &mut |id, pos, update| match by_id.get(&id) {
                    Some(t) => t.apply_replayed(&update, pos),
                    None => Ok(()),
                },
            )?;
            for (id, n) in &stats.replayed_per_table {
                match by_id.get(id) {
                    Some(t) if *n > 0 => t.flush()?,
                    Some(_) => {}
                    None if kept.contains(id) => {}
                    // Records of a table that no longer exists: let its segments go.
                    None => log.discard_table(*id)?,
                }
            }
            tracing::info!(
                target: "strata::replay",
                segments = stats.segments_replayed,
                replayed = stats.records_replayed,
                already_flushed = stats.records_skipped_flushed,
                corrupt_skipped = stats.corrupt_records_skipped,
                torn_tail_bytes = stats.torn_tail_bytes,
                "commit log replayed: {} mutation(s) from {} segment(s), {} already in sstables",
                stats.records_replayed,
                stats.segments_replayed,
                stats.records_skipped_flushed
            );
            // A table created before tables recorded a position at creation,
            // and never flushed, had nothing to replay: everything of it is in
            // sstables (none) up to here, which its manifest now says, so that
            // the log's loss is detectable for it too (commit-log invariant 11).
            for (id, t) in &by_id {
                if t.flushed_position().is_none() && !stats.replayed_per_table.contains_key(id) {
                    t.record_flushed_position(log.current_position())?;
                }
            }
            Ok(stats)
        })();
        for t in by_id.values() {
            t.recovering.store(false, Ordering::Release);
        }
        replayed
    }

    /// What recovery replayed at open.
    pub fn replay_stats(&self) -> &ReplayStats {
        &self.replay
    }

    pub fn commitlog(&self) -> Option<&Arc<CommitLog>> {
        self.commitlog.as_ref()
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.opts.clock
    }

    pub fn fs(&self) -> &Fs {
        &self.opts.fs
    }

    /// Bytes read and written by every table, per cause.
    pub fn io(&self) -> IoSnapshot {
        self.opts.fs.counters().snapshot()
    }

    fn table_dir(&self, keyspace: &str, table: &str) -> PathBuf {
        self.dir.join(keyspace).join(table)
    }

    fn open_table(&self, schema: TableSchema) -> Result<Arc<Table>> {
        let key = (schema.keyspace.clone(), schema.name.clone());
        let dir = self.table_dir(&schema.keyspace, &schema.name);
        let table = Table::open(
            &dir,
            schema,
            &self.opts.fs,
            self.opts.clock.clone(),
            self.opts.table.clone(),
            Some(self.flush_tx.clone()),
            self.commitlog.clone(),
            self.opts.read_only,
        )?;
        if let Some(lock) = &self.lock {
            table.set_owner_check(lock.owner_check());
        }
        *table.compaction_signal.lock() = Some(self.compaction_signal.clone());
        self.tables.write().insert(key, table.clone());
        self.compaction_signal.notify();
        Ok(table)
    }

    fn persist(&self, catalog: &Catalog) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::ReadOnly(format!(
                "the schema of {} cannot change: the database was opened read-only",
                self.dir.display()
            )));
        }
        if let Some(lock) = &self.lock {
            // No schema change into a directory this process no longer owns.
            lock.check()?;
        }
        write_catalog(&self.opts.fs, &self.dir, catalog)
    }

    pub fn create_keyspace(&self, name: &str) -> Result<()> {
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.create_keyspace(name)?;
        self.persist(&next)?;
        *catalog = next;
        Ok(())
    }

    /// `CREATE KEYSPACE` with its replication and durable_writes (stored; one
    /// replica whatever they say). `AlreadyExists` if it exists.
    pub fn create_keyspace_with(
        &self,
        name: &str,
        replication: BTreeMap<String, String>,
        durable_writes: bool,
    ) -> Result<()> {
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.create_keyspace(name)?;
        next.set_keyspace_params(name, replication, durable_writes)?;
        self.persist(&next)?;
        *catalog = next;
        Ok(())
    }

    /// `ALTER KEYSPACE ... WITH replication = ... AND durable_writes = ...`.
    pub fn alter_keyspace(
        &self,
        name: &str,
        replication: BTreeMap<String, String>,
        durable_writes: bool,
    ) -> Result<()> {
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.set_keyspace_params(name, replication, durable_writes)?;
        self.persist(&next)?;
        *catalog = next;
        Ok(())
    }

    /// `DROP TABLE`: the table leaves the catalog (durably, first), then its
    /// files go. With `snapshot` (Cassandra's `auto_snapshot`, its default)
    /// the table is flushed and its sstables hard-linked into
    /// `<table>/snapshots/dropped-<millis>-<table>/` before anything is
    /// removed, so the data can be restored; the snapshot is kept in the
    /// table's directory. Commit-log records of the table are let go (they
    /// can never be replayed: table ids are never reused).
    pub fn drop_table(&self, keyspace: &str, table: &str, snapshot: bool) -> Result<()> {
        let t = self.table(keyspace, table)?;
        if self.opts.read_only {
            return Err(Error::ReadOnly(format!(
                "cannot drop table {keyspace}.{table}: the database was opened read-only"
            )));
        }
        let _paused = t.pause_compactions(Duration::from_secs(600))?;
        if snapshot {
            t.flush()?;
            let name = format!("dropped-{}-{table}", self.opts.clock.now_micros() / 1000);
            crate::maintenance::snapshot(&t, &name)?;
        }
        let id = t.schema().id;
        {
            let mut catalog = self.catalog.lock();
            let mut next = catalog.clone();
            next.drop_table(keyspace, table)?;
            self.persist(&next)?;
            *catalog = next;
        }
        self.tables
            .write()
            .remove(&(keyspace.to_string(), table.to_string()));
        t.detach_flusher();
        if let Some(log) = &self.commitlog {
            log.discard_table(id)?;
        }
        self.remove_table_files(&t)?;
        Ok(())
    }

    /// Deletes a dropped table's files: everything in its directory but the
    /// snapshots. Only names this database writes are removed (sstables,
    /// manifests, dictionaries and their temporaries); anything else found
    /// there is left and reported by the next open, as always.
    fn remove_table_files(&self, t: &Table) -> Result<()> {
        let dir = t.dir().to_path_buf();
        let fs = &self.opts.fs;
        for name in fs.list_dir(&dir)? {
            if name == crate::maintenance::SNAPSHOTS_DIR {
                continue;
            }
            let path = dir.join(&name);
            let ours = crate::sstable::parse_data_file_name(&name).is_some()
                || name.starts_with(crate::manifest::MANIFEST_FILE)
                || crate::dictionary::parse_file_name(&name).is_some()
                || name == crate::dictionary::NOTES_FILE;
            let meta = std::fs::symlink_metadata(&path).map_err(|e| Error::io(&path, e))?;
            if ours && meta.file_type().is_file() {
                fs.remove(&path)?;
            }
        }
        fs.sync_dir(&dir)?;
        Ok(())
    }

    /// `DROP KEYSPACE`: drops every table (each as [`Database::drop_table`]),
    /// then the keyspace.
    pub fn drop_keyspace(&self, keyspace: &str, snapshot: bool) -> Result<()> {
        let tables: Vec<String> = self
            .catalog
            .lock()
            .keyspace(keyspace)?
            .tables
            .keys()
            .cloned()
            .collect();
        for t in tables {
            self.drop_table(keyspace, &t, snapshot)?;
        }
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.drop_keyspace(keyspace)?;
        self.persist(&next)?;
        *catalog = next;
        Ok(())
    }

    /// `TRUNCATE`: every row goes (see [`Table::truncate`]). With `snapshot`
    /// (`auto_snapshot`), the table is flushed and snapshotted as
    /// `truncated-<millis>-<table>` first, as Cassandra does.
    pub fn truncate_table(&self, keyspace: &str, table: &str, snapshot: bool) -> Result<()> {
        let t = self.table(keyspace, table)?;
        let _paused = t.pause_compactions(Duration::from_secs(600))?;
        if snapshot {
            t.flush()?;
            let name = format!("truncated-{}-{table}", self.opts.clock.now_micros() / 1000);
            crate::maintenance::snapshot(&t, &name)?;
        }
        t.truncate()
    }

    /// Applies `change` to a copy of the catalog; only when it succeeds is
    /// the copy made durable, then current, then the table's schema. A
    /// refused change leaves everything as it was (all or nothing).
    fn alter_table(
        &self,
        keyspace: &str,
        table: &str,
        change: impl FnOnce(&mut Catalog) -> Result<()>,
    ) -> Result<()> {
        let t = self.table(keyspace, table)?;
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        change(&mut next)?;
        self.persist(&next)?;
        let schema = next.table(keyspace, table)?.clone();
        *catalog = next;
        t.set_schema(schema);
        Ok(())
    }

    /// A change to the keyspace's user-defined types (CREATE, ALTER, DROP
    /// TYPE), all or nothing; every table of the keyspace takes its new
    /// schema (ALTER TYPE rewrites the columns that use the type).
    pub fn change_types(
        &self,
        keyspace: &str,
        change: impl FnOnce(&mut Catalog) -> Result<()>,
    ) -> Result<()> {
        // The open tables first: `table` may take the catalog's lock.
        let open: Vec<Arc<Table>> = self
            .tables()
            .into_iter()
            .filter(|t| t.schema().keyspace == keyspace)
            .collect();
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        change(&mut next)?;
        self.persist(&next)?;
        for t in &open {
            if let Ok(schema) = next.table(keyspace, &t.schema().name) {
                if *t.schema() != *schema {
                    t.set_schema(schema.clone());
                }
            }
        }
        *catalog = next;
        Ok(())
    }

    /// `ALTER TABLE ... ADD` of several columns at once (all or none).
    pub fn alter_table_add_columns(
        &self,
        keyspace: &str,
        table: &str,
        columns: &[(String, CqlType, bool)],
    ) -> Result<()> {
        self.alter_table(keyspace, table, |next| {
            for (name, ty, is_static) in columns {
                next.alter_table_add_column(keyspace, table, name, ty.clone(), *is_static)?;
            }
            Ok(())
        })
    }

    /// `ALTER TABLE ... DROP` of several columns at once (all or none). The
    /// column ids retire (schema invariant 2): old cells are never read again.
    pub fn alter_table_drop_columns(
        &self,
        keyspace: &str,
        table: &str,
        columns: &[String],
    ) -> Result<()> {
        self.alter_table(keyspace, table, |next| {
            for name in columns {
                next.alter_table_drop_column(keyspace, table, name)?;
            }
            Ok(())
        })
    }

    /// ALTER TABLE RENAME of primary-key columns, `(from, to)` applied in
    /// order; all or nothing (checked on a copy of the catalog).
    pub fn alter_table_rename_columns(
        &self,
        keyspace: &str,
        table: &str,
        renames: &[(String, String)],
    ) -> Result<()> {
        self.alter_table(keyspace, table, |next| {
            for (from, to) in renames {
                next.alter_table_rename_column(keyspace, table, from, to)?;
            }
            Ok(())
        })
    }

    /// Creates a table (invariant 1: the catalog is durable before it is usable).
    pub fn create_table(&self, schema: TableSchema) -> Result<Arc<Table>> {
        self.check_allowed_options(&schema.options)?;
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        // The catalog assigns the table id; open the table with its schema.
        let schema = next.create_table(schema)?.clone();
        // The directory (with an empty manifest) exists before the catalog names
        // the table, so a listed table without its directory is always damage
        // (`check_table_dirs`), never a crash between the two steps.
        self.prepare_table_dir(&schema)?;
        self.persist(&next)?;
        *catalog = next;
        self.open_table(schema)
    }

    /// `CREATE TABLE ...` in CQL (the subset `TableSchema::from_cql` accepts); creates
    /// the keyspace too if it does not exist. With `IF NOT EXISTS` an existing table
    /// is returned unchanged, even if its definition differs (as in Cassandra);
    /// without it an existing table is `AlreadyExists` naming it. A refused
    /// statement changes nothing: the catalog checks it on a copy before the
    /// keyspace or the table is written.
    pub fn create_table_cql(&self, cql: &str) -> Result<Arc<Table>> {
        let stmt = crate::schema::CreateTableStatement::parse(cql)?;
        let (ks, name) = (stmt.schema.keyspace.clone(), stmt.schema.name.clone());
        let existing = |e: Error| match e {
            Error::AlreadyExists(_) if stmt.if_not_exists => self.table(&ks, &name).or(Err(e)),
            e => Err(e),
        };
        let mut trial = self.catalog.lock().clone();
        let new_keyspace = !trial.keyspaces.contains_key(&ks);
        if new_keyspace {
            trial.create_keyspace(&ks)?;
        }
        if let Err(e) = trial.create_table(stmt.schema.clone()) {
            return existing(e);
        }
        if new_keyspace {
            // Another thread may have created it since the copy was taken.
            match self.create_keyspace(&ks) {
                Ok(()) | Err(Error::AlreadyExists(_)) => {}
                Err(e) => return Err(e),
            }
        }
        self.create_table(stmt.schema.clone()).or_else(existing)
    }

    /// `ALTER TABLE ... WITH <options>`: validated first; on error nothing changes.
    /// Takes effect for the next flush / compaction decision.
    pub fn alter_table_options(&self, keyspace: &str, table: &str, options: &str) -> Result<()> {
        self.alter_table(keyspace, table, |next| {
            next.alter_table_options(keyspace, table, options)?;
            self.check_allowed_options(&next.table(keyspace, table)?.options)
        })
    }

    /// [`Database::alter_table_options`] from settings a statement parser
    /// already read (the CQL executor's `ALTER TABLE ... WITH`).
    pub fn alter_table_settings(
        &self,
        keyspace: &str,
        table: &str,
        settings: &[crate::cql::ddl::Setting],
    ) -> Result<()> {
        self.alter_table(keyspace, table, |next| {
            next.alter_table_settings(keyspace, table, settings)?;
            self.check_allowed_options(&next.table(keyspace, table)?.options)
        })
    }

    /// Refuses options this database was not opened to allow: TWCS's
    /// `unsafe_aggressive_sstable_expiration` without
    /// `TableRuntimeOptions::allow_unsafe_aggressive_sstable_expiration`, as
    /// Cassandra refuses it without its JVM property.
    fn check_allowed_options(&self, options: &crate::options::TableOptions) -> Result<()> {
        if options.compaction.asks_unsafe_aggressive_expiration()
            && !self.opts.table.allow_unsafe_aggressive_sstable_expiration
        {
            return Err(crate::options::CompactionOptions::unsafe_aggressive_expiration_refused());
        }
        Ok(())
    }

    /// Creates the directory of a new table, refusing one that already holds
    /// data: a table re-created under an old name must not adopt sstables written
    /// under another schema (`strata sstable import` adopts them explicitly,
    /// checking their columns).
    fn prepare_table_dir(&self, schema: &TableSchema) -> Result<()> {
        if self.opts.read_only {
            return Err(Error::ReadOnly(format!(
                "cannot create table {}: the database was opened read-only",
                schema.qualified_name()
            )));
        }
        let dir = self.table_dir(&schema.keyspace, &schema.name);
        let fs = &self.opts.fs;
        if let Some(ks_dir) = dir.parent() {
            check_real_dir(fs, ks_dir)?;
        }
        check_real_dir(fs, &dir)?;
        if dir.is_dir() {
            let held = table_dir_data(fs, &dir)?;
            if held > 0 {
                return Err(Error::AlreadyExists(format!(
                    "{} already holds {held} sstable file(s) of an earlier table {}; move them \
                     away, or create the table elsewhere and adopt them with `strata sstable \
                     import`, which checks their columns",
                    dir.display(),
                    schema.qualified_name()
                )));
            }
        }
        fs.create_dir_all(&dir)?;
        if let Some(parent) = dir.parent() {
            fs.sync_dir(parent)?;
        }
        // Nothing of a new table is in the log before its creation (table ids
        // are never reused), so its flushed position starts where the log is:
        // from then on its manifest says the log must reach at least there
        // (commit-log invariant 11), even if the table never flushes.
        let mut manifest = crate::manifest::Manifest::open(fs, &dir)?;
        manifest.set_table_uuid(schema.table_uuid());
        let start = self.commitlog.as_ref().map(|l| l.current_position());
        manifest.commit(&[], &[], start)
    }

    pub fn table(&self, keyspace: &str, table: &str) -> Result<Arc<Table>> {
        if let Some(t) = self
            .tables
            .read()
            .get(&(keyspace.to_string(), table.to_string()))
        {
            return Ok(t.clone());
        }
        let qualified = format!("{keyspace}.{table}");
        if self
            .catalog
            .lock()
            .legacy_decimal_clustering
            .contains(&qualified)
        {
            return Err(Error::NeedsRepair(Catalog::legacy_decimal_reason(
                &qualified,
            )));
        }
        Err(Error::NotFound(format!("table {qualified}")))
    }

    /// Every table, ordered by keyspace then name.
    pub fn tables(&self) -> Vec<Arc<Table>> {
        self.tables.read().values().cloned().collect()
    }

    pub fn catalog(&self) -> Catalog {
        self.catalog.lock().clone()
    }

    pub fn flush_all(&self) -> Result<()> {
        for t in self.tables() {
            t.flush()?;
        }
        Ok(())
    }

    /// Flushes everything and stops the flush thread (invariant 2).
    pub fn close(self) -> Result<()> {
        let r = if self.opts.read_only {
            Ok(())
        } else {
            self.flush_all()
        };
        self.shutdown();
        r?;
        // A poisoned commit log means acknowledged writes may not be durable:
        // close must say so rather than return Ok.
        match self.commitlog.as_ref().and_then(|l| l.stats().poisoned) {
            Some(why) => Err(Error::Poisoned(why)),
            None => Ok(()),
        }
    }

    /// Starts `concurrent_compactors` background threads. Each loops: under the
    /// decision lock (strategies decide on one thread at a time) pick the next task
    /// of the next table in round-robin, run it, repeat; sleep on the signal (or
    /// 1 s, for time-driven work such as expiry) when no table has work.
    fn start_compactors(&self) -> Result<()> {
        for n in 0..self.opts.concurrent_compactors {
            let tables = self.tables.clone();
            let signal = self.compaction_signal.clone();
            let limiter = self.limiter.clone();
            let stopping = self.stopping.clone();
            let scheduler = self.scheduler.clone();
            let fs = self.opts.fs.clone();
            let handle = std::thread::Builder::new()
                .name(format!("strata-compaction-{n}"))
                .spawn(move || {
                    while !stopping.load(Ordering::Acquire) {
                        let seen = signal.generation();
                        let all: Vec<Arc<Table>> = tables.read().values().cloned().collect();
                        match scheduler.pick(&all) {
                            Some((table, task)) => {
                                if run_task(table.as_ref(), &task, &limiter).is_err() {
                                    // Counted in the table's metrics; back off so a
                                    // persistent fault (disk full) does not spin.
                                    signal.wait_changed(seen, Duration::from_secs(1));
                                }
                            }
                            None => {
                                // Idle: unlink obsolete files whose last reader
                                // has gone since (readers only queue them).
                                fs.reclaim_obsolete();
                                signal.wait_changed(seen, Duration::from_secs(1))
                            }
                        }
                    }
                })
                .map_err(|e| Error::io(&self.dir, e))?;
            self.compactors.lock().push(handle);
        }
        Ok(())
    }

    /// Runs every table's pending compaction tasks on the calling thread, chosen
    /// by the database's scheduler (round robin over tables), until none is due
    /// or `max_tasks` ran (an error if work is still pending then). For tools and
    /// benchmarks that open with `concurrent_compactors = 0`.
    pub fn compact_until_idle(&self, max_tasks: usize) -> Result<Vec<CompactionRecord>> {
        self.scheduler
            .run_until_idle(&self.tables(), &self.limiter, max_tasks)
    }

    /// The throughput limiter shared by all compactions of this database.
    pub fn compaction_limiter(&self) -> &Arc<RateLimiter> {
        &self.limiter
    }

    /// Blocks until no table has a pending compaction task and none is running,
    /// or `timeout` passes (returns whether it settled). For tests, benchmarks and
    /// `strata compact --wait`-style tools.
    pub fn wait_for_compactions(&self, timeout: Duration) -> bool {
        let deadline = std::time::Instant::now() + timeout;
        loop {
            // Observes through the scheduler, under the same locks the compactor
            // threads decide under, without advancing any strategy's state
            // (runtime invariant 3).
            if !self.scheduler.has_pending(&self.tables()) {
                return true;
            }
            if std::time::Instant::now() >= deadline {
                return false;
            }
            self.compaction_signal.notify();
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    fn shutdown(&self) {
        for t in self.tables() {
            t.detach_flusher();
        }
        self.stopping.store(true, Ordering::Release);
        let _ = self.flush_tx.send(FlushJob::Shutdown);
        if let Some(h) = self.flusher.lock().take() {
            let _ = h.join();
        }
        for t in self.tables() {
            t.cancel_compactions();
        }
        self.compaction_signal.notify();
        for h in self.compactors.lock().drain(..) {
            let _ = h.join();
        }
        if !self.opts.read_only {
            self.opts.fs.reclaim_obsolete();
        }
        if let Some(log) = &self.commitlog {
            // Final sync; an error here is already recorded as the log's poison.
            let _ = log.close();
        }
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.shutdown();
    }
}

/// The largest `schema.json` read: a catalog of thousands of tables of
/// hundreds of columns is a few MiB.
pub(crate) const MAX_SCHEMA_BYTES: u64 = 64 << 20;
/// Writes `schema.json` atomically (tmp, fsync, rename, fsync dir).
fn write_catalog(fs: &Fs, dir: &Path, catalog: &Catalog) -> Result<()> {
    let json = catalog
        .to_json()
        .map_err(|e| Error::InvalidInput(format!("schema serialization: {e}")))?;
    fs.write_atomic(
        &dir.join(SCHEMA_FILE),
        json.as_bytes(),
        IoTag::new(IoCause::Metadata),
    )
}

/// Every table's flushed position from its manifest, by table id, with its
/// name: what the commit log must still hold (commit-log invariant 11) and
/// what of it is not yet in sstables. Tables kept but not opened count too:
/// their records stay in the log. Reads only.
pub(crate) fn flushed_positions(
    fs: &Fs,
    dir: &Path,
    catalog: &Catalog,
) -> Result<BTreeMap<u64, (String, Option<crate::manifest::ReplayPosition>)>> {
    let mut out = BTreeMap::new();
    for t in catalog.keyspaces.values().flat_map(|ks| ks.tables.values()) {
        let t_dir = dir.join(&t.keyspace).join(&t.name);
        let pos = crate::manifest::Manifest::open(fs, &t_dir)?
            .data()
            .replay_position;
        out.insert(t.id, (t.qualified_name(), pos));
    }
    Ok(out)
}

/// One segment as `strata commitlog stats` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct SegmentReport {
    pub path: PathBuf,
    pub id: u64,
    pub format_version: u32,
    pub size_bytes: u64,
    /// Valid frames holding a mutation.
    pub records: u64,
    /// Whether it ends with its seal (a newer segment was started after it).
    pub sealed: bool,
    /// Why it cannot be read, if it cannot (a bad header).
    pub problem: Option<String>,
}

/// What the commit log of a data directory holds, read without opening the
/// database: [`commitlog_report`].
#[derive(Clone, Debug, serde::Serialize)]
pub struct CommitLogReport {
    pub dir: PathBuf,
    pub segments: Vec<SegmentReport>,
    /// Segment ids deleted (or skipped) on purpose, as inclusive ranges
    /// (`RETIRED`); `None` when the record is absent or unreadable.
    pub retired: Option<Vec<(u64, u64)>>,
    /// Records their tables have not flushed (every record when the schema
    /// is missing, whose tables are then unknown).
    pub unflushed: crate::commitlog::UnflushedRecords,
    /// Missing segments or a damaged `RETIRED`, as an owner's open would
    /// refuse them; `None` when the sequence is whole.
    pub problem: Option<String>,
    /// Set when the sequence was not checked, and why (a running owner
    /// changes the log under the check).
    pub not_checked: Option<String>,
}

/// `strata commitlog stats`: reads the commit log of `dir` and the manifests'
/// flushed positions, and writes nothing at all (no lock, no replay, no
/// segment; docs/DURABILITY.md, "What each command may write"), so it runs
/// beside a running owner and on a read-only file system.
pub fn commitlog_report(fs: &Fs, dir: &Path) -> Result<CommitLogReport> {
    if !dir.is_dir() {
        return Err(Error::NotFound(format!("data directory {}", dir.display())));
    }
    let log_dir = dir.join(COMMITLOG_DIR);
    let catalog = if dir.join(SCHEMA_FILE).exists() {
        Some(load_catalog(fs, dir)?)
    } else {
        None
    };
    let flushed = match &catalog {
        Some(c) => flushed_positions(fs, dir, c)?,
        None => BTreeMap::new(),
    };
    let unflushed = crate::commitlog::unflushed_records(fs, &log_dir, &|id| match &catalog {
        Some(_) => flushed.get(&id).map(|(_, p)| *p),
        None => Some(None),
    })?;
    let mut segments = Vec::new();
    if log_dir.is_dir() {
        for (id, path) in crate::commitlog::list_segments(fs, &log_dir)? {
            let format_version = crate::commitlog::parse_segment_file_name(
                &path.file_name().unwrap_or_default().to_string_lossy(),
            )
            .map_or(0, |(v, _)| v);
            let size_bytes = fs.file_len(&path).unwrap_or(0);
            let (records, sealed, problem) = match crate::commitlog::dump_segment(fs, &path) {
                Ok(d) => (
                    d.records
                        .iter()
                        .filter(|r| !r.seal && r.error.is_none())
                        .count() as u64,
                    d.records.last().is_some_and(|r| r.seal),
                    None,
                ),
                // Deleted by a running owner since the listing: not shown.
                Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                    continue
                }
                Err(e) => (0, false, Some(e.to_string())),
            };
            segments.push(SegmentReport {
                path,
                id,
                format_version,
                size_bytes,
                records,
                sealed,
                problem,
            });
        }
    }
    let retired = crate::commitlog::retired::load(fs, &log_dir)
        .ok()
        .flatten()
        .map(|r| r.ranges().to_vec());
    let expect = LogExpectation {
        tables: flushed
            .values()
            .map(|(name, pos)| (name.clone(), *pos))
            .collect(),
    };
    // As a read-only open: only a log no process owns, before and after the
    // check, is judged.
    let (problem, not_checked) = match crate::dirlock::current_holder(dir) {
        Some(holder) => (
            None,
            Some(format!(
                "not checked: a running process owns the directory ({holder})"
            )),
        ),
        None => {
            let problem = crate::commitlog::check_segment_sequence(fs, &log_dir, &expect)?;
            match crate::dirlock::current_holder(dir) {
                Some(holder) => (
                    None,
                    Some(format!(
                        "not checked: a process began to own the directory meanwhile ({holder})"
                    )),
                ),
                None => (problem, None),
            }
        }
    };
    Ok(CommitLogReport {
        dir: log_dir,
        segments,
        retired,
        unflushed,
        problem,
        not_checked,
    })
}

/// Reads `schema.json`. A missing one is an empty catalog only when the data
/// directory holds no table data at all; otherwise opening would show zero tables
/// and let them be re-created over their old files, so it is refused.
pub(crate) fn load_catalog(fs: &Fs, dir: &Path) -> Result<Catalog> {
    let schema_path = dir.join(SCHEMA_FILE);
    if schema_path.exists() {
        let bytes = fs.read_all(
            &schema_path,
            MAX_SCHEMA_BYTES,
            IoTag::new(IoCause::Metadata),
        )?;
        let text = std::str::from_utf8(&bytes)
            .map_err(|_| Error::corruption(&schema_path, 0, "schema.json is not UTF-8"))?;
        return Catalog::from_json(text)
            .map_err(|e| Error::corruption(&schema_path, 0, e.to_string()));
    }
    let mut found = Vec::new();
    for (ks, t, dir) in table_dirs_on_disk(fs, dir)? {
        if table_dir_data(fs, &dir)? > 0 || crate::manifest::Manifest::exists(&dir) {
            found.push(format!("{ks}.{t}"));
        }
    }
    if let Some(note) = log_records_note(fs, &dir.join(COMMITLOG_DIR))? {
        found.push(note);
    }
    if !found.is_empty() {
        return Err(Error::NeedsRepair(format!(
            "{} is missing but the data directory holds table data ({}); opening would show no \
             tables and lose them. Restore schema.json from a backup, or re-create it from the \
             sstables' own headers with `strata schema rebuild`",
            schema_path.display(),
            found.join(", ")
        )));
    }
    Ok(Catalog::default())
}

/// `(keyspace, table, path)` of every `<ks>/<table>/` directory under `dir`.
/// Links are not followed: a link in place of a keyspace or table directory
/// is no table of this data directory (its catalog tables are checked by
/// [`check_table_dirs`], which refuses such a link).
pub(crate) fn table_dirs_on_disk(fs: &Fs, dir: &Path) -> Result<Vec<(String, String, PathBuf)>> {
    let mut out = Vec::new();
    for (ks, kind) in fs.list_dir_kinds(dir)? {
        if ks == COMMITLOG_DIR || kind != EntryKind::Dir {
            continue;
        }
        let ks_dir = dir.join(&ks);
        for (t, kind) in fs.list_dir_kinds(&ks_dir)? {
            if kind == EntryKind::Dir {
                out.push((ks.clone(), t.clone(), ks_dir.join(&t)));
            }
        }
    }
    Ok(out)
}

/// Refuses a symbolic link (or anything but a directory) where the data
/// directory keeps a keyspace's, a table's or the commit log's files: every
/// write and deletion would go through it, outside the data directory
/// (docs/DURABILITY.md, "Links"). Absent is fine (the caller decides).
fn check_real_dir(fs: &Fs, path: &Path) -> Result<()> {
    match fs.entry_kind(path)? {
        None | Some(EntryKind::Dir) => Ok(()),
        Some(EntryKind::Symlink) => Err(Error::NeedsRepair(format!(
            "{} is a symbolic link: Strata writes and deletes only inside its data directory \
             and never through a link (only the data directory itself may be one). Move the \
             directory it points to into its place",
            path.display()
        ))),
        Some(kind) => Err(Error::NeedsRepair(format!(
            "{} is {}, where a directory belongs",
            path.display(),
            kind.describe()
        ))),
    }
}

/// How many sstable files a table directory holds (live or not).
fn table_dir_data(fs: &Fs, dir: &Path) -> Result<usize> {
    Ok(fs
        .list_dir(dir)?
        .iter()
        .filter(|n| crate::sstable::parse_data_file_name(n).is_some())
        .count())
}

/// Every table the catalog lists must have its directory (created before the
/// catalog named it); directories holding sstables that no table claims are
/// reported, never touched.
fn check_table_dirs(fs: &Fs, dir: &Path, catalog: &Catalog) -> Result<Vec<String>> {
    let mut warnings = Vec::new();
    for ks in catalog.keyspaces.values() {
        for t in ks.tables.values() {
            check_real_dir(fs, &dir.join(&t.keyspace))?;
            let t_dir = dir.join(&t.keyspace).join(&t.name);
            check_real_dir(fs, &t_dir)?;
            if !t_dir.is_dir() {
                return Err(Error::NeedsRepair(format!(
                    "table {} is in the schema but its directory {} is missing: its data is gone \
                     or was moved. Restore the directory (from a snapshot: its files and MANIFEST), \
                     or drop the table from schema.json if it is meant to be gone",
                    t.qualified_name(),
                    t_dir.display()
                )));
            }
        }
    }
    for (ks, t, t_dir) in table_dirs_on_disk(fs, dir)? {
        if catalog.table(&ks, &t).is_err() && table_dir_data(fs, &t_dir)? > 0 {
            warnings.push(format!(
                "{} holds sstables but no table {ks}.{t} is in the schema; left untouched",
                t_dir.display()
            ));
        }
    }
    Ok(warnings)
}

/// A note when the commit log holds records (segments longer than a header and
/// a seal), whatever their tables have flushed: for a directory without a
/// schema, whose tables are unknown.
fn log_records_note(fs: &Fs, log_dir: &Path) -> Result<Option<String>> {
    if !log_dir.is_dir() {
        return Ok(None);
    }
    let (mut segments, mut bytes) = (0u64, 0u64);
    for name in fs.list_dir(log_dir)? {
        if name.starts_with("CommitLog-") && name.ends_with(".log") {
            // A segment deleted between listing and sizing holds nothing.
            let len = fs.file_len(&log_dir.join(&name)).unwrap_or(0);
            // 24-byte header + 8-byte seal: a segment with no record.
            if len > 32 {
                segments += 1;
                bytes += len;
            }
        }
    }
    Ok((segments > 0).then(|| {
        format!("the commit log holds {segments} segment(s) with records ({bytes} bytes)")
    }))
}

pub use crate::clock::format_micros_utc;

/// Fixtures for the crate's unit tests.
#[cfg(test)]
pub(crate) mod testing {
    use super::*;
    use crate::clock::SystemClock;
    use crate::schema::WriteOptions;
    use crate::types::Value;

    /// A database with no background compactor (a test plays its part) and
    /// no commit log, and one table `ks.t (k bigint PRIMARY KEY, v text)`.
    pub(crate) fn without_compactors() -> (tempfile::TempDir, Database, Arc<Table>) {
        let dir = tempfile::tempdir().unwrap();
        let mut opts = DbOptions::new(SystemClock::new());
        opts.concurrent_compactors = 0;
        opts.commitlog = None;
        let db = Database::open(dir.path(), opts).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k bigint PRIMARY KEY, v text)")
            .unwrap();
        (dir, db, t)
    }

    /// Four similar sstables: one STCS bucket at min_threshold 4.
    pub(crate) fn flush_four_similar(t: &Arc<Table>) {
        for k in 0..4 {
            t.insert(
                &[("k", Value::BigInt(k)), ("v", Value::Text("x".repeat(100)))],
                &WriteOptions::default(),
            )
            .unwrap();
            t.flush().unwrap();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Regression (the flaky `bench_blobstore_json_keys`): a task a compactor
    /// has chosen but not yet started is pending work. `pick` marks its inputs
    /// busy and returns; `run_task` registers it as active later. A waiter
    /// between the two once returned "settled" with the task still to run.
    #[test]
    fn a_chosen_task_not_yet_running_keeps_the_database_unsettled() {
        let (_dir, db, t) = testing::without_compactors();
        testing::flush_four_similar(&t);
        assert!(!db.wait_for_compactions(Duration::ZERO), "a merge is due");
        let (host, task) = db.scheduler.pick(&db.tables()).expect("the merge");
        assert!(
            !db.wait_for_compactions(Duration::ZERO),
            "chosen, not started: still pending"
        );
        crate::compaction::runtime::run_task(host.as_ref(), &task, &db.limiter).unwrap();
        assert!(db.wait_for_compactions(Duration::ZERO), "ran: settled");
        assert_eq!(t.sstable_infos().len(), 1);
        drop((t, host));
        db.close().unwrap();
    }

    /// `disableautocompaction` stops background choices (and the wait for
    /// them), not manual work; enabling brings the due merge back.
    #[test]
    fn auto_compaction_off_chooses_nothing_until_it_is_on_again() {
        let (_dir, db, t) = testing::without_compactors();
        testing::flush_four_similar(&t);
        t.set_auto_compaction(false);
        assert!(!t.auto_compaction_enabled());
        assert!(
            db.scheduler.pick(&db.tables()).is_none(),
            "off: nothing chosen"
        );
        assert!(
            db.wait_for_compactions(Duration::ZERO),
            "off: nothing pending"
        );
        assert_eq!(t.sstable_infos().len(), 4);
        t.set_auto_compaction(true);
        let (host, task) = db.scheduler.pick(&db.tables()).expect("on: the merge");
        crate::compaction::runtime::run_task(host.as_ref(), &task, &db.limiter).unwrap();
        assert_eq!(t.sstable_infos().len(), 1);
        drop((t, host));
        db.close().unwrap();
    }

    /// A task stopped on purpose is an `info` line and no failure; any other
    /// error is an `error` line and counts as failed.
    #[test]
    fn a_stopped_compaction_is_not_a_failure() {
        use crate::compaction::runtime::CompactionTable;
        #[derive(Clone, Default)]
        struct Lines(Arc<Mutex<Vec<u8>>>);
        impl std::io::Write for Lines {
            fn write(&mut self, b: &[u8]) -> std::io::Result<usize> {
                self.0.lock().extend_from_slice(b);
                Ok(b.len())
            }
            fn flush(&mut self) -> std::io::Result<()> {
                Ok(())
            }
        }
        let lines = Lines::default();
        let sink = lines.clone();
        let subscriber = tracing_subscriber::fmt()
            .with_max_level(tracing::Level::INFO)
            .with_ansi(false)
            .with_writer(move || sink.clone())
            .finish();
        let (_dir, db, t) = testing::without_compactors();
        tracing::subscriber::with_default(subscriber, || {
            t.task_finished(&Err(Error::Cancelled), Duration::from_millis(3));
        });
        let text = String::from_utf8_lossy(&lines.0.lock()).to_string();
        assert!(
            text.contains(" INFO ") && text.contains("stopped"),
            "{text}"
        );
        assert!(!text.contains("ERROR"), "{text}");
        assert_eq!(t.metrics.compactions_failed.load(Ordering::Relaxed), 0);

        let subscriber = tracing_subscriber::fmt()
            .with_ansi(false)
            .with_writer({
                let sink = lines.clone();
                move || sink.clone()
            })
            .finish();
        tracing::subscriber::with_default(subscriber, || {
            t.task_finished(
                &Err(Error::Corruption {
                    path: "x-Data.db".into(),
                    offset: 7,
                    reason: "bad block".into(),
                }),
                Duration::ZERO,
            );
        });
        let text = String::from_utf8_lossy(&lines.0.lock()).to_string();
        assert!(
            text.contains("ERROR") && text.contains("bad block"),
            "{text}"
        );
        assert_eq!(t.metrics.compactions_failed.load(Ordering::Relaxed), 1);
        drop(t);
        db.close().unwrap();
    }
}
