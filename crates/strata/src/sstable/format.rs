//! Fixed parts of the format: footer, checksummed blocks, index blocks, summary
//! and chunk table encodings (docs/FORMAT.md draws them).

use crate::data::DecoratedKey;
use crate::encoding::{
    put_bytes, put_u32_le, put_u64_le, put_varint, DecodeError, DecodeResult, Reader,
};
use std::sync::Arc;

/// Format version written in every footer of an sstable that carries an
/// identity header; bump on any incompatible change. Version 1 (no identity
/// header) is still read, and still written when a writer is given no identity
/// (low-level tests only).
///
/// Version 6 puts a one-row partition of empty clustering in the short form
/// (`partition::FLAG_SINGLE_ROW`) and leaves out the column bitmap of a row
/// whose one simple cell is column 0: six of the 16 bytes that framed a
/// 116-byte key-value pair (issue 15). Readers take both forms in every
/// version, older writers never having produced the short ones, so no read
/// path asks for 6.
///
/// Version 7 writes Bloom filters in the blocked layout (hash id 2: a key's
/// probes in one 64-byte line; `bloom.rs`). The filter block names its
/// layout, so readers take both in every version; the bump keeps a version-6
/// build from opening a file whose filter it cannot read.
///
/// Version 8 lets a row carry its timestamp in a fixed width (row flag
/// bit7, the width recorded in the identity header and the statistics as
/// part of the encoding base) and a plain sole cell without its flags byte
/// and value length (row flag bit6): `encoding.rs`. Readers take both row forms in every
/// version; the header and statistics fields are read from version 8 on.
///
/// Version 9 leaves the token out of partition index entries: the key
/// determines it (`crate::token::token_of`), and it was 8 of an entry's ~29
/// bytes, about half a byte per key-value pair. Readers hash the key where
/// they need the token, except a point read's search, which takes it from the
/// searchable block's table, built once per cached block.
///
/// Version 10 puts the table's UUID in the identity header (16 bytes after the
/// table id; `crate::schema::TableUuid`), so that an sstable copied in from
/// another data directory, whose small sequential table id and generation may
/// well match, is told from this table's own. Nothing else changed; version-9
/// and older files are read as before and checked by the table id alone.
///
/// Version 11 adds the counter cell (cell flag bit5, `encoding.rs`; `data.rs`
/// invariant 6). Older files hold none and read unchanged; the bump makes a
/// build before it refuse a file with counters by its version rather than
/// read their contexts as plain values.
pub const FORMAT_VERSION: u32 = 11;
/// The first version whose identity header carries the table's UUID.
pub const FIRST_VERSION_WITH_TABLE_UUID: u32 = 10;
/// The first version whose partition index entries carry no token.
pub const FIRST_VERSION_WITHOUT_INDEX_TOKENS: u32 = 9;
/// The first version whose encoding base has a row-timestamp width
/// ([`crate::encoding::EncodingBase::row_ts_bytes`]), in the identity header
/// and the statistics block.
pub const FIRST_VERSION_WITH_ROW_TS_WIDTH: u32 = 8;
/// The first version whose partitions put their flags byte (and the short
/// form's body length) before the key ([`super::partition::HeaderOrder`]).
pub const FIRST_VERSION_WITH_FLAGS_FIRST: u32 = 8;
/// The first version with an identity header at offset 0.
pub const FIRST_VERSION_WITH_IDENTITY: u32 = 2;
/// The first version whose large partitions carry a row index (see
/// [`super::row_index`]) and whose index entries say where it is.
pub const FIRST_VERSION_WITH_ROW_INDEX: u32 = 3;
/// The first version whose partition index is sparse: an entry names a
/// *granule* of consecutive partitions (see [`IndexEntry`]) rather than one
/// partition, so small partitions stop paying a whole entry each (issue 15:
/// 26 of 104 bytes per 116-byte pair on disk was the dense index).
pub const FIRST_VERSION_WITH_SPARSE_INDEX: u32 = 4;
/// The first version whose statistics say which clusterings the rows span and
/// whether anything applies beyond them (see
/// [`super::stats::ClusteringCoverage`]), so that a read of one row or slice
/// skips sstables that cannot hold anything for it (issue 15: a recent point
/// of a time series otherwise reads every newer flush of its series).
pub const FIRST_VERSION_WITH_CLUSTERING_COVERAGE: u32 = 5;
/// A granule takes further partitions only while it holds fewer than this many
/// bytes of the data stream (and only partitions that start in its first
/// partition's chunk). A point read walks the granule's partitions by their
/// framing, up to this many bytes, where a dense index found the partition
/// directly; the index shrinks by the partitions per granule. Measured in
/// BENCHMARKS.md ("Sparse partition index").
pub const GRANULE_TARGET_BYTES: u64 = 2048;
/// Oldest version this build reads.
pub const OLDEST_READABLE_VERSION: u32 = 1;
/// Last 8 bytes of every sstable.
pub const MAGIC: [u8; 8] = *b"STRATA.S";
/// Size of the footer (see [`Footer`]).
pub const FOOTER_BYTES: usize = 60;
/// An index block is cut once its entries reach this size: one 4 KiB read per
/// point lookup, and one summary entry (first key + position) per block in memory.
pub const INDEX_BLOCK_TARGET_BYTES: usize = 4096;
/// Bytes of the CRC32C trailer of every block.
pub const CRC_BYTES: usize = 4;

/// The most bytes an sstable's tail (chunk table, summary, Bloom filter and
/// statistics, before the footer) may hold. Open reads the tail whole, so its
/// length, taken from the footer, is checked against this before anything is
/// allocated: a crafted footer pointing its tail at offset 0 of a 20 GiB file
/// once made open allocate 20 GiB and abort. The writer refuses to finish a
/// file past it (so no file it writes is ever refused here); a tail reaches it
/// only past about 800 million partitions (their Bloom filter at 1% false
/// positives) or 300 million chunks in one sstable.
pub const MAX_TAIL_BYTES: u64 = 1 << 30;

/// The fixed-size footer at the end of the file.
///
/// ```text
///  0 chunk_table_offset u64   start of the tail = end of chunks and index blocks
///  8 summary_offset     u64
/// 16 filter_offset      u64
/// 24 stats_offset       u64   the stats block ends where the footer starts
/// 32 uncompressed_bytes u64   length of the data stream
/// 40 chunk_length_bytes u32
/// 44 format_version     u32
/// 48 crc32c             u32   of bytes 0..48
/// 52 magic              [u8; 8]
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Footer {
    pub chunk_table_offset: u64,
    pub summary_offset: u64,
    pub filter_offset: u64,
    pub stats_offset: u64,
    pub uncompressed_bytes: u64,
    pub chunk_length_bytes: u32,
    pub format_version: u32,
}

impl Footer {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FOOTER_BYTES);
        put_u64_le(&mut out, self.chunk_table_offset);
        put_u64_le(&mut out, self.summary_offset);
        put_u64_le(&mut out, self.filter_offset);
        put_u64_le(&mut out, self.stats_offset);
        put_u64_le(&mut out, self.uncompressed_bytes);
        put_u32_le(&mut out, self.chunk_length_bytes);
        put_u32_le(&mut out, self.format_version);
        let crc = crc32c::crc32c(&out);
        put_u32_le(&mut out, crc);
        out.extend_from_slice(&MAGIC);
        debug_assert_eq!(out.len(), FOOTER_BYTES);
        out
    }

    /// Checks magic, checksum and version, in that order (a wrong magic means "not
    /// an sstable", which is the more useful message). Errors are
    /// `(offset within the footer, reason)`.
    pub fn decode(b: &[u8]) -> Result<Footer, (u64, String)> {
        if b.len() != FOOTER_BYTES {
            return Err((
                0,
                format!("footer of {} bytes, expected {FOOTER_BYTES}", b.len()),
            ));
        }
        if b[52..60] != MAGIC {
            return Err((52, "bad magic: not a Strata sstable".to_string()));
        }
        let mut r = Reader::new(b);
        let field = |r: &mut Reader<'_>| r.u64_le().map_err(|e| (0u64, e.0.to_string()));
        let chunk_table_offset = field(&mut r)?;
        let summary_offset = field(&mut r)?;
        let filter_offset = field(&mut r)?;
        let stats_offset = field(&mut r)?;
        let uncompressed_bytes = field(&mut r)?;
        let small = |r: &mut Reader<'_>| r.u32_le().map_err(|e| (0u64, e.0.to_string()));
        let chunk_length_bytes = small(&mut r)?;
        let version = small(&mut r)?;
        let stored = small(&mut r)?;
        let actual = crc32c::crc32c(&b[..48]);
        if stored != actual {
            return Err((
                48,
                format!(
                    "footer checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
                ),
            ));
        }
        if !(OLDEST_READABLE_VERSION..=FORMAT_VERSION).contains(&version) {
            return Err((
                44,
                format!(
                    "unsupported format version {version} (this build reads \
                     {OLDEST_READABLE_VERSION}..={FORMAT_VERSION})"
                ),
            ));
        }
        Ok(Footer {
            chunk_table_offset,
            summary_offset,
            filter_offset,
            stats_offset,
            uncompressed_bytes,
            chunk_length_bytes,
            format_version: version,
        })
    }
}

/// Appends the CRC32C of `out[start..]` (a block's payload).
pub fn seal_block(out: &mut Vec<u8>, start: usize) {
    let crc = crc32c::crc32c(&out[start..]);
    put_u32_le(out, crc);
}

/// The payload of a stored block after checking its trailing CRC32C.
pub fn open_block(stored: &[u8]) -> Result<&[u8], String> {
    if stored.len() < CRC_BYTES {
        return Err(format!(
            "block of {} bytes is shorter than its checksum",
            stored.len()
        ));
    }
    let (payload, crc) = stored.split_at(stored.len() - CRC_BYTES);
    let stored_crc = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let actual = crc32c::crc32c(payload);
    if stored_crc != actual {
        return Err(format!(
            "block checksum mismatch (stored {stored_crc:#010x}, computed {actual:#010x})"
        ));
    }
    Ok(payload)
}

/// Where a partition's row index is, both offsets relative to the partition's
/// start in the data stream (format version 3).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RowIndexLocation {
    /// Start of the root node; the root ends one byte before the partition does
    /// (only the end-of-partition marker follows it).
    pub root_offset: u64,
    /// Length of the partition header (key, flags, deletions, static row): the
    /// first row starts here.
    pub rows_offset: u64,
}

/// One partition index entry. Up to version 3 it names one partition: where it
/// starts in the data stream and its length. From version 4
/// ([`FIRST_VERSION_WITH_SPARSE_INDEX`]) it names a granule: `key` and `offset`
/// are its first partition's, `length` covers all its partitions (they follow
/// each other with no gap, each self-delimiting by its framing). A granule with
/// a row index is that one partition alone, and so is any granule whose first
/// partition reaches [`GRANULE_TARGET_BYTES`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IndexEntry {
    pub key: DecoratedKey,
    pub offset: u64,
    pub length: u64,
    /// Version 3 and later, partitions large enough to have a row index.
    pub row_index: Option<RowIndexLocation>,
    /// Partitions in the granule (always 1 before version 4).
    pub partitions: u64,
}

impl IndexEntry {
    /// Whether a partition of `length` bytes can be the first of this entry:
    /// all of it when it is alone, a part of it otherwise.
    pub fn starts(&self, length: u64) -> bool {
        if self.partitions == 1 {
            length == self.length
        } else {
            length < self.length
        }
    }
}

/// Which fields an index entry carries, by format version.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct IndexLayout {
    /// The row-index field (version 3 and later).
    pub row_index: bool,
    /// Entries are granules with a partition count (version 4 and later).
    pub sparse: bool,
    /// Entries leave the token out: readers hash the key (version 9 and later).
    pub tokenless: bool,
}

impl IndexLayout {
    pub fn for_version(version: u32) -> IndexLayout {
        IndexLayout {
            row_index: version >= FIRST_VERSION_WITH_ROW_INDEX,
            sparse: version >= FIRST_VERSION_WITH_SPARSE_INDEX,
            tokenless: version >= FIRST_VERSION_WITHOUT_INDEX_TOKENS,
        }
    }
}

/// Builds one index block's payload:
/// `[count varint][first offset varint]` then per entry
/// `[token i64 LE]` (before version 9) `[key len varint][key][partition length varint]`, from
/// version 3 on `[root offset varint]` (0: no row index) followed, when not 0,
/// by `[rows offset varint]`, and from version 4 on `[partitions varint]` (the
/// length is then the granule's). Entry offsets are the first offset plus the
/// lengths before them (partitions, and so granules, are contiguous).
#[derive(Debug, Default)]
pub struct IndexBlockBuilder {
    entries: Vec<u8>,
    count: u64,
    first_offset: u64,
    first_key: Option<DecoratedKey>,
    layout: IndexLayout,
}

impl IndexBlockBuilder {
    pub fn new(layout: IndexLayout) -> IndexBlockBuilder {
        IndexBlockBuilder {
            layout,
            ..IndexBlockBuilder::default()
        }
    }

    /// Adds one entry; `row_index` must be `None` for a layout without the
    /// field, and `partitions` 1 for a dense one.
    pub fn add(
        &mut self,
        key: &DecoratedKey,
        offset: u64,
        length: u64,
        row_index: Option<RowIndexLocation>,
        partitions: u64,
    ) {
        debug_assert!(self.layout.row_index || row_index.is_none());
        debug_assert!(self.layout.sparse || partitions == 1);
        debug_assert!(partitions >= 1 && (row_index.is_none() || partitions == 1));
        if self.first_key.is_none() {
            self.first_key = Some(key.clone());
            self.first_offset = offset;
        }
        if !self.layout.tokenless {
            self.entries.extend_from_slice(&key.token.to_le_bytes());
        }
        put_bytes(&mut self.entries, &key.key);
        put_varint(&mut self.entries, length);
        if self.layout.row_index {
            match row_index {
                // A root at offset 0 is impossible (the key comes first), so 0
                // can mean "none" and small partitions pay one byte.
                None => put_varint(&mut self.entries, 0),
                Some(loc) => {
                    put_varint(&mut self.entries, loc.root_offset);
                    put_varint(&mut self.entries, loc.rows_offset);
                }
            }
        }
        if self.layout.sparse {
            put_varint(&mut self.entries, partitions);
        }
        self.count += 1;
    }

    pub fn size_bytes(&self) -> usize {
        self.entries.len()
    }

    /// Appends the sealed block to `out` and returns its first key; resets.
    pub fn finish_into(&mut self, out: &mut Vec<u8>) -> Option<DecoratedKey> {
        let first = self.first_key.take()?;
        let start = out.len();
        put_varint(out, self.count);
        put_varint(out, self.first_offset);
        out.extend_from_slice(&self.entries);
        seal_block(out, start);
        self.entries.clear();
        self.count = 0;
        Some(first)
    }
}

/// One index entry borrowed from a block payload.
#[derive(Clone, Copy, Debug)]
pub struct RawEntry<'a> {
    pub token: i64,
    pub key: &'a [u8],
    pub offset: u64,
    pub length: u64,
    pub row_index: Option<RowIndexLocation>,
    pub partitions: u64,
}

/// Iterates the entries of an index block payload without allocating keys.
pub struct IndexBlockIter<'a> {
    r: Reader<'a>,
    /// Position of `r`'s first byte in the payload (non-zero after a seek).
    base: usize,
    left: u64,
    next_offset: u64,
    layout: IndexLayout,
    /// After [`SearchableIndexBlock::seek_floor`]: the search table's tokens
    /// from the next entry on, so a point read of a tokenless block hashes
    /// no key (the table was built once, when the block was cached).
    tokens: Option<&'a [u8]>,
}

/// Where an [`IndexBlockIter`] is in its payload, to pick up later without
/// borrowing it: a scanner keeps this beside its block and decodes one entry
/// at a time, as it walks, instead of the whole block up front.
#[derive(Clone, Copy, Debug)]
pub struct IndexCursor {
    pos: usize,
    left: u64,
    next_offset: u64,
}

impl<'a> IndexBlockIter<'a> {
    /// `layout`: the fields of the file's version ([`IndexLayout::for_version`]).
    pub fn new(payload: &'a [u8], layout: IndexLayout) -> DecodeResult<IndexBlockIter<'a>> {
        let mut r = Reader::new(payload);
        let left = r.varint()?;
        let next_offset = r.varint()?;
        if left == 0 {
            return Err(DecodeError("empty index block"));
        }
        Ok(IndexBlockIter {
            r,
            base: 0,
            left,
            next_offset,
            layout,
            tokens: None,
        })
    }

    /// Where this iterator is: [`resume`](Self::resume) continues from here.
    pub fn cursor(&self) -> IndexCursor {
        IndexCursor {
            pos: self.base + self.r.position(),
            left: self.left,
            next_offset: self.next_offset,
        }
    }

    /// Continues at `cursor`, taken from an iterator over this same payload.
    pub fn resume(
        payload: &'a [u8],
        cursor: IndexCursor,
        layout: IndexLayout,
    ) -> DecodeResult<IndexBlockIter<'a>> {
        let rest = payload
            .get(cursor.pos..)
            .ok_or(DecodeError("index cursor past its block"))?;
        Ok(IndexBlockIter {
            r: Reader::new(rest),
            base: cursor.pos,
            left: cursor.left,
            next_offset: cursor.next_offset,
            layout,
            tokens: None,
        })
    }

    pub fn next_entry(&mut self) -> DecodeResult<Option<RawEntry<'a>>> {
        if self.left == 0 {
            if !self.r.is_empty() {
                return Err(DecodeError("trailing bytes after index entries"));
            }
            return Ok(None);
        }
        self.left -= 1;
        let stored = if self.layout.tokenless {
            None
        } else {
            Some(self.r.i64_le()?)
        };
        let key = self.r.bytes()?;
        let token = match (stored, self.tokens.as_mut()) {
            (Some(t), _) => t,
            (None, Some(table)) => {
                let (entry, rest) = table
                    .split_first_chunk::<SEARCH_ENTRY_BYTES>()
                    .ok_or(DecodeError("searchable index block too short"))?;
                *table = rest;
                let mut t = [0u8; 8];
                t.copy_from_slice(&entry[..8]);
                i64::from_le_bytes(t)
            }
            (None, None) => crate::token::token_of(key),
        };
        let length = self.r.varint()?;
        let row_index = if self.layout.row_index {
            match self.r.varint()? {
                0 => None,
                root_offset => {
                    let rows_offset = self.r.varint()?;
                    // The header precedes the rows, which precede the root; the
                    // root and the end marker fit inside the partition.
                    if rows_offset == 0 || rows_offset >= root_offset || root_offset >= length {
                        return Err(DecodeError("row index location outside its partition"));
                    }
                    Some(RowIndexLocation {
                        root_offset,
                        rows_offset,
                    })
                }
            }
        } else {
            None
        };
        let partitions = if self.layout.sparse {
            self.r.varint()?
        } else {
            1
        };
        // A granule holds at least one partition, each at least four bytes
        // (key length, a key byte, flags, end marker); a row index locates its
        // partition, alone in its entry.
        if partitions == 0 || partitions > length / 4 || (row_index.is_some() && partitions != 1) {
            return Err(DecodeError(
                "index entry with an impossible partition count",
            ));
        }
        let offset = self.next_offset;
        self.next_offset = offset
            .checked_add(length)
            .ok_or(DecodeError("index offset overflows"))?;
        Ok(Some(RawEntry {
            token,
            key,
            offset,
            length,
            row_index,
            partitions,
        }))
    }
}

/// An index block with a search table in front, as the chunk cache keeps it:
/// a point lookup binary-searches the entries' tokens instead of decoding the
/// block entry by entry (a third of a cached point read's time before). Layout,
/// little-endian: `n u32`, then `n` x (`token i64`, `byte position u32` of the
/// entry in the payload, `data offset u64` of its partition), then the payload.
pub struct SearchableIndexBlock;

const SEARCH_ENTRY_BYTES: usize = 20;

impl SearchableIndexBlock {
    /// The block's payload: what [`IndexBlockIter::new`] reads from its start.
    pub fn payload(block: &[u8]) -> DecodeResult<&[u8]> {
        Ok(Self::split(block)?.2)
    }

    /// `(n, search table, payload)`.
    fn split(block: &[u8]) -> DecodeResult<(usize, &[u8], &[u8])> {
        let head = block
            .get(..4)
            .ok_or(DecodeError("searchable index block too short"))?;
        let n = u32::from_le_bytes([head[0], head[1], head[2], head[3]]) as usize;
        let table_end = 4 + n * SEARCH_ENTRY_BYTES;
        let table = block
            .get(4..table_end)
            .ok_or(DecodeError("searchable index block too short"))?;
        Ok((n, table, &block[table_end..]))
    }

    /// Builds the searchable form of a verified index block payload.
    pub fn build(payload: &[u8], layout: IndexLayout) -> DecodeResult<Vec<u8>> {
        let mut it = IndexBlockIter::new(payload, layout)?;
        let mut table = Vec::new();
        let mut n = 0u32;
        loop {
            let pos = it.r.position();
            let offset = it.next_offset;
            let Some(e) = it.next_entry()? else { break };
            table.extend_from_slice(&e.token.to_le_bytes());
            table.extend_from_slice(
                &u32::try_from(pos)
                    .map_err(|_| DecodeError("index block too large"))?
                    .to_le_bytes(),
            );
            table.extend_from_slice(&offset.to_le_bytes());
            n += 1;
        }
        let mut out = Vec::with_capacity(4 + table.len() + payload.len());
        out.extend_from_slice(&n.to_le_bytes());
        out.extend_from_slice(&table);
        out.extend_from_slice(payload);
        Ok(out)
    }

    /// The entries, in order, from the last whose token is below `token` (or
    /// from the first, if none is): `block` is what [`build`](Self::build)
    /// returned. The entry that may hold a key (the key's own in a dense
    /// index, its granule in a sparse one) is the last entry not after the
    /// key, which this iterator reaches first.
    pub fn seek_floor(
        block: &[u8],
        token: i64,
        layout: IndexLayout,
    ) -> DecodeResult<IndexBlockIter<'_>> {
        let (n, table, payload) = Self::split(block)?;
        let entry = |i: usize| {
            let e = &table[i * SEARCH_ENTRY_BYTES..(i + 1) * SEARCH_ENTRY_BYTES];
            let mut t = [0u8; 8];
            t.copy_from_slice(&e[..8]);
            let mut o = [0u8; 8];
            o.copy_from_slice(&e[12..20]);
            (
                i64::from_le_bytes(t),
                u32::from_le_bytes([e[8], e[9], e[10], e[11]]) as usize,
                u64::from_le_bytes(o),
            )
        };
        // First entry whose token is >= `token` (tokens never decrease).
        let (mut lo, mut hi) = (0, n);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if entry(mid).0 < token {
                lo = mid + 1;
            } else {
                hi = mid;
            }
        }
        lo = lo.saturating_sub(1);
        if lo == n {
            return Ok(IndexBlockIter {
                r: Reader::new(&payload[payload.len()..]),
                base: payload.len(),
                left: 0,
                next_offset: 0,
                layout,
                tokens: None,
            });
        }
        let (_, pos, offset) = entry(lo);
        let rest = payload.get(pos..).ok_or(DecodeError(
            "searchable index block position past its payload",
        ))?;
        Ok(IndexBlockIter {
            r: Reader::new(rest),
            base: pos,
            left: (n - lo) as u64,
            next_offset: offset,
            layout,
            tokens: Some(&table[lo * SEARCH_ENTRY_BYTES..]),
        })
    }
}

/// Decodes a whole index block (for scans), checking that keys increase.
pub fn decode_index_block(payload: &[u8], layout: IndexLayout) -> DecodeResult<Vec<IndexEntry>> {
    let mut it = IndexBlockIter::new(payload, layout)?;
    let mut out: Vec<IndexEntry> = Vec::new();
    while let Some(e) = it.next_entry()? {
        let key = DecoratedKey {
            token: e.token,
            key: Arc::from(e.key),
        };
        if out.last().is_some_and(|prev| prev.key >= key) {
            return Err(DecodeError("index entries out of order"));
        }
        out.push(IndexEntry {
            key,
            offset: e.offset,
            length: e.length,
            row_index: e.row_index,
            partitions: e.partitions,
        });
    }
    Ok(out)
}

/// What the summary says about one index block.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SummaryEntry {
    pub first_key: DecoratedKey,
    pub offset: u64,
    pub length: u64,
}

/// `[count varint]` then per block `[token i64 LE][key len varint][key]
/// [offset delta varint][length varint]`, the delta taken from the previous
/// block's end (the chunks written in between), from 0 for the first.
pub fn encode_summary(entries: &[SummaryEntry], out: &mut Vec<u8>) {
    put_varint(out, entries.len() as u64);
    let mut prev_end = 0u64;
    for e in entries {
        out.extend_from_slice(&e.first_key.token.to_le_bytes());
        put_bytes(out, &e.first_key.key);
        put_varint(out, e.offset - prev_end);
        put_varint(out, e.length);
        prev_end = e.offset + e.length;
    }
}

pub fn decode_summary(payload: &[u8]) -> DecodeResult<Vec<SummaryEntry>> {
    let mut r = Reader::new(payload);
    let n = r.varint_usize()?;
    let mut out: Vec<SummaryEntry> = Vec::with_capacity(n.min(payload.len()));
    let mut prev_end = 0u64;
    for _ in 0..n {
        let token = r.i64_le()?;
        let first_key = DecoratedKey {
            token,
            key: Arc::from(r.bytes()?),
        };
        let offset = prev_end
            .checked_add(r.varint()?)
            .ok_or(DecodeError("summary offset overflows"))?;
        let length = r.varint()?;
        prev_end = offset
            .checked_add(length)
            .ok_or(DecodeError("summary offset overflows"))?;
        if out.last().is_some_and(|p| p.first_key >= first_key) {
            return Err(DecodeError("summary keys out of order"));
        }
        out.push(SummaryEntry {
            first_key,
            offset,
            length,
        });
    }
    if !r.is_empty() {
        return Err(DecodeError("trailing bytes after summary"));
    }
    Ok(out)
}

/// Location of one stored chunk.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChunkLocation {
    pub offset: u64,
    pub length: u32,
}

/// `[count varint]` then per chunk `[gap varint][stored length varint]`, the gap
/// being the index-block bytes between the previous chunk's end and this chunk.
pub fn encode_chunk_table(chunks: &[ChunkLocation], out: &mut Vec<u8>) {
    put_varint(out, chunks.len() as u64);
    let mut prev_end = 0u64;
    for c in chunks {
        put_varint(out, c.offset - prev_end);
        put_varint(out, c.length as u64);
        prev_end = c.offset + c.length as u64;
    }
}

pub fn decode_chunk_table(payload: &[u8]) -> DecodeResult<Vec<ChunkLocation>> {
    let mut r = Reader::new(payload);
    let n = r.varint_usize()?;
    let mut out = Vec::with_capacity(n.min(payload.len()));
    let mut prev_end = 0u64;
    for _ in 0..n {
        let offset = prev_end
            .checked_add(r.varint()?)
            .ok_or(DecodeError("chunk offset overflows"))?;
        let length =
            u32::try_from(r.varint()?).map_err(|_| DecodeError("chunk length out of range"))?;
        prev_end = offset
            .checked_add(length as u64)
            .ok_or(DecodeError("chunk offset overflows"))?;
        out.push(ChunkLocation { offset, length });
    }
    if !r.is_empty() {
        return Err(DecodeError("trailing bytes after chunk table"));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Checks that a seek of `payload`'s searchable form to each probe yields
    /// the entries a linear read does, from the last whose token is below
    /// the probe (if any); returns the linear read's `(token, offset,
    /// length)`s.
    fn assert_seeks_agree_with_a_linear_read(
        payload: &[u8],
        layout: IndexLayout,
        probes: &[i64],
    ) -> Vec<(i64, u64, u64)> {
        let entries = |mut it: IndexBlockIter<'_>| -> Vec<(i64, u64, u64)> {
            std::iter::from_fn(|| {
                it.next_entry()
                    .unwrap()
                    .map(|e| (e.token, e.offset, e.length))
            })
            .collect()
        };
        let linear = entries(IndexBlockIter::new(payload, layout).unwrap());
        let block = SearchableIndexBlock::build(payload, layout).unwrap();
        for &probe in probes {
            let got = entries(SearchableIndexBlock::seek_floor(&block, probe, layout).unwrap());
            let first = linear
                .iter()
                .position(|e| e.0 >= probe)
                .unwrap_or(linear.len());
            assert_eq!(
                got,
                linear[first.saturating_sub(1)..].to_vec(),
                "floor probe {probe}, {layout:?}"
            );
        }
        linear
    }

    #[test]
    fn tokenless_entries_are_shorter_and_give_back_the_keys_tokens() {
        let mut keys: Vec<DecoratedKey> = (0..300u64)
            .map(|i| DecoratedKey::new(&i.to_be_bytes()))
            .collect();
        keys.sort();
        let build = |version: u32| {
            let mut b = IndexBlockBuilder::new(IndexLayout::for_version(version));
            for (i, k) in keys.iter().enumerate() {
                b.add(k, 0, 100 + i as u64, None, 1 + i as u64 % 5);
            }
            let mut sealed = Vec::new();
            b.finish_into(&mut sealed);
            open_block(&sealed).unwrap().to_vec()
        };
        let (with, without) = (build(8), build(9));
        assert_eq!(with.len() - without.len(), 8 * keys.len());
        let layout = IndexLayout::for_version(9);
        // Both versions decode to the same entries.
        assert_eq!(
            decode_index_block(&with, IndexLayout::for_version(8)).unwrap(),
            decode_index_block(&without, layout).unwrap()
        );
        // Read in order, every entry's token is its key's; a seek takes the
        // tokens from the search table and agrees.
        let probes = [
            i64::MIN,
            keys[0].token,
            keys[100].token,
            keys[100].token + 1,
            keys[299].token,
            i64::MAX,
        ];
        let linear = assert_seeks_agree_with_a_linear_read(&without, layout, &probes);
        let want: Vec<i64> = keys.iter().map(|k| k.token).collect();
        assert_eq!(linear.iter().map(|e| e.0).collect::<Vec<_>>(), want);
    }

    #[test]
    fn searchable_index_block_seeks_where_a_linear_scan_would() {
        for version in [1, 3, 4] {
            let layout = IndexLayout::for_version(version);
            // Tokens with repeats (collisions), as a real block may hold.
            let mut b = IndexBlockBuilder::new(layout);
            let mut keys = Vec::new();
            for i in 0..200u64 {
                let key = DecoratedKey {
                    token: (i as i64 / 3) * 1000 - 50_000,
                    key: std::sync::Arc::from(i.to_be_bytes().to_vec()),
                };
                let ri = (layout.row_index && i % 7 == 0).then_some(RowIndexLocation {
                    root_offset: 40,
                    rows_offset: 10,
                });
                let partitions = if layout.sparse && ri.is_none() {
                    1 + i % 5
                } else {
                    1
                };
                b.add(&key, 0, 100 + i, ri, partitions);
                keys.push(key);
            }
            let mut sealed = Vec::new();
            b.finish_into(&mut sealed);
            let payload = open_block(&sealed).unwrap().to_vec();
            let probes = [-60_000, -50_000, -49_999, 0, 1000, 15_000, 16_000, 70_000];
            assert_seeks_agree_with_a_linear_read(&payload, layout, &probes);
        }
    }

    #[test]
    fn footer_round_trip_and_checks() {
        let f = Footer {
            chunk_table_offset: 1,
            summary_offset: 2,
            filter_offset: 3,
            stats_offset: 4,
            uncompressed_bytes: 5,
            chunk_length_bytes: 16384,
            format_version: FORMAT_VERSION,
        };
        let b = f.encode();
        assert_eq!(b.len(), FOOTER_BYTES);
        assert_eq!(Footer::decode(&b).unwrap(), f);
        for bit in 0..FOOTER_BYTES * 8 {
            let mut bad = b.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(Footer::decode(&bad).is_err(), "bit {bit}");
        }
    }

    #[test]
    fn index_block_and_summary_round_trip() {
        let keys: Vec<DecoratedKey> = (0..50u32)
            .map(|i| DecoratedKey::new(&i.to_be_bytes()))
            .collect();
        let mut keys = keys;
        keys.sort();
        let mut b = IndexBlockBuilder::default();
        let mut off = 100;
        for k in &keys {
            b.add(k, off, 7, None, 1);
            off += 7;
        }
        let mut out = Vec::new();
        assert_eq!(b.finish_into(&mut out).as_ref(), Some(&keys[0]));
        assert_eq!(b.size_bytes(), 0);
        let v1 = IndexLayout::for_version(1);
        let v3 = IndexLayout::for_version(3);
        let v4 = IndexLayout::for_version(4);
        let entries = decode_index_block(open_block(&out).unwrap(), v1).unwrap();
        assert_eq!(entries.len(), 50);
        assert_eq!(entries[3].offset, 121);
        assert_eq!(entries[49].key, keys[49]);
        // Version 3 entries: "no row index" costs one byte each, a location two
        // varints; a location outside its partition is refused.
        let mut b3 = IndexBlockBuilder::new(v3);
        let loc = RowIndexLocation {
            root_offset: 90,
            rows_offset: 12,
        };
        for (i, k) in keys.iter().enumerate() {
            b3.add(k, 100 + i as u64 * 100, 100, (i % 2 == 1).then_some(loc), 1);
        }
        let mut out3 = Vec::new();
        b3.finish_into(&mut out3);
        assert_eq!(out3.len(), out.len() + 25 + 25 * 2);
        let entries3 = decode_index_block(open_block(&out3).unwrap(), v3).unwrap();
        assert_eq!(entries3[0].row_index, None);
        assert_eq!(entries3[1].row_index, Some(loc));
        assert!(decode_index_block(open_block(&out3).unwrap(), v1).is_err());
        let mut bad = IndexBlockBuilder::new(v3);
        bad.add(
            &keys[0],
            0,
            50,
            Some(RowIndexLocation {
                root_offset: 50,
                rows_offset: 12,
            }),
            1,
        );
        let mut out_bad = Vec::new();
        bad.finish_into(&mut out_bad);
        assert!(decode_index_block(open_block(&out_bad).unwrap(), v3).is_err());
        // Version 4 entries add a partition count: one byte for granules of
        // up to 127 partitions. A count no granule of that length can hold is
        // refused.
        let mut b4 = IndexBlockBuilder::new(v4);
        for (i, k) in keys.iter().enumerate() {
            b4.add(k, 100 + i as u64 * 100, 100, None, 1 + i as u64 % 3);
        }
        let mut out4 = Vec::new();
        b4.finish_into(&mut out4);
        assert_eq!(out4.len(), out.len() + 50 * 2);
        let entries4 = decode_index_block(open_block(&out4).unwrap(), v4).unwrap();
        assert_eq!(entries4[4].partitions, 2);
        assert_eq!(entries4[4].offset, 500);
        for (length, partitions) in [(100, 26), (100, 0)] {
            let mut bad = IndexBlockBuilder::new(v4);
            // The builder asserts what a writer must never do; encode by hand.
            bad.add(&keys[0], 0, length, None, 1);
            let mut out_bad = Vec::new();
            bad.finish_into(&mut out_bad);
            let mut payload = open_block(&out_bad).unwrap().to_vec();
            *payload.last_mut().unwrap() = partitions;
            assert!(decode_index_block(&payload, v4).is_err(), "{partitions}");
        }
        let s = vec![
            SummaryEntry {
                first_key: keys[0].clone(),
                offset: 10,
                length: 20,
            },
            SummaryEntry {
                first_key: keys[1].clone(),
                offset: 40,
                length: 5,
            },
        ];
        let mut out = Vec::new();
        encode_summary(&s, &mut out);
        assert_eq!(decode_summary(&out).unwrap(), s);
        let c = vec![
            ChunkLocation {
                offset: 0,
                length: 10,
            },
            ChunkLocation {
                offset: 30,
                length: 9,
            },
        ];
        let mut out = Vec::new();
        encode_chunk_table(&c, &mut out);
        assert_eq!(decode_chunk_table(&out).unwrap(), c);
    }
}
