//! The commit log: every mutation is appended here before it reaches a memtable,
//! so that an acknowledged write survives a crash (issue 3; the crash model, sync
//! modes and recovery rules are in docs/DURABILITY.md, the byte layout in
//! [`format`]).
//!
//! Glossary:
//! - **segment**: one file `CommitLog-<format version>-<id>.log` of at most
//!   `segment_size_bytes` plus its seal (or of one larger record, invariant 7);
//!   records are only ever appended to the
//!   **active** (newest) segment.
//! - **position**: a [`ReplayPosition`] `(segment id, byte offset)`. The position
//!   of a record is the offset *after* it, so "flushed up to `p`" covers every
//!   record whose position is `<= p`.
//! - **dirty table**: a table with a record in a segment that it has not yet
//!   flushed past; a segment is deleted when it has no dirty table left (Cassandra's
//!   per-segment `cfDirty` map).
//! - **sync**: handing appended bytes to the OS and fsyncing the active segment.
//!
//! Threads: [`CommitLog`] is `Send + Sync` and shared as `Arc` by every writer.
//! Writers serialise and frame their mutation without any lock, then hold the
//! `log` lock only to copy the bytes into the pending buffer (periodic mode then
//! takes the `io` lock briefly to hand them to the OS). A sync holds the `io` lock
//! only while it hands the pending bytes to the OS, never across the fsync, which
//! runs on a second handle of the segment: writers keep appending (and, in
//! periodic mode, writing out) while an fsync runs. That overlap is what lets the
//! next fsync cover many writers (group commit), and what keeps a slow fsync from
//! stalling periodic-mode writers. In `periodic` mode one background thread syncs
//! every `period`, and fsyncs each segment a roll seals (invariant 3).
//! Lock order: `next` → `io` → `log` → `retired` → `sync` → `poison`.
//!
//! Invariants:
//! 1. Positions strictly increase in append order; `append` returns the position
//!    after the record, and `current_position` is never behind a returned one.
//! 2. Bytes reach the segment file in position order: only the holder of the `io`
//!    lock moves bytes from the pending buffer to the file.
//! 3. A non-active segment is complete and sealed, and a sealed segment always
//!    has a successor on disk: a roll (and an open) first has the next segment
//!    durably (header and directory entry fsynced, before any record is written
//!    to it; usually made ahead, see [`Shared::prepare_next`]), then writes the
//!    old segment's last records and its seal (format invariant 5). Batch and
//!    group mode fsync them before the roll returns. Periodic mode queues the
//!    old segment (`LogState::closing`) for its syncer thread, so no writer
//!    waits for that fsync; nothing is recorded durable past a queued segment
//!    until its fsync returns, and a queued segment whose records every table
//!    has flushed is deleted like any other (its fsync is then moot). The
//!    exception this makes to the next sentence, a power loss during that
//!    fsync, is in docs/DURABILITY.md ("Segment lifecycle"). Hence a torn tail can only be in the
//!    *tail* of the log: the newest segment, or, after a crash between those two
//!    steps, the newest segment holding records followed by record-less unsealed
//!    ones. Open seals the tail, oldest first, after creating the new active
//!    segment. So every other format-2 segment found at open ends with a seal
//!    (one that does not was cut short: its lost records are corruption), and a
//!    sealed newest segment means that a newer one was lost (invariant 8).
//! 4. `wait(ticket)` returns `Ok` only once a sync whose target is at or past the
//!    ticket's position has completed (batch, group), or at once (periodic).
//! 5. After any failed write or fsync the log is poisoned: it never retries an
//!    fsync (Linux may have dropped the dirty pages, so a retry could report
//!    success for lost data); every later append and unsatisfied wait fails with
//!    `Error::Poisoned` giving the reason.
//! 6. A segment is deleted only when it is not active, it has been replayed (if it
//!    predates this open), and no table is dirty in it; and only after its id is
//!    durably recorded in `RETIRED` ([`retired`]). The newest segment file is
//!    never deleted, so a reopened log allocates ids above every position ever
//!    handed out (see also [`CommitLog::ensure_after`]); ids found missing are
//!    never reused either.
//! 7. A mutation whose framed record exceeds `max_mutation_size` is rejected with
//!    `Error::InvalidInput` naming the option, before anything is written. Any
//!    accepted record is written whole into one segment: if it does not fit the
//!    rest of the active segment the log rolls, and an empty segment takes a record
//!    of any accepted size (the segment then exceeds `segment_size_bytes`; nothing
//!    reads a segment's size from the options).
//! 8. No segment goes missing silently. Ids are allocated contiguously (a jump by
//!    [`CommitLog::ensure_after`] records the skipped ids as retired first), so at
//!    open every id from 1 to the newest found, and to one past the highest
//!    retired id (the active segment is never retired), is either on disk or in
//!    `RETIRED`; and the newest found is unsealed (invariant 3). Otherwise open
//!    fails with `Error::Corruption` naming the missing files, before changing
//!    anything; under `ignore_replay_errors` it goes on, replay reports them
//!    ([`ReplayStats::missing_segments`]) and records them as retired. A log
//!    without `RETIRED` (written before it existed) is taken as complete once,
//!    and the record is started from what is on disk.
//! 9. Under `ignore_replay_errors`, each skipped region is reported with segment,
//!    offset, bytes and mutations lost ([`SkippedRegion`]), and the damaged
//!    segment is copied into `<commitlog>/quarantine/` before replay returns, so
//!    no later deletion (the recovery flush, the close) destroys the evidence.
//! 10. A sync acknowledges nothing unless the segment it made durable still has
//!     its name and this process still owns the data directory
//!     ([`CommitLog::set_owner_check`], `dirlock`): an operator who deletes the
//!     active segment, the commit-log directory or the data directory (perhaps
//!     creating it again, for another process to own) makes the log poisoned,
//!     never a log that acknowledges writes into deleted files. Periodic mode
//!     acknowledges before its sync, so there the writes of up to one period
//!     before the check are in the deleted files (as they would be lost to a
//!     power failure in that mode).
//! 11. The log's own records do not survive its deletion, so the database hands
//!     open what the manifests say ([`LogExpectation`]): a table flushed up to
//!     a position in segment N means a segment at or after N is on disk (the
//!     newest is never deleted), and when `RETIRED` is missing from a log that
//!     must have had one (segment format 3 on), an id not on disk is missing
//!     unless every table has flushed past it. Both are invariant 8's
//!     corruption, refused unless `ignore_replay_errors`.

pub mod format;
pub mod retired;
mod segment;

#[cfg(test)]
mod tests;

pub use segment::{
    parse_segment_file_name, segment_file_name, segment_file_name_for, segment_path,
    segment_path_for,
};

pub use self::format::LogCompression;
use self::format::MAX_SEGMENT_FILE_BYTES;
use self::format::{
    decode_header, decode_record, encode_record_pieces, RecordPieces, ScanItem, Scanner,
    SegmentHeader, HEADER_BYTES,
};
use crate::data::PartitionUpdate;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::manifest::ReplayPosition;
use parking_lot::{Condvar, Mutex};
use segment::{SegmentFile, TAG};
use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// Records at least this large bypass the group buffer ([`CommitLog::append`]).
/// 1 MiB: below it the extra copy into the buffer costs less than holding the
/// `io` lock (which periodic-mode writers share) for a write of its own; above
/// it the copy is a second whole copy of a large value, which issue 13 forbids.
pub const DIRECT_WRITE_BYTES: u64 = 1024 * 1024;

/// When appended mutations are fsynced, and when a writer is acknowledged.
/// Cassandra's `commitlog_sync`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SyncMode {
    /// Acknowledge at once; a background thread fsyncs every `period`
    /// (`commitlog_sync_period`, default 10 s). Power loss can lose up to
    /// `period` of acknowledged writes.
    Periodic { period: Duration },
    /// Acknowledge only after the fsync that covers the write; concurrent writers
    /// share fsyncs (leader/follower group commit). Loses nothing acknowledged.
    Batch,
    /// As `Batch`, but at most one fsync per `window`
    /// (`commitlog_sync_group_window`): writers wait up to `window` so that more of
    /// them share each fsync. Trades latency for fewer fsyncs.
    Group { window: Duration },
}

impl SyncMode {
    /// `commitlog_sync_period` default (Cassandra: 10000ms).
    pub const DEFAULT_PERIOD: Duration = Duration::from_secs(10);
    /// `commitlog_sync_group_window` default. Cassandra makes the operator choose;
    /// 10 ms is a few fsyncs' worth on an SSD, enough for many writers to gather.
    pub const DEFAULT_GROUP_WINDOW: Duration = Duration::from_millis(10);

    /// The Cassandra name: `periodic`, `batch` or `group`.
    pub fn name(&self) -> &'static str {
        match self {
            SyncMode::Periodic { .. } => "periodic",
            SyncMode::Batch => "batch",
            SyncMode::Group { .. } => "group",
        }
    }

    /// Parses `periodic|batch|group` (the CLI's `--commitlog-sync`); `period` and
    /// `window` are used by the modes that have them.
    pub fn from_name(name: &str, period: Duration, window: Duration) -> Result<SyncMode> {
        match name {
            "periodic" => Ok(SyncMode::Periodic { period }),
            "batch" => Ok(SyncMode::Batch),
            "group" => Ok(SyncMode::Group { window }),
            other => Err(Error::option(
                "commitlog_sync",
                format!("'{other}' is not one of periodic, batch, group"),
            )),
        }
    }
}

impl Default for SyncMode {
    fn default() -> Self {
        SyncMode::Periodic {
            period: SyncMode::DEFAULT_PERIOD,
        }
    }
}

/// Commit-log options, validated at [`CommitLog::open`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CommitLogOptions {
    /// `commitlog_sync` and its period or window. Default: periodic, 10 s.
    pub sync: SyncMode,
    /// `commitlog_segment_size`, bytes. Default 32 MiB (Cassandra's). Larger
    /// segments mean fewer files and rolls, but a segment is only deleted once every
    /// table has flushed past all of it, so disk held by the log grows with it.
    /// It does not limit the mutation size: a record that does not fit the rest of
    /// the active segment starts a new one, and a record larger than a segment gets
    /// a segment of its own, as large as that record. Range 4 KiB ..= 1 GiB.
    pub segment_size_bytes: u64,
    /// Cassandra's `max_mutation_size`: the largest framed commit-log record (one
    /// partition update, with a few bytes of framing per cell), bytes. A larger
    /// mutation is refused with `InvalidInput` naming this option, before anything
    /// is written. Default 128 MiB, so that a mutation carrying one 64 MiB block
    /// (the CFS-style large-value workload, issue 13) is accepted with default
    /// settings with room to spare, while a runaway batch is still caught before it
    /// is held in memory several times over (the update, the memtable row, the
    /// flush). Cassandra derives it from the segment size (half of it, 16 MiB by
    /// default), which made a 16 MiB block impossible; here segments grow for a
    /// large record instead. Range 1 KiB ..= 1 GiB (record lengths are u32).
    pub max_mutation_size_bytes: u64,
    /// Cassandra's `ignore_replay_errors` (`-Dcassandra.commitlog.ignorereplayerrors`):
    /// skip corrupt records during replay instead of refusing to open. Default
    /// false: corruption outside a torn tail stops the open, naming segment and offset.
    pub ignore_replay_errors: bool,
    /// Cassandra's `commitlog_compression`: `Lz4` compresses each small
    /// record on its own (`format`, invariant 6), so a record is still written,
    /// and durable, as soon as it is appended, unlike Cassandra's compressed
    /// segments, which compress a whole sync section in memory first. Default
    /// `None`, as Cassandra's. Replay reads either, whatever this says.
    pub compression: LogCompression,
}

impl CommitLogOptions {
    pub const DEFAULT_SEGMENT_SIZE_BYTES: u64 = 32 * 1024 * 1024;
    pub const MIN_SEGMENT_SIZE_BYTES: u64 = 4 * 1024;
    /// Record lengths are u32, so 1 GiB leaves ample room; Cassandra caps
    /// segments below 2 GiB for the same reason.
    pub const MAX_SEGMENT_SIZE_BYTES: u64 = 1024 * 1024 * 1024;
    /// Default of [`CommitLogOptions::max_mutation_size_bytes`].
    pub const DEFAULT_MAX_MUTATION_SIZE_BYTES: u64 = 128 * 1024 * 1024;
    pub const MIN_MAX_MUTATION_SIZE_BYTES: u64 = 1024;
    /// An oversized segment holds exactly one record, so this also bounds the
    /// largest segment file; u32 record lengths allow up to 4 GiB.
    pub const MAX_MAX_MUTATION_SIZE_BYTES: u64 = 1024 * 1024 * 1024;

    /// Largest framed record accepted ([`CommitLogOptions::max_mutation_size_bytes`]).
    pub fn max_mutation_bytes(&self) -> u64 {
        self.max_mutation_size_bytes
    }

    pub fn validate(&self) -> Result<()> {
        if !(Self::MIN_SEGMENT_SIZE_BYTES..=Self::MAX_SEGMENT_SIZE_BYTES)
            .contains(&self.segment_size_bytes)
        {
            return Err(Error::option(
                "commitlog_segment_size",
                format!(
                    "{} bytes is outside {}..={} bytes",
                    self.segment_size_bytes,
                    Self::MIN_SEGMENT_SIZE_BYTES,
                    Self::MAX_SEGMENT_SIZE_BYTES
                ),
            ));
        }
        if !(Self::MIN_MAX_MUTATION_SIZE_BYTES..=Self::MAX_MAX_MUTATION_SIZE_BYTES)
            .contains(&self.max_mutation_size_bytes)
        {
            return Err(Error::option(
                "max_mutation_size",
                format!(
                    "{} bytes is outside {}..={} bytes",
                    self.max_mutation_size_bytes,
                    Self::MIN_MAX_MUTATION_SIZE_BYTES,
                    Self::MAX_MAX_MUTATION_SIZE_BYTES
                ),
            ));
        }
        if let SyncMode::Periodic { period } = self.sync {
            if period.is_zero() {
                return Err(Error::option(
                    "commitlog_sync_period",
                    "must be positive (use batch mode to fsync every write)",
                ));
            }
            // The period is how much acknowledged data a power loss may take;
            // beyond an hour it is a typo, not a durability choice.
            if period > Duration::from_secs(3600) {
                return Err(Error::option(
                    "commitlog_sync_period",
                    format!("{period:?} would leave writes unsynced for hours; at most 1 hour"),
                ));
            }
        }
        if let SyncMode::Group { window } = self.sync {
            if window > Duration::from_secs(60) {
                return Err(Error::option(
                    "commitlog_sync_group_window",
                    format!("{window:?} would stall writers; at most 60 s"),
                ));
            }
        }
        Ok(())
    }
}

impl Default for CommitLogOptions {
    fn default() -> Self {
        CommitLogOptions {
            sync: SyncMode::default(),
            segment_size_bytes: Self::DEFAULT_SEGMENT_SIZE_BYTES,
            max_mutation_size_bytes: Self::DEFAULT_MAX_MUTATION_SIZE_BYTES,
            ignore_replay_errors: false,
            compression: LogCompression::None,
        }
    }
}

/// Proof of an append, redeemed by [`CommitLog::wait`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SyncTicket {
    pub position: ReplayPosition,
}

/// Counters of a live log, for `tablestats`-like output and the sync-mode benchmark.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct CommitLogStats {
    pub sync_mode: &'static str,
    /// Mutations appended since open.
    pub appends: u64,
    /// Framed record bytes appended since open.
    pub appended_bytes: u64,
    /// fsyncs of segment data that made at least one mutation durable (group
    /// syncs, periodic syncs, the sync before a segment roll). Segment creation
    /// adds two more fsyncs each (file header, directory), counted by `Fs`.
    pub fsyncs: u64,
    /// Mutations made durable by those fsyncs.
    pub synced_mutations: u64,
    /// `synced_mutations / fsyncs`: above 1 when writers share fsyncs.
    pub mutations_per_fsync: f64,
    /// Segment files on disk (active one included).
    pub segments_live: usize,
    pub segments_created: u64,
    pub segments_deleted: u64,
    pub active_segment: u64,
    /// Records encoded a second time because a segment roll changed the time
    /// base between their encoding and their placement (format invariant 9):
    /// the writers that raced a roll, a few per segment at most.
    pub records_reencoded: u64,
    /// Why the log refuses writes, if it does.
    pub poisoned: Option<String>,
}

/// What [`CommitLog::replay`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct ReplayStats {
    /// Segments read (those that existed when the log was opened).
    pub segments_replayed: usize,
    /// Mutations handed to `apply`.
    pub records_replayed: u64,
    /// Mutations at or before their table's flushed position (already in sstables).
    pub records_skipped_flushed: u64,
    /// Corrupt records (or damaged regions) skipped under `ignore_replay_errors`.
    pub corrupt_records_skipped: u64,
    pub corrupt_bytes_skipped: u64,
    /// One line per skipped damage or missing segment (what the CLI prints):
    /// `path @ offset: N bytes skipped, mutations lost: M|unknown, copy kept in Q: reason`.
    pub corruptions: Vec<String>,
    /// Each region skipped under `ignore_replay_errors`, precisely.
    pub skipped: Vec<SkippedRegion>,
    /// File names of segments found missing (and gone on without) under
    /// `ignore_replay_errors` (at most 1000 per missing range).
    pub missing_segments: Vec<String>,
    /// Copies of damaged segments kept in `<commitlog>/quarantine/`.
    pub quarantined: Vec<PathBuf>,
    /// Bytes of torn tail cut from the newest segment at open (a crash mid-append).
    pub torn_tail_bytes: u64,
    /// Segments deleted after replay because no table needed them.
    pub segments_deleted: usize,
    /// Mutations replayed per table id.
    pub replayed_per_table: BTreeMap<u64, u64>,
}

/// A damaged region that replay skipped under `ignore_replay_errors`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SkippedRegion {
    pub segment: PathBuf,
    /// Byte offset of the region in the segment.
    pub offset: u64,
    /// Bytes skipped (0 for a segment cut short: what is lost is not there).
    pub bytes: u64,
    /// Mutations lost, when countable (a checksummed record that does not decode
    /// is one); `None` = unknown (a damaged frame hides how many records it held).
    pub mutations_lost: Option<u64>,
    pub reason: String,
    /// The copy of the whole segment kept in quarantine.
    pub quarantined_copy: Option<PathBuf>,
}

impl SkippedRegion {
    /// The one-line report of [`ReplayStats::corruptions`].
    pub fn describe(&self) -> String {
        let lost = self
            .mutations_lost
            .map_or_else(|| "unknown".to_string(), |n| n.to_string());
        let copy = self
            .quarantined_copy
            .as_ref()
            .map_or_else(String::new, |q| format!(", copy kept in {}", q.display()));
        format!(
            "{} @ {}: {} bytes skipped, mutations lost: {lost}{copy}: {}",
            self.segment.display(),
            self.offset,
            self.bytes,
            self.reason
        )
    }
}

/// A new segment's time base (format invariant 9): the wall clock in
/// microseconds, near the timestamps its records will carry. Only an encoding
/// reference: a clock that is off costs a few bytes per record, nothing else.
fn segment_time_base() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(0))
}

/// Per-segment bookkeeping.
#[derive(Debug)]
struct SegmentState {
    /// Format the segment was written in (its file name carries it too).
    format_version: u32,
    /// table id → end offset of its last record in this segment (Cassandra's
    /// `cfDirty`/`cfLastWrite`). A table leaves when it flushes past that offset.
    dirty: HashMap<u64, u64>,
    /// Found at open and not yet replayed: kept whatever `dirty` says (invariant 6).
    awaiting_replay: bool,
}

impl Default for SegmentState {
    /// A segment this build creates.
    fn default() -> SegmentState {
        SegmentState {
            format_version: format::SEGMENT_FORMAT_VERSION,
            dirty: HashMap::new(),
            awaiting_replay: false,
        }
    }
}

/// Guarded by `Shared::log`: the append order.
#[derive(Debug)]
struct LogState {
    active: u64,
    /// Logical end of the active segment: file bytes plus `pending`.
    offset: u64,
    /// Appended to the active segment, not yet handed to the file (invariant 2).
    pending: Vec<u8>,
    /// Mutations appended since open (also [`CommitLogStats::appends`]).
    appended_count: u64,
    /// Framed bytes appended since open. Counted here, under the lock every
    /// append already holds, rather than in shared atomics updated per
    /// mutation (BENCHMARKS.md, "Write path (issue 15)").
    appended_bytes: u64,
    segments: BTreeMap<u64, SegmentState>,
    /// Periodic mode: segments rolled away from and sealed but not yet fsynced,
    /// oldest first (invariant 3). Nothing is recorded durable past the first
    /// of them until it is fsynced, or deleted because every record in it is
    /// in its table's sstables.
    closing: std::collections::VecDeque<Closing>,
    closed: bool,
}

/// Why the periodic syncer wakes before its period is up.
#[derive(Debug, Default)]
struct SyncerWake {
    stop: bool,
    /// A roll sealed a segment that awaits its fsync (invariant 3).
    sealed: bool,
}

/// A sealed segment whose fsync runs outside the locks (invariant 3).
#[derive(Debug)]
struct Closing {
    id: u64,
    handle: Arc<crate::fs::SyncHandle>,
    /// `appended_count` when it was sealed: what its fsync makes durable.
    count: u64,
    /// fsynced, or deleted.
    done: bool,
    /// Deleted before its fsync (its tables flushed past it): nothing in it is
    /// needed any more, and its file is gone.
    deleted: bool,
}

impl LogState {
    fn position(&self) -> ReplayPosition {
        ReplayPosition {
            segment: self.active,
            offset: self.offset,
        }
    }

    /// Removes and returns the segments invariant 6 allows to delete.
    /// Removes the deletable segments from the books; returns `(id, format)`.
    fn take_deletable(&mut self) -> Vec<(u64, u32)> {
        let active = self.active;
        let dead: Vec<(u64, u32)> = self
            .segments
            .iter()
            .filter(|(id, s)| **id != active && !s.awaiting_replay && s.dirty.is_empty())
            .map(|(id, s)| (*id, s.format_version))
            .collect();
        for (id, _) in &dead {
            self.segments.remove(id);
            // A sealed segment awaiting its fsync needs none now.
            for c in self.closing.iter_mut().filter(|c| c.id == *id) {
                c.done = true;
                c.deleted = true;
            }
        }
        dead
    }
}

/// Guarded by `Shared::io`: the active file and what has been made durable.
#[derive(Debug)]
struct IoState {
    file: SegmentFile,
    /// The pending buffer's twin: a write-out swaps it with `LogState::pending`,
    /// writes it, and clears it, so the two allocations are reused from write to
    /// write. Taking `pending` by `mem::take` left an empty buffer that the next
    /// append regrew from nothing: a malloc and a free per mutation in periodic
    /// mode (BENCHMARKS.md, "Write path (issue 15)").
    spare: Vec<u8>,
    /// Position covered by the last completed sync.
    synced: ReplayPosition,
    /// `appended_count` covered by the last completed sync.
    synced_count: u64,
}

/// Capacity the pending buffers keep between write-outs: a batch-mode group or
/// a record of up to [`DIRECT_WRITE_BYTES`] may grow them to megabytes once;
/// that is not kept for the log's lifetime.
const PENDING_KEEP_BYTES: usize = 256 * 1024;

impl IoState {
    /// Empties the spare buffer after its bytes were written (or the write
    /// failed, which poisons the log), keeping its allocation unless oversized.
    fn recycle_spare(&mut self) {
        self.spare.clear();
        if self.spare.capacity() > PENDING_KEEP_BYTES {
            self.spare = Vec::new();
        }
    }
}

/// Guarded by `Shared::sync`: leader election for batch/group waiters.
#[derive(Debug)]
struct SyncState {
    durable: ReplayPosition,
    leader: bool,
    last_sync_start: Option<Instant>,
}

#[derive(Debug, Default)]
struct Counters {
    fsyncs: AtomicU64,
    synced_mutations: AtomicU64,
    segments_created: AtomicU64,
    segments_deleted: AtomicU64,
    records_reencoded: AtomicU64,
}

#[derive(Debug)]
struct Shared {
    fs: Fs,
    dir: PathBuf,
    opts: CommitLogOptions,
    /// The next segment, created ahead of its roll by the append that takes
    /// the active one past half its size ([`Shared::prepare_next`]), so that
    /// no roll makes every writer wait for a file creation and two fsyncs.
    /// Lock order: before `io`.
    next: Mutex<Option<SegmentFile>>,
    io: Mutex<IoState>,
    log: Mutex<LogState>,
    /// The active segment's time base (format invariant 9). Changed only by a
    /// roll, under the `log` lock, so under that lock it is exact: a record
    /// is appended only if it was encoded against it. A writer reads it
    /// without the lock to encode, and encodes again if a roll came between.
    time_base: AtomicI64,
    sync: Mutex<SyncState>,
    synced_cv: Condvar,
    poisoned: AtomicBool,
    poison_reason: Mutex<Option<String>>,
    stop: Mutex<SyncerWake>,
    /// Wakes the periodic syncer: to stop, or to fsync a sealed segment.
    stop_cv: Condvar,
    counters: Counters,
    torn_tail_bytes: u64,
    /// The durable retired-segment record, as last stored (invariant 8). Lock
    /// order: after `io` and `log`.
    retired: Mutex<retired::Retired>,
    /// Segment ids found missing at open (under `ignore_replay_errors`) and why;
    /// reported and recorded as retired by replay.
    missing: Mutex<(Vec<(u64, u64)>, String)>,
    /// What open could not check, for replay's report.
    open_notes: Vec<String>,
    /// Whether this process still owns the data directory (invariant 10); set
    /// by the database after open.
    owner: std::sync::OnceLock<crate::fs::OwnerCheck>,
}

/// What the data directory outside the log says the log must still hold
/// (invariant 11): each table's flushed position, from its manifest. The
/// manifests live in the table directories, so deleting the commit log, or
/// `RETIRED` together with a segment, does not take them along.
#[derive(Clone, Debug, Default)]
pub struct LogExpectation {
    /// `(table, flushed position)`: everything the table wrote before the
    /// position is in its sstables. `None`: the table recorded no position (it
    /// was created before tables recorded one at creation, and never flushed).
    pub tables: Vec<(String, Option<ReplayPosition>)>,
}

impl LogExpectation {
    /// The newest flushed position and its table: the log never deletes its
    /// newest segment, so a segment at or after it must be on disk.
    fn newest(&self) -> Option<(ReplayPosition, &str)> {
        self.tables
            .iter()
            .filter_map(|(t, p)| p.map(|p| (p, t.as_str())))
            .max_by_key(|(p, _)| *p)
    }

    /// The lowest segment id some table may still need, and that table: every
    /// table has flushed past every id below it. `None` when there is no table.
    fn first_needed(&self) -> Option<(u64, &str)> {
        self.tables
            .iter()
            .map(|(t, p)| (p.map_or(1, |p| p.segment), t.as_str()))
            .min_by_key(|(id, _)| *id)
    }
}

/// The commit log of a database (one per data directory).
#[derive(Debug)]
pub struct CommitLog {
    shared: Arc<Shared>,
    syncer: Mutex<Option<JoinHandle<()>>>,
}

impl CommitLog {
    /// Opens `dir` (creating it), finds the existing segments, checks that none is
    /// missing (invariant 8), starts a new active segment, then cuts a torn tail
    /// off the tail segments and seals them (invariant 3). Existing segments are
    /// replayed by [`CommitLog::replay`].
    pub fn open(fs: &Fs, dir: &Path, opts: CommitLogOptions) -> Result<CommitLog> {
        Self::open_expecting(fs, dir, opts, &LogExpectation::default())
    }

    /// [`CommitLog::open`] for a log whose tables' flushed positions are known
    /// (the database's): segments those positions show were lost are missing
    /// too (invariant 11). A bare log (tests, tools) knows no tables.
    pub fn open_expecting(
        fs: &Fs,
        dir: &Path,
        opts: CommitLogOptions,
        expect: &LogExpectation,
    ) -> Result<CommitLog> {
        opts.validate()?;
        let mut ids: Vec<(u64, u32)> = Vec::new();
        // A missing directory is a log with no segment, judged like any other
        // before anything is created (invariant 11).
        let names = if dir.is_dir() {
            fs.list_dir(dir)?
        } else {
            Vec::new()
        };
        for name in names {
            let path = dir.join(&name);
            if name.starts_with("CommitLog-") && name.ends_with(".tmp") {
                // A torn-tail repair that crashed before its rename: the original
                // segment is intact under its own name.
                fs.remove(&path)?;
                continue;
            }
            if let Some((version, id)) = parse_segment_file_name(&name) {
                let readable =
                    format::OLDEST_SEGMENT_FORMAT_VERSION..=format::SEGMENT_FORMAT_VERSION;
                if !readable.contains(&version) {
                    return Err(Error::corruption(
                        &path,
                        0,
                        format!(
                            "commit log format version {version} is not readable by this build (versions {} to {})",
                            readable.start(),
                            readable.end()
                        ),
                    ));
                }
                if let Some(&(_, other)) = ids.iter().find(|(i, _)| *i == id) {
                    return Err(Error::corruption(
                        &path,
                        0,
                        format!("segment {id} exists in formats {other} and {version}"),
                    ));
                }
                ids.push((id, version));
            }
        }
        ids.sort_unstable();
        let ignore = opts.ignore_replay_errors;
        let Survey {
            recorded,
            notes,
            blank_newest,
            tail,
            missing,
            missing_reason,
        } = survey(fs, dir, &mut ids, ignore, expect)?;
        let found: Vec<u64> = ids.iter().map(|(id, _)| *id).collect();
        let newest = found.last().copied().unwrap_or(0);
        if !missing.is_empty() && !ignore {
            return Err(Error::corruption(
                segment_path(dir, missing[0].0),
                0,
                format!(
                    "commit-log segment(s) missing: {} ({missing_reason}); the acknowledged \
                     writes they held are lost. Restore them from a backup, or open with \
                     ignore_replay_errors (`strata --ignore-replay-errors`) to go on without \
                     them",
                    describe_ids(&missing)
                ),
            ));
        }
        // Checks done: from here on open changes the directory.
        fs.create_dir_all(dir)?;
        if let Some((id, version)) = blank_newest {
            fs.remove(&segment_path_for(dir, version, id))?;
        }
        let retired_ids = match recorded {
            Some(r) => r,
            None => {
                // A log from before the record (or whose record was damaged and
                // ignored): what is on disk is taken as complete, as it was then.
                let mut r = retired::Retired::default();
                for (lo, hi) in r.missing(&found, newest) {
                    r.insert_range(lo, hi);
                }
                retired::store(fs, dir, &r)?;
                r
            }
        };
        // Missing ids are never reused: a manifest may hold positions in them.
        let active = [
            newest,
            retired_ids.max().unwrap_or(0),
            missing.last().map_or(0, |m| m.1),
        ]
        .into_iter()
        .max()
        .unwrap_or(0)
            + 1;
        // The successor first (invariant 3), then the seals, oldest first, so
        // that a crash in between leaves a tail `find_tail` recognises.
        let time_base = segment_time_base();
        let file = SegmentFile::create(fs, dir, active, time_base)?;
        let mut torn_tail_bytes = 0;
        for &(id, version) in tail.iter().rev() {
            match repair_newest_segment(fs, dir, id, version, ignore)? {
                Repair::Removed => {
                    // Only a blank header is removed, and that was handled above.
                    ids.retain(|x| x.0 != id);
                }
                Repair::Kept { torn_bytes } => torn_tail_bytes += torn_bytes,
            }
        }
        let mut segments: BTreeMap<u64, SegmentState> = ids
            .iter()
            .map(|&(id, format_version)| {
                (
                    id,
                    SegmentState {
                        format_version,
                        dirty: HashMap::new(),
                        awaiting_replay: true,
                    },
                )
            })
            .collect();
        segments.insert(active, SegmentState::default());
        let start = ReplayPosition {
            segment: active,
            offset: HEADER_BYTES,
        };
        let shared = Arc::new(Shared {
            fs: fs.clone(),
            dir: dir.to_path_buf(),
            opts: opts.clone(),
            io: Mutex::new(IoState {
                file,
                spare: Vec::new(),
                synced: start,
                synced_count: 0,
            }),
            log: Mutex::new(LogState {
                active,
                offset: HEADER_BYTES,
                pending: Vec::new(),
                appended_count: 0,
                appended_bytes: 0,
                segments,
                closing: std::collections::VecDeque::new(),
                closed: false,
            }),
            next: Mutex::new(None),
            time_base: AtomicI64::new(time_base),
            sync: Mutex::new(SyncState {
                durable: start,
                leader: false,
                last_sync_start: None,
            }),
            synced_cv: Condvar::new(),
            poisoned: AtomicBool::new(false),
            poison_reason: Mutex::new(None),
            stop: Mutex::new(SyncerWake::default()),
            stop_cv: Condvar::new(),
            counters: Counters::default(),
            torn_tail_bytes,
            retired: Mutex::new(retired_ids),
            missing: Mutex::new((missing, missing_reason)),
            open_notes: notes,
            owner: std::sync::OnceLock::new(),
        });
        shared
            .counters
            .segments_created
            .fetch_add(1, Ordering::Relaxed);
        let syncer = match opts.sync {
            SyncMode::Periodic { period } => {
                let s = shared.clone();
                let handle = std::thread::Builder::new()
                    .name("strata-commitlog-sync".to_string())
                    .spawn(move || s.periodic_loop(period))
                    .map_err(|e| Error::io(dir, e))?;
                Some(handle)
            }
            SyncMode::Batch | SyncMode::Group { .. } => None,
        };
        Ok(CommitLog {
            shared,
            syncer: Mutex::new(syncer),
        })
    }

    pub fn options(&self) -> &CommitLogOptions {
        &self.shared.opts
    }

    /// Installs the check that this process still owns the data directory
    /// (invariant 10); a second call keeps the first check.
    pub fn set_owner_check(&self, check: crate::fs::OwnerCheck) {
        let _ = self.shared.owner.set(check);
    }

    pub fn dir(&self) -> &Path {
        &self.shared.dir
    }

    /// Replays the segments that existed at open, in position order. A record for
    /// table `t` is handed to `apply` unless its position is `<= flushed(t)`
    /// (`None` = the table never flushed: replay everything). Afterwards segments
    /// that no table needs are deleted; the rest stay until the tables that replayed
    /// data from them flush ([`CommitLog::mark_flushed`]).
    ///
    /// Damage: a torn tail in the newest segment was already cut at open (counted
    /// in [`ReplayStats::torn_tail_bytes`]); any other bad frame or undecodable
    /// record is `Error::Corruption` naming the segment and offset, unless
    /// `ignore_replay_errors` is set, in which case it is skipped and counted.
    /// Only the first call replays; later calls find nothing to do.
    pub fn replay(
        &self,
        flushed: &dyn Fn(u64) -> Option<ReplayPosition>,
        apply: &mut dyn FnMut(u64, ReplayPosition, PartitionUpdate) -> Result<()>,
    ) -> Result<ReplayStats> {
        let sh = &self.shared;
        let ids: Vec<(u64, u32)> = {
            let log = sh.log.lock();
            log.segments
                .iter()
                .filter(|(_, s)| s.awaiting_replay)
                .map(|(id, s)| (*id, s.format_version))
                .collect()
        };
        let newest = ids.last().map(|(id, _)| *id);
        let mut stats = ReplayStats {
            torn_tail_bytes: sh.torn_tail_bytes,
            ..ReplayStats::default()
        };
        let mut flushed_cache: HashMap<u64, Option<ReplayPosition>> = HashMap::new();
        let mut dirty_by_segment: Vec<(u64, HashMap<u64, u64>)> = Vec::new();
        let ignore = sh.opts.ignore_replay_errors;
        for note in &sh.open_notes {
            stats.corruptions.push(note.clone());
        }
        {
            let missing = sh.missing.lock();
            let (ranges, why) = &*missing;
            for &(lo, hi) in ranges {
                stats
                    .missing_segments
                    .extend((lo..=hi.min(lo.saturating_add(999))).map(segment_file_name));
            }
            if !ranges.is_empty() {
                stats.corruptions.push(format!(
                    "missing segment(s) {}: {why}; mutations lost: unknown",
                    describe_ids(ranges)
                ));
            }
        }
        for (id, version) in ids {
            let path = segment_path_for(&sh.dir, version, id);
            let bytes = sh.fs.read_all(&path, MAX_SEGMENT_FILE_BYTES, TAG)?;
            let skipped_before = stats.skipped.len();
            // `mutations`: how many records the region held, when that is known
            // (a checksummed record that does not decode is one).
            let damage = |start: u64,
                          end: u64,
                          reason: String,
                          mutations: Option<u64>,
                          stats: &mut ReplayStats| {
                if !ignore {
                    return Err(Error::corruption(
                        &path,
                        start,
                        format!("{reason} (set ignore_replay_errors to skip damaged records)"),
                    ));
                }
                stats.corrupt_records_skipped += 1;
                stats.corrupt_bytes_skipped += end - start;
                stats.skipped.push(SkippedRegion {
                    segment: path.clone(),
                    offset: start,
                    bytes: end - start,
                    mutations_lost: mutations,
                    reason,
                    quarantined_copy: None,
                });
                Ok(())
            };
            let header = match decode_header(&bytes) {
                Err(reason) => {
                    damage(0, bytes.len() as u64, reason, None, &mut stats)?;
                    None
                }
                Ok(h) if h.segment_id != id => {
                    let reason = format!("header names segment {}, file name {id}", h.segment_id);
                    damage(0, bytes.len() as u64, reason, None, &mut stats)?;
                    None
                }
                Ok(h) => Some(h),
            };
            let mut dirty = HashMap::new();
            if let Some(header) = header {
                // End of the last valid frame, and where the seal was.
                let mut valid_end = header.first_record_offset().min(bytes.len() as u64);
                let mut seal_at: Option<u64> = None;
                // A bad region reaching the end of the file was reported already
                // (or is the newest segment's torn tail): the seal went with it.
                let mut tail_bad = false;
                for item in Scanner::new(&bytes, &header) {
                    if let Some(at) = seal_at.take() {
                        // Nothing is ever appended after a seal.
                        let reason = "frames follow the segment's seal".to_string();
                        damage(at, bytes.len() as u64, reason, None, &mut stats)?;
                        break;
                    }
                    match item {
                        ScanItem::Seal { start, end } => {
                            seal_at = Some(start);
                            valid_end = end;
                        }
                        ScanItem::Record {
                            start,
                            end,
                            payload,
                            compressed,
                        } => match decode_record(&header, payload, compressed) {
                            Ok((table, update)) => {
                                valid_end = end;
                                let pos = ReplayPosition {
                                    segment: id,
                                    offset: end,
                                };
                                let done =
                                    *flushed_cache.entry(table).or_insert_with(|| flushed(table));
                                if done.is_some_and(|f| pos <= f) {
                                    stats.records_skipped_flushed += 1;
                                    continue;
                                }
                                apply(table, pos, update)?;
                                stats.records_replayed += 1;
                                *stats.replayed_per_table.entry(table).or_insert(0) += 1;
                                dirty.insert(table, end);
                            }
                            Err(reason) => damage(start, end, reason, Some(1), &mut stats)?,
                        },
                        ScanItem::Bad {
                            start,
                            end,
                            reason,
                            tail,
                        } => {
                            tail_bad = tail;
                            if tail && Some(id) == newest {
                                // Open cuts torn tails, so this only happens when that
                                // rewrite was skipped; the rule is the same.
                                stats.torn_tail_bytes += end - start;
                            } else {
                                let reason = if tail {
                                    format!("{reason}; not the newest segment, so not a torn tail")
                                } else {
                                    format!("{reason}; valid records follow, so not a torn tail")
                                };
                                let records = damaged_record_count(&bytes, start, end);
                                damage(start, end, reason, records, &mut stats)?;
                            }
                        }
                    }
                }
                if format::is_sealed_format(version) && seal_at.is_none() && !tail_bad {
                    // Open sealed the newest segment and roll seals every other one,
                    // so this segment lost its end, at a record boundary or inside
                    // damage already reported: acknowledged writes may be gone.
                    let reason = format!(
                        "segment ends at byte {} without its seal: records after byte {valid_end} are missing",
                        bytes.len()
                    );
                    damage(valid_end, bytes.len() as u64, reason, None, &mut stats)?;
                }
            }
            if stats.skipped.len() > skipped_before {
                // The evidence goes aside before anything (this replay's deletions,
                // the closing flush) can delete the segment.
                let copy = keep_evidence(&sh.fs, &sh.dir, &path, &bytes)?;
                for s in &mut stats.skipped[skipped_before..] {
                    s.quarantined_copy = Some(copy.clone());
                }
                stats.quarantined.push(copy);
            }
            dirty_by_segment.push((id, dirty));
            stats.segments_replayed += 1;
        }
        for s in &stats.skipped {
            stats.corruptions.push(s.describe());
        }
        let dead = {
            let mut log = sh.log.lock();
            for (id, dirty) in dirty_by_segment {
                if let Some(s) = log.segments.get_mut(&id) {
                    s.awaiting_replay = false;
                    s.dirty = dirty;
                }
            }
            log.take_deletable()
        };
        // Missing segments the operator chose to go on without are recorded as
        // retired, so the next open does not report them again.
        let missing = std::mem::take(&mut sh.missing.lock().0);
        sh.retire(&missing)?;
        stats.segments_deleted = dead.len();
        sh.delete_segments(&dead)?;
        Ok(stats)
    }

    /// Appends one mutation for `table_id`. Returns the position after the record
    /// (a memtable switched after this call covers it) and a ticket for
    /// [`CommitLog::wait`]. Rejects (`InvalidInput`, nothing written) a mutation
    /// whose record exceeds `max_mutation_size` or whose rows are not strictly
    /// sorted.
    ///
    /// A record that does not fit the rest of the active segment rolls to a new
    /// one; an empty segment takes any accepted record, even one larger than
    /// `segment_size_bytes` (invariant 7). Records of [`DIRECT_WRITE_BYTES`] or
    /// more skip the group buffer: under the `io` lock the buffered records
    /// before them are written, then the record's pieces straight from the
    /// update's values, so a large value is never copied whole by the log.
    pub fn append(
        &self,
        table_id: u64,
        update: &PartitionUpdate,
    ) -> Result<(ReplayPosition, SyncTicket)> {
        let sh = &self.shared;
        check_update(update)?;
        // Serialise and frame before taking any lock; large values stay in the
        // update (spliced by reference). The record is encoded against the
        // active segment's time base as last published; if a roll replaces
        // that segment before the record is placed, it is encoded again.
        let encode = |time_base: i64| -> Result<RecordPieces<'_>> {
            // Only the format and the time base shape a record, not the id.
            let header = SegmentHeader::current(0, time_base);
            let record = encode_record_pieces(&header, table_id, update, sh.opts.compression);
            let max = sh.opts.max_mutation_bytes();
            let uncompressed = record.uncompressed_len();
            if uncompressed > max {
                return Err(Error::InvalidInput(format!(
                    "mutation of {uncompressed} bytes is larger than max_mutation_size ({max} bytes)"
                )));
            }
            Ok(record)
        };
        let mut time_base = sh.time_base.load(Ordering::Acquire);
        let mut record = encode(time_base)?;
        let (position, prepare) = loop {
            let len = record.len();
            let direct = len >= DIRECT_WRITE_BYTES;
            // Lock order io → log: only a direct write needs `io`.
            let mut io = if direct { Some(sh.io.lock()) } else { None };
            let mut log = sh.log.lock();
            sh.check_writable(&log)?;
            let active_base = sh.time_base.load(Ordering::Relaxed);
            if active_base != time_base {
                // A roll came between the encoding and the lock (rare: once
                // per segment, for the writers racing it).
                time_base = active_base;
                drop(log);
                drop(io);
                sh.counters
                    .records_reencoded
                    .fetch_add(1, Ordering::Relaxed);
                record = encode(time_base)?;
                continue;
            }
            let fits = log.offset + len <= sh.opts.segment_size_bytes || log.offset == HEADER_BYTES;
            if fits {
                let before = if direct {
                    std::mem::take(&mut log.pending)
                } else {
                    record.append_to(&mut log.pending);
                    Vec::new()
                };
                log.offset += len;
                log.appended_count += 1;
                log.appended_bytes += len;
                let (active, end) = (log.active, log.offset);
                if let Some(seg) = log.segments.get_mut(&active) {
                    seg.dirty.insert(table_id, end);
                }
                // The append that takes the segment past half its size
                // creates the next one (after the locks): exactly one per
                // segment, long before the roll needs it.
                let half = sh.opts.segment_size_bytes / 2;
                let prepare = (end >= half && end - len < half).then_some(active);
                let position = log.position();
                drop(log);
                if let Some(io) = io.as_mut() {
                    // Holding `io`, this thread alone moves bytes to the file
                    // (invariant 2): the buffered records before this one, then
                    // it; records appended meanwhile wait in `pending` after it.
                    debug_assert_eq!(io.file.position() + before.len() as u64 + len, end);
                    let written = io.file.write(&before).and_then(|()| {
                        record
                            .pieces()
                            .try_for_each(|p| io.file.write_unflushed(p))
                            .and_then(|()| io.file.write(&[]))
                    });
                    written.inspect_err(|e| sh.poison("write", e))?;
                }
                break (position, prepare);
            }
            let full = log.active;
            drop(log);
            drop(io);
            sh.roll(full, full + 1)?;
        };
        if let SyncMode::Periodic { .. } = sh.opts.sync {
            // Acknowledged at once, so the bytes must leave this process now.
            sh.write_out()?;
        }
        if let Some(active) = prepare {
            // In this writer's thread, holding none of the log's locks: the
            // other writers go on. (On the syncer thread it would keep this
            // write fast too, but the files on disk after a given append
            // would then depend on the scheduler.)
            sh.prepare_next(active);
        }
        Ok((position, SyncTicket { position }))
    }

    /// Blocks until the ticket's record is durable as the sync mode promises:
    /// at once in periodic mode; after a covering fsync in batch and group mode,
    /// where the first waiter becomes the leader that syncs everything appended so
    /// far while later waiters queue behind it (invariant 4).
    pub fn wait(&self, ticket: SyncTicket) -> Result<()> {
        let sh = &self.shared;
        let window = match sh.opts.sync {
            SyncMode::Periodic { .. } => {
                if sh.poisoned.load(Ordering::Acquire) && sh.sync.lock().durable < ticket.position {
                    return Err(sh.poisoned_error());
                }
                return Ok(());
            }
            SyncMode::Batch => Duration::ZERO,
            SyncMode::Group { window } => window,
        };
        loop {
            let mut s = sh.sync.lock();
            if s.durable >= ticket.position {
                return Ok(());
            }
            if sh.poisoned.load(Ordering::Acquire) {
                return Err(sh.poisoned_error());
            }
            if s.leader {
                sh.synced_cv.wait(&mut s);
                continue;
            }
            s.leader = true;
            // Group: at most one fsync per window, so writers arriving meanwhile
            // share the next one. Batch (window 0): sync at once.
            let not_before = s.last_sync_start.map(|t| t + window);
            drop(s);
            let _leader = LeaderGuard(sh);
            if let Some(t) = not_before {
                let now = Instant::now();
                if t > now {
                    std::thread::sleep(t - now);
                }
            }
            sh.sync_once()?;
        }
    }

    /// Position after the last appended record (the start of the active segment if
    /// none): what a table records as flushed when it switches its memtable.
    pub fn current_position(&self) -> ReplayPosition {
        self.shared.log.lock().position()
    }

    /// `table_id` has flushed everything up to `pos` (inclusive): it stops being
    /// dirty in every segment whose records for it end at or before `pos`, and
    /// segments no table needs any more are deleted. Not recycled: see
    /// docs/DURABILITY.md ("Segment lifecycle").
    pub fn mark_flushed(&self, table_id: u64, pos: ReplayPosition) -> Result<()> {
        let sh = &self.shared;
        let dead = {
            let mut log = sh.log.lock();
            if pos > log.position() {
                return Err(Error::InvalidInput(format!(
                    "flushed position {pos:?} of table {table_id} is ahead of the commit log ({:?})",
                    log.position()
                )));
            }
            for (id, seg) in log.segments.range_mut(..=pos.segment) {
                if let Some(&end) = seg.dirty.get(&table_id) {
                    if *id < pos.segment || end <= pos.offset {
                        seg.dirty.remove(&table_id);
                    }
                }
            }
            log.take_deletable()
        };
        sh.delete_segments(&dead)
    }

    /// Forgets `table_id` everywhere (a dropped table): its records no longer keep
    /// segments alive.
    pub fn discard_table(&self, table_id: u64) -> Result<()> {
        let sh = &self.shared;
        let dead = {
            let mut log = sh.log.lock();
            for seg in log.segments.values_mut() {
                seg.dirty.remove(&table_id);
            }
            log.take_deletable()
        };
        sh.delete_segments(&dead)
    }

    /// Makes sure every future position is after `pos`, by starting a new segment
    /// if `pos` is in or beyond the active one. Call it at startup with each table's
    /// flushed position, before any append: if the commit-log directory was wiped
    /// or restored from an older copy, ids would otherwise restart below positions
    /// the manifests already hold, and replay would skip new records as "flushed".
    pub fn ensure_after(&self, pos: ReplayPosition) -> Result<()> {
        let active = self.shared.log.lock().active;
        if pos.segment >= active {
            self.shared.roll(active, pos.segment + 1)?;
        }
        Ok(())
    }

    /// Hands everything appended to the OS and fsyncs it (drain, close, tests).
    pub fn sync_now(&self) -> Result<()> {
        self.shared.sync_once()
    }

    pub fn stats(&self) -> CommitLogStats {
        let sh = &self.shared;
        let (segments_live, active_segment, appends, appended_bytes) = {
            let log = sh.log.lock();
            (
                log.segments.len(),
                log.active,
                log.appended_count,
                log.appended_bytes,
            )
        };
        let c = &sh.counters;
        let fsyncs = c.fsyncs.load(Ordering::Relaxed);
        let synced_mutations = c.synced_mutations.load(Ordering::Relaxed);
        CommitLogStats {
            sync_mode: sh.opts.sync.name(),
            appends,
            appended_bytes,
            fsyncs,
            synced_mutations,
            mutations_per_fsync: if fsyncs == 0 {
                0.0
            } else {
                synced_mutations as f64 / fsyncs as f64
            },
            segments_live,
            segments_created: c.segments_created.load(Ordering::Relaxed),
            segments_deleted: c.segments_deleted.load(Ordering::Relaxed),
            active_segment,
            records_reencoded: c.records_reencoded.load(Ordering::Relaxed),
            poisoned: sh.poison_reason.lock().clone(),
        }
    }

    /// Refuses further appends (`Error::Cancelled`), stops the periodic syncer and
    /// makes everything appended durable. Idempotent.
    pub fn close(&self) -> Result<()> {
        self.shared.log.lock().closed = true;
        self.stop_syncer();
        self.shared.sync_once()
    }

    fn stop_syncer(&self) {
        self.shared.stop.lock().stop = true;
        self.shared.stop_cv.notify_all();
        if let Some(h) = self.syncer.lock().take() {
            // A panicked syncer has nothing left to clean up; the final sync below
            // (or in close) still runs.
            let _ = h.join();
        }
    }
}

impl Drop for CommitLog {
    fn drop(&mut self) {
        let closed = self.shared.log.lock().closed;
        self.stop_syncer();
        if !closed && !self.shared.poisoned.load(Ordering::Acquire) {
            // Best effort: a dropped log should not lose what it acknowledged in
            // periodic mode; an error here is already recorded as poison.
            let _ = self.shared.sync_once();
        }
    }
}

/// Clears leadership even if the sync panics, and wakes the followers so one of
/// them takes over.
struct LeaderGuard<'a>(&'a Shared);

impl Drop for LeaderGuard<'_> {
    fn drop(&mut self) {
        self.0.sync.lock().leader = false;
        self.0.synced_cv.notify_all();
    }
}

impl Shared {
    fn check_writable(&self, log: &LogState) -> Result<()> {
        if self.poisoned.load(Ordering::Acquire) {
            return Err(self.poisoned_error());
        }
        if log.closed {
            return Err(Error::Cancelled);
        }
        Ok(())
    }

    fn poisoned_error(&self) -> Error {
        let reason = self.poison_reason.lock().clone();
        Error::Poisoned(reason.unwrap_or_else(|| "commit log failed".to_string()))
    }

    /// Records the first failure and wakes every waiter (invariant 5).
    fn poison(&self, what: &str, e: &Error) {
        self.poison_because(format!(
            "commit log {what} failed ({e}); refusing writes instead of retrying, \
             since a failed fsync may have dropped the data it was syncing"
        ));
    }

    /// [`Shared::poison`] with the whole reason given.
    fn poison_because(&self, why: String) {
        {
            let mut reason = self.poison_reason.lock();
            if reason.is_none() {
                *reason = Some(why);
            }
        }
        self.poisoned.store(true, Ordering::Release);
        // Take the sync lock so a waiter between its check and its wait cannot
        // miss this wake-up.
        drop(self.sync.lock());
        self.synced_cv.notify_all();
    }

    /// Moves pending bytes to the file without fsync (periodic mode's per-append
    /// hand-off).
    fn write_out(&self) -> Result<()> {
        let mut guard = self.io.lock();
        let io = &mut *guard;
        let end = {
            let mut log = self.log.lock();
            if log.pending.is_empty() {
                // Another writer's write-out took these bytes to the OS while
                // this one waited for `io`: nothing left to hand over.
                return Ok(());
            }
            io.spare.clear();
            std::mem::swap(&mut log.pending, &mut io.spare);
            log.offset
        };
        debug_assert_eq!(io.file.position() + io.spare.len() as u64, end);
        if self.poisoned.load(Ordering::Acquire) {
            return Err(self.poisoned_error());
        }
        let written = io
            .file
            .write(&io.spare)
            .inspect_err(|e| self.poison("write", e));
        io.recycle_spare();
        written
    }

    /// One sync: everything appended so far to the OS, then fsync. Skips the fsync
    /// when nothing new was appended since the last one.
    ///
    /// The `io` lock is held only to hand the pending bytes to the OS, not
    /// across the fsync: a slow fdatasync (4 s on a stalled device) used to stop
    /// every periodic-mode writer, whose per-append write-out needs that lock
    /// (issue 10). The fsync goes through a second handle of the segment
    /// ([`SegmentFile::sync_handle`]) and covers every byte written before it;
    /// what it made durable, `target`, is recorded afterwards. A roll meanwhile
    /// is harmless: it fsyncs the old segment itself, and `record_sync` only
    /// moves forward.
    fn sync_once(&self) -> Result<()> {
        let (handle, target, count, closing) = {
            let mut io = self.io.lock();
            if self.poisoned.load(Ordering::Acquire) {
                return Err(self.poisoned_error());
            }
            let io = &mut *io;
            let (target, count, closing) = {
                let mut log = self.log.lock();
                io.spare.clear();
                std::mem::swap(&mut log.pending, &mut io.spare);
                let closing: Vec<(u64, Arc<crate::fs::SyncHandle>)> = log
                    .closing
                    .iter()
                    .filter(|c| !c.done)
                    .map(|c| (c.id, c.handle.clone()))
                    .collect();
                (log.position(), log.appended_count, closing)
            };
            if target <= io.synced && closing.is_empty() {
                return Ok(());
            }
            debug_assert_eq!(target.segment, io.file.id);
            debug_assert_eq!(io.file.position() + io.spare.len() as u64, target.offset);
            self.sync.lock().last_sync_start = Some(Instant::now());
            let written = io
                .file
                .write(&io.spare)
                .inspect_err(|e| self.poison("write", e));
            io.recycle_spare();
            written?;
            (io.file.sync_handle(), target, count, closing)
        };
        // Segments sealed before the target's come first (invariant 3).
        for (id, old) in &closing {
            old.sync().inspect_err(|e| self.poison("fsync", e))?;
            self.check_sealed_owned(*id, old)?;
        }
        handle.sync().inspect_err(|e| self.poison("fsync", e))?;
        self.check_owned(|| handle.unlinked(), target.segment)?;
        let mut io = self.io.lock();
        let ids: Vec<u64> = closing.iter().map(|(id, _)| *id).collect();
        let dead = self.closed_durable(&mut io, &ids);
        self.record_sync(&mut io, target, count);
        drop(io);
        self.delete_segments(&dead)
    }

    /// Invariant 10 for sealed segment `id` just fsynced, unless it has left
    /// the closing queue or a flush has deleted it meanwhile (then nothing in
    /// it is needed). Under the `log` lock, so that a deletion cannot come
    /// between the two checks.
    fn check_sealed_owned(&self, id: u64, handle: &crate::fs::SyncHandle) -> Result<()> {
        let log = self.log.lock();
        // Gone from the queue: another sync made it durable (and checked it),
        // or it was deleted and the queue moved past it.
        if !log.closing.iter().any(|c| c.id == id && !c.deleted) {
            return Ok(());
        }
        self.check_owned(|| handle.unlinked(), id)
    }

    /// Records that the sealed segments `ids` are fsynced, and moves what is
    /// durable past every closing segment that is, oldest first, up to the
    /// first that is not (invariant 3). Returns the segments that may now be
    /// deleted.
    fn closed_durable(&self, io: &mut IoState, ids: &[u64]) -> Vec<(u64, u32)> {
        if ids.is_empty() {
            return Vec::new();
        }
        let mut log = self.log.lock();
        for c in log.closing.iter_mut() {
            if ids.contains(&c.id) {
                c.done = true;
            }
        }
        let mut last = None;
        while log.closing.front().is_some_and(|c| c.done) {
            last = log.closing.pop_front().map(|c| (c.id, c.count));
        }
        let dead = log.take_deletable();
        drop(log);
        if let Some((id, count)) = last {
            let after = ReplayPosition {
                segment: id + 1,
                offset: HEADER_BYTES,
            };
            self.record_sync(io, after, count);
        }
        dead
    }

    /// Creates segment `active + 1` ahead of its roll, unless the log has
    /// moved on or one is ready. A failure here fails nothing: it is logged
    /// and the file removed, and the roll creates the segment itself (and
    /// fails the write that needs it if that fails too).
    fn prepare_next(&self, active: u64) {
        let mut next = self.next.lock();
        if next.is_some() || self.poisoned.load(Ordering::Acquire) {
            return;
        }
        {
            let log = self.log.lock();
            if log.active != active || log.closed {
                return;
            }
        }
        let id = active + 1;
        match SegmentFile::create(&self.fs, &self.dir, id, segment_time_base()) {
            Ok(file) => {
                self.counters
                    .segments_created
                    .fetch_add(1, Ordering::Relaxed);
                *next = Some(file);
            }
            Err(e) => {
                let path = segment_path(&self.dir, id);
                tracing::warn!(
                    segment = %path.display(),
                    error = %e,
                    "could not create the next commit-log segment ahead of time; \
                     the roll will try again"
                );
                // A partial file would be taken for a torn segment: it holds
                // no record, and its id is not yet in use.
                if std::fs::symlink_metadata(&path).is_ok() {
                    if let Err(e) = self.fs.remove(&path) {
                        tracing::warn!(segment = %path.display(), error = %e,
                            "could not remove the partly created segment");
                    }
                }
            }
        }
    }

    /// Invariant 10, before a sync acknowledges anything: the segment just made
    /// durable must still be in the log's directory (`unlinked` says whether
    /// it was deleted or replaced), and this process must still own the data
    /// directory. Otherwise the log is poisoned: what it made durable is in no
    /// file the next open reads.
    fn check_owned(&self, unlinked: impl FnOnce() -> Result<bool>, segment: u64) -> Result<()> {
        let lost = match unlinked() {
            Ok(false) => None,
            Ok(true) => Some(format!(
                "commit-log segment {} was deleted or replaced while this process was writing \
                 it: what it holds is in no file the next open replays, so this process \
                 refuses every further write; restart it on the data directory (its open \
                 reports what is missing)",
                segment_path(&self.dir, segment).display()
            )),
            Err(e) => Some(format!(
                "commit-log segment {} cannot be examined ({e}); this process refuses every \
                 further write",
                segment_path(&self.dir, segment).display()
            )),
        };
        let lost = lost.or_else(|| match self.owner.get().map(|o| o.check()) {
            Some(Err(e)) => Some(match e {
                Error::Poisoned(why) => why,
                other => other.to_string(),
            }),
            _ => None,
        });
        match lost {
            None => Ok(()),
            Some(why) => {
                self.poison_because(why);
                Err(self.poisoned_error())
            }
        }
    }

    /// Records that everything up to `target` (`count` mutations) is durable.
    /// Concurrent syncs may finish out of order, so it only moves forward.
    fn record_sync(&self, io: &mut IoState, target: ReplayPosition, count: u64) {
        io.synced = io.synced.max(target);
        if count > io.synced_count {
            self.counters.fsyncs.fetch_add(1, Ordering::Relaxed);
            self.counters
                .synced_mutations
                .fetch_add(count - io.synced_count, Ordering::Relaxed);
            io.synced_count = count;
        }
        let mut s = self.sync.lock();
        s.durable = s.durable.max(target);
        drop(s);
        self.synced_cv.notify_all();
    }

    /// Replaces active segment `from` by a new segment `to` (no-op if another
    /// thread already rolled `from`). The new segment exists durably first (made
    /// ahead by [`Shared::prepare_next`], or here), then the old one gets its
    /// last records and its seal (invariant 3): a sealed segment always has a
    /// successor on disk, so a sealed newest segment means the newest one was
    /// lost. Ids skipped (`to > from + 1`, see [`CommitLog::ensure_after`]) are
    /// recorded as retired before the new segment is used (invariant 8).
    ///
    /// Batch and group mode fsync the old segment before any writer moves on.
    /// Periodic mode leaves that fsync to its syncer thread, woken at once, so
    /// that no writer waits for it: behind flushes on a busy disk it takes
    /// hundreds of milliseconds, during which writers go on into the new
    /// segment.
    fn roll(&self, from: u64, to: u64) -> Result<()> {
        let mut next = self.next.lock();
        let mut io = self.io.lock();
        let mut log = self.log.lock();
        if log.active != from {
            return Ok(());
        }
        self.check_writable(&log)?;
        // Invariant 10 before creating anything: a directory this process no
        // longer owns gets no new segment (its path may name another's now).
        self.check_owned(|| io.file.unlinked(), from)?;
        if to > from + 1 {
            // Nothing changed yet if this fails: no poison needed.
            self.retire(&[(from + 1, to - 1)])?;
        }
        let file = match next.take() {
            Some(ready) if ready.id == to => ready,
            unused => {
                if let Some(skipped) = unused {
                    // Made for `from + 1`, which the line above retired: a
                    // record-less file of an id never used.
                    let path = segment_path(&self.dir, skipped.id);
                    drop(skipped);
                    self.fs.remove(&path)?;
                }
                let file = SegmentFile::create(&self.fs, &self.dir, to, segment_time_base())
                    .inspect_err(|e| self.poison("segment creation", e))?;
                self.counters
                    .segments_created
                    .fetch_add(1, Ordering::Relaxed);
                file
            }
        };
        drop(next);
        let time_base = file.time_base();
        let mut bytes = std::mem::take(&mut log.pending);
        let count = log.appended_count;
        let io_ref = &mut *io;
        bytes.extend_from_slice(&format::encode_seal());
        io_ref
            .file
            .write(&bytes)
            .inspect_err(|e| self.poison("write", e))?;
        let periodic = matches!(self.opts.sync, SyncMode::Periodic { .. });
        if !periodic {
            io_ref
                .file
                .sync()
                .inspect_err(|e| self.poison("fsync", e))?;
            self.check_owned(|| io_ref.file.unlinked(), from)?;
        }
        let old = io_ref.file.sync_handle();
        io_ref.file = file;
        log.active = to;
        log.offset = HEADER_BYTES;
        self.time_base.store(time_base, Ordering::Release);
        log.segments.insert(to, SegmentState::default());
        if periodic {
            log.closing.push_back(Closing {
                id: from,
                handle: old,
                count,
                done: false,
                deleted: false,
            });
        }
        let dead = log.take_deletable();
        drop(log);
        if !periodic {
            // Everything before the new segment's first record is durable.
            self.record_sync(
                io_ref,
                ReplayPosition {
                    segment: to,
                    offset: HEADER_BYTES,
                },
                count,
            );
        }
        drop(io);
        if periodic {
            self.stop.lock().sealed = true;
            self.stop_cv.notify_all();
        }
        self.delete_segments(&dead)
    }

    /// Deleting needs no directory fsync: a segment resurrected by power loss only
    /// holds records its tables have flushed past, which replay skips.
    fn delete_segments(&self, ids: &[(u64, u32)]) -> Result<()> {
        let ranges: Vec<(u64, u64)> = ids.iter().map(|&(id, _)| (id, id)).collect();
        self.retire(&ranges)?;
        for &(id, version) in ids {
            self.fs.remove(&segment_path_for(&self.dir, version, id))?;
            self.counters
                .segments_deleted
                .fetch_add(1, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Durably adds `ranges` to the retired-segment record (invariant 8): before
    /// any of them is deleted or skipped, so a crash never leaves an id that is
    /// neither on disk nor recorded. On failure the record and the files stay
    /// as they were.
    fn retire(&self, ranges: &[(u64, u64)]) -> Result<()> {
        if ranges.is_empty() {
            return Ok(());
        }
        let mut r = self.retired.lock();
        let mut next = r.clone();
        for &(lo, hi) in ranges {
            next.insert_range(lo, hi);
        }
        if next != *r {
            retired::store(&self.fs, &self.dir, &next)?;
            *r = next;
        }
        Ok(())
    }

    /// Periodic mode's syncer: everything appended every `period`, and each
    /// segment a roll sealed as soon as it is sealed (invariant 3).
    fn periodic_loop(&self, period: Duration) {
        let mut deadline = Instant::now() + period;
        loop {
            let mut wake = self.stop.lock();
            while !wake.stop && !wake.sealed && Instant::now() < deadline {
                self.stop_cv.wait_until(&mut wake, deadline);
            }
            if wake.stop {
                return;
            }
            let sealed = std::mem::take(&mut wake.sealed);
            drop(wake);
            let mut synced = if sealed { self.sync_sealed() } else { Ok(()) };
            if synced.is_ok() && Instant::now() >= deadline {
                deadline = Instant::now() + period;
                synced = self.sync_once();
            }
            if synced.is_err() {
                // Poisoned: appends and waits now report why; nothing to retry.
                return;
            }
        }
    }

    /// fsyncs the segments rolls have sealed and not yet synced, oldest first,
    /// and records them durable (invariant 3).
    fn sync_sealed(&self) -> Result<()> {
        let closing: Vec<(u64, Arc<crate::fs::SyncHandle>)> = self
            .log
            .lock()
            .closing
            .iter()
            .filter(|c| !c.done)
            .map(|c| (c.id, c.handle.clone()))
            .collect();
        for (id, old) in &closing {
            old.sync().inspect_err(|e| self.poison("fsync", e))?;
            self.check_sealed_owned(*id, old)?;
        }
        let ids: Vec<u64> = closing.iter().map(|(id, _)| *id).collect();
        let mut io = self.io.lock();
        let dead = self.closed_durable(&mut io, &ids);
        drop(io);
        self.delete_segments(&dead)
    }
}

/// Cheap write-side check of what decoding checks again on replay (STYLE.md §7).
fn check_update(update: &PartitionUpdate) -> Result<()> {
    if update
        .rows
        .windows(2)
        .any(|w| w[0].clustering >= w[1].clustering)
    {
        return Err(Error::InvalidInput(
            "partition update rows are not strictly sorted by clustering".to_string(),
        ));
    }
    if update
        .static_row
        .as_ref()
        .is_some_and(|s| !s.clustering.is_empty())
    {
        return Err(Error::InvalidInput(
            "static row has a clustering".to_string(),
        ));
    }
    Ok(())
}

enum Repair {
    /// The newest segment's header never became durable (a crash while creating
    /// it): it held no record and was deleted.
    Removed,
    Kept {
        torn_bytes: u64,
    },
}

/// Cuts a torn tail off the newest segment and seals it (format 2 on), by
/// rewriting its valid prefix and the seal atomically (tmp, fsync, rename, fsync
/// dir), so that after a newer segment exists the old tail cannot be mistaken
/// for corruption, nor the segment for one cut short (invariant 3). Middle
/// damage is left for replay to report.
fn repair_newest_segment(
    fs: &Fs,
    dir: &Path,
    id: u64,
    version: u32,
    ignore: bool,
) -> Result<Repair> {
    let path = segment_path_for(dir, version, id);
    let bytes = fs.read_all(&path, MAX_SEGMENT_FILE_BYTES, TAG)?;
    let header = match decode_header(&bytes) {
        Ok(h) => h,
        Err(reason) => {
            // The file name says the format, and so how long its header is.
            if bytes.len() as u64 <= format::header_bytes(version) || bytes.iter().all(|&b| b == 0)
            {
                fs.remove(&path)?;
                return Ok(Repair::Removed);
            }
            if ignore {
                // Replay skips the whole segment and counts it.
                return Ok(Repair::Kept { torn_bytes: 0 });
            }
            return Err(Error::corruption(&path, 0, reason));
        }
    };
    let mut tail_start = None;
    let mut sealed = false;
    for item in Scanner::new(&bytes, &header) {
        match item {
            ScanItem::Bad {
                start, tail: true, ..
            } => tail_start = Some(start),
            ScanItem::Seal { .. } => sealed = true,
            _ => sealed = false,
        }
    }
    let needs_seal = format::is_sealed_format(version) && !sealed;
    if tail_start.is_none() && !needs_seal {
        return Ok(Repair::Kept { torn_bytes: 0 });
    }
    let keep = tail_start.unwrap_or(bytes.len() as u64);
    let mut repaired = bytes[..keep as usize].to_vec();
    // A tail cut right after an existing seal leaves that seal last.
    if needs_seal {
        repaired.extend_from_slice(&format::encode_seal());
    }
    fs.write_atomic(&path, &repaired, TAG)?;
    Ok(Repair::Kept {
        torn_bytes: bytes.len() as u64 - keep,
    })
}

/// Copies a damaged segment into `<commitlog>/quarantine/` (quarantine.rs's
/// layout and naming: a taken name gets a `.N` suffix) and returns the copy's
/// path. A copy, not a move: replay goes on reading the segment, and the log
/// deletes it by its own name once nothing needs it.
fn keep_evidence(fs: &Fs, dir: &Path, path: &Path, bytes: &[u8]) -> Result<PathBuf> {
    let qdir = dir.join(crate::quarantine::QUARANTINE_DIR);
    if !qdir.is_dir() {
        fs.create_dir_all(&qdir)?;
        fs.sync_dir(dir)?;
    }
    let name = path
        .file_name()
        .map_or_else(|| "segment".into(), |n| n.to_string_lossy().into_owned());
    let mut target = qdir.join(&name);
    let mut n = 1;
    while target.exists() {
        target = qdir.join(format!("{name}.{n}"));
        n += 1;
    }
    fs.write_atomic(&target, bytes, TAG)?;
    Ok(target)
}

/// How many records a damaged region held, when that is knowable: one, if its
/// length field still spans exactly to the next valid frame (a flipped bit in
/// the payload or checksum); otherwise `None` (the length itself is damaged, so
/// the region may have held any number).
fn damaged_record_count(bytes: &[u8], start: u64, end: u64) -> Option<u64> {
    let at = usize::try_from(start).ok()?;
    let len = bytes.get(at..at.checked_add(4)?)?;
    let len = u64::from(u32::from_le_bytes([len[0], len[1], len[2], len[3]]));
    (len > 0 && len + format::FRAME_BYTES == end - start).then_some(1)
}

/// What open (or a read-only check) finds about the segment sequence before
/// changing anything (invariants 3 and 8).
struct Survey {
    /// `RETIRED` as found (`None`: absent, or damaged and ignored).
    recorded: Option<retired::Retired>,
    /// What could not be checked, for the replay report.
    notes: Vec<String>,
    /// A newest segment with a blank header, already taken out of `ids`.
    blank_newest: Option<(u64, u32)>,
    /// The tail to seal, newest first ([`find_tail`]).
    tail: Vec<(u64, u32)>,
    /// Missing ids, ascending, and why they count as missing.
    missing: Vec<(u64, u64)>,
    missing_reason: String,
}

/// Reads the tail segments and `RETIRED`; writes nothing. `ids` (sorted) loses
/// a blank newest segment. A bad newest header (not blank) or a damaged
/// `RETIRED` is `Error::Corruption` unless `ignore`.
fn survey(
    fs: &Fs,
    dir: &Path,
    ids: &mut Vec<(u64, u32)>,
    ignore: bool,
    expect: &LogExpectation,
) -> Result<Survey> {
    let mut notes: Vec<String> = Vec::new();
    let recorded = match retired::load(fs, dir) {
        Ok(r) => r,
        Err(e) if ignore => {
            // Without the record the sequence cannot be checked this once;
            // it is rebuilt from what is on disk below.
            notes.push(format!("{e}; segment sequence not checked"));
            None
        }
        Err(e) => return Err(e),
    };
    // A newest segment whose header never became durable (a crash while
    // creating it) held no record: it goes, once the checks below pass.
    let mut blank_newest = None;
    if let Some(&(last, version)) = ids.last() {
        match inspect_segment(fs, dir, last, version)? {
            Inspected::BadHeader { blank: true, .. } => {
                blank_newest = ids.pop();
            }
            Inspected::BadHeader { reason, .. } if !ignore => {
                return Err(Error::corruption(
                    segment_path_for(dir, version, last),
                    0,
                    reason,
                ));
            }
            _ => {}
        }
    }
    let (tail, newest_sealed) = find_tail(fs, dir, ids)?;
    let found: Vec<u64> = ids.iter().map(|(id, _)| *id).collect();
    let newest = found.last().copied().unwrap_or(0);
    let mut missing = retired::Retired::default();
    let mut reasons: Vec<String> = Vec::new();
    // Invariant 11: a table flushed up to a position in segment `flushed_to`,
    // and the newest segment is never deleted, so one at or after it exists.
    let flushed_to = expect.newest().map_or(0, |(p, _)| p.segment);
    let modern = ids
        .iter()
        .any(|&(_, v)| v >= retired::FIRST_SEGMENT_FORMAT_WITH_RETIRED);
    // Invariant 3: a segment is sealed only once its successor exists.
    let sealed_note = || {
        format!(
            "{} ends with its seal, so a newer segment was started, but none is on disk",
            segment_file_name_for(ids.last().map_or(0, |x| x.1), newest)
        )
    };
    match &recorded {
        Some(r) => {
            // Invariant 8: every id up to the newest (and past every retired
            // one: the active segment is never retired) is on disk or retired.
            let upto = newest.max(r.max().map_or(0, |m| m + 1)).max(flushed_to);
            for (lo, hi) in r.missing(&found, upto) {
                missing.insert_range(lo, hi);
            }
            if !missing.ranges().is_empty() {
                reasons.push(format!(
                    "neither on disk nor recorded in {} as deleted after their tables flushed",
                    retired::RETIRED_FILE
                ));
            }
            if newest_sealed && upto == newest {
                missing.insert(newest + 1);
                reasons.push(sealed_note());
            }
        }
        None if modern => {
            // `RETIRED` was deleted: a gap cannot be told from segments deleted
            // once their tables flushed, except by the tables' positions. Ids
            // every table has flushed past hold nothing any table needs.
            let upto = newest.max(flushed_to);
            let mut gaps = retired::Retired::default();
            for (lo, hi) in gaps.missing(&found, upto) {
                gaps.insert_range(lo, hi);
            }
            if newest_sealed && upto == newest {
                gaps.insert(newest + 1);
            }
            if let Some((first, table)) = expect.first_needed() {
                for &(lo, hi) in gaps.ranges() {
                    missing.insert_range(lo.max(first), hi);
                }
                if !missing.ranges().is_empty() {
                    reasons.push(format!(
                        "{} is missing, so they cannot be told from segments deleted once \
                         their tables had flushed, and table {table} had not flushed past \
                         them{}",
                        retired::RETIRED_FILE,
                        if newest_sealed && upto == newest {
                            format!("; {}", sealed_note())
                        } else {
                            String::new()
                        }
                    ));
                }
            }
            if missing.ranges().is_empty() {
                notes.push(format!(
                    "{} was missing; rebuilt from the segments on disk, every table having \
                     flushed past the ids that are not",
                    dir.join(retired::RETIRED_FILE).display()
                ));
            }
        }
        // A log from before `RETIRED` (or none at all): only the tables'
        // positions can show a loss.
        None => {
            if flushed_to > newest {
                missing.insert_range(newest + 1, flushed_to);
            }
        }
    }
    if let Some((p, table)) = expect.newest() {
        if p.segment > newest && missing.contains(p.segment) {
            reasons.push(format!(
                "table {table} has flushed up to byte {} of {} (its MANIFEST says so) and the \
                 log never deletes its newest segment, yet none from there on is on disk: the \
                 newest segments, or the whole commit-log directory, were deleted or replaced \
                 by an older copy (if the database was shut down cleanly and nothing wrote \
                 since, nothing was lost)",
                p.offset,
                segment_file_name(p.segment)
            ));
        }
    }
    Ok(Survey {
        recorded,
        notes,
        blank_newest,
        tail,
        missing: missing.ranges().to_vec(),
        missing_reason: reasons.join("; "),
    })
}

/// Read-only check of the segment sequence (invariant 8) for opens that do not
/// open the log (`read_only`, `verify`): `Some(message)` naming missing segments
/// or what could not be read. Writes nothing.
pub fn check_segment_sequence(
    fs: &Fs,
    dir: &Path,
    expect: &LogExpectation,
) -> Result<Option<String>> {
    // A deleted commit-log directory is a log with no segment.
    let names = if dir.is_dir() {
        fs.list_dir(dir)?
    } else {
        Vec::new()
    };
    let mut ids: Vec<(u64, u32)> = names
        .iter()
        .filter_map(|name| parse_segment_file_name(name).map(|(v, id)| (id, v)))
        .collect();
    ids.sort_unstable();
    let s = match survey(fs, dir, &mut ids, false, expect) {
        Ok(s) => s,
        Err(e) => return Ok(Some(e.to_string())),
    };
    Ok((!s.missing.is_empty()).then(|| {
        format!(
            "commit-log segment(s) missing: {} ({}); the acknowledged writes they held are lost",
            describe_ids(&s.missing),
            s.missing_reason
        )
    }))
}

/// What open needs to know of a segment near the end of the log.
enum Inspected {
    /// The header does not decode; `blank` = nothing but a partial header or
    /// zeros (a crash while creating the file).
    BadHeader { blank: bool, reason: String },
    Readable {
        /// At least one valid frame holding a mutation.
        has_records: bool,
        /// The last valid frame is the seal (a torn tail after it aside).
        sealed: bool,
    },
}

fn inspect_segment(fs: &Fs, dir: &Path, id: u64, version: u32) -> Result<Inspected> {
    let bytes = fs.read_all(
        &segment_path_for(dir, version, id),
        MAX_SEGMENT_FILE_BYTES,
        TAG,
    )?;
    let header = match decode_header(&bytes) {
        Ok(h) => h,
        Err(reason) => {
            let blank = bytes.len() as u64 <= format::header_bytes(version)
                || bytes.iter().all(|&b| b == 0);
            return Ok(Inspected::BadHeader { blank, reason });
        }
    };
    let (mut has_records, mut sealed) = (false, false);
    for item in Scanner::new(&bytes, &header) {
        match item {
            ScanItem::Bad { tail: true, .. } => {}
            ScanItem::Seal { .. } => sealed = true,
            ScanItem::Record { .. } => {
                has_records = true;
                sealed = false;
            }
            ScanItem::Bad { .. } => sealed = false,
        }
    }
    Ok(Inspected::Readable {
        has_records,
        sealed,
    })
}

/// The tail of the log found at open, newest first: the segments that may lack
/// their seal and end torn, because a crash could stop the log before it sealed
/// them (invariant 3): the newest segment if unsealed, and, while the one just
/// taken holds no record, its unsealed predecessor (a crash after the successor
/// was created, before the predecessor's seal). Also whether the newest segment
/// is sealed, which means that a newer one existed.
fn find_tail(fs: &Fs, dir: &Path, ids: &[(u64, u32)]) -> Result<(Vec<(u64, u32)>, bool)> {
    let mut tail: Vec<(u64, u32)> = Vec::new();
    for &(id, version) in ids.iter().rev() {
        if tail.last().is_some_and(|&(next, _)| next != id + 1) {
            break;
        }
        match inspect_segment(fs, dir, id, version)? {
            Inspected::BadHeader { .. } => {
                // Only the newest can get here (under ignore_replay_errors):
                // replay skips it whole and reports it.
                if tail.is_empty() {
                    tail.push((id, version));
                }
                break;
            }
            Inspected::Readable { sealed: true, .. } => {
                return Ok((tail.clone(), tail.is_empty()));
            }
            Inspected::Readable { has_records, .. } => {
                tail.push((id, version));
                if has_records {
                    break;
                }
            }
        }
    }
    Ok((tail, false))
}

/// `CommitLog-4-5.log, CommitLog-4-7.log .. CommitLog-4-9.log` (ids in the
/// current format's names: a missing file's format is unknown).
fn describe_ids(ranges: &[(u64, u64)]) -> String {
    const SHOWN: usize = 8;
    let mut parts: Vec<String> = ranges
        .iter()
        .take(SHOWN)
        .map(|&(lo, hi)| {
            if lo == hi {
                segment_file_name(lo)
            } else {
                format!(
                    "{} .. {} ({} segments)",
                    segment_file_name(lo),
                    segment_file_name(hi),
                    hi - lo + 1
                )
            }
        })
        .collect();
    if ranges.len() > SHOWN {
        parts.push(format!("and {} more ranges", ranges.len() - SHOWN));
    }
    parts.join(", ")
}

/// The records of a log that are not yet in their tables' sstables, as a
/// read-only open and `strata commitlog stats` report them.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct UnflushedRecords {
    /// Segments holding at least one such record.
    pub segments: u64,
    pub records: u64,
    /// Their framed bytes.
    pub bytes: u64,
    /// Records per table id.
    pub per_table: BTreeMap<u64, u64>,
}

/// Counts the records of the segments in `dir` that their table has not
/// flushed past. `flushed(table_id)` is `None` for a table the schema does not
/// know (a dropped table: its records are not writes anyone can lose) and
/// `Some(position)` for a known one (`Some(None)`: it recorded no position).
/// Writes nothing; a segment that vanishes or does not read (a running owner
/// may delete one meanwhile; damage is reported by the sequence check and by
/// replay) is passed over.
pub fn unflushed_records(
    fs: &Fs,
    dir: &Path,
    flushed: &dyn Fn(u64) -> Option<Option<ReplayPosition>>,
) -> Result<UnflushedRecords> {
    let mut out = UnflushedRecords::default();
    if !dir.is_dir() {
        return Ok(out);
    }
    for (id, path) in list_segments(fs, dir)? {
        let Ok(bytes) = fs.read_all(&path, MAX_SEGMENT_FILE_BYTES, TAG) else {
            continue;
        };
        let Ok(header) = decode_header(&bytes) else {
            continue;
        };
        let mut counted = false;
        for item in Scanner::new(&bytes, &header) {
            let ScanItem::Record {
                start,
                end,
                payload,
                compressed,
            } = item
            else {
                continue;
            };
            let Ok(table) = format::record_table_id(payload, compressed) else {
                continue;
            };
            let pos = ReplayPosition {
                segment: id,
                offset: end,
            };
            match flushed(table) {
                Some(Some(done)) if pos <= done => {}
                None => {}
                Some(_) => {
                    out.records += 1;
                    out.bytes += end - start;
                    *out.per_table.entry(table).or_insert(0) += 1;
                    counted = true;
                }
            }
        }
        out.segments += u64::from(counted);
    }
    Ok(out)
}

/// Segment files in `dir` as `(id, path)`, oldest first (for `strata commitlog`).
pub fn list_segments(fs: &Fs, dir: &Path) -> Result<Vec<(u64, PathBuf)>> {
    let mut out: Vec<(u64, PathBuf)> = fs
        .list_dir(dir)?
        .into_iter()
        .filter_map(|name| parse_segment_file_name(&name).map(|(_, id)| (id, dir.join(name))))
        .collect();
    out.sort();
    Ok(out)
}

/// A decoded mutation, summarised for `strata commitlog dump`.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct MutationSummary {
    pub key_hex: String,
    pub token: i64,
    pub rows: usize,
    pub cells: usize,
    pub static_row: bool,
    pub partition_deletion: bool,
    pub range_tombstones: usize,
    pub row_deletions: usize,
    pub cell_tombstones: usize,
    pub max_timestamp_micros: i64,
}

impl MutationSummary {
    fn of(u: &PartitionUpdate) -> MutationSummary {
        use std::fmt::Write;
        let mut key_hex = String::with_capacity(u.key.key.len() * 2);
        for b in u.key.key.iter() {
            let _ = write!(key_hex, "{b:02x}");
        }
        let rows = u.rows.iter().chain(u.static_row.iter());
        MutationSummary {
            key_hex,
            token: u.key.token,
            rows: u.rows.len(),
            cells: u.cell_count(),
            static_row: u.static_row.is_some(),
            partition_deletion: u.deletion.partition.is_some(),
            range_tombstones: u.deletion.ranges.len(),
            row_deletions: u.rows.iter().filter(|r| !r.deletion.is_live()).count(),
            cell_tombstones: rows
                .flat_map(|r| r.cells.iter())
                .filter(|c| c.kind == crate::data::CellKind::Tombstone)
                .count(),
            max_timestamp_micros: u.max_timestamp(),
        }
    }
}

/// One frame (or damaged region) of a dumped segment.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct DumpRecord {
    /// Offset of the frame in the file.
    pub offset: u64,
    /// Offset after it: the record's replay position within the segment.
    pub end_offset: u64,
    /// Frame bytes (header and payload), or the length of the damaged region.
    pub size_bytes: u64,
    pub table_id: Option<u64>,
    pub crc_ok: bool,
    pub mutation: Option<MutationSummary>,
    /// Why the frame is bad or does not decode.
    pub error: Option<String>,
    /// A bad region with no valid frame after it (a torn tail if this is the
    /// newest segment).
    pub tail: bool,
    /// The segment's seal (format 2 on): written when a newer segment began.
    pub seal: bool,
    /// A compressed record (format 3 on); `size_bytes` is as stored.
    pub compressed: bool,
}

/// A whole segment, as `strata commitlog dump` prints it.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct SegmentDump {
    pub path: PathBuf,
    pub segment_id: u64,
    pub format_version: u32,
    pub file_bytes: u64,
    pub records: Vec<DumpRecord>,
}

/// Reads a segment and lists every record, decoded, and every damaged region.
/// A bad header is `Error::Corruption` at offset 0.
pub fn dump_segment(fs: &Fs, path: &Path) -> Result<SegmentDump> {
    let bytes = fs.read_all(path, MAX_SEGMENT_FILE_BYTES, TAG)?;
    let header = decode_header(&bytes).map_err(|reason| Error::corruption(path, 0, reason))?;
    let records = Scanner::new(&bytes, &header)
        .map(|item| match item {
            ScanItem::Record {
                start,
                end,
                payload,
                compressed,
            } => {
                let (table_id, mutation, error) = match decode_record(&header, payload, compressed)
                {
                    Ok((t, u)) => (Some(t), Some(MutationSummary::of(&u)), None),
                    Err(e) => (None, None, Some(e)),
                };
                DumpRecord {
                    offset: start,
                    end_offset: end,
                    size_bytes: end - start,
                    table_id,
                    crc_ok: true,
                    mutation,
                    error,
                    tail: false,
                    seal: false,
                    compressed,
                }
            }
            ScanItem::Seal { start, end } => DumpRecord {
                offset: start,
                end_offset: end,
                size_bytes: end - start,
                table_id: None,
                crc_ok: true,
                mutation: None,
                error: None,
                tail: false,
                seal: true,
                compressed: false,
            },
            ScanItem::Bad {
                start,
                end,
                reason,
                tail,
            } => DumpRecord {
                offset: start,
                end_offset: end,
                size_bytes: end - start,
                table_id: None,
                crc_ok: false,
                mutation: None,
                error: Some(reason),
                tail,
                seal: false,
                compressed: false,
            },
        })
        .collect();
    Ok(SegmentDump {
        path: path.to_path_buf(),
        segment_id: header.segment_id,
        format_version: header.format_version,
        file_bytes: bytes.len() as u64,
        records,
    })
}
