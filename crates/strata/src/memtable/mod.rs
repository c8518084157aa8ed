//! The memtable: a table's in-memory write buffer (seed 004, CASSANDRA-6271), with
//! its rows in a per-memtable arena (issue 15).
//!
//! # Glossary
//!
//! - **arena** ([`arena`]): large blocks owned by the memtable, freed together when
//!   it is dropped. Rows and partition records live there.
//! - **row** ([`RowRef`]): an encoded row in the arena, `[varint clustering length
//!   << 1 | chained][clustering][varint body length][body]`, the body in the compact
//!   row codec (`encoding`) with deltas against the memtable's creation time. A
//!   handle to it is a pointer plus the clustering's first 8 bytes, copied freely.
//! - **chained row**: a row with the chained bit, whose body is only one update of
//!   its clustering, followed by a [`Link`] to the row it extends (plain or
//!   chained). Its value is the merge of the whole chain. A small update of a
//!   large row (one element of a 10,000-entry map) is stored so, costing the
//!   update's bytes rather than a copy of the row; once a chain's bytes would pass
//!   half its plain row's, the next update folds it into a new plain row
//!   (amortised O(1) bytes per update, `Memtable::extension`).
//! - **partition record**: in the arena, `[state][varint key length][key bytes]`,
//!   the state one word ([`PartState`]). A partition holding one row and no
//!   deletion or static row is just that row (a **lone row**); any other is a
//!   **version**.
//! - **version** ([`Version`]): one immutable state of a partition with more than one
//!   row, or with deletions or a static row: deletions, static row and a
//!   copy-on-write B-tree ([`btree`], fan factor 32) of row handles, published by an
//!   atomic pointer swap.
//! - **replaced nodes**: the B-tree nodes an update replaced, freed once no reader
//!   can reach them (the version chain, below).
//!
//! # Structure
//!
//! Partitions are spread over [`SHARDS`] shards by **token range** (shard = top bits
//! of the token), each an ordered set of `(token, key)` entries pointing at partition
//! records, behind a reader-writer lock held only to find or add an entry.
//! Concatenating the shards in order gives token order, so flush and scans need no
//! merge. Each shard also has a writer mutex: writers of one shard apply one at a
//! time (64 shards: two writers with random keys meet 1 time in 64).
//!
//! # Threads
//!
//! Any number of writers and readers concurrently. Readers never lock a partition:
//! they load its lone row or its version ([`PartState`]) and keep that snapshot
//! as long as they like. A reader's handles point into the arena and into tree nodes, so
//! everything a reader holds keeps the memtable alive (`Arc<Memtable>` in
//! [`MemSlice`] and [`MemRow`]).
//!
//! # Freeing tree nodes: the version chain
//!
//! Nodes are not in the arena: path copies would leave about 1 KiB of dead nodes per
//! row inserted into a large partition until the flush. Each replaced node is freed
//! as soon as no reader can reach it, with no reference count per node:
//! - when version `V(j)` is replaced by `V(j+1)`, the nodes of `V(j)` that `V(j+1)`
//!   lacks are listed in `V(j+1)` (its `replaced`), and `V(j)` holds `V(j+1)` (its
//!   `next`, an `Arc` set before `V(j+1)` is published);
//! - a reader of `V(i)` for any `i <= j` therefore keeps `V(i+1) ... V(j+1)` alive,
//!   and with them every node `V(i)` can reach; a version is dropped only after every
//!   older one, and then frees the nodes it replaced (one `Arc` per update, none
//!   per node);
//! - a version dropped without a successor is its partition's last (the memtable is
//!   being dropped) and frees its whole tree.
//!
//! # Recycling replaced rows
//!
//! An overwrite reconciles the stored row with the new one into a new arena row;
//! the replaced row's bytes are dead once no reader can reach them. For rows of a
//! version that moment is known (the version chain): the version that replaced
//! them lists them and, when released, hands their bytes to its shard's free rows,
//! where the next row of exactly that encoded size reuses them. So rows overwritten
//! again and again (hot rows, counters) do not grow the arena without bound, which
//! Cassandra's slabs and RocksDB's arena let them do until the flush. Exact size
//! is why row timestamps keep one width for the memtable's life
//! ([`ROW_TS_BYTES`]): a rewrite with a later timestamp is then the size of the
//! row it replaces, where a varint grew a byte as the memtable aged. A lone row
//! (no version) has no such moment: a reader may hold it with nothing counting,
//! so its replaced bytes stay until the flush, and so do they when a later
//! version replaces it (every version remembers its partition's former lone row).
//!
//! # Invariants
//!
//! 1. A partition's state is only ever replaced whole (one atomic word,
//!    [`PartState`]: a lone row's pointer or a version's), never mutated, so a
//!    reader sees every row of a mutation or none. A partition moves from a lone
//!    row to a version at most once, and never back.
//! 2. Every handle stored in a tree or a record points into this memtable's arena,
//!    which outlives every tree and reader (invariant 1 of [`arena`]).
//! 3. `memory_bytes()` is the arena's bytes handed out (exact) plus the live trees' node
//!    bytes (exact), the versions' own size and deletions (exact), plus a documented
//!    estimate for the shard sets' nodes (`MAP_ENTRY_OVERHEAD_BYTES`). Nodes waiting
//!    for a reader to let go (at most one path per partition without long readers)
//!    are not counted.
//! 4. The statistics (min/max timestamps, min local deletion time, min TTL) are lower
//!    /upper bounds of everything ever applied, so a flush can use them as the
//!    sstable's encoding base.
//! 5. Every tree node is freed exactly once: by the version whose update replaced
//!    it, or with its partition's last version.
//! 6. A row's bytes are reused only after the version that replaced it is released,
//!    never while a version or reader that can reach the row exists.
//! 7. A row a chained row extends is never listed as replaced (the chain still reads
//!    it), and its bytes are never reused: only a chain's head is replaced, when an
//!    update folds the chain, and the rows behind it stay until the flush.

pub mod arena;
pub mod btree;

use crate::data::{
    ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo, PartitionDeletion, PartitionUpdate,
    Row, NO_DELETION_TIME, NO_TIMESTAMP,
};
use crate::encoding::{
    decode_row, encode_row_spliced_steady, varint_len, visit_row, CellView, EncodingBase, Reader,
    RowVisitor,
};
use crate::sstable::{EncodedPartition, EncodedRow};
use arena::Arena;
use btree::{BTree, Garbage, Item};
use parking_lot::{Mutex, RwLock};
use std::borrow::Cow;
use std::collections::BTreeSet;
use std::mem::size_of;
use std::ops::Bound;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicI64, AtomicPtr, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};

/// Number of token-range shards: enough that two writer threads rarely meet on a
/// shard lock, few enough that an empty memtable stays small.
pub const SHARDS: usize = 64;

/// Bytes of a row timestamp for the memtable's life (its first 16.7 s; past
/// them, varints): every row's timestamp takes this width
/// ([`encode_row_spliced_steady`]), so an overwritten row keeps its size and
/// reuses the bytes of the row it replaces. A varint took as many bytes from
/// 8 ms to 1 s of the memtable's age and one more after, so random-key writes
/// lose nothing: a memtable fills in seconds.
const ROW_TS_BYTES: u8 = 3;
const SHARD_SHIFT: u32 = 64 - SHARDS.trailing_zeros();

/// std's BTreeSet stores up to 11 entries per node; at the fill random inserts
/// leave, an entry costs about its own size * 1.5 plus a share of the node
/// headers and internal nodes. Measured with a counting allocator over random
/// inserts (5,000 to 1,000,000 entries): 27.1-27.5 bytes per 16-byte entry,
/// 38.5-39.3 per 24-byte one; this rounds up (28 here). Estimated, not counted per
/// node (invariant 3).
const MAP_ENTRY_OVERHEAD_BYTES: usize = size_of::<PartKey>() * 3 / 2 + 4;

fn shard_of(token: i64) -> usize {
    (((token as u64) ^ (1u64 << 63)) >> SHARD_SHIFT) as usize
}

/// Reads a varint this module wrote at `p`: (value, bytes it took).
///
/// # Safety
/// `p` points at a complete varint inside a live allocation (every byte read is one
/// the writer wrote: the loop stops at the byte without the continuation bit).
unsafe fn read_varint(p: *const u8) -> (usize, usize) {
    let mut v = 0usize;
    let mut shift = 0;
    let mut i = 0;
    loop {
        // SAFETY: the caller's promise covers every byte up to the last one.
        let b = unsafe { *p.add(i) };
        v |= ((b & 0x7f) as usize) << shift;
        i += 1;
        if b & 0x80 == 0 {
            return (v, i);
        }
        shift += 7;
    }
}

/// Writes into an arena allocation of known size; every write is bounds-checked, so
/// a miscomputed size panics instead of writing past the allocation.
struct RawWriter {
    ptr: *mut u8,
    len: usize,
    at: usize,
}

impl RawWriter {
    fn put(&mut self, b: &[u8]) {
        assert!(
            b.len() <= self.len - self.at,
            "row larger than its allocation"
        );
        // SAFETY: `[at, at + b.len())` lies inside the allocation (checked above),
        // which nothing else aliases until the row is published.
        unsafe { std::ptr::copy_nonoverlapping(b.as_ptr(), self.ptr.add(self.at), b.len()) };
        self.at += b.len();
    }

    fn varint(&mut self, v: usize) {
        let mut buf = [0u8; 10];
        let mut n = 0;
        let mut v = v as u64;
        while v >= 0x80 {
            buf[n] = (v as u8) | 0x80;
            v >>= 7;
            n += 1;
        }
        buf[n] = v as u8;
        self.put(&buf[..=n]);
    }
}

/// Capacity the per-thread row scratch keeps between rows: large values are
/// spliced, not copied into it, so ordinary rows fit with room to spare.
const ROW_SCRATCH_KEEP_BYTES: usize = 64 * 1024;

thread_local! {
    /// Each writer thread's buffer for encoding a row body before it is copied
    /// into the arena (one copy of a small body; large values skip it, spliced).
    static ROW_SCRATCH: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

/// A row in the memtable's arena (glossary): a pointer plus the first 8 bytes of
/// its clustering, copied freely.
///
/// The prefix lets a tree compare two rows without reading either from the arena:
/// keys that differ in their first 8 bytes (random or time-ordered clusterings)
/// never leave the node. Every comparison reading the clustering through the
/// pointer made memcmp and its cache misses 11% of single-row inserts into large
/// partitions (BENCHMARKS.md, "The arena memtable").
#[derive(Clone, Copy)]
pub(crate) struct RowRef {
    ptr: NonNull<u8>,
    prefix: u64,
}

/// The first 8 bytes of `key`, big-endian, zero-padded: if two keys' prefixes
/// differ, they order as the keys do (a key shorter than 8 bytes pads with zeros,
/// which sort before any byte a longer key with the same start has there, or tie
/// and fall back to the full keys).
fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

// SAFETY: the bytes behind a `RowRef` are written once, before the handle is
// published with a release store, and never changed while reachable; the arena
// keeps them alive while any tree or reader holds the handle (invariant 2).
unsafe impl Send for RowRef {}
unsafe impl Sync for RowRef {}

/// What a chained row (glossary) carries after its body: the row it extends
/// and the chain's sizes, so a writer decides between extending and folding
/// without walking the chain.
#[derive(Clone, Copy, Debug)]
struct Link {
    /// The row this one extends (plain or itself chained), same clustering.
    prev: NonNull<u8>,
    /// Encoded bytes of the chain's plain row, at its end.
    base_len: u64,
    /// Encoded bytes of every chained row from this one back to the plain
    /// row, excluded.
    chain_bytes: u64,
}

/// Bytes of a [`Link`] in the arena: three little-endian words.
const LINK_BYTES: usize = 24;

impl RowRef {
    /// The handle of a row written at `ptr`.
    fn at(ptr: NonNull<u8>) -> RowRef {
        let mut r = RowRef { ptr, prefix: 0 };
        r.prefix = key_prefix(r.clustering());
        r
    }

    /// The first varint: the clustering's length and the chained bit.
    fn head(self) -> (usize, bool, usize) {
        // SAFETY: written by `Memtable::place` as `[varint len << 1 | chained]
        // [len bytes]...` and alive while the memtable is (invariant 2).
        let (v, n) = unsafe { read_varint(self.ptr.as_ptr()) };
        (v >> 1, v & 1 == 1, n)
    }

    fn clustering<'a>(self) -> &'a [u8] {
        let (len, _, n) = self.head();
        // SAFETY: as in `head`: the clustering's bytes follow its length.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(n), len) }
    }

    /// The encoded row body (after the clustering): the whole row for a plain
    /// row, only this link's update for a chained one.
    fn body<'a>(self) -> &'a [u8] {
        let (ck, _, n) = self.head();
        // SAFETY: as in `head`; the body length follows the clustering.
        unsafe {
            let q = self.ptr.as_ptr().add(n + ck);
            let (len, m) = read_varint(q);
            std::slice::from_raw_parts(q.add(m), len)
        }
    }

    /// The row this one extends, if it is chained.
    fn link(self) -> Option<Link> {
        if !self.head().1 {
            return None;
        }
        let body = self.body();
        let at = body.as_ptr_range().end;
        // SAFETY: a chained row's body is followed by its `LINK_BYTES`-byte
        // link, written with it by `Memtable::place` (unaligned).
        let words: [u64; 3] = unsafe {
            [
                std::ptr::read_unaligned(at.cast::<u64>()),
                std::ptr::read_unaligned(at.add(8).cast::<u64>()),
                std::ptr::read_unaligned(at.add(16).cast::<u64>()),
            ]
        };
        Some(Link {
            // SAFETY: `place` stored a live row's non-null address there.
            prev: unsafe { NonNull::new_unchecked(u64::from_le(words[0]) as usize as *mut u8) },
            base_len: u64::from_le(words[1]),
            chain_bytes: u64::from_le(words[2]),
        })
    }

    fn is_chained(self) -> bool {
        self.head().1
    }

    /// Bytes this row takes in the arena (its link included).
    fn encoded_len(self) -> usize {
        let (ck, chained, n) = self.head();
        let body = self.body();
        n + ck + varint_len(body.len() as u64) + body.len() + if chained { LINK_BYTES } else { 0 }
    }

    /// This row's own body decoded (for a chained row, its update only).
    fn decode_own(self, base: &EncodingBase) -> Option<Row> {
        decode_row(
            &mut Reader::new(self.body()),
            self.clustering().to_vec(),
            base,
        )
        .ok()
    }

    /// The whole row: a chained row merged with everything it extends.
    fn decode(self, base: &EncodingBase) -> Option<Row> {
        let own = self.decode_own(base)?;
        let Some(mut link) = self.link() else {
            return Some(own);
        };
        let mut rows = vec![own];
        loop {
            // Same clustering, so the same prefix.
            let prev = RowRef {
                ptr: link.prev,
                prefix: self.prefix,
            };
            rows.push(prev.decode_own(base)?);
            match prev.link() {
                Some(l) => link = l,
                None => break,
            }
        }
        // Plain row first: the sort then starts from its long sorted run.
        rows.reverse();
        Row::merge_many(rows)
    }
}

impl Item for RowRef {
    fn key(&self) -> &[u8] {
        self.clustering()
    }

    fn heap_bytes(&self) -> usize {
        // The arena accounts for the row's bytes (invariant 3).
        0
    }

    fn cmp_item(&self, other: &Self) -> std::cmp::Ordering {
        match self.prefix.cmp(&other.prefix) {
            std::cmp::Ordering::Equal => self.clustering().cmp(other.clustering()),
            unequal => unequal,
        }
    }
}

impl std::fmt::Debug for RowRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RowRef({:p})", self.ptr)
    }
}

/// An encoded memtable row that keeps its memtable alive: what a value range read
/// holds while it copies a slice of a large value out (no copy of the whole row).
pub struct MemRow {
    row: RowRef,
    /// A chained row's merged body (its own body is only its update).
    whole: Option<Vec<u8>>,
    /// The version the row was found in: while it is held the row's bytes are
    /// not recycled (`Version::release`).
    _version: Option<Arc<Version>>,
    _memtable: Arc<Memtable>,
}

impl std::fmt::Debug for MemRow {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemRow")
            .field("encoded_len", &self.encoded_len())
            .finish()
    }
}

impl MemRow {
    /// Bytes of the row encoded whole: clustering, body and their lengths.
    pub fn encoded_len(&self) -> usize {
        let (ck, body) = (self.row.clustering().len(), self.body().len());
        varint_len(ck as u64) + ck + varint_len(body as u64) + body
    }

    /// The encoded row body (after the clustering), for reads that locate one
    /// cell without decoding the row ([`crate::encoding::locate_cell`]).
    pub fn body(&self) -> &[u8] {
        self.whole.as_deref().unwrap_or(self.row.body())
    }
}

/// The rows an update replaced: inline for one, the common overwrite (a heap
/// list per update was an allocation and a free each).
type ReplacedRows = smallvec::SmallVec<[RowRef; 1]>;

/// One state of a partition that is not a lone row (glossary), and the link in its
/// partition's version chain (module docs).
struct Version {
    deletion: PartitionDeletion,
    static_row: Option<RowRef>,
    rows: BTree<RowRef>,
    /// The nodes of the previous version that this one replaced.
    replaced: Garbage<RowRef>,
    /// The previous version's rows this one replaced (overwrites): their bytes are
    /// recycled when this version is released, as its nodes are freed.
    replaced_rows: ReplacedRows,
    /// Where those rows go: the free rows of the partition's shard. A version never
    /// outlives its memtable (readers hold the memtable), so this stays valid.
    free_rows: NonNull<Mutex<FreeRows>>,
    /// The row this partition held alone before its first version, if it did: a
    /// reader may still hold it with nothing counting (`Snap::Single`), so it is
    /// never recycled, even once a later version replaces it.
    lone: Option<NonNull<u8>>,
    /// The version that replaced this one; set once, before it is published.
    next: VersionPtr,
}

// SAFETY: a version's trees and rows are immutable and shared read-only (see
// `RowRef`, `NodePtr`); `free_rows` points at a mutex of its memtable, which
// outlives it, and is only used through that mutex.
unsafe impl Send for Version {}
unsafe impl Sync for Version {}

impl Version {
    /// What this version costs beyond its tree's nodes (invariant 3): the Arc's
    /// counters, the struct, the replaced-node list and the deletions' heap.
    fn own_bytes(&self) -> usize {
        16 + size_of::<Version>()
            + self.replaced.len() * size_of::<usize>()
            + if self.replaced_rows.spilled() {
                self.replaced_rows.capacity() * size_of::<RowRef>()
            } else {
                0
            }
            + self.deletion.ranges.capacity() * size_of::<crate::data::RangeTombstone>()
            + self
                .deletion
                .ranges
                .iter()
                .map(|r| r.range.start.prefix.len() + r.range.end.prefix.len())
                .sum::<usize>()
    }

    /// Frees what this version owns alone: the nodes it replaced, and its whole
    /// tree if nothing replaced it. Idempotent: what it frees it forgets.
    ///
    /// # Safety
    /// Every older version of the partition is gone (each holds its successor, so
    /// this one outlives them all), and so is every reader of this one.
    unsafe fn release(&mut self) {
        let replaced = std::mem::take(&mut self.replaced);
        // SAFETY: the replaced nodes belong to older versions only (the update
        // that made this version retired them), and those are gone.
        unsafe { replaced.free() };
        if !self.replaced_rows.is_empty() {
            // SAFETY: see `free_rows`; the rows, like the nodes, were reachable only
            // from older versions, all gone, and from readers of them, also gone
            // (a `MemRow` holds its version).
            let free = unsafe { self.free_rows.as_ref() };
            let mut free = free.lock();
            for r in self.replaced_rows.drain(..) {
                if Some(r.ptr) != self.lone {
                    free.put(r);
                }
            }
        }
        if !self.next.is_set() {
            // SAFETY: no successor: this is the partition's last version, dropped
            // with the memtable after every reader; no other version shares its
            // nodes any more (invariant 5).
            unsafe { self.rows.free() };
        }
        // Freed, or owned by the successors: never this version's again.
        self.rows = BTree::new();
    }
}

impl Drop for Version {
    fn drop(&mut self) {
        // SAFETY: the last holder is letting go (see `release`).
        unsafe { self.release() };
        // Release the successors this was the last holder of iteratively: a reader
        // that held an old version across 100,000 updates would otherwise drop
        // 100,000 versions by recursion.
        let mut next = self.next.take();
        while let Some(v) = next {
            next = match Arc::into_inner(v) {
                Some(mut v) => {
                    // SAFETY: we held the last reference, and its predecessor
                    // (this version) is being dropped.
                    unsafe { v.release() };
                    // `v` drops after this: its release is then a no-op.
                    v.next.take()
                }
                None => None,
            };
        }
    }
}

/// A partition in the arena (glossary): its state, then `[varint key
/// length][key bytes]`.
#[repr(C)]
struct PartRecord {
    state: PartState,
}

impl PartRecord {
    /// Bytes of a record holding `key`.
    fn size_with(key: &[u8]) -> usize {
        size_of::<PartRecord>() + varint_len(key.len() as u64) + key.len()
    }

    /// The partition's key bytes.
    fn key<'a>(&self) -> &'a [u8] {
        let p = (self as *const PartRecord).cast::<u8>();
        // SAFETY: `insert_partition` wrote the key's varint length and bytes
        // right after the state, in the same arena allocation, before the
        // record was reachable; the arena keeps them while the memtable lives.
        unsafe {
            let at = p.add(size_of::<PartRecord>());
            let (len, n) = read_varint(at);
            std::slice::from_raw_parts(at.add(n), len)
        }
    }
}

/// Bit 0 of a [`PartState`]: set for a version, clear for a lone row.
const VERSION_TAG: usize = 1;

/// Rows are allocated at this alignment, so a lone row's pointer leaves bit 0
/// for [`VERSION_TAG`] (half a byte of padding per row on average).
const ROW_ALIGN: usize = 2;

/// A partition's state in one atomic word: its lone row's arena pointer, or its
/// version, an `Arc<Version>`'s raw pointer with [`VERSION_TAG`] set that owns
/// one strong count. One word, not a row pointer beside a version pointer: 8
/// bytes less per partition (issue 15: the memtable's bytes per pair decide
/// how often it flushes), and a reader of a lone row does one load, no more.
/// Replaced only under the shard's writer lock; read by readers without one.
///
/// A lone row needs no protection: its bytes live as long as the arena. A
/// version does. A reader that finds the tag set ([`PartState::snapshot`])
/// announces itself in its shard's `pins`, loads the word again, takes a
/// strong count of its own and withdraws: a few instructions, never a wait. A
/// writer ([`PartState::publish`]) swaps the word, then, if it held a version,
/// waits until no reader of the shard is announced before it lets go of that
/// version's count. All four steps are `SeqCst`, so a reader whose second load
/// saw the old version announced itself before the swap: the writer either
/// sees it announced and waits for it to withdraw, which it does only after
/// taking its count, or sees the withdrawal, which happened after the count was
/// taken. Either way the old version outlives the reader's load. (This
/// replaced `arc_swap::ArcSwapOption`, whose store walks every thread's debt
/// slots: 9% of an overwrite of a hot row.)
#[repr(transparent)]
struct PartState(AtomicPtr<u8>);

impl PartState {
    fn lone(row: RowRef) -> PartState {
        PartState(AtomicPtr::new(Self::lone_word(row)))
    }

    fn of_version(v: Arc<Version>) -> PartState {
        PartState(AtomicPtr::new(Self::version_word(v)))
    }

    fn lone_word(row: RowRef) -> *mut u8 {
        let p = row.ptr.as_ptr();
        debug_assert_eq!(p.addr() & VERSION_TAG, 0, "rows are ROW_ALIGN-aligned");
        p
    }

    fn version_word(v: Arc<Version>) -> *mut u8 {
        // `Version` is pointer-aligned, so bit 0 of its address is free.
        Arc::into_raw(v)
            .cast_mut()
            .cast::<u8>()
            .wrapping_byte_add(VERSION_TAG)
    }

    /// What `word` holds, taking a strong count of a version.
    ///
    /// # Safety
    /// If `word` is a version, its count is held for the call (by the state,
    /// or, for one swapped out, by the writer until the caller withdraws).
    unsafe fn snap_of(word: *mut u8) -> Snap {
        if word.addr() & VERSION_TAG == 0 {
            return match NonNull::new(word) {
                Some(p) => Snap::Single(RowRef::at(p)),
                None => Snap::Empty,
            };
        }
        let v = word.wrapping_byte_sub(VERSION_TAG).cast::<Version>();
        // SAFETY: `v` came from `Arc::into_raw` (`version_word`); its count is
        // held (the caller's promise).
        unsafe {
            Arc::increment_strong_count(v);
            Snap::Tree(Arc::from_raw(v))
        }
    }

    /// The state now, for a reader (any thread, no lock); `pins` is the
    /// partition's shard's.
    fn snapshot(&self, pins: &AtomicU32) -> Snap {
        let word = self.0.load(Ordering::Acquire);
        if word.addr() & VERSION_TAG == 0 {
            // SAFETY: not a version: nothing to count.
            return unsafe { Self::snap_of(word) };
        }
        pins.fetch_add(1, Ordering::SeqCst);
        let word = self.0.load(Ordering::SeqCst);
        // SAFETY: announced before this load (type docs).
        let snap = unsafe { Self::snap_of(word) };
        pins.fetch_sub(1, Ordering::Release);
        snap
    }

    /// The state for the writer holding the shard's writer lock: no one else
    /// replaces it meanwhile, so no announcement is needed.
    fn snapshot_locked(&self) -> Snap {
        // SAFETY: only the caller could swap a version out.
        unsafe { Self::snap_of(self.0.load(Ordering::Acquire)) }
    }

    /// The lone row's pointer, as a prefetch hint: null for a version.
    fn lone_hint(&self) -> *const u8 {
        let word = self.0.load(Ordering::Relaxed);
        if word.addr() & VERSION_TAG == 0 {
            word
        } else {
            std::ptr::null()
        }
    }

    /// Publishes a new lone row over a lone row (under the shard's writer lock).
    fn set_lone(&self, row: RowRef) {
        debug_assert_eq!(
            self.0.load(Ordering::Relaxed).addr() & VERSION_TAG,
            0,
            "a version never becomes a lone row again"
        );
        self.0.store(Self::lone_word(row), Ordering::Release);
    }

    /// Publishes `v` (under the shard's writer lock; `None` only when the
    /// memtable is dropped) and drops the old version's count, if the state held
    /// one, once no reader can be taking one from it.
    fn publish(&self, v: Option<Arc<Version>>, pins: &AtomicU32) {
        let word = v.map_or(std::ptr::null_mut(), Self::version_word);
        let old = self.0.swap(word, Ordering::SeqCst);
        if old.addr() & VERSION_TAG == 0 {
            // A lone row (or nothing): no count to drop, and its bytes stay.
            return;
        }
        let mut spins = 0u32;
        while pins.load(Ordering::SeqCst) != 0 {
            // A reader is inside `snapshot` for a few instructions; yield only
            // if it was descheduled there.
            if spins < 128 {
                std::hint::spin_loop();
                spins += 1;
            } else {
                std::thread::yield_now();
            }
        }
        let old = old.wrapping_byte_sub(VERSION_TAG).cast::<Version>();
        // SAFETY: the count this state held; no reader is between its load of
        // `old` and its own count (type docs).
        drop(unsafe { Arc::from_raw(old) });
    }
}

/// A version chain's link: an `Option<Arc<Version>>` in one atomic pointer (the
/// `Arc`'s raw pointer, owning one strong count; null for none), set once by the
/// writer before the version it points to is published, so readers reach it only
/// through a [`PartState::publish`] and need no protocol of their own.
struct VersionPtr(AtomicPtr<Version>);

impl VersionPtr {
    fn empty() -> VersionPtr {
        VersionPtr(AtomicPtr::new(std::ptr::null_mut()))
    }

    /// Sets the link: once, by the writer, before the version it points to is
    /// published.
    fn set_once(&self, v: Arc<Version>) {
        let old = self.0.swap(Arc::into_raw(v).cast_mut(), Ordering::Release);
        debug_assert!(old.is_null(), "a version's successor is set once");
    }

    /// Takes the version out, with `&mut` access (no reader can hold the
    /// pointer).
    fn take(&mut self) -> Option<Arc<Version>> {
        let p = std::mem::replace(self.0.get_mut(), std::ptr::null_mut());
        // SAFETY: the pointer's own count, moved out.
        NonNull::new(p).map(|p| unsafe { Arc::from_raw(p.as_ptr()) })
    }

    fn is_set(&self) -> bool {
        !self.0.load(Ordering::Acquire).is_null()
    }
}

impl Drop for VersionPtr {
    fn drop(&mut self) {
        drop(self.take());
    }
}

/// What a reader holds of a partition: a lone row, or a version.
enum Snap {
    Single(RowRef),
    Tree(Arc<Version>),
    Empty,
}

/// A shard set entry: the token and the partition's record, whose key bytes
/// follow it. Sixteen bytes: std's B-tree set then takes about 27 bytes per
/// entry, against 39 when the entry also carried the key's pointer and length
/// (`MAP_ENTRY_OVERHEAD_BYTES`). A lookup's probe carries its own key instead:
/// `at` then points at the caller's `Arc<[u8]>` with [`PROBE_TAG`] set.
#[derive(Clone, Copy)]
struct PartKey {
    token: i64,
    at: NonNull<u8>,
}

// The sizes the accounting and the module docs assume.
const _: () = assert!(size_of::<PartKey>() == 16 && size_of::<PartRecord>() == size_of::<usize>());

/// Bit 0 of [`PartKey::at`]: set for a probe (records and `Arc`s are
/// pointer-aligned, so the bit is free in both).
const PROBE_TAG: usize = 1;

// SAFETY: an entry points at an immutable record's key in the arena (or, for a
// probe, at the caller's key for the duration of one lookup).
unsafe impl Send for PartKey {}
unsafe impl Sync for PartKey {}

impl PartKey {
    fn probe(k: &DecoratedKey) -> PartKey {
        PartKey {
            token: k.token,
            at: NonNull::from(&k.key)
                .cast::<u8>()
                .map_addr(|a| a | PROBE_TAG),
        }
    }

    fn entry(token: i64, record: NonNull<PartRecord>) -> PartKey {
        PartKey {
            token,
            at: record.cast::<u8>(),
        }
    }

    fn is_probe(&self) -> bool {
        self.at.addr().get() & PROBE_TAG != 0
    }

    fn bytes<'a>(&self) -> &'a [u8] {
        if self.is_probe() {
            let key = self
                .at
                .as_ptr()
                .wrapping_byte_sub(PROBE_TAG)
                .cast::<Arc<[u8]>>();
            // SAFETY: a probe points at the caller's key, borrowed while the
            // lookup runs (`probe`).
            let key: &'a Arc<[u8]> = unsafe { &*key };
            return key;
        }
        self.record().key()
    }

    /// The record of an entry taken from a shard set (never of a probe).
    fn record<'a>(&self) -> &'a PartRecord {
        debug_assert!(!self.is_probe(), "a probe has no record");
        // SAFETY: set entries are made by `insert_partition` from a record in
        // the arena, which keeps it alive with the memtable.
        unsafe { self.at.cast::<PartRecord>().as_ref() }
    }

    fn decorated(&self) -> DecoratedKey {
        DecoratedKey {
            token: self.token,
            key: Arc::from(self.bytes()),
        }
    }
}

impl PartialEq for PartKey {
    fn eq(&self, other: &Self) -> bool {
        self.cmp(other) == std::cmp::Ordering::Equal
    }
}

impl Eq for PartKey {}

impl PartialOrd for PartKey {
    fn partial_cmp(&self, other: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}

impl Ord for PartKey {
    fn cmp(&self, other: &Self) -> std::cmp::Ordering {
        self.token
            .cmp(&other.token)
            .then_with(|| self.bytes().cmp(other.bytes()))
    }
}

/// One token-range shard, on cache lines of its own (two writers on neighbouring
/// shards must not bounce one line).
#[repr(align(128))]
struct Shard {
    set: RwLock<BTreeSet<PartKey>>,
    /// Serialises this shard's writers: partition creation and every update of a
    /// partition's state. Guards the shard's versioned records.
    writer: Mutex<Versioned>,
    /// Arena rows no reader can reach any more, for reuse by this shard's writers.
    free_rows: Mutex<FreeRows>,
    /// Readers inside [`VersionPtr::load`] of one of this shard's partitions.
    pins: AtomicU32,
}

/// The records of a shard that have a version, so dropping the memtable
/// releases versions without visiting every record: a lone-row partition has
/// none, and storing `None` into each of a million records' version
/// (plus the cache miss to reach each) was 3-4% of `stress write`'s CPU on
/// the flush thread.
#[derive(Default)]
struct Versioned(Vec<NonNull<PartRecord>>);

// SAFETY: the pointers are to records in the memtable's arena, which outlives
// the shard; they are only dereferenced by `Memtable::drop`.
unsafe impl Send for Versioned {}

/// Replaced rows' arena bytes awaiting reuse, by exact encoded size (module docs,
/// "Recycling replaced rows").
#[derive(Default)]
struct FreeRows {
    by_size: std::collections::HashMap<usize, Vec<NonNull<u8>>, SizeHash>,
}

/// Hashing for [`FreeRows`]' keys, row sizes that only this memtable chooses:
/// a multiply, not SipHash's flooding defence (1.3% of a hot-row overwrite).
type SizeHash = crate::hash::IntHash;

// SAFETY: the pointers are dead arena rows, owned by this list, used only under its
// shard's mutex.
unsafe impl Send for FreeRows {}

impl FreeRows {
    fn put(&mut self, row: RowRef) {
        self.by_size
            .entry(row.encoded_len())
            .or_default()
            .push(row.ptr);
    }

    fn take(&mut self, size: usize) -> Option<NonNull<u8>> {
        if self.by_size.is_empty() {
            return None;
        }
        self.by_size.get_mut(&size)?.pop()
    }
}

/// A partition of a memtable, for a flush or a scan: valid while the memtable is
/// borrowed.
#[derive(Clone, Copy)]
pub struct PartRef<'m> {
    key: PartKey,
    memtable: &'m Memtable,
}

impl std::fmt::Debug for PartRef<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PartRef(token {})", self.key.token)
    }
}

impl PartRef<'_> {
    pub fn token(&self) -> i64 {
        self.key.token
    }

    pub fn key_bytes(&self) -> &[u8] {
        self.key.bytes()
    }

    pub fn decorated_key(&self) -> DecoratedKey {
        self.key.decorated()
    }

    /// Rows the partition holds now.
    pub fn row_count(&self) -> usize {
        match self.memtable.snapshot(&self.key) {
            Snap::Single(_) => 1,
            Snap::Tree(v) => v.rows.len(),
            Snap::Empty => 0,
        }
    }
}

/// How far ahead [`Memtable::for_each_encoded`] prefetches partition records,
/// and lone rows (whose pointer needs the record first, so fewer entries
/// ahead). Eight misses in flight is about what a core's fill buffers hold.
const PREFETCH_RECORDS: usize = 8;
const PREFETCH_ROWS: usize = 4;

/// Asks the CPU to bring the cache line at `p` in. A hint: it never faults,
/// whatever `p` is, and is a no-op where there is no such instruction.
#[inline(always)]
fn prefetch(p: *const u8) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: `prefetcht0` has no architectural effect and never faults, for
    // any address.
    unsafe {
        std::arch::x86_64::_mm_prefetch(p.cast::<i8>(), std::arch::x86_64::_MM_HINT_T0)
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

/// A reusable row list for [`Memtable::with_encoded`], so a flush does not
/// allocate one per partition. Its slices are `'static` only in type: they
/// point into a snapshot that lives only during the call that filled them, so
/// nothing outside this module can read them (the field is private) and each
/// call clears them before refilling.
#[derive(Default)]
struct EncodedScratch {
    rows: Vec<EncodedRow<'static>>,
}

/// One shard's share of the memtable's statistics, on a cache line of its
/// own. Each write updates the counters of its partition's shard, so two
/// writers meet on a counter only when they write to the same shard (1 in
/// [`SHARDS`] for random keys); readers (`tablestats`, flush) add the shards
/// up. One set of shared counters cost every write four atomic updates on a
/// line every writer thread bounced between cores (BENCHMARKS.md, "Write path
/// (issue 15)").
///
/// Changed only by the writer holding the shard's writer lock, so with a plain
/// load and store ([`bump`]) rather than a locked read-modify-write: four of
/// those per mutation were 4% of a hot-row overwrite. Atomic so that any
/// thread may read them. The running bounds (invariant 4) are per shard for
/// the same reason: one memtable-wide newest timestamp was a line that every
/// write moved, bouncing between two writers' cores.
#[derive(Debug, Default)]
#[repr(align(128))]
struct ShardCounters {
    data_bytes: AtomicU64,
    cell_count: AtomicU64,
    partition_count: AtomicU64,
    operation_count: AtomicU64,
    /// Node, version and set-entry bytes of this shard (invariant 3); the arena
    /// counts the rest.
    other_bytes: AtomicI64,
    bounds: Bounds,
}

/// Adds `v` to a shard counter; the caller holds the shard's writer lock (the
/// only writer of its counters), so no update can slip in between.
fn bump(counter: &AtomicU64, v: u64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(v),
        Ordering::Relaxed,
    );
}

/// [`bump`] for the signed byte counter.
fn bump_signed(counter: &AtomicI64, v: i64) {
    counter.store(
        counter.load(Ordering::Relaxed).wrapping_add(v),
        Ordering::Relaxed,
    );
}

/// Running bounds over everything applied to one shard (invariant 4); the
/// memtable's are the bounds of its shards'.
#[derive(Debug)]
struct Bounds {
    min_timestamp: AtomicI64,
    max_timestamp: AtomicI64,
    min_local_deletion: AtomicI64,
    min_ttl: AtomicU64,
}

impl Default for Bounds {
    /// Nothing seen: every bound at its sentinel.
    fn default() -> Self {
        Bounds {
            min_timestamp: AtomicI64::new(i64::MAX),
            max_timestamp: AtomicI64::new(NO_TIMESTAMP),
            min_local_deletion: AtomicI64::new(NO_DELETION_TIME),
            min_ttl: AtomicU64::new(u64::MAX),
        }
    }
}

/// What one `apply` did, for table metrics.
#[derive(Clone, Copy, Debug, Default)]
pub struct ApplyResult {
    pub rows_inserted: usize,
    pub rows_merged: usize,
}

pub struct Memtable {
    id: u64,
    base: EncodingBase,
    shards: Box<[Shard]>,
    /// Indexed like `shards`.
    counters: Box<[ShardCounters]>,
    created_micros: i64,
    /// Commit-log position when this memtable was switched out: every record
    /// before it that belongs to this table is in this memtable or older ones.
    flush_position: OnceLock<crate::manifest::ReplayPosition>,
    /// Last: the records' versions are released (in `Drop`) before the blocks
    /// holding them go.
    arena: Arena,
}

// SAFETY: the raw pointers inside (set entries, row handles in trees) point into
// `arena`, which lives as long as the memtable, at bytes written before their
// handles were published (release stores, `VersionPtr` swaps, or under the shard's lock);
// every mutation of shared state goes through locks or atomics.
unsafe impl Send for Memtable {}
unsafe impl Sync for Memtable {}

impl std::fmt::Debug for Memtable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Memtable")
            .field("id", &self.id)
            .field("partitions", &self.partition_count())
            .field("memory_bytes", &self.memory_bytes())
            .finish()
    }
}

impl Drop for Memtable {
    fn drop(&mut self) {
        // Shared access only: releasing a version locks its shard's free rows
        // through the version's own pointer, which must not alias a `&mut Shard`.
        for shard in self.shards.iter() {
            let versioned = std::mem::take(&mut shard.writer.lock().0);
            for record in versioned {
                // No reader or writer remains (each reader holds the memtable).
                // Storing `None` releases the version, and through it the last
                // tree and the replaced nodes; an empty `VersionPtr` owns
                // nothing, so no record needs a drop before the arena frees
                // its bytes after this (lone-row records never had a version).
                // SAFETY: a record in this memtable's arena, alive until the
                // arena is dropped after this body.
                unsafe { record.as_ref() }.state.publish(None, &shard.pins);
            }
        }
    }
}

/// How a stored row and an incoming row of its clustering reconcile, decided
/// on the stored bytes without building the stored row.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Verdict {
    /// The incoming row wins every part (`stored.superseded_by(incoming)`):
    /// it is stored as it came. Hot rows overwrite so.
    Incoming,
    /// The stored row wins every part (`incoming.superseded_by(stored)`): the
    /// merge would rebuild the stored row, so nothing changes. Two writers of
    /// one hot row race, and about half their overwrites arrive behind a
    /// newer one.
    Stored,
    /// Neither wins whole: decode and merge.
    Merge,
    /// It cannot say (complex cells, which are encoded out of the position
    /// order this walk needs, counter cells, which merge, or bytes that do
    /// not parse): decode, then decide on the rows.
    Unknown,
}

/// What reconciling an update's row with the stored row of its clustering
/// stores.
enum Merged {
    /// The stored row wins whole: nothing is written.
    Kept,
    /// A new plain row replaces the stored one, whose bytes are dead once no
    /// reader can reach them.
    Replaces(RowRef),
    /// A chained row extends the stored one, which it still reads through.
    Extends(RowRef),
}

/// Rows below this many encoded bytes are never extended by a chained row:
/// copying them costs about what a link does, and keeps a read to one decode.
const CHAIN_MIN_ROW_BYTES: u64 = 512;

/// The [`Verdict`] for the stored row whose body is `body` (encoded against
/// `base`) and `incoming`, in one walk of the stored cells that stops as soon
/// as neither side can win whole. Deciding it by decoding the stored row into a
/// `Row` (an allocation per cell) was a third of a hot-row overwrite.
fn reconcile_verdict(body: &[u8], base: &EncodingBase, incoming: &Row) -> Verdict {
    struct Walk<'n> {
        incoming: &'n Row,
        theirs: std::iter::Peekable<std::slice::Iter<'n, crate::data::Cell>>,
        incoming_wins: bool,
        stored_wins: bool,
        /// A complex cell met while a side could still win.
        complex: bool,
    }
    impl<'a> RowVisitor<'a> for Walk<'_> {
        fn row(&mut self, liveness: &LivenessInfo, deletion: &DeletionTime, _cells: usize) {
            // `Row::superseded_by`'s row-level test, each way round.
            let n = self.incoming;
            self.incoming_wins =
                liveness.merge(n.liveness) == n.liveness && deletion.max(n.deletion) == n.deletion;
            self.stored_wins =
                n.liveness.merge(*liveness) == *liveness && n.deletion.max(*deletion) == *deletion;
        }
        fn cell(&mut self, c: CellView<'a>) {
            // Counter cells merge rather than replace (`data.rs` invariant 6).
            if c.path.is_some() || c.kind == crate::data::CellKind::Counter {
                self.complex = true;
                return;
            }
            // Both rows' cells in position order, merged: a cell one side has
            // and the other lacks, or a shared cell whose timestamp is not
            // greater on one side, means that side does not win whole.
            loop {
                let Some(n) = self.theirs.peek() else {
                    self.incoming_wins = false;
                    return;
                };
                match (n.column, n.path.as_deref()).cmp(&(c.column, c.path)) {
                    std::cmp::Ordering::Less => {
                        self.stored_wins = false;
                        self.theirs.next();
                    }
                    std::cmp::Ordering::Equal => {
                        self.incoming_wins &= n.timestamp_micros > c.timestamp_micros;
                        self.stored_wins &= c.timestamp_micros > n.timestamp_micros;
                        self.theirs.next();
                        return;
                    }
                    std::cmp::Ordering::Greater => {
                        self.incoming_wins = false;
                        return;
                    }
                }
            }
        }
        fn wants_more(&self) -> bool {
            !self.complex && (self.incoming_wins || self.stored_wins)
        }
    }
    let mut walk = Walk {
        incoming,
        theirs: incoming.cells.iter().peekable(),
        incoming_wins: false,
        stored_wins: false,
        complex: false,
    };
    if visit_row(&mut Reader::new(body), base, &mut walk).is_err() || walk.complex {
        return Verdict::Unknown;
    }
    if walk.theirs.next().is_some() {
        // An incoming cell the stored row lacks.
        walk.stored_wins = false;
    }
    if walk.stored_wins {
        Verdict::Stored
    } else if walk.incoming_wins {
        Verdict::Incoming
    } else {
        Verdict::Merge
    }
}

/// The rows of `update` strictly increasing by clustering: as they are when the
/// update keeps its invariant, folded with `Row::merge` when it does not (the write
/// path must neither panic nor drop data).
fn sorted_rows(update: &PartitionUpdate) -> Cow<'_, [Row]> {
    let rows = &update.rows;
    if rows.windows(2).all(|w| w[0].clustering < w[1].clustering) {
        return Cow::Borrowed(rows);
    }
    let mut folded = PartitionUpdate::new(update.key.clone());
    for r in rows {
        folded.add_row(r.clone());
    }
    Cow::Owned(folded.rows)
}

impl Memtable {
    /// An empty memtable; `now_micros` anchors its timestamp deltas.
    pub fn new(id: u64, now_micros: i64) -> Memtable {
        let shards = (0..SHARDS)
            .map(|_| Shard {
                set: RwLock::new(BTreeSet::new()),
                writer: Mutex::new(Versioned::default()),
                free_rows: Mutex::new(FreeRows::default()),
                pins: AtomicU32::new(0),
            })
            .collect();
        Memtable {
            id,
            base: EncodingBase {
                row_ts_bytes: ROW_TS_BYTES,
                ..EncodingBase::around(now_micros)
            },
            shards,
            counters: (0..SHARDS).map(|_| ShardCounters::default()).collect(),
            created_micros: now_micros,
            flush_position: OnceLock::new(),
            arena: Arena::new(),
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

    /// Structure + data bytes (invariant 3): arena bytes handed out, tree nodes,
    /// versions, and the shard sets' entries. The arena's unused block tails are
    /// left out (`arena_bytes` has them): at most 4 MiB, which a small flush
    /// threshold must not mistake for data.
    pub fn memory_bytes(&self) -> u64 {
        let fixed = size_of::<Memtable>()
            + SHARDS * (size_of::<Shard>() + size_of::<ShardCounters>())
            + arena::LANES * 128;
        let other: i64 = self
            .counters
            .iter()
            .map(|c| c.other_bytes.load(Ordering::Relaxed))
            .sum();
        fixed as u64 + self.arena.used_bytes() + other.max(0) as u64
    }

    /// Bytes of the arena's blocks alone (rows and partition records, replaced
    /// rows included until the flush; unused block tails included).
    pub fn arena_bytes(&self) -> u64 {
        self.arena.allocated_bytes()
    }

    /// Bytes the arena handed out (`arena_bytes` less the unused block tails).
    pub fn arena_used_bytes(&self) -> u64 {
        self.arena.used_bytes()
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
        let ts = self.bound(|b| &b.min_timestamp, i64::MAX, i64::min);
        (ts != i64::MAX).then_some(ts)
    }

    pub fn max_timestamp(&self) -> i64 {
        self.bound(|b| &b.max_timestamp, NO_TIMESTAMP, i64::max)
    }

    /// One signed bound over every shard: `pick` folds the shards' values
    /// from `init`, the value of a shard that saw nothing.
    fn bound(
        &self,
        field: impl Fn(&Bounds) -> &AtomicI64,
        init: i64,
        pick: fn(i64, i64) -> i64,
    ) -> i64 {
        self.counters
            .iter()
            .map(|c| field(&c.bounds).load(Ordering::Relaxed))
            .fold(init, pick)
    }

    /// Lower bounds of every timestamp, deletion time and TTL applied: the encoding
    /// base of the sstable this memtable flushes to (invariant 4).
    pub fn encoding_base(&self) -> EncodingBase {
        let min_ts = self.bound(|b| &b.min_timestamp, i64::MAX, i64::min);
        let min_ldt = self.bound(|b| &b.min_local_deletion, NO_DELETION_TIME, i64::min);
        let min_ttl = self
            .counters
            .iter()
            .map(|c| c.bounds.min_ttl.load(Ordering::Relaxed))
            .min()
            .unwrap_or(u64::MAX);
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
            // The memtable's steady width (the span is unknown while it
            // fills); a flush replaces it with the width of the data's span
            // (`Table::write_sstables`).
            row_ts_bytes: self.base.row_ts_bytes,
        }
    }

    /// The base under which a flush can copy this memtable's encoded rows as
    /// they are ([`Memtable::for_each_encoded`]): the rows' own base, when it is a
    /// lower bound of every timestamp, deletion time and TTL applied, as an
    /// sstable's base must be (salvage rejects data below its base). `None`
    /// when something older went in (a client timestamp in the past, a
    /// commit-log replay): the flush then decodes and encodes against
    /// [`Memtable::encoding_base`].
    pub fn copy_base(&self) -> Option<EncodingBase> {
        let exact = self.encoding_base();
        let own = self.base;
        (own.min_timestamp <= exact.min_timestamp
            && own.min_local_deletion <= exact.min_local_deletion
            && own.min_ttl <= exact.min_ttl)
            .then_some(own)
    }

    /// Widens shard `si`'s bounds over `update` (under the shard's writer
    /// lock, as every writer of them).
    fn note_bounds(&self, si: usize, update: &PartitionUpdate) {
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
        // Stored only on a change (most writes move no bound but the newest
        // timestamp); a plain store suffices as the shard's lock holder is
        // the only writer of its bounds.
        let b = &self.counters[si].bounds;
        if min_ts < b.min_timestamp.load(Ordering::Relaxed) {
            b.min_timestamp.store(min_ts, Ordering::Relaxed);
        }
        if max_ts > b.max_timestamp.load(Ordering::Relaxed) {
            b.max_timestamp.store(max_ts, Ordering::Relaxed);
        }
        if min_ldt < b.min_local_deletion.load(Ordering::Relaxed) {
            b.min_local_deletion.store(min_ldt, Ordering::Relaxed);
        }
        if min_ttl < b.min_ttl.load(Ordering::Relaxed) {
            b.min_ttl.store(min_ttl, Ordering::Relaxed);
        }
    }

    /// Encodes `row` into the arena: the body into this thread's scratch (large
    /// values spliced, not copied), then clustering and body straight into one
    /// allocation of the exact size: a recycled row of that size from shard
    /// `si`'s free rows if there is one, new arena bytes otherwise.
    fn write_row(&self, si: usize, row: &Row) -> RowRef {
        self.encode_then(row, |body, splices| {
            self.place(si, &row.clustering, body, splices, None)
        })
    }

    /// `row` encoded against the memtable's base into the thread's scratch
    /// (large values left out, as splices), handed to `then`.
    fn encode_then<R>(&self, row: &Row, then: impl FnOnce(&[u8], &[(usize, &[u8])]) -> R) -> R {
        let mut body = ROW_SCRATCH.with(|b| b.take());
        body.clear();
        let mut splices = Vec::new();
        encode_row_spliced_steady(row, &self.base, &mut body, &mut splices);
        let out = then(&body, &splices);
        drop(splices);
        if body.capacity() <= ROW_SCRATCH_KEEP_BYTES {
            // During thread teardown the slot may be gone; the buffer is then freed.
            let _ = ROW_SCRATCH.try_with(|b| b.set(body));
        }
        out
    }

    /// Writes a row into the arena (or a recycled row of its exact size):
    /// clustering `ck`, the body `body` with `splices` inserted at their
    /// offsets, and `link` after it for a chained row.
    fn place(
        &self,
        si: usize,
        ck: &[u8],
        body: &[u8],
        splices: &[(usize, &[u8])],
        link: Option<Link>,
    ) -> RowRef {
        let body_len = body.len() + splices.iter().map(|(_, v)| v.len()).sum::<usize>();
        let head = ck.len() << 1 | usize::from(link.is_some());
        let total = varint_len(head as u64)
            + ck.len()
            + varint_len(body_len as u64)
            + body_len
            + if link.is_some() { LINK_BYTES } else { 0 };
        let recycled = self.shards[si].free_rows.lock().take(total);
        let dst = recycled.unwrap_or_else(|| self.arena.alloc(total, ROW_ALIGN));
        let mut w = RawWriter {
            ptr: dst.as_ptr(),
            len: total,
            at: 0,
        };
        w.varint(head);
        w.put(ck);
        w.varint(body_len);
        let mut from = 0;
        for &(pos, v) in splices {
            w.put(&body[from..pos]);
            w.put(v);
            from = pos;
        }
        w.put(&body[from..]);
        if let Some(l) = link {
            w.put(&(l.prev.as_ptr() as usize as u64).to_le_bytes());
            w.put(&l.base_len.to_le_bytes());
            w.put(&l.chain_bytes.to_le_bytes());
        }
        // Every byte of the row must be written before its handle exists.
        assert_eq!(w.at, total, "row shorter than its allocation");
        RowRef {
            ptr: dst,
            prefix: key_prefix(ck),
        }
    }

    /// The link a row of `extra` encoded bytes (link excluded) would carry to
    /// extend `old`, or `None` when `old` should not be extended: it is small
    /// (a copy costs little and keeps reads to one decode), or its chain would
    /// pass half its plain row's bytes (then it is folded into a new plain
    /// row). Extending costs the update's bytes; folding costs the row's once
    /// per half a row of updates: amortised O(1) bytes per element write
    /// however large the collection.
    fn extension(old: RowRef, extra: usize) -> Option<Link> {
        let (base_len, chain_bytes) = match old.link() {
            Some(l) => (l.base_len, l.chain_bytes),
            None => (old.encoded_len() as u64, 0),
        };
        let chain_bytes = chain_bytes + (extra + LINK_BYTES) as u64;
        (base_len >= CHAIN_MIN_ROW_BYTES && chain_bytes <= base_len / 2).then_some(Link {
            prev: old.ptr,
            base_len,
            chain_bytes,
        })
    }

    /// `new` written as a chained row extending `old`, if [`Self::extension`]
    /// allows it.
    fn extend(&self, si: usize, old: RowRef, new: &Row) -> Option<RowRef> {
        // Most rows are small: no encoding to find that out.
        Self::extension(old, 0)?;
        self.encode_then(new, |body, splices| {
            let ck = &new.clustering;
            let len = body.len() + splices.iter().map(|(_, v)| v.len()).sum::<usize>();
            let extra =
                varint_len((ck.len() << 1) as u64) + ck.len() + varint_len(len as u64) + len;
            let link = Self::extension(old, extra)?;
            Some(self.place(si, ck, body, splices, Some(link)))
        })
    }

    /// `new` reconciled with the stored row `old` (see [`Merged`]).
    fn merge_into(&self, si: usize, old: RowRef, new: &Row) -> Merged {
        if old.is_chained() {
            // No verdict: it would need the whole chain decoded.
            if let Some(r) = self.extend(si, old, new) {
                return Merged::Extends(r);
            }
            return Merged::Replaces(match old.decode(&self.base) {
                Some(o) => self.write_row(si, &o.merge(new.clone())),
                // Unreachable unless the memtable corrupted its own encoding; keep
                // the newer version rather than panic on the write path.
                None => self.write_row(si, new),
            });
        }
        let verdict = reconcile_verdict(old.body(), &self.base, new);
        match verdict {
            Verdict::Stored => return Merged::Kept,
            // Stored as it came: no copy of the update's row and no merged row
            // to build.
            Verdict::Incoming => return Merged::Replaces(self.write_row(si, new)),
            Verdict::Merge | Verdict::Unknown => {}
        }
        if let Some(r) = self.extend(si, old, new) {
            return Merged::Extends(r);
        }
        let unknown = verdict == Verdict::Unknown;
        Merged::Replaces(match old.decode(&self.base) {
            // What the verdict could not tell (complex cells) told here.
            Some(o) if unknown && new.superseded_by(&o) => return Merged::Kept,
            Some(o) if unknown && o.superseded_by(new) => self.write_row(si, new),
            Some(o) => self.write_row(si, &o.merge(new.clone())),
            // Unreachable unless the memtable corrupted its own encoding; keep the
            // newer version rather than panic on the write path.
            None => self.write_row(si, new),
        })
    }

    /// Two stored rows of one clustering reconciled into a new arena row; `new`
    /// was never published, so its bytes are free again at once. `old` goes to
    /// `replaced` unless the result extends it.
    fn merge_stored(
        &self,
        si: usize,
        old: RowRef,
        new: RowRef,
        replaced: &mut ReplacedRows,
    ) -> RowRef {
        let extra = new.encoded_len();
        if let Some(link) = Self::extension(old, extra) {
            let row = self.place(si, new.clustering(), new.body(), &[], Some(link));
            self.shards[si].free_rows.lock().put(new);
            return row;
        }
        replaced.push(old);
        match (old.decode(&self.base), new.decode(&self.base)) {
            (Some(o), Some(n)) => {
                let merged = self.write_row(si, &o.merge(n));
                self.shards[si].free_rows.lock().put(new);
                merged
            }
            // Unreachable unless the memtable corrupted its own encoding; keep the
            // newer version rather than panic on the write path.
            _ => new,
        }
    }

    /// The merged body of a chained row, encoded against the memtable's base
    /// (for a flush or a value read, which need the row's bytes whole);
    /// `None` for a plain row, whose own body is the row.
    fn whole_body(&self, r: RowRef) -> Option<Vec<u8>> {
        if !r.is_chained() {
            return None;
        }
        let mut out = Vec::new();
        match r.decode(&self.base) {
            Some(row) => crate::encoding::encode_row(&row, &self.base, &mut out),
            // Unreachable unless the memtable corrupted its own encoding: the
            // newest update's bytes, as the write path keeps them then.
            None => out.extend_from_slice(r.body()),
        }
        Some(out)
    }

    /// The arena rows for `rows`, each already reconciled with the stored row of
    /// the same clustering (`existing`), so the tree only replaces: a row is
    /// encoded once, not once alone and once merged (issue 15: an overwrite left
    /// two rows in the arena). A row the stored one wins against entirely
    /// ([`Verdict::Stored`]) is left out: the merge would rebuild the stored
    /// row.
    /// Returns the batch, the stored rows it replaces, and how many rows were
    /// left out so.
    fn prepare_rows(
        &self,
        si: usize,
        rows: &[Row],
        existing: impl Fn(&[u8]) -> Option<RowRef>,
    ) -> (Vec<RowRef>, ReplacedRows, usize) {
        let mut replaced = ReplacedRows::new();
        let mut batch = Vec::with_capacity(rows.len());
        let mut absorbed = 0;
        for r in rows {
            match existing(&r.clustering) {
                Some(old) => match self.merge_into(si, old, r) {
                    Merged::Replaces(merged) => {
                        replaced.push(old);
                        batch.push(merged);
                    }
                    // `old` is still read through its extension: not replaced.
                    Merged::Extends(row) => batch.push(row),
                    Merged::Kept => absorbed += 1,
                },
                None => batch.push(self.write_row(si, r)),
            }
        }
        (batch, replaced, absorbed)
    }

    /// Applies one partition update atomically: a reader sees all of it or none.
    pub fn apply(&self, update: &PartitionUpdate) -> ApplyResult {
        let data: u64 = update
            .rows
            .iter()
            .chain(update.static_row.iter())
            .map(|r| {
                r.clustering.len() as u64
                    + r.cells.iter().map(|c| c.value.len() as u64).sum::<u64>()
            })
            .sum();
        let si = shard_of(update.key.token);
        let rows = sorted_rows(update);
        let shard = &self.shards[si];
        let mut versioned = shard.writer.lock();
        // Widened before the rows go in, as they were before the lock.
        self.note_bounds(si, update);
        let c = &self.counters[si];
        bump(&c.data_bytes, data);
        bump(&c.cell_count, update.cell_count() as u64);
        bump(&c.operation_count, 1);
        // SAFETY: the set changes only under the shard's writer lock, held
        // here, so no write can run beside this read; readers share it as they
        // would under a read lock (two locked read-modify-writes less). The
        // borrow ends here, before `insert_partition` takes the write lock.
        let found = unsafe { &*shard.set.data_ptr() }
            .get(&PartKey::probe(&update.key))
            .copied();
        match found {
            None => self.insert_partition(si, update, &rows, &mut versioned),
            Some(key) => self.update_partition(si, key.record(), update, &rows, &mut versioned),
        }
    }

    /// A partition's first version: `update`'s deletions and static row over
    /// `rows`; `lone` is the row the partition held alone before, if any.
    fn first_version(
        &self,
        si: usize,
        update: &PartitionUpdate,
        rows: BTree<RowRef>,
        lone: Option<NonNull<u8>>,
    ) -> Version {
        Version {
            deletion: update.deletion.clone(),
            static_row: update.static_row.as_ref().map(|r| self.write_row(si, r)),
            rows,
            replaced: Garbage::new(),
            replaced_rows: ReplacedRows::new(),
            free_rows: NonNull::from(&self.shards[si].free_rows),
            lone,
            next: VersionPtr::empty(),
        }
    }

    /// Creates a partition (under its shard's writer lock).
    fn insert_partition(
        &self,
        si: usize,
        update: &PartitionUpdate,
        rows: &[Row],
        versioned: &mut Versioned,
    ) -> ApplyResult {
        let key = &update.key.key;
        let lone = rows.len() == 1 && update.static_row.is_none() && deletion_is_empty(update);
        let has_version = !lone;
        let (state, other) = if lone {
            (PartState::lone(self.write_row(si, &rows[0])), 0)
        } else {
            let (batch, _, _) = self.prepare_rows(si, rows, |_| None);
            let mut unused = Garbage::new();
            let (tree, _) = match BTree::new().try_update(batch, |_, n| n, &mut unused) {
                Ok(t) => t,
                // `sorted_rows` made the clusterings strictly increasing.
                Err(e) => unreachable!("sorted rows rejected: {e}"),
            };
            let v = self.first_version(si, update, tree, None);
            let bytes = v.own_bytes() + tree.node_bytes();
            (PartState::of_version(Arc::new(v)), bytes)
        };
        let record_bytes = PartRecord::size_with(key);
        let rec = self
            .arena
            .alloc(record_bytes, std::mem::align_of::<PartRecord>())
            .cast::<PartRecord>();
        let mut w = RawWriter {
            ptr: rec.as_ptr().cast::<u8>(),
            len: record_bytes,
            at: size_of::<PartRecord>(),
        };
        w.varint(key.len());
        w.put(key);
        // Every byte of the record must be written before it is reachable.
        assert_eq!(w.at, record_bytes, "record shorter than its allocation");
        // SAFETY: a fresh allocation aligned for the record; it becomes
        // reachable only through the set entry inserted below.
        unsafe { rec.as_ptr().write(PartRecord { state }) };
        if has_version {
            versioned.0.push(rec);
        }
        self.shards[si]
            .set
            .write()
            .insert(PartKey::entry(update.key.token, rec));
        let c = &self.counters[si];
        bump_signed(&c.other_bytes, (other + MAP_ENTRY_OVERHEAD_BYTES) as i64);
        bump(&c.partition_count, 1);
        bump(&c.data_bytes, key.len() as u64);
        ApplyResult {
            rows_inserted: rows.len(),
            rows_merged: 0,
        }
    }

    /// Applies `update` to an existing partition (under its shard's writer lock).
    fn update_partition(
        &self,
        si: usize,
        record: &PartRecord,
        update: &PartitionUpdate,
        rows: &[Row],
        versioned: &mut Versioned,
    ) -> ApplyResult {
        let c = &self.counters[si];
        match record.state.snapshot_locked() {
            Snap::Single(old)
                if rows.len() == 1
                    && update.static_row.is_none()
                    && deletion_is_empty(update)
                    && rows[0].clustering.as_slice() == old.clustering() =>
            {
                // An overwrite of a lone row stays a lone row. The old row's bytes
                // are not recycled: a reader may hold it with no count to tell.
                match self.merge_into(si, old, &rows[0]) {
                    Merged::Replaces(row) | Merged::Extends(row) => record.state.set_lone(row),
                    Merged::Kept => {}
                }
                ApplyResult {
                    rows_inserted: 0,
                    rows_merged: 1,
                }
            }
            Snap::Single(old) => {
                // The lone row becomes a version (invariant 1).
                // The lone row, if replaced here, is not recycled (as above).
                let (batch, replaced, absorbed) =
                    self.prepare_rows(si, rows, |ck| (ck == old.clustering()).then_some(old));
                let mut seed_leaf = Garbage::new();
                let seed = match BTree::from_sorted(vec![old]) {
                    Ok(t) => t,
                    Err(e) => unreachable!("one row is sorted: {e}"),
                };
                let (tree, stats) = match seed.try_update(batch, |_, n| n, &mut seed_leaf) {
                    Ok(t) => t,
                    Err(e) => unreachable!("sorted rows rejected: {e}"),
                };
                // SAFETY: the seed tree was never published.
                unsafe { seed_leaf.free() };
                let v = self.first_version(si, update, tree, Some(old.ptr));
                let bytes = v.own_bytes() + tree.node_bytes();
                record
                    .state
                    .publish(Some(Arc::new(v)), &self.shards[si].pins);
                versioned.0.push(NonNull::from(record));
                bump_signed(&c.other_bytes, bytes as i64);
                ApplyResult {
                    rows_inserted: stats.inserted,
                    rows_merged: replaced.len() + absorbed,
                }
            }
            Snap::Tree(old) => {
                // Small trees (one leaf, as hot rows are): look each row up first
                // and reconcile from the update's own row, so an overwrite leaves
                // one dead row in the arena, not two. Larger trees: no second
                // descent per row (the update descends anyway); a rare overwrite
                // reconciles two encoded rows in the tree's merge.
                let premerge = old.rows.height() <= 1;
                let (batch, mut replaced_rows, absorbed) = if premerge {
                    self.prepare_rows(si, rows, |ck| old.rows.get(ck).copied())
                } else {
                    let batch = rows.iter().map(|r| self.write_row(si, r)).collect();
                    (batch, ReplacedRows::new(), 0)
                };
                if batch.is_empty() && update.static_row.is_none() && deletion_is_empty(update) {
                    // The stored rows won every row: the partition is unchanged.
                    return ApplyResult {
                        rows_inserted: 0,
                        rows_merged: absorbed,
                    };
                }
                let mut replaced = Garbage::new();
                let result = if premerge {
                    old.rows.try_update(batch, |_, n| n, &mut replaced)
                } else {
                    old.rows.try_update(
                        batch,
                        |o, n| self.merge_stored(si, *o, n, &mut replaced_rows),
                        &mut replaced,
                    )
                };
                let (tree, stats) = match result {
                    Ok(t) => t,
                    Err(e) => unreachable!("sorted rows rejected: {e}"),
                };
                let merged = if premerge {
                    replaced_rows.len() + absorbed
                } else {
                    stats.merged
                };
                let mut deletion = old.deletion.clone();
                deletion.merge(&update.deletion);
                let static_row = match (old.static_row, &update.static_row) {
                    (Some(o), Some(n)) => match self.merge_into(si, o, n) {
                        Merged::Replaces(merged) => {
                            replaced_rows.push(o);
                            Some(merged)
                        }
                        Merged::Extends(row) => Some(row),
                        Merged::Kept => Some(o),
                    },
                    (None, Some(n)) => Some(self.write_row(si, n)),
                    (o, None) => o,
                };
                let v = Arc::new(Version {
                    deletion,
                    static_row,
                    rows: tree,
                    replaced,
                    replaced_rows,
                    free_rows: NonNull::from(&self.shards[si].free_rows),
                    lone: old.lone,
                    next: VersionPtr::empty(),
                });
                let delta = v.own_bytes() as isize - old.own_bytes() as isize + stats.bytes_delta;
                // Link before publishing: a reader of `old` or anything older must
                // reach the replaced nodes (module docs). The cell is empty: only
                // the writer holding this shard's lock replaces `old`, once.
                old.next.set_once(v.clone());
                record.state.publish(Some(v), &self.shards[si].pins);
                bump_signed(&c.other_bytes, delta as i64);
                ApplyResult {
                    rows_inserted: stats.inserted,
                    rows_merged: merged,
                }
            }
            Snap::Empty => ApplyResult::default(), // unreachable: records are born with a state
        }
    }

    /// Whether this memtable holds partition `key`.
    pub fn contains(&self, key: &DecoratedKey) -> bool {
        self.entry(key).is_some()
    }

    /// The set entry of partition `key`, if this memtable holds it.
    fn entry(&self, key: &DecoratedKey) -> Option<PartKey> {
        let set = self.shards[shard_of(key.token)].set.read();
        set.get(&PartKey::probe(key)).copied()
    }

    /// A partition's current state, for a reader.
    fn snapshot(&self, entry: &PartKey) -> Snap {
        entry
            .record()
            .state
            .snapshot(&self.shards[shard_of(entry.token)].pins)
    }

    /// The partition's deletions and its row `clustering`, still encoded (see
    /// [`MemRow::body`] and [`Memtable::row_base`]); `None` if this memtable
    /// does not hold the partition. Used by value range reads, which must not
    /// copy a large value to find it.
    pub fn row_for_value(
        self: &Arc<Self>,
        key: &DecoratedKey,
        clustering: &[u8],
    ) -> Option<(PartitionDeletion, Option<MemRow>)> {
        let (deletion, row, version) = match self.snapshot(&self.entry(key)?) {
            Snap::Single(r) => (
                PartitionDeletion::default(),
                (r.clustering() == clustering).then_some(r),
                None,
            ),
            Snap::Tree(v) => (v.deletion.clone(), v.rows.get(clustering).copied(), Some(v)),
            Snap::Empty => (PartitionDeletion::default(), None, None),
        };
        let row = row.map(|row| MemRow {
            row,
            whole: self.whole_body(row),
            _version: version,
            _memtable: self.clone(),
        });
        Some((deletion, row))
    }

    /// The base this memtable's encoded rows are relative to.
    pub fn row_base(&self) -> EncodingBase {
        self.base
    }

    /// Materialises a partition's deletion info, static row and the rows in `range`
    /// (ascending). `None` if the memtable does not hold the partition.
    pub fn read(&self, key: &DecoratedKey, range: &ClusteringRange) -> Option<PartitionUpdate> {
        let entry = self.entry(key)?;
        Some(self.materialize_record(&entry, key.clone(), range))
    }

    /// Decodes a partition's state into a [`PartitionUpdate`], restricted to `range`.
    pub fn materialize(&self, part: &PartRef<'_>, range: &ClusteringRange) -> PartitionUpdate {
        self.materialize_record(&part.key, part.decorated_key(), range)
    }

    /// Every partition in token order, each handed to `f` as stored: its
    /// rows encoded against [`Memtable::row_base`] (see `with_encoded`): a
    /// flush's loop. Stops at `f`'s
    /// first error. Partition records sit in the arena in arrival order, so
    /// token order visits them at random and each would be a cache miss
    /// waited for; the loop prefetches records [`PREFETCH_RECORDS`] entries
    /// ahead and lone rows [`PREFETCH_ROWS`] ahead (their pointer is read from
    /// a record fetched earlier), so several misses are in flight at once
    /// (BENCHMARKS.md, "Flush without decoding").
    pub fn for_each_encoded<E>(
        &self,
        mut f: impl FnMut(&EncodedPartition<'_>) -> std::result::Result<(), E>,
    ) -> std::result::Result<(), E> {
        let parts = self.all_partitions();
        let mut scratch = EncodedScratch::default();
        for (i, part) in parts.iter().enumerate() {
            if let Some(ahead) = parts.get(i + PREFETCH_RECORDS) {
                // The state and the key's first bytes share the record's line.
                let record: *const PartRecord = ahead.key.record();
                prefetch(record.cast());
            }
            if let Some(near) = parts.get(i + PREFETCH_ROWS) {
                // A hint only: whatever the pointer holds, nothing is read
                // through it here.
                prefetch(near.key.record().state.lone_hint());
            }
            let key = part.decorated_key();
            self.with_encoded(part, &key, &mut scratch, &mut f)?;
        }
        Ok(())
    }

    /// Calls `f` with partition `part` as stored: its rows encoded against
    /// [`Memtable::row_base`], borrowed from the arena, in clustering order. A
    /// flush writes them as they are when the sstable's base is the
    /// memtable's (issue 15: decoding every row into a [`PartitionUpdate`] and
    /// encoding it again was most of the flush). The rows stay valid for the
    /// call: the snapshot taken here keeps every row it reaches from being
    /// recycled (invariant 6).
    fn with_encoded<R>(
        &self,
        part: &PartRef<'_>,
        key: &DecoratedKey,
        scratch: &mut EncodedScratch,
        f: impl FnOnce(&EncodedPartition<'_>) -> R,
    ) -> R {
        let no_deletion = PartitionDeletion::default();
        let encoded = |r: &RowRef| EncodedRow {
            clustering: r.clustering(),
            body: r.body(),
        };
        match self.snapshot(&part.key) {
            Snap::Single(r) => {
                let whole = self.whole_body(r);
                f(&EncodedPartition {
                    key,
                    deletion: &no_deletion,
                    static_row: None,
                    rows: &[EncodedRow {
                        clustering: r.clustering(),
                        body: whole.as_deref().unwrap_or(r.body()),
                    }],
                    base: self.base,
                })
            }
            Snap::Tree(v) => {
                let static_row = v.static_row.and_then(|r| r.decode(&self.base));
                let rows = &mut scratch.rows;
                rows.clear();
                let mut chained = false;
                rows.extend(v.rows.iter().map(|r| {
                    chained |= r.is_chained();
                    encoded(r)
                }));
                if chained {
                    // Rare (large rows written piecemeal): their merged bodies
                    // live for this call only, so the rows list is this call's.
                    let wholes: Vec<Option<Vec<u8>>> =
                        v.rows.iter().map(|r| self.whole_body(*r)).collect();
                    let rows: Vec<EncodedRow<'_>> = v
                        .rows
                        .iter()
                        .zip(&wholes)
                        .map(|(r, w)| EncodedRow {
                            clustering: r.clustering(),
                            body: w.as_deref().unwrap_or(r.body()),
                        })
                        .collect();
                    return f(&EncodedPartition {
                        key,
                        deletion: &v.deletion,
                        static_row: static_row.as_ref(),
                        rows: &rows,
                        base: self.base,
                    });
                }
                f(&EncodedPartition {
                    key,
                    deletion: &v.deletion,
                    static_row: static_row.as_ref(),
                    rows,
                    base: self.base,
                })
            }
            Snap::Empty => f(&EncodedPartition {
                key,
                deletion: &no_deletion,
                static_row: None,
                rows: &[],
                base: self.base,
            }),
        }
    }

    fn materialize_record(
        &self,
        entry: &PartKey,
        key: DecoratedKey,
        range: &ClusteringRange,
    ) -> PartitionUpdate {
        let mut out = PartitionUpdate::new(key);
        match self.snapshot(entry) {
            Snap::Single(r) => {
                if range.contains(r.clustering()) {
                    out.rows.extend(r.decode(&self.base));
                }
            }
            Snap::Tree(v) => {
                out.deletion = v.deletion.clone();
                out.static_row = v.static_row.and_then(|r| r.decode(&self.base));
                let start: Bound<&[u8]> = if range.start.is_unbounded() {
                    Bound::Unbounded
                } else {
                    Bound::Included(&range.start.prefix)
                };
                for r in v.rows.range(start, Bound::Unbounded) {
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
            }
            Snap::Empty => {}
        }
        out
    }

    /// The rows of partition `key` in `range`, lazily, ascending or reversed
    /// (see [`MemSlice`]); `None` if the memtable does not hold the partition.
    pub fn slice(
        self: &Arc<Self>,
        key: &DecoratedKey,
        range: &ClusteringRange,
        reversed: bool,
    ) -> Option<MemSlice> {
        let snap = self.snapshot(&self.entry(key)?);
        let (deletion, static_row) = match &snap {
            Snap::Tree(v) => (
                v.deletion.clone(),
                v.static_row.and_then(|r| r.decode(&self.base)),
            ),
            Snap::Single(_) | Snap::Empty => (PartitionDeletion::default(), None),
        };
        let (lo, hi) = tree_bounds(range);
        Some(MemSlice {
            deletion,
            static_row,
            snap,
            base: self.base,
            empty: lo.is_none(),
            lo: lo.unwrap_or(Bound::Unbounded),
            hi,
            range: range.clone(),
            reversed,
            buf: Vec::new(),
            batch: MEM_SLICE_FIRST_BATCH,
            exhausted: false,
            _memtable: self.clone(),
        })
    }

    /// The keys of up to `limit` partitions of one shard from `lower` on, in
    /// order: the lazy building block of scans, so a page never copies the whole
    /// memtable's keys.
    pub fn shard_batch(
        &self,
        shard: usize,
        lower: Bound<&DecoratedKey>,
        limit: usize,
    ) -> Vec<DecoratedKey> {
        let Some(s) = self.shards.get(shard) else {
            return Vec::new();
        };
        let lower = match lower {
            Bound::Included(k) => Bound::Included(PartKey::probe(k)),
            Bound::Excluded(k) => Bound::Excluded(PartKey::probe(k)),
            Bound::Unbounded => Bound::Unbounded,
        };
        let set = s.set.read();
        set.range((lower, Bound::Unbounded))
            .take(limit)
            .map(PartKey::decorated)
            .collect()
    }

    /// The shard holding `key`.
    pub fn shard_index(key: &DecoratedKey) -> usize {
        shard_of(key.token)
    }

    /// Every partition, in token order, for a flush. Takes each shard's lock once,
    /// briefly.
    pub fn all_partitions(&self) -> Vec<PartRef<'_>> {
        let mut out = Vec::new();
        for shard in self.shards.iter() {
            out.extend(shard.set.read().iter().map(|&key| PartRef {
                key,
                memtable: self,
            }));
        }
        out
    }
}

fn deletion_is_empty(update: &PartitionUpdate) -> bool {
    update.deletion.partition.is_none() && update.deletion.ranges.is_empty()
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

fn as_ref_bound(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(v) => Bound::Included(v.as_slice()),
        Bound::Excluded(v) => Bound::Excluded(v.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The rows of one memtable partition in a clustering range, decoded lazily
/// in batches from the partition's snapshot at creation (later writes are not
/// seen: memtable invariant 1). Each batch re-seeks the copy-on-write B-tree
/// after the last row handed out, so nothing borrows the tree between calls.
pub struct MemSlice {
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
    snap: Snap,
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
    /// Keeps the arena (the snapshot's rows) alive; after `snap` so that the
    /// snapshot is released first.
    _memtable: Arc<Memtable>,
}

impl std::fmt::Debug for MemSlice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemSlice")
            .field("range", &self.range)
            .field("reversed", &self.reversed)
            .field("exhausted", &self.exhausted)
            .finish()
    }
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
        let tree = match &self.snap {
            Snap::Tree(v) => v.rows,
            Snap::Single(r) => {
                self.exhausted = true;
                if self.range.contains(r.clustering()) {
                    self.buf.extend(r.decode(&self.base));
                }
                return;
            }
            Snap::Empty => {
                self.exhausted = true;
                return;
            }
        };
        let mut it = tree.range(as_ref_bound(&self.lo), as_ref_bound(&self.hi));
        let mut taken = 0;
        let mut last: Option<RowRef> = None;
        let mut rows = Vec::new();
        while taken < self.batch {
            let next = if self.reversed {
                it.next_back()
            } else {
                it.next()
            };
            let Some(&item) = next else {
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
            let k = item.clustering().to_vec();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, ClusteringBound, DeletionTime, LivenessInfo};
    use rand::{Rng, SeedableRng};

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
        let m = Memtable::new(1, 1_000_000);
        let base = m.row_base();
        let mut r = Row::new(b"ck".to_vec());
        r.add_cell(Cell::live(0, 1_000_000, vec![7; 200_000]));
        r.add_cell(Cell::live(1, 1_000_001, b"small".to_vec()));
        r.add_cell(Cell::live(
            4,
            1_000_000,
            (0..70_000u32).map(|i| i as u8).collect(),
        ));
        let stored = m.write_row(0, &r);
        let mut body = Vec::new();
        crate::encoding::encode_row_steady(&r, &base, &mut body);
        assert_eq!(stored.clustering(), b"ck");
        assert_eq!(stored.body(), &body[..]);
        let mut want = Vec::new();
        // The clustering's length, shifted over the chained bit.
        crate::encoding::put_varint(&mut want, 2 << 1);
        want.extend_from_slice(b"ck");
        crate::encoding::put_varint(&mut want, body.len() as u64);
        want.extend_from_slice(&body);
        assert_eq!(stored.encoded_len(), want.len());
        assert_eq!(stored.decode(&base), Some(r));
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
        let m = Arc::new(m);
        let mut before = m.slice(&key(b"p"), &ClusteringRange::ALL, false).unwrap();
        let mut u2 = PartitionUpdate::new(key(b"p"));
        u2.add_row(row(b"b", 2, b"y"));
        m.apply(&u2);
        let mut middle = m.slice(&key(b"p"), &ClusteringRange::ALL, false).unwrap();
        let mut u3 = PartitionUpdate::new(key(b"p"));
        u3.add_row(row(b"c", 3, b"z"));
        m.apply(&u3);
        let count = |s: &mut MemSlice| std::iter::from_fn(|| s.next_row()).count();
        assert_eq!(
            count(&mut before),
            1,
            "an old snapshot never sees later writes"
        );
        assert_eq!(count(&mut middle), 2);
        assert_eq!(m.all_partitions()[0].row_count(), 3);
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
        let all: Vec<DecoratedKey> = m
            .all_partitions()
            .iter()
            .map(|p| p.decorated_key())
            .collect();
        assert_eq!(all.len(), 500);
        assert!(all.windows(2).all(|w| w[0] < w[1]));
        let mid = all[250].clone();
        let shard = Memtable::shard_index(&mid);
        let after = m.shard_batch(shard, Bound::Excluded(&mid), usize::MAX);
        let from = m.shard_batch(shard, Bound::Included(&mid), usize::MAX);
        assert_eq!(from.len(), after.len() + 1);
        assert_eq!(from[0], mid);
        let in_shard = all
            .iter()
            .filter(|k| Memtable::shard_index(k) == shard)
            .count();
        assert_eq!(
            m.shard_batch(shard, Bound::Unbounded, usize::MAX).len(),
            in_shard
        );
        assert_eq!(
            m.shard_batch(shard, Bound::Unbounded, 2).len(),
            in_shard.min(2)
        );
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
    fn encoded_partitions_decode_to_what_materialize_gives() {
        // Lone rows, trees, deletions and static rows, overwritten at random:
        // what a flush copies must be what the decoding flush wrote.
        let m = Memtable::new(1, 1_000_000);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(17);
        for i in 0..3000u64 {
            let pk = format!("p{}", rng.gen_range(0..300));
            let mut u = PartitionUpdate::new(key(pk.as_bytes()));
            for _ in 0..rng.gen_range(1..4) {
                let ck = [rng.gen_range(0..40u8)];
                u.add_row(row(&ck, 1_000_000 + i as i64, &i.to_le_bytes()));
            }
            match rng.gen_range(0..20) {
                0 => u.deletion.partition = Some(DeletionTime::new(1_000_000 + i as i64 - 5, 9)),
                1 => {
                    let mut s = Row::new(Vec::new());
                    s.add_cell(Cell::live(3, 1_000_000 + i as i64, b"static".to_vec()));
                    u.static_row = Some(s);
                }
                _ => {}
            }
            m.apply(&u);
        }
        let mut scratch = EncodedScratch::default();
        let mut trees = 0;
        for part in m.all_partitions() {
            let key = part.decorated_key();
            let want = m.materialize(&part, &ClusteringRange::ALL);
            let got = m.with_encoded(&part, &key, &mut scratch, |p| {
                assert_eq!(p.base, m.row_base());
                p.decode().unwrap()
            });
            trees += usize::from(want.rows.len() > 1);
            assert_eq!(got, want);
        }
        assert!(trees > 100, "{trees} multi-row partitions");
    }

    /// The encoded verdict says what `Row::superseded_by` says each way round
    /// on the decoded rows, or "merge" where it cannot tell (complex cells
    /// only), on random pairs built to collide in columns, timestamps, kinds
    /// and paths; and a stored row that wins is what the merge gives.
    #[test]
    fn reconcile_verdict_agrees_with_superseded_by() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(44);
        let base = EncodingBase::around(0);
        let mut counts = [0usize; 4];
        for _ in 0..40_000 {
            let stored = crate::data::colliding_row(&mut rng, true);
            let incoming = crate::data::colliding_row(&mut rng, true);
            let mut body = Vec::new();
            crate::encoding::encode_row(&stored, &base, &mut body);
            let verdict = reconcile_verdict(&body, &base, &incoming);
            let stored_wins = incoming.superseded_by(&stored);
            let incoming_wins = stored.superseded_by(&incoming);
            let complex = stored.cells.iter().any(|c| c.path.is_some());
            let expected = if stored_wins {
                Verdict::Stored
            } else if incoming_wins {
                Verdict::Incoming
            } else {
                Verdict::Merge
            };
            if verdict == Verdict::Unknown {
                assert!(complex, "only complex cells leave it unsure");
                counts[3] += 1;
            } else {
                assert_eq!(verdict, expected, "{stored:?} / {incoming:?}");
                counts[expected as usize] += 1;
            }
            match verdict {
                Verdict::Stored => assert_eq!(stored.clone().merge(incoming.clone()), stored),
                Verdict::Incoming => assert_eq!(stored.clone().merge(incoming.clone()), incoming),
                Verdict::Merge | Verdict::Unknown => {}
            }
        }
        assert!(counts.iter().all(|&n| n > 100), "{counts:?}");
        assert_eq!(
            reconcile_verdict(&[0xff], &base, &Row::new(b"ck".to_vec())),
            Verdict::Unknown
        );
    }

    #[test]
    fn rows_are_copyable_only_while_the_own_base_bounds_the_data() {
        let m = Memtable::new(1, 5_000_000);
        assert_eq!(m.copy_base(), Some(m.row_base()), "empty");
        let mut u = PartitionUpdate::new(key(b"p"));
        let mut r = Row::new(b"a".to_vec());
        r.add_cell(Cell::expiring(0, 6_000_000, 60, 100, b"v".to_vec()));
        u.add_row(r);
        m.apply(&u);
        assert_eq!(m.copy_base(), Some(m.row_base()));
        // A client timestamp before the memtable's creation: the rows' deltas
        // would go below an sstable base equal to the memtable's.
        let mut u = PartitionUpdate::new(key(b"q"));
        u.add_row(row(b"a", 4_999_999, b"old"));
        m.apply(&u);
        assert_eq!(m.copy_base(), None);
    }

    /// A `map<int, int>`-like row of `n` elements at timestamp 1 (column 2),
    /// with a simple cell (column 0) beside it.
    fn map_row(ck: &[u8], n: u32) -> Row {
        let mut r = Row::new(ck.to_vec());
        r.liveness = LivenessInfo::new(1);
        r.add_cell(Cell::live(0, 1, b"simple".to_vec()));
        r.add_cell(Cell::complex_deletion(2, 0, 100));
        for i in 0..n {
            let mut c = Cell::live(2, 1, (i * 7).to_be_bytes().to_vec());
            c.path = Some(i.to_be_bytes().to_vec().into_boxed_slice());
            r.add_cell(c);
        }
        r
    }

    /// One element write (or element deletion, or whole-collection overwrite)
    /// into the map of `map_row`, chosen by `i`.
    fn element_update(ck: &[u8], i: u32, ts: i64) -> Row {
        let mut r = Row::new(ck.to_vec());
        let path = Some(
            (i.wrapping_mul(2_654_435_761) % 30_000)
                .to_be_bytes()
                .to_vec()
                .into_boxed_slice(),
        );
        let mut c = match i % 50 {
            // An element deletion.
            7 => Cell::tombstone(2, ts, 100),
            // A collection overwrite: complex deletion at ts - 1, then elements.
            49 => {
                r.add_cell(Cell::complex_deletion(2, ts - 1, 100));
                Cell::live(2, ts, i.to_be_bytes().to_vec())
            }
            _ => Cell::live(2, ts, i.to_be_bytes().to_vec()),
        };
        c.path = path;
        r.add_cell(c);
        if i.is_multiple_of(13) {
            r.add_cell(Cell::live(0, ts, i.to_be_bytes().to_vec()));
        }
        r
    }

    /// Element writes into a large row, with `others` more rows in its
    /// partition (0: a lone row; 5: a one-leaf tree, reconciled before the
    /// tree update; 200: a taller tree, reconciled inside it): every read path
    /// (reads, slices, a flush's encoded rows, a value read's row) gives the
    /// row a model merging every update gives, a slice taken halfway keeps
    /// its snapshot, and the memtable grows by O(1) bytes per element write
    /// (the issue's bound), not by the row's size.
    fn element_writes_chain_and_fold(others: u32) {
        let m = Arc::new(Memtable::new(1, 0));
        let ck = b"big".to_vec();
        let mut u = PartitionUpdate::new(key(b"p"));
        for o in 0..others {
            u.add_row(row(format!("o{o:04}").as_bytes(), 1, b"x"));
        }
        u.add_row(map_row(&ck, 10_000));
        m.apply(&u);
        let mut model = map_row(&ck, 10_000);
        let row_bytes = m.memory_bytes();
        let one = ClusteringRange {
            start: ClusteringBound::inclusive(ck.clone()),
            end: ClusteringBound::inclusive(ck.clone()),
        };
        let before = m.memory_bytes();
        let (mut halfway, mut halfway_model) = (None, None);
        let writes = 6_000u32;
        for i in 0..writes {
            let upd = element_update(&ck, i, 2 + i as i64);
            let mut u = PartitionUpdate::new(key(b"p"));
            u.add_row(upd.clone());
            m.apply(&u);
            model = model.merge(upd);
            if i == writes / 2 {
                halfway = m.slice(&key(b"p"), &one, false);
                halfway_model = Some(model.clone());
            }
        }
        let grown = m.memory_bytes() - before;
        // About 30 bytes of update and 24 of link per write, plus a fold
        // (the row again, 160 KB) per half a row of links: about 150 bytes
        // per write, where a copy per write was the row's 160 KB.
        let per_write = grown / u64::from(writes);
        assert!(
            per_write < 400,
            "{per_write} bytes per element write (row {row_bytes} bytes)"
        );
        let read = m.read(&key(b"p"), &one).unwrap();
        assert_eq!(read.rows, vec![model.clone()]);
        let mut s = m.slice(&key(b"p"), &ClusteringRange::ALL, true).unwrap();
        let sliced: Vec<Row> = std::iter::from_fn(|| s.next_row()).collect();
        assert_eq!(sliced.len() as u32, others + 1);
        assert!(sliced.contains(&model));
        let mut held = halfway.unwrap();
        assert_eq!(held.next_row(), halfway_model, "a snapshot keeps its row");
        let mut flushed = None;
        m.for_each_encoded(|p| -> Result<(), ()> {
            flushed = Some(p.decode().unwrap());
            Ok(())
        })
        .unwrap();
        let flushed = flushed.unwrap();
        assert!(flushed.rows.contains(&model));
        let (_, value_row) = m.row_for_value(&key(b"p"), &ck).unwrap();
        let value_row = value_row.unwrap();
        let decoded = decode_row(
            &mut Reader::new(value_row.body()),
            ck.clone(),
            &m.row_base(),
        );
        assert_eq!(decoded.ok(), Some(model));
    }

    #[test]
    fn element_writes_to_a_lone_large_row_chain_and_fold() {
        element_writes_chain_and_fold(0);
    }

    #[test]
    fn element_writes_to_a_large_row_of_a_small_partition_chain_and_fold() {
        element_writes_chain_and_fold(5);
    }

    #[test]
    fn element_writes_to_a_large_row_of_a_large_partition_chain_and_fold() {
        element_writes_chain_and_fold(200);
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
        let data = m.data_bytes();
        assert!(grown >= data, "{grown} < {data}");
        // Rows live in the arena: a thousand 34-byte rows take a few doubling
        // blocks (4, 8, 16, 32 KiB), the tree's nodes sit beside it.
        assert!(m.arena_bytes() >= data && m.arena_bytes() <= 2 * 64 * 1024);
        // Overwriting the same rows at a newer timestamp keeps the replaced rows in
        // the arena until the flush (as Cassandra's slabs do): the arena grows by
        // about the rows' size, the tree does not.
        let arena_before = m.arena_used_bytes();
        let mut u2 = PartitionUpdate::new(key(b"p"));
        for i in 0..1000u32 {
            u2.add_row(row(&i.to_be_bytes(), 2, &[1u8; 34]));
        }
        let r = m.apply(&u2);
        assert_eq!((r.rows_inserted, r.rows_merged), (0, 1000));
        let after = m.memory_bytes() - empty;
        assert!(after > grown);
        assert!(
            after - grown <= m.arena_bytes() - arena_before + 1024,
            "{after} vs {grown}"
        );
    }

    fn slice_cks(
        m: &Arc<Memtable>,
        range: &ClusteringRange,
        reversed: bool,
        n: usize,
    ) -> Vec<Vec<u8>> {
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
        let m = Arc::new(Memtable::new(1, 0));
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
        let m = Arc::new(m);
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

    fn live_nodes() -> isize {
        btree::LIVE_NODES.with(|n| n.get())
    }

    #[test]
    fn lone_rows_need_no_tree_until_a_second_row_or_a_deletion() {
        let before = live_nodes();
        let m = Memtable::new(1, 0);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 1, b"v1"));
        m.apply(&u);
        assert_eq!(live_nodes(), before, "a one-row partition has no tree");
        // Overwrites of the lone row reconcile and stay lone.
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 3, b"v3"));
        assert_eq!(m.apply(&u).rows_merged, 1);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 2, b"v2-older"));
        m.apply(&u);
        assert_eq!(live_nodes(), before);
        let p = m.read(&key(b"p"), &ClusteringRange::ALL).unwrap();
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].cells[0].value, b"v3", "the newest timestamp wins");
        // A second row turns it into a version holding both.
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"b", 4, b"w"));
        assert_eq!(m.apply(&u).rows_inserted, 1);
        assert!(live_nodes() > before);
        let p = m.read(&key(b"p"), &ClusteringRange::ALL).unwrap();
        let cks: Vec<&[u8]> = p.rows.iter().map(|r| r.clustering.as_slice()).collect();
        assert_eq!(cks, vec![&b"a"[..], b"b"]);
        assert_eq!(p.rows[0].cells[0].value, b"v3");
        // A deletion on a lone-row partition makes a version too.
        let mut u = PartitionUpdate::new(key(b"q"));
        u.add_row(row(b"a", 1, b"x"));
        m.apply(&u);
        let mut d = PartitionUpdate::new(key(b"q"));
        d.deletion.partition = Some(DeletionTime::new(5, 6));
        m.apply(&d);
        let q = m.read(&key(b"q"), &ClusteringRange::ALL).unwrap();
        assert_eq!(q.deletion.partition, Some(DeletionTime::new(5, 6)));
        assert_eq!(
            q.rows.len(),
            1,
            "the memtable keeps shadowed rows; reads reconcile"
        );
        // A static row alone on a new partition.
        let mut s = PartitionUpdate::new(key(b"s"));
        s.static_row = Some(row(b"", 1, b"st"));
        m.apply(&s);
        let got = m.read(&key(b"s"), &ClusteringRange::ALL).unwrap();
        assert_eq!(got.static_row.unwrap().cells[0].value, b"st");
        assert!(got.rows.is_empty());
        drop(m);
        assert_eq!(
            live_nodes(),
            before,
            "dropping the memtable frees every node"
        );
    }

    /// The version chain frees replaced nodes as soon as no reader can reach them,
    /// keeps them while a reader holds an old snapshot, and frees everything with
    /// the memtable (single thread, so the thread-local node count sees it all).
    #[test]
    fn version_chain_frees_nodes_once_readers_let_go() {
        let before = live_nodes();
        let m = Arc::new(Memtable::new(1, 0));
        let mut rng = rand::rngs::StdRng::seed_from_u64(9);
        // Two large partitions, built by single-row inserts (path copies).
        for i in 0..4000u32 {
            let pk: &[u8] = if i % 2 == 0 { b"p" } else { b"q" };
            let mut u = PartitionUpdate::new(key(pk));
            u.add_row(row(&rng.gen::<u64>().to_be_bytes(), 1, b"v"));
            m.apply(&u);
        }
        let tree_nodes = |m: &Memtable| -> isize {
            m.all_partitions()
                .iter()
                .map(|p| match m.snapshot(&p.key) {
                    Snap::Tree(v) => count_nodes(&v.rows),
                    _ => 0,
                })
                .sum()
        };
        for p in m.all_partitions() {
            if let Snap::Tree(v) = m.snapshot(&p.key) {
                v.rows.check_invariants().unwrap();
                assert_eq!(v.rows.len(), 2000);
            }
        }
        // Without readers at most the last update's path per partition waits.
        let idle = live_nodes() - before - tree_nodes(&m);
        assert!(
            (0..=2 * 4).contains(&idle),
            "{idle} nodes wait without readers"
        );
        // A reader of an old snapshot keeps every node it can reach.
        let mut old = m.slice(&key(b"p"), &ClusteringRange::ALL, false).unwrap();
        for _ in 0..500 {
            let mut u = PartitionUpdate::new(key(b"p"));
            u.add_row(row(&rng.gen::<u64>().to_be_bytes(), 2, b"w"));
            m.apply(&u);
        }
        let held = live_nodes() - before - tree_nodes(&m);
        assert!(
            held > 500,
            "{held}: the old snapshot's replaced paths must stay"
        );
        let rows: Vec<Row> = std::iter::from_fn(|| old.next_row()).collect();
        assert_eq!(rows.len(), 2000, "the old snapshot reads whole");
        assert!(rows.iter().all(|r| r.cells[0].value == b"v"));
        drop(old);
        // The next update releases the chain the reader pinned.
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"z", 3, b"x"));
        m.apply(&u);
        let idle = live_nodes() - before - tree_nodes(&m);
        assert!(
            (0..=2 * 4).contains(&idle),
            "{idle} nodes wait after the reader left"
        );
        drop(m);
        assert_eq!(live_nodes(), before, "nodes leaked or freed twice");
    }

    /// `n` rewrites of 32 hot rows (4 partitions of 8) holding `value`, at
    /// timestamps from `*ts` on, one microsecond apart.
    fn rewrite_hot_rows(m: &Memtable, ts: &mut i64, n: usize, value: &[u8]) {
        for _ in 0..n {
            let mut u = PartitionUpdate::new(key(&[(*ts % 4) as u8]));
            u.add_row(row(&[(*ts / 4 % 8) as u8], *ts, value));
            m.apply(&u);
            *ts += 1;
        }
    }

    /// Hot rows overwritten again and again keep the memtable's size flat
    /// once their encoded size settles: replaced rows are recycled, and
    /// versions, nodes and the per-update lists are freed.
    #[test]
    fn hot_row_overwrites_do_not_grow_the_memtable() {
        let m = Memtable::new(1, 0);
        // Timestamp deltas from 100 to 320 ms, past both of a varint's growths
        // (the test below crosses them), so every rewrite of a row has the
        // size of the one it replaces whatever the timestamp's form.
        let mut ts = 100_000;
        let mut overwrite = |n: usize| rewrite_hot_rows(&m, &mut ts, n, &[7; 34]);
        overwrite(20_000);
        let settled = m.memory_bytes();
        overwrite(200_000);
        assert!(
            m.memory_bytes() <= settled + 4096,
            "{} bytes after 200,000 more overwrites, {settled} before",
            m.memory_bytes()
        );
    }

    #[test]
    fn hot_rows_keep_their_size_as_the_memtable_ages() {
        // Deltas from 0 to 20 ms cross the varint's growth at 64 µs and
        // 8 ms, where every row of the old size was stranded in the free
        // list (32 rows of ~420 bytes, twice); the steady width keeps each
        // rewrite the size of the row it replaces.
        let m = Memtable::new(1, 0);
        let mut ts = 0;
        let mut overwrite = |n: usize| rewrite_hot_rows(&m, &mut ts, n, &[7; 400]);
        // Each row written twice (deltas under 64 µs): one spare row's bytes
        // and the arena block it took are in.
        overwrite(64);
        let settled = m.memory_bytes();
        overwrite(20_000);
        assert!(
            m.memory_bytes() <= settled + 4096,
            "{} bytes after 20,000 overwrites of 32 rows, {settled} with each written twice",
            m.memory_bytes()
        );
    }

    #[test]
    fn older_overwrites_leave_a_partition_as_it_was() {
        let m = Memtable::new(1, 0);
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 5, b"a5"));
        u.add_row(row(b"b", 5, b"b5"));
        m.apply(&u);
        let entry = m.entry(&key(b"p")).unwrap();
        let version = || match m.snapshot(&entry) {
            Snap::Tree(v) => v,
            _ => panic!("two rows make a version, and it stays one"),
        };
        let before = version();
        // Every cell older than the stored ones: absorbed, nothing published.
        let mut older = PartitionUpdate::new(key(b"p"));
        older.add_row(row(b"a", 3, b"a3"));
        let r = m.apply(&older);
        assert_eq!((r.rows_inserted, r.rows_merged), (0, 1));
        let after = version();
        assert!(
            Arc::ptr_eq(&before, &after),
            "an unchanged partition was republished"
        );
        // A tie is not a win for the stored row: it reconciles as before.
        let mut tie = PartitionUpdate::new(key(b"p"));
        tie.add_row(row(b"b", 5, b"b5"));
        m.apply(&tie);
        assert!(!Arc::ptr_eq(&before, &version()));
        // Mixed: one row older (left out), one newer (applied), one new.
        let mut mixed = PartitionUpdate::new(key(b"p"));
        mixed.add_row(row(b"a", 4, b"a4"));
        mixed.add_row(row(b"b", 6, b"b6"));
        mixed.add_row(row(b"c", 1, b"c1"));
        let r = m.apply(&mixed);
        assert_eq!((r.rows_inserted, r.rows_merged), (1, 2));
        let p = m.read(&key(b"p"), &ClusteringRange::ALL).unwrap();
        let values: Vec<&[u8]> = p.rows.iter().map(|r| &r.cells[0].value[..]).collect();
        assert_eq!(values, [&b"a5"[..], b"b6", b"c1"]);
    }

    fn count_nodes(t: &BTree<RowRef>) -> isize {
        t.node_count() as isize
    }

    /// Readers on other threads see each mutation whole while writers replace
    /// versions (and free their nodes) underneath them.
    #[test]
    fn concurrent_readers_see_whole_mutations() {
        let m = Arc::new(Memtable::new(1, 0));
        const ROWS: u8 = 40;
        let write = |m: &Memtable, round: u64| write_hot(m, ROWS, round);
        write(&m, 0);
        with_two_readers(
            &m,
            |m, _, seen| {
                let mut s = m
                    .slice(&key(b"hot"), &ClusteringRange::ALL, seen % 2 == 1)
                    .unwrap();
                let rows: Vec<Row> = std::iter::from_fn(|| s.next_row()).collect();
                assert_eq!(rows.len(), ROWS as usize);
                let v = &rows[0].cells[0].value;
                assert!(
                    rows.iter().all(|r| &r.cells[0].value == v),
                    "a torn mutation"
                );
            },
            || {
                for round in 1..3000u64 {
                    write(&m, round);
                }
            },
        );
        assert_hot_holds(&m, 2999);
    }

    /// Readers on other threads see whole mutations while lone rows become
    /// versions and versions are replaced (the state word's two kinds and the
    /// swap between them, `PartState`).
    #[test]
    fn concurrent_readers_see_lone_rows_become_versions() {
        const PARTS: u32 = 2_000;
        let m = Arc::new(Memtable::new(1, 0));
        let part = |p: u32| key(&p.to_be_bytes());
        let write = |m: &Memtable, p: u32, round: u64| {
            let mut u = PartitionUpdate::new(part(p));
            // Round 0 writes a lone row; later rounds two rows, one mutation.
            for ck in 0..if round == 0 { 1u8 } else { 2 } {
                u.add_row(row(&[ck], round as i64 + 1, &round.to_be_bytes()));
            }
            m.apply(&u);
        };
        for p in 0..PARTS {
            write(&m, p, 0);
        }
        with_two_readers(
            &m,
            move |m, r, seen| {
                let p = ((r as u64 * 997 + seen * 7) % u64::from(PARTS)) as u32;
                let got = m.read(&part(p), &ClusteringRange::ALL).unwrap();
                let v = got.rows[0].cells[0].value.clone();
                let round = u64::from_be_bytes(v[..].try_into().unwrap());
                let want_rows = if round == 0 { 1 } else { 2 };
                assert_eq!(got.rows.len(), want_rows, "partition {p} round {round}");
                assert!(
                    got.rows.iter().all(|r| r.cells[0].value == v),
                    "a torn mutation in partition {p}"
                );
            },
            || {
                for round in 1..=3u64 {
                    for p in 0..PARTS {
                        write(&m, p, round);
                    }
                }
            },
        );
        for p in 0..PARTS {
            let got = m.read(&part(p), &ClusteringRange::ALL).unwrap();
            assert_eq!(got.rows.len(), 2);
            assert!(got
                .rows
                .iter()
                .all(|r| r.cells[0].value == 3u64.to_be_bytes()));
        }
    }

    /// Runs `write` while two reader threads call `read(memtable, reader,
    /// reads so far)` in a loop. Each reader reads once before `write` starts
    /// (a barrier), so every reader has run whatever the scheduler does; how
    /// many reads overlap the writes is up to the scheduler, and nothing below
    /// depends on it (a starved reader once failed a "ran before the writer
    /// finished" check on a loaded machine).
    fn with_two_readers(
        m: &Arc<Memtable>,
        read: impl Fn(&Arc<Memtable>, usize, u64) + Send + Clone + 'static,
        write: impl FnOnce(),
    ) {
        let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
        let started = Arc::new(std::sync::Barrier::new(3));
        let readers: Vec<_> = (0..2)
            .map(|r| {
                let (m, stop, read, started) =
                    (m.clone(), stop.clone(), read.clone(), started.clone());
                std::thread::spawn(move || {
                    read(&m, r, 0);
                    let mut seen = 1u64;
                    started.wait();
                    while !stop.load(Ordering::Relaxed) {
                        read(&m, r, seen);
                        seen += 1;
                    }
                    seen
                })
            })
            .collect();
        started.wait();
        write();
        stop.store(true, Ordering::Relaxed);
        for r in readers {
            assert!(r.join().unwrap() > 0);
        }
    }

    /// One mutation of partition "hot": rows `0..rows`, each holding `round`.
    fn write_hot(m: &Memtable, rows: u8, round: u64) {
        let mut u = PartitionUpdate::new(key(b"hot"));
        for ck in 0..rows {
            u.add_row(row(&[ck], round as i64 + 1, &round.to_be_bytes()));
        }
        m.apply(&u);
    }

    /// Every row of partition "hot" holds `round`.
    fn assert_hot_holds(m: &Memtable, round: u64) {
        let p = m.read(&key(b"hot"), &ClusteringRange::ALL).unwrap();
        assert!(!p.rows.is_empty());
        assert!(p
            .rows
            .iter()
            .all(|r| r.cells[0].value == round.to_be_bytes()));
    }

    /// Rows overwritten again and again reuse the bytes of the rows they replaced
    /// once no reader can reach those (invariant 6); a reader holding an old
    /// snapshot or a `MemRow` still sees its rows intact.
    #[test]
    fn overwritten_rows_are_recycled_after_readers_let_go() {
        let m = Arc::new(Memtable::new(1, 0));
        let write = |round: u64| write_hot(&m, 8, round);
        for round in 1..=10 {
            write(round);
        }
        let settled = m.arena_used_bytes();
        for round in 11..=10_000 {
            write(round);
        }
        let grown = m.arena_used_bytes() - settled;
        assert!(
            grown < 4096,
            "10,000 overwrites grew the arena by {grown} bytes"
        );
        // Held readers keep their rows: the arena grows instead of reusing them.
        let mut old = m.slice(&key(b"hot"), &ClusteringRange::ALL, false).unwrap();
        let (_, held) = m.row_for_value(&key(b"hot"), &[3]).unwrap();
        let held = held.unwrap();
        let held_body = held.body().to_vec();
        let before = m.arena_used_bytes();
        for round in 10_001..=10_100 {
            write(round);
        }
        assert!(
            m.arena_used_bytes() > before,
            "rows a reader holds were reused"
        );
        let rows: Vec<Row> = std::iter::from_fn(|| old.next_row()).collect();
        assert_eq!(rows.len(), 8);
        assert!(rows
            .iter()
            .all(|r| r.cells[0].value == 10_000u64.to_be_bytes()));
        assert_eq!(held.body(), &held_body[..]);
        drop((old, held));
        assert_hot_holds(&m, 10_100);
    }

    /// `RowRef::cmp_item` (prefix first) orders rows exactly as their
    /// clusterings compare, on keys built to collide in their first 8 bytes.
    #[test]
    fn prefix_comparison_agrees_with_key_order() {
        let m = Memtable::new(1, 0);
        let mut rng = rand::rngs::StdRng::seed_from_u64(21);
        let alphabet = [0u8, 1, 0x7f, 0x80, 0xff];
        let keys: Vec<Vec<u8>> = (0..400)
            .map(|_| {
                let len = rng.gen_range(0..12);
                (0..len)
                    .map(|_| alphabet[rng.gen_range(0..alphabet.len())])
                    .collect()
            })
            .collect();
        let rows: Vec<RowRef> = keys
            .iter()
            .map(|k| m.write_row(0, &row(k, 1, b"v")))
            .collect();
        for (a, ka) in rows.iter().zip(&keys) {
            for (b, kb) in rows.iter().zip(&keys) {
                assert_eq!(a.cmp_item(b), ka.cmp(kb), "{ka:?} vs {kb:?}");
            }
        }
    }

    /// Regression: a reader holding a partition's lone row (no version, nothing
    /// counting) must keep reading it after the partition gains a version and that
    /// row is overwritten many times: the former lone row is never recycled.
    #[test]
    fn a_former_lone_row_is_never_recycled() {
        let m = Arc::new(Memtable::new(1, 0));
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"a", 1, b"first"));
        m.apply(&u);
        let mut held = m.slice(&key(b"p"), &ClusteringRange::ALL, false).unwrap();
        let (_, held_row) = m.row_for_value(&key(b"p"), b"a").unwrap();
        let held_row = held_row.unwrap();
        let body = held_row.body().to_vec();
        // A second row makes a version; then "a" is overwritten again and again
        // with rows of the same encoded size, which would reuse its bytes.
        let mut u = PartitionUpdate::new(key(b"p"));
        u.add_row(row(b"b", 2, b"other"));
        m.apply(&u);
        for ts in 3..200 {
            let mut u = PartitionUpdate::new(key(b"p"));
            u.add_row(row(b"a", ts, format!("v{:04}", ts).as_bytes()));
            m.apply(&u);
        }
        let rows: Vec<Row> = std::iter::from_fn(|| held.next_row()).collect();
        assert_eq!(rows.len(), 1);
        assert_eq!(rows[0].cells[0].value, b"first");
        assert_eq!(held_row.body(), &body[..]);
    }
}
