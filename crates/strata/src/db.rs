//! The database: a data directory of keyspaces and tables, the schema catalog, and
//! the background flush executor.
//!
//! Layout on disk:
//! ```text
//! <data_dir>/schema.json             the catalog (atomically replaced)
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
//! 2. `close()` flushes every memtable: until the commit log lands (issue 3), a
//!    process that exits without `close()` loses unflushed writes.

use crate::clock::Clock;
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

const SCHEMA_FILE: &str = "schema.json";

/// How to open a database.
#[derive(Clone, Debug)]
pub struct DbOptions {
    /// Source of every "now" (DESIGN.md §3).
    pub clock: Arc<dyn Clock>,
    /// The file-system layer; tests pass one with armed faults.
    pub fs: Fs,
    pub table: TableRuntimeOptions,
}

impl DbOptions {
    pub fn new(clock: Arc<dyn Clock>) -> DbOptions {
        DbOptions {
            clock,
            fs: Fs::new(),
            table: TableRuntimeOptions::default(),
        }
    }
}

pub struct Database {
    dir: PathBuf,
    opts: DbOptions,
    catalog: Mutex<Catalog>,
    tables: RwLock<BTreeMap<(String, String), Arc<Table>>>,
    flush_tx: Sender<FlushJob>,
    flusher: Mutex<Option<JoinHandle<()>>>,
    stopping: Arc<AtomicBool>,
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
        let db = Database {
            dir: dir.to_path_buf(),
            opts,
            catalog: Mutex::new(catalog.clone()),
            tables: RwLock::new(BTreeMap::new()),
            flush_tx,
            flusher: Mutex::new(Some(flusher)),
            stopping,
        };
        for ks in catalog.keyspaces.values() {
            for t in ks.tables.values() {
                db.open_table(t.clone())?;
            }
        }
        Ok(db)
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
        )?;
        self.tables.write().insert(key, table.clone());
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
        r
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
    }
}

impl Drop for Database {
    fn drop(&mut self) {
        self.shutdown();
    }
}
