//! A table: its memtables, its live sstables, its write and read paths, flushing
//! and metrics.
//!
//! Threads: any number of writers and readers; one background flush executor per
//! database (see `db`); `flush()` may also be called from any thread.
//!
//! Write path: `apply` waits while too many memtables are pending flush (bounded
//! back-pressure), applies the update to the active memtable under the view's read
//! lock, and switches the memtable when it passes `memtable_flush_threshold`.
//! Switching takes the view's write lock, so no write is in flight in a memtable
//! once it is switched out: its contents are final when the flush starts.
//!
//! Invariants:
//! 1. A memtable leaves the view only after its sstable is durable and listed in a
//!    durable manifest; readers therefore always find every applied write in
//!    exactly one of: a memtable in the view, or a live sstable.
//! 2. Memtables flush in the order they were switched out (one flush per table at
//!    a time), so a newer memtable never reaches disk before an older one.
//! 3. Memory is bounded: at most `max_pending_flushes + 1` memtables (plus writes
//!    in flight) exist per table; past that, writers wait, and if the last flush
//!    failed they get an error instead of waiting forever.
//! 4. The live sstables change only by one [`crate::version::VersionEdit`] at a
//!    time ([`Table::apply_edit`], and the flush's edit), under the manifest lock:
//!    checked against the current version, made durable in the manifest, then
//!    swapped into the view whole. Removed sstables are marked obsolete only after
//!    that; their files are unlinked by the runtime (fs.rs invariant 5), never by a
//!    reader's thread.
//! 5. Every flush and every compaction passes the disk-space guard
//!    ([`Table::check_disk_space`]) first; it reads the fs layer's tracked usage,
//!    and a refusal is counted and reported, never silently skipped.

use crate::clock::Clock;
use crate::commitlog::CommitLog;
use crate::compaction::live_bytes;
use crate::compaction::runtime::{Signal, TableCompactions};
use crate::data::{
    CellKind, ClusteringBound, ClusteringRange, ColumnId, DecoratedKey, PartitionUpdate, Row,
};
use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoCounters, IoSnapshot, IoTag};
use crate::manifest::{Manifest, SSTableEntry};
use crate::memtable::Memtable;
use crate::read::{
    self, PagingState, PartitionResult, SSTableEdit, SSTableVersion, ScanPage, ValueSlice, View,
};
use crate::schema::{TableSchema, WriteOptions};
use crate::split::{OutputSet, SSTableOutputs};
use crate::sstable::partition::decode_row_body;
use crate::sstable::{
    data_file_name, parse_data_file_name, SSTableReader, SSTableWriter, WriterOptions,
};
use crate::types::Value;
use crate::version::{EditError, LiveSSTable, Version};
use parking_lot::{Condvar, Mutex, RwLock};
use smallvec::SmallVec;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// A row as typed values: every column in schema order, `None` for null.
pub type TypedRow = Vec<(String, Option<Value>)>;

/// Buckets of the sstables-per-read histogram: 0, 1, 2, ... 15, 16+.
pub const SSTABLES_PER_READ_BUCKETS: usize = 17;

/// Counters behind `tablestats` and `tablehistograms`.
#[derive(Debug, Default)]
pub struct TableMetrics {
    pub write_count: AtomicU64,
    /// Nanoseconds, so that writes and reads under a microsecond count
    /// (whole microseconds rounded each one down to 0).
    pub write_latency_nanos_total: AtomicU64,
    pub read_count: AtomicU64,
    pub read_latency_nanos_total: AtomicU64,
    /// Microseconds of each read and write (`tablehistograms`).
    pub read_latency_micros: crate::latency::LatencyHistogram,
    pub write_latency_micros: crate::latency::LatencyHistogram,
    pub write_stall_micros_total: AtomicU64,
    /// Writes refused because memtables were full and flushes were failing.
    pub writes_refused: AtomicU64,
    pub memtable_switch_count: AtomicU64,
    pub flush_count: AtomicU64,
    pub flush_failures: AtomicU64,
    pub sstables_per_read: [AtomicU64; SSTABLES_PER_READ_BUCKETS],
    /// Flushes or compactions refused by the disk-space guard.
    pub space_refusals: AtomicU64,
    /// Compactions that wrote into each level, and their time.
    pub compactions_into_level: [AtomicU64; crate::fs::MAX_TRACKED_LEVELS],
    pub compaction_micros_into_level: [AtomicU64; crate::fs::MAX_TRACKED_LEVELS],
    pub compactions_failed: AtomicU64,
    /// Flushes made during commit-log replay because the memtable filled up.
    pub replay_flush_count: AtomicU64,
    /// Blob strategy: sstables newly found sharing live rows with another (an
    /// overwrite or partial update of a block, against the strategy's
    /// assumption), counted once each time the accounting first sees it.
    pub blob_overwrites_detected: AtomicU64,
    /// Blob strategy: sstables whose accounting failed (a read error) and were
    /// left unaccounted, so neither dropped nor rewritten.
    pub live_bytes_accounting_failures: AtomicU64,
}

/// Table behaviour that is not a CQL table option.
#[derive(Clone, Debug)]
pub struct TableRuntimeOptions {
    /// Memtables that may wait for flush before writers block (Cassandra's
    /// `memtable_flush_writers` queue; RocksDB's `max_write_buffer_number` - 1).
    pub max_pending_flushes: usize,
    /// Level-0 sstables at which each write is delayed by 1 ms (RocksDB's
    /// `level0_slowdown_writes_trigger`; default 32, Cassandra's L0 size-tiered
    /// fallback point). Under STCS every sstable is level 0. Not applied to TWCS
    /// and DTCS, which hold one or more sstables per time window by design.
    pub l0_slowdown_writes_trigger: usize,
    /// Level-0 sstables at which writes stop until compaction catches up (RocksDB's
    /// `level0_stop_writes_trigger`; default 64).
    pub l0_stop_writes_trigger: usize,
    /// Data-directory size limit (Strata's `max_disk_bytes`): a flush or
    /// compaction whose estimated output would push the directory past it is
    /// refused. `None` = only the filesystem's free space counts.
    pub max_disk_bytes: Option<u64>,
    /// Free space kept in reserve on the filesystem (default 64 MiB).
    pub disk_reserve_bytes: u64,
    /// Whether tables may use TWCS's `unsafe_aggressive_sstable_expiration`
    /// (default false). Off, CREATE and ALTER refuse the option, and a table
    /// that has it runs with the overlap check kept. Cassandra's JVM property
    /// `cassandra.allow_unsafe_aggressive_sstable_expiration`, a per-node
    /// switch for the same reason: dropping sstables without the overlap check
    /// can resurrect deleted data, so one table option alone must not do it.
    pub allow_unsafe_aggressive_sstable_expiration: bool,
}

impl Default for TableRuntimeOptions {
    fn default() -> Self {
        TableRuntimeOptions {
            max_pending_flushes: 2,
            l0_slowdown_writes_trigger: 32,
            l0_stop_writes_trigger: 64,
            max_disk_bytes: None,
            disk_reserve_bytes: 64 << 20,
            allow_unsafe_aggressive_sstable_expiration: false,
        }
    }
}

/// Work for the flush executor.
pub(crate) enum FlushJob {
    Flush(Arc<Table>),
    Shutdown,
}

#[derive(Debug)]
pub struct Table {
    dir: PathBuf,
    schema: RwLock<Arc<TableSchema>>,
    fs: Fs,
    clock: Arc<dyn Clock>,
    io: Arc<IoCounters>,
    pub(crate) view: RwLock<Arc<View>>,
    manifest: Mutex<Manifest>,
    /// Serialises flushes of this table (invariant 2).
    flush_lock: Mutex<()>,
    pub(crate) flushed: Condvar,
    pub(crate) flushed_mutex: Mutex<()>,
    last_flush_error: Mutex<Option<String>>,
    next_memtable_id: AtomicU64,
    pub(crate) runtime: TableRuntimeOptions,
    flush_tx: Mutex<Option<Sender<FlushJob>>>,
    /// The database's commit log; `None` only for tables opened without one (tests).
    commitlog: Option<Arc<CommitLog>>,
    pub(crate) compaction: TableCompactions,
    /// Wakes the database's compaction manager (set when opened by a database).
    pub(crate) compaction_signal: Mutex<Option<Arc<Signal>>>,
    pub metrics: TableMetrics,
    /// Opened by a read-only database: every change is refused.
    read_only: bool,
    /// Listed sstables that could not be opened; out of the view, never deleted.
    /// Fixed when the table opens (a later failure to read an sstable is an
    /// error of that read, not an entry here), so every read checks it without
    /// a lock.
    unreadable: Vec<Arc<UnreadableSSTable>>,
    /// `memtable_flush_period_in_ms`: the memtable the next period check is
    /// for and when it is due (engine clock, microseconds), so an empty
    /// memtable is checked again one period later, as Cassandra reschedules.
    period_check: Mutex<(u64, i64)>,
    open_notes: Vec<String>,
    /// The last accounting failure of the blob strategy (sstable id and error),
    /// shown by `tablestats`.
    pub(crate) last_accounting_error: Mutex<Option<String>>,
    /// Set while commit-log replay runs: its flushes turn log bytes into sstable
    /// bytes, so the `max_disk_bytes` quota does not stop them (the free-space
    /// reserve still does).
    pub(crate) recovering: std::sync::atomic::AtomicBool,
    /// Compression dictionaries (`crate::table_dictionary`).
    pub(crate) dictionaries: crate::dictionary::TableDictionaries,
    /// Counter writes' partition locks, striped by token, each holding the
    /// last timestamp it gave out ([`Table::apply_counters`]).
    counter_locks: Vec<Mutex<i64>>,
    /// Flushes since creation ([`LifetimeCounters`]).
    lifetime: Mutex<LifetimeCounters>,
}

/// The table's counters that outlive a restart, in the table directory.
const LIFETIME_FILE: &str = "table_counters.json";

/// What a table has flushed since it was created (kept in
/// [`LIFETIME_FILE`], rewritten after each flush), so that write
/// amplification since creation survives a restart: compactions are counted
/// from the table's compaction history. A crash between a flush and the
/// rewrite leaves that flush uncounted (a statistic, not data).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LifetimeCounters {
    pub flushes: u64,
    pub bytes_flushed: u64,
}

/// Stripes of [`Table::counter_locks`].
const COUNTER_LOCK_STRIPES: usize = 64;

/// The room the disk-space guard sees ([`Table::disk_room`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DiskRoom {
    /// `(used, max_disk_bytes)` when a quota applies.
    pub quota: Option<(u64, u64)>,
    /// Free bytes of the file system (`None` if it cannot tell).
    pub free_bytes: Option<u64>,
    pub reserve_bytes: u64,
}

impl DiskRoom {
    /// Bytes a write may still take: the tighter of the quota's remainder and
    /// free space minus the reserve (`None`: no limit known).
    pub fn headroom_bytes(&self) -> Option<u64> {
        let quota = self.quota.map(|(used, limit)| limit.saturating_sub(used));
        let free = self
            .free_bytes
            .map(|f| f.saturating_sub(self.reserve_bytes));
        match (quota, free) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }
}

/// A listed sstable whose file could not be opened, or is not this table's.
#[derive(Debug)]
pub struct UnreadableSSTable {
    pub id: u64,
    pub level: u32,
    pub path: PathBuf,
    /// The damage: file offset and reason (0 when the file is missing).
    pub offset: u64,
    pub reason: String,
    /// Token range from the manifest; `None` means it may hold any token.
    pub token_range: Option<(i64, i64)>,
}

impl UnreadableSSTable {
    fn new(entry: &SSTableEntry, path: PathBuf, err: Error) -> UnreadableSSTable {
        let (offset, reason) = match err {
            Error::Corruption { offset, reason, .. } => (offset, reason),
            other => (0, other.to_string()),
        };
        UnreadableSSTable {
            id: entry.id,
            level: entry.level,
            path,
            offset,
            reason,
            token_range: entry.first_token.zip(entry.last_token),
        }
    }

    /// Whether a read of `token` (`None`: a scan, any token) could need this file.
    pub fn covers(&self, token: Option<i64>) -> bool {
        match (token, self.token_range) {
            (Some(t), Some((lo, hi))) => lo <= t && t <= hi,
            _ => true,
        }
    }

    pub fn error(&self) -> Error {
        Error::corruption(
            &self.path,
            self.offset,
            format!(
                "sstable {} is unreadable ({}); reads that could need it fail until it is \
                 restored (`strata sstable import`) or salvaged (`strata sstable scrub`)",
                self.id, self.reason
            ),
        )
    }
}

/// Checks that an opened sstable belongs to this table: a file replaced by a copy
/// of another sstable, or a table re-created with other column types, must not be
/// read as this table's data. Files of format version 1 carry no identity and
/// pass unchecked.
///
/// `generation` is the id the manifest lists the file under (`None` for an
/// import, which adopts files of other tables and ids if their columns match).
pub(crate) fn check_identity(
    schema: &TableSchema,
    reader: &SSTableReader,
    generation: Option<u64>,
) -> Result<()> {
    let Some(identity) = reader.identity() else {
        // Format 1 predates decimal clustering keys compared by value: its keys
        // would be read in a different order than they were sorted in
        // (docs/FORMAT.md, "Decimal clustering keys"). Such files reach a table
        // only through import; a table created by that build is not opened.
        if schema
            .clustering_columns()
            .any(|c| c.ty == crate::types::CqlType::Decimal)
        {
            let reason = format!(
                "format-1 sstable for table {}, whose decimal clustering column was encoded \
                 before decimal keys compared by value (1.5 and 1.50 as two keys)",
                schema.qualified_name()
            );
            return Err(match generation {
                Some(_) => Error::corruption(reader.path(), 0, reason),
                None => Error::InvalidInput(format!("{}: {reason}", reader.path().display())),
            });
        }
        return Ok(());
    };
    // A listed file that is not what the manifest says is corruption of the
    // data directory (at the header, offset 0); a file offered for import that
    // does not fit is bad input, refused before anything changes.
    let refuse = |why: String| {
        let reason = format!(
            "sstable identity does not match: {why} (table {}, id {})",
            schema.qualified_name(),
            schema.id
        );
        Err(match generation {
            Some(_) => Error::corruption(reader.path(), 0, reason),
            None => Error::InvalidInput(format!("{}: {reason}", reader.path().display())),
        })
    };
    if let Some(listed) = generation {
        if let (Some(file), Some(ours)) = (identity.table_uuid, schema.table_uuid()) {
            if file != ours {
                return refuse(format!(
                    "the file was written for table {} with UUID {file} (table id {}, \
                     generation {}), this table's UUID is {ours}: an sstable of another data \
                     directory, or of a table of this name dropped since",
                    identity.qualified_name(),
                    identity.table_id,
                    identity.generation
                ));
            }
        }
        if identity.table_id != schema.id {
            return refuse(format!(
                "the file was written for table {} (table id {}), generation {}",
                identity.qualified_name(),
                identity.table_id,
                identity.generation
            ));
        }
        if identity.generation != listed {
            return refuse(format!(
                "the file was written as generation {}, listed as {listed}: a copy of another \
                 sstable under this name",
                identity.generation
            ));
        }
    }
    if let Some(why) = identity.column_mismatch(schema) {
        return refuse(format!(
            "{why} (file written for {}, table id {}, generation {})",
            identity.qualified_name(),
            identity.table_id,
            identity.generation
        ));
    }
    Ok(())
}

/// Why a listed file says that `schema` is not the schema it was written
/// under (docs/DURABILITY.md, "Every sstable says whose it is"), if it does:
/// it has regular or static columns the schema never had (their cells would
/// be hidden from every read), or the manifest vouches for it (`vouched`: its
/// size and digest are recorded and match) and it names another table UUID,
/// another table id or other column types. A file the manifest cannot vouch
/// for that differs so is a substitute, set aside by [`check_identity`].
fn schema_mismatch(
    schema: &TableSchema,
    identity: &crate::sstable::SSTableIdentity,
    path: &Path,
    vouched: bool,
) -> Option<String> {
    let file = path.display();
    let unknown = identity.columns_unknown_to(schema);
    if !unknown.is_empty() {
        let names: Vec<String> = unknown
            .iter()
            .map(|c| {
                format!(
                    "{} {} (column id {})",
                    c.name,
                    c.type_name(),
                    c.id.unwrap_or(0)
                )
            })
            .collect();
        return Some(format!(
            "{file} holds column(s) {} that the schema has never had (its next column id is {})",
            names.join(", "),
            schema.next_column_id()
        ));
    }
    if !vouched {
        return None;
    }
    match (identity.table_uuid, schema.table_uuid()) {
        (Some(theirs), Some(ours)) if theirs != ours => {
            return Some(format!(
                "{file}, which the table's MANIFEST lists with its size and digest, was \
                 written for table UUID {theirs}, where schema.json says {ours}"
            ))
        }
        _ => {}
    }
    if identity.table_id != schema.id {
        return Some(format!(
            "{file}, which the table's MANIFEST lists with its size and digest, was written \
             for table id {}, where schema.json says {}",
            identity.table_id, schema.id
        ));
    }
    identity.column_mismatch(schema).map(|why| {
        format!("{file}, which the table's MANIFEST lists with its size and digest: {why}")
    })
}

fn missing_manifest(schema: &TableSchema, dir: &Path, files: usize) -> Error {
    Error::NeedsRepair(format!(
        "table {}: {} holds {files} sstable file(s) but no MANIFEST, so which of them are \
         live is unknown; nothing was changed. Check that no sstable is missing, then run \
         `strata manifest rebuild {}` to rebuild the manifest from the files' own metadata",
        schema.qualified_name(),
        dir.display(),
        schema.qualified_name()
    ))
}

fn schema_refusal(schema: &TableSchema, problems: &[String]) -> Error {
    Error::NeedsRepair(format!(
        "schema.json does not describe the files of table {}: {}. schema.json is older than \
         these files or comes from another data directory, and opening with it would hide \
         their data; nothing was changed. Restore this directory's schema.json from a backup, \
         or move it aside and run `strata schema rebuild`, which re-creates it from the \
         sstables' own headers",
        schema.qualified_name(),
        problems.join("; ")
    ))
}

/// The refusals [`Table::open`] would make, checked before the database
/// changes anything (the commit log's open seals and starts segments): a
/// missing MANIFEST beside sstables, a MANIFEST of another table UUID, and a
/// schema its files show is not theirs. Reads the manifest and each listed
/// file's identity header only; a file whose size is not the recorded one is
/// left to the open, which sets it aside. Writes nothing.
pub(crate) fn check_before_open(fs: &Fs, dir: &Path, schema: &TableSchema) -> Result<()> {
    if !dir.is_dir() {
        return Ok(());
    }
    let files = fs
        .list_dir(dir)?
        .iter()
        .filter(|n| parse_data_file_name(n).is_some())
        .count();
    if !Manifest::exists(dir) {
        return match files {
            0 => Ok(()),
            n => Err(missing_manifest(schema, dir, n)),
        };
    }
    let manifest = Manifest::open(fs, dir)?;
    check_manifest_uuid(fs, dir, schema, &manifest)?;
    let mut problems = Vec::new();
    for e in &manifest.data().sstables {
        let path = dir.join(data_file_name(e.id));
        let facts = e.facts();
        let size_ok = fs.file_len(&path).ok() == facts.size_bytes;
        if facts.size_bytes.is_some() && !size_ok {
            continue;
        }
        if let Ok((identity, _)) = crate::sstable::salvage::read_identity_header(fs, &path) {
            let vouched = facts.is_complete() && size_ok;
            problems.extend(schema_mismatch(schema, &identity, &path, vouched));
        }
    }
    match problems.is_empty() {
        true => Ok(()),
        false => Err(schema_refusal(schema, &problems)),
    }
}

/// The table UUID a table directory's own files name, for a schema that has
/// none: its MANIFEST's, else the one every listed sstable's identity header
/// names, if they agree (a schema that lost its UUID keeps the files').
/// `None` for a directory from before UUIDs.
pub(crate) fn uuid_named_by_files(fs: &Fs, dir: &Path) -> Option<crate::schema::TableUuid> {
    let manifest = Manifest::open(fs, dir).ok()?;
    if let Some(u) = manifest.data().table_uuid {
        return Some(u);
    }
    let mut named = manifest.data().sstables.iter().map(|e| {
        crate::sstable::salvage::read_identity_header(fs, &dir.join(data_file_name(e.id)))
            .ok()
            .and_then(|(identity, _)| identity.table_uuid)
    });
    let first = named.next()??;
    named.all(|u| u == Some(first)).then_some(first)
}

/// The MANIFEST and the schema must name the same table UUID (manifest
/// invariant 6); when they differ, the table's files say which of the two is
/// the stranger, and the error names the repair of that one.
fn check_manifest_uuid(
    fs: &Fs,
    dir: &Path,
    schema: &TableSchema,
    manifest: &Manifest,
) -> Result<()> {
    let (Some(listed), Some(ours)) = (manifest.data().table_uuid, schema.table_uuid()) else {
        return Ok(());
    };
    if listed == ours {
        return Ok(());
    }
    let (mut with_schema, mut with_manifest) = (0usize, 0usize);
    for e in &manifest.data().sstables {
        let path = dir.join(data_file_name(e.id));
        let uuid = crate::sstable::salvage::read_identity_header(fs, &path)
            .ok()
            .and_then(|(identity, _)| identity.table_uuid);
        with_schema += usize::from(uuid == Some(ours));
        with_manifest += usize::from(uuid == Some(listed));
    }
    let name = schema.qualified_name();
    let path = dir.join(crate::manifest::MANIFEST_FILE);
    Err(Error::NeedsRepair(if with_schema > with_manifest {
        format!(
            "{} names table UUID {listed}, but schema.json and {with_schema} of the table's \
             sstables name {ours}: this MANIFEST belongs to a table of another data directory \
             (or another copy); nothing was changed. Move it aside and run `strata manifest \
             rebuild {name}`, which lists the table's sstables again from their own metadata",
            path.display()
        )
    } else {
        format!(
            "schema.json gives table {name} the UUID {ours}, but its MANIFEST ({}) and \
             {with_manifest} of its sstables name {listed}: schema.json comes from another data \
             directory (or another copy of it); nothing was changed. Restore this directory's \
             schema.json from a backup, or move it aside and run `strata schema rebuild`, \
             which re-creates it from the sstables' own headers",
            path.display()
        )
    }))
}

/// How often a read-only open starts over because the owner moved the live
/// set while it opened the listed sstables ([`Table::open`]); each start
/// over costs a directory listing and the opens, and a compaction rarely
/// lands twice in that window.
const READ_ONLY_OPEN_ATTEMPTS: u32 = 5;

impl Table {
    /// Opens (or creates) the table stored in `dir`, cleaning up after a crash
    /// (manifest invariant 3). `read_only` opens write nothing at all: unlisted
    /// files are reported, not quarantined, and every change is refused.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn open(
        dir: &Path,
        schema: TableSchema,
        fs: &Fs,
        clock: Arc<dyn Clock>,
        runtime: TableRuntimeOptions,
        flush_tx: Option<Sender<FlushJob>>,
        commitlog: Option<Arc<CommitLog>>,
        read_only: bool,
    ) -> Result<Arc<Table>> {
        // A read-only open may run beside the directory's owner, which can
        // replace sstables (a compaction) between this open's reading of the
        // manifest and of the files: a listed file then vanishes though nothing
        // is wrong (`verify` beside `stress write` reported a live sstable
        // missing). So when a listed sstable fails to open, a read-only open
        // reads the manifest again and starts over if the live set moved; only
        // a failure under an unchanged manifest is reported. A read-write open
        // owns the directory: nothing moves under it.
        let io = IoCounters::new();
        let mut attempts = 0;
        let (names, data_files, manifest, listed, sstables, unreadable, mut notes) = loop {
            let names = fs.list_dir(dir)?;
            let data_files: Vec<(u64, String)> = names
                .iter()
                .filter_map(|n| parse_data_file_name(n).map(|id| (id, n.clone())))
                .collect();
            if !Manifest::exists(dir) && !data_files.is_empty() {
                return Err(missing_manifest(&schema, dir, data_files.len()));
            }
            let mut manifest = Manifest::open(fs, dir)?;
            if read_only {
                manifest.set_read_only();
            }
            check_manifest_uuid(fs, dir, &schema, &manifest)?;
            // Files the manifest vouches for (their facts match) that name
            // another table UUID, or columns the schema never had, say that
            // the schema is the stranger (`schema_mismatch`).
            let mut schema_problems = Vec::new();
            let listed: std::collections::HashMap<u64, u32> = manifest
                .data()
                .sstables
                .iter()
                .map(|e| (e.id, e.level))
                .collect();
            let mut notes = Vec::new();
            // Open every listed sstable. One that cannot be opened (missing, damaged
            // tail, or not this table's) is set aside as unreadable instead of failing
            // the whole database: reads that could need it fail, everything else works.
            let mut sstables = Vec::new();
            let mut unreadable = Vec::new();
            for e in &manifest.data().sstables {
                let path = dir.join(data_file_name(e.id));
                let opened = SSTableReader::open(fs, &path, e.id, Some(io.clone())).and_then(|r| {
                    // Manifest invariant 6: the file must be the one the
                    // manifest recorded. Its identity is asked first, as
                    // its reason is the more telling (another table,
                    // another directory, other columns).
                    let substitute = e.facts().mismatch(&r);
                    if let Some(identity) = r.identity() {
                        let vouched = e.facts().is_complete() && substitute.is_none();
                        schema_problems.extend(schema_mismatch(
                            &schema,
                            identity,
                            r.path(),
                            vouched,
                        ));
                    }
                    check_identity(&schema, &r, Some(e.id))?;
                    match substitute {
                        Some(why) => Err(Error::corruption(&path, 0, why)),
                        None => Ok(r),
                    }
                });
                match opened {
                    Ok(r) => sstables.push(LiveSSTable {
                        id: e.id,
                        level: e.level,
                        handle: r,
                        live: e.live,
                    }),
                    Err(err) => {
                        notes.push(format!(
                            "table {}: sstable {} is unreadable and left out of the live set: {err}",
                            schema.qualified_name(),
                            path.display()
                        ));
                        unreadable.push(Arc::new(UnreadableSSTable::new(e, path, err)));
                    }
                }
            }
            if read_only && !unreadable.is_empty() && attempts < READ_ONLY_OPEN_ATTEMPTS {
                attempts += 1;
                let ids = |m: &Manifest| m.data().sstables.iter().map(|e| e.id).collect::<Vec<_>>();
                if ids(&Manifest::open(fs, dir)?) != ids(&manifest) {
                    continue;
                }
            }
            if !schema_problems.is_empty() {
                return Err(schema_refusal(&schema, &schema_problems));
            }
            break (
                names, data_files, manifest, listed, sstables, unreadable, notes,
            );
        };
        let mut manifest = manifest;
        if !read_only {
            // Manifests from before format 2 gain the table's UUID and the facts
            // of the files just opened and checked (manifest invariant 6).
            let facts: Vec<(u64, crate::manifest::SSTableFacts)> = sstables
                .iter()
                .map(|s| (s.id, crate::manifest::SSTableFacts::of(&s.handle)))
                .collect();
            manifest.record_missing_facts(schema.table_uuid(), &facts)?;
        }
        for (id, name) in &data_files {
            if listed.contains_key(id) {
                continue;
            }
            if read_only {
                notes.push(format!(
                    "table {}: {} is not in the manifest (left in place: read-only open)",
                    schema.qualified_name(),
                    dir.join(name).display()
                ));
            } else {
                let to = crate::quarantine::quarantine_file(fs, dir, name)?;
                notes.push(format!(
                    "table {}: {} is not in the manifest (most often the output of a flush or \
                     compaction interrupted by a crash); moved to {}. Restore it with `strata \
                     sstable import {} {}` or delete it with `strata quarantine purge {}`",
                    schema.qualified_name(),
                    name,
                    to.display(),
                    schema.qualified_name(),
                    to.display(),
                    schema.qualified_name()
                ));
            }
        }
        if !read_only {
            for name in names.iter().filter(|n| n.ends_with(".tmp")) {
                // Never renamed to a final name, so never listed or acknowledged.
                fs.remove(&dir.join(name))?;
            }
        }
        let dictionaries = crate::dictionary::TableDictionaries::open(
            fs,
            dir,
            &schema.qualified_name(),
            &mut notes,
        );
        let lifetime = match fs.read_all(
            &dir.join(LIFETIME_FILE),
            64 << 10,
            IoTag::new(IoCause::Metadata),
        ) {
            Ok(bytes) => serde_json::from_slice(&bytes).unwrap_or_else(|e| {
                notes.push(format!(
                    "{}: unreadable ({e}); counting flushes from now",
                    dir.join(LIFETIME_FILE).display()
                ));
                LifetimeCounters::default()
            }),
            // None yet: a new table, or one from before these counters.
            Err(_) => LifetimeCounters::default(),
        };
        let memtable = Arc::new(Memtable::new(1, clock.now_micros()));
        // Manifest ids are unique (it is written from a version): an error here
        // is a damaged manifest, reported as such.
        let version = Version::from_sstables(sstables).map_err(|e| {
            Error::corruption(dir.join(crate::manifest::MANIFEST_FILE), 0, e.to_string())
        })?;
        Ok(Arc::new(Table {
            dir: dir.to_path_buf(),
            schema: RwLock::new(Arc::new(schema)),
            fs: fs.clone(),
            clock,
            io,
            view: RwLock::new(Arc::new(View::new(vec![memtable], Arc::new(version)))),
            manifest: Mutex::new(manifest),
            flush_lock: Mutex::new(()),
            flushed: Condvar::new(),
            flushed_mutex: Mutex::new(()),
            last_flush_error: Mutex::new(None),
            next_memtable_id: AtomicU64::new(2),
            runtime,
            flush_tx: Mutex::new(flush_tx),
            commitlog,
            compaction: Default::default(),
            compaction_signal: Mutex::new(None),
            metrics: TableMetrics::default(),
            read_only,
            unreadable,
            period_check: Mutex::new((0, i64::MIN)),
            open_notes: notes,
            last_accounting_error: Mutex::new(None),
            recovering: std::sync::atomic::AtomicBool::new(false),
            dictionaries,
            counter_locks: (0..COUNTER_LOCK_STRIPES)
                .map(|_| Mutex::new(i64::MIN))
                .collect(),
            lifetime: Mutex::new(lifetime),
        }))
    }

    /// Makes every later manifest commit first check that this process still
    /// owns the data directory (manifest invariant 7).
    pub(crate) fn set_owner_check(&self, check: crate::fs::OwnerCheck) {
        self.manifest.lock().set_owner_check(check);
    }

    /// What opening this table reported: quarantined files, unreadable sstables.
    pub fn open_notes(&self) -> &[String] {
        &self.open_notes
    }

    /// Listed sstables that could not be opened (see [`UnreadableSSTable`]).
    pub fn unreadable_sstables(&self) -> Vec<Arc<UnreadableSSTable>> {
        self.unreadable.clone()
    }

    /// The error of the first unreadable sstable whose token range covers
    /// `token` (`None` for every token when no range is known), if any: a read of
    /// that token could need its data, so it must fail rather than answer without.
    pub fn unreadable_covering(&self, token: Option<i64>) -> Option<Error> {
        self.unreadable
            .iter()
            .find(|u| u.covers(token))
            .map(|u| u.error())
    }

    pub fn schema(&self) -> Arc<TableSchema> {
        self.schema.read().clone()
    }

    pub(crate) fn set_schema(&self, schema: TableSchema) {
        *self.schema.write() = Arc::new(schema);
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn clock(&self) -> &Arc<dyn Clock> {
        &self.clock
    }

    /// The current snapshot of memtables and sstables.
    pub fn view(&self) -> Arc<View> {
        self.view.read().clone()
    }

    /// Bytes this table read and wrote, per cause.
    pub fn io(&self) -> IoSnapshot {
        self.io.snapshot()
    }

    pub fn io_counters(&self) -> &Arc<IoCounters> {
        &self.io
    }

    /// Applies an update of a counter table whose counter cells hold pending
    /// increments (`TableSchema::update_counters`; `crate::counter` contract
    /// 2). Under the partition's counter lock, each increment becomes its
    /// writer's stored shard, counted from the value a read sees now, at a
    /// timestamp above the lock's last one; that timestamp is the shard's
    /// clock too, so each increment's clock is above every earlier one of its
    /// counter, also one a row deletion has shadowed (an increment after the
    /// deletion counts from zero and wins wherever the two meet).
    pub fn apply_counters(self: &Arc<Self>, mut update: PartitionUpdate) -> Result<()> {
        if self.read_only {
            return Err(self.read_only_error());
        }
        let stripe = (update.key.token as u64 % COUNTER_LOCK_STRIPES as u64) as usize;
        let mut last = self.counter_locks[stripe].lock();
        let ts = self.clock.now_micros().max(last.saturating_add(1));
        *last = ts;
        let counters = |r: &Row| r.cells.iter().any(|c| c.kind == CellKind::Counter);
        // Every read of the partition brings its static row: the static
        // counters resolve against the first row's read, or one of their own.
        let mut static_row = None;
        for row in update.rows.iter_mut().filter(|r| counters(r)) {
            let range = ClusteringRange {
                start: ClusteringBound::inclusive(row.clustering.clone()),
                end: ClusteringBound::inclusive(row.clustering.clone()),
            };
            let read = self.read(&update.key, &range, false, 1)?;
            self.resolve_counters(row, read.rows.first(), ts)?;
            static_row.get_or_insert(read.static_row);
        }
        if let Some(st) = update.static_row.as_mut().filter(|r| counters(r)) {
            let current = match static_row {
                Some(current) => current,
                None => {
                    self.read(&update.key, &ClusteringRange::ALL, false, 1)?
                        .static_row
                }
            };
            self.resolve_counters(st, current.as_ref(), ts)?;
        }
        self.apply_resolved(&update)
    }

    /// `row`'s pending increments resolved against `current`, the live view
    /// of the same row, all at `ts`.
    fn resolve_counters(&self, row: &mut Row, current: Option<&Row>, ts: i64) -> Result<()> {
        for c in row.cells.iter_mut().filter(|c| c.kind == CellKind::Counter) {
            let now = current.and_then(|r| {
                r.cells
                    .iter()
                    .find(|x| x.column == c.column && x.kind == CellKind::Counter)
            });
            c.value = crate::counter::resolve(&c.value, now.map(|x| x.value.as_slice()), ts)
                .map_err(|e| {
                    Error::corruption(
                        &self.dir,
                        0,
                        format!(
                            "a counter of column id {} cannot be read: {}",
                            c.column, e.0
                        ),
                    )
                })?;
            c.timestamp_micros = ts;
        }
        Ok(())
    }

    /// Applies one partition update (already validated by the schema layer).
    /// Counter increments go through [`Table::apply_counters`]: an update
    /// still holding one is refused rather than stored (a replay would count
    /// its shard twice).
    pub fn apply(self: &Arc<Self>, update: &PartitionUpdate) -> Result<()> {
        if has_pending_counters(update) {
            return Err(Error::InvalidInput(
                "an update with pending counter increments goes through apply_counters".to_string(),
            ));
        }
        self.apply_resolved(update)
    }

    /// [`Table::apply`] of an update with no pending counter increment.
    fn apply_resolved(self: &Arc<Self>, update: &PartitionUpdate) -> Result<()> {
        if self.read_only {
            return Err(self.read_only_error());
        }
        let started = Instant::now();
        let (threshold, table_id, flush_period) = {
            let schema = self.schema.read();
            (
                schema.options.memtable_flush_threshold_bytes,
                schema.id,
                schema.options.memtable_flush_period_in_ms,
            )
        };
        let (switch, ticket) = {
            // The commit-log append happens under the view's read lock, so a switch
            // (write lock) sees every record before its position applied to the
            // memtable it switches out (invariant 1).
            //
            // One read lock per write: the back-pressure checks read the same
            // snapshot the append then goes under. Only a write that may have to
            // wait drops it, waits as before, and takes it again. Three read
            // locks of the one shared view lock per write were three pairs of
            // atomic updates on a cache line every writer shares
            // (BENCHMARKS.md, "Write path (issue 15)").
            let mut view = self.view.read();
            if view.l0_count() >= self.runtime.l0_slowdown_writes_trigger
                || view.pending_flushes() > self.runtime.max_pending_flushes
            {
                drop(view);
                self.wait_for_compaction_debt();
                self.wait_for_flush_capacity()?;
                view = self.view.read();
            }
            let ticket = match &self.commitlog {
                Some(log) => Some(log.append(table_id, update)?.1),
                None => None,
            };
            let active = view.active();
            active.apply(update);
            (
                (active.memory_bytes() >= threshold).then(|| active.id()),
                ticket,
            )
        };
        if let Some(id) = switch {
            self.switch_memtable(id);
        } else if flush_period > 0 {
            self.flush_if_period_expired();
        }
        // Wait for durability (batch/group fsync) outside the lock, so a slow fsync
        // never holds up a memtable switch.
        if let (Some(log), Some(t)) = (&self.commitlog, ticket) {
            log.wait(t)?;
        }
        self.metrics.write_count.fetch_add(1, Ordering::Relaxed);
        let took = started.elapsed();
        self.metrics
            .write_latency_nanos_total
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        self.metrics
            .write_latency_micros
            .record(took.as_micros() as u64);
        Ok(())
    }

    /// Invariant 3: blocks while too many memtables wait for flush.
    fn wait_for_flush_capacity(&self) -> Result<()> {
        if self.view.read().pending_flushes() <= self.runtime.max_pending_flushes {
            return Ok(());
        }
        let started = Instant::now();
        let mut guard = self.flushed_mutex.lock();
        let result = loop {
            if self.view.read().pending_flushes() <= self.runtime.max_pending_flushes {
                break Ok(());
            }
            if let Some(e) = self.last_flush_error.lock().clone() {
                self.metrics.writes_refused.fetch_add(1, Ordering::Relaxed);
                break Err(Error::Poisoned(format!(
                    "{} memtables are waiting for flush and the last flush failed ({e}); writes are refused until a flush succeeds",
                    self.view.read().pending_flushes()
                )));
            }
            self.flushed.wait_for(&mut guard, Duration::from_millis(50));
        };
        self.metrics
            .write_stall_micros_total
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
        result
    }

    /// `memtable_flush_period_in_ms` (Cassandra's meaning): once the active
    /// memtable has existed for a whole period on the engine clock, it is
    /// switched out and queued for flush even if not full; an empty one is
    /// looked at again a period later (Cassandra's checks run at creation +
    /// k periods). Called after writes and by the database's flush thread
    /// about once a second; returns whether a flush was queued. 0 = off.
    pub fn flush_if_period_expired(self: &Arc<Self>) -> bool {
        if self.read_only {
            return false;
        }
        let period_ms = self.schema.read().options.memtable_flush_period_in_ms;
        if period_ms == 0 {
            return false;
        }
        let period = i64::from(period_ms) * 1000;
        let now = self.clock.now_micros();
        let active = self.view.read().active().clone();
        let mut check = self.period_check.lock();
        if check.0 != active.id() {
            *check = (active.id(), active.created_micros().saturating_add(period));
        }
        if now < check.1 {
            return false;
        }
        if active.is_empty() {
            // The next check of Cassandra's chain after now.
            let created = active.created_micros();
            let periods = now.saturating_sub(created) / period + 1;
            check.1 = created.saturating_add(periods.saturating_mul(period));
            return false;
        }
        drop(check);
        self.switch_memtable(active.id())
    }

    /// Switches the active memtable out if it is still `expected_id` and not empty,
    /// and queues it for flush. Returns whether a switch happened.
    fn switch_memtable(self: &Arc<Self>, expected_id: u64) -> bool {
        self.switch_memtable_at(expected_id, None)
    }

    /// As [`Table::switch_memtable`], recording `position` (instead of the log's
    /// current one) as what the switched-out memtable covers: replay switches at
    /// the position of the last record it applied, so a crash during replay
    /// replays the rest again.
    fn switch_memtable_at(
        self: &Arc<Self>,
        expected_id: u64,
        position: Option<crate::manifest::ReplayPosition>,
    ) -> bool {
        {
            let mut view = self.view.write();
            let active = view.active();
            if active.id() != expected_id || active.is_empty() {
                return false;
            }
            match (position, &self.commitlog) {
                (Some(p), _) => active.set_flush_position(p),
                (None, Some(log)) => active.set_flush_position(log.current_position()),
                (None, None) => {}
            }
            let fresh = Arc::new(Memtable::new(
                self.next_memtable_id.fetch_add(1, Ordering::Relaxed),
                self.clock.now_micros(),
            ));
            let mut memtables = Vec::with_capacity(view.memtables.len() + 1);
            memtables.push(fresh);
            memtables.extend(view.memtables.iter().cloned());
            *view = Arc::new(view.with_memtables(memtables));
        }
        self.metrics
            .memtable_switch_count
            .fetch_add(1, Ordering::Relaxed);
        if let Some(tx) = self.flush_tx.lock().as_ref() {
            // A closed channel means the database is shutting down; `close` flushes.
            let _ = tx.send(FlushJob::Flush(self.clone()));
        }
        true
    }

    fn read_only_error(&self) -> Error {
        Error::ReadOnly(format!(
            "table {} was opened read-only; writes, flushes and compactions need the \
             data directory's owner",
            self.schema().qualified_name()
        ))
    }

    pub fn is_read_only(&self) -> bool {
        self.read_only
    }

    /// Flushes the active memtable and everything pending, synchronously
    /// (`nodetool flush`).
    pub fn flush(self: &Arc<Self>) -> Result<()> {
        if self.read_only {
            // Nothing can be in the memtable of a read-only table.
            return Ok(());
        }
        let id = self.view.read().active().id();
        self.switch_memtable(id);
        while self.flush_oldest()? {}
        Ok(())
    }

    /// TRUNCATE: removes every row of the table. The memtables are dropped
    /// unflushed and every sstable leaves the live set in one manifest commit
    /// that also moves the flushed position to the commit log's position at
    /// the switch, so replay never brings the truncated rows back. Writes that
    /// land after the switch survive (Cassandra's truncation is not atomic
    /// with concurrent writes either). The caller pauses compactions first
    /// (a running compaction's edit would name removed inputs).
    ///
    /// Crash safety: before the commit, a crash replays the old rows (the
    /// truncation never acknowledged); after it, they are gone for good.
    pub fn truncate(self: &Arc<Self>) -> Result<()> {
        if self.read_only {
            return Err(self.read_only_error());
        }
        let _serial = self.flush_lock.lock();
        let position = {
            let mut view = self.view.write();
            // Writers append to the log under the view's read lock (invariant
            // 1), so every record before this position is in the memtables
            // being dropped and every later one goes to the fresh memtable.
            let position = self.commitlog.as_ref().map(|l| l.current_position());
            let fresh = Arc::new(Memtable::new(
                self.next_memtable_id.fetch_add(1, Ordering::Relaxed),
                self.clock.now_micros(),
            ));
            *view = Arc::new(view.with_memtables(vec![fresh]));
            position
        };
        let mut edit = SSTableEdit::new();
        for r in self.view().sstables().iter() {
            edit = edit.remove(r.id());
        }
        self.commit_edit(&edit, position, None)?;
        if let (Some(log), Some(pos)) = (&self.commitlog, position) {
            log.mark_flushed(self.schema.read().id, pos)?;
        }
        self.fs.reclaim_obsolete();
        // Writers waiting on the dropped memtables' flushes may go on.
        self.notify_flushed();
        Ok(())
    }

    /// Flushes the oldest pending memtable, if any. Returns whether one was flushed.
    pub fn flush_oldest(&self) -> Result<bool> {
        let _serial = self.flush_lock.lock();
        let memtable = {
            let view = self.view.read();
            if view.pending_flushes() == 0 {
                return Ok(false);
            }
            view.memtables[view.memtables.len() - 1].clone()
        };
        let flushed = self.flush_memtable(&memtable);
        // The flush thread also unlinks obsolete files whose last reader has
        // gone since the last compaction (readers only queue them).
        self.fs.reclaim_obsolete();
        match flushed {
            Ok(readers) => {
                // Trains the first dictionary, or a new one on drift; never
                // fails the flush (its errors go to tablestats).
                self.train_dictionary_after_flush(&readers);
                *self.last_flush_error.lock() = None;
                self.metrics.flush_count.fetch_add(1, Ordering::Relaxed);
                self.wake_compaction();
                let _g = self.flushed_mutex.lock();
                self.flushed.notify_all();
                Ok(true)
            }
            Err(e) => {
                *self.last_flush_error.lock() = Some(e.to_string());
                self.metrics.flush_failures.fetch_add(1, Ordering::Relaxed);
                let _g = self.flushed_mutex.lock();
                self.flushed.notify_all();
                Err(e)
            }
        }
    }

    fn flush_memtable(&self, memtable: &Arc<Memtable>) -> Result<Vec<Arc<SSTableReader>>> {
        // No file into a directory this process no longer owns (manifest
        // invariant 7): its path may name another process's directory now.
        self.check_owned()?;
        // The estimate is the uncompressed data size: an upper bound of the file.
        self.check_disk_space(memtable.data_bytes() + memtable.partition_count() * 32)?;
        let started = std::time::Instant::now();
        let readers = if memtable.is_empty() {
            Vec::new()
        } else {
            self.write_sstables(memtable)?
        };
        let position = memtable.flush_position();
        let mut edit = SSTableEdit::new();
        for r in &readers {
            edit = edit.add(r.id(), 0, r.clone());
        }
        if let Err(e) = self.commit_edit(&edit, position, Some(memtable.id())) {
            // An uncertain commit (manifest invariant 5) may have listed the
            // files: keep them; the next open quarantines what is not listed.
            if !matches!(e, Error::Poisoned(_)) {
                for r in &readers {
                    r.mark_obsolete();
                }
            }
            return Err(e);
        }
        // The manifest now says everything before `position` is in sstables: the
        // commit log may drop segments that only this table still needed.
        if let (Some(log), Some(pos)) = (&self.commitlog, position) {
            log.mark_flushed(self.schema.read().id, pos)?;
        }
        if !readers.is_empty() {
            let bytes: u64 = readers.iter().map(|r| r.file_size()).sum();
            self.count_flush(bytes);
            tracing::info!(
                target: "strata::flush",
                table = %self.schema.read().qualified_name(),
                sstables = ?readers.iter().map(|r| r.id()).collect::<Vec<_>>(),
                partitions = memtable.partition_count(),
                memtable_bytes = memtable.data_bytes(),
                bytes,
                ms = started.elapsed().as_millis() as u64,
                "flushed memtable to {} sstable(s), {bytes} bytes",
                readers.len()
            );
        }
        Ok(readers)
    }

    /// Adds a flush to the counters kept since creation and rewrites their
    /// file; a failure to write it is logged, never the flush's failure.
    fn count_flush(&self, bytes: u64) {
        let mut l = self.lifetime.lock();
        l.flushes += 1;
        l.bytes_flushed += bytes;
        if self.read_only {
            return;
        }
        let written = serde_json::to_vec(&*l)
            .map_err(|e| e.to_string())
            .and_then(|json| {
                self.fs
                    .write_atomic(
                        &self.dir.join(LIFETIME_FILE),
                        &json,
                        IoTag::new(IoCause::Metadata),
                    )
                    .map_err(|e| e.to_string())
            });
        if let Err(e) = written {
            tracing::warn!(
                target: "strata::flush",
                table = %self.schema.read().qualified_name(),
                "could not record the table's flush counters: {e}"
            );
        }
    }

    /// Flushes since the table was created ([`LifetimeCounters`]).
    pub fn lifetime_counters(&self) -> LifetimeCounters {
        *self.lifetime.lock()
    }

    /// `Err` once this process no longer owns the data directory or the
    /// table directory was replaced (manifest invariant 7): asked before a
    /// file is created in it.
    pub(crate) fn check_owned(&self) -> Result<()> {
        self.manifest.lock().check_owned()
    }

    /// Reserves a new sstable id (for flush, compaction, scrub, recompression).
    pub fn allocate_sstable_id(&self) -> u64 {
        self.manifest.lock().allocate_id()
    }

    /// Writer options for new sstable `generation` (the id it is created with)
    /// of this table under the current schema, identity header included.
    pub fn writer_options(
        &self,
        generation: u64,
        level: u32,
        tag: IoTag,
        base: crate::encoding::EncodingBase,
        expected_partitions: u64,
    ) -> WriterOptions {
        let schema = self.schema();
        let (compression, dictionary) = self.dictionaries.bind(schema.options.compression.params());
        WriterOptions {
            compression,
            dictionary,
            bloom_fp_chance: schema.options.bloom_filter_fp_chance,
            expected_partitions,
            tag,
            table_io: Some(self.io.clone()),
            level,
            base,
            creation_time_seconds: self.clock.now_seconds(),
            identity: Some(crate::sstable::SSTableIdentity::for_schema(
                &schema, generation,
            )),
        }
    }

    pub fn fs(&self) -> &Fs {
        &self.fs
    }

    /// Atomically applies `edit` to the live set: checked against the current
    /// version, persisted by one durable manifest commit of the same edit, then
    /// one view swap. Removed sstables are marked obsolete; their files are
    /// deleted by the reclaimer once the last reader drops them (manifest
    /// invariant 2). On error nothing changes and the caller still owns the added
    /// sstables (it should mark them obsolete, unless the error is
    /// `Error::Poisoned`: manifest invariant 5).
    pub fn apply_edit(&self, edit: &SSTableEdit) -> Result<()> {
        self.commit_edit(edit, None, None)?;
        // Removed sstables no reader holds are unlinked now, on this (compaction
        // or maintenance) thread; the rest when their last reader drops and the
        // runtime next reclaims.
        self.fs.reclaim_obsolete();
        Ok(())
    }

    /// [`Table::apply_edit`], also moving the flushed position to `replay` and
    /// taking the flushed memtable `flushed` out of the view in the same swap
    /// (table invariant 1). An empty edit with neither writes nothing.
    fn commit_edit(
        &self,
        edit: &SSTableEdit,
        replay: Option<crate::manifest::ReplayPosition>,
        flushed: Option<u64>,
    ) -> Result<()> {
        if self.read_only {
            return Err(self.read_only_error());
        }
        // The manifest lock serialises every change of the version: the version
        // read here is the one the swap below replaces.
        let mut manifest = self.manifest.lock();
        let current = self.view.read().version.clone();
        let next = current.apply(edit).map_err(EditError::into_error)?;
        // The blob strategy's accounting of the set this edit makes, committed
        // in the same manifest write (version invariant 4).
        let accounted = self.live_bytes_for(&current, &next, edit);
        let with_accounting;
        let (edit, next) = if accounted.is_empty() {
            (edit, next)
        } else {
            let mut e = edit.clone();
            e.accounted = accounted;
            let n = current.apply(&e).map_err(EditError::into_error)?;
            with_accounting = e;
            (&with_accounting, n)
        };
        if !edit.is_empty() || replay.is_some() {
            let facts = edit.map(|s| crate::manifest::SSTableFacts::of(&s.handle));
            manifest.commit_edit(&facts, replay)?;
        }
        {
            let mut view = self.view.write();
            let memtables: Vec<Arc<Memtable>> = match flushed {
                Some(id) => view
                    .memtables
                    .iter()
                    .filter(|m| m.id() != id)
                    .cloned()
                    .collect(),
                None => view.memtables.clone(),
            };
            *view = Arc::new(View::new(memtables, Arc::new(next)));
        }
        for id in &edit.removed {
            if let Some(s) = current.get(*id) {
                s.handle.mark_obsolete();
            }
        }
        Ok(())
    }

    /// The accounting `edit` (turning `current` into `next`) must carry: under a
    /// strategy that tracks live bytes, that of every sstable it adds or may
    /// affect ([`live_bytes::account_edit`]); under any other, clearing stale
    /// accounting, which no later edit would keep true. Called under the
    /// manifest lock, so no other edit interleaves.
    fn live_bytes_for(
        &self,
        current: &SSTableVersion,
        next: &SSTableVersion,
        edit: &SSTableEdit,
    ) -> Vec<(u64, Option<crate::version::LiveBytes>)> {
        let tracks = self
            .compaction
            .strategy(&self.schema().options.compaction)
            .tracks_live_bytes();
        if !tracks {
            return next
                .iter()
                .filter(|s| s.live.is_some())
                .map(|s| (s.id, None))
                .collect();
        }
        let mut failures = Vec::new();
        let accounted = live_bytes::account_edit(current, next, edit, &mut failures);
        for (id, e) in &failures {
            self.metrics
                .live_bytes_accounting_failures
                .fetch_add(1, Ordering::Relaxed);
            *self.last_accounting_error.lock() = Some(format!(
                "sstable {id} left unaccounted (the blob strategy will not drop or rewrite it): {e}"
            ));
        }
        for (id, live) in &accounted {
            let was = next
                .get(*id)
                .and_then(|s| s.live)
                .is_some_and(|l| l.shares_live_rows);
            if !was && live.is_some_and(|l| l.shares_live_rows) {
                self.metrics
                    .blob_overwrites_detected
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
        accounted
    }

    /// Brings the blob strategy's accounting up to date for sstables that have
    /// none (after an open, an ALTER to the strategy, an import): one manifest
    /// commit when anything was missing. The compaction runtime calls it before
    /// deciding.
    pub fn ensure_live_bytes(&self) -> Result<()> {
        if self.read_only {
            return Ok(());
        }
        let tracks = self
            .compaction
            .strategy(&self.schema().options.compaction)
            .tracks_live_bytes();
        let version = self.view.read().version.clone();
        if tracks && version.iter().any(|s| s.live.is_none()) {
            self.commit_edit(&SSTableEdit::new(), None, None)?;
        }
        Ok(())
    }

    /// Each live sstable's accounting as the version holds it (`None`: not
    /// accounted), ascending id.
    pub fn live_bytes(&self) -> Vec<(u64, Option<crate::version::LiveBytes>)> {
        self.view
            .read()
            .version
            .iter()
            .map(|s| (s.id, s.live))
            .collect()
    }

    /// The accounted sstables whose stored accounting differs from a fresh
    /// computation over the same version (one snapshot, so concurrent edits
    /// cannot make a false mismatch): `(id, stored, fresh)`. Empty means the
    /// figures are exact (live_bytes invariant 2).
    #[allow(clippy::type_complexity)]
    pub fn verify_live_bytes(
        &self,
    ) -> Result<Vec<(u64, crate::version::LiveBytes, crate::version::LiveBytes)>> {
        let version = self.view.read().version.clone();
        let mut out = Vec::new();
        for s in version.iter() {
            if let Some(stored) = s.live {
                let fresh = live_bytes::account(&version, s.id)?;
                if fresh != stored {
                    out.push((s.id, stored, fresh));
                }
            }
        }
        Ok(out)
    }

    /// Replaces the live sstables `removed` by `added` (each with its level) in
    /// one edit ([`Table::apply_edit`]).
    pub fn replace_sstables(
        &self,
        removed: &[u64],
        added: &[(Arc<SSTableReader>, u32)],
    ) -> Result<()> {
        let mut edit = SSTableEdit::new();
        edit.removed = removed.to_vec();
        for (r, level) in added {
            edit = edit.add(r.id(), *level, r.clone());
        }
        self.apply_edit(&edit)
    }

    /// Changes sstable levels without rewriting files (LCS moving a lone sstable up).
    pub fn set_levels(&self, moves: &[(u64, u32)]) -> Result<()> {
        let edit = SSTableEdit {
            moved: moves.to_vec(),
            ..SSTableEdit::new()
        };
        self.apply_edit(&edit)
    }

    /// Applies a mutation read back from the commit log: straight into the active
    /// memtable, with no new log record and no switch (a switch mid-replay would
    /// record a flush position past records not yet replayed).
    ///
    /// Once the memtable passes the flush threshold it is flushed at once, at
    /// `position` (the end of this record): replay proceeds in memtable-sized
    /// steps, so recovering a long backlog needs about one memtable of memory and
    /// of free disk beyond the reserve, not the whole backlog.
    pub(crate) fn apply_replayed(
        self: &Arc<Self>,
        update: &PartitionUpdate,
        position: crate::manifest::ReplayPosition,
    ) -> Result<()> {
        let active = self.view.read().active().clone();
        active.apply(update);
        let threshold = self.schema.read().options.memtable_flush_threshold_bytes;
        if active.memory_bytes() >= threshold {
            self.switch_memtable_at(active.id(), Some(position));
            while self.flush_oldest()? {}
            self.metrics
                .replay_flush_count
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Records `position` as flushed for a table with nothing unflushed (its
    /// memtables empty): recovery, for a table that never recorded one
    /// (`db::Database::recover`). Refused while a memtable holds data, which
    /// only a flush may cover.
    pub(crate) fn record_flushed_position(
        &self,
        position: crate::manifest::ReplayPosition,
    ) -> Result<()> {
        if self.view.read().memtables.iter().any(|m| !m.is_empty()) {
            return Err(Error::InvalidInput(format!(
                "table {} holds unflushed writes: only a flush records its position",
                self.schema().qualified_name()
            )));
        }
        self.commit_edit(&SSTableEdit::new(), Some(position), None)
    }

    /// The commit-log position up to which this table's data is in sstables.
    pub fn flushed_position(&self) -> Option<crate::manifest::ReplayPosition> {
        self.manifest.lock().data().replay_position
    }

    /// Writes a memtable as level-0 sstables, cut by the strategy's flush split
    /// (one sstable, or one per time window for TWCS and DTCS). All or nothing:
    /// on error every output is discarded.
    fn write_sstables(&self, memtable: &Memtable) -> Result<Vec<Arc<SSTableReader>>> {
        let split = self
            .compaction
            .strategy(&self.schema().options.compaction)
            .flush_split();
        // Rows go to the sstable as the memtable encoded them when its base
        // can be the sstable's and the split keeps partitions whole.
        let copy_base = memtable
            .copy_base()
            .filter(|_| split.keeps_partitions_whole());
        // Row timestamps take the fixed width of the memtable's span, copied
        // rows included (`SSTableWriter::append_encoded`).
        let base = copy_base
            .unwrap_or_else(|| memtable.encoding_base())
            .with_row_ts_span_to(memtable.max_timestamp());
        // Each output's filter is sized for every partition: a flush's window
        // count is unknown up front and an oversized filter costs only memory
        // until the window is compacted.
        let partitions = memtable.partition_count();
        let factory = SSTableOutputs::new(|_bucket| {
            let id = self.allocate_sstable_id();
            let opts = self.writer_options(id, 0, IoTag::new(IoCause::Flush), base, partitions);
            SSTableWriter::create(&self.fs, &self.dir, id, opts)
        });
        let mut set = OutputSet::new(split, factory)?;
        let written = if copy_base.is_some() {
            memtable.for_each_encoded(|p| set.append_encoded(p))
        } else {
            // Decoded a row at a time and cut (time windows) as it comes:
            // a partition is never built whole beside the memtable that
            // holds it (docs/compaction/blob.md, "Memory").
            memtable.for_each_encoded(|p| {
                set.begin_partition(p.key.clone(), p.deletion.clone(), p.static_row.cloned())?;
                for r in p.rows {
                    let row =
                        decode_row_body(r.body, r.clustering.to_vec(), &p.base).map_err(|e| {
                            Error::InvalidInput(format!(
                                "an encoded row of partition token {} does not parse: {}",
                                p.key.token, e.0
                            ))
                        })?;
                    set.append_row(row)?;
                }
                set.end_partition().map(|_| ())
            })
        };
        if let Err(e) = written {
            for o in set.abort() {
                o.output.mark_obsolete();
            }
            return Err(e);
        }
        match set.finish() {
            Ok(outputs) => Ok(outputs.into_iter().map(|o| o.output).collect()),
            Err(failed) => {
                for o in failed.finished {
                    o.output.mark_obsolete();
                }
                Err(failed.error)
            }
        }
    }

    /// Reads one partition (see `read::read_partition`).
    pub fn read(
        &self,
        key: &DecoratedKey,
        range: &ClusteringRange,
        reversed: bool,
        limit: usize,
    ) -> Result<PartitionResult> {
        let started = Instant::now();
        if let Some(e) = self.unreadable_covering(Some(key.token)) {
            return Err(e);
        }
        let view = self.view();
        let now = || self.clock.now_seconds();
        let schema = self.schema();
        let result = match one_row(&schema, range) {
            Some(clustering) if limit > 0 => {
                // On the stack: a heap list here was an allocation and a
                // free on every one-row read, found or not (BENCHMARKS.md,
                // "A Bloom filter in one cache line").
                let columns: SmallVec<[ColumnId; 16]> =
                    schema.regular_columns().filter_map(|c| c.id).collect();
                let query = read::RowQuery {
                    clustering: &clustering,
                    columns: &columns,
                };
                read::read_row(&view, key, range, &query, &now)?
            }
            _ => read::read_partition(&view, key, range, reversed, limit, &now)?,
        };
        let bucket = result.sstables_read.min(SSTABLES_PER_READ_BUCKETS - 1);
        self.metrics.sstables_per_read[bucket].fetch_add(1, Ordering::Relaxed);
        self.metrics.read_count.fetch_add(1, Ordering::Relaxed);
        let took = started.elapsed();
        self.metrics
            .read_latency_nanos_total
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        self.metrics
            .read_latency_micros
            .record(took.as_micros() as u64);
        Ok(result)
    }

    /// One page of a token-ordered scan of live rows.
    pub fn scan(&self, paging: Option<&PagingState>, page_rows: usize) -> Result<ScanPage> {
        if let Some(e) = self.unreadable_covering(None) {
            return Err(e);
        }
        read::scan(&self.view(), paging, page_rows, self.clock.now_seconds())
    }

    /// [`scan`](Self::scan) handing each live row to `visit` as it is found,
    /// borrowed rather than built (see `read::scan_rows`); returns where the
    /// next page starts.
    pub fn scan_rows(
        &self,
        paging: Option<&PagingState>,
        page_rows: usize,
        visit: &mut dyn FnMut(&read::ScanRow<'_>),
    ) -> Result<Option<PagingState>> {
        if let Some(e) = self.unreadable_covering(None) {
            return Err(e);
        }
        read::scan_rows(
            &self.view(),
            paging,
            page_rows,
            self.clock.now_seconds(),
            visit,
        )
    }

    /// `INSERT`: typed values by column name, validated by the schema, stamped with
    /// this table's clock (row marker + cells). Nothing is written on error.
    pub fn insert(self: &Arc<Self>, row: &[(&str, Value)], opts: &WriteOptions) -> Result<()> {
        let update = self.schema().insert(row, opts, self.clock.now_micros())?;
        self.apply(&update)
    }

    /// `UPDATE`: cells only (no row marker); `None` deletes that cell.
    pub fn update(
        self: &Arc<Self>,
        key: &[(&str, Value)],
        set: &[(&str, Option<Value>)],
        opts: &WriteOptions,
    ) -> Result<()> {
        let update = self
            .schema()
            .update(key, set, opts, self.clock.now_micros())?;
        self.apply(&update)
    }

    /// `DELETE FROM ... WHERE <full primary key>`.
    pub fn delete_row(self: &Arc<Self>, key: &[(&str, Value)], opts: &WriteOptions) -> Result<()> {
        let update = self
            .schema()
            .delete_row(key, opts, self.clock.now_micros())?;
        self.apply(&update)
    }

    /// `SELECT * FROM ... WHERE <partition key> [AND clustering range]`, decoded to
    /// typed values (all columns in schema order; `None` for nulls).
    pub fn select(
        &self,
        partition_key: &[Value],
        range: &ClusteringRange,
        reversed: bool,
        limit: usize,
    ) -> Result<Vec<TypedRow>> {
        let schema = self.schema();
        let key = schema.decorated_key(partition_key)?;
        let result = self.read(&key, range, reversed, limit)?;
        result
            .rows
            .iter()
            .map(|r| schema.row_values_with_static(&key.key, result.static_row.as_ref(), r))
            .collect()
    }

    /// Bytes `[offset, offset + length)` of the value of regular column `column`
    /// in the row with primary key (`partition_key`, `clustering`): the value the
    /// normal read path would return, reconciled across memtables and sstables,
    /// without reading the rest of it (issue 13: a client fetching part of a
    /// large block; a 1 MiB range of a 64 MiB value reads about 1 MiB).
    ///
    /// `None` if the row has no live value for the column (never written,
    /// deleted, expired). A range past the end is short; an `offset` past the
    /// end is `InvalidInput`. [`ValueSlice::value_len`] is the whole value's
    /// length. The bytes are the column's serialized value (a blob's bytes).
    /// Static columns are refused (`InvalidInput`).
    pub fn read_value_range(
        &self,
        partition_key: &[Value],
        clustering: &[Value],
        column: &str,
        offset: u64,
        length: u64,
    ) -> Result<Option<ValueSlice>> {
        let schema = self.schema();
        let key = schema.decorated_key(partition_key)?;
        let ck = schema.encode_clustering(clustering)?;
        let def = schema.column(column)?;
        let id = match (def.kind, def.id) {
            (crate::schema::ColumnKind::Regular, Some(id)) => id,
            _ => {
                return Err(Error::InvalidInput(format!(
                    "read_value_range reads regular columns; '{column}' is not one"
                )))
            }
        };
        self.read_cell_range(&key, &ck, id, offset, length)
    }

    /// [`Table::read_value_range`] below the schema: encoded clustering and
    /// column id.
    pub fn read_cell_range(
        &self,
        key: &DecoratedKey,
        clustering: &[u8],
        column: ColumnId,
        offset: u64,
        length: u64,
    ) -> Result<Option<ValueSlice>> {
        if let Some(e) = self.unreadable_covering(Some(key.token)) {
            return Err(e);
        }
        let started = Instant::now();
        let view = self.view();
        let result = read::read_value_range(
            &view,
            key,
            clustering,
            column,
            offset,
            length,
            self.clock.now_seconds(),
        )?;
        self.metrics.read_count.fetch_add(1, Ordering::Relaxed);
        let took = started.elapsed();
        self.metrics
            .read_latency_nanos_total
            .fetch_add(took.as_nanos() as u64, Ordering::Relaxed);
        self.metrics
            .read_latency_micros
            .record(took.as_micros() as u64);
        Ok(result)
    }

    /// Tells the compaction manager that this table's sstables changed.
    pub(crate) fn wake_compaction(&self) {
        if let Some(s) = self.compaction_signal.lock().as_ref() {
            s.notify();
        }
    }

    pub(crate) fn detach_flusher(&self) {
        self.flush_tx.lock().take();
    }

    /// Wakes writers waiting on a flush or on compaction debt.
    pub(crate) fn notify_flushed(&self) {
        let _g = self.flushed_mutex.lock();
        self.flushed.notify_all();
    }

    /// The disk-space guard: every flush and every compaction passes it first;
    /// a refusal is counted and reported, never silently skipped. Refuses when
    /// `estimate_bytes` more would not fit in free space minus the reserve, or
    /// past `max_disk_bytes`.
    pub fn check_disk_space(&self, estimate_bytes: u64) -> Result<()> {
        let room = self.disk_room()?;
        let refuse = |why: String| {
            self.metrics.space_refusals.fetch_add(1, Ordering::Relaxed);
            tracing::warn!(target: "strata::disk", dir = %self.dir().display(), "{why}");
            Err(Error::Io {
                path: self.dir().to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::StorageFull, why),
            })
        };
        if let Some((used, limit)) = room.quota {
            if used.saturating_add(estimate_bytes) > limit {
                return refuse(format!(
                    "refusing to write ~{estimate_bytes} bytes: data directory holds {used} of max_disk_bytes {limit}"
                ));
            }
        }
        if let Some(free) = room.free_bytes {
            if free < estimate_bytes.saturating_add(room.reserve_bytes) {
                return refuse(format!(
                    "refusing to write ~{estimate_bytes} bytes: {free} bytes free, {} kept in reserve",
                    room.reserve_bytes
                ));
            }
        }
        Ok(())
    }

    /// What the disk-space guard compares against now: the `max_disk_bytes`
    /// quota with the data directory's usage (not during recovery, whose flushes
    /// the quota does not stop), the file system's free bytes, and the reserve.
    pub fn disk_room(&self) -> Result<DiskRoom> {
        let root = self
            .dir()
            .parent()
            .and_then(|p| p.parent())
            .unwrap_or(self.dir());
        // A recovery flush turns commit-log bytes into sstable bytes and lets the
        // log go: refusing it under the quota would keep the database from ever
        // reopening under the quota that the log itself exceeds.
        let recovering = self.recovering.load(Ordering::Acquire);
        let quota = match (self.runtime.max_disk_bytes, recovering) {
            // Tracked incrementally by the fs layer (one walk at open), not
            // walked here on every flush and compaction.
            (Some(limit), false) => Some((self.fs.used_bytes(root)?, limit)),
            _ => None,
        };
        Ok(DiskRoom {
            quota,
            free_bytes: self.fs.free_bytes(self.dir()),
            reserve_bytes: self.runtime.disk_reserve_bytes,
        })
    }

    /// Write back-pressure on compaction debt: delay each write past the slowdown
    /// trigger, stop writes past the stop trigger until compaction catches up.
    /// Disabled while the strategy is disabled (`'enabled': 'false'`), since
    /// nothing would ever release the stall, and for strategies whose healthy
    /// state exceeds the trigger (`CompactionStrategy::stalls_writes_on_level0`:
    /// TWCS and DTCS keep one or more level-0 sstables per time window; found by
    /// `bench timeseries`, where TWCS with late writes stalled every write).
    pub(crate) fn wait_for_compaction_debt(&self) {
        // Cheap check first: this runs on every write.
        let l0 = |t: &Table| t.view.read().l0_count();
        let count = l0(self);
        if count < self.runtime.l0_slowdown_writes_trigger {
            return;
        }
        let compaction = &self.schema().options.compaction;
        if !compaction.common().enabled
            || !self
                .compaction
                .strategy(compaction)
                .stalls_writes_on_level0()
        {
            return;
        }
        let started = Instant::now();
        if count < self.runtime.l0_stop_writes_trigger {
            std::thread::sleep(Duration::from_millis(1));
        } else {
            let mut guard = self.flushed_mutex.lock();
            while l0(self) >= self.runtime.l0_stop_writes_trigger {
                self.flushed.wait_for(&mut guard, Duration::from_millis(50));
            }
        }
        self.metrics
            .write_stall_micros_total
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    }

    /// Files in the table directory that are sstables, with sizes (live or not yet
    /// deleted): Cassandra's "Space used (total)".
    pub fn disk_bytes_total(&self) -> Result<u64> {
        let mut total = 0;
        for name in self.fs.list_dir(&self.dir)? {
            if parse_data_file_name(&name).is_some() {
                // A file removed between listing and sizing holds nothing.
                total += self.fs.file_len(&self.dir.join(&name)).unwrap_or(0);
            }
        }
        Ok(total)
    }
}

/// The one row `range` selects, if it selects at most one and the table has
/// no static columns: a read [`read::read_row`] may stop early. In a table
/// without clustering columns every read is of the one row; otherwise the
/// range must be `[c, c]` for a complete clustering `c` (a prefix selects
/// every row under it).
fn one_row(schema: &crate::schema::TableSchema, range: &ClusteringRange) -> Option<Vec<u8>> {
    if schema.static_columns().next().is_some() {
        return None;
    }
    let clustering_columns = schema.clustering_columns().count();
    if clustering_columns == 0 {
        return range.contains(&[]).then(Vec::new);
    }
    let (start, end) = (&range.start, &range.end);
    if !(start.inclusive && end.inclusive && start.prefix == end.prefix) || start.prefix.is_empty()
    {
        return None;
    }
    let values = schema.decode_clustering(&start.prefix).ok()?;
    (values.len() == clustering_columns).then(|| start.prefix.clone())
}

/// Whether `update` holds a counter increment not yet resolved into a stored
/// shard (`crate::counter` contract 2), which must never be stored.
fn has_pending_counters(update: &PartitionUpdate) -> bool {
    update
        .static_row
        .iter()
        .chain(&update.rows)
        .flat_map(|r| &r.cells)
        .any(|c| c.kind == CellKind::Counter && crate::counter::has_pending(&c.value))
}
