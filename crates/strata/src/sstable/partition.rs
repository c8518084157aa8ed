//! The serialized form of one partition in the data stream.
//!
//! ```text
//! key            varint len + bytes   (the token is in the index, not here)
//! flags          u8   bit0 partition deletion, bit1 range tombstones, bit2 static row,
//!                     bit3 (format 6) single row, the short form below
//! [deletion]     zigzag(ts - base.min_timestamp), zigzag(ldt - base.min_local_deletion)
//! [tombstones]   count varint, then each:
//!                  bounds u8 (bit0 start inclusive, bit1 end inclusive),
//!                  start prefix (varint len + bytes), end prefix (varint len + bytes),
//!                  zigzag ts delta, zigzag ldt delta (as the partition deletion)
//! [static row]   body len varint, body (encoding::encode_row)
//! rows           each: 0x01, shared prefix len varint, suffix len varint, suffix,
//!                      body len varint, body (encoding::encode_row)
//! [row index]    version 3, partitions of two row blocks or more: 0x02, payload
//!                len u32 LE, payload (the nodes of [`super::row_index`])
//! end            0x00
//! ```
//!
//! **The short form** (sstable format 6, commit log format 4): a partition
//! whose only row has an empty clustering (a key-value table's partition) is
//! its header with bit3 set, then `body len varint, body`, and nothing else:
//! no row marker, shared prefix, suffix or end marker, four bytes of the 16
//! that framed a 116-byte pair (issue 15). Such a partition never has a row
//! index (one row is one row block). Every decoder reads both forms in every
//! version: older writers never set bit3.
//!
//! **Flags first** (sstable format 8, [`HeaderOrder::FlagsFirst`]): the flags
//! byte, and in the short form the body length, come before the key instead
//! of after it: `flags, [body len varint], key, [deletion], [tombstones],
//! [static row], ...`. The bytes are the same; their order puts the
//! partition's constant framing beside each other and beside the key's
//! leading bytes, where LZ4 matches them as one run (BENCHMARKS.md, "Row
//! timestamps of a fixed width"). Commit-log records keep the key first.
//!
//! The row index is found through the partition's index entry, not by parsing
//! the rows; a full decode skips it. Its length is a fixed-width u32 so that its
//! start, and hence the partition offsets inside it, are known before it is
//! built. In version 3 the first row of each row block has a shared prefix of 0.
//!
//! Invariants:
//! 1. `decode(encode(p)) == p` for every partition whose rows are sorted and unique
//!    and whose static row has an empty clustering (the writer checks both).
//! 2. The body length lets a reader skip a row without decoding it.
//! 3. Decoding checks that clusterings strictly increase and that nothing follows
//!    the end marker; malformed input is a `DecodeError`, never a panic.

use crate::data::{
    ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, PartitionDeletion,
    PartitionUpdate, RangeTombstone, Row,
};
use crate::encoding::{
    decode_row, encode_row, put_bytes, put_varint, put_zigzag, DecodeError, DecodeResult,
    EncodingBase, Reader,
};

/// Row markers: never renumbered.
pub const MARKER_END: u8 = 0;
pub const MARKER_ROW: u8 = 1;
/// Version 3: the row index, after the last row and before the end marker.
pub const MARKER_ROW_INDEX: u8 = 2;
/// Bytes of the row index framing before its payload: marker and u32 length.
pub const ROW_INDEX_FRAMING_BYTES: u64 = 5;

pub const FLAG_PARTITION_DELETION: u8 = 1;
pub const FLAG_RANGE_TOMBSTONES: u8 = 2;
pub const FLAG_STATIC_ROW: u8 = 4;
/// The short form: the partition's one row, of empty clustering, follows the
/// header as its body alone (module docs).
pub const FLAG_SINGLE_ROW: u8 = 8;
const KNOWN_FLAGS: u8 =
    FLAG_PARTITION_DELETION | FLAG_RANGE_TOMBSTONES | FLAG_STATIC_ROW | FLAG_SINGLE_ROW;

/// Where a partition's flags byte (and the short form's body length) sit:
/// after the key (sstable formats 1-7, every commit-log record) or before it
/// (sstable format 8 on). Module docs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HeaderOrder {
    KeyFirst,
    FlagsFirst,
}

impl HeaderOrder {
    /// The order of an sstable of format `version`.
    pub fn for_version(version: u32) -> HeaderOrder {
        if version >= super::format::FIRST_VERSION_WITH_FLAGS_FIRST {
            HeaderOrder::FlagsFirst
        } else {
            HeaderOrder::KeyFirst
        }
    }
}

/// Whether a partition of `rows` rows, the first of clustering `first`, is
/// written in the short form.
pub fn is_single_row(rows: usize, first: impl FnOnce() -> bool) -> bool {
    rows == 1 && first()
}

/// What [`decode_header`] reads.
#[derive(Debug)]
pub struct PartitionHeader {
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
    /// The partition is in the short form: its one row's body follows.
    pub single_row: bool,
    /// The short form's body length when the header held it
    /// ([`HeaderOrder::FlagsFirst`]); `None` when it precedes the body.
    pub body_len: Option<usize>,
}

impl PartitionHeader {
    /// The short form's one body, from `r` just past this header.
    pub fn short_body<'a>(&self, r: &mut Reader<'a>) -> DecodeResult<&'a [u8]> {
        match self.body_len {
            Some(n) => r.take(n),
            None => r.bytes(),
        }
    }
}

fn put_deletion(out: &mut Vec<u8>, d: &DeletionTime, base: &EncodingBase) {
    put_zigzag(
        out,
        d.marked_for_delete_at_micros
            .wrapping_sub(base.min_timestamp),
    );
    put_zigzag(
        out,
        d.local_deletion_seconds
            .wrapping_sub(base.min_local_deletion),
    );
}

fn read_deletion(r: &mut Reader<'_>, base: &EncodingBase) -> DecodeResult<DeletionTime> {
    Ok(DeletionTime {
        marked_for_delete_at_micros: r.zigzag()?.wrapping_add(base.min_timestamp),
        local_deletion_seconds: r.zigzag()?.wrapping_add(base.min_local_deletion),
    })
}

/// One clustering row already in the row codec: its clustering and its body
/// (`encoding::encode_row` against the [`EncodedPartition`]'s base).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodedRow<'a> {
    pub clustering: &'a [u8],
    pub body: &'a [u8],
}

/// A partition whose rows are already encoded, as a memtable holds them: a
/// flush hands it to the sstable writer, which copies each body as it is
/// when `base` is the sstable's own (issue 15: no decode and re-encode per
/// row). Rows must strictly increase by clustering, as in a
/// [`PartitionUpdate`].
#[derive(Clone, Copy, Debug)]
pub struct EncodedPartition<'a> {
    pub key: &'a DecoratedKey,
    pub deletion: &'a PartitionDeletion,
    pub static_row: Option<&'a Row>,
    pub rows: &'a [EncodedRow<'a>],
    /// The base the bodies are encoded against.
    pub base: EncodingBase,
}

impl EncodedPartition<'_> {
    /// The same partition decoded (tests, and writers whose base differs).
    pub fn decode(&self) -> DecodeResult<PartitionUpdate> {
        let mut p = PartitionUpdate::new(self.key.clone());
        p.deletion = self.deletion.clone();
        p.static_row = self.static_row.cloned();
        p.rows.reserve_exact(self.rows.len());
        for r in self.rows {
            p.rows.push(decode_row(
                &mut Reader::new(r.body),
                r.clustering.to_vec(),
                &self.base,
            )?);
        }
        Ok(p)
    }
}

/// Writes the key, flags, deletions and static row; returns whether the
/// partition takes the short form (then its one row's body follows alone).
pub fn encode_header(
    p: &PartitionUpdate,
    base: &EncodingBase,
    order: HeaderOrder,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) -> bool {
    let single_row = is_single_row(p.rows.len(), || p.rows[0].clustering.is_empty());
    encode_header_parts(
        &p.key.key,
        &p.deletion,
        p.static_row.as_ref(),
        single_row,
        base,
        order,
        scratch,
        out,
    );
    single_row
}

/// [`encode_header`] from a partition's parts (the key bytes, its deletions
/// and static row, and whether it takes the short form: [`is_single_row`]),
/// for callers that hold no [`PartitionUpdate`]. In [`HeaderOrder::FlagsFirst`]
/// a short-form partition's body length belongs right after the flags byte,
/// the header's first: the caller inserts it there (its body may not be
/// encoded yet).
#[allow(clippy::too_many_arguments)]
pub fn encode_header_parts(
    key: &[u8],
    deletion: &PartitionDeletion,
    static_row: Option<&Row>,
    single_row: bool,
    base: &EncodingBase,
    order: HeaderOrder,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    if order == HeaderOrder::KeyFirst {
        put_bytes(out, key);
    }
    let mut flags = 0;
    if single_row {
        flags |= FLAG_SINGLE_ROW;
    }
    if deletion.partition.is_some() {
        flags |= FLAG_PARTITION_DELETION;
    }
    if !deletion.ranges.is_empty() {
        flags |= FLAG_RANGE_TOMBSTONES;
    }
    if static_row.is_some() {
        flags |= FLAG_STATIC_ROW;
    }
    out.push(flags);
    if order == HeaderOrder::FlagsFirst {
        put_bytes(out, key);
    }
    if let Some(d) = &deletion.partition {
        put_deletion(out, d, base);
    }
    if !deletion.ranges.is_empty() {
        put_varint(out, deletion.ranges.len() as u64);
        for rt in &deletion.ranges {
            out.push(rt.range.start.inclusive as u8 | (rt.range.end.inclusive as u8) << 1);
            put_bytes(out, &rt.range.start.prefix);
            put_bytes(out, &rt.range.end.prefix);
            put_deletion(out, &rt.deletion, base);
        }
    }
    if let Some(s) = static_row {
        scratch.clear();
        encode_row(s, base, scratch);
        put_bytes(out, scratch);
    }
}

/// Writes one clustering row, prefix-compressed against `prev` (the previous
/// row's clustering, empty for the first).
pub fn encode_row_entry(
    prev: &[u8],
    row: &Row,
    base: &EncodingBase,
    scratch: &mut Vec<u8>,
    out: &mut Vec<u8>,
) {
    encode_row_key(prev, &row.clustering, out);
    scratch.clear();
    encode_row(row, base, scratch);
    put_bytes(out, scratch);
}

/// The part of a row entry before its body: the marker and the clustering,
/// prefix-compressed against `prev`.
pub(super) fn encode_row_key(prev: &[u8], clustering: &[u8], out: &mut Vec<u8>) {
    let shared = prev
        .iter()
        .zip(clustering)
        .take_while(|(a, b)| a == b)
        .count();
    out.push(MARKER_ROW);
    put_varint(out, shared as u64);
    put_bytes(out, &clustering[shared..]);
}

pub fn encode_end(out: &mut Vec<u8>) {
    out.push(MARKER_END);
}

/// Encodes a whole partition with its key first (commit-log records, tests
/// and tools; the sstable writer interleaves chunk cuts).
pub fn encode_partition(p: &PartitionUpdate, base: &EncodingBase, out: &mut Vec<u8>) {
    encode_partition_in_order(p, base, HeaderOrder::KeyFirst, out)
}

/// [`encode_partition`] in either header order.
pub fn encode_partition_in_order(
    p: &PartitionUpdate,
    base: &EncodingBase,
    order: HeaderOrder,
    out: &mut Vec<u8>,
) {
    let mut scratch = Vec::new();
    let start = out.len();
    if encode_header(p, base, order, &mut scratch, out) {
        scratch.clear();
        encode_row(&p.rows[0], base, &mut scratch);
        match order {
            HeaderOrder::KeyFirst => put_bytes(out, &scratch),
            HeaderOrder::FlagsFirst => {
                let mut len = Vec::new();
                put_varint(&mut len, scratch.len() as u64);
                out.splice(start + 1..start + 1, len);
                out.extend_from_slice(&scratch);
            }
        }
        return;
    }
    let mut prev: &[u8] = &[];
    for row in &p.rows {
        encode_row_entry(prev, row, base, &mut scratch, out);
        prev = &row.clustering;
    }
    encode_end(out);
}

/// As [`encode_partition`] (key first: the commit log's), leaving the large values of clustering rows out of
/// `out` and listing them in `splices` (see [`crate::encoding::encode_row_spliced`]):
/// the logical bytes are those of [`encode_partition`]. The static row is
/// encoded whole (a static column is not where large blocks live).
pub fn encode_partition_spliced<'a>(
    p: &'a PartitionUpdate,
    base: &EncodingBase,
    out: &mut Vec<u8>,
    splices: &mut crate::encoding::Splices<'a>,
) {
    // Only a static row goes through `scratch` (an empty Vec allocates nothing).
    let mut scratch = Vec::new();
    let single_row = encode_header(p, base, HeaderOrder::KeyFirst, &mut scratch, out);
    let mut prev: &[u8] = &[];
    for row in &p.rows {
        if !single_row {
            encode_row_key(prev, &row.clustering, out);
        }
        // The body is encoded straight into `out` and its length prefix slid in
        // before it afterwards (a memmove of the small head, large values being
        // spliced) instead of going through a scratch buffer, grown by
        // reallocation for every mutation, and copied out of it
        // (BENCHMARKS.md, "Write path (issue 15)").
        let at = out.len();
        let first_splice = splices.len();
        crate::encoding::encode_row_spliced(row, base, out, splices);
        let body = out.len() - at;
        let spliced: usize = splices[first_splice..].iter().map(|(_, v)| v.len()).sum();
        let (len, n) = varint_bytes((body + spliced) as u64);
        out.resize(out.len() + n, 0);
        out.copy_within(at..at + body, at + n);
        out[at..at + n].copy_from_slice(&len[..n]);
        for s in &mut splices[first_splice..] {
            s.0 += n;
        }
        prev = &row.clustering;
    }
    if !single_row {
        encode_end(out);
    }
}

/// `v` as the varint [`put_varint`] writes, in a stack array: `(bytes, length)`.
fn varint_bytes(mut v: u64) -> ([u8; 10], usize) {
    let mut out = [0u8; 10];
    let mut n = 0;
    while v >= 0x80 {
        out[n] = (v as u8) | 0x80;
        v >>= 7;
        n += 1;
    }
    out[n] = v as u8;
    (out, n + 1)
}

/// Decodes the partition header (key, flags, deletions, static row) from the
/// start of `r`, leaving `r` at the first row marker, or at the one row's
/// body length in the short form. `key` is the index's key for it, and the
/// key stored in the data must be the same bytes.
pub fn decode_header(
    r: &mut Reader<'_>,
    key: &DecoratedKey,
    base: &EncodingBase,
    order: HeaderOrder,
) -> DecodeResult<PartitionHeader> {
    let (stored_key, flags, body_len) = read_key_and_flags(r, order)?;
    if stored_key != &key.key[..] {
        return Err(DecodeError("partition key differs from the index entry"));
    }
    let mut deletion = PartitionDeletion::default();
    if flags & FLAG_PARTITION_DELETION != 0 {
        deletion.partition = Some(read_deletion(r, base)?);
    }
    if flags & FLAG_RANGE_TOMBSTONES != 0 {
        let n = r.varint_usize()?;
        if n == 0 {
            return Err(DecodeError("empty range tombstone list"));
        }
        let mut ranges = Vec::with_capacity(n.min(r.remaining()));
        for _ in 0..n {
            let bounds = r.u8()?;
            if bounds > 3 {
                return Err(DecodeError("bad range tombstone bounds"));
            }
            let start = ClusteringBound {
                prefix: r.bytes()?.to_vec(),
                inclusive: bounds & 1 != 0,
            };
            let end = ClusteringBound {
                prefix: r.bytes()?.to_vec(),
                inclusive: bounds & 2 != 0,
            };
            let deletion = read_deletion(r, base)?;
            ranges.push(RangeTombstone {
                range: ClusteringRange { start, end },
                deletion,
            });
        }
        deletion.ranges = ranges;
    }
    let mut static_row = None;
    if flags & FLAG_STATIC_ROW != 0 {
        let body = r.bytes()?;
        let mut br = Reader::new(body);
        let row = decode_row(&mut br, Vec::new(), base)?;
        if !br.is_empty() {
            return Err(DecodeError("static row body longer than its row"));
        }
        static_row = Some(row);
    }
    Ok(PartitionHeader {
        deletion,
        static_row,
        single_row: flags & FLAG_SINGLE_ROW != 0,
        body_len,
    })
}

/// The start of a partition in either order: its key, its flags (checked
/// for unknown bits) and, flags first, the short form's body length. Leaves
/// `r` at the deletions.
fn read_key_and_flags<'a>(
    r: &mut Reader<'a>,
    order: HeaderOrder,
) -> DecodeResult<(&'a [u8], u8, Option<usize>)> {
    let (key, flags, body_len) = match order {
        HeaderOrder::KeyFirst => {
            let key = r.bytes()?;
            (key, r.u8()?, None)
        }
        HeaderOrder::FlagsFirst => {
            let flags = r.u8()?;
            let body_len = if flags & FLAG_SINGLE_ROW != 0 {
                Some(r.varint_usize()?)
            } else {
                None
            };
            (r.bytes()?, flags, body_len)
        }
    };
    if flags & !KNOWN_FLAGS != 0 {
        return Err(DecodeError("unknown partition flags"));
    }
    Ok((key, flags, body_len))
}

/// One row entry, framing only: its clustering rebuilt from `prev` into
/// `clustering` and its body, still encoded, returned. `r` is just past the
/// row marker. A caller walking rows keeps two buffers (this row's and the
/// previous one's, swapped after each row) and allocates a clustering only for
/// the rows it keeps, not one per row it passes.
pub fn read_row_entry<'a>(
    r: &mut Reader<'a>,
    prev: &[u8],
    clustering: &mut Vec<u8>,
) -> DecodeResult<&'a [u8]> {
    let shared = r.varint_usize()?;
    if shared > prev.len() {
        return Err(DecodeError(
            "shared clustering prefix longer than the previous clustering",
        ));
    }
    let suffix = r.bytes()?;
    clustering.clear();
    clustering.extend_from_slice(&prev[..shared]);
    clustering.extend_from_slice(suffix);
    r.bytes()
}

/// Decodes a row body read by [`read_row_entry`].
pub fn decode_row_body(body: &[u8], clustering: Vec<u8>, base: &EncodingBase) -> DecodeResult<Row> {
    let mut br = Reader::new(body);
    let row = decode_row(&mut br, clustering, base)?;
    if !br.is_empty() {
        return Err(DecodeError("row body longer than its row"));
    }
    Ok(row)
}

/// Reads the row index framing after its marker and skips the payload; the
/// end marker must follow.
fn skip_row_index(r: &mut Reader<'_>) -> DecodeResult<()> {
    let len = r.u32_le()? as usize;
    r.take(len)?;
    if r.u8()? != MARKER_END {
        return Err(DecodeError(
            "row index not followed by the end of its partition",
        ));
    }
    Ok(())
}

/// Decodes one serialized partition; `key` is the index's key for it, and the
/// key stored in the data must be the same bytes. A row index (version 3) is
/// skipped: it is derived from the rows.
pub fn decode_partition(
    bytes: &[u8],
    key: &DecoratedKey,
    base: &EncodingBase,
    order: HeaderOrder,
) -> DecodeResult<PartitionUpdate> {
    decode_partition_in(bytes, key, base, order, None)
}

/// [`decode_partition`] keeping only the rows in `range` (all if `None`):
/// the rows outside it are framed and order-checked but their bodies not
/// decoded. A point read of one row of a partition without a row index (a
/// time series' series in a flush of a few seconds) decoded every row of it
/// to return one.
pub fn decode_partition_in(
    bytes: &[u8],
    key: &DecoratedKey,
    base: &EncodingBase,
    order: HeaderOrder,
    range: Option<&ClusteringRange>,
) -> DecodeResult<PartitionUpdate> {
    let mut r = Reader::new(bytes);
    let header = decode_header(&mut r, key, base, order)?;
    let mut p = PartitionUpdate::new(key.clone());
    p.deletion = header.deletion;
    p.static_row = header.static_row;
    let short = header.single_row.then_some(header.body_len);
    walk_rows(&mut r, short, |clustering, body| {
        if range.is_none_or(|range| range.contains(clustering)) {
            p.rows
                .push(decode_row_body(body, clustering.to_vec(), base)?);
        }
        Ok(true)
    })?;
    Ok(p)
}

/// The rows of a serialized partition whose header holds nothing but its key
/// (no partition deletion, range tombstone or static row: nearly every
/// partition of a key-value table), walked without building them: `f` gets
/// each row's clustering and still-encoded body, in clustering order, and
/// returns whether to go on. `Ok(false)`, having visited nothing, when the
/// header holds more; then the caller decodes the partition instead. The
/// framing is checked as [`decode_partition`] checks it.
pub fn visit_plain_rows<'a>(
    bytes: &'a [u8],
    order: HeaderOrder,
    f: impl FnMut(&[u8], &'a [u8]) -> DecodeResult<bool>,
) -> DecodeResult<bool> {
    let mut r = Reader::new(bytes);
    let (_, flags, body_len) = read_key_and_flags(&mut r, order)?;
    if flags & !FLAG_SINGLE_ROW != 0 {
        return Ok(false);
    }
    walk_rows(&mut r, (flags == FLAG_SINGLE_ROW).then_some(body_len), f)?;
    Ok(true)
}

/// The row entries from `r` (just past a partition's header) to its end
/// marker: each row's clustering (rebuilt from the shared prefix) and body go
/// to `f` until it returns `false`. Checks that clusterings strictly
/// increase, that a row index is followed by the end, and, when walked to the
/// end, that nothing follows it. `short`: the header said the short form,
/// so one body of empty clustering is all there is (`Some(Some(n))`: of the
/// length `n` the header held, `Some(None)`: its length precedes it).
fn walk_rows<'a>(
    r: &mut Reader<'a>,
    short: Option<Option<usize>>,
    mut f: impl FnMut(&[u8], &'a [u8]) -> DecodeResult<bool>,
) -> DecodeResult<()> {
    if let Some(body_len) = short {
        let body = match body_len {
            Some(n) => r.take(n)?,
            None => r.bytes()?,
        };
        if f(&[], body)? && !r.is_empty() {
            return Err(DecodeError("bytes after the partition's only row"));
        }
        return Ok(());
    }
    // Two buffers swapped after each row: an empty clustering (a table
    // without clustering columns) allocates nothing.
    let (mut prev, mut clustering) = (Vec::new(), Vec::new());
    let mut rows_seen = false;
    loop {
        match r.u8()? {
            MARKER_END => break,
            MARKER_ROW => {
                let body = read_row_entry(r, &prev, &mut clustering)?;
                if rows_seen && clustering <= prev {
                    return Err(DecodeError("rows out of clustering order"));
                }
                rows_seen = true;
                if !f(&clustering, body)? {
                    return Ok(());
                }
                std::mem::swap(&mut prev, &mut clustering);
            }
            MARKER_ROW_INDEX => {
                skip_row_index(r)?;
                break;
            }
            _ => return Err(DecodeError("unknown row marker")),
        }
    }
    if !r.is_empty() {
        return Err(DecodeError("bytes after the end-of-partition marker"));
    }
    Ok(())
}

/// What [`frame_partition`] found at the start of some bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Frame {
    /// A well-framed partition of this many bytes (its content not yet decoded).
    Complete(usize),
    /// Well-framed so far, but the bytes end first.
    Incomplete,
    /// Not the start of a partition.
    Malformed,
}

/// Lengths claimed inside a partition above this are taken as garbage, so a
/// salvage scan never waits for gigabytes that a random byte claims.
pub(super) const MAX_FRAMED_LENGTH: u64 = 256 << 20;

/// Walks the framing of the partition at the start of `bytes` (key, flags,
/// deletions, static row, row markers and lengths: invariant 2) without decoding
/// rows. This is what makes the data stream self-delimiting: a salvage finds
/// where each partition ends without the index.
pub fn frame_partition(bytes: &[u8], order: HeaderOrder) -> Frame {
    #[derive(Debug)]
    enum Stop {
        Incomplete,
        Malformed,
    }
    struct Cur<'a> {
        b: &'a [u8],
        pos: usize,
    }
    impl Cur<'_> {
        fn u8(&mut self) -> Result<u8, Stop> {
            let v = *self.b.get(self.pos).ok_or(Stop::Incomplete)?;
            self.pos += 1;
            Ok(v)
        }
        fn varint(&mut self) -> Result<u64, Stop> {
            let mut v = 0u64;
            for i in 0..10 {
                let byte = self.u8()?;
                v |= u64::from(byte & 0x7f) << (7 * i);
                if byte & 0x80 == 0 {
                    return Ok(v);
                }
            }
            Err(Stop::Malformed)
        }
        fn skip_bytes(&mut self, max: u64) -> Result<u64, Stop> {
            let n = self.varint()?;
            if n > max {
                return Err(Stop::Malformed);
            }
            let end = self.pos.checked_add(n as usize).ok_or(Stop::Malformed)?;
            if end > self.b.len() {
                return Err(Stop::Incomplete);
            }
            self.pos = end;
            Ok(n)
        }
    }
    let walk = |c: &mut Cur<'_>| -> Result<(), Stop> {
        let key = |c: &mut Cur<'_>| -> Result<(), Stop> {
            if c.skip_bytes(crate::schema::MAX_KEY_COMPONENT_BYTES as u64)? == 0 {
                return Err(Stop::Malformed);
            }
            Ok(())
        };
        let mut body_len = None;
        let flags = match order {
            HeaderOrder::KeyFirst => {
                key(c)?;
                c.u8()?
            }
            HeaderOrder::FlagsFirst => {
                let flags = c.u8()?;
                if flags & FLAG_SINGLE_ROW != 0 {
                    let n = c.varint()?;
                    if n > MAX_FRAMED_LENGTH {
                        return Err(Stop::Malformed);
                    }
                    body_len = Some(n as usize);
                }
                key(c)?;
                flags
            }
        };
        if flags & !KNOWN_FLAGS != 0 {
            return Err(Stop::Malformed);
        }
        if flags & FLAG_PARTITION_DELETION != 0 {
            c.varint()?;
            c.varint()?;
        }
        if flags & FLAG_RANGE_TOMBSTONES != 0 {
            let n = c.varint()?;
            if n == 0 || n > MAX_FRAMED_LENGTH {
                return Err(Stop::Malformed);
            }
            for _ in 0..n {
                if c.u8()? > 3 {
                    return Err(Stop::Malformed);
                }
                c.skip_bytes(MAX_FRAMED_LENGTH)?;
                c.skip_bytes(MAX_FRAMED_LENGTH)?;
                c.varint()?;
                c.varint()?;
            }
        }
        if flags & FLAG_STATIC_ROW != 0 {
            c.skip_bytes(MAX_FRAMED_LENGTH)?;
        }
        if flags & FLAG_SINGLE_ROW != 0 {
            match body_len {
                None => {
                    c.skip_bytes(MAX_FRAMED_LENGTH)?;
                }
                Some(n) => {
                    let end = c.pos.checked_add(n).ok_or(Stop::Malformed)?;
                    if end > c.b.len() {
                        return Err(Stop::Incomplete);
                    }
                    c.pos = end;
                }
            }
            return Ok(());
        }
        loop {
            match c.u8()? {
                MARKER_END => return Ok(()),
                MARKER_ROW => {
                    c.varint()?;
                    c.skip_bytes(MAX_FRAMED_LENGTH)?;
                    c.skip_bytes(MAX_FRAMED_LENGTH)?;
                }
                MARKER_ROW_INDEX => {
                    let mut len = [0u8; 4];
                    for b in &mut len {
                        *b = c.u8()?;
                    }
                    let len = u32::from_le_bytes(len) as u64;
                    if len > MAX_FRAMED_LENGTH {
                        return Err(Stop::Malformed);
                    }
                    let end = c.pos.checked_add(len as usize).ok_or(Stop::Malformed)?;
                    if end > c.b.len() {
                        return Err(Stop::Incomplete);
                    }
                    c.pos = end;
                    return match c.u8()? {
                        MARKER_END => Ok(()),
                        _ => Err(Stop::Malformed),
                    };
                }
                _ => return Err(Stop::Malformed),
            }
        }
    };
    let mut c = Cur { b: bytes, pos: 0 };
    match walk(&mut c) {
        Ok(()) => Frame::Complete(c.pos),
        Err(Stop::Incomplete) => Frame::Incomplete,
        Err(Stop::Malformed) => Frame::Malformed,
    }
}

/// The key bytes of a framed partition (at its start, or after its flags and
/// short-form body length).
pub fn partition_key_bytes(bytes: &[u8], order: HeaderOrder) -> DecodeResult<&[u8]> {
    Ok(read_key_and_flags(&mut Reader::new(bytes), order)?.0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, LivenessInfo};
    use crate::encoding::varint_len;

    /// Partition `pk` with four rows whose clusterings share prefixes.
    fn four_rows() -> PartitionUpdate {
        let mut p = PartitionUpdate::new(DecoratedKey::new(b"pk"));
        for ck in [&b"aaa1"[..], b"aaa2", b"ab", b"b"] {
            let mut r = Row::new(ck.to_vec());
            r.liveness = LivenessInfo::new(1_000_000_000);
            r.add_cell(Cell::live(0, 1_000_000_000, ck.to_vec()));
            p.rows.push(r);
        }
        p
    }

    /// The rows a scan hands on without building them are the rows a
    /// decode builds; a partition with anything in its header is left to
    /// the decode, and broken bytes are errors, never panics.
    #[test]
    fn plain_rows_are_visited_as_decoded() {
        for order in [HeaderOrder::KeyFirst, HeaderOrder::FlagsFirst] {
            plain_rows_are_visited_as_decoded_in(order);
        }
    }

    fn plain_rows_are_visited_as_decoded_in(order: HeaderOrder) {
        let base = EncodingBase::around(1_000_000_000);
        let p = four_rows();
        let mut out = Vec::new();
        encode_partition_in_order(&p, &base, order, &mut out);
        let mut seen = Vec::new();
        let plain = visit_plain_rows(&out, order, |ck, body| {
            seen.push(decode_row_body(body, ck.to_vec(), &base)?);
            Ok(true)
        });
        assert_eq!(plain, Ok(true));
        assert_eq!(seen, p.rows);
        // `f` ends the walk when it says so.
        let mut n = 0;
        let stopped = visit_plain_rows(&out, order, |_, _| {
            n += 1;
            Ok(n < 2)
        });
        assert_eq!((stopped, n), (Ok(true), 2));
        // Trailing bytes, and every truncation, are errors.
        let mut longer = out.clone();
        longer.push(0);
        assert!(visit_plain_rows(&longer, order, |_, _| Ok(true)).is_err());
        for cut in 0..out.len() {
            assert!(
                visit_plain_rows(&out[..cut], order, |_, _| Ok(true)).is_err(),
                "{cut}"
            );
        }
        // A static row or a deletion in the header: nothing visited.
        for with in 0..3 {
            let mut q = p.clone();
            match with {
                0 => q.deletion.partition = Some(DeletionTime::new(5, 100)),
                1 => q.deletion.ranges.push(RangeTombstone {
                    range: ClusteringRange::ALL,
                    deletion: DeletionTime::new(7, 101),
                }),
                _ => q.static_row = Some(Row::new(Vec::new())),
            }
            let mut out = Vec::new();
            encode_partition_in_order(&q, &base, order, &mut out);
            let mut visited = false;
            let plain = visit_plain_rows(&out, order, |_, _| {
                visited = true;
                Ok(true)
            });
            assert_eq!((plain, visited), (Ok(false), false), "header {with}");
        }
    }

    /// A key-value partition: one row, empty clustering, one cell.
    fn key_value() -> PartitionUpdate {
        let mut p = PartitionUpdate::new(DecoratedKey::new(b"key-0000000001"));
        let mut r = Row::new(Vec::new());
        r.liveness = LivenessInfo::new(1_000_000_000);
        r.add_cell(Cell::live(0, 1_000_000_000, vec![9; 100]));
        p.rows.push(r);
        p
    }

    /// [`key_value`] with nothing else in its header (0), a partition
    /// deletion (1) or a static row (2).
    fn key_value_with(header: u8) -> PartitionUpdate {
        let mut p = key_value();
        match header {
            0 => {}
            1 => p.deletion.partition = Some(DeletionTime::new(5, 100)),
            _ => {
                let mut s = Row::new(Vec::new());
                s.add_cell(Cell::live(1, 9, b"static".to_vec()));
                p.static_row = Some(s);
            }
        }
        p
    }

    /// Where the short form's one row body starts (after its length).
    fn short_body_at(short: &[u8]) -> usize {
        let mut r = Reader::new(short);
        let h = decode_header(
            &mut r,
            &key_value().key,
            &EncodingBase::around(1_000_000_000),
            HeaderOrder::KeyFirst,
        );
        assert!(h.unwrap().single_row);
        r.varint().unwrap();
        r.position()
    }

    /// `p` in the long form, as formats 5 and older wrote every partition.
    fn long_form(p: &PartitionUpdate, base: &EncodingBase) -> Vec<u8> {
        let mut out = Vec::new();
        let mut scratch = Vec::new();
        encode_header_parts(
            &p.key.key,
            &p.deletion,
            p.static_row.as_ref(),
            false,
            base,
            HeaderOrder::KeyFirst,
            &mut scratch,
            &mut out,
        );
        let mut prev: &[u8] = &[];
        for row in &p.rows {
            encode_row_entry(prev, row, base, &mut scratch, &mut out);
            prev = &row.clustering;
        }
        encode_end(&mut out);
        out
    }

    /// `body` (a row of one simple cell of column 0, as this build encodes
    /// it) with its column bitmap written out, as formats 5 and older did.
    fn with_bitmap(body: &[u8]) -> Vec<u8> {
        let ts_end = 1 + body[1..].iter().position(|b| b & 0x80 == 0).unwrap() + 1;
        // Format 5 wrote the bitmap (`01 01`) and, before format 8, every
        // cell's flags byte and value length (for the plain cell row flag
        // bit6 stands for: 0, and the rest of the body's length).
        let mut old = vec![body[0] & !(32 | 64)];
        old.extend_from_slice(&body[1..ts_end]);
        old.extend_from_slice(&[1, 1]);
        if body[0] & 64 != 0 {
            old.push(0);
            old.push(u8::try_from(body.len() - ts_end).unwrap());
        }
        old.extend_from_slice(&body[ts_end..]);
        old
    }

    /// A one-row partition of empty clustering is written in the short form,
    /// four bytes shorter, with or without a header; both forms decode, frame
    /// and walk to the same partition, and the short one's truncations and
    /// trailing bytes are errors.
    #[test]
    fn one_row_partitions_take_the_short_form() {
        let base = EncodingBase::around(1_000_000_000);
        for with in 0..3 {
            let p = key_value_with(with);
            let mut short = Vec::new();
            encode_partition(&p, &base, &mut short);
            let long = long_form(&p, &base);
            assert_eq!(short.len() + 4, long.len(), "header {with}");
            // As format 5 wrote it: the long form, the row's bitmap written.
            let body_at = long.len() - 1 - (short.len() - short_body_at(&short));
            let mut format5 = long[..body_at - 1].to_vec();
            let old_body = with_bitmap(&long[body_at..long.len() - 1]);
            format5.push(old_body.len() as u8);
            format5.extend_from_slice(&old_body);
            format5.push(MARKER_END);
            assert_eq!(
                format5.len(),
                long.len() + 4,
                "bitmap, cell flags, value length"
            );
            let mut spliced = Vec::new();
            let mut splices = Vec::new();
            encode_partition_spliced(&p, &base, &mut spliced, &mut splices);
            assert_eq!((spliced.as_slice(), splices.len()), (short.as_slice(), 0));
            for bytes in [&short, &long, &format5] {
                assert_eq!(
                    decode_partition(bytes, &p.key, &base, HeaderOrder::KeyFirst).unwrap(),
                    p
                );
                assert_eq!(
                    frame_partition(bytes, HeaderOrder::KeyFirst),
                    Frame::Complete(bytes.len())
                );
                let mut seen = Vec::new();
                let plain = visit_plain_rows(bytes, HeaderOrder::KeyFirst, |ck, body| {
                    seen.push(decode_row_body(body, ck.to_vec(), &base)?);
                    Ok(true)
                });
                if with == 0 {
                    assert_eq!((plain, &seen), (Ok(true), &p.rows));
                } else {
                    assert_eq!(plain, Ok(false));
                }
            }
            for cut in 0..short.len() {
                assert_eq!(
                    frame_partition(&short[..cut], HeaderOrder::KeyFirst),
                    Frame::Incomplete,
                    "{cut}"
                );
                assert!(
                    decode_partition(&short[..cut], &p.key, &base, HeaderOrder::KeyFirst).is_err()
                );
            }
            let mut longer = short.clone();
            longer.push(0);
            assert!(decode_partition(&longer, &p.key, &base, HeaderOrder::KeyFirst).is_err());
            assert_eq!(
                frame_partition(&longer, HeaderOrder::KeyFirst),
                Frame::Complete(short.len())
            );
        }
        // Two rows, or one row with a clustering, keep the long form.
        let mut two = key_value();
        two.rows[0].clustering = b"a".to_vec();
        let mut out = Vec::new();
        encode_partition(&two, &base, &mut out);
        assert_eq!(out, long_form(&two, &base));
        let mut second = two.rows[0].clone();
        second.clustering = b"b".to_vec();
        two.rows.push(second);
        out.clear();
        encode_partition(&two, &base, &mut out);
        assert_eq!(out, long_form(&two, &base));
    }

    /// Flags first (format 8): the same bytes as the key-first short form,
    /// the flags byte and body length moved before the key; they decode,
    /// frame and walk to the same partition, and every truncation and a
    /// trailing byte are errors.
    #[test]
    fn flags_first_short_partitions_hold_the_same_bytes_reordered() {
        let base = EncodingBase::around(1_000_000_000);
        for with in 0..3 {
            let p = key_value_with(with);
            let order = HeaderOrder::FlagsFirst;
            let (mut key_first, mut flags_first) = (Vec::new(), Vec::new());
            encode_partition(&p, &base, &mut key_first);
            encode_partition_in_order(&p, &base, order, &mut flags_first);
            let key_len = 1 + p.key.key.len();
            // key_first: key, flags, header rest, body length, body.
            let body_at = short_body_at(&key_first);
            let body = &key_first[body_at..];
            let mut want = vec![key_first[key_len]];
            put_varint(&mut want, body.len() as u64);
            want.extend_from_slice(&key_first[..key_len]);
            let len_bytes = varint_len(body.len() as u64);
            want.extend_from_slice(&key_first[key_len + 1..body_at - len_bytes]);
            want.extend_from_slice(body);
            assert_eq!(flags_first, want, "header {with}");
            assert_eq!(
                decode_partition(&flags_first, &p.key, &base, order).unwrap(),
                p
            );
            assert_eq!(
                frame_partition(&flags_first, order),
                Frame::Complete(flags_first.len())
            );
            assert_eq!(
                partition_key_bytes(&flags_first, order).unwrap(),
                &p.key.key[..]
            );
            let mut seen = Vec::new();
            let plain = visit_plain_rows(&flags_first, order, |ck, body| {
                seen.push(decode_row_body(body, ck.to_vec(), &base)?);
                Ok(true)
            });
            assert_eq!(plain, Ok(with == 0));
            if with == 0 {
                assert_eq!(seen, p.rows);
            }
            for cut in 0..flags_first.len() {
                let short = &flags_first[..cut];
                assert_eq!(frame_partition(short, order), Frame::Incomplete, "{cut}");
                assert!(decode_partition(short, &p.key, &base, order).is_err());
            }
            let mut longer = flags_first.clone();
            longer.push(0);
            assert!(decode_partition(&longer, &p.key, &base, order).is_err());
            assert_eq!(
                frame_partition(&longer, order),
                Frame::Complete(flags_first.len())
            );
            // Read in the other order, neither form passes for the other.
            assert!(decode_partition(&flags_first, &p.key, &base, HeaderOrder::KeyFirst).is_err());
            assert!(decode_partition(&key_first, &p.key, &base, order).is_err());
        }
    }

    #[test]
    fn round_trip_with_everything() {
        for order in [HeaderOrder::KeyFirst, HeaderOrder::FlagsFirst] {
            round_trip_with_everything_in(order);
        }
    }

    fn round_trip_with_everything_in(order: HeaderOrder) {
        let base = EncodingBase::around(1_000_000_000);
        let mut p = four_rows();
        p.deletion.partition = Some(DeletionTime::new(5, 100));
        p.deletion.ranges.push(RangeTombstone {
            range: ClusteringRange {
                start: ClusteringBound::exclusive(b"a".to_vec()),
                end: ClusteringBound::UNBOUNDED,
            },
            deletion: DeletionTime::new(7, 101),
        });
        let mut s = Row::new(Vec::new());
        s.add_cell(Cell::live(3, 9, b"static".to_vec()));
        p.static_row = Some(s);
        let mut out = Vec::new();
        encode_partition_in_order(&p, &base, order, &mut out);
        assert_eq!(decode_partition(&out, &p.key, &base, order).unwrap(), p);
        // The wrong key, a truncation and trailing bytes are all rejected.
        assert!(decode_partition(&out, &DecoratedKey::new(b"other"), &base, order).is_err());
        assert!(decode_partition(&out[..out.len() - 1], &p.key, &base, order).is_err());
        let mut longer = out.clone();
        longer.push(0);
        assert!(decode_partition(&longer, &p.key, &base, order).is_err());
        // Framing finds the same end without decoding, and asks for more bytes
        // for every strict prefix.
        assert_eq!(frame_partition(&longer, order), Frame::Complete(out.len()));
        for cut in 0..out.len() {
            assert_eq!(
                frame_partition(&out[..cut], order),
                Frame::Incomplete,
                "{cut}"
            );
        }
        assert_eq!(partition_key_bytes(&out, order).unwrap(), b"pk");
        // Restricted to a range, the same partition with only its rows, for
        // a point, a slice, and a range that holds none of them.
        let ranges = [
            ClusteringRange {
                start: ClusteringBound::inclusive(b"aaa2".to_vec()),
                end: ClusteringBound::inclusive(b"aaa2".to_vec()),
            },
            ClusteringRange {
                start: ClusteringBound::inclusive(b"aaa".to_vec()),
                end: ClusteringBound::exclusive(b"b".to_vec()),
            },
            ClusteringRange {
                start: ClusteringBound::exclusive(b"b".to_vec()),
                end: ClusteringBound::UNBOUNDED,
            },
        ];
        for range in &ranges {
            let mut want = p.clone();
            want.rows.retain(|r| range.contains(&r.clustering));
            assert_eq!(
                decode_partition_in(&out, &p.key, &base, order, Some(range)).unwrap(),
                want,
                "{range:?}"
            );
        }
        assert_eq!(
            decode_partition_in(&out, &p.key, &base, order, Some(&ranges[0]))
                .unwrap()
                .rows
                .len(),
            1
        );
        // Rows outside the range are still checked for order.
        let mut swapped = p.clone();
        swapped.rows.swap(2, 3);
        let mut bad = Vec::new();
        encode_partition_in_order(&swapped, &base, order, &mut bad);
        assert!(decode_partition_in(&bad, &p.key, &base, order, Some(&ranges[0])).is_err());
    }
}
