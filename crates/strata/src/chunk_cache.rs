//! The decompressed-chunk cache (Cassandra's `ChunkCache`, RocksDB's block
//! cache of uncompressed blocks): user reads of a chunk that was read recently
//! copy it from memory instead of reading and decompressing it again.
//!
//! Contract: [`ChunkCache::get`] returns the bytes [`ChunkCache::insert`] was
//! given for the same key, or nothing; the cache never holds more than its
//! capacity in chunk bytes (plus a bounded per-entry overhead, counted in
//! [`ChunkCacheStats::size_bytes`] as the chunk bytes only). Keys are
//! `(reader serial, chunk index)`: a reader serial is unique per opened sstable
//! in the process, so a key never names two different contents, and sstables
//! are immutable, so nothing needs invalidating; the chunks of a dropped
//! sstable are simply never referenced again and age out.
//!
//! Eviction: CLOCK (second chance) per shard: an entry read since the hand last
//! passed survives one more pass. Cheaper than an LRU list (a hit sets a flag
//! instead of moving a node) and close to LRU on the read patterns here.
//!
//! Threads: any. The cache is split into [`SHARDS`] shards by key hash, each
//! behind its own mutex held only for a map lookup or an insertion; a hit
//! clones an `Arc`, the copy into the reader's buffer happens outside the lock.
//!
//! Pinned index blocks: an sstable reader keeps the partition-index blocks its
//! user reads built ([`ChunkCache::try_pin`]) instead of looking each up here
//! again (a point read made two lookups, the index block's and the data
//! chunk's; RocksDB's table readers hold index blocks outside its block cache
//! too). They have a budget of their own beside the capacity, a
//! [`PINNED_SHARE`] of it; beyond that, index blocks are cached here like
//! chunks. So the cache holds at most its capacity in chunks plus as much
//! again in pinned blocks, and the capacity is all data, as RocksDB's block
//! cache is by default (whose table readers hold their index with no budget
//! at all). Counting pinned blocks against the capacity (the
//! eighth stop's choice) took the searchable form of a 2-million-pair
//! table's index, about 7 MB, out of 128 MiB of chunks: 51.1% hits against
//! 53.5% once they stopped competing (BENCHMARKS.md, "Pinned index blocks
//! beside the cache"). A reader gives its pinned bytes back when it is
//! dropped.
//!
//! Spare buffers: a chunk evicted while no reader holds it is kept (up to
//! [`SPARES_PER_SHARD`] per shard, beside the capacity) for the shard's next
//! miss to decode into ([`ChunkCache::get_or_spare`]), instead of being freed
//! and another 16 KiB allocated: `free` and `malloc` were about 6% of a point
//! read in the equal-state harness (BENCHMARKS.md, "Row timestamps of a fixed
//! width").
//!
//! Who uses it: `SSTableReader::read_chunk` for reads tagged `UserRead` only.
//! Compaction, scrub, verify and large-value range reads bypass it, so a
//! compaction streaming a whole table through does not evict the hot set
//! (Cassandra's compaction reads bypass its chunk cache as well).

use parking_lot::Mutex;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

/// Shards: enough that two reader threads rarely meet on a lock.
pub const SHARDS: usize = 16;

/// The budget of pinned index blocks, as a share of the capacity and beside
/// it: the whole capacity again (128 MiB with the default, the searchable
/// sparse index of about 35 million one-row partitions of 116 bytes, at about
/// 3.6 bytes each). A quarter (the eleventh stop's budget) held half the
/// index of 20 million such partitions; the other half went through the
/// chunk cache, 1.45 lookups per point read instead of 1.015, and readrandom
/// ran at 0.90x RocksDB instead of 1.04x (BENCHMARKS.md, "At 20 million
/// keys").
pub const PINNED_SHARE: usize = 1;

/// Evicted chunks a shard keeps for its next misses to decode into: two,
/// since an insertion usually evicts one chunk and a miss takes one; 16
/// shards x 2 x 16 KiB is 512 KiB beside the capacity at most.
pub const SPARES_PER_SHARD: usize = 2;

/// `(reader serial, chunk index)`.
pub type ChunkKey = (u64, u32);

struct Slot {
    key: ChunkKey,
    data: Arc<[u8]>,
    referenced: bool,
}

/// Chunks evicted by one insertion (usually one).
type Evicted = smallvec::SmallVec<[Arc<[u8]>; 2]>;

/// One shard's CLOCK: a ring of slots the hand sweeps. An evicted slot is
/// left vacant and the next insertion takes it, so a new chunk sits just
/// behind the hand and lives a whole sweep before it can be evicted. (Filling
/// the hole by moving the last slot into it instead put the newest chunk
/// under the hand, and the next insertion evicted it unread.)
#[derive(Default)]
struct Shard {
    /// Keys are reader serials and chunk indexes, not input: a multiply hash
    /// (SipHash was 1% of a point read).
    map: HashMap<ChunkKey, usize, crate::hash::IntHash>,
    slots: Vec<Option<Slot>>,
    /// Vacant slots, the most recently vacated last.
    vacant: Vec<usize>,
    hand: usize,
    bytes: usize,
    /// Evicted chunks no one else held (module docs, "Spare buffers").
    spares: Vec<Arc<[u8]>>,
}

impl Shard {
    /// Evicts with the CLOCK hand until `need` more bytes fit in `capacity`,
    /// moving the evicted chunks to `gone`: the caller frees them after it
    /// unlocks the shard (freeing 16 KiB under the lock was 3% of a read).
    fn make_room(&mut self, need: usize, capacity: usize, gone: &mut Evicted) {
        // Two sweeps at most: the first clears every reference bit it passes.
        while self.bytes + need > capacity && !self.map.is_empty() {
            if self.hand >= self.slots.len() {
                self.hand = 0;
            }
            let at = self.hand;
            self.hand += 1;
            match &mut self.slots[at] {
                None => {}
                Some(slot) if slot.referenced => slot.referenced = false,
                Some(_) => {
                    if let Some(mut slot) = self.slots[at].take() {
                        self.map.remove(&slot.key);
                        self.bytes -= slot.data.len();
                        self.vacant.push(at);
                        // `get_mut` succeeds only if this is the one
                        // reference: no reader can still see the bytes
                        // the next miss overwrites.
                        if self.spares.len() < SPARES_PER_SHARD
                            && Arc::get_mut(&mut slot.data).is_some()
                        {
                            self.spares.push(slot.data);
                        } else {
                            gone.push(slot.data);
                        }
                    }
                }
            }
        }
    }

    /// Places a new slot, in the most recently vacated place if any.
    fn place(&mut self, slot: Slot) -> usize {
        match self.vacant.pop() {
            Some(i) => {
                self.slots[i] = Some(slot);
                i
            }
            None => {
                self.slots.push(Some(slot));
                self.slots.len() - 1
            }
        }
    }
}

/// Figures for `tablestats` (database-wide; per-table hits and misses are in
/// the table's I/O counters).
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize)]
pub struct ChunkCacheStats {
    pub capacity_bytes: u64,
    /// Chunk bytes held now.
    pub size_bytes: u64,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub evictions: u64,
    /// Index blocks pinned in sstable readers, beside the capacity (at most
    /// a [`PINNED_SHARE`] of it).
    pub pinned_bytes: u64,
}

impl ChunkCacheStats {
    /// hits / (hits + misses); 0 before any lookup.
    pub fn hit_rate(&self) -> f64 {
        let all = self.hits + self.misses;
        if all == 0 {
            0.0
        } else {
            self.hits as f64 / all as f64
        }
    }
}

/// The cache of one database.
pub struct ChunkCache {
    shards: Box<[Mutex<Shard>]>,
    capacity_bytes: usize,
    pinned_bytes: AtomicUsize,
    hits: AtomicU64,
    misses: AtomicU64,
    evictions: AtomicU64,
}

impl std::fmt::Debug for ChunkCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ChunkCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .finish()
    }
}

/// A process-wide serial for each opened sstable reader (the first half of a
/// [`ChunkKey`]).
pub fn next_reader_serial() -> u64 {
    static NEXT: AtomicU64 = AtomicU64::new(1);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl ChunkCache {
    /// A cache of at most `capacity_bytes` of chunk data.
    pub fn new(capacity_bytes: usize) -> ChunkCache {
        ChunkCache {
            shards: (0..SHARDS).map(|_| Mutex::new(Shard::default())).collect(),
            capacity_bytes,
            pinned_bytes: AtomicUsize::new(0),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        }
    }

    fn shard(&self, key: ChunkKey) -> &Mutex<Shard> {
        // Fibonacci hashing of both halves: consecutive chunks of one sstable
        // spread over the shards.
        let h = (key.0.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ u64::from(key.1))
            .wrapping_mul(0x9E37_79B9_7F4A_7C15);
        &self.shards[(h >> 60) as usize % SHARDS]
    }

    /// A shard's share of the capacity.
    fn shard_capacity(&self) -> usize {
        self.capacity_bytes / SHARDS
    }

    /// Reserves `bytes` for an index block a reader will keep, if pinned
    /// blocks stay within their budget ([`PINNED_SHARE`]); the caller gives
    /// them back with [`ChunkCache::unpin`].
    pub fn try_pin(&self, bytes: usize) -> bool {
        let limit = self.capacity_bytes / PINNED_SHARE;
        self.pinned_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| {
                p.checked_add(bytes).filter(|&n| n <= limit)
            })
            .is_ok()
    }

    /// Gives back what [`ChunkCache::try_pin`] reserved. Saturating: a
    /// miscount must not wrap into a cache with no room for chunks.
    pub fn unpin(&self, bytes: usize) {
        let _ = self
            .pinned_bytes
            .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |p| {
                Some(p.saturating_sub(bytes))
            });
    }

    /// The cached chunk, marking it recently used; counts a hit or a miss.
    pub fn get(&self, key: ChunkKey) -> Option<Arc<[u8]>> {
        self.lookup(key, None).ok()
    }

    /// As [`get`](Self::get); on a miss, a spare buffer of `len` bytes if the
    /// key's shard holds one (an evicted chunk no one else references, its
    /// old bytes still in it) for the caller to decode into and
    /// [`insert`](Self::insert).
    pub fn get_or_spare(
        &self,
        key: ChunkKey,
        len: usize,
    ) -> std::result::Result<Arc<[u8]>, Option<Arc<[u8]>>> {
        self.lookup(key, Some(len))
    }

    /// [`get`](Self::get), and on a miss a spare of `spare_len` bytes if one
    /// is asked for and the shard holds it.
    fn lookup(
        &self,
        key: ChunkKey,
        spare_len: Option<usize>,
    ) -> std::result::Result<Arc<[u8]>, Option<Arc<[u8]>>> {
        let found = {
            let mut shard = self.shard(key).lock();
            match shard.map.get(&key).copied() {
                Some(i) => shard.slots[i].as_mut().map(|slot| {
                    slot.referenced = true;
                    slot.data.clone()
                }),
                None => None,
            }
            .ok_or_else(|| {
                let len = spare_len?;
                let at = shard.spares.iter().position(|b| b.len() == len)?;
                Some(shard.spares.swap_remove(at))
            })
        };
        let counter = if found.is_ok() {
            &self.hits
        } else {
            &self.misses
        };
        counter.fetch_add(1, Ordering::Relaxed);
        found
    }

    /// Caches `data` under `key` (a chunk larger than a shard's share of the
    /// capacity is not cached). A key already present keeps its first value:
    /// both are the same bytes (module contract).
    pub fn insert(&self, key: ChunkKey, data: Arc<[u8]>) {
        let capacity = self.shard_capacity();
        if data.len() > capacity {
            return;
        }
        let mut gone = Evicted::new();
        let mut shard = self.shard(key).lock();
        if shard.map.contains_key(&key) {
            return;
        }
        shard.make_room(data.len(), capacity, &mut gone);
        shard.bytes += data.len();
        let i = shard.place(Slot {
            key,
            data,
            referenced: false,
        });
        shard.map.insert(key, i);
        drop(shard);
        if !gone.is_empty() {
            self.evictions
                .fetch_add(gone.len() as u64, Ordering::Relaxed);
        }
        drop(gone);
    }

    pub fn stats(&self) -> ChunkCacheStats {
        let (mut size, mut entries) = (0u64, 0u64);
        for s in self.shards.iter() {
            let s = s.lock();
            size += s.bytes as u64;
            entries += s.map.len() as u64;
        }
        ChunkCacheStats {
            capacity_bytes: self.capacity_bytes as u64,
            size_bytes: size,
            entries,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            pinned_bytes: self.pinned_bytes.load(Ordering::Relaxed) as u64,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chunk(seed: u8, len: usize) -> Arc<[u8]> {
        (0..len).map(|i| seed.wrapping_add(i as u8)).collect()
    }

    #[test]
    fn returns_what_was_inserted_and_counts() {
        let c = ChunkCache::new(SHARDS * 4096);
        assert!(c.get((1, 0)).is_none());
        c.insert((1, 0), chunk(7, 1000));
        assert_eq!(c.get((1, 0)).as_deref(), Some(&chunk(7, 1000)[..]));
        assert!(c.get((2, 0)).is_none(), "another reader's chunk 0");
        let s = c.stats();
        assert_eq!((s.hits, s.misses, s.entries, s.size_bytes), (1, 2, 1, 1000));
        // A chunk larger than a shard's share is not cached.
        c.insert((1, 1), chunk(1, 5000));
        assert!(c.get((1, 1)).is_none());
    }

    /// An evicted chunk no reader holds comes back as a spare for a miss in
    /// its shard (the length must match); one a reader still holds is never
    /// handed out, so its bytes never change under the reader.
    #[test]
    fn evicted_chunks_no_one_holds_become_spares_for_misses() {
        // One chunk of 1000 bytes per shard fits: each insertion into a full
        // shard evicts the one before.
        let c = ChunkCache::new(SHARDS * 1000);
        let keys: Vec<ChunkKey> = (0..4_000u32).map(|i| (1, i)).collect();
        let same_shard: Vec<ChunkKey> = keys
            .iter()
            .copied()
            .filter(|&k| std::ptr::eq(c.shard(k), c.shard(keys[0])))
            .take(4)
            .collect();
        let [a, b, d, e] = same_shard[..] else {
            panic!("four keys of one shard: {same_shard:?}");
        };
        c.insert(a, chunk(1, 1000));
        let held = c.get(a).expect("cached");
        c.insert(b, chunk(2, 1000)); // evicts `a`, which a reader holds
        assert_eq!(
            c.get_or_spare(d, 1000),
            Err(None),
            "a held chunk is no spare"
        );
        assert_eq!(held, chunk(1, 1000));
        c.insert(d, chunk(3, 1000)); // evicts `b`, held by no one
        assert_eq!(c.get_or_spare(e, 999), Err(None), "wrong length");
        let spare = c.get_or_spare(e, 1000).expect_err("a miss");
        let mut spare = spare.expect("`b`'s buffer comes back");
        assert_eq!(spare, chunk(2, 1000));
        assert!(Arc::get_mut(&mut spare).is_some(), "no one else holds it");
        assert_eq!(c.get_or_spare(e, 1000), Err(None), "handed out once");
        // Hits and misses count as with `get`.
        assert!(c.get_or_spare(d, 1000).is_ok());
        let s = c.stats();
        assert_eq!((s.hits, s.misses), (2, 4), "{s:?}");
    }

    #[test]
    fn never_holds_more_than_its_capacity_and_keeps_what_is_read() {
        let cap = SHARDS * 10_000;
        let c = ChunkCache::new(cap);
        // A hot key read after every insertion survives a stream of cold ones.
        c.insert((9, 9), chunk(9, 1000));
        for i in 0..5_000u32 {
            c.insert((1, i), chunk(i as u8, 1000));
            assert!(c.get((9, 9)).is_some(), "hot chunk evicted at {i}");
            let s = c.stats();
            assert!(s.size_bytes as usize <= cap, "{s:?}");
        }
        let s = c.stats();
        assert!(s.evictions > 4_000, "{s:?}");
        assert!(s.size_bytes as usize > cap / 2, "the cache fills: {s:?}");
    }

    /// A chunk is read again soon after it was cached (a partition read twice,
    /// the next rows of a scan): it must still be there after a few more
    /// insertions into a full cache. Regression: eviction moved the newest
    /// slot under the hand, so an insertion or two into its shard evicted it
    /// whatever the shard's room: 12% of these re-reads hit, 88% now (a
    /// shard holds 8 chunks and gets 2 of the 32 insertions on average; a
    /// re-read chunk's second chance takes some of the room).
    #[test]
    fn a_new_chunk_outlives_the_next_insertions_into_a_full_cache() {
        let c = ChunkCache::new(SHARDS * 8 * 1000);
        let (mut hits, mut reads) = (0, 0);
        for i in 0..2_000u32 {
            c.insert((3, i), chunk(i as u8, 1000));
            if let Some(back) = i.checked_sub(32) {
                reads += 1;
                if let Some(got) = c.get((3, back)) {
                    assert_eq!(got, chunk(back as u8, 1000));
                    hits += 1;
                }
            }
        }
        let s = c.stats();
        assert!(s.evictions > 1_000, "the cache was full: {s:?}");
        assert!(
            hits * 10 >= reads * 8,
            "{hits} of {reads} re-reads of a chunk cached 32 insertions earlier hit"
        );
    }

    #[test]
    fn pinned_bytes_stay_within_their_share_and_leave_the_chunks_room() {
        let cap = SHARDS * 10_000;
        let c = ChunkCache::new(cap);
        let share = cap / PINNED_SHARE;
        assert!(c.try_pin(share - 100));
        assert!(!c.try_pin(101), "past the pinned share");
        assert!(c.try_pin(100));
        assert_eq!(c.stats().pinned_bytes as usize, share);
        for i in 0..1_000u32 {
            c.insert((1, i), chunk(i as u8, 1000));
        }
        // Chunks fill the whole capacity beside the pinned blocks, and no more.
        let s = c.stats();
        assert!(s.size_bytes as usize <= cap, "{s:?}");
        assert!(s.size_bytes as usize > cap - share, "{s:?}");
        c.unpin(share);
        assert_eq!(c.stats().pinned_bytes, 0);
        assert!(c.try_pin(share));
    }

    #[test]
    fn concurrent_readers_and_writers_see_only_inserted_bytes() {
        let c = Arc::new(ChunkCache::new(SHARDS * 8192));
        let threads: Vec<_> = (0..4u64)
            .map(|t| {
                let c = c.clone();
                std::thread::spawn(move || {
                    for i in 0..20_000u32 {
                        let key = (t % 2, i % 300);
                        let want = chunk((key.0 as u8) ^ (key.1 as u8), 512);
                        match c.get(key) {
                            Some(got) => assert_eq!(got, want),
                            None => c.insert(key, want),
                        }
                    }
                })
            })
            .collect();
        for t in threads {
            t.join().expect("thread");
        }
        let s = c.stats();
        assert!(
            s.hits > 0 && s.size_bytes as usize <= SHARDS * 8192,
            "{s:?}"
        );
    }
}
