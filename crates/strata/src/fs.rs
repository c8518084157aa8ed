//! The file-system layer (DESIGN.md §4): every byte the engine reads or writes goes
//! through here.
//!
//! It owns four things:
//! - **Accounting.** Each file handle carries an [`IoTag`] (why the I/O happens:
//!   commit log, flush, compaction at a level, user read, recompression, metadata)
//!   and adds the bytes it moves to the global [`IoCounters`] and to the counters of
//!   the table it works for. Write amplification is computed from these counters,
//!   never estimated.
//! - **Fault injection.** A [`FaultInjector`] can make the next matching write fail,
//!   fsync fail, report "no space left", tear a write (write a prefix, then fail),
//!   or make an fsync slow (it succeeds after a delay: a stalled device).
//!   Tests use it to prove that faults never lose acknowledged data.
//! - **Disk usage** ([`DiskUsage`]): the bytes held under each tracked data
//!   directory, counted once by a walk when the directory is first tracked
//!   ([`Fs::track_usage`], at database open) and then kept up to date by every
//!   create, write, append, rename, hard link and removal made through this layer.
//!   The disk-space guard reads it instead of walking the directory on every
//!   flush and compaction.
//! - **Reclaiming** obsolete sstable files ([`Fs::queue_reclaim`],
//!   [`Fs::reclaim_obsolete`]): a reader dropping the last reference of an
//!   obsolete sstable only queues its path; the compaction runtime, the flush
//!   thread and shutdown unlink queued files. No user read ever pays for an
//!   unlink.
//! - **Confinement** ([`Fs::confine`]): nothing is written, renamed, linked or
//!   deleted through a symbolic link below a data directory's root, and no
//!   file is read that is not a regular file (invariants 6 and 7).
//!
//! Invariants:
//! 1. Bytes are counted when they are handed to (or returned by) the OS, so a
//!    buffered writer counts on flush, and a failed write counts nothing.
//! 2. Durable replacement is always: write to a temporary name, fsync the file,
//!    rename, fsync the directory ([`Fs::write_atomic`], [`WritableFile::finish_as`]).
//! 3. Handles are `Send + Sync`; positional reads (`read_exact_at`) never seek, so
//!    many threads may read one file concurrently.
//! 4. A tracked directory's usage equals the bytes of the distinct files under
//!    it, each inode once however many names it has (as `du` counts: a
//!    snapshot's hard links cost nothing until the live name goes, and then the
//!    snapshot's name keeps the bytes counted), as long as every change goes
//!    through this layer; bytes are added when handed to the OS and removed
//!    after the removal (or the overwriting rename) succeeded. A file with
//!    several names is assumed to have them all under one tracked root (true of
//!    snapshots, which live beside their table): removing or moving one of its
//!    names changes nothing until its last. The only file written around this
//!    layer, the directory's `LOCK` (dirlock.rs), holds a few hundred bytes.
//! 5. Only paths of sstables already marked obsolete are queued for reclaiming
//!    (after a durable manifest stopped listing them, or outputs never listed):
//!    reclaiming deletes nothing on doubt. A queued file not yet unlinked at a
//!    crash is unlisted at the next open and quarantined there
//!    (docs/DURABILITY.md).
//! 6. Under a confined root (a data directory, [`Fs::confine`]), every change
//!    (create, append, rename, hard link, removal, directory creation) first
//!    checks that no directory between the root and the file is a symbolic
//!    link, and files are opened for writing with `O_NOFOLLOW`: a link placed
//!    in the data directory can never carry a write or a deletion outside it.
//!    The root itself may be a link (the operator's choice of `--data-dir`).
//!    The checks see the directory as it is when the call is made; an
//!    operator racing the engine with `ln` is not defended against.
//! 7. A file is opened for reading only if it is a regular file, checked on
//!    the open descriptor (`O_NONBLOCK`, then `fstat`), so a FIFO or a device
//!    in place of an engine file is refused at once instead of blocking, and
//!    [`Fs::read_all`] reads a whole file only up to a bound its caller
//!    states, checked before anything is allocated.

use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::Write;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

/// Why an I/O happens. The discriminant indexes counter arrays (not written to disk).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum IoCause {
    CommitLog = 0,
    Flush = 1,
    Compaction = 2,
    UserRead = 3,
    Recompression = 4,
    /// Manifests, schema, snapshots bookkeeping.
    Metadata = 5,
}

impl IoCause {
    pub const ALL: [IoCause; 6] = [
        IoCause::CommitLog,
        IoCause::Flush,
        IoCause::Compaction,
        IoCause::UserRead,
        IoCause::Recompression,
        IoCause::Metadata,
    ];

    pub fn name(self) -> &'static str {
        match self {
            IoCause::CommitLog => "commitlog",
            IoCause::Flush => "flush",
            IoCause::Compaction => "compaction",
            IoCause::UserRead => "user_read",
            IoCause::Recompression => "recompression",
            IoCause::Metadata => "metadata",
        }
    }
}

/// Levels tracked separately for compaction I/O (LCS rarely exceeds 8 levels;
/// anything deeper is added to the last slot).
pub const MAX_TRACKED_LEVELS: usize = 10;

/// A cause plus, for compaction, the level whose data is read or written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct IoTag {
    pub cause: IoCause,
    pub level: u8,
}

impl IoTag {
    pub const fn new(cause: IoCause) -> IoTag {
        IoTag { cause, level: 0 }
    }
    pub const fn compaction(level: u8) -> IoTag {
        IoTag {
            cause: IoCause::Compaction,
            level,
        }
    }
}

/// Byte counters, one set per cause and per compaction level.
#[derive(Debug, Default)]
pub struct IoCounters {
    read: [AtomicU64; 6],
    written: [AtomicU64; 6],
    compaction_read_level: [AtomicU64; MAX_TRACKED_LEVELS],
    compaction_written_level: [AtomicU64; MAX_TRACKED_LEVELS],
    fsyncs: AtomicU64,
    /// User reads of a chunk or index block served by the chunk cache, and
    /// those that had to read (and decompress) it (`crate::chunk_cache`).
    chunk_cache_hits: AtomicU64,
    chunk_cache_misses: AtomicU64,
}

/// A plain copy of [`IoCounters`] at one instant.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct IoSnapshot {
    pub read_bytes: [u64; 6],
    pub written_bytes: [u64; 6],
    pub compaction_read_level_bytes: [u64; MAX_TRACKED_LEVELS],
    pub compaction_written_level_bytes: [u64; MAX_TRACKED_LEVELS],
    pub fsyncs: u64,
    pub chunk_cache_hits: u64,
    pub chunk_cache_misses: u64,
}

impl IoSnapshot {
    pub fn read(&self, cause: IoCause) -> u64 {
        self.read_bytes[cause as usize]
    }
    pub fn written(&self, cause: IoCause) -> u64 {
        self.written_bytes[cause as usize]
    }
}

impl IoCounters {
    pub fn new() -> Arc<IoCounters> {
        Arc::new(IoCounters::default())
    }

    fn add(&self, tag: IoTag, bytes: u64, write: bool) {
        let (by_cause, by_level) = if write {
            (&self.written, &self.compaction_written_level)
        } else {
            (&self.read, &self.compaction_read_level)
        };
        by_cause[tag.cause as usize].fetch_add(bytes, Ordering::Relaxed);
        if tag.cause == IoCause::Compaction {
            let slot = (tag.level as usize).min(MAX_TRACKED_LEVELS - 1);
            by_level[slot].fetch_add(bytes, Ordering::Relaxed);
        }
    }

    pub fn snapshot(&self) -> IoSnapshot {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        IoSnapshot {
            read_bytes: std::array::from_fn(|i| load(&self.read[i])),
            written_bytes: std::array::from_fn(|i| load(&self.written[i])),
            compaction_read_level_bytes: std::array::from_fn(|i| {
                load(&self.compaction_read_level[i])
            }),
            compaction_written_level_bytes: std::array::from_fn(|i| {
                load(&self.compaction_written_level[i])
            }),
            fsyncs: load(&self.fsyncs),
            chunk_cache_hits: load(&self.chunk_cache_hits),
            chunk_cache_misses: load(&self.chunk_cache_misses),
        }
    }

    /// Counts one chunk-cache lookup of a user read.
    pub fn count_chunk_cache(&self, hit: bool) {
        let c = if hit {
            &self.chunk_cache_hits
        } else {
            &self.chunk_cache_misses
        };
        c.fetch_add(1, Ordering::Relaxed);
    }
}

/// What an injected fault does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// The write fails with an I/O error; nothing is written.
    WriteError,
    /// The write fails with ENOSPC; nothing is written.
    NoSpace,
    /// Half of the buffer is written, then the write fails (a torn write).
    TornWrite,
    /// fsync fails.
    SyncError,
    /// fsync succeeds, but only after this delay (a device stalled by a firmware
    /// hiccup or a flood of dirty pages): what must not stall unrelated writers.
    SlowSync(std::time::Duration),
    /// fsync waits until the test releases it ([`FaultInjector::release_held`]),
    /// then succeeds: a barrier for asserting what goes on during an fsync.
    HeldSync,
}

impl Fault {
    /// Whether the fault applies to fsyncs (else to writes).
    fn is_sync(self) -> bool {
        matches!(
            self,
            Fault::SyncError | Fault::SlowSync(_) | Fault::HeldSync
        )
    }
}

#[derive(Clone, Debug)]
struct FaultRule {
    /// Applies to files whose path contains this string.
    path_contains: String,
    fault: Fault,
    /// Matching operations to let through before the first fault.
    skip: u64,
    /// Faults left to inject; `u64::MAX` = until cleared.
    remaining: u64,
}

/// Test-only seam for injecting I/O faults; inert (one uncontended lock check) when
/// no rule is armed.
#[derive(Debug, Default)]
pub struct FaultInjector {
    armed: std::sync::atomic::AtomicBool,
    rules: Mutex<Vec<FaultRule>>,
    /// [`Fault::HeldSync`]: `(released, fsyncs waiting now)`.
    held: Mutex<(bool, u64)>,
    held_cv: parking_lot::Condvar,
}

impl FaultInjector {
    /// Arms `fault` for the next `count` matching operations on paths containing
    /// `path_contains` ("" matches every file).
    pub fn inject(&self, path_contains: &str, fault: Fault, count: u64) {
        self.inject_after(path_contains, fault, 0, count);
    }

    /// As [`FaultInjector::inject`], but lets the first `skip` matching operations
    /// succeed (e.g. fail a directory fsync that follows a file fsync).
    pub fn inject_after(&self, path_contains: &str, fault: Fault, skip: u64, count: u64) {
        self.rules.lock().push(FaultRule {
            path_contains: path_contains.to_string(),
            fault,
            skip,
            remaining: count,
        });
        self.armed.store(true, Ordering::Release);
    }

    pub fn clear(&self) {
        self.rules.lock().clear();
        self.armed.store(false, Ordering::Release);
    }

    /// Blocks until `n` fsyncs are held by [`Fault::HeldSync`].
    pub fn wait_for_held(&self, n: u64) {
        let mut held = self.held.lock();
        while held.1 < n {
            self.held_cv.wait(&mut held);
        }
    }

    /// Lets every held fsync, and every later one, go on.
    pub fn release_held(&self) {
        self.held.lock().0 = true;
        self.held_cv.notify_all();
    }

    fn hold(&self) {
        let mut held = self.held.lock();
        held.1 += 1;
        self.held_cv.notify_all();
        while !held.0 {
            self.held_cv.wait(&mut held);
        }
        held.1 -= 1;
    }

    fn take(&self, path: &Path, sync: bool) -> Option<Fault> {
        if !self.armed.load(Ordering::Acquire) {
            return None;
        }
        let mut rules = self.rules.lock();
        let p = path.to_string_lossy();
        for rule in rules.iter_mut() {
            if rule.fault.is_sync() == sync
                && rule.remaining > 0
                && p.contains(rule.path_contains.as_str())
            {
                if rule.skip > 0 {
                    rule.skip -= 1;
                    continue;
                }
                rule.remaining = rule.remaining.saturating_sub(1);
                return Some(rule.fault);
            }
        }
        None
    }
}

/// Applies an fsync fault: a slow or held one waits and lets the fsync go on,
/// any other fails it.
fn sync_fault(faults: &FaultInjector, path: &Path, fault: Option<Fault>) -> Result<()> {
    match fault {
        None => Ok(()),
        Some(Fault::SlowSync(delay)) => {
            std::thread::sleep(delay);
            Ok(())
        }
        Some(Fault::HeldSync) => {
            faults.hold();
            Ok(())
        }
        Some(f) => Err(Error::io(path, fault_error(f))),
    }
}

fn fault_error(fault: Fault) -> std::io::Error {
    match fault {
        Fault::NoSpace => std::io::Error::from_raw_os_error(28), // ENOSPC
        Fault::SyncError | Fault::SlowSync(_) | Fault::HeldSync => {
            std::io::Error::other("injected fsync failure")
        }
        Fault::WriteError | Fault::TornWrite => std::io::Error::other("injected write failure"),
    }
}

/// Bytes under each tracked directory (module docs, invariant 4).
#[derive(Debug, Default)]
pub struct DiskUsage {
    /// `(root, bytes)`; a handful of roots (one per open data directory).
    roots: parking_lot::RwLock<Vec<(PathBuf, Arc<AtomicU64>)>>,
}

impl DiskUsage {
    /// The counter of the tracked root holding `path` (the longest match).
    fn counter_for(&self, path: &Path) -> Option<Arc<AtomicU64>> {
        self.roots
            .read()
            .iter()
            .filter(|(root, _)| path.starts_with(root))
            .max_by_key(|(root, _)| root.as_os_str().len())
            .map(|(_, c)| c.clone())
    }
}

fn add_bytes(counter: &Option<Arc<AtomicU64>>, n: u64) {
    if let Some(c) = counter {
        c.fetch_add(n, Ordering::Relaxed);
    }
}

fn sub_bytes(counter: &Option<Arc<AtomicU64>>, n: u64) {
    if let Some(c) = counter {
        // Saturating: a file changed around this layer must not wrap the count.
        let _ = c.fetch_update(Ordering::Relaxed, Ordering::Relaxed, |v| {
            Some(v.saturating_sub(n))
        });
    }
}

fn same_counter(a: &Option<Arc<AtomicU64>>, b: &Option<Arc<AtomicU64>>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => Arc::ptr_eq(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// The file-system layer shared by a database and all its tables.
#[derive(Debug, Clone, Default)]
pub struct Fs {
    counters: Arc<IoCounters>,
    faults: Arc<FaultInjector>,
    usage: Arc<DiskUsage>,
    /// Obsolete sstable files waiting to be unlinked (invariant 5).
    reclaim: Arc<Mutex<Vec<PathBuf>>>,
    /// The database's decompressed-chunk cache, set once when the database
    /// opens (none for a bare `Fs`: tools and unit tests read uncached).
    chunk_cache: Arc<std::sync::OnceLock<Arc<crate::chunk_cache::ChunkCache>>>,
    /// Roots below which no change goes through a symbolic link (invariant 6).
    confined: Arc<parking_lot::RwLock<Vec<PathBuf>>>,
}

/// What a directory entry is, as `lstat` sees it (a link is never followed).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EntryKind {
    File,
    Dir,
    Symlink,
    /// A FIFO, socket or device.
    Other,
}

impl EntryKind {
    fn of(t: std::fs::FileType) -> EntryKind {
        if t.is_symlink() {
            EntryKind::Symlink
        } else if t.is_dir() {
            EntryKind::Dir
        } else if t.is_file() {
            EntryKind::File
        } else {
            EntryKind::Other
        }
    }

    /// "a symbolic link", "a FIFO, socket or device", ... for messages.
    pub fn describe(self) -> &'static str {
        match self {
            EntryKind::File => "a regular file",
            EntryKind::Dir => "a directory",
            EntryKind::Symlink => "a symbolic link",
            EntryKind::Other => "a FIFO, socket or device",
        }
    }
}

/// The refusal of a symbolic link inside a data directory (invariant 6).
pub fn link_refused(path: &Path) -> Error {
    Error::InvalidInput(format!(
        "{} is a symbolic link inside the data directory: Strata never writes or deletes \
         through a link there (it could reach files outside the data directory); replace it \
         with the real file or directory",
        path.display()
    ))
}

impl Fs {
    pub fn new() -> Fs {
        Fs::default()
    }

    /// Installs the chunk cache every reader of this layer uses; a second call
    /// keeps the first cache (one per database).
    pub fn set_chunk_cache(&self, cache: Arc<crate::chunk_cache::ChunkCache>) {
        let _ = self.chunk_cache.set(cache);
    }

    pub fn chunk_cache(&self) -> Option<&Arc<crate::chunk_cache::ChunkCache>> {
        self.chunk_cache.get()
    }

    /// Confines every later change below `root` (invariant 6): a data
    /// directory, at open (read-write) and for the offline repairs.
    pub fn confine(&self, root: &Path) {
        let mut roots = self.confined.write();
        if !roots.iter().any(|r| r == root) {
            roots.push(root.to_path_buf());
        }
    }

    /// Refuses `path` if a directory between its confined root and it is a
    /// symbolic link (invariant 6); paths outside every confined root pass.
    pub fn check_no_link(&self, path: &Path) -> Result<()> {
        let root = {
            let roots = self.confined.read();
            match roots
                .iter()
                .filter(|r| path.starts_with(r))
                .max_by_key(|r| r.as_os_str().len())
            {
                Some(r) => r.clone(),
                None => return Ok(()),
            }
        };
        let Some(parent) = path.parent() else {
            return Ok(());
        };
        let Ok(below) = parent.strip_prefix(&root) else {
            return Ok(());
        };
        let mut at = root;
        for part in below.components() {
            at.push(part);
            match std::fs::symlink_metadata(&at) {
                Ok(m) if m.file_type().is_symlink() => return Err(link_refused(&at)),
                Ok(_) => {}
                // A missing directory cannot lead anywhere; the operation
                // itself reports it.
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
                Err(e) => return Err(Error::io(&at, e)),
            }
        }
        Ok(())
    }

    /// What `path` is, without following a link; `None` if it does not exist.
    pub fn entry_kind(&self, path: &Path) -> Result<Option<EntryKind>> {
        match std::fs::symlink_metadata(path) {
            Ok(m) => Ok(Some(EntryKind::of(m.file_type()))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// A directory's entries with what each is (links not followed), sorted by
    /// name; empty if `dir` does not exist.
    pub fn list_dir_kinds(&self, dir: &Path) -> Result<Vec<(String, EntryKind)>> {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut out = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            let kind = EntryKind::of(entry.file_type().map_err(|e| Error::io(dir, e))?);
            out.push((entry.file_name().to_string_lossy().into_owned(), kind));
        }
        out.sort_by(|a, b| a.0.cmp(&b.0));
        Ok(out)
    }

    /// Global counters (all tables).
    pub fn counters(&self) -> &Arc<IoCounters> {
        &self.counters
    }

    pub fn faults(&self) -> &Arc<FaultInjector> {
        &self.faults
    }

    /// Starts (or restarts) tracking the bytes under `root` with one walk through
    /// this layer; returns them. Called once per data directory at open.
    pub fn track_usage(&self, root: &Path) -> Result<u64> {
        // A tracked root is a data directory: confined as well (invariant 6).
        self.confine(root);
        let bytes = self.walk_bytes(root)?;
        let mut roots = self.usage.roots.write();
        match roots.iter().find(|(r, _)| r == root) {
            // Reopened: handles of the previous open keep the same counter.
            Some((_, c)) => c.store(bytes, Ordering::Relaxed),
            None => roots.push((root.to_path_buf(), Arc::new(AtomicU64::new(bytes)))),
        }
        Ok(bytes)
    }

    /// The bytes under tracked directory `root` (tracked on first use if it was
    /// not: one walk, then incremental).
    pub fn used_bytes(&self, root: &Path) -> Result<u64> {
        let tracked = self
            .usage
            .roots
            .read()
            .iter()
            .find(|(r, _)| r == root)
            .map(|(_, c)| c.load(Ordering::Relaxed));
        match tracked {
            Some(bytes) => Ok(bytes),
            None => self.track_usage(root),
        }
    }

    /// Total size of the distinct files under `path`, each inode once
    /// (invariant 4; a file's own size; 0 if absent).
    fn walk_bytes(&self, path: &Path) -> Result<u64> {
        self.walk_distinct(path, &mut std::collections::HashSet::new())
    }

    fn walk_distinct(
        &self,
        path: &Path,
        seen: &mut std::collections::HashSet<(u64, u64)>,
    ) -> Result<u64> {
        use std::os::unix::fs::MetadataExt;
        let meta = match std::fs::symlink_metadata(path) {
            Ok(m) => m,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(0),
            Err(e) => return Err(Error::io(path, e)),
        };
        if !meta.is_dir() {
            // Only files with other names can repeat: the set stays small.
            if meta.nlink() > 1 && !seen.insert((meta.dev(), meta.ino())) {
                return Ok(0);
            }
            return Ok(meta.len());
        }
        let mut total = 0u64;
        for name in self.list_dir(path)? {
            total = total.saturating_add(self.walk_distinct(&path.join(name), seen)?);
        }
        Ok(total)
    }

    /// Bytes a name's removal or departure frees (invariant 4): its size if it
    /// is the file's last name, else nothing.
    fn bytes_of_last_name(path: &Path) -> u64 {
        use std::os::unix::fs::MetadataExt;
        match std::fs::symlink_metadata(path) {
            Ok(m) if m.is_file() && m.nlink() <= 1 => m.len(),
            _ => 0,
        }
    }

    /// Size of the file at `path` (its metadata; nothing is read).
    pub fn file_len(&self, path: &Path) -> Result<u64> {
        self.metadata(path).map(|m| m.len())
    }

    /// Bytes available to this process on the file system holding `path`
    /// (`statvfs`'s `f_bavail * f_frsize`); `None` if it cannot be asked.
    pub fn free_bytes(&self, path: &Path) -> Option<u64> {
        use std::os::unix::ffi::OsStrExt;
        let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
        let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
    }

    /// The metadata of `path` (size, kind, inode, times): no bytes move, so
    /// nothing is counted, but the access is still the layer's.
    pub fn metadata(&self, path: &Path) -> Result<std::fs::Metadata> {
        std::fs::metadata(path).map_err(|e| Error::io(path, e))
    }

    /// Queues an obsolete sstable file for [`Fs::reclaim_obsolete`] (called from
    /// the reader's `Drop`, on whatever thread dropped the last reference: a
    /// push, never an unlink).
    pub fn queue_reclaim(&self, path: PathBuf) {
        self.reclaim.lock().push(path);
    }

    /// Unlinks the queued obsolete files (compaction runtime, flush thread,
    /// shutdown). Returns how many were removed. A failed unlink is kept queued
    /// for the next call; one left at exit is quarantined by the next open.
    pub fn reclaim_obsolete(&self) -> usize {
        let queued = std::mem::take(&mut *self.reclaim.lock());
        let mut removed = 0;
        let mut failed = Vec::new();
        for path in queued {
            match self.remove(&path) {
                Ok(()) => removed += 1,
                Err(_) => failed.push(path),
            }
        }
        if !failed.is_empty() {
            self.reclaim.lock().extend(failed);
        }
        removed
    }

    /// Obsolete files queued and not yet unlinked.
    pub fn reclaim_pending(&self) -> usize {
        self.reclaim.lock().len()
    }

    /// Creates (truncating) a file for writing. `table` counters, when given, are
    /// charged alongside the global ones.
    pub fn create(
        &self,
        path: &Path,
        tag: IoTag,
        table: Option<Arc<IoCounters>>,
    ) -> Result<WritableFile> {
        self.check_no_link(path)?;
        let usage = self.usage.counter_for(path);
        // Truncating an existing file frees its bytes.
        let truncated = match (&usage, std::fs::symlink_metadata(path)) {
            (Some(_), Ok(m)) if m.is_file() => m.len(),
            _ => 0,
        };
        let file = open_regular_for_writing(path, false)?;
        file.set_len(0).map_err(|e| Error::io(path, e))?;
        sub_bytes(&usage, truncated);
        Ok(WritableFile {
            file,
            path: path.to_path_buf(),
            buf: Vec::with_capacity(WRITE_BUFFER_BYTES),
            written: 0,
            tag,
            fs: self.clone(),
            table,
            usage,
        })
    }

    /// Opens an existing regular file for positional reads (invariant 7: a
    /// FIFO or device is refused, never waited on).
    pub fn open(&self, path: &Path) -> Result<ReadableFile> {
        let (file, len) = open_regular_for_reading(path)?;
        Ok(ReadableFile {
            file,
            path: path.to_path_buf(),
            len,
            fs: self.clone(),
        })
    }

    /// Reads a whole regular file of at most `max_bytes` (invariant 7): a
    /// larger one is refused from its size, before anything is allocated, as
    /// corruption of that file (no engine file it is called on can be larger).
    pub fn read_all(&self, path: &Path, max_bytes: u64, tag: IoTag) -> Result<Vec<u8>> {
        use std::io::Read;
        let (file, len) = open_regular_for_reading(path)?;
        if len > max_bytes {
            return Err(Error::corruption(
                path,
                0,
                format!(
                    "file of {len} bytes is larger than {max_bytes} bytes, the most this kind \
                     of file holds"
                ),
            ));
        }
        let mut data = Vec::with_capacity(len as usize);
        // `take`: a file growing under the read is still read only up to the bound.
        file.take(max_bytes)
            .read_to_end(&mut data)
            .map_err(|e| Error::io(path, e))?;
        self.counters.add(tag, data.len() as u64, false);
        Ok(data)
    }

    /// Durably replaces `path` with `bytes` (invariant 2).
    pub fn write_atomic(&self, path: &Path, bytes: &[u8], tag: IoTag) -> Result<()> {
        let tmp = tmp_path(path);
        let mut f = self.create(&tmp, tag, None)?;
        f.write_all(bytes)?;
        f.finish_as(path)
    }

    /// Appends `bytes` to `path` (creating it) and hands them to the OS; for
    /// append-only logs of operator information (compaction history).
    pub fn append(&self, path: &Path, bytes: &[u8], tag: IoTag) -> Result<()> {
        if let Some(fault) = self.faults.take(path, false) {
            return Err(Error::io(path, fault_error(fault)));
        }
        self.check_no_link(path)?;
        let mut f = open_regular_for_writing(path, true)?;
        f.write_all(bytes).map_err(|e| Error::io(path, e))?;
        self.counters.add(tag, bytes.len() as u64, true);
        add_bytes(&self.usage.counter_for(path), bytes.len() as u64);
        Ok(())
    }

    /// Renames a file or directory. Usage: an overwritten file's bytes are freed;
    /// a move between tracked directories carries its bytes along.
    pub fn rename(&self, from: &Path, to: &Path) -> Result<()> {
        self.check_no_link(from)?;
        self.check_no_link(to)?;
        let (src, dst) = (self.usage.counter_for(from), self.usage.counter_for(to));
        let overwritten = match &dst {
            Some(_) => Self::bytes_of_last_name(to),
            None => 0,
        };
        let moved = if same_counter(&src, &dst) {
            0
        } else {
            self.walk_bytes(from)?
        };
        std::fs::rename(from, to).map_err(|e| Error::io(from, e))?;
        sub_bytes(&src, moved);
        add_bytes(&dst, moved);
        sub_bytes(&dst, overwritten);
        Ok(())
    }

    /// Unlinks `path` (absent is fine). A link is removed itself, never its
    /// target; a directory on the way may not be a link (invariant 6).
    pub fn remove(&self, path: &Path) -> Result<()> {
        self.check_no_link(path)?;
        let usage = self.usage.counter_for(path);
        let len = match &usage {
            Some(_) => Self::bytes_of_last_name(path),
            None => 0,
        };
        match std::fs::remove_file(path) {
            Ok(()) => {
                sub_bytes(&usage, len);
                Ok(())
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Removes an empty directory (absent is fine).
    pub fn remove_dir(&self, path: &Path) -> Result<()> {
        self.check_no_link(path)?;
        match std::fs::remove_dir(path) {
            Ok(()) => Ok(()),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(e) => Err(Error::io(path, e)),
        }
    }

    /// Creates `path` and its missing parents. Below a confined root, neither
    /// a directory on the way nor `path` itself may be a link (invariant 6).
    pub fn create_dir_all(&self, path: &Path) -> Result<()> {
        self.check_no_link(path)?;
        if self.is_confined(path) && self.entry_kind(path)? == Some(EntryKind::Symlink) {
            return Err(link_refused(path));
        }
        std::fs::create_dir_all(path).map_err(|e| Error::io(path, e))
    }

    /// Whether `path` is below a confined root (invariant 6).
    fn is_confined(&self, path: &Path) -> bool {
        self.confined
            .read()
            .iter()
            .any(|r| path.starts_with(r) && path != r.as_path())
    }

    /// fsyncs a directory so that renames and creations in it survive power loss.
    pub fn sync_dir(&self, dir: &Path) -> Result<()> {
        sync_fault(&self.faults, dir, self.faults.take(dir, true))?;
        let d = File::open(dir).map_err(|e| Error::io(dir, e))?;
        d.sync_all().map_err(|e| Error::io(dir, e))?;
        self.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// A second name for `from`. Under the same tracked root it costs no bytes
    /// (invariant 4: each inode once); into another root, its bytes count there.
    pub fn hard_link(&self, from: &Path, to: &Path) -> Result<()> {
        self.check_no_link(from)?;
        self.check_no_link(to)?;
        let (src, usage) = (self.usage.counter_for(from), self.usage.counter_for(to));
        std::fs::hard_link(from, to).map_err(|e| Error::io(to, e))?;
        if usage.is_some() && !same_counter(&src, &usage) {
            add_bytes(&usage, self.file_len(to)?);
        }
        Ok(())
    }

    /// File names (not paths) in `dir`, sorted; empty if `dir` does not exist.
    pub fn list_dir(&self, dir: &Path) -> Result<Vec<String>> {
        let rd = match std::fs::read_dir(dir) {
            Ok(rd) => rd,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(Error::io(dir, e)),
        };
        let mut names = Vec::new();
        for entry in rd {
            let entry = entry.map_err(|e| Error::io(dir, e))?;
            names.push(entry.file_name().to_string_lossy().into_owned());
        }
        names.sort();
        Ok(names)
    }
}

/// Opens `path` for writing, creating it, never through a symbolic link and
/// never into a FIFO, socket or device (invariant 6): `O_NOFOLLOW` refuses a
/// link at the last component, `O_NONBLOCK` keeps a FIFO from blocking the
/// open, and the descriptor's own `fstat` must say "regular file". Nothing is
/// truncated here: the caller does that once the file is known to be regular.
fn open_regular_for_writing(path: &Path, append: bool) -> Result<File> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .write(!append)
        .append(append)
        .create(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => link_refused(path),
            Some(libc::ENXIO) => not_regular(path, EntryKind::Other),
            _ => Error::io(path, e),
        })?;
    check_regular(path, &file)?;
    clear_nonblocking(path, &file)?;
    Ok(file)
}

/// Opens `path` for reading if it is a regular file (invariant 7). A link is
/// followed (reading through one changes nothing); a FIFO does not block the
/// open (`O_NONBLOCK`) and is refused by the descriptor's `fstat`.
fn open_regular_for_reading(path: &Path) -> Result<(File, u64)> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(path, e))?;
    let len = check_regular(path, &file)?;
    clear_nonblocking(path, &file)?;
    Ok((file, len))
}

fn not_regular(path: &Path, kind: EntryKind) -> Error {
    Error::InvalidInput(format!(
        "{} is {}, not a regular file: refused before reading or writing it",
        path.display(),
        kind.describe()
    ))
}

/// The open file's length if it is a regular file.
fn check_regular(path: &Path, file: &File) -> Result<u64> {
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(not_regular(path, EntryKind::of(meta.file_type())));
    }
    Ok(meta.len())
}

/// `O_NONBLOCK` served the open only; reads and writes of a regular file
/// ignore it, but the descriptor is left as a plain one.
fn clear_nonblocking(path: &Path, file: &File) -> Result<()> {
    use std::os::unix::io::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl on a descriptor this function's caller owns; no memory is involved.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    // SAFETY: as above.
    if flags < 0 || unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(Error::io(path, std::io::Error::last_os_error()));
    }
    Ok(())
}

/// The temporary name a file is written under before its atomic rename.
pub fn tmp_path(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_os_string();
    s.push(".tmp");
    PathBuf::from(s)
}

/// Large enough that a 16 KiB compressed chunk rarely costs two syscalls.
const WRITE_BUFFER_BYTES: usize = 256 * 1024;

/// A check that this process still owns its data directory
/// (`crate::dirlock::DirLock::check`): `Err` (`Error::Poisoned`) once the
/// directory was deleted, moved or replaced. The commit log runs it before it
/// acknowledges a sync, and every manifest commit before it writes.
#[derive(Clone)]
pub struct OwnerCheck(Arc<dyn Fn() -> Result<()> + Send + Sync>);

impl OwnerCheck {
    pub fn new(check: impl Fn() -> Result<()> + Send + Sync + 'static) -> OwnerCheck {
        OwnerCheck(Arc::new(check))
    }

    /// `Ok` while this process owns the directory.
    pub fn check(&self) -> Result<()> {
        (self.0)()
    }
}

impl std::fmt::Debug for OwnerCheck {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("OwnerCheck")
    }
}

/// Whether `file` has lost its last name (deleted, or replaced by a rename
/// over it): what is written to it then reaches no file anyone can open.
fn unlinked(file: &File, path: &Path) -> Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    Ok(meta.nlink() == 0)
}

/// A buffered, accounted, fault-injectable file being written.
#[derive(Debug)]
pub struct WritableFile {
    file: File,
    path: PathBuf,
    buf: Vec<u8>,
    written: u64,
    tag: IoTag,
    fs: Fs,
    table: Option<Arc<IoCounters>>,
    /// Usage counter of the tracked directory holding the file, if any.
    usage: Option<Arc<AtomicU64>>,
}

impl WritableFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes appended so far (buffered or not): the offset of the next byte.
    pub fn position(&self) -> u64 {
        self.written + self.buf.len() as u64
    }

    pub fn write_all(&mut self, data: &[u8]) -> Result<()> {
        if self.buf.len() + data.len() > WRITE_BUFFER_BYTES {
            self.flush_buffer()?;
        }
        if data.len() >= WRITE_BUFFER_BYTES {
            self.write_through(data)
        } else {
            self.buf.extend_from_slice(data);
            Ok(())
        }
    }

    fn flush_buffer(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        // On failure the bytes stay buffered so that a retry (after ENOSPC clears)
        // writes them; after a torn write the file's tail is undefined and callers
        // abandon the file rather than retry.
        let buf = std::mem::take(&mut self.buf);
        let r = self.write_through(&buf);
        self.buf = buf;
        if r.is_ok() {
            self.buf.clear();
        }
        r
    }

    fn write_through(&mut self, data: &[u8]) -> Result<()> {
        if let Some(fault) = self.fs.faults.take(&self.path, false) {
            if fault == Fault::TornWrite {
                let half = &data[..data.len() / 2];
                let _ = self.file.write_all(half);
                self.written += half.len() as u64;
                self.account(half.len() as u64);
            }
            return Err(Error::io(&self.path, fault_error(fault)));
        }
        self.file
            .write_all(data)
            .map_err(|e| Error::io(&self.path, e))?;
        self.written += data.len() as u64;
        self.account(data.len() as u64);
        Ok(())
    }

    fn account(&self, n: u64) {
        add_bytes(&self.usage, n);
        self.fs.counters.add(self.tag, n, true);
        if let Some(t) = &self.table {
            t.add(self.tag, n, true);
        }
    }

    /// Appends `data` and hands it, with anything buffered before it, to the OS
    /// without fsync ([`WritableFile::flush`]). With nothing buffered, `data`
    /// goes to the OS from the caller's slice, not copied into the buffer
    /// first: the commit log's per-mutation write-out in periodic mode
    /// (BENCHMARKS.md, "Write path (issue 15)").
    pub fn write_and_flush(&mut self, data: &[u8]) -> Result<()> {
        if self.buf.is_empty() {
            if data.is_empty() {
                return Ok(());
            }
            return self.write_through(data);
        }
        self.write_all(data)?;
        self.flush_buffer()
    }

    /// Hands buffered bytes to the OS without fsync: they survive a process crash
    /// (the kernel has them) but not a power loss. The commit log's periodic mode
    /// relies on this for every acknowledged write.
    pub fn flush(&mut self) -> Result<()> {
        self.flush_buffer()
    }

    /// Hands buffered bytes to the OS and fsyncs the file.
    pub fn sync(&mut self) -> Result<()> {
        self.flush_buffer()?;
        fdatasync(&self.fs, &self.path, &self.file)
    }

    /// A second handle on this file that can only fsync it, so that an fsync can
    /// run without holding whatever guards this writer (the commit log's periodic
    /// syncer). It syncs what was handed to the OS (`flush`) before it is called.
    pub fn sync_handle(&self) -> Result<SyncHandle> {
        let file = self
            .file
            .try_clone()
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(SyncHandle {
            file,
            path: self.path.clone(),
            fs: self.fs.clone(),
        })
    }

    /// Syncs, then atomically renames this (temporary) file to `final_path` and
    /// fsyncs the directory (invariant 2).
    pub fn finish_as(mut self, final_path: &Path) -> Result<()> {
        self.sync()?;
        self.fs.rename(&self.path, final_path)?;
        let dir = final_path.parent().unwrap_or_else(|| Path::new("."));
        self.fs.sync_dir(dir)
    }
}

/// An fsync-only handle of a [`WritableFile`] ([`WritableFile::sync_handle`]).
#[derive(Debug)]
pub struct SyncHandle {
    file: File,
    path: PathBuf,
    fs: Fs,
}

impl SyncHandle {
    /// fdatasyncs the file: every byte any handle wrote to the OS before this
    /// call is durable when it returns `Ok`.
    pub fn sync(&self) -> Result<()> {
        fdatasync(&self.fs, &self.path, &self.file)
    }

    /// Whether the file was deleted (or replaced) since it was opened: then
    /// what this handle made durable is in no file the next open finds.
    pub fn unlinked(&self) -> Result<bool> {
        unlinked(&self.file, &self.path)
    }
}

/// One counted fdatasync of `file`, with any fault injected for `path` first.
fn fdatasync(fs: &Fs, path: &Path, file: &File) -> Result<()> {
    sync_fault(&fs.faults, path, fs.faults.take(path, true))?;
    file.sync_data().map_err(|e| Error::io(path, e))?;
    fs.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// A file open for positional reads.
#[derive(Debug)]
pub struct ReadableFile {
    file: File,
    path: PathBuf,
    len: u64,
    fs: Fs,
}

impl ReadableFile {
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The layer this file was opened through.
    pub fn fs(&self) -> &Fs {
        &self.fs
    }

    pub fn len(&self) -> u64 {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Reads exactly `buf.len()` bytes at `offset`; a short file is corruption.
    pub fn read_exact_at(
        &self,
        buf: &mut [u8],
        offset: u64,
        tag: IoTag,
        table: Option<&IoCounters>,
    ) -> Result<()> {
        if offset
            .checked_add(buf.len() as u64)
            .is_none_or(|end| end > self.len)
        {
            return Err(Error::corruption(
                &self.path,
                offset,
                format!(
                    "read of {} bytes past end of file ({} bytes)",
                    buf.len(),
                    self.len
                ),
            ));
        }
        self.file
            .read_exact_at(buf, offset)
            .map_err(|e| Error::io(&self.path, e))?;
        self.fs.counters.add(tag, buf.len() as u64, false);
        if let Some(t) = table {
            t.add(tag, buf.len() as u64, false);
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counts_bytes_per_cause_and_level() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let table = IoCounters::new();
        let p = dir.path().join("a");
        let mut f = fs
            .create(&fs_tmp(&p), IoTag::compaction(2), Some(table.clone()))
            .unwrap();
        f.write_all(&[7u8; 1000]).unwrap();
        assert_eq!(
            fs.counters().snapshot().written(IoCause::Compaction),
            0,
            "buffered bytes are not yet counted"
        );
        f.finish_as(&p).unwrap();
        let s = fs.counters().snapshot();
        assert_eq!(s.written(IoCause::Compaction), 1000);
        assert_eq!(s.compaction_written_level_bytes[2], 1000);
        assert_eq!(table.snapshot().written(IoCause::Compaction), 1000);
        assert!(s.fsyncs >= 2, "file and directory fsync");
        let r = fs.open(&p).unwrap();
        let mut buf = [0u8; 10];
        r.read_exact_at(&mut buf, 990, IoTag::new(IoCause::UserRead), None)
            .unwrap();
        assert_eq!(fs.counters().snapshot().read(IoCause::UserRead), 10);
        let err = r
            .read_exact_at(&mut buf, 995, IoTag::new(IoCause::UserRead), None)
            .unwrap_err();
        assert!(
            matches!(err, Error::Corruption { offset: 995, .. }),
            "{err}"
        );
    }

    fn fs_tmp(p: &Path) -> PathBuf {
        tmp_path(p)
    }

    #[test]
    fn usage_follows_every_change_as_a_walk_would_count_it() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("data");
        let fs = Fs::new();
        fs.create_dir_all(&root.join("ks").join("t")).unwrap();
        std::fs::write(root.join("before"), [0u8; 100]).unwrap();
        assert_eq!(fs.track_usage(&root).unwrap(), 100);
        let tag = IoTag::new(IoCause::Flush);
        // A fresh layer walks the directory: what the tracked count must equal.
        let walked = || Fs::new().walk_bytes(&root).expect("walk");
        let check = |what: &str| {
            assert_eq!(fs.used_bytes(&root).unwrap(), walked(), "{what}");
        };
        // A buffered write counts when handed to the OS, then the rename keeps it.
        let p = root.join("ks").join("t").join("a");
        let mut f = fs.create(&tmp_path(&p), tag, None).unwrap();
        f.write_all(&[1u8; 5000]).unwrap();
        f.finish_as(&p).unwrap();
        check("create + rename");
        // Atomic replace of an existing file frees the old bytes.
        fs.write_atomic(&p, &[2u8; 300], tag).unwrap();
        check("replace");
        fs.append(&root.join("history"), &[3u8; 42], tag).unwrap();
        fs.append(&root.join("history"), &[3u8; 8], tag).unwrap();
        check("append");
        // Truncating create of an existing file.
        let mut again = fs.create(&root.join("history"), tag, None).unwrap();
        again.write_all(b"x").unwrap();
        again.sync().unwrap();
        check("truncate");
        // A hard link (a snapshot) costs nothing; removing either name frees
        // nothing; removing the last frees the bytes.
        let link = root.join("ks").join("link");
        fs.hard_link(&p, &link).unwrap();
        check("hard link counts each inode once");
        fs.remove(&p).unwrap();
        check("the live name goes, the snapshot keeps the bytes");
        fs.hard_link(&link, &p).unwrap();
        fs.remove(&link).unwrap();
        check("back to one name");
        fs.rename(&root.join("before"), &root.join("ks").join("moved"))
            .unwrap();
        check("rename inside the root");
        // Out of the tracked root and back in.
        let outside = dir.path().join("outside");
        fs.rename(&p, &outside).unwrap();
        check("moved out");
        fs.rename(&outside, &p).unwrap();
        check("moved in");
        fs.remove(&p).unwrap();
        check("remove");
        // Untracked paths change nothing.
        fs.append(&dir.path().join("elsewhere"), &[0u8; 10], tag)
            .unwrap();
        check("untracked");
    }

    #[test]
    fn reclaim_unlinks_queued_files_and_keeps_failures_queued() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        fs.track_usage(dir.path()).unwrap();
        let a = dir.path().join("a");
        fs.append(&a, &[0u8; 64], IoTag::new(IoCause::Flush))
            .unwrap();
        // A directory cannot be unlinked as a file: stays queued, nothing lost.
        let d = dir.path().join("d");
        fs.create_dir_all(&d).unwrap();
        fs.queue_reclaim(a.clone());
        fs.queue_reclaim(d.clone());
        assert_eq!(fs.reclaim_pending(), 2);
        assert_eq!(fs.reclaim_obsolete(), 1);
        assert!(!a.exists() && d.exists());
        assert_eq!(fs.reclaim_pending(), 1);
        assert_eq!(fs.used_bytes(dir.path()).unwrap(), 0);
    }

    #[test]
    fn injected_faults_fire_once_and_count_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        fs.faults().inject("victim", Fault::NoSpace, 1);
        let p = dir.path().join("victim");
        let mut f = fs.create(&p, IoTag::new(IoCause::Flush), None).unwrap();
        f.write_all(&[1u8; 10]).unwrap();
        let err = f.sync().unwrap_err();
        match err {
            Error::Io { source, .. } => assert_eq!(source.raw_os_error(), Some(28)),
            other => panic!("unexpected {other}"),
        }
        assert_eq!(fs.counters().snapshot().written(IoCause::Flush), 0);
        // The rule is spent: the retry succeeds.
        f.sync().unwrap();
        assert_eq!(fs.counters().snapshot().written(IoCause::Flush), 10);
    }

    #[test]
    fn torn_write_writes_a_prefix_then_fails() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        fs.faults().inject("", Fault::TornWrite, 1);
        let p = dir.path().join("t");
        let mut f = fs.create(&p, IoTag::new(IoCause::CommitLog), None).unwrap();
        f.write_all(&[1u8; 100]).unwrap();
        assert!(f.sync().is_err());
        assert_eq!(std::fs::metadata(&p).unwrap().len(), 50);
    }

    #[test]
    fn sync_fault_fails_fsync() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        fs.faults().inject("s", Fault::SyncError, 1);
        let p = dir.path().join("s");
        let mut f = fs.create(&p, IoTag::new(IoCause::CommitLog), None).unwrap();
        f.write_all(b"abc").unwrap();
        assert!(f.sync().is_err());
        fs.faults().clear();
        f.sync().unwrap();
    }

    #[test]
    fn slow_sync_delays_then_succeeds_on_a_sync_handle() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let p = dir.path().join("slow");
        let mut f = fs.create(&p, IoTag::new(IoCause::CommitLog), None).unwrap();
        f.write_all(b"abc").unwrap();
        f.flush().unwrap();
        let h = f.sync_handle().unwrap();
        let delay = std::time::Duration::from_millis(50);
        fs.faults().inject("slow", Fault::SlowSync(delay), 1);
        // A slow fsync is a sync fault: writes do not take it.
        f.write_all(b"def").unwrap();
        f.flush().unwrap();
        let t = std::time::Instant::now();
        h.sync().unwrap();
        assert!(t.elapsed() >= delay);
        fs.faults().inject("slow", Fault::SyncError, 1);
        assert!(h.sync().is_err());
    }

    fn mkfifo(path: &Path) {
        let c = std::ffi::CString::new(path.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
    }

    /// Invariant 6: below a confined root, no change goes through a link, at
    /// the last component (O_NOFOLLOW) or any directory before it; the root
    /// itself may be one.
    #[test]
    fn no_change_goes_through_a_link_below_a_confined_root() {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real");
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(real.join("ks")).unwrap();
        std::fs::create_dir_all(&outside).unwrap();
        std::fs::write(outside.join("canary"), b"theirs").unwrap();
        let root = tmp.path().join("root");
        std::os::unix::fs::symlink(&real, &root).unwrap();
        let fs = Fs::new();
        fs.confine(&root);
        let tag = IoTag::new(IoCause::Metadata);
        // Through the root link: fine.
        fs.write_atomic(&root.join("ks").join("f"), b"ours", tag)
            .unwrap();
        // A link as a directory on the way.
        std::os::unix::fs::symlink(&outside, root.join("ks").join("t")).unwrap();
        let via = root.join("ks").join("t");
        assert!(fs.create(&via.join("new"), tag, None).is_err());
        assert!(fs.remove(&via.join("canary")).is_err());
        assert!(fs.append(&via.join("canary"), b"x", tag).is_err());
        assert!(fs
            .rename(&root.join("ks").join("f"), &via.join("f"))
            .is_err());
        assert!(fs
            .hard_link(&root.join("ks").join("f"), &via.join("f"))
            .is_err());
        assert!(fs.create_dir_all(&via.join("d")).is_err());
        assert!(fs.create_dir_all(&via).is_err());
        assert!(fs.remove_dir(&via.join("sub")).is_err());
        // A link as the last component: written through by no one.
        let last = root.join("ks").join("last");
        std::os::unix::fs::symlink(outside.join("canary"), &last).unwrap();
        let e = fs.create(&last, tag, None).unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert!(fs.append(&last, b"x", tag).is_err());
        assert_eq!(std::fs::read(outside.join("canary")).unwrap(), b"theirs");
        assert_eq!(std::fs::read_dir(&outside).unwrap().count(), 1);
        // Removing the link itself is a change of the data directory only.
        fs.remove(&last).unwrap();
        assert!(outside.join("canary").exists());
    }

    /// Invariant 7: a FIFO is refused at once by every open, never waited on.
    #[test]
    fn fifos_are_refused_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join("fifo");
        mkfifo(&fifo);
        let fs = Fs::new();
        let tag = IoTag::new(IoCause::Metadata);
        let e = fs.open(&fifo).unwrap_err().to_string();
        assert!(e.contains("not a regular file"), "{e}");
        assert!(fs.read_all(&fifo, 1 << 20, tag).is_err());
        assert!(fs.create(&fifo, tag, None).is_err());
        assert!(fs.append(&fifo, b"x", tag).is_err());
        let e = fs.open(dir.path()).unwrap_err().to_string();
        assert!(e.contains("a directory"), "{e}");
    }

    /// Invariant 7: `read_all` refuses a file past its bound from its size.
    #[test]
    fn read_all_is_bounded_before_it_allocates() {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("big");
        // 20 GiB of holes: believed, this would be 20 GiB of memory.
        std::fs::File::create(&p)
            .unwrap()
            .set_len(20 << 30)
            .unwrap();
        let fs = Fs::new();
        let tag = IoTag::new(IoCause::Metadata);
        let e = fs.read_all(&p, 1 << 20, tag).unwrap_err().to_string();
        assert!(e.contains("larger than 1048576 bytes"), "{e}");
        std::fs::write(&p, b"small").unwrap();
        assert_eq!(fs.read_all(&p, 5, tag).unwrap(), b"small");
        assert!(fs.read_all(&p, 4, tag).is_err());
    }
}
