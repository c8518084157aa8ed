//! [`SSTableReader`]: an open, immutable sstable, shared as `Arc` by every reader
//! thread and compaction; and [`PartitionScanner`], a sequential iterator.
//!
//! Point lookup: token range and Bloom filter, then a binary search of the
//! in-memory summary, one read of a ~4 KiB index block (checksum verified), then
//! one read per chunk covering the partition (checksum verified, decompressed).
//! User reads go through the database's chunk cache for both. From format
//! version 4 the index is sparse: its entry names the granule of partitions
//! that may hold the key, and the lookup walks the granule's partitions by
//! their framing (the chunks a dense index would read, as the writer starts a
//! granule in every chunk) until it meets the key.

use super::bloom::{BloomFilter, KeyHash};
use super::compression::{decompress_chunk, decompress_chunk_into, decompress_chunk_into_uninit};
use super::format::{
    decode_chunk_table, decode_index_block, decode_summary, open_block, ChunkLocation, Footer,
    IndexBlockIter, IndexCursor, IndexEntry, IndexLayout, RawEntry, RowIndexLocation,
    SearchableIndexBlock, SummaryEntry, FIRST_VERSION_WITH_IDENTITY, FIRST_VERSION_WITH_ROW_INDEX,
    FOOTER_BYTES, FORMAT_VERSION, MAX_TAIL_BYTES,
};
use super::identity::SSTableIdentity;
use super::identity::IDENTITY_PREFIX_BYTES;
use super::partition::{
    decode_partition_in, frame_partition, partition_key_bytes, Frame, HeaderOrder,
};
use super::stats::SSTableStats;
use crate::codec::{MAX_CHUNK_LENGTH_BYTES, MIN_CHUNK_LENGTH_BYTES};
use crate::data::{ClusteringRange, DecoratedKey, PartitionUpdate};
use crate::encoding::Reader;
use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoCounters, IoTag, ReadableFile};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

/// Tag for reading an sstable's tail at open (not attributable to one request).
const OPEN_TAG: IoTag = IoTag::new(IoCause::Metadata);

/// An open sstable. `Send + Sync`; all reads are positional.
#[derive(Debug)]
pub struct SSTableReader {
    id: u64,
    path: PathBuf,
    file: ReadableFile,
    table_io: Option<Arc<IoCounters>>,
    chunk_length: u64,
    uncompressed_bytes: u64,
    pub(super) chunks: Vec<ChunkLocation>,
    pub(super) summary: Vec<SummaryEntry>,
    index_bytes: u64,
    bloom: BloomFilter,
    /// Where the filter's block starts (named by `verify` when the filter
    /// refuses a key the file holds).
    filter_offset: u64,
    stats: SSTableStats,
    bloom_true_positives: AtomicU64,
    bloom_false_positives: AtomicU64,
    obsolete: AtomicBool,
    format_version: u32,
    /// Version 2 and later; `None` for version-1 files.
    identity: Option<SSTableIdentity>,
    /// CRC32C of every byte from the chunk table to the end of the file.
    tail_crc32c: u32,
    /// The dictionary its codec names, loaded at open from the sstable's own
    /// directory (`crate::dictionary`, invariant 4: no dictionary, no open).
    dictionary: Option<Arc<crate::dictionary::CompressionDictionary>>,
    /// This open's key in the chunk cache (`crate::chunk_cache`).
    cache_serial: u64,
    pinned: PinnedIndex,
}

/// Searchable index blocks user reads built and a reader keeps, one slot per
/// summary entry, within the chunk cache's pinned share (`crate::chunk_cache`,
/// "Pinned index blocks").
struct PinnedIndex {
    slots: Box<[std::sync::OnceLock<Arc<[u8]>>]>,
    /// Bytes held, given back to the chunk cache on drop.
    bytes: std::sync::atomic::AtomicUsize,
}

impl std::fmt::Debug for PinnedIndex {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "PinnedIndex({} bytes)",
            self.bytes.load(Ordering::Relaxed)
        )
    }
}

/// Whether a caller already tested a key against an sstable's key range and
/// Bloom filter (a read tests every live sstable once, then reads the admitting
/// ones: testing again would hash and probe twice).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Admitted {
    Yes,
    No,
}

/// Where [`SSTableReader::locate`] found a partition.
pub(super) struct Located {
    pub offset: u64,
    pub length: u64,
    pub row_index: Option<RowIndexLocation>,
    /// The partition's bytes, when finding it meant reading them (a walk of
    /// a sparse index's granule), so that the caller does not read them again.
    pub bytes: Option<Vec<u8>>,
}

/// Chunk-cache keys of index blocks have this bit set in their second half,
/// chunks do not: one key space per reader for both (a data stream of 2^31
/// chunks is 32 TiB at the smallest chunk length, far past any sstable).
const INDEX_BLOCK_KEY_BIT: u32 = 1 << 31;

/// A decompressed chunk: shared with the chunk cache, or in the caller's
/// scratch buffer.
pub(super) enum ChunkBytes<'a> {
    Cached(Arc<[u8]>),
    Read(&'a [u8]),
}

impl std::ops::Deref for ChunkBytes<'_> {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            ChunkBytes::Cached(c) => c,
            ChunkBytes::Read(r) => r,
        }
    }
}

/// A decompressed chunk its holder keeps: the chunk cache's own allocation
/// (a user read: holding it copies nothing), or read for the holder alone
/// (compaction, scrub and verify bypass the cache).
#[derive(Debug)]
pub(super) enum HeldChunk {
    Cached(Arc<[u8]>),
    Read(Vec<u8>),
}

impl std::ops::Deref for HeldChunk {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            HeldChunk::Cached(c) => c,
            HeldChunk::Read(r) => r,
        }
    }
}

fn corrupt(path: &Path, offset: u64, reason: impl Into<String>) -> Error {
    Error::corruption(path, offset, reason)
}

impl SSTableReader {
    /// Opens `path`, validating the footer (magic, checksum, version), every tail
    /// block's checksum, and that chunks and index blocks tile the file (invariant 1).
    pub fn open(
        fs: &Fs,
        path: &Path,
        id: u64,
        table_io: Option<Arc<IoCounters>>,
    ) -> Result<Arc<SSTableReader>> {
        Self::open_inner(fs, path, id, table_io, false)
    }

    /// For salvage only: like [`open`](Self::open), but a damaged identity
    /// header is no reason to refuse a file whose tail is sound (the tail records
    /// chunk length, codec and encoding base too). The reader then has no
    /// identity, and the header's bytes, whatever they hold, end where the first
    /// chunk or index block begins.
    pub(crate) fn open_for_salvage(fs: &Fs, path: &Path, id: u64) -> Result<Arc<SSTableReader>> {
        Self::open_inner(fs, path, id, None, true)
    }

    fn open_inner(
        fs: &Fs,
        path: &Path,
        id: u64,
        table_io: Option<Arc<IoCounters>>,
        tolerate_bad_header: bool,
    ) -> Result<Arc<SSTableReader>> {
        let file = fs.open(path)?;
        let len = file.len();
        if len < FOOTER_BYTES as u64 {
            return Err(corrupt(
                path,
                0,
                format!("file of {len} bytes is shorter than a footer"),
            ));
        }
        let footer_offset = len - FOOTER_BYTES as u64;
        let mut fb = [0u8; FOOTER_BYTES];
        file.read_exact_at(&mut fb, footer_offset, OPEN_TAG, table_io.as_deref())?;
        let footer = Footer::decode(&fb)
            .map_err(|(at, reason)| corrupt(path, footer_offset + at, reason))?;
        let f = &footer;
        if !(f.chunk_table_offset <= f.summary_offset
            && f.summary_offset <= f.filter_offset
            && f.filter_offset <= f.stats_offset
            && f.stats_offset <= footer_offset)
        {
            return Err(corrupt(
                path,
                footer_offset,
                format!("footer block offsets out of order: {f:?}"),
            ));
        }
        // The writer's own bounds (codec.rs): a chunk buffer is allocated at
        // this length for every read.
        if !(MIN_CHUNK_LENGTH_BYTES..=MAX_CHUNK_LENGTH_BYTES).contains(&f.chunk_length_bytes) {
            return Err(corrupt(
                path,
                footer_offset + 40,
                format!(
                    "chunk length {} bytes outside {MIN_CHUNK_LENGTH_BYTES}..={MAX_CHUNK_LENGTH_BYTES}",
                    f.chunk_length_bytes
                ),
            ));
        }
        // Bounded before it is allocated (MAX_TAIL_BYTES): the footer's offsets
        // are bounded by the file already, but a sparse file can be any size.
        let tail_len = footer_offset - f.chunk_table_offset;
        if tail_len > MAX_TAIL_BYTES {
            return Err(corrupt(
                path,
                footer_offset,
                format!(
                    "footer places a tail of {tail_len} bytes at offset {}: more than \
                     {MAX_TAIL_BYTES} bytes, the most an sstable's tail holds",
                    f.chunk_table_offset
                ),
            ));
        }
        let mut tail = vec![0u8; tail_len as usize];
        file.read_exact_at(
            &mut tail,
            f.chunk_table_offset,
            OPEN_TAG,
            table_io.as_deref(),
        )?;
        // The file's digest as the manifest records it (docs/FORMAT.md,
        // "Manifest"): the tail and the footer, bytes this open reads anyway.
        let tail_crc32c = crc32c::crc32c_append(crc32c::crc32c(&tail), &fb);
        let block = |from: u64, to: u64| -> Result<&[u8]> {
            let s =
                &tail[(from - f.chunk_table_offset) as usize..(to - f.chunk_table_offset) as usize];
            open_block(s).map_err(|reason| corrupt(path, from, reason))
        };
        let chunks = decode_chunk_table(block(f.chunk_table_offset, f.summary_offset)?)
            .map_err(|e| corrupt(path, f.chunk_table_offset, format!("chunk table: {}", e.0)))?;
        let summary = decode_summary(block(f.summary_offset, f.filter_offset)?)
            .map_err(|e| corrupt(path, f.summary_offset, format!("summary: {}", e.0)))?;
        let bloom = BloomFilter::decode(block(f.filter_offset, f.stats_offset)?)
            .map_err(|e| corrupt(path, f.filter_offset, format!("bloom filter: {e}")))?;
        let stats_payload = block(f.stats_offset, footer_offset)?;
        let mut sr = Reader::new(stats_payload);
        let stats = SSTableStats::decode(&mut sr, f.format_version)
            .map_err(|e| corrupt(path, f.stats_offset, format!("statistics: {}", e.0)))?;
        if !sr.is_empty() {
            return Err(corrupt(path, f.stats_offset, "statistics: trailing bytes"));
        }

        // The chunk grid must match the data-stream length (invariant 4).
        let cl = f.chunk_length_bytes as u64;
        let expected_chunks = f.uncompressed_bytes.div_ceil(cl);
        if chunks.len() as u64 != expected_chunks
            || stats.uncompressed_bytes != f.uncompressed_bytes
        {
            return Err(corrupt(
                path,
                f.chunk_table_offset,
                format!(
                    "{} chunks for {} uncompressed bytes (stats say {}) at {} bytes per chunk",
                    chunks.len(),
                    f.uncompressed_bytes,
                    stats.uncompressed_bytes,
                    cl
                ),
            ));
        }
        if summary.is_empty() {
            return Err(corrupt(
                path,
                f.summary_offset,
                "summary lists no index block",
            ));
        }
        // Version 2: the identity header at offset 0 is the first region.
        let mut identity = None;
        let mut regions: Vec<(u64, u64)> = Vec::with_capacity(chunks.len() + summary.len() + 1);
        if f.format_version >= FIRST_VERSION_WITH_IDENTITY {
            let checked = read_identity(&file, path, f.chunk_table_offset, &table_io).and_then(
                |(ident, header_len)| {
                    if ident.chunk_length_bytes != f.chunk_length_bytes {
                        return Err(corrupt(
                            path,
                            0,
                            format!(
                                "identity header says {} bytes per chunk, the footer {}",
                                ident.chunk_length_bytes, f.chunk_length_bytes
                            ),
                        ));
                    }
                    Ok((ident, header_len))
                },
            );
            match checked {
                Ok((ident, header_len)) => {
                    identity = Some(ident);
                    regions.push((0, header_len));
                }
                Err(Error::Corruption { .. }) if tolerate_bad_header => {
                    let first = chunks
                        .iter()
                        .map(|c| c.offset)
                        .chain(summary.iter().map(|s| s.offset))
                        .min()
                        .unwrap_or(0);
                    if first > 0 {
                        regions.push((0, first));
                    }
                }
                Err(e) => return Err(e),
            }
        }
        // Invariant 1: the identity header, chunks and index blocks tile
        // [0, chunk_table_offset).
        regions.extend(chunks.iter().map(|c| (c.offset, c.length as u64)));
        regions.extend(summary.iter().map(|s| (s.offset, s.length)));
        regions.sort_unstable();
        let mut end = 0u64;
        for (offset, length) in regions {
            if offset != end {
                return Err(corrupt(
                    path,
                    end.min(offset),
                    "chunks and index blocks do not tile the file",
                ));
            }
            end = offset + length;
        }
        if end != f.chunk_table_offset {
            return Err(corrupt(
                path,
                end,
                "chunks and index blocks do not reach the chunk table",
            ));
        }
        if summary[0].first_key != stats.first_key {
            return Err(corrupt(
                path,
                f.summary_offset,
                "first index key differs from the statistics' first key",
            ));
        }
        let index_bytes = summary.iter().map(|s| s.length).sum();
        let dictionary = match stats.codec.dictionary() {
            Some(dict) => {
                let dir = crate::dictionary::dir_for(path);
                Some(crate::dictionary::load(fs, &dir, dict).map_err(|e| {
                    Error::InvalidInput(format!(
                        "{} is compressed with dictionary {dict}, which cannot be loaded: {e}",
                        path.display()
                    ))
                })?)
            }
            None => None,
        };
        let pinned = PinnedIndex {
            slots: (0..summary.len())
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            bytes: std::sync::atomic::AtomicUsize::new(0),
        };
        Ok(Arc::new(SSTableReader {
            id,
            path: path.to_path_buf(),
            file,
            table_io,
            chunk_length: cl,
            uncompressed_bytes: f.uncompressed_bytes,
            chunks,
            summary,
            index_bytes,
            bloom,
            filter_offset: f.filter_offset,
            stats,
            bloom_true_positives: AtomicU64::new(0),
            bloom_false_positives: AtomicU64::new(0),
            obsolete: AtomicBool::new(false),
            format_version: f.format_version,
            identity,
            tail_crc32c,
            dictionary,
            cache_serial: crate::chunk_cache::next_reader_serial(),
            pinned,
        }))
    }

    /// The dictionary this sstable's chunks are compressed with, if any.
    pub fn dictionary(&self) -> Option<&Arc<crate::dictionary::CompressionDictionary>> {
        self.dictionary.as_ref()
    }

    /// The footer's format version (1 or 2).
    pub fn format_version(&self) -> u32 {
        self.format_version
    }

    /// Who the file was written for (format version 2 and later).
    pub fn identity(&self) -> Option<&SSTableIdentity> {
        self.identity.as_ref()
    }

    /// CRC32C of the file's tail, from the chunk table to its last byte (the
    /// chunk table, summary, filter, statistics and footer): the digest the
    /// manifest records so that open can refuse a substitute (docs/FORMAT.md,
    /// "Manifest"). Computed at open from bytes the open reads anyway.
    pub fn tail_crc32c(&self) -> u32 {
        self.tail_crc32c
    }

    /// `(file offset, stored length)` of every index block, in key order: what a
    /// test damages to check that scrub resynchronises through the data stream.
    pub fn index_block_ranges(&self) -> Vec<(u64, u64)> {
        self.summary.iter().map(|s| (s.offset, s.length)).collect()
    }

    /// `(file offset, stored length)` of every chunk, in data-stream order.
    pub fn chunk_ranges(&self) -> Vec<(u64, u64)> {
        self.chunks
            .iter()
            .map(|c| (c.offset, u64::from(c.length)))
            .collect()
    }

    /// Uncompressed bytes per chunk (the last may hold fewer).
    pub fn chunk_length(&self) -> u64 {
        self.chunk_length
    }

    /// Length of the data stream.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.uncompressed_bytes
    }

    /// Chunk `i` verified and decompressed (salvage reads chunk by chunk).
    pub(crate) fn chunk(&self, i: usize, tag: IoTag) -> Result<Vec<u8>> {
        let mut out = Vec::with_capacity(self.chunk_length as usize);
        self.read_chunk(i, tag, &mut out)?;
        Ok(out)
    }

    /// The entries of index block `b`, verified (salvage uses the blocks that
    /// are intact as exact partition boundaries).
    pub(crate) fn index_block(&self, b: usize, tag: IoTag) -> Result<Vec<IndexEntry>> {
        self.decode_index_block(b, tag)
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The statistics as loaded, to make them lie (tests of `verify`).
    #[cfg(test)]
    pub(crate) fn stats_mut(&mut self) -> &mut SSTableStats {
        &mut self.stats
    }

    pub fn stats(&self) -> &SSTableStats {
        &self.stats
    }

    pub fn file_size(&self) -> u64 {
        self.file.len()
    }

    pub fn first_key(&self) -> &DecoratedKey {
        &self.stats.first_key
    }

    pub fn last_key(&self) -> &DecoratedKey {
        &self.stats.last_key
    }

    /// Bytes of partition index blocks on disk.
    pub fn index_bytes(&self) -> u64 {
        self.index_bytes
    }

    /// Bytes of the Bloom filter's bit array, held in memory ("Bloom filter space used").
    pub fn filter_bytes(&self) -> u64 {
        self.bloom.size_bytes()
    }

    /// Every partition's key and length in the data stream, in order: what
    /// the blob strategy's accounting walks. A dense index (before version 4)
    /// and a sparse index's one-partition granules answer alone; a granule of
    /// several (small) partitions is read and walked by its framing.
    pub fn partition_spans(&self, tag: IoTag) -> Result<Vec<(DecoratedKey, u64)>> {
        let mut out = Vec::with_capacity(self.stats.partition_count as usize);
        for b in 0..self.summary.len() {
            for e in self.decode_index_block(b, tag)? {
                if e.partitions == 1 {
                    out.push((e.key, e.length));
                    continue;
                }
                let bytes = self.read_range(e.offset, e.length, tag)?;
                let mut walk =
                    GranuleWalk::new(e.offset, e.length, e.partitions, self.header_order());
                while let Some((at, p)) = walk
                    .next(&e.key.key, &bytes, e.offset)
                    .map_err(|r| self.corrupt_data(walk.pos, r))?
                {
                    let key = if at == e.offset {
                        e.key.clone()
                    } else {
                        DecoratedKey::new(
                            partition_key_bytes(p, self.header_order())
                                .map_err(|d| self.corrupt_data(at, d.0))?,
                        )
                    };
                    out.push((key, p.len() as u64));
                }
            }
        }
        Ok(out)
    }

    /// Index blocks (= summary entries) held in memory.
    pub fn index_block_count(&self) -> usize {
        self.summary.len()
    }

    pub fn chunk_count(&self) -> usize {
        self.chunks.len()
    }

    pub fn bloom_true_positives(&self) -> u64 {
        self.bloom_true_positives.load(Ordering::Relaxed)
    }

    pub fn bloom_false_positives(&self) -> u64 {
        self.bloom_false_positives.load(Ordering::Relaxed)
    }

    /// Whether the key is in this sstable's key range and passes the Bloom filter.
    pub fn may_contain(&self, key: &DecoratedKey) -> bool {
        self.may_contain_hashed(key, &mut None)
    }

    /// As [`may_contain`](Self::may_contain), hashing the key at most once
    /// across the sstables a read tests (`hash` carries it from one to the
    /// next), and only for an sstable whose key range admits it.
    pub fn may_contain_hashed(&self, key: &DecoratedKey, hash: &mut Option<KeyHash>) -> bool {
        self.in_range(key)
            && self
                .bloom
                .may_contain(*hash.get_or_insert_with(|| KeyHash::of(&key.key)))
    }

    fn in_range(&self, key: &DecoratedKey) -> bool {
        *key >= self.stats.first_key && *key <= self.stats.last_key
    }

    /// After this, the file is queued for deletion when the last `Arc` drops
    /// (and unlinked by the runtime, see `Drop`), so reads in flight finish
    /// against a file that still exists (compaction relies on it).
    pub fn mark_obsolete(&self) {
        self.obsolete.store(true, Ordering::Release);
    }

    pub fn is_obsolete(&self) -> bool {
        self.obsolete.load(Ordering::Acquire)
    }

    fn expected_chunk_len(&self, i: usize) -> usize {
        let start = i as u64 * self.chunk_length;
        (self.uncompressed_bytes - start).min(self.chunk_length) as usize
    }

    /// Whether index entries carry row-index locations (version 3 and later).
    pub(super) fn has_row_index(&self) -> bool {
        self.format_version >= FIRST_VERSION_WITH_ROW_INDEX
    }

    /// The fields of this file's index entries.
    pub(super) fn index_layout(&self) -> IndexLayout {
        IndexLayout::for_version(self.format_version)
    }

    pub(super) fn base(&self) -> &crate::encoding::EncodingBase {
        &self.stats.base
    }

    /// Where this file's partitions keep their flags (by format version).
    pub(super) fn header_order(&self) -> HeaderOrder {
        HeaderOrder::for_version(self.format_version)
    }

    /// A corruption error for data-stream offset `data_offset`, naming the file
    /// offset of the chunk that holds it (invariant 2).
    pub(super) fn corrupt_data(&self, data_offset: u64, reason: impl Into<String>) -> Error {
        let at = self
            .chunks
            .get((data_offset / self.chunk_length) as usize)
            .map_or(0, |c| c.offset);
        corrupt(
            &self.path,
            at,
            format!("data offset {data_offset}: {}", reason.into()),
        )
    }

    /// Reads, verifies and decompresses chunk `i`, appending it to `out`. A
    /// user read goes through the database's chunk cache, if it has one
    /// ([`chunk_cached`](Self::chunk_cached)).
    pub(super) fn read_chunk(&self, i: usize, tag: IoTag, out: &mut Vec<u8>) -> Result<()> {
        if self.cache_slot(tag, i, false).is_none() {
            // Uncached (compaction, scans, verify): decompress straight into
            // `out`, no copy through a scratch chunk.
            return self.read_chunk_reusing(i, tag, &mut Vec::new(), out);
        }
        let mut scratch = Vec::new();
        let chunk = self.chunk_cached(i, tag, &mut Vec::new(), &mut scratch)?;
        out.extend_from_slice(&chunk);
        Ok(())
    }

    /// Chunk `i` to keep: shared with the chunk cache for a user read (no copy
    /// of a cached chunk, where [`read_chunk`](Self::read_chunk) copies it
    /// out), else decompressed into a buffer of its own.
    pub(super) fn chunk_held(&self, i: usize, tag: IoTag) -> Result<HeldChunk> {
        let mut out = Vec::new();
        let cached = match self.chunk_cached(i, tag, &mut Vec::new(), &mut out)? {
            ChunkBytes::Cached(c) => Some(c),
            // Uncached: decompressed into `out`, which the holder keeps.
            ChunkBytes::Read(_) => None,
        };
        Ok(cached.map_or(HeldChunk::Read(out), HeldChunk::Cached))
    }

    /// The database's chunk cache and this reader's key in it for chunk `i`
    /// (or index block `i` when `index_block`), if `tag` is a user read and
    /// the database has a cache: the one place that decides what is cached
    /// (`crate::chunk_cache`: user reads only).
    fn cache_slot(
        &self,
        tag: IoTag,
        i: usize,
        index_block: bool,
    ) -> Option<(
        &Arc<crate::chunk_cache::ChunkCache>,
        crate::chunk_cache::ChunkKey,
    )> {
        if tag.cause != crate::fs::IoCause::UserRead {
            return None;
        }
        let cache = self.file.fs().chunk_cache()?;
        // An index past the key bit is past any real file (32 TiB of chunks):
        // such a read goes uncached and fails as it would without a cache.
        let index = u32::try_from(i).ok().filter(|&x| x < INDEX_BLOCK_KEY_BIT)?;
        let index = if index_block {
            index | INDEX_BLOCK_KEY_BIT
        } else {
            index
        };
        Some((cache, (self.cache_serial, index)))
    }

    /// Chunk `i`, verified and decompressed (its stored bytes read through
    /// `stored`). A user read takes it from the database's chunk cache when
    /// it holds it (a hit copies nothing), else decodes it into a new
    /// allocation that the cache keeps. Other reads (compaction, scrub,
    /// verify) never touch the cache (`crate::chunk_cache`): they decode into
    /// `scratch`.
    pub(super) fn chunk_cached<'a>(
        &self,
        i: usize,
        tag: IoTag,
        stored: &mut Vec<u8>,
        scratch: &'a mut Vec<u8>,
    ) -> Result<ChunkBytes<'a>> {
        let Some((cache, key)) = self.cache_slot(tag, i, false) else {
            scratch.clear();
            self.read_chunk_reusing(i, tag, stored, scratch)?;
            return Ok(ChunkBytes::Read(scratch));
        };
        let spare = match cache.get_or_spare(key, self.expected_chunk_len(i)) {
            Ok(chunk) => {
                if let Some(io) = &self.table_io {
                    io.count_chunk_cache(true);
                }
                return Ok(ChunkBytes::Cached(chunk));
            }
            Err(spare) => spare,
        };
        let chunk = self.read_chunk_shared(i, tag, stored, spare)?;
        cache.insert(key, chunk.clone());
        if let Some(io) = &self.table_io {
            io.count_chunk_cache(false);
        }
        Ok(ChunkBytes::Cached(chunk))
    }

    /// Chunk `i` decoded straight into a new shared allocation, the one the
    /// chunk cache keeps: a miss no longer decodes into a scratch buffer and
    /// copies 16 KiB out of it. (The copy was 7.6% of a point read; the first
    /// touch of the new allocation now costs about as much, BENCHMARKS.md
    /// "Reads in equal states: profiled", but it is one allocation, not two.)
    /// With `spare`, a buffer of the chunk's length the cache evicted and no
    /// one else holds, it decodes into that instead and allocates nothing.
    fn read_chunk_shared(
        &self,
        i: usize,
        tag: IoTag,
        stored: &mut Vec<u8>,
        spare: Option<Arc<[u8]>>,
    ) -> Result<Arc<[u8]>> {
        let offset = self.read_stored_chunk(i, tag, stored)?;
        let len = self.expected_chunk_len(i);
        if let Some(mut chunk) = spare {
            if let Some(dst) = Arc::get_mut(&mut chunk).filter(|d| d.len() == len) {
                decompress_chunk_into(stored, dst, self.dictionary.as_deref()).map_err(
                    |reason| corrupt(&self.path, offset, format!("chunk {i}: {reason}")),
                )?;
                return Ok(chunk);
            }
        }
        // One allocation of the exact length, not zeroed: the decoder
        // writes every byte of it (zeroing first was 7% of a point read).
        let mut chunk = Arc::<[u8]>::new_uninit_slice(self.expected_chunk_len(i));
        let dst = Arc::get_mut(&mut chunk)
            .ok_or_else(|| corrupt(&self.path, offset, "a new chunk buffer is shared"))?;
        decompress_chunk_into_uninit(stored, dst, self.dictionary.as_deref())
            .map_err(|reason| corrupt(&self.path, offset, format!("chunk {i}: {reason}")))?;
        // SAFETY: the decode succeeded, which initializes every byte.
        Ok(unsafe { chunk.assume_init() })
    }

    /// As [`read_chunk`](Self::read_chunk), reading the stored bytes into
    /// `stored` (resized as needed), so a caller reading many chunks allocates
    /// one stored-chunk buffer, not one per chunk (large-value reads).
    pub(super) fn read_chunk_reusing(
        &self,
        i: usize,
        tag: IoTag,
        stored: &mut Vec<u8>,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        let offset = self.read_stored_chunk(i, tag, stored)?;
        decompress_chunk(
            stored,
            self.expected_chunk_len(i),
            self.dictionary.as_deref(),
            out,
        )
        .map_err(|reason| corrupt(&self.path, offset, format!("chunk {i}: {reason}")))
    }

    /// Reads chunk `i` as stored (codec byte, payload, checksum) into
    /// `stored`; returns its file offset.
    fn read_stored_chunk(&self, i: usize, tag: IoTag, stored: &mut Vec<u8>) -> Result<u64> {
        let loc = *self
            .chunks
            .get(i)
            .ok_or_else(|| corrupt(&self.path, 0, format!("chunk {i} is past the last chunk")))?;
        stored.clear();
        stored.resize(loc.length as usize, 0);
        self.file
            .read_exact_at(stored, loc.offset, tag, self.table_io.as_deref())?;
        Ok(loc.offset)
    }

    /// Reads index block `b` and returns its verified payload.
    fn read_index_block(&self, b: usize, tag: IoTag) -> Result<Vec<u8>> {
        let s = &self.summary[b];
        let len = usize::try_from(s.length)
            .map_err(|_| corrupt(&self.path, s.offset, "index block too large"))?;
        let mut stored = vec![0u8; len];
        self.file
            .read_exact_at(&mut stored, s.offset, tag, self.table_io.as_deref())?;
        let payload_len = open_block(&stored)
            .map_err(|r| corrupt(&self.path, s.offset, format!("index block {b}: {r}")))?
            .len();
        stored.truncate(payload_len);
        Ok(stored)
    }

    /// Index block `b` in its searchable form (`SearchableIndexBlock`) for a
    /// point lookup. A user read goes through the chunk cache (key space above
    /// [`INDEX_BLOCK_KEY_BIT`]), so a hot partition costs no `pread` of its
    /// index block, and no decoding of the entries before its own.
    fn index_block_cached(&self, b: usize, tag: IoTag) -> Result<Arc<[u8]>> {
        let searchable = |payload: Vec<u8>| -> Result<Arc<[u8]>> {
            SearchableIndexBlock::build(&payload, self.index_layout())
                .map(Arc::from)
                .map_err(|e| {
                    corrupt(
                        &self.path,
                        self.summary[b].offset,
                        format!("index block {b}: {}", e.0),
                    )
                })
        };
        let Some((cache, key)) = self.cache_slot(tag, b, true) else {
            return searchable(self.read_index_block(b, tag)?);
        };
        let slot = self.pinned.slots.get(b);
        if let Some(block) = slot.and_then(|s| s.get()) {
            return Ok(block.clone());
        }
        let hit = cache.get(key);
        if let Some(io) = &self.table_io {
            io.count_chunk_cache(hit.is_some());
        }
        if let Some(block) = hit {
            return Ok(block);
        }
        let block = searchable(self.read_index_block(b, tag)?)?;
        if let Some(slot) = slot.filter(|_| cache.try_pin(block.len())) {
            match slot.set(block.clone()) {
                Ok(()) => {
                    self.pinned.bytes.fetch_add(block.len(), Ordering::Relaxed);
                }
                // Another read pinned it first.
                Err(_) => cache.unpin(block.len()),
            }
        } else {
            cache.insert(key, block.clone());
        }
        Ok(block)
    }

    fn decode_index_block(&self, b: usize, tag: IoTag) -> Result<Vec<IndexEntry>> {
        let payload = self.read_index_block(b, tag)?;
        let s = &self.summary[b];
        let entries = decode_index_block(&payload, self.index_layout())
            .map_err(|e| corrupt(&self.path, s.offset, format!("index block {b}: {}", e.0)))?;
        if entries.first().map(|e| &e.key) != Some(&s.first_key) {
            return Err(corrupt(
                &self.path,
                s.offset,
                format!("index block {b} does not start at its summary key"),
            ));
        }
        Ok(entries)
    }

    /// The index block that would hold `key`, if any.
    fn block_for(&self, key: &DecoratedKey) -> Option<usize> {
        self.summary
            .partition_point(|s| s.first_key <= *key)
            .checked_sub(1)
    }

    /// Data-stream bytes `[offset, offset + length)`.
    pub(super) fn read_range(&self, offset: u64, length: u64, tag: IoTag) -> Result<Vec<u8>> {
        offset
            .checked_add(length)
            .filter(|&e| e <= self.uncompressed_bytes)
            .ok_or_else(|| {
                corrupt(
                    &self.path,
                    0,
                    format!("index points past the data stream: {offset}+{length}"),
                )
            })?;
        // Whole chunks straight into the result, the partial first and last
        // through one scratch chunk, one stored-chunk buffer for all
        // (`read_value_range`): no over-sized buffer to cut down afterwards, and
        // a 16 MiB partition no longer allocates 1024 stored-chunk buffers.
        let mut buf = Vec::new();
        self.read_value_range(offset, length, tag, &mut buf)?;
        Ok(buf)
    }

    fn decode_at(
        &self,
        entry_key: &DecoratedKey,
        offset: u64,
        bytes: &[u8],
    ) -> Result<PartitionUpdate> {
        self.decode_at_in(entry_key, offset, bytes, None)
    }

    /// [`decode_at`](Self::decode_at) keeping the rows in `range` alone.
    fn decode_at_in(
        &self,
        entry_key: &DecoratedKey,
        offset: u64,
        bytes: &[u8],
        range: Option<&ClusteringRange>,
    ) -> Result<PartitionUpdate> {
        decode_partition_in(
            bytes,
            entry_key,
            &self.stats.base,
            self.header_order(),
            range,
        )
        .map_err(|e| {
            let chunk = self.chunks[(offset / self.chunk_length) as usize];
            corrupt(
                &self.path,
                chunk.offset,
                format!("partition at data offset {offset}: {}", e.0),
            )
        })
    }

    /// Where partition `key` is, or `None` if this sstable does not hold it
    /// (counting Bloom filter outcomes).
    pub(super) fn locate(
        &self,
        key: &DecoratedKey,
        tag: IoTag,
        admitted: Admitted,
    ) -> Result<Option<Located>> {
        if admitted == Admitted::No && !self.may_contain(key) {
            return Ok(None);
        }
        let Some(b) = self.block_for(key) else {
            self.bloom_false_positives.fetch_add(1, Ordering::Relaxed);
            return Ok(None);
        };
        let block = self.index_block_cached(b, tag)?;
        let block_offset = self.summary[b].offset;
        let bad = |e: crate::encoding::DecodeError| {
            corrupt(
                &self.path,
                block_offset,
                format!("index block {b}: {}", e.0),
            )
        };
        // The last entry not after the key: the key's own entry in a dense
        // index, the granule that may hold it in a sparse one.
        let mut it = SearchableIndexBlock::seek_floor(&block, key.token, self.index_layout())
            .map_err(bad)?;
        let mut floor: Option<RawEntry<'_>> = None;
        while let Some(e) = it.next_entry().map_err(bad)? {
            if (e.token, e.key) > (key.token, &key.key[..]) {
                break;
            }
            floor = Some(e);
        }
        let found = match floor {
            None => None,
            Some(e) if e.partitions == 1 => (e.key == &key.key[..]).then_some(Located {
                offset: e.offset,
                length: e.length,
                row_index: e.row_index,
                bytes: None,
            }),
            Some(e) => self.find_in_granule(&e, key, tag)?,
        };
        match found {
            None => self.bloom_false_positives.fetch_add(1, Ordering::Relaxed),
            Some(_) => self.bloom_true_positives.fetch_add(1, Ordering::Relaxed),
        };
        Ok(found)
    }

    /// Walks granule `e` (of several partitions) for partition `key`: its
    /// first chunk, then, if the walk runs off that chunk, the rest of the
    /// granule in one read (only a granule's last partition can, as the
    /// writer starts a granule in each chunk).
    fn find_in_granule(
        &self,
        e: &RawEntry<'_>,
        key: &DecoratedKey,
        tag: IoTag,
    ) -> Result<Option<Located>> {
        let mut walk = GranuleWalk::new(e.offset, e.length, e.partitions, self.header_order());
        let (mut stored, mut scratch) = (Vec::new(), Vec::new());
        let first = (e.offset / self.chunk_length) as usize;
        let chunk = self.chunk_cached(first, tag, &mut stored, &mut scratch)?;
        let first_start = first as u64 * self.chunk_length;
        if let Some(found) = self.walk_to(&mut walk, e.key, &chunk, first_start, key)? {
            return Ok(Some(found));
        }
        if walk.done() {
            return Ok(None);
        }
        let start = walk.pos;
        let rest = self.read_range(start, walk.end - start, tag)?;
        match self.walk_to(&mut walk, e.key, &rest, start, key)? {
            Some(found) => Ok(Some(found)),
            None if walk.done() => Ok(None),
            None => Err(self.corrupt_data(walk.pos, "partition runs past its granule")),
        }
    }

    /// Walks on through `window` (data-stream bytes from `window_start`)
    /// until partition `key`, the granule's end or the window's end.
    fn walk_to(
        &self,
        walk: &mut GranuleWalk,
        first_key: &[u8],
        window: &[u8],
        window_start: u64,
        key: &DecoratedKey,
    ) -> Result<Option<Located>> {
        while let Some((at, bytes)) = walk
            .next(first_key, window, window_start)
            .map_err(|r| self.corrupt_data(walk.pos, r))?
        {
            if partition_key_bytes(bytes, self.header_order()).is_ok_and(|k| k == &key.key[..]) {
                return Ok(Some(Located {
                    offset: at,
                    length: bytes.len() as u64,
                    row_index: None,
                    bytes: Some(bytes.to_vec()),
                }));
            }
        }
        Ok(None)
    }

    /// Whether this sstable holds partition `key` (`nodetool getsstables`):
    /// the Bloom filter, then the index, without reading the partition.
    pub fn holds(&self, key: &DecoratedKey, tag: IoTag) -> Result<bool> {
        if !self.may_contain(key) {
            return Ok(false);
        }
        Ok(self.locate(key, tag, Admitted::No)?.is_some())
    }

    /// The whole partition `key`, or `None` if this sstable does not hold it.
    pub fn read_partition(
        &self,
        key: &DecoratedKey,
        tag: IoTag,
    ) -> Result<Option<PartitionUpdate>> {
        let Some(at) = self.locate(key, tag, Admitted::No)? else {
            return Ok(None);
        };
        let bytes = match at.bytes {
            Some(b) => b,
            None => self.read_range(at.offset, at.length, tag)?,
        };
        self.decode_at(key, at.offset, &bytes).map(Some)
    }

    /// The rows of partition `key` in `range`, in clustering order or reversed,
    /// read lazily: with a row index (version 3, large partitions) only the row
    /// blocks and index nodes a read reaches are read and decoded (see
    /// [`SSTableSlice`](super::SSTableSlice)). `None` if this sstable does not
    /// hold the partition.
    pub fn slice(
        self: &Arc<Self>,
        key: &DecoratedKey,
        range: &ClusteringRange,
        reversed: bool,
        tag: IoTag,
    ) -> Result<Option<super::SSTableSlice>> {
        self.slice_admitted(key, range, reversed, tag, Admitted::No)
    }

    /// [`slice`](Self::slice) for a caller that already tested the key
    /// against this sstable's range and filter
    /// ([`may_contain_hashed`](Self::may_contain_hashed)) when `admitted` says so.
    pub fn slice_admitted(
        self: &Arc<Self>,
        key: &DecoratedKey,
        range: &ClusteringRange,
        reversed: bool,
        tag: IoTag,
        admitted: Admitted,
    ) -> Result<Option<super::SSTableSlice>> {
        let Some(at) = self.locate(key, tag, admitted)? else {
            return Ok(None);
        };
        match at.row_index {
            None => {
                let bytes = match at.bytes {
                    Some(b) => b,
                    None => self.read_range(at.offset, at.length, tag)?,
                };
                let p = self.decode_at_in(key, at.offset, &bytes, Some(range))?;
                Ok(Some(super::SSTableSlice::buffered(p, range, reversed)))
            }
            Some(loc) => super::SSTableSlice::indexed(
                Arc::clone(self),
                key,
                (at.offset, at.length, loc),
                range,
                reversed,
                tag,
            )
            .map(Some),
        }
    }

    /// Partitions in token order from the first one `>= start` (all if `None`).
    /// Each chunk is read and decompressed once.
    pub fn scan(
        self: &Arc<Self>,
        start: Option<&DecoratedKey>,
        tag: IoTag,
    ) -> Result<PartitionScanner> {
        self.scan_from(start.map(|k| (k, false)), tag)
    }

    /// Like [`scan`](Self::scan), from the first partition strictly after
    /// `start`: `start` itself is neither read nor decoded when its index
    /// entry is its own (always for a partition with a row index: a scan page
    /// that resumes inside a wide partition reads the rest of it as a slice).
    pub fn scan_after(
        self: &Arc<Self>,
        start: &DecoratedKey,
        tag: IoTag,
    ) -> Result<PartitionScanner> {
        self.scan_from(Some((start, true)), tag)
    }

    fn scan_from(
        self: &Arc<Self>,
        start: Option<(&DecoratedKey, bool)>,
        tag: IoTag,
    ) -> Result<PartitionScanner> {
        let mut s = PartitionScanner {
            reader: Arc::clone(self),
            tag,
            next_block: 0,
            block: None,
            entry: None,
            walk: None,
            skip: None,
            buf: Vec::new(),
            chunk: None,
            stored: Vec::new(),
            buf_start: 0,
            next_chunk: 0,
            prev: PrevKey::default(),
            current: None,
            done: false,
            stream_over: None,
            streamed: None,
        };
        if let Some((start, after)) = start {
            let b = self.block_for(start).unwrap_or(0);
            s.next_block = b + 1;
            let mut block = self.scan_block(b, tag, Some(start.token))?;
            // From the last entry not after `start`: the one that may hold it
            // (its partitions before it, or it, are skipped as they come). The
            // first entry after it is decoded to know, then decoded again.
            let mut floor = block.cursor;
            while let Some(e) = block.next_entry(self)? {
                if e.key > *start {
                    break;
                }
                floor = block.cursor_before;
            }
            block.cursor = floor;
            s.block = Some(block);
            s.skip = Some((start.clone(), after));
        }
        Ok(s)
    }

    /// Index block `b` for a scanner, positioned at its first entry, or at
    /// the last entry whose token is below `seek`'s: for a user read the
    /// cached searchable form (no `pread`, a binary search to the start),
    /// for others the payload read once, as compaction walks every entry.
    fn scan_block(&self, b: usize, tag: IoTag, seek: Option<i64>) -> Result<ScanBlock> {
        let layout = self.index_layout();
        let bad = |e: crate::encoding::DecodeError| {
            corrupt(
                &self.path,
                self.summary[b].offset,
                format!("index block {b}: {}", e.0),
            )
        };
        let bytes = if self.cache_slot(tag, b, true).is_some() {
            ScanBlockBytes::Searchable(self.index_block_cached(b, tag)?)
        } else {
            ScanBlockBytes::Payload(self.read_index_block(b, tag)?)
        };
        let payload = bytes.payload().map_err(bad)?;
        let (cursor, check_first) = match (&bytes, seek) {
            (ScanBlockBytes::Searchable(block), Some(token)) => {
                let it = SearchableIndexBlock::seek_floor(block, token, layout).map_err(bad)?;
                (it.cursor(), false)
            }
            _ => (
                IndexBlockIter::new(payload, layout).map_err(bad)?.cursor(),
                true,
            ),
        };
        Ok(ScanBlock {
            index: b,
            bytes,
            cursor,
            cursor_before: cursor,
            check_first,
        })
    }

    /// Checks every chunk and index block checksum, then (if they all pass)
    /// decodes every partition. Returns every problem found, each naming the file
    /// and offset; empty means the sstable is sound. Used by `strata verify`.
    pub fn verify(self: &Arc<Self>, tag: IoTag) -> Vec<Error> {
        let mut problems = Vec::new();
        // The identity header was checked at open; read it again so that verify
        // covers every byte of the file (invariant 1), as for chunks.
        if self.identity.is_some() {
            match read_identity(&self.file, &self.path, u64::MAX, &self.table_io) {
                Ok((ident, _)) if Some(&ident) == self.identity.as_ref() => {}
                Ok(_) => problems.push(corrupt(
                    &self.path,
                    0,
                    "identity header changed since the file was opened",
                )),
                Err(e) => problems.push(e),
            }
        }
        let mut scratch = Vec::with_capacity(self.chunk_length as usize);
        for i in 0..self.chunks.len() {
            scratch.clear();
            if let Err(e) = self.read_chunk(i, tag, &mut scratch) {
                problems.push(e);
            }
        }
        for b in 0..self.summary.len() {
            if let Err(e) = self.decode_index_block(b, tag) {
                problems.push(e);
            }
        }
        if problems.is_empty() {
            let mut count = 0u64;
            let mut seen = SeenBounds::default();
            // The filter is derived data a read trusts: a "no" for a key the
            // file holds would make that partition vanish from point reads.
            // Its checksum catches flipped bits, not a writer or layout bug.
            let mut refused = None;
            match self.scan(None, tag) {
                Ok(scanner) => {
                    for p in scanner {
                        match p {
                            Ok(p) => {
                                count += 1;
                                if refused.is_none() && !self.may_contain(&p.key) {
                                    refused = Some(p.key.clone());
                                }
                                seen.add(&p);
                            }
                            Err(e) => {
                                problems.push(e);
                                break;
                            }
                        }
                    }
                }
                Err(e) => problems.push(e),
            }
            if problems.is_empty() {
                if let Some(reason) = seen.contradicts(&self.stats) {
                    problems.push(corrupt(&self.path, 0, reason));
                }
            }
            if let (true, Some(key)) = (problems.is_empty(), refused) {
                problems.push(corrupt(
                    &self.path,
                    self.filter_offset,
                    format!(
                        "the Bloom filter refuses partition key {} (token {}), which the file holds",
                        hex(&key.key),
                        key.token
                    ),
                ));
            }
            if problems.is_empty() && count != self.stats.partition_count {
                problems.push(corrupt(
                    &self.path,
                    0,
                    format!(
                        "{count} partitions found, statistics say {}",
                        self.stats.partition_count
                    ),
                ));
            }
        }
        // Row indexes are derived data inside checksummed chunks, so a bad one
        // means a writer bug, not a flipped bit; verify walks each one anyway,
        // both ways, against the rows it indexes.
        if problems.is_empty() && self.has_row_index() {
            'blocks: for b in 0..self.summary.len() {
                let entries = match self.decode_index_block(b, tag) {
                    Ok(e) => e,
                    Err(e) => {
                        problems.push(e);
                        break;
                    }
                };
                for e in entries.iter().filter(|e| e.row_index.is_some()) {
                    if let Err(err) = self.verify_row_index(e, tag) {
                        problems.push(err);
                        break 'blocks;
                    }
                }
            }
        }
        problems
    }

    /// Checks that the row index of `e`'s partition leads, forward and
    /// reversed, to exactly its rows, deletions and static row.
    fn verify_row_index(self: &Arc<Self>, e: &IndexEntry, tag: IoTag) -> Result<()> {
        let Some(loc) = e.row_index else {
            return Ok(());
        };
        let bytes = self.read_range(e.offset, e.length, tag)?;
        let p = self.decode_at(&e.key, e.offset, &bytes)?;
        for reversed in [false, true] {
            let mut s = super::SSTableSlice::indexed(
                Arc::clone(self),
                &e.key,
                (e.offset, e.length, loc),
                &ClusteringRange::ALL,
                reversed,
                tag,
            )?;
            let bad = |what: &str| {
                self.corrupt_data(
                    e.offset,
                    format!(
                        "row index ({} order) {what}",
                        if reversed { "reverse" } else { "forward" }
                    ),
                )
            };
            if s.deletion != p.deletion || s.static_row != p.static_row {
                return Err(bad("header differs from the partition's"));
            }
            let mut n = 0;
            while let Some(row) = s.next_row()? {
                let want = if reversed {
                    p.rows.len().checked_sub(n + 1)
                } else {
                    Some(n)
                };
                if want.and_then(|i| p.rows.get(i)) != Some(&row) {
                    return Err(bad("does not lead to the partition's rows in order"));
                }
                n += 1;
            }
            if n != p.rows.len() {
                return Err(bad("misses rows of the partition"));
            }
        }
        Ok(())
    }
}

/// Reads and decodes the identity header at offset 0; returns it and its length.
fn read_identity(
    file: &ReadableFile,
    path: &Path,
    limit: u64,
    table_io: &Option<Arc<IoCounters>>,
) -> Result<(SSTableIdentity, u64)> {
    let mut prefix = [0u8; IDENTITY_PREFIX_BYTES];
    if limit < IDENTITY_PREFIX_BYTES as u64 {
        return Err(corrupt(path, 0, "no room for the identity header"));
    }
    file.read_exact_at(&mut prefix, 0, OPEN_TAG, table_io.as_deref())?;
    let len = SSTableIdentity::block_length(&prefix).map_err(|r| corrupt(path, 0, r))?;
    if len > limit {
        return Err(corrupt(
            path,
            0,
            format!("identity header of {len} bytes runs past the data region"),
        ));
    }
    let mut block = vec![0u8; len as usize];
    file.read_exact_at(&mut block, 0, OPEN_TAG, table_io.as_deref())?;
    let (identity, version) = SSTableIdentity::decode(&block).map_err(|r| corrupt(path, 0, r))?;
    if !(FIRST_VERSION_WITH_IDENTITY..=FORMAT_VERSION).contains(&version) {
        return Err(corrupt(
            path,
            0,
            format!("identity header has format version {version}"),
        ));
    }
    Ok((identity, len))
}

impl Drop for SSTableReader {
    /// An obsolete file is only queued here: the last reference may be dropped
    /// by a user read, which must not pay for an unlink. The compaction runtime,
    /// the flush thread and shutdown unlink queued files (fs.rs invariant 5); one
    /// still queued at a crash is unlisted and quarantined by the next open.
    fn drop(&mut self) {
        let pinned = *self.pinned.bytes.get_mut();
        if pinned > 0 {
            if let Some(cache) = self.file.fs().chunk_cache() {
                cache.unpin(pinned);
            }
        }
        if self.obsolete.load(Ordering::Acquire) {
            self.file.fs().queue_reclaim(std::mem::take(&mut self.path));
        }
    }
}

/// A walk through one index entry's partitions by their framing (a format
/// version 4 granule; an older entry is a granule of one partition). It
/// checks what the entry promises: the first partition has the entry's key,
/// the partitions tile the granule exactly, and there are as many as it says.
#[derive(Debug)]
pub(super) struct GranuleWalk {
    /// Where the next partition starts, and where the granule ends.
    pub pos: u64,
    pub end: u64,
    partitions: u64,
    seen: u64,
    order: HeaderOrder,
}

impl GranuleWalk {
    pub fn new(offset: u64, length: u64, partitions: u64, order: HeaderOrder) -> GranuleWalk {
        GranuleWalk {
            pos: offset,
            end: offset.saturating_add(length),
            partitions,
            seen: 0,
            order,
        }
    }

    /// Whether every partition of the granule has been walked.
    pub fn done(&self) -> bool {
        self.pos >= self.end
    }

    /// For a walk that is [`done`](Self::done): whether it met as many
    /// partitions as the entry promised ([`next`](Self::next) checks this
    /// too, when called at the end).
    pub fn finish(&self) -> std::result::Result<(), String> {
        if self.seen == self.partitions {
            Ok(())
        } else {
            Err(format!(
                "granule holds {} partitions, its index entry says {}",
                self.seen, self.partitions
            ))
        }
    }

    /// The next partition, `(offset, bytes)`, if `window` (data-stream bytes
    /// from `window_start`) holds all of it; `None` at the granule's end or
    /// when the window ends first. `first_key` is the entry's key. Errors
    /// say how the bytes break the entry's promise.
    pub fn next<'w>(
        &mut self,
        first_key: &[u8],
        window: &'w [u8],
        window_start: u64,
    ) -> std::result::Result<Option<(u64, &'w [u8])>, String> {
        if self.pos >= self.end {
            return self.finish().map(|()| None);
        }
        if self.seen == self.partitions {
            return Err(format!(
                "granule holds more than the {} partitions its index entry says",
                self.partitions
            ));
        }
        let Some(from) = self
            .pos
            .checked_sub(window_start)
            .and_then(|f| usize::try_from(f).ok())
            .filter(|&f| f < window.len())
        else {
            return Ok(None);
        };
        let granule_end = usize::try_from(self.end - window_start).unwrap_or(usize::MAX);
        let to = granule_end.min(window.len());
        let avail = &window[from..to];
        let n = if self.partitions == 1 {
            // The granule is this one partition, of the entry's length
            // (decoding checks that it ends exactly there).
            if to < granule_end {
                return Ok(None);
            }
            avail.len()
        } else {
            match frame_partition(avail, self.order) {
                Frame::Complete(n) => n,
                Frame::Incomplete if to < granule_end => return Ok(None),
                Frame::Incomplete => return Err("partition runs past its granule".into()),
                Frame::Malformed => return Err("malformed partition framing in a granule".into()),
            }
        };
        let bytes = &avail[..n];
        if self.seen == 0 && partition_key_bytes(bytes, self.order).ok() != Some(first_key) {
            return Err("granule does not start with its index entry's key".into());
        }
        self.seen += 1;
        let at = self.pos;
        self.pos += n as u64;
        Ok(Some((at, bytes)))
    }
}

/// The bytes of an index block a scanner walks.
#[derive(Debug)]
enum ScanBlockBytes {
    /// The chunk cache's searchable form (user reads).
    Searchable(Arc<[u8]>),
    /// The verified payload, read for this scanner alone.
    Payload(Vec<u8>),
}

impl ScanBlockBytes {
    fn payload(&self) -> crate::encoding::DecodeResult<&[u8]> {
        match self {
            ScanBlockBytes::Searchable(b) => SearchableIndexBlock::payload(b),
            ScanBlockBytes::Payload(p) => Ok(p),
        }
    }
}

/// An index block and where a scanner is in it: entries are decoded one at a
/// time as the scan reaches them. A short scan (a page of ten rows) used to
/// decode and allocate every entry of the block, most of them never walked:
/// a third of its time (BENCHMARKS.md, "Scans and one-row reads").
#[derive(Debug)]
struct ScanBlock {
    index: usize,
    bytes: ScanBlockBytes,
    /// Before the next entry to decode.
    cursor: IndexCursor,
    /// Before the entry decoded last.
    cursor_before: IndexCursor,
    /// Whether the next entry is the block's first, which the summary names.
    check_first: bool,
}

impl ScanBlock {
    fn next_entry(&mut self, reader: &SSTableReader) -> Result<Option<IndexEntry>> {
        let (b, offset) = (self.index, reader.summary[self.index].offset);
        let bad =
            |reason: &str| corrupt(&reader.path, offset, format!("index block {b}: {reason}"));
        let payload = self.bytes.payload().map_err(|e| bad(e.0))?;
        let mut it = IndexBlockIter::resume(payload, self.cursor, reader.index_layout())
            .map_err(|e| bad(e.0))?;
        let Some(e) = it.next_entry().map_err(|e| bad(e.0))? else {
            return Ok(None);
        };
        self.cursor_before = self.cursor;
        self.cursor = it.cursor();
        let key = DecoratedKey {
            token: e.token,
            key: Arc::from(e.key),
        };
        if std::mem::take(&mut self.check_first) && key != reader.summary[b].first_key {
            return Err(bad("does not start at its summary key"));
        }
        Ok(Some(IndexEntry {
            key,
            offset: e.offset,
            length: e.length,
            row_index: e.row_index,
            partitions: e.partitions,
        }))
    }
}

/// The partition a [`PartitionScanner`] stands on, still encoded: its key and
/// bytes borrowed from the scanner's decompressed window (a cached chunk,
/// mostly), so a scan that does not keep the partition builds nothing.
#[derive(Clone, Copy, Debug)]
pub struct RawPartition<'a> {
    pub token: i64,
    pub key: &'a [u8],
    /// Data-stream offset of the partition.
    pub offset: u64,
    pub bytes: &'a [u8],
}

/// Where the current partition is: its offset, and its bytes in the held
/// window (`[from, from + len)` of the cached chunk or `buf`).
#[derive(Clone, Copy, Debug)]
struct Current {
    at: u64,
    from: usize,
    len: usize,
    token: i64,
    /// The granule's first partition, whose key the index entry holds.
    first_of_granule: bool,
}

/// Sequential iterator over an sstable's partitions (see [`SSTableReader::scan`]).
/// After an error it yields nothing more.
#[derive(Debug)]
pub struct PartitionScanner {
    reader: Arc<SSTableReader>,
    tag: IoTag,
    /// The next index block to load once `block` is walked.
    next_block: usize,
    block: Option<ScanBlock>,
    /// The entry being walked, and where in it.
    entry: Option<IndexEntry>,
    walk: Option<GranuleWalk>,
    /// Partitions before this key (up to it, when the flag says "after") are
    /// passed over undecoded: the start of [`SSTableReader::scan`] inside a
    /// granule.
    skip: Option<(DecoratedKey, bool)>,
    /// Decompressed data-stream bytes starting at offset `buf_start` (a chunk
    /// boundary): `chunk` when they are one chunk the chunk cache holds
    /// (shared, not copied: a short scan's reads are mostly that), else
    /// `buf`. The next chunk to load is `next_chunk`.
    buf: Vec<u8>,
    chunk: Option<Arc<[u8]>>,
    /// The stored (compressed) bytes of a chunk read through the cache,
    /// reused from one chunk to the next.
    stored: Vec<u8>,
    buf_start: u64,
    next_chunk: usize,
    prev: PrevKey,
    current: Option<Current>,
    done: bool,
    /// Partitions with an index entry of their own longer than this are not
    /// read whole: [`advance`](Self::advance) stops at their entry
    /// ([`take_streamed`](Self::take_streamed)) and the caller reads them a
    /// row at a time through [`window`](Self::window) (`super::stream`).
    stream_over: Option<u64>,
    /// The entry of the partition the scanner stands on when it is one of
    /// those.
    streamed: Option<IndexEntry>,
}

impl PartitionScanner {
    /// Makes partitions longer than `bytes` with an index entry of their own
    /// streamed (see `stream_over`): `super::stream` alone sets it.
    pub(super) fn stream_partitions_over(mut self, bytes: u64) -> PartitionScanner {
        self.stream_over = Some(bytes);
        self
    }

    /// The entry of the streamed partition [`advance`](Self::advance) stopped
    /// at, once.
    pub(super) fn take_streamed(&mut self) -> Option<IndexEntry> {
        self.streamed.take()
    }

    pub(super) fn reader(&self) -> &Arc<SSTableReader> {
        &self.reader
    }

    /// Gives back what the window grew to beyond two chunks (after a
    /// streamed partition's large rows), so an input waiting for its turn
    /// in a merge of many holds two chunks, not its largest row.
    pub(super) fn shrink_window(&mut self) {
        let keep = (2 * self.reader.chunk_length) as usize;
        if self.buf.capacity() > keep {
            self.buf.shrink_to(keep.max(self.buf.len()));
        }
    }

    /// Data-stream bytes `[offset, offset + length)`, read into the
    /// scanner's window: chunks before `offset`'s are let go, so walking a
    /// partition forward holds only what the current piece spans.
    pub(super) fn window(&mut self, offset: u64, length: u64) -> Result<&[u8]> {
        self.fill(offset, length)?;
        let held = window(&self.chunk, &self.buf);
        let from = usize::try_from(offset - self.buf_start).ok();
        let to = from.and_then(|f| f.checked_add(usize::try_from(length).ok()?));
        match (from, to) {
            (Some(f), Some(t)) if t <= held.len() => Ok(&held[f..t]),
            _ => Err(self
                .reader
                .corrupt_data(offset, "chunk shorter than the data stream says")),
        }
    }

    /// The next index entry, from this block or the next ones.
    fn next_entry(&mut self) -> Result<Option<IndexEntry>> {
        loop {
            if let Some(block) = self.block.as_mut() {
                if let Some(e) = block.next_entry(&self.reader)? {
                    return Ok(Some(e));
                }
            }
            if self.next_block >= self.reader.summary.len() {
                return Ok(None);
            }
            self.block = Some(self.reader.scan_block(self.next_block, self.tag, None)?);
            self.next_block += 1;
        }
    }

    /// Makes `buf` cover data-stream bytes `[offset, offset + length)`.
    fn fill(&mut self, offset: u64, length: u64) -> Result<()> {
        let r = &self.reader;
        let end = offset
            .checked_add(length)
            .filter(|&e| e <= r.uncompressed_bytes)
            .ok_or_else(|| {
                corrupt(
                    &r.path,
                    0,
                    format!("index points past the data stream: {offset}+{length}"),
                )
            })?;
        let cl = r.chunk_length;
        let first_chunk_start = offset / cl * cl;
        let held = window(&self.chunk, &self.buf).len() as u64;
        if offset >= self.buf_start && end <= self.buf_start + held {
            return Ok(());
        }
        let first = (offset / cl) as usize;
        if end <= first_chunk_start + cl && r.cache_slot(self.tag, first, false).is_some() {
            // One chunk, through the cache: hold it rather than copy it.
            self.buf.clear();
            let got = r.chunk_cached(first, self.tag, &mut self.stored, &mut self.buf)?;
            if let ChunkBytes::Cached(c) = got {
                self.chunk = Some(c);
                self.buf.clear();
                self.buf_start = first_chunk_start;
                self.next_chunk = first + 1;
                return Ok(());
            }
        }
        // Several chunks: copied into `buf`, from the held chunk if it is
        // the first of them.
        if let Some(c) = self.chunk.take() {
            self.buf.clear();
            self.buf.extend_from_slice(&c);
            self.next_chunk = (self.buf_start / cl) as usize + 1;
        }
        let buf_end = self.buf_start + self.buf.len() as u64;
        if offset < self.buf_start || offset >= buf_end {
            self.buf.clear();
            self.buf_start = first_chunk_start;
            self.next_chunk = (offset / cl) as usize;
        } else if first_chunk_start > self.buf_start {
            self.buf
                .drain(..(first_chunk_start - self.buf_start) as usize);
            self.buf_start = first_chunk_start;
        }
        // Exactly the chunks still missing: a window grown by doubling
        // would hold up to twice a large row (compaction's bound,
        // docs/compaction/blob.md "Memory").
        let held_end = self.buf_start + self.buf.len() as u64;
        if held_end < end {
            let last_end = end
                .div_ceil(cl)
                .saturating_mul(cl)
                .min(r.uncompressed_bytes);
            let missing = usize::try_from(last_end.saturating_sub(held_end)).unwrap_or(0);
            self.buf.reserve_exact(missing);
        }
        while self.buf_start + (self.buf.len() as u64) < end {
            r.read_chunk(self.next_chunk, self.tag, &mut self.buf)?;
            self.next_chunk += 1;
        }
        Ok(())
    }

    /// Moves to the next partition ([`current`](Self::current)); `false` at
    /// the end. Partitions before the scan's start are framed and
    /// order-checked, not decoded; nothing is built for any partition (its
    /// token is hashed, its key copied into the order check's buffer).
    pub fn advance(&mut self) -> Result<bool> {
        self.current = None;
        self.streamed = None;
        loop {
            let Some(walk) = self.walk.as_mut().filter(|w| !w.done()) else {
                if let Some(done) = self.walk.take() {
                    // Every byte walked: as many partitions as the entry says?
                    done.finish()
                        .map_err(|r| self.reader.corrupt_data(done.pos, r))?;
                    continue;
                }
                let Some(e) = self.next_entry()? else {
                    return Ok(false);
                };
                if self.prev.not_before(e.key.token, &e.key.key) {
                    let b = self.block.as_ref().map_or(0, |b| b.index);
                    return Err(corrupt(
                        &self.reader.path,
                        self.reader.summary[b].offset,
                        "index entries out of key order",
                    ));
                }
                if e.partitions == 1 && skips(&self.skip, e.key.token, &e.key.key) {
                    // Passed over without reading it (a wide partition
                    // before a scan page's start).
                    self.prev.set(e.key.token, &e.key.key);
                    continue;
                }
                if e.partitions == 1 && self.stream_over.is_some_and(|t| e.length > t) {
                    // Read by the caller a row at a time; its header checks
                    // that it starts with the entry's key.
                    self.prev.set(e.key.token, &e.key.key);
                    self.skip = None;
                    self.streamed = Some(e);
                    return Ok(true);
                }
                self.walk = Some(GranuleWalk::new(
                    e.offset,
                    e.length,
                    e.partitions,
                    self.reader.header_order(),
                ));
                self.entry = Some(e);
                continue;
            };
            let (offset, end) = (walk.pos, walk.end);
            self.fill(offset, end - offset)?;
            let (Some(walk), Some(entry)) = (self.walk.as_mut(), self.entry.as_ref()) else {
                return Err(self
                    .reader
                    .corrupt_data(offset, "granule walked without its entry"));
            };
            let reader = &self.reader;
            let held = window(&self.chunk, &self.buf);
            let Some((at, bytes)) = walk
                .next(&entry.key.key, held, self.buf_start)
                .map_err(|r| reader.corrupt_data(offset, r))?
            else {
                return Err(reader.corrupt_data(offset, "granule shorter than its index entry"));
            };
            let first_of_granule = at == entry.offset;
            let key = partition_key_bytes(bytes, reader.header_order())
                .map_err(|d| reader.corrupt_data(at, d.0))?;
            // The walk checked that a granule's first key is its entry's.
            let token = if first_of_granule {
                entry.key.token
            } else {
                crate::token::token_of(key)
            };
            if self.prev.not_before(token, key) {
                return Err(reader.corrupt_data(at, "partitions out of key order"));
            }
            self.prev.set(token, key);
            if skips(&self.skip, token, key) {
                continue;
            }
            self.skip = None;
            let from = (at - self.buf_start) as usize;
            self.current = Some(Current {
                at,
                from,
                len: bytes.len(),
                token,
                first_of_granule,
            });
            return Ok(true);
        }
    }

    /// The partition the scanner stands on after [`advance`](Self::advance)
    /// returned `true`, still encoded.
    pub fn current(&self) -> Option<RawPartition<'_>> {
        let c = self.current?;
        let bytes = window(&self.chunk, &self.buf).get(c.from..c.from.checked_add(c.len)?)?;
        Some(RawPartition {
            token: c.token,
            key: partition_key_bytes(bytes, self.reader.header_order()).ok()?,
            offset: c.at,
            bytes,
        })
    }

    /// The current partition decoded.
    pub fn decode_current(&self) -> Result<PartitionUpdate> {
        let (Some(c), Some(raw)) = (self.current, self.current()) else {
            return Err(Error::InvalidInput("no current partition to decode".into()));
        };
        let key = match &self.entry {
            Some(e) if c.first_of_granule => e.key.clone(),
            _ => DecoratedKey {
                token: raw.token,
                key: Arc::from(raw.key),
            },
        };
        self.reader.decode_at(&key, raw.offset, raw.bytes)
    }

    /// The current partition's rows, if its header holds nothing but its
    /// key: each row's clustering and encoded body to `f` (which returns
    /// whether to go on), against [`base`](Self::base). `Ok(false)`, having
    /// visited nothing, when the header holds a deletion or static row;
    /// then [`decode_current`](Self::decode_current) is the way.
    pub fn visit_current_rows<'s>(
        &'s self,
        f: impl FnMut(&[u8], &'s [u8]) -> crate::encoding::DecodeResult<bool>,
    ) -> Result<bool> {
        let Some(raw) = self.current() else {
            return Err(Error::InvalidInput("no current partition to visit".into()));
        };
        super::partition::visit_plain_rows(raw.bytes, self.reader.header_order(), f).map_err(|e| {
            self.reader
                .corrupt_data(raw.offset, format!("partition: {}", e.0))
        })
    }

    /// The base the scanned sstable's rows are encoded against.
    pub fn base(&self) -> &crate::encoding::EncodingBase {
        self.reader.base()
    }

    fn next_partition(&mut self) -> Result<Option<PartitionUpdate>> {
        if self.advance()? {
            self.decode_current().map(Some)
        } else {
            Ok(None)
        }
    }
}

/// A scanner's decompressed window: the cached chunk it holds, else `buf`
/// (a free function so that `advance` can borrow it beside the walk).
fn window<'a>(chunk: &'a Option<Arc<[u8]>>, buf: &'a [u8]) -> &'a [u8] {
    match chunk {
        Some(c) => c,
        None => buf,
    }
}

/// Whether a scan that starts at `skip` passes over partition `(token, key)`.
fn skips(skip: &Option<(DecoratedKey, bool)>, token: i64, key: &[u8]) -> bool {
    skip.as_ref().is_some_and(|(start, after)| {
        let k = (token, key);
        let s = (start.token, &start.key[..]);
        k < s || (*after && k == s)
    })
}

/// The last key a scanner passed, kept to check that keys strictly
/// increase: a reused buffer, not a key built per partition.
#[derive(Debug, Default)]
struct PrevKey {
    token: i64,
    key: Vec<u8>,
    set: bool,
}

impl PrevKey {
    fn not_before(&self, token: i64, key: &[u8]) -> bool {
        self.set && (self.token, &self.key[..]) >= (token, key)
    }

    fn set(&mut self, token: i64, key: &[u8]) {
        self.token = token;
        self.key.clear();
        self.key.extend_from_slice(key);
        self.set = true;
    }
}

/// What `verify` saw of the bounds that reads trust the statistics for: the
/// newest timestamp (a read stops at an sstable older than a deletion or a
/// settled row) and the clustering coverage (a read skips an sstable whose
/// span misses its slice). A writer bug there would make reads skip data
/// silently, and no checksum catches it, so `verify` compares them with the
/// data: the statistics must contain what was seen (they may be wider).
#[derive(Default)]
struct SeenBounds {
    max_timestamp: Option<i64>,
    rows: Option<(Vec<u8>, Vec<u8>)>,
    beyond_rows: bool,
}

impl SeenBounds {
    fn add(&mut self, p: &PartitionUpdate) {
        let ts = p.max_timestamp();
        self.max_timestamp = Some(self.max_timestamp.map_or(ts, |m| m.max(ts)));
        self.beyond_rows |= !p.deletion.is_empty() || p.static_row.is_some();
        // Rows are in clustering order: the first and last bound the partition.
        if let (Some(first), Some(last)) = (p.rows.first(), p.rows.last()) {
            self.rows = Some(match self.rows.take() {
                None => (first.clustering.clone(), last.clustering.clone()),
                Some((min, max)) => (
                    min.min(first.clustering.clone()),
                    max.max(last.clustering.clone()),
                ),
            });
        }
    }

    /// Why the statistics contradict what was seen, if they do.
    fn contradicts(&self, stats: &SSTableStats) -> Option<String> {
        if let Some(ts) = self.max_timestamp {
            if ts > stats.max_timestamp_micros {
                return Some(format!(
                    "a timestamp of {ts} us, newer than the statistics' maximum {}",
                    stats.max_timestamp_micros
                ));
            }
        }
        // Files before format 5 have no coverage to check.
        let c = stats.coverage.as_ref()?;
        if self.beyond_rows && !c.beyond_rows {
            return Some(
                "a partition deletion, range tombstone or static row in an sstable whose \
                 statistics say it holds none"
                    .to_string(),
            );
        }
        match (&self.rows, &c.rows) {
            (None, _) => None,
            (Some(_), None) => Some("rows in an sstable whose statistics say it has none".into()),
            (Some((min, max)), Some((cmin, cmax))) if min < cmin || max > cmax => Some(format!(
                "rows from {} to {} outside the statistics' clustering span {} to {}",
                hex(min),
                hex(max),
                hex(cmin),
                hex(cmax)
            )),
            _ => None,
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

impl Iterator for PartitionScanner {
    type Item = Result<PartitionUpdate>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.done {
            return None;
        }
        match self.next_partition() {
            Ok(Some(p)) => Some(Ok(p)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}
