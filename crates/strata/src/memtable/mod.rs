//! The memtable: a table's in-memory write buffer (seed 004, CASSANDRA-6271).
//!
//! Structure:
//! - Partitions live in [`SHARDS`] shards split by **token range** (shard = top bits
//!   of the token), each an ordered map behind a reader-writer lock. Concatenating
//!   the shards in order gives token order, so flush and scans need no merge.
//!   The lock is held only to find or insert a partition handle, never while rows
//!   are built or read.
//! - Each partition's rows are an immutable copy-on-write B-tree (fan factor 32,
//!   [`btree`]). A mutation's sorted batch of rows is applied by building a new tree
//!   from the old one (untouched subtrees shared) and swapping the partition's root
//!   atomically. Readers load the root without locking and see either the whole
//!   mutation or none of it.
//! - Rows are stored encoded with the compact row codec (`encoding`), deltas taken
//!   against the memtable's creation time, so a cell costs a few bytes beyond its
//!   value instead of a hundred-byte struct.
//!
//! Thread-safety: any number of writers and readers concurrently. Writers to the
//! same partition serialise on that partition's mutex (Cassandra's AtomicBTree
//! instead spins on a CAS; with a 32-wide batch rebuild the mutex wastes no work
//! on retries).
//!
//! Invariants:
//! 1. A partition's state is only ever replaced whole (ArcSwap store), never mutated.
//! 2. `memory_bytes()` is the exact heap + inline size of every row tree, encoded
//!    row, partition handle and key, plus a documented estimate for the shard
//!    maps' own nodes (`MAP_ENTRY_OVERHEAD_BYTES`), whose layout std does not expose.
//! 3. The statistics (min/max timestamps, min local deletion time, min TTL) are lower
//!    /upper bounds of everything ever applied, so a flush can use them as the
//!    sstable's encoding base.

pub mod btree;

use crate::data::{
    ClusteringRange, DecoratedKey, PartitionDeletion, PartitionUpdate, Row, NO_DELETION_TIME,
    NO_TIMESTAMP,
};
use crate::encoding::{decode_row, encode_row_spliced, put_varint, EncodingBase, Reader};
use arc_swap::ArcSwap;
use btree::{BTree, Item};
use parking_lot::{Mutex, RwLock};
use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};
use std::sync::Arc;

/// Number of token-range shards: enough that two writer threads rarely meet on a
/// shard lock, few enough that an empty memtable stays small.
pub const SHARDS: usize = 64;
const SHARD_SHIFT: u32 = 64 - SHARDS.trailing_zeros();

/// std's BTreeMap stores up to 11 entries per node; at the typical 2/3 fill a map
/// entry costs its own size * 1.5 plus a share of the node header. Estimated, not
/// measured per node (invariant 2).
const MAP_ENTRY_OVERHEAD_BYTES: usize =
    std::mem::size_of::<(DecoratedKey, Arc<MemPartition>)>() * 3 / 2 + 8;

/// One token-range shard: partition handles ordered by (token, key).
type Shard = RwLock<BTreeMap<DecoratedKey, Arc<MemPartition>>>;

fn shard_of(token: i64) -> usize {
    (((token as u64) ^ (1u64 << 63)) >> SHARD_SHIFT) as usize
}

/// The logical bytes of a spliced encoding, joined (the fallback of
/// [`MemRow::encode`]).
fn join_spliced(head: &[u8], splices: &[(usize, &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    let mut from = 0;
    for &(pos, v) in splices {
        out.extend_from_slice(&head[from..pos]);
        out.extend_from_slice(v);
        from = pos;
    }
    out.extend_from_slice(&head[from..]);
    out
}

/// Capacity the per-thread row scratch keeps between rows: large values are
/// spliced, not copied into it, so ordinary rows fit with room to spare.
const ROW_SCRATCH_KEEP_BYTES: usize = 64 * 1024;

thread_local! {
    /// Each writer thread's buffer for encoding a row before it is copied
    /// into its exact-size `Arc<[u8]>`. A fresh `Vec` per row (regrown when
    /// the row outgrew its estimate, then turned into the `Arc` by a second
    /// allocation and a free) cost two to three allocations per row; this
    /// costs one (BENCHMARKS.md, "Write path (issue 15)").
    static ROW_SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// An encoded row: varint clustering length, clustering, row body.
#[derive(Clone, Debug)]
pub struct MemRow(Arc<[u8]>);

impl MemRow {
    fn encode(row: &Row, base: &EncodingBase) -> MemRow {
        // Values of 64 KiB or more are left out of `head` (spliced) and copied
        // once, straight into the row's final allocation: building a `Vec` and
        // then `Arc::from` it copied a 16 MiB value twice, so the write path
        // held it three times (update, buffer, memtable) instead of two
        // (issue 13; tests/large_value_allocations_are_bounded.rs).
        let mut head = ROW_SCRATCH.with(|b| b.take());
        head.clear();
        put_varint(&mut head, row.clustering.len() as u64);
        head.extend_from_slice(&row.clustering);
        let mut splices = Vec::new();
        encode_row_spliced(row, base, &mut head, &mut splices);
        let encoded = Self::from_pieces(&head, &splices);
        drop(splices);
        if head.capacity() <= ROW_SCRATCH_KEEP_BYTES {
            // During thread teardown the slot may be gone; the buffer is then freed.
            let _ = ROW_SCRATCH.try_with(|b| b.set(head));
        }
        encoded
    }

    /// The row whose bytes are `head` with each splice's value inserted at its
    /// position, in one allocation of its exact size.
    fn from_pieces(head: &[u8], splices: &[(usize, &[u8])]) -> MemRow {
        if splices.is_empty() {
            return MemRow(Arc::from(head));
        }
        let total = head.len() + splices.iter().map(|(_, v)| v.len()).sum::<usize>();
        let mut arc = Arc::<[u8]>::new_uninit_slice(total);
        let Some(dst) = Arc::get_mut(&mut arc) else {
            // A fresh Arc is unique; this branch only keeps the code total.
            return MemRow(Arc::from(join_spliced(head, splices)));
        };
        let mut at = 0;
        let mut from = 0;
        let mut put = |piece: &[u8]| {
            dst[at..at + piece.len()].write_copy_of_slice(piece);
            at += piece.len();
        };
        for &(pos, v) in splices {
            put(&head[from..pos]);
            put(v);
            from = pos;
        }
        put(&head[from..]);
        if at != total {
            return MemRow(Arc::from(join_spliced(head, splices)));
        }
        // SAFETY: the pieces written above tile `[0, total)` (checked just
        // before: `at == total` after writing them back to back from 0), so
        // every byte of the slice is initialised.
        MemRow(unsafe { arc.assume_init() })
    }

    fn split(&self) -> (&[u8], &[u8]) {
        let b = &self.0[..];
        // Every key comparison in the tree lands here: a clustering under 128 bytes
        // has a one-byte length, so skip the varint decoder (+10% on single-row
        // inserts into large partitions, BENCHMARKS.md).
        if let Some(&len) = b.first() {
            if len < 0x80 {
                let end = (1 + len as usize).min(b.len());
                return (&b[1..end], &b[end..]);
            }
        }
        let mut r = Reader::new(b);
        // The memtable wrote these bytes itself; a malformed length is a bug, and
        // the empty clustering is the safe answer.
        let len = r.varint_usize().unwrap_or(0);
        let start = r.position();
        let end = (start + len).min(b.len());
        (&b[start..end], &b[end..])
    }

    fn decode(&self, base: &EncodingBase) -> Option<Row> {
        let (ck, body) = self.split();
        decode_row(&mut Reader::new(body), ck.to_vec(), base).ok()
    }

    pub fn encoded_len(&self) -> usize {
        self.0.len()
    }

    /// The encoded row body (after the clustering), for reads that locate one
    /// cell without decoding the row ([`crate::encoding::locate_cell`]).
    pub fn body(&self) -> &[u8] {
        self.split().1
    }
}

impl Item for MemRow {
    fn key(&self) -> &[u8] {
        self.split().0
    }

    fn heap_bytes(&self) -> usize {
        // Arc<[u8]> allocation: strong + weak counts, then the bytes.
        16 + self.0.len()
    }
}

/// One version of a partition's contents.
#[derive(Clone, Debug)]
pub struct PartitionState {
    pub deletion: PartitionDeletion,
    static_row: Option<MemRow>,
    rows: BTree<MemRow>,
}

impl PartitionState {
    fn memory_bytes(&self) -> usize {
        std::mem::size_of::<PartitionState>()
            + 16 // Arc header
            + self.rows.memory_bytes()
            + self.static_row.as_ref().map_or(0, |r| r.heap_bytes())
            + self.deletion.ranges.capacity() * std::mem::size_of::<crate::data::RangeTombstone>()
            + self.deletion.ranges.iter().map(|r| r.range.start.prefix.len() + r.range.end.prefix.len()).sum::<usize>()
    }

    pub fn row_count(&self) -> usize {
        self.rows.len()
    }
}

/// A partition's handle in the shard map.
#[derive(Debug)]
pub struct MemPartition {
    pub key: DecoratedKey,
    state: ArcSwap<PartitionState>,
    write_lock: Mutex<()>,
}

impl MemPartition {
    /// The current state, without locking (invariant 1).
    pub fn state(&self) -> Arc<PartitionState> {
        self.state.load_full()
    }
}

/// One shard's share of the memtable's statistics, on a cache line of its
/// own. Each write updates the counters of its partition's shard, so two
/// writers meet on a counter only when they write to the same shard (1 in
/// [`SHARDS`] for random keys); readers (`tablestats`, flush) add the shards
/// up. One set of shared counters cost every write four atomic updates on a
/// line every writer thread bounced between cores (BENCHMARKS.md, "Write path
/// (issue 15)"). `memory_bytes` stays one exact shared counter: every write
/// reads it to decide the switch.
#[derive(Debug, Default)]
#[repr(align(128))]
struct ShardCounters {
    data_bytes: AtomicU64,
    cell_count: AtomicU64,
    partition_count: AtomicU64,
    operation_count: AtomicU64,
}

/// Running bounds over everything applied (invariant 3).
#[derive(Debug)]
struct Bounds {
    min_timestamp: AtomicI64,
    max_timestamp: AtomicI64,
    min_local_deletion: AtomicI64,
    min_ttl: AtomicU64,
}

/// What one `apply` did, for table metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyResult {
    pub rows_inserted: usize,
    pub rows_merged: usize,
}

#[derive(Debug)]
pub struct Memtable {
    id: u64,
    base: EncodingBase,
    shards: Box<[Shard]>,
    memory_bytes: AtomicI64,
    /// Indexed like `shards`.
    counters: Box<[ShardCounters]>,
    bounds: Bounds,
    created_micros: i64,
    /// Commit-log position when this memtable was switched out: every record
    /// before it that belongs to this table is in this memtable or older ones.
    flush_position: std::sync::OnceLock<crate::manifest::ReplayPosition>,
}

impl Memtable {
    /// An empty memtable; `now_micros` anchors its timestamp deltas.
    pub fn new(id: u64, now_micros: i64) -> Memtable {
        let shards = (0..SHARDS)
            .map(|_| RwLock::new(BTreeMap::new()))
            .collect::<Vec<_>>()
            .into_boxed_slice();
        Memtable {
            id,
            base: EncodingBase::around(now_micros),
            shards,
            memory_bytes: AtomicI64::new(
                (std::mem::size_of::<Memtable>() + SHARDS * std::mem::size_of::<ShardCounters>())
                    as i64,
            ),
            counters: (0..SHARDS).map(|_| ShardCounters::default()).collect(),
            bounds: Bounds {
                min_timestamp: AtomicI64::new(i64::MAX),
                max_timestamp: AtomicI64::new(NO_TIMESTAMP),
                min_local_deletion: AtomicI64::new(NO_DELETION_TIME),
                min_ttl: AtomicU64::new(u64::MAX),
            },
            created_micros: now_micros,
            flush_position: std::sync::OnceLock::new(),
        }
    }

    /// Records the commit-log position at switch time (first call wins).
    pub fn set_flush_position(&self, pos: crate::manifest::ReplayPosition) {
        let _ = self.flush_position.set(pos);
    }

    pub fn flush_position(&self) -> Option<crate::manifest::ReplayPosition> {
        self.flush_position.get().copied()
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn created_micros(&self) -> i64 {
        self.created_micros
    }

    /// Exact structure + data bytes (invariant 2).
    pub fn memory_bytes(&self) -> u64 {
        self.memory_bytes.load(Ordering::Relaxed).max(0) as u64
    }

    /// Bytes of keys, clusterings and values applied (Cassandra's "Memtable data size").
    pub fn data_bytes(&self) -> u64 {
        self.sum(|c| &c.data_bytes)
    }

    pub fn cell_count(&self) -> u64 {
        self.sum(|c| &c.cell_count)
    }

    pub fn partition_count(&self) -> u64 {
        self.sum(|c| &c.partition_count)
    }

    pub fn operation_count(&self) -> u64 {
        self.sum(|c| &c.operation_count)
    }

    fn sum(&self, field: impl Fn(&ShardCounters) -> &AtomicU64) -> u64 {
        self.counters
            .iter()
            .map(|c| field(c).load(Ordering::Relaxed))
            .sum()
    }

    pub fn is_empty(&self) -> bool {
        self.operation_count() == 0
    }

    /// Smallest write timestamp applied, `None` while empty: bounds what this
    /// memtable may hold when compaction decides whether a tombstone is purgeable.
    pub fn min_timestamp(&self) -> Option<i64> {
        let ts = self.bounds.min_timestamp.load(Ordering::Relaxed);
        (ts != i64::MAX).then_some(ts)
    }

    pub fn max_timestamp(&self) -> i64 {
        self.bounds.max_timestamp.load(Ordering::Relaxed)
    }

    /// Lower bounds of every timestamp, deletion time and TTL applied: the encoding
    /// base of the sstable this memtable flushes to (invariant 3).
    pub fn encoding_base(&self) -> EncodingBase {
        let min_ts = self.bounds.min_timestamp.load(Ordering::Relaxed);
        let min_ldt = self.bounds.min_local_deletion.load(Ordering::Relaxed);
        let min_ttl = self.bounds.min_ttl.load(Ordering::Relaxed);
        EncodingBase {
            min_timestamp: if min_ts == i64::MAX {
                self.base.min_timestamp
            } else {
                min_ts
            },
            min_local_deletion: if min_ldt == NO_DELETION_TIME {
                self.base.min_local_deletion
            } else {
                min_ldt
            },
            min_ttl: u32::try_from(min_ttl).unwrap_or(0),
        }
    }

    fn note_bounds(&self, update: &PartitionUpdate) {
        let mut min_ts = i64::MAX;
        let mut max_ts = NO_TIMESTAMP;
        let mut min_ldt = NO_DELETION_TIME;
        let mut min_ttl = u64::MAX;
        let mut see_ts = |ts: i64| {
            if ts != NO_TIMESTAMP {
                min_ts = min_ts.min(ts);
                max_ts = max_ts.max(ts);
            }
        };
        if let Some(d) = update.deletion.partition {
            see_ts(d.marked_for_delete_at_micros);
            min_ldt = min_ldt.min(d.local_deletion_seconds);
        }
        for rt in &update.deletion.ranges {
            see_ts(rt.deletion.marked_for_delete_at_micros);
            min_ldt = min_ldt.min(rt.deletion.local_deletion_seconds);
        }
        for row in update.rows.iter().chain(update.static_row.iter()) {
            see_ts(row.liveness.timestamp_micros);
            if row.liveness.is_expiring() {
                min_ldt = min_ldt.min(row.liveness.local_expiry_seconds);
                min_ttl = min_ttl.min(row.liveness.ttl_seconds as u64);
            }
            if !row.deletion.is_live() {
                see_ts(row.deletion.marked_for_delete_at_micros);
                min_ldt = min_ldt.min(row.deletion.local_deletion_seconds);
            }
            for c in &row.cells {
                see_ts(c.timestamp_micros);
                if c.local_deletion_seconds != NO_DELETION_TIME {
                    min_ldt = min_ldt.min(c.local_deletion_seconds);
                }
                if c.ttl_seconds > 0 {
                    min_ttl = min_ttl.min(c.ttl_seconds as u64);
                }
            }
        }
        // Read first, update only on a change: most writes move no bound but
        // the newest timestamp, and a plain load of an unchanged line costs no
        // cross-core traffic, unlike an unconditional fetch_min. Still exact
        // (invariant 3): a bound another writer moves meanwhile only makes the
        // skipped update unnecessary, since bounds only ever tighten.
        let b = &self.bounds;
        if min_ts < b.min_timestamp.load(Ordering::Relaxed) {
            b.min_timestamp.fetch_min(min_ts, Ordering::Relaxed);
        }
        if max_ts > b.max_timestamp.load(Ordering::Relaxed) {
            b.max_timestamp.fetch_max(max_ts, Ordering::Relaxed);
        }
        if min_ldt < b.min_local_deletion.load(Ordering::Relaxed) {
            b.min_local_deletion.fetch_min(min_ldt, Ordering::Relaxed);
        }
        if min_ttl < b.min_ttl.load(Ordering::Relaxed) {
            b.min_ttl.fetch_min(min_ttl, Ordering::Relaxed);
        }
    }

    /// Publishes a new partition born with `state`, unless another writer created
    /// it first (then `state` is handed back to be merged the normal way). Building
    /// the first state before publishing skips an empty state and its ArcSwap
    /// store: +10% (1 thread) to +42% (2 threads) on new-partition inserts
    /// (BENCHMARKS.md, Memtable).
    fn insert_new(
        &self,
        key: &DecoratedKey,
        state: PartitionState,
    ) -> std::result::Result<(), PartitionState> {
        let state_bytes = state.memory_bytes();
        let mut map = self.shards[shard_of(key.token)].write();
        if map.contains_key(key) {
            return Err(state);
        }
        let part = MemPartition {
            key: key.clone(),
            state: ArcSwap::from_pointee(state),
            write_lock: Mutex::new(()),
        };
        map.insert(key.clone(), Arc::new(part));
        drop(map);
        let bytes = MAP_ENTRY_OVERHEAD_BYTES
            + 16 + std::mem::size_of::<MemPartition>() // Arc<MemPartition>
            + 16 + key.key.len() // Arc<[u8]> key
            + state_bytes;
        self.memory_bytes.fetch_add(bytes as i64, Ordering::Relaxed);
        let c = &self.counters[shard_of(key.token)];
        c.partition_count.fetch_add(1, Ordering::Relaxed);
        c.data_bytes
            .fetch_add(key.key.len() as u64, Ordering::Relaxed);
        Ok(())
    }

    /// Applies one partition update atomically: a reader sees all of it or none.
    pub fn apply(&self, update: &PartitionUpdate) -> ApplyResult {
        self.note_bounds(update);
        let base = self.base;
        // Encode outside any lock: it is the expensive part and needs no shared state.
        let batch: Vec<MemRow> = update
            .rows
            .iter()
            .map(|r| MemRow::encode(r, &base))
            .collect();
        let new_static = update.static_row.as_ref().map(|r| MemRow::encode(r, &base));
        let data: u64 = update
            .rows
            .iter()
            .chain(update.static_row.iter())
            .map(|r| {
                r.clustering.len() as u64
                    + r.cells.iter().map(|c| c.value.len() as u64).sum::<u64>()
            })
            .sum();
        let c = &self.counters[shard_of(update.key.token)];
        c.data_bytes.fetch_add(data, Ordering::Relaxed);
        c.cell_count
            .fetch_add(update.cell_count() as u64, Ordering::Relaxed);
        c.operation_count.fetch_add(1, Ordering::Relaxed);

        let merge = |o: &MemRow, n: MemRow| merge_rows(o, n, &base);
        let (part, deletion, static_row, batch) = match self.get(&update.key) {
            Some(part) => (part, update.deletion.clone(), new_static, batch),
            None => {
                let (rows, stats) = BTree::new().update(batch, merge);
                let state = PartitionState {
                    deletion: update.deletion.clone(),
                    static_row: new_static,
                    rows,
                };
                match self.insert_new(&update.key, state) {
                    Ok(()) => {
                        return ApplyResult {
                            rows_inserted: stats.inserted,
                            rows_merged: stats.merged,
                        }
                    }
                    // Lost the race to create it: merge into the winner's state.
                    Err(state) => match self.get(&update.key) {
                        Some(part) => (
                            part,
                            state.deletion,
                            state.static_row,
                            state.rows.iter().cloned().collect(),
                        ),
                        None => return ApplyResult::default(), // unreachable: partitions are never removed
                    },
                }
            }
        };

        let _writer = part.write_lock.lock();
        let old = part.state.load_full();
        let mut merged_deletion = old.deletion.clone();
        merged_deletion.merge(&deletion);
        let static_row = match (&old.static_row, static_row) {
            (Some(o), Some(n)) => Some(merge_rows(o, n, &base)),
            (o, n) => n.or_else(|| o.clone()),
        };
        let (rows, stats) = old.rows.update(batch, merge);
        let new_state = PartitionState {
            deletion: merged_deletion,
            static_row,
            rows,
        };
        let delta = new_state.memory_bytes() as i64 - old.memory_bytes() as i64;
        part.state.store(Arc::new(new_state));
        drop(_writer);
        self.memory_bytes.fetch_add(delta, Ordering::Relaxed);
        ApplyResult {
            rows_inserted: stats.inserted,
            rows_merged: stats.merged,
        }
    }

    /// The partition's handle, if this memtable has it.
    pub fn get(&self, key: &DecoratedKey) -> Option<Arc<MemPartition>> {
        self.shards[shard_of(key.token)].read().get(key).cloned()
    }

    /// The partition's deletions and its row `clustering`, still encoded (see
    /// [`MemRow::body`] and [`Memtable::row_base`]); `None` if this memtable
    /// does not hold the partition. Used by value range reads, which must not
    /// copy a large value to find it.
    pub fn row_for_value(
        &self,
        key: &DecoratedKey,
        clustering: &[u8],
    ) -> Option<(PartitionDeletion, Option<MemRow>)> {
        let part = self.get(key)?;
        let state = part.state();
        Some((state.deletion.clone(), state.rows.get(clustering).cloned()))
    }

    /// The base this memtable's encoded rows are relative to.
    pub fn row_base(&self) -> EncodingBase {
        self.base
    }

    /// Materialises a partition's deletion info, static row and the rows in `range`
    /// (ascending). `None` if the memtable does not hold the partition.
    pub fn read(&self, key: &DecoratedKey, range: &ClusteringRange) -> Option<PartitionUpdate> {
        let part = self.get(key)?;
        Some(self.materialize(&part, range))
    }

    /// Decodes a partition's state into a [`PartitionUpdate`], restricted to `range`.
    pub fn materialize(&self, part: &MemPartition, range: &ClusteringRange) -> PartitionUpdate {
        let state = part.state();
        let mut out = PartitionUpdate::new(part.key.clone());
        out.deletion = state.deletion.clone();
        out.static_row = state.static_row.as_ref().and_then(|r| r.decode(&self.base));
        let start: Bound<&[u8]> = if range.start.is_unbounded() {
            Bound::Unbounded
        } else {
            Bound::Included(&range.start.prefix)
        };
        for r in state.rows.range(start, Bound::Unbounded) {
            let ck = r.key();
            if !range.end.admits_as_end(ck) {
                break;
            }
            if !range.start.admits_as_start(ck) {
                continue;
            }
            if let Some(row) = r.decode(&self.base) {
                out.rows.push(row);
            }
        }
        out
    }

    /// The rows of partition `key` in `range`, lazily, ascending or reversed
    /// (see [`MemSlice`]); `None` if the memtable does not hold the partition.
    pub fn slice(
        &self,
        key: &DecoratedKey,
        range: &ClusteringRange,
        reversed: bool,
    ) -> Option<MemSlice> {
        let part = self.get(key)?;
        let state = part.state();
        let (lo, hi) = tree_bounds(range);
        Some(MemSlice {
            deletion: state.deletion.clone(),
            static_row: state.static_row.as_ref().and_then(|r| r.decode(&self.base)),
            base: self.base,
            empty: lo.is_none(),
            lo: lo.unwrap_or(Bound::Unbounded),
            hi,
            state,
            range: range.clone(),
            reversed,
            buf: Vec::new(),
            batch: MEM_SLICE_FIRST_BATCH,
            exhausted: false,
        })
    }

    /// Partition handles in token order, starting at the first key `>= start`
    /// (or `> start` when `exclusive`). Takes each shard's lock once, briefly.
    pub fn partitions_from(
        &self,
        start: Option<&DecoratedKey>,
        exclusive: bool,
    ) -> Vec<Arc<MemPartition>> {
        let first = start.map_or(0, |k| shard_of(k.token));
        let mut out = Vec::new();
        for (i, shard) in self.shards.iter().enumerate().skip(first) {
            let map = shard.read();
            match start {
                Some(k) if i == first => {
                    let lower = if exclusive {
                        Bound::Excluded(k)
                    } else {
                        Bound::Included(k)
                    };
                    out.extend(
                        map.range::<DecoratedKey, _>((lower, Bound::Unbounded))
                            .map(|(_, p)| p.clone()),
                    );
                }
                _ => out.extend(map.values().cloned()),
            }
        }
        out
    }

    /// Up to `limit` partition handles of one shard from `lower` on, in
    /// order: the lazy building block of scans, so a page never copies the whole
    /// memtable's handles.
    pub fn shard_batch(
        &self,
        shard: usize,
        lower: Bound<&DecoratedKey>,
        limit: usize,
    ) -> Vec<Arc<MemPartition>> {
        let Some(lock) = self.shards.get(shard) else {
            return Vec::new();
        };
        let map = lock.read();
        map.range::<DecoratedKey, _>((lower, Bound::Unbounded))
            .take(limit)
            .map(|(_, p)| p.clone())
            .collect()
    }

    /// The shard holding `key`.
    pub fn shard_index(key: &DecoratedKey) -> usize {
        shard_of(key.token)
    }

    /// Every partition, in token order, for a flush.
    pub fn all_partitions(&self) -> Vec<Arc<MemPartition>> {
        self.partitions_from(None, false)
    }
}

/// Rows a [`MemSlice`] decodes in its first batch; later batches double up to
/// [`MEM_SLICE_MAX_BATCH`]. A "newest 10 rows" read decodes 16; a long scan
/// re-seeks the tree once per 1024 rows (O(log n) each).
const MEM_SLICE_FIRST_BATCH: usize = 16;
const MEM_SLICE_MAX_BATCH: usize = 1024;

/// The smallest byte string greater than every string starting with `prefix`,
/// or `None` if there is none (empty or all 0xff).
fn prefix_successor(prefix: &[u8]) -> Option<Vec<u8>> {
    let keep = prefix.iter().rposition(|&b| b != 0xff)?;
    let mut s = prefix[..=keep].to_vec();
    s[keep] += 1;
    Some(s)
}

/// The B-tree key bounds covering `range` (a superset for prefix bounds, which
/// the caller filters with `range.contains`); `None` as the lower bound when
/// the range is certainly empty.
fn tree_bounds(range: &ClusteringRange) -> (Option<Bound<Vec<u8>>>, Bound<Vec<u8>>) {
    let s = &range.start;
    let lo = if s.is_unbounded() {
        Some(Bound::Unbounded)
    } else if s.inclusive {
        Some(Bound::Included(s.prefix.clone()))
    } else {
        // Exclusive prefix: every clustering starting with it is excluded too.
        prefix_successor(&s.prefix).map(Bound::Included)
    };
    let e = &range.end;
    let hi = if e.is_unbounded() {
        Bound::Unbounded
    } else if e.inclusive {
        prefix_successor(&e.prefix).map_or(Bound::Unbounded, Bound::Excluded)
    } else {
        Bound::Excluded(e.prefix.clone())
    };
    (lo, hi)
}

/// The rows of one memtable partition in a clustering range, decoded lazily
/// in batches from the partition's snapshot at creation (later writes are not
/// seen: memtable invariant 1). Each batch re-seeks the copy-on-write B-tree
/// after the last row handed out, so nothing borrows the tree between calls.
#[derive(Debug)]
pub struct MemSlice {
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
    state: Arc<PartitionState>,
    base: EncodingBase,
    range: ClusteringRange,
    reversed: bool,
    /// Tree bounds of what is still to be read.
    lo: Bound<Vec<u8>>,
    hi: Bound<Vec<u8>>,
    empty: bool,
    /// Decoded rows in reverse order of handing out.
    buf: Vec<Row>,
    batch: usize,
    exhausted: bool,
}

impl MemSlice {
    /// The next row of the range in the slice's direction.
    pub fn next_row(&mut self) -> Option<Row> {
        loop {
            if let Some(r) = self.buf.pop() {
                return Some(r);
            }
            if self.empty || self.exhausted {
                return None;
            }
            self.refill();
        }
    }

    fn refill(&mut self) {
        // Owned copies: `self.lo` / `self.hi` move on while the tree is borrowed.
        let (lo, hi) = (self.lo.clone(), self.hi.clone());
        let lo_ref = match &lo {
            Bound::Included(v) => Bound::Included(v.as_slice()),
            Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let hi_ref = match &hi {
            Bound::Included(v) => Bound::Included(v.as_slice()),
            Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
            Bound::Unbounded => Bound::Unbounded,
        };
        let mut it = self.state.rows.range(lo_ref, hi_ref);
        let mut taken = 0;
        let mut last: Option<&MemRow> = None;
        let mut rows = Vec::new();
        while taken < self.batch {
            let next = if self.reversed {
                it.next_back()
            } else {
                it.next()
            };
            let Some(item) = next else {
                self.exhausted = true;
                break;
            };
            taken += 1;
            last = Some(item);
            if self.range.contains(item.key()) {
                if let Some(row) = item.decode(&self.base) {
                    rows.push(row);
                }
            }
        }
        if let Some(item) = last {
            let k = item.key().to_vec();
            if self.reversed {
                self.hi = Bound::Excluded(k);
            } else {
                self.lo = Bound::Excluded(k);
            }
        }
        rows.reverse();
        self.buf = rows;
        self.batch = (self.batch * 2).min(MEM_SLICE_MAX_BATCH);
    }
}

fn merge_rows(old: &MemRow, new: MemRow, base: &EncodingBase) -> MemRow {
    match (old.decode(base), new.decode(base)) {
        (Some(o), Some(n)) => MemRow::encode(&o.merge(n), base),
        // Unreachable unless the memtable corrupted its own encoding; keep the
        // newer version rather than panic on the write path.
        _ => new,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, ClusteringBound, DeletionTime, LivenessInfo};

    fn key(k: &[u8]) -> DecoratedKey {
        DecoratedKey::new(k)
    }

    fn row(ck: &[u8], ts: i64, v: &[u8]) -> Row {
        let mut r = Row::new(ck.to_vec());
        r.liveness = LivenessInfo::new(ts);
        r.add_cell(Cell::live(0, ts, v.to_vec()));
        r
    }

    #[test]
    fn rows_with_large_values_are_encoded_exactly() {
        let base = EncodingBase::around(1_000_000);
        let mut r = Row::new(b"ck".to_vec());
        r.add_cell(Cell::live(0, 1_000_000, vec![7; 200_000]));
        r.add_cell(Cell::live(1, 1_000_001, b"small".to_vec()));
        r.add_cell(Cell::live(
            4,
            1_000_000,
            (0..70_000u32).map(|i| i as u8).collect(),
        ));
        let m = MemRow::encode(&r, &base);
        let mut want = Vec::new();
        put_varint(&mut want, 2);
        want.extend_from_slice(b"ck");
        crate::encoding::encode_row(&r, &base, &mut want);
        assert_eq!(&m.0[..], &want[..]);
        assert_eq!(m.decode(&base), Some(r));
    }

    #[test]
    fn apply_then_read_merges_versions() {
        let m = Memtable::new(1, 1_000_000);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 10, b"old"));
        u.add_row(row(b"b", 10, b"b"));
        m.apply(&u);
        let mut u2 = PartitionUpdate::new(key(b"p"));
        u2.add_row(row(b"a", 20, b"new"));
        m.apply(&u2);
        let p = m.read(&key(b"p"), &ClusteringRange::ALL).unwrap();
        assert_eq!(p.rows.len(), 2);
        assert_eq!(p.rows[0].cells[0].value, b"new");
        assert_eq!(m.cell_count(), 3);
        assert_eq!(m.partition_count(), 1);
        assert!(m.read(&key(b"q"), &ClusteringRange::ALL).is_none());
    }

    #[test]
    fn readers_keep_their_snapshot() {
        let m = Memtable::new(1, 0);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 1, b"x"));
        m.apply(&u);
        let part = m.get(&key(b"p")).unwrap();
        let before = part.state();
        let mut u2 = PartitionUpdate::new(key(b"p"));
        u2.add_row(row(b"b", 2, b"y"));
        m.apply(&u2);
        assert_eq!(
            before.row_count(),
            1,
            "an old snapshot never sees later writes"
        );
        assert_eq!(part.state().row_count(), 2);
    }

    #[test]
    fn range_read_respects_prefix_bounds() {
        let m = Memtable::new(1, 0);
        let mut u = PartitionUpdate::new(key(b"p"));
        for ck in [&b"a"[..], b"b1", b"b2", b"c"] {
            u.add_row(row(ck, 1, ck));
        }
        m.apply(&u);
        let range = ClusteringRange {
            start: ClusteringBound::inclusive(b"b".to_vec()),
            end: ClusteringBound::inclusive(b"b".to_vec()),
        };
        let p = m.read(&key(b"p"), &range).unwrap();
        let cks: Vec<_> = p.rows.iter().map(|r| r.clustering.clone()).collect();
        assert_eq!(cks, vec![b"b1".to_vec(), b"b2".to_vec()]);
    }

    #[test]
    fn partitions_iterate_in_token_order() {
        let m = Memtable::new(1, 0);
        for i in 0..500u32 {
            let mut u = PartitionUpdate::new(key(&i.to_be_bytes()));
            u.add_row(row(b"", 1, b"v"));
            m.apply(&u);
        }
        let all = m.all_partitions();
        assert_eq!(all.len(), 500);
        assert!(all.windows(2).all(|w| w[0].key < w[1].key));
        let mid = all[250].key.clone();
        let from = m.partitions_from(Some(&mid), true);
        assert_eq!(from.len(), 249);
        assert_eq!(m.partitions_from(Some(&mid), false).len(), 250);
    }

    #[test]
    fn deletions_and_bounds_are_tracked() {
        let m = Memtable::new(1, 5_000_000);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.deletion.partition = Some(DeletionTime::new(3, 4));
        let mut r = Row::new(b"a".to_vec());
        r.add_cell(Cell::expiring(0, 7, 60, 100, b"v".to_vec()));
        u.add_row(r);
        m.apply(&u);
        let base = m.encoding_base();
        assert_eq!(base.min_timestamp, 3);
        assert_eq!(base.min_local_deletion, 4);
        assert_eq!(base.min_ttl, 60);
        assert_eq!(m.max_timestamp(), 7);
        let p = m.read(&key(b"p"), &ClusteringRange::ALL).unwrap();
        assert_eq!(p.deletion.partition, Some(DeletionTime::new(3, 4)));
    }

    #[test]
    fn memory_accounting_grows_with_data_and_is_exact_for_rows() {
        let m = Memtable::new(1, 0);
        let empty = m.memory_bytes();
        let mut u = PartitionUpdate::new(key(b"p"));
        for i in 0..1000u32 {
            u.add_row(row(&i.to_be_bytes(), 1, &[0u8; 34]));
        }
        m.apply(&u);
        let grown = m.memory_bytes() - empty;
        let part = m.get(&key(b"p")).unwrap();
        let state = part.state();
        let rows_bytes = state.rows.memory_bytes() as u64;
        assert!(grown >= rows_bytes, "{grown} < {rows_bytes}");
        // Overwriting the same rows at a newer timestamp replaces, not adds.
        let mut u2 = PartitionUpdate::new(key(b"p"));
        for i in 0..1000u32 {
            u2.add_row(row(&i.to_be_bytes(), 2, &[1u8; 34]));
        }
        m.apply(&u2);
        let after = m.memory_bytes() - empty;
        assert!(after.abs_diff(grown) < grown / 10, "{after} vs {grown}");
    }

    fn slice_cks(m: &Memtable, range: &ClusteringRange, reversed: bool, n: usize) -> Vec<Vec<u8>> {
        let Some(mut s) = m.slice(&key(b"p"), range, reversed) else {
            return Vec::new();
        };
        std::iter::from_fn(|| s.next_row())
            .take(n)
            .map(|r| r.clustering)
            .collect()
    }

    #[test]
    fn prefix_successor_skips_trailing_ff() {
        assert_eq!(prefix_successor(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_successor(b"a\xff\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_successor(b"\xff"), None);
        assert_eq!(prefix_successor(b""), None);
    }

    #[test]
    fn slices_match_a_filter_in_both_directions_across_batches() {
        let m = Memtable::new(1, 0);
        let mut u = PartitionUpdate::new(key(b"p"));
        // Two-byte clusterings with 0xff bytes, so prefix successors carry.
        for a in [0u8, 1, 0xfe, 0xff] {
            for b in 0..=255u8 {
                if b % 3 == 0 || b == 0xff {
                    u.add_row(row(&[a, b], 1, b"v"));
                }
            }
        }
        m.apply(&u);
        let all: Vec<Vec<u8>> = u.rows.iter().map(|r| r.clustering.clone()).collect();
        let bounds: Vec<ClusteringBound> = vec![
            ClusteringBound::UNBOUNDED,
            ClusteringBound::inclusive(vec![1]),
            ClusteringBound::exclusive(vec![1]),
            ClusteringBound::inclusive(vec![0xff]),
            ClusteringBound::exclusive(vec![0xff]),
            ClusteringBound::inclusive(vec![0xfe, 0xff]),
            ClusteringBound::exclusive(vec![0xfe, 0xff]),
            ClusteringBound::inclusive(vec![1, 30]),
            ClusteringBound::exclusive(vec![1, 30]),
            ClusteringBound::exclusive(Vec::new()),
        ];
        for start in &bounds {
            for end in &bounds {
                let range = ClusteringRange {
                    start: start.clone(),
                    end: end.clone(),
                };
                let want: Vec<Vec<u8>> =
                    all.iter().filter(|c| range.contains(c)).cloned().collect();
                // 344 rows: more than the first batches (16, 32, 64, ...).
                assert_eq!(slice_cks(&m, &range, false, usize::MAX), want, "{range:?}");
                let mut rev = want.clone();
                rev.reverse();
                assert_eq!(slice_cks(&m, &range, true, usize::MAX), rev, "{range:?}");
                assert_eq!(
                    slice_cks(&m, &range, true, 3),
                    rev.into_iter().take(3).collect::<Vec<_>>()
                );
            }
        }
        assert!(m.slice(&key(b"q"), &ClusteringRange::ALL, false).is_none());
    }

    #[test]
    fn a_slice_keeps_its_snapshot_and_carries_deletions() {
        let m = Memtable::new(1, 0);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.deletion.partition = Some(DeletionTime::new(0, 1));
        for i in 0..100u8 {
            u.add_row(row(&[i], 1, b"v"));
        }
        u.static_row = Some(row(b"", 1, b"s"));
        m.apply(&u);
        let mut s = m.slice(&key(b"p"), &ClusteringRange::ALL, false).unwrap();
        assert_eq!(s.deletion.partition, Some(DeletionTime::new(0, 1)));
        assert!(s.static_row.is_some());
        assert_eq!(s.next_row().unwrap().clustering, vec![0]);
        // A write after the slice began is not seen by it (memtable invariant 1).
        let mut later = PartitionUpdate::new(key(b"p"));
        later.add_row(row(&[200], 2, b"late"));
        m.apply(&later);
        let rest: Vec<Row> = std::iter::from_fn(|| s.next_row()).collect();
        assert_eq!(rest.len(), 99);
    }

    #[test]
    fn concurrent_writers_lose_nothing() {
        let m = Arc::new(Memtable::new(1, 0));
        let threads: Vec<_> = (0..4u32)
            .map(|t| {
                let m = m.clone();
                std::thread::spawn(move || {
                    for i in 0..2000u32 {
                        // Half the writes contend on one hot partition.
                        let pk = if i % 2 == 0 {
                            b"hot".to_vec()
                        } else {
                            (t * 10_000 + i).to_be_bytes().to_vec()
                        };
                        let mut u = PartitionUpdate::new(DecoratedKey::new(&pk));
                        u.add_row(row(&(t * 10_000 + i).to_be_bytes(), 1, b"v"));
                        m.apply(&u);
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().unwrap();
        }
        let hot = m.read(&key(b"hot"), &ClusteringRange::ALL).unwrap();
        assert_eq!(hot.rows.len(), 4 * 1000);
        assert_eq!(m.partition_count(), 1 + 4 * 1000);
    }
}
