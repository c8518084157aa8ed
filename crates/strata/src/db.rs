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
//!
//! Invariants:
//! 1. A table is usable only after the catalog naming it is durable.
//! 2. Every acknowledged write is in the commit log first (as durable as its sync
//!    mode promises); `close()` additionally flushes every memtable (Cassandra's
//!    `drain`) so the next open has nothing to replay.
//! 3. Recovery replays each table's records newer than its manifest's flushed
//!    position, then flushes before the database accepts writes.

use crate::clock::Clock;
use crate::commitlog::{CommitLog, CommitLogOptions, ReplayStats};
use crate::compaction::executor::RateLimiter;
use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoSnapshot, IoTag};
use crate::schema::{Catalog, TableSchema};
use crate::table::{FlushJob, Table, TableRuntimeOptions};
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

const SCHEMA_FILE: &str = "schema.json";
const COMMITLOG_DIR: &str = "commitlog";

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
}

impl DbOptions {
    pub fn new(clock: Arc<dyn Clock>) -> DbOptions {
        DbOptions {
            clock,
            fs: Fs::new(),
            table: TableRuntimeOptions::default(),
            commitlog: Some(CommitLogOptions::default()),
            concurrent_compactors: 1,
            compaction_throughput_mb_per_sec: 64,
        }
    }
}

pub struct Database {
    dir: PathBuf,
    opts: DbOptions,
    catalog: Mutex<Catalog>,
    tables: Arc<RwLock<TableMap>>,
    compaction_signal: Arc<Signal>,
    compactors: Mutex<Vec<JoinHandle<()>>>,
    limiter: Arc<RateLimiter>,
    flush_tx: Sender<FlushJob>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    stopping: Arc<AtomicBool>,
    commitlog: Option<Arc<CommitLog>>,
    replay: ReplayStats,
}

impl std::fmt::Debug for Database {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Database").field("dir", &self.dir).finish()
    }
}

impl Database {
    /// Opens (creating if needed) the database in `dir`.
    pub fn open(dir: &Path, opts: DbOptions) -> Result<Database> {
        let fs = opts.fs.clone();
        fs.create_dir_all(dir)?;
        let schema_path = dir.join(SCHEMA_FILE);
        let catalog = if schema_path.exists() {
            let bytes = fs.read_all(&schema_path, IoTag::new(IoCause::Metadata))?;
            let text = std::str::from_utf8(&bytes)
                .map_err(|_| Error::corruption(&schema_path, 0, "schema.json is not UTF-8"))?;
            Catalog::from_json(text)
                .map_err(|e| Error::corruption(&schema_path, 0, e.to_string()))?
        } else {
            Catalog::default()
        };
        let compaction_throughput = opts.compaction_throughput_mb_per_sec * 1024 * 1024;
        let commitlog = match &opts.commitlog {
            Some(o) => Some(Arc::new(CommitLog::open(
                &fs,
                &dir.join(COMMITLOG_DIR),
                o.clone(),
            )?)),
            None => None,
        };
        let (flush_tx, flush_rx) = channel::<FlushJob>();
        let stopping = Arc::new(AtomicBool::new(false));
        let stop_seen = stopping.clone();
        let flusher = std::thread::Builder::new()
            .name("strata-flush".into())
            .spawn(move || {
                while let Ok(job) = flush_rx.recv() {
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
            tables: Arc::new(RwLock::new(BTreeMap::new())),
            compaction_signal: Arc::new(Signal::default()),
            compactors: Mutex::new(Vec::new()),
            limiter: Arc::new(RateLimiter::new(compaction_throughput)),
            flush_tx,
            flusher: Mutex::new(Some(flusher)),
            stopping,
            commitlog,
            replay: ReplayStats::default(),
        };
        for ks in catalog.keyspaces.values() {
            for t in ks.tables.values() {
                db.open_table(t.clone())?;
            }
        }
        db.replay = db.recover()?;
        db.start_compactors()?;
        Ok(db)
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
        for t in by_id.values() {
            if let Some(pos) = t.flushed_position() {
                log.ensure_after(pos)?;
            }
        }
        let stats = log.replay(
            &|id| by_id.get(&id).and_then(|t| t.flushed_position()),
            &mut |id, update| {
                if let Some(t) = by_id.get(&id) {
                    t.apply_replayed(&update);
                }
                Ok(())
            },
        )?;
        for (id, n) in &stats.replayed_per_table {
            match by_id.get(id) {
                Some(t) if *n > 0 => t.flush()?,
                Some(_) => {}
                // Records of a table that no longer exists: let its segments go.
                None => log.discard_table(*id)?,
            }
        }
        Ok(stats)
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
        )?;
        *table.compaction_signal.lock() = Some(self.compaction_signal.clone());
        self.tables.write().insert(key, table.clone());
        self.compaction_signal.notify();
        Ok(table)
    }

    fn persist(&self, catalog: &Catalog) -> Result<()> {
        let json = catalog
            .to_json()
            .map_err(|e| Error::InvalidInput(format!("schema serialization: {e}")))?;
        self.opts.fs.write_atomic(
            &self.dir.join(SCHEMA_FILE),
            json.as_bytes(),
            IoTag::new(IoCause::Metadata),
        )
    }

    pub fn create_keyspace(&self, name: &str) -> Result<()> {
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.create_keyspace(name)?;
        self.persist(&next)?;
        *catalog = next;
        Ok(())
    }

    /// Creates a table (invariant 1: the catalog is durable before it is usable).
    pub fn create_table(&self, schema: TableSchema) -> Result<Arc<Table>> {
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        // The catalog assigns the table id; open the table with its schema.
        let schema = next.create_table(schema)?.clone();
        self.persist(&next)?;
        *catalog = next;
        self.open_table(schema)
    }

    /// `CREATE TABLE ...` in CQL (the subset `TableSchema::from_cql` accepts); creates
    /// the keyspace too if it does not exist.
    pub fn create_table_cql(&self, cql: &str) -> Result<Arc<Table>> {
        let schema = TableSchema::from_cql(cql)?;
        if !self.catalog.lock().keyspaces.contains_key(&schema.keyspace) {
            self.create_keyspace(&schema.keyspace)?;
        }
        self.create_table(schema)
    }

    /// `ALTER TABLE ... WITH <options>`: validated first; on error nothing changes.
    /// Takes effect for the next flush / compaction decision.
    pub fn alter_table_options(&self, keyspace: &str, table: &str, options: &str) -> Result<()> {
        let t = self.table(keyspace, table)?;
        let mut catalog = self.catalog.lock();
        let mut next = catalog.clone();
        next.alter_table_options(keyspace, table, options)?;
        self.persist(&next)?;
        let schema = next.table(keyspace, table)?.clone();
        *catalog = next;
        t.set_schema(schema);
        Ok(())
    }

    pub fn table(&self, keyspace: &str, table: &str) -> Result<Arc<Table>> {
        self.tables
            .read()
            .get(&(keyspace.to_string(), table.to_string()))
            .cloned()
            .ok_or_else(|| Error::NotFound(format!("table {keyspace}.{table}")))
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
        let r = self.flush_all();
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
        let decision = Arc::new(Mutex::new(0usize));
        for n in 0..self.opts.concurrent_compactors {
            let tables = self.tables.clone();
            let signal = self.compaction_signal.clone();
            let limiter = self.limiter.clone();
            let stopping = self.stopping.clone();
            let decision = decision.clone();
            let handle = std::thread::Builder::new()
                .name(format!("strata-compaction-{n}"))
                .spawn(move || {
                    while !stopping.load(Ordering::Acquire) {
                        let seen = signal.generation();
                        let picked = {
                            let mut next = decision.lock();
                            let all: Vec<Arc<Table>> = tables.read().values().cloned().collect();
                            let start = *next;
                            *next = next.wrapping_add(1);
                            (0..all.len()).find_map(|i| {
                                let t = &all[(start + i) % all.len()];
                                t.next_compaction_task().map(|task| (t.clone(), task))
                            })
                        };
                        match picked {
                            Some((table, task)) => {
                                if table.run_compaction(&task, &limiter).is_err() {
                                    // Counted in the table's metrics; back off so a
                                    // persistent fault (disk full) does not spin.
                                    signal.wait_changed(seen, Duration::from_secs(1));
                                }
                            }
                            None => signal.wait_changed(seen, Duration::from_secs(1)),
                        }
                    }
                })
                .map_err(|e| Error::io(&self.dir, e))?;
            self.compactors.lock().push(handle);
        }
        Ok(())
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
            let busy = self.tables().iter().any(|t| {
                !t.active_compactions().is_empty()
                    || t.strategy()
                        .next_task(&t.sstable_infos(), &t.strategy_context())
                        .is_some()
            });
            if !busy {
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

/// A wake-up signal with a generation counter, so a waiter never misses a notify
/// that happened between its check and its wait.
#[derive(Debug, Default)]
pub struct Signal {
    generation: Mutex<u64>,
    cond: parking_lot::Condvar,
}

impl Signal {
    pub fn notify(&self) {
        *self.generation.lock() += 1;
        self.cond.notify_all();
    }

    pub fn generation(&self) -> u64 {
        *self.generation.lock()
    }

    /// Waits until the generation moves past `seen` or `timeout` passes.
    pub fn wait_changed(&self, seen: u64, timeout: Duration) {
        let mut g = self.generation.lock();
        if *g == seen {
            self.cond.wait_for(&mut g, timeout);
        }
    }
}
