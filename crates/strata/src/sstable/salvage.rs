//! Salvage: every partition of a damaged sstable whose bytes are intact, found
//! through the self-delimiting data stream rather than through the index.
//!
//! Two drivers feed one [`Walker`]:
//! - [`salvage_reader`]: the file opens (its tail is sound). Chunks come from the
//!   chunk table, each verified by its CRC; intact index blocks give exact
//!   partition starts to resynchronise at and to cross-check keys and lengths;
//!   a damaged index block costs nothing as long as the chunks under it are
//!   intact (online `scrub`, and `strata sstable scrub` of a file that opens).
//! - [`salvage_file`]: the tail is damaged or gone. A version-2 file's identity
//!   header gives chunk length, codec and encoding base; stored regions are found
//!   from the header on by their CRC32C trailers (a region ends where the CRC of
//!   the bytes before equals the next four bytes), chunks told from index blocks
//!   by decoding them. Version-1 files have no header and are refused.
//!
//! The walker: partitions follow each other with no padding (sstable invariant
//! 4), and [`frame_partition`] finds where each ends. After a lost chunk it has
//! lost its place, and it resynchronises only where an intact index block
//! confirms a partition start: at the next offset the index lists (file opens),
//! or, without the tail, at the first offset where a partition decodes, passes
//! the plausibility checks (non-empty, nothing below the encoding base, key and
//! columns fitting the identity) and has a token that an intact index block
//! lists. Guessing without the index was tried and rejected: row framing
//! resynchronises by itself, so bytes from the middle of a cut partition decode
//! as a partition that ends exactly where the real next one begins, and pass
//! every structural check often enough to invent data.
//!
//! Invariants:
//! 1. A partition is passed on only if every chunk it spans passed its CRC, it
//!    decodes completely, its key sorts strictly after the previous one passed
//!    on, an intact index entry at its offset (if any) names the same key and
//!    a length it fits (the same length, unless the entry is a version-4
//!    granule of several partitions), and its start is the start of the
//!    stream or follows one so passed
//!    on or was confirmed by an intact index block. Salvage never invents data;
//!    it can only lose it.
//! 2. Memory: one window of intact data (from the partition being decoded to the
//!    newest chunk), plus one index block; a tail-less [`salvage_file`] also a
//!    window of a few regions of the file.

use super::compression::{
    Codec, CODEC_ID_LZ4, CODEC_ID_LZ4_DICT, CODEC_ID_NONE, CODEC_ID_ZSTD, CODEC_ID_ZSTD_DICT,
};
use super::format::{decode_index_block, open_block, IndexEntry, IndexLayout, CRC_BYTES};
use super::identity::ColumnRole;
use super::identity::{SSTableIdentity, IDENTITY_PREFIX_BYTES};
use super::partition::{
    decode_partition, frame_partition, partition_key_bytes, Frame, HeaderOrder,
};
use super::reader::SSTableReader;
use crate::data::{CellKind, DecoratedKey, DeletionTime, PartitionUpdate, Row, NO_TIMESTAMP};
use crate::encoding::EncodingBase;
use crate::error::{Error, Result};
use crate::fs::{Fs, IoTag, ReadableFile};
use crate::types::CqlType;
use serde::Serialize;
use std::path::Path;
use std::sync::Arc;

/// What a salvage hands its caller, in data-stream order.
#[derive(Debug)]
pub enum SalvageItem {
    Partition(PartitionUpdate),
    /// A chunk, index block or run of bytes that could not be used.
    Damage {
        file_offset: u64,
        reason: String,
    },
}

/// Counts of one salvage.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct SalvageCounts {
    pub partitions_recovered: u64,
    pub chunks_read: u64,
    /// Chunks that failed their checksum (exact when the tail is intact; when it
    /// is not, the damaged byte runs between intact regions each count one).
    pub chunks_lost: u64,
    /// File bytes in no verified chunk, index block or header (the tail and
    /// anything after the last intact chunk included, when the tail is gone).
    pub file_bytes_lost: u64,
    /// Data-stream bytes skipped while resynchronising: partitions cut by a lost
    /// chunk, and anything that did not decode.
    pub data_bytes_skipped: u64,
    /// Times the walker lost its place and had to resynchronise.
    pub resyncs: u64,
}

/// Exact partition starts from the intact index blocks of an open sstable,
/// read one block at a time as the walker advances.
struct IndexCursor<'a> {
    reader: &'a SSTableReader,
    tag: IoTag,
    next_block: usize,
    entries: Vec<IndexEntry>,
    pos: usize,
    damaged: Vec<(u64, String)>,
}

impl IndexCursor<'_> {
    /// The first listed partition starting at or after `offset`.
    fn at_or_after(&mut self, offset: u64) -> Result<Option<IndexEntry>> {
        loop {
            while self.pos < self.entries.len() {
                if self.entries[self.pos].offset >= offset {
                    return Ok(Some(self.entries[self.pos].clone()));
                }
                self.pos += 1;
            }
            if self.next_block >= self.reader.index_block_count() {
                return Ok(None);
            }
            let b = self.next_block;
            self.next_block += 1;
            self.pos = 0;
            match self.reader.index_block(b, self.tag) {
                Ok(entries) => self.entries = entries,
                Err(Error::Corruption { offset, reason, .. }) => {
                    self.entries.clear();
                    self.damaged.push((offset, reason));
                }
                Err(e) => return Err(e),
            }
        }
    }
}

/// Look-ahead a resynchronisation candidate may wait for (module invariant 2).
const RESYNC_LOOKAHEAD_BYTES: usize = 8 << 20;

/// Outcome of trying a resynchronisation candidate.
enum Candidate {
    Accept,
    Reject,
    NeedMore,
}

/// Walks a data stream delivered as runs of intact bytes (module docs).
struct Walker<'a, 'c> {
    base: EncodingBase,
    /// Where the file's partitions keep their flags (its format version's).
    order: HeaderOrder,
    buf: Vec<u8>,
    /// Data-stream offset of `buf[0]`, when known.
    buf_start: Option<u64>,
    pos: usize,
    synced: bool,
    last_key: Option<DecoratedKey>,
    hints: Option<IndexCursor<'c>>,
    /// Partition key column types from the identity, to reject resync
    /// candidates whose key could not be this table's; `None` when unknown.
    key_types: Option<Vec<CqlType>>,
    /// Regular and static column ids from the identity (cells of any other id
    /// cannot be in this file); `None` when unknown.
    column_ids: Option<Vec<u32>>,
    /// Sorted tokens of every partition the intact index blocks of a tail-less
    /// file list: a resync candidate must be one of them.
    known_tokens: Option<Vec<i64>>,
    counts: &'a mut SalvageCounts,
}

impl<'a, 'c> Walker<'a, 'c> {
    fn new(
        base: EncodingBase,
        order: HeaderOrder,
        identity: Option<&SSTableIdentity>,
        hints: Option<IndexCursor<'c>>,
        counts: &'a mut SalvageCounts,
    ) -> Self {
        Walker {
            key_types: identity.and_then(key_types),
            column_ids: identity.map(|i| i.columns.iter().filter_map(|c| c.id).collect()),
            known_tokens: None,
            base,
            order,
            buf: Vec::new(),
            buf_start: Some(0),
            pos: 0,
            synced: true,
            last_key: None,
            hints,
            counts,
        }
    }

    /// Appends intact bytes at `data_offset`; `contiguous` is false after a gap.
    fn push(
        &mut self,
        data_offset: Option<u64>,
        bytes: &[u8],
        contiguous: bool,
        sink: &mut dyn FnMut(SalvageItem) -> Result<()>,
    ) -> Result<()> {
        if !contiguous {
            self.end_segment(sink)?;
            self.buf.clear();
            self.pos = 0;
            self.buf_start = data_offset;
            if self.synced {
                self.synced = false;
                self.counts.resyncs += 1;
            }
        }
        self.buf.extend_from_slice(bytes);
        self.process(false, sink)
    }

    /// The intact run ends here (a gap follows, or the stream ends).
    fn end_segment(&mut self, sink: &mut dyn FnMut(SalvageItem) -> Result<()>) -> Result<()> {
        self.process(true, sink)?;
        self.counts.data_bytes_skipped += (self.buf.len() - self.pos) as u64;
        self.pos = self.buf.len();
        Ok(())
    }

    fn decode(&self, at: usize, len: usize) -> Option<PartitionUpdate> {
        let bytes = &self.buf[at..at + len];
        let key = DecoratedKey::new(partition_key_bytes(bytes, self.order).ok()?);
        if self.last_key.as_ref().is_some_and(|l| *l >= key) {
            return None;
        }
        decode_partition(bytes, &key, &self.base, self.order)
            .ok()
            .filter(is_writable)
    }

    fn lose_sync(&mut self) {
        if self.synced {
            self.synced = false;
            self.counts.resyncs += 1;
        }
    }

    fn process(
        &mut self,
        at_end: bool,
        sink: &mut dyn FnMut(SalvageItem) -> Result<()>,
    ) -> Result<()> {
        loop {
            if !self.synced && !self.resync(at_end)? {
                break;
            }
            if self.pos >= self.buf.len() {
                break;
            }
            match frame_partition(&self.buf[self.pos..], self.order) {
                Frame::Complete(n) => {
                    let offset = self.buf_start.map(|s| s + self.pos as u64);
                    let listed = match (offset, self.hints.as_mut()) {
                        (Some(o), Some(h)) => h.at_or_after(o)?.filter(|e| e.offset == o),
                        _ => None,
                    };
                    match self.decode(self.pos, n) {
                        Some(p)
                            if listed
                                .as_ref()
                                .is_none_or(|e| e.key == p.key && e.starts(n as u64)) =>
                        {
                            self.last_key = Some(p.key.clone());
                            self.pos += n;
                            self.counts.partitions_recovered += 1;
                            sink(SalvageItem::Partition(p))?;
                        }
                        _ => {
                            self.lose_sync();
                            self.pos += 1;
                            self.counts.data_bytes_skipped += 1;
                        }
                    }
                }
                Frame::Incomplete => {
                    if at_end {
                        self.counts.data_bytes_skipped += (self.buf.len() - self.pos) as u64;
                        self.pos = self.buf.len();
                        self.lose_sync();
                    }
                    break;
                }
                Frame::Malformed => {
                    self.lose_sync();
                    self.pos += 1;
                    self.counts.data_bytes_skipped += 1;
                }
            }
        }
        // Keep the window small: drop what has been consumed.
        if self.pos > (1 << 20) || self.pos == self.buf.len() {
            self.buf.drain(..self.pos);
            if let Some(s) = self.buf_start.as_mut() {
                *s += self.pos as u64;
            }
            self.pos = 0;
        }
        Ok(())
    }

    /// Finds the next partition start at or after `pos`. Returns false when it
    /// needs more bytes (or, at the end of a run, found none: `pos` is then at
    /// the end of the buffer).
    fn resync(&mut self, at_end: bool) -> Result<bool> {
        if let (Some(s), Some(h)) = (self.buf_start, self.hints.as_mut()) {
            // The index says where partitions start: resume at the next one it
            // lists and never guess (partitions listed only by a damaged index
            // block and cut off by a damaged chunk are lost).
            let known = h
                .at_or_after(s + self.pos as u64)?
                .map(|e| (e.offset - s) as usize);
            let to = known.map_or(self.buf.len(), |k| k.min(self.buf.len()));
            self.counts.data_bytes_skipped += (to - self.pos) as u64;
            self.pos = to;
            if known.is_some_and(|k| k < self.buf.len()) {
                self.synced = true;
                return Ok(true);
            }
            return Ok(false);
        }
        let mut c = self.pos;
        while c < self.buf.len() {
            match self.candidate(c, at_end) {
                Candidate::Accept => {
                    self.counts.data_bytes_skipped += (c - self.pos) as u64;
                    self.pos = c;
                    self.synced = true;
                    return Ok(true);
                }
                Candidate::Reject => c += 1,
                Candidate::NeedMore => {
                    self.counts.data_bytes_skipped += (c - self.pos) as u64;
                    self.pos = c;
                    return Ok(false);
                }
            }
        }
        self.counts.data_bytes_skipped += (c - self.pos) as u64;
        self.pos = c;
        Ok(false)
    }

    /// Checks a resynchronisation candidate against what every writer
    /// guarantees, so that bytes from the middle of a partition (whose row
    /// framing resynchronises with the real one) are not taken for a partition
    /// start: the encoding base is the minimum of the data, so no decoded
    /// timestamp, deletion time or TTL lies below it (a random delta is negative
    /// half the time); and the key fits the partition key's types when the
    /// identity is known. Applied to candidates only: the synced walk trusts
    /// the framing.
    fn plausible(&self, p: &PartitionUpdate) -> bool {
        let b = &self.base;
        let deletion_ok = |d: &DeletionTime| {
            d.is_live()
                || (d.marked_for_delete_at_micros >= b.min_timestamp
                    && d.local_deletion_seconds >= b.min_local_deletion)
        };
        let row_ok = |r: &Row| {
            let l = &r.liveness;
            // Writers never store a row with nothing in it.
            if l.timestamp_micros == NO_TIMESTAMP && r.deletion.is_live() && r.cells.is_empty() {
                return false;
            }
            if let Some(ids) = &self.column_ids {
                if r.cells.iter().any(|c| !ids.contains(&c.column)) {
                    return false;
                }
            }
            (l.timestamp_micros == NO_TIMESTAMP || l.timestamp_micros >= b.min_timestamp)
                && (l.ttl_seconds == 0
                    || (l.ttl_seconds >= b.min_ttl
                        && l.local_expiry_seconds >= b.min_local_deletion))
                && deletion_ok(&r.deletion)
                && r.cells.iter().all(|c| {
                    c.timestamp_micros >= b.min_timestamp
                        && match c.kind {
                            CellKind::Live | CellKind::Counter => true,
                            CellKind::Tombstone => c.local_deletion_seconds >= b.min_local_deletion,
                            CellKind::Expiring => {
                                c.ttl_seconds >= b.min_ttl
                                    && c.local_deletion_seconds >= b.min_local_deletion
                            }
                        }
                })
        };
        p.deletion.partition.as_ref().is_none_or(deletion_ok)
            && p.deletion.ranges.iter().all(|rt| deletion_ok(&rt.deletion))
            && p.static_row.as_ref().is_none_or(row_ok)
            && p.rows.iter().all(row_ok)
            && self
                .key_types
                .as_ref()
                .is_none_or(|types| key_fits(types, &p.key.key))
    }

    fn candidate(&self, c: usize, at_end: bool) -> Candidate {
        // A random byte can claim lengths of megabytes; waiting for them would
        // hold the rest of the stream in memory. Past this much look-ahead the
        // candidate is dropped (so is a genuine partition that large right after
        // a loss: an accepted cost).
        let gave_up = at_end || self.buf.len() - c > RESYNC_LOOKAHEAD_BYTES;
        let n = match frame_partition(&self.buf[c..], self.order) {
            Frame::Malformed => return Candidate::Reject,
            Frame::Incomplete if gave_up => return Candidate::Reject,
            Frame::Incomplete => return Candidate::NeedMore,
            Frame::Complete(n) => n,
        };
        let Some(first) = self.decode(c, n).filter(|p| self.plausible(p)) else {
            return Candidate::Reject;
        };
        if let Some(tokens) = &self.known_tokens {
            // An intact index block lists this key: a real partition start (a
            // random key matches one of n tokens with chance n / 2^64).
            return if tokens.binary_search(&first.key.token).is_ok() {
                Candidate::Accept
            } else {
                Candidate::Reject
            };
        }
        let next = c + n;
        if next == self.buf.len() {
            return if at_end {
                Candidate::Accept
            } else {
                Candidate::NeedMore
            };
        }
        match frame_partition(&self.buf[next..], self.order) {
            Frame::Malformed => Candidate::Reject,
            Frame::Incomplete if gave_up => Candidate::Accept,
            Frame::Incomplete => Candidate::NeedMore,
            Frame::Complete(m) => {
                let bytes = &self.buf[next..next + m];
                let ok = partition_key_bytes(bytes, self.order)
                    .ok()
                    .map(DecoratedKey::new)
                    .filter(|k| *k > first.key)
                    .and_then(|k| decode_partition(bytes, &k, &self.base, self.order).ok())
                    .is_some_and(|p| is_writable(&p) && self.plausible(&p));
                if ok {
                    Candidate::Accept
                } else {
                    Candidate::Reject
                }
            }
        }
    }
}

/// The partition key column types an identity records, if it names them all.
fn key_types(identity: &SSTableIdentity) -> Option<Vec<CqlType>> {
    identity
        .columns
        .iter()
        .filter(|c| c.role == ColumnRole::PartitionKey)
        .map(|c| CqlType::from_descriptor(&c.cql_type).ok())
        .collect::<Option<Vec<_>>>()
        .filter(|t| !t.is_empty())
}

/// Whether `key` is a serialized partition key of these column types (one
/// value, or Cassandra's composite: per component a u16 BE length, the bytes,
/// a zero byte).
fn key_fits(types: &[CqlType], key: &[u8]) -> bool {
    if let [ty] = types {
        return crate::types::validate(ty, key).is_ok();
    }
    let mut rest = key;
    for ty in types {
        let Some((len, tail)) = rest.split_first_chunk::<2>() else {
            return false;
        };
        let len = u16::from_be_bytes(*len) as usize;
        if tail.len() < len + 1 || tail[len] != 0 {
            return false;
        }
        if crate::types::validate(ty, &tail[..len]).is_err() {
            return false;
        }
        rest = &tail[len + 1..];
    }
    rest.is_empty()
}

/// Whether the writer could have written `p`: it skips partitions with nothing
/// in them, so one that decodes empty (a length, some bytes, two zero bytes: the
/// commonest accident in random data) is not a partition start.
fn is_writable(p: &PartitionUpdate) -> bool {
    !(p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty())
}

/// Salvages an sstable that opens (module docs). Damaged chunks and index blocks
/// are reported as [`SalvageItem::Damage`]; I/O errors end the salvage.
pub fn salvage_reader(
    reader: &Arc<SSTableReader>,
    tag: IoTag,
    sink: &mut dyn FnMut(SalvageItem) -> Result<()>,
) -> Result<SalvageCounts> {
    let mut counts = SalvageCounts::default();
    let base = reader.stats().base;
    let cursor = IndexCursor {
        reader,
        tag,
        next_block: 0,
        entries: Vec::new(),
        pos: 0,
        damaged: Vec::new(),
    };
    let chunks = reader.chunk_ranges();
    let cl = reader.chunk_length();
    let damaged_index;
    {
        let order = HeaderOrder::for_version(reader.format_version());
        let mut w = Walker::new(base, order, reader.identity(), Some(cursor), &mut counts);
        let mut contiguous = true;
        for (i, &(file_offset, stored)) in chunks.iter().enumerate() {
            match reader.chunk(i, tag) {
                Ok(bytes) => {
                    w.counts.chunks_read += 1;
                    w.push(Some(i as u64 * cl), &bytes, contiguous, sink)?;
                    contiguous = true;
                }
                Err(Error::Corruption { reason, .. }) => {
                    w.counts.chunks_lost += 1;
                    w.counts.file_bytes_lost += stored;
                    sink(SalvageItem::Damage {
                        file_offset,
                        reason,
                    })?;
                    contiguous = false;
                }
                Err(e) => return Err(e),
            }
            // Report damaged index blocks as the walker meets them.
            if let Some(h) = w.hints.as_mut() {
                for (file_offset, reason) in h.damaged.drain(..) {
                    sink(SalvageItem::Damage {
                        file_offset,
                        reason,
                    })?;
                }
            }
        }
        w.end_segment(sink)?;
        damaged_index = w.hints.take().map(|h| h.damaged).unwrap_or_default();
    }
    for (file_offset, reason) in damaged_index {
        sink(SalvageItem::Damage {
            file_offset,
            reason,
        })?;
    }
    Ok(counts)
}

/// What [`salvage_file`] learnt about the file.
#[derive(Clone, Debug, Serialize)]
pub struct FileSalvage {
    pub format_version: Option<u32>,
    pub identity: Option<SSTableIdentity>,
    /// Whether the file opened normally (footer, tail and tiling sound).
    pub tail_intact: bool,
    /// Why it did not open, when it did not.
    pub open_error: Option<String>,
    /// The statistics' partition count, when the tail is intact.
    pub partitions_expected: Option<u64>,
    /// The codec, chunk length and encoding base to write the salvaged copy with.
    pub codec: Codec,
    #[serde(skip)]
    pub base: EncodingBase,
    pub chunk_length_bytes: u32,
    pub counts: SalvageCounts,
}

/// Salvages the sstable file at `path` without a table or manifest: through
/// [`salvage_reader`] when it opens, else (version 2 only) by scanning its
/// regions from the identity header on (module docs).
pub fn salvage_file(
    fs: &Fs,
    path: &Path,
    tag: IoTag,
    sink: &mut dyn FnMut(SalvageItem) -> Result<()>,
) -> Result<FileSalvage> {
    let id = path
        .file_name()
        .and_then(|n| super::parse_data_file_name(&n.to_string_lossy()))
        .unwrap_or(0);
    let open_error = match SSTableReader::open_for_salvage(fs, path, id) {
        Ok(reader) => {
            let header_lost = reader.format_version() >= 2 && reader.identity().is_none();
            if header_lost {
                sink(SalvageItem::Damage {
                    file_offset: 0,
                    reason: "identity header damaged: the tail gives chunk length, codec and \
                             encoding base, but the salvaged copy carries no identity"
                        .to_string(),
                })?;
            }
            let mut counts = salvage_reader(&reader, tag, sink)?;
            if header_lost {
                counts.file_bytes_lost += reader.chunk_ranges().first().map_or(0, |c| c.0);
            }
            let st = reader.stats();
            return Ok(FileSalvage {
                format_version: Some(reader.format_version()),
                identity: reader.identity().cloned(),
                tail_intact: true,
                open_error: None,
                partitions_expected: Some(st.partition_count),
                codec: st.codec,
                base: st.base,
                chunk_length_bytes: u32::try_from(reader.chunk_length()).unwrap_or(u32::MAX),
                counts,
            });
        }
        Err(e @ Error::Corruption { .. }) => e.to_string(),
        Err(e) => return Err(e),
    };
    let refuse = |why: String| {
        Err(Error::InvalidInput(format!(
            "{} cannot be salvaged offline: it does not open ({open_error}) and {why}, so its \
             chunk length and codec are unknown; restore it from a snapshot or backup",
            path.display()
        )))
    };
    let (identity, version, header_len) = match identity_header(fs, path) {
        Ok(v) => v,
        Err(Error::Corruption { reason, .. }) => {
            return refuse(format!(
                "its identity header is unusable: {reason} (format version 1 files have none)"
            ))
        }
        Err(e) => return Err(e),
    };
    // Every candidate chunk is decompressed into a buffer of this length: only
    // the lengths a writer can produce (codec.rs) are believed.
    let cl = identity.chunk_length_bytes;
    if !(crate::codec::MIN_CHUNK_LENGTH_BYTES..=crate::codec::MAX_CHUNK_LENGTH_BYTES).contains(&cl)
    {
        return refuse(format!(
            "its identity header records a chunk length of {cl} bytes, outside {}..={}",
            crate::codec::MIN_CHUNK_LENGTH_BYTES,
            crate::codec::MAX_CHUNK_LENGTH_BYTES
        ));
    }
    let file = fs.open(path)?;
    let mut counts = SalvageCounts::default();
    scan_regions(
        path,
        &file,
        tag,
        (header_len, version),
        &identity,
        &mut counts,
        sink,
    )?;
    Ok(FileSalvage {
        format_version: Some(version),
        tail_intact: false,
        open_error: Some(open_error),
        partitions_expected: None,
        codec: identity.codec,
        base: identity.base(),
        chunk_length_bytes: identity.chunk_length_bytes,
        identity: Some(identity),
        counts,
    })
}

/// What a verified region of a tail-less file turned out to be.
enum Region {
    /// Decompressed data of this many bytes.
    Chunk(Vec<u8>),
    /// The tokens its entries list.
    IndexBlock(Vec<i64>),
}

/// The region at the start of `bytes`, if one whose CRC trailer matches and
/// whose content decodes starts there: its length and content. Tries every end
/// within `bytes` (a CRC match by chance is rejected by the content check).
fn region_at(
    bytes: &[u8],
    cl: usize,
    layout: IndexLayout,
    dict: Dict<'_>,
) -> Option<(usize, Region)> {
    let mut crc = 0u32;
    let mut e = 0;
    while e + CRC_BYTES <= bytes.len() {
        if e > 0 {
            let stored = u32::from_le_bytes([bytes[e], bytes[e + 1], bytes[e + 2], bytes[e + 3]]);
            if stored == crc {
                if let Some(r) = classify(&bytes[..e], cl, layout, dict) {
                    return Some((e + CRC_BYTES, r));
                }
            }
        }
        crc = crc32c::crc32c_append(crc, &bytes[e..e + 1]);
        e += 1;
    }
    None
}

/// A sliding window over a file, so a salvage holds a few regions, not the file.
struct Window<'f> {
    file: &'f ReadableFile,
    tag: IoTag,
    start: u64,
    buf: Vec<u8>,
}

impl Window<'_> {
    /// File bytes `[at, at + n)`, cut at the end of the file.
    fn slice(&mut self, at: u64, n: usize) -> Result<&[u8]> {
        let len = self.file.len();
        let end = at.saturating_add(n as u64).min(len);
        let have = self.start + self.buf.len() as u64;
        if at < self.start || end > have {
            // Read ahead four requests' worth, so a byte-by-byte search reloads
            // rarely.
            let want = (n as u64).saturating_mul(4).min(len - at.min(len));
            self.buf.resize(want as usize, 0);
            self.file.read_exact_at(&mut self.buf, at, self.tag, None)?;
            self.start = at;
        }
        let from = (at - self.start) as usize;
        Ok(&self.buf[from..from + (end - at) as usize])
    }
}

/// The file's dictionary, for files written with a dictionary codec.
type Dict<'a> = Option<&'a crate::dictionary::CompressionDictionary>;

/// A region body (CRC already checked) as a chunk of at most `cl` bytes or an
/// index block.
fn classify(body: &[u8], cl: usize, layout: IndexLayout, dict: Dict<'_>) -> Option<Region> {
    let (&codec, payload) = body.split_first()?;
    let chunk = match codec {
        CODEC_ID_NONE if !payload.is_empty() && payload.len() <= cl => Some(payload.to_vec()),
        CODEC_ID_LZ4 => {
            let mut out = vec![0u8; cl];
            match crate::lz4::decompress_into(payload, &mut out) {
                Ok(n) if n > 0 => {
                    out.truncate(n);
                    Some(out)
                }
                _ => None,
            }
        }
        CODEC_ID_ZSTD => zstd::bulk::decompress(payload, cl)
            .ok()
            .filter(|v| !v.is_empty()),
        // A dictionary chunk decodes only with the file's dictionary; the
        // decoded length is unknown here, so decode into a full chunk's room.
        CODEC_ID_ZSTD_DICT | CODEC_ID_LZ4_DICT => dict.and_then(|d| {
            let mut stored = body.to_vec();
            stored.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
            super::compression::decompress_chunk_up_to(&stored, cl, d).filter(|v| !v.is_empty())
        }),
        _ => None,
    };
    if let Some(c) = chunk {
        return Some(Region::Chunk(c));
    }
    let mut with_crc = body.to_vec();
    with_crc.extend_from_slice(&crc32c::crc32c(body).to_le_bytes());
    let payload = open_block(&with_crc).ok()?;
    decode_index_block(payload, layout)
        .ok()
        .map(|entries| Region::IndexBlock(entries.iter().map(|e| e.key.token).collect()))
}

/// Where [`locate_regions`] found something, in file order.
enum Located {
    /// A verified chunk at this offset and stored length; `short` if it holds
    /// fewer than `chunk_length` bytes (the last one).
    Chunk { offset: u64, length: usize },
    /// Bytes that fail every checksum.
    Damage {
        offset: u64,
        length: u64,
        to_end: bool,
    },
}

/// Pass 1 of a tail-less salvage: finds every verified chunk and index block
/// from the end of the header on, and collects the tokens the index blocks list.
fn locate_regions(
    win: &mut Window<'_>,
    header_len: u64,
    cl: usize,
    layout: IndexLayout,
    dict: Dict<'_>,
) -> Result<(Vec<Located>, Vec<i64>)> {
    // A stored chunk is at most codec byte + raw chunk + CRC (compressed forms are
    // kept only when smaller); an index block at most its target plus one entry
    // of the largest key.
    let max_chunk = cl + 1 + CRC_BYTES;
    let max_region = max_chunk
        .max(super::format::INDEX_BLOCK_TARGET_BYTES + crate::schema::MAX_KEY_COMPONENT_BYTES + 64);
    let len = win.file.len();
    let mut out = Vec::new();
    let mut tokens = Vec::new();
    let mut pos = header_len;
    while pos < len {
        let mut found = region_at(win.slice(pos, max_region)?, cl, layout, dict).map(|r| (pos, r));
        // Damaged: the next region is a chunk or an index block starting somewhere
        // after; try each start that can begin a chunk (a codec id byte, which
        // prunes most offsets). Index blocks in between are skipped with the damage.
        let mut q = pos + 1;
        while found.is_none() && q < len {
            let s = win.slice(q, max_chunk)?;
            if s[0] <= CODEC_ID_LZ4_DICT {
                found = region_at(s, cl, layout, dict).map(|r| (q, r));
            }
            q += 1;
        }
        let Some((at, (region_len, region))) = found else {
            out.push(Located::Damage {
                offset: pos,
                length: len - pos,
                to_end: true,
            });
            break;
        };
        if at > pos {
            // The search above finds chunks only. An intact index block may sit
            // between the damage and that chunk, ending where it begins: its CRC
            // is then the four bytes before `at`, so look for the start whose
            // bytes up to there match it (bulk CRCs: cheap), and keep its
            // tokens, which confirm where partitions start after the damage.
            let mut damaged_to = at;
            if at >= pos + 1 + 8 {
                let lo = (pos + 1).max(at.saturating_sub(max_region as u64));
                let window = win.slice(lo, (at - lo) as usize)?;
                let crc_at = window.len() - CRC_BYTES;
                let stored = u32::from_le_bytes([
                    window[crc_at],
                    window[crc_at + 1],
                    window[crc_at + 2],
                    window[crc_at + 3],
                ]);
                for start in 0..crc_at.saturating_sub(2) {
                    let body = &window[start..crc_at];
                    if crc32c::crc32c(body) == stored {
                        if let Some(Region::IndexBlock(t)) = classify(body, cl, layout, dict) {
                            tokens.extend(t);
                            damaged_to = lo + start as u64;
                            break;
                        }
                    }
                }
            }
            out.push(Located::Damage {
                offset: pos,
                length: damaged_to - pos,
                to_end: false,
            });
        }
        pos = at + region_len as u64;
        match region {
            Region::IndexBlock(t) => tokens.extend(t),
            Region::Chunk(data) => {
                out.push(Located::Chunk {
                    offset: at,
                    length: region_len,
                });
                if data.len() < cl {
                    // Only the last chunk is short: the data stream ends here;
                    // the last index block follows, then the tail.
                    if let Some((_, Region::IndexBlock(t))) =
                        region_at(win.slice(pos, max_region)?, cl, layout, dict)
                    {
                        tokens.extend(t);
                    }
                    break;
                }
            }
        }
    }
    tokens.sort_unstable();
    Ok((out, tokens))
}

/// Finds the chunks of a file whose tail is gone (pass 1) and walks their data
/// (pass 2), resynchronising after damage only at partitions an intact index
/// block lists, when any is intact.
fn scan_regions(
    path: &Path,
    file: &ReadableFile,
    tag: IoTag,
    (header_len, version): (u64, u32),
    identity: &SSTableIdentity,
    counts: &mut SalvageCounts,
    sink: &mut dyn FnMut(SalvageItem) -> Result<()>,
) -> Result<()> {
    let cl = identity.chunk_length_bytes as usize;
    // Index entries of version 3 carry the row-index field.
    let layout = IndexLayout::for_version(version);
    let mut win = Window {
        file,
        tag,
        start: 0,
        buf: Vec::new(),
    };
    // A file compressed with a dictionary is salvaged with it; without it no
    // chunk can be verified, so the salvage stops here rather than report every
    // chunk as damage (invariant 4 of `crate::dictionary`).
    let dictionary = match identity.codec.dictionary() {
        Some(id) => {
            let dir = crate::dictionary::dir_for(path);
            Some(crate::dictionary::load(win.file.fs(), &dir, id)?)
        }
        None => None,
    };
    let dict = dictionary.as_deref();
    let (located, tokens) = locate_regions(&mut win, header_len, cl, layout, dict)?;
    let order = HeaderOrder::for_version(version);
    let mut w = Walker::new(identity.base(), order, Some(identity), None, counts);
    // With no intact index block nothing can confirm a resync candidate, and
    // the row framing resynchronises so well that bytes from the middle of a
    // partition pass every other check often enough (see the seeded test
    // `salvage_under_random_damage_never_invents_or_reorders`):
    // everything after the first damage is then given up rather than guessed.
    w.known_tokens = Some(tokens);
    let mut contiguous = true;
    let mut data_offset = Some(0u64);
    for l in located {
        match l {
            Located::Damage {
                offset,
                length,
                to_end,
            } => {
                w.counts.file_bytes_lost += length;
                let reason = if to_end {
                    format!(
                        "{length} bytes from here on hold no intact chunk (the tail, or damage)"
                    )
                } else {
                    w.counts.chunks_lost += 1;
                    contiguous = false;
                    data_offset = None;
                    format!("{length} bytes fail every checksum")
                };
                sink(SalvageItem::Damage {
                    file_offset: offset,
                    reason,
                })?;
            }
            Located::Chunk { offset, length } => {
                let Some((_, Region::Chunk(data))) =
                    region_at(win.slice(offset, length)?, cl, layout, dict)
                else {
                    return Err(Error::corruption(
                        path,
                        offset,
                        "chunk changed between the two passes of the salvage",
                    ));
                };
                w.counts.chunks_read += 1;
                w.push(data_offset, &data, contiguous, sink)?;
                data_offset = data_offset.map(|o| o + data.len() as u64);
                contiguous = true;
            }
        }
    }
    w.end_segment(sink)?;
    Ok(())
}

/// The identity header of the file at `path` and the format version in it,
/// read without opening the rest (for `strata sstable metadata` on a file whose
/// tail does not open). `Corruption` when there is none or it is damaged.
pub fn read_identity_header(fs: &Fs, path: &Path) -> Result<(SSTableIdentity, u32)> {
    identity_header(fs, path).map(|(i, v, _)| (i, v))
}

/// [`read_identity_header`] and the header's length in bytes.
fn identity_header(fs: &Fs, path: &Path) -> Result<(SSTableIdentity, u32, u64)> {
    let file = fs.open(path)?;
    let tag = IoTag::new(crate::fs::IoCause::Metadata);
    let mut prefix = [0u8; IDENTITY_PREFIX_BYTES];
    if file.len() < IDENTITY_PREFIX_BYTES as u64 {
        return Err(Error::corruption(
            path,
            0,
            "too short for an identity header",
        ));
    }
    file.read_exact_at(&mut prefix, 0, tag, None)?;
    let len = SSTableIdentity::block_length(&prefix).map_err(|r| Error::corruption(path, 0, r))?;
    if len > file.len() {
        return Err(Error::corruption(path, 0, "identity header cut off"));
    }
    let mut block = vec![0u8; len as usize];
    file.read_exact_at(&mut block, 0, tag, None)?;
    let (identity, version) =
        SSTableIdentity::decode(&block).map_err(|r| Error::corruption(path, 0, r))?;
    Ok((identity, version, len))
}
