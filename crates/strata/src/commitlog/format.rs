//! Commit-log bytes: the segment header, the record frame, the mutation payload,
//! and the scanner that walks a segment and classifies damage. Pure functions over
//! byte slices: no file handles, no locks (the byte layout is drawn in
//! docs/DURABILITY.md, "Segment format").
//!
//! ```text
//! segment  = header record* seal?
//! header   = magic "STRATACL" (8) | format_version u32 LE | segment_id u64 LE
//!            | time_base i64 LE (version 6 on)
//!            | crc32c u32 LE of the bytes before it           = 32 bytes (24 before 6)
//! record   = length u32 LE | crc32c u32 LE | payload (length bytes, length > 0)
//!            crc32c covers the 4 length bytes and the payload; from version 3
//!            bit 31 of the length marks a compressed record, whose payload is
//!            uncompressed length varint | LZ4 block of the payload below
//! seal     = length u32 LE = 0 | crc32c u32 LE of those 4 zero bytes        = 8 bytes
//! payload  = table_id varint | base_timestamp zigzag
//!            | base_ldt_delta zigzag (base.min_local_deletion - base_timestamp / 1e6)
//!            | base_min_ttl varint | partition (sstable::partition::encode_partition)
//! payload, version 6 on
//!          = table_id varint | zigzag(base_timestamp - header.time_base)
//!            | partition, its base EncodingBase::around(base_timestamp)
//! ```
//!
//! Invariants:
//! 1. Every byte of a segment is covered by exactly one checksum: the header's or
//!    one record's. Records tile `[HEADER_BYTES, end)` without gaps or padding.
//! 2. A record with a valid checksum decodes, or it is corruption (never a torn
//!    tail): a crash cannot produce a well-checksummed wrong payload.
//! 3. A bad frame is a *torn tail* only when no valid frame starts anywhere after
//!    it ([`ScanItem::Bad::tail`]); whether a torn tail is tolerated depends on the
//!    segment being the last one, which the caller knows, not this module.
//! 4. Decoding never panics on any input.
//! 5. A seal is the last frame of a segment, written (and fsynced) when the log
//!    moves to a newer segment or reopens: from version 2 on, a segment without
//!    one can only be the newest, so an older segment cut at a record boundary
//!    (which leaves only valid frames) is still detected. Version 1 segments have
//!    no seal and are read as before.
//! 6. A compressed record is the same payload, LZ4-compressed on its own (no
//!    state shared with other records: each record still replays, or is
//!    damaged, alone). The checksum covers the stored (compressed) bytes and
//!    the length with its flag, so a flipped flag is a bad frame. No build
//!    before version 3 sets the flag; a version-3 segment is refused by them
//!    by its header instead of having its compressed records taken for a torn
//!    tail and cut.
//! 7. From version 4 the payload's partition may be in the short form of
//!    sstable format 6 (a one-row partition of empty clustering, a row whose
//!    only simple cell is column 0 without its bitmap). Decoding takes both
//!    forms in every version; the bump makes builds before it refuse a
//!    version-4 segment by its header rather than meet bytes they misread.
//! 8. From version 5 a row whose sole cell is a plain live cell of column 0
//!    leaves that cell's flags byte and value length out (row flag bit6 of
//!    sstable format 8).
//!    Records never use format 8's fixed-width row timestamps: a record's base
//!    is its own, with no width. The bump is invariant 7's, for the same reason.
//! 9. From version 6 the header carries a time base (the wall clock, in
//!    microseconds, when the segment was created) and a record's base
//!    timestamp is stored as its distance from it: 3-5 bytes where the whole
//!    timestamp took 8. The record's local-deletion and TTL bases are no longer
//!    stored: every writer since version 1 derived them from the timestamp
//!    (`EncodingBase::around`), so they were a constant two bytes. The time
//!    base is only an encoding reference: any value decodes the same records
//!    (a record written against a base a roll replaced is encoded again, see
//!    `CommitLog::append`), and a clock that jumps costs bytes, never
//!    correctness. Segments before version 6 have a 24-byte header and are
//!    read with a time base of 0 and their own payload layout.
//! 10. From version 7 a record's cells may be counter cells (cell flag bit5 of
//!     sstable format 11). Nothing else changed: version-6 segments replay
//!     through the same decoder. The bump is invariant 7's, for the same reason.

use crate::data::{DecoratedKey, PartitionUpdate, NO_TIMESTAMP};
use crate::encoding::{put_u32_le, put_u64_le, put_varint, put_zigzag, EncodingBase, Reader};
use crate::sstable::partition::{decode_partition, HeaderOrder};

/// Segment magic: the first 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"STRATACL";
/// Segment format version written by this build, also the `6` in
/// `CommitLog-7-<id>.log`. An incompatible change bumps it (never reinterpret old
/// bytes). Version 2 added the seal (invariant 5), version 3 compressed records
/// (invariant 6), version 4 short one-row partitions (invariant 7), version 5
/// plain sole cells without their flags byte (invariant 8), version 6 the
/// header's time base and record timestamps taken from it (invariant 9),
/// version 7 counter cells (invariant 10).
pub const SEGMENT_FORMAT_VERSION: u32 = 7;
/// The first format whose header carries a time base (invariant 9).
pub const TIME_BASE_SINCE_VERSION: u32 = 6;
/// Oldest segment format this build still replays.
pub const OLDEST_SEGMENT_FORMAT_VERSION: u32 = 1;
/// The first format whose non-newest segments must end with a seal.
pub const SEALED_SINCE_VERSION: u32 = 2;
/// Bytes of a seal frame.
pub const SEAL_BYTES: u64 = FRAME_BYTES;
/// Bytes of this build's segment header; the first record of every segment it
/// creates starts here. Older segments: [`header_bytes`].
pub const HEADER_BYTES: u64 = 32;
/// The largest segment file replay, repair, inspection and `commitlog dump`
/// read (whole, into memory): a segment is at most 1 GiB
/// (`commitlog_segment_size`), and a record larger than a segment, at most
/// 1 GiB (`max_mutation_size`), gets one of its own; 2 GiB covers both with
/// room for framing. A larger file is refused as corrupt before any of it is
/// read.
pub const MAX_SEGMENT_FILE_BYTES: u64 = 2 << 30;
/// Bytes of a header before version 6 (no time base).
const HEADER_BYTES_BEFORE_TIME_BASE: u64 = 24;
/// Bytes of a record frame before its payload (length, crc32c).
pub const FRAME_BYTES: u64 = 8;
/// Bit of a frame's length word marking a compressed record (invariant 6).
/// Record lengths are at most 1 GiB (`max_mutation_size`), so it is free.
const COMPRESSED_FLAG: u32 = 1 << 31;
/// Payloads shorter than this are never compressed: a few bytes of varints
/// and flags do not repay the LZ4 call.
const MIN_COMPRESSED_PAYLOAD_BYTES: usize = 64;
/// Payloads up to this are compressed (with splices absent): a record that
/// carries a large value is written from the caller's buffer instead (issue
/// 13), and large values are usually compressed blocks already.
const MAX_COMPRESSED_PAYLOAD_BYTES: usize = 256 * 1024;
/// Largest uncompressed payload a compressed record may claim: a record is
/// at most 1 GiB, and LZ4 expands at most 255:1, so a claim beyond either is
/// damage, refused before anything is allocated for it.
const MAX_UNCOMPRESSED_PAYLOAD_BYTES: u64 = 1 << 30;

/// How records are written (Cassandra's `commitlog_compression`). Reading
/// needs no setting: every record says whether it is compressed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LogCompression {
    /// Payloads as encoded (the default, as Cassandra's).
    #[default]
    None,
    /// Each record's payload LZ4-compressed on its own, kept only when that
    /// saves at least [`MIN_COMPRESSION_SAVING_BYTES`].
    Lz4,
}

/// A compressed record must be at least this much shorter than the plain one
/// to be written compressed; otherwise the plain one is (smaller replay work
/// for nothing).
pub const MIN_COMPRESSION_SAVING_BYTES: usize = 8;

const MICROS_PER_SECOND: i64 = 1_000_000;

/// Bytes of the header of a segment of `format_version`: where its first
/// record starts.
pub fn header_bytes(format_version: u32) -> u64 {
    if format_version >= TIME_BASE_SINCE_VERSION {
        HEADER_BYTES
    } else {
        HEADER_BYTES_BEFORE_TIME_BASE
    }
}

/// What a segment's header says: everything needed to walk and decode its
/// records.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub format_version: u32,
    pub segment_id: u64,
    /// Microseconds the records' base timestamps are stored against
    /// (invariant 9); 0 for segments before version 6, whose timestamps are
    /// stored whole.
    pub time_base: i64,
}

impl SegmentHeader {
    /// The header this build writes for segment `segment_id`.
    pub fn current(segment_id: u64, time_base: i64) -> SegmentHeader {
        SegmentHeader {
            format_version: SEGMENT_FORMAT_VERSION,
            segment_id,
            time_base,
        }
    }

    /// Offset of the segment's first record: the header's length.
    pub fn first_record_offset(&self) -> u64 {
        header_bytes(self.format_version)
    }
}

/// This build's segment header (32 bytes).
pub fn encode_header(segment_id: u64, time_base: i64) -> Vec<u8> {
    encode_header_of(SEGMENT_FORMAT_VERSION, segment_id, time_base)
}

/// The header of a segment of `format_version`, one with a time base: this
/// build's, or an older one for tests of replay.
pub fn encode_header_of(format_version: u32, segment_id: u64, time_base: i64) -> Vec<u8> {
    assert!(format_version >= TIME_BASE_SINCE_VERSION);
    let mut out = Vec::with_capacity(HEADER_BYTES as usize);
    out.extend_from_slice(&SEGMENT_MAGIC);
    put_u32_le(&mut out, format_version);
    put_u64_le(&mut out, segment_id);
    put_u64_le(&mut out, time_base as u64);
    let crc = crc32c::crc32c(&out);
    put_u32_le(&mut out, crc);
    debug_assert_eq!(out.len() as u64, HEADER_BYTES);
    out
}

/// The seal frame: an empty payload, which no mutation has (invariant 5).
pub fn encode_seal() -> [u8; SEAL_BYTES as usize] {
    let len = 0u32.to_le_bytes();
    let crc = frame_crc(&len, &[]).to_le_bytes();
    [
        len[0], len[1], len[2], len[3], crc[0], crc[1], crc[2], crc[3],
    ]
}

/// Whether segments of `format_version` must end with a seal once a newer
/// segment exists.
pub fn is_sealed_format(format_version: u32) -> bool {
    format_version >= SEALED_SINCE_VERSION
}

/// Checks a segment header; returns what it says or why it is bad. Every
/// version from [`OLDEST_SEGMENT_FORMAT_VERSION`] to [`SEGMENT_FORMAT_VERSION`]
/// is accepted.
pub fn decode_header(bytes: &[u8]) -> std::result::Result<SegmentHeader, String> {
    let truncated =
        |need: u64| format!("segment header truncated: {} of {need} bytes", bytes.len());
    if (bytes.len() as u64) < HEADER_BYTES_BEFORE_TIME_BASE {
        return Err(truncated(HEADER_BYTES_BEFORE_TIME_BASE));
    }
    if bytes[..8] != SEGMENT_MAGIC {
        return Err("bad segment magic".to_string());
    }
    // The version says how long the header is; the checksum over that length
    // then vouches for it (a flipped version bit fails it, or names a version
    // this build does not read).
    let version = u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]);
    if !(OLDEST_SEGMENT_FORMAT_VERSION..=SEGMENT_FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "unsupported commit log format version {version} (this build reads {OLDEST_SEGMENT_FORMAT_VERSION} to {SEGMENT_FORMAT_VERSION})"
        ));
    }
    let len = header_bytes(version);
    if (bytes.len() as u64) < len {
        return Err(truncated(len));
    }
    let body = &bytes[..len as usize - 4];
    let mut r = Reader::new(body);
    r.take(12).map_err(|e| e.0.to_string())?;
    let id = r.u64_le().map_err(|e| e.0.to_string())?;
    let time_base = if len == HEADER_BYTES {
        r.u64_le().map_err(|e| e.0.to_string())? as i64
    } else {
        0
    };
    let stored = Reader::new(&bytes[body.len()..len as usize])
        .u32_le()
        .map_err(|e| e.0.to_string())?;
    let computed = crc32c::crc32c(body);
    if stored != computed {
        return Err(format!(
            "segment header checksum mismatch (stored {stored:08x}, computed {computed:08x})"
        ));
    }
    Ok(SegmentHeader {
        format_version: version,
        segment_id: id,
        time_base,
    })
}

/// The base a record's row deltas are taken against: around the update's newest
/// timestamp, so cell timestamps (usually equal to it) encode in one or two bytes.
fn base_for(update: &PartitionUpdate) -> EncodingBase {
    let max = update.max_timestamp();
    if max == NO_TIMESTAMP {
        EncodingBase::ZERO
    } else {
        EncodingBase::around(max)
    }
}

/// One framed record, with its large values left in the caller's update
/// instead of copied (issue 13: a 64 MiB block is not held twice to log it).
/// The record's bytes are `head` with each splice's value inserted at its
/// position; `len` and `crc` (in the frame, `head[0..8]`) cover those logical
/// bytes, computed incrementally over the pieces.
///
/// `head` is the encoding thread's reused buffer ([`ENCODE_BUFFER`]), handed
/// back when the record is dropped.
#[derive(Debug)]
pub struct RecordPieces<'a> {
    head: Vec<u8>,
    splices: crate::encoding::Splices<'a>,
    len: u64,
    uncompressed_len: u64,
}

impl<'a> RecordPieces<'a> {
    /// Framed bytes of the record, as written.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Framed bytes of the record before compression (what
    /// `max_mutation_size` limits, so that a mutation is accepted or refused
    /// whatever the log's compression).
    pub fn uncompressed_len(&self) -> u64 {
        self.uncompressed_len
    }

    /// Never true: a record has a frame.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// The record's bytes in order, as slices (head runs and spliced values).
    pub fn pieces(&self) -> impl Iterator<Item = &[u8]> + '_ {
        let mut at = 0;
        let mut out = Vec::with_capacity(self.splices.len() * 2 + 1);
        for &(pos, v) in &self.splices {
            out.push(&self.head[at..pos]);
            out.push(v);
            at = pos;
        }
        out.push(&self.head[at..]);
        out.into_iter().filter(|p| !p.is_empty())
    }

    /// Appends the record's bytes to `out` (the group buffer of small records).
    pub fn append_to(&self, out: &mut Vec<u8>) {
        if self.splices.is_empty() {
            // Every small record: one copy, no list of pieces to allocate.
            out.extend_from_slice(&self.head);
            return;
        }
        out.reserve(self.len as usize);
        for p in self.pieces() {
            out.extend_from_slice(p);
        }
    }
}

impl Drop for RecordPieces<'_> {
    fn drop(&mut self) {
        recycle_encode_buffer(std::mem::take(&mut self.head));
    }
}

/// Capacity an encode buffer keeps between records: a record's head holds no
/// value of [`crate::encoding::SPLICE_MIN_BYTES`] or more, so this is ample
/// for ordinary rows, and a thread that once encoded a wide batch does not
/// keep megabytes for the rest of its life.
const ENCODE_BUFFER_KEEP_BYTES: usize = 256 * 1024;

thread_local! {
    /// Each writer thread's record buffer, reused from one mutation to the
    /// next: a fresh `Vec` per mutation, grown by reallocation as the record
    /// outgrew its estimate, was a malloc, one or two reallocs and a free per
    /// write (BENCHMARKS.md, "Write path (issue 15)").
    static ENCODE_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
}

fn take_encode_buffer(capacity: usize) -> Vec<u8> {
    let mut buf = ENCODE_BUFFER.with(|b| b.take());
    buf.clear();
    buf.reserve(capacity);
    buf
}

fn recycle_encode_buffer(buf: Vec<u8>) {
    if buf.capacity() <= ENCODE_BUFFER_KEEP_BYTES {
        // During thread teardown the slot may be gone; the buffer is then freed.
        let _ = ENCODE_BUFFER.try_with(|b| b.set(buf));
    }
}

/// An upper estimate of a record's head: frame, prefix, key, deletions, and
/// per row its clustering, a few varints per cell and every value that is not
/// spliced. Good enough that the head is not regrown for ordinary updates.
fn head_size_hint(update: &PartitionUpdate) -> usize {
    let rows: usize = update
        .rows
        .iter()
        .chain(update.static_row.iter())
        .map(|r| {
            24 + 2 * r.clustering.len()
                + r.cells
                    .iter()
                    .map(|c| {
                        let inline = if c.value.len() >= crate::encoding::SPLICE_MIN_BYTES {
                            0
                        } else {
                            c.value.len()
                        };
                        24 + inline + c.path.as_ref().map_or(0, |p| p.len())
                    })
                    .sum::<usize>()
        })
        .sum();
    let ranges: usize = update
        .deletion
        .ranges
        .iter()
        .map(|r| 32 + r.range.start.prefix.len() + r.range.end.prefix.len())
        .sum();
    64 + update.key.key.len() + rows + ranges
}

/// Serialises and frames one mutation, values of
/// [`crate::encoding::SPLICE_MIN_BYTES`] or more by reference; with
/// `compression`, a small record's payload compressed (invariant 6).
///
/// `header` is the segment's the record is for: its version decides the
/// payload's layout and its time base the stored timestamp (invariant 9).
pub fn encode_record_pieces<'a>(
    header: &SegmentHeader,
    table_id: u64,
    update: &'a PartitionUpdate,
    compression: LogCompression,
) -> RecordPieces<'a> {
    let base = base_for(update);
    let mut head = take_encode_buffer(head_size_hint(update));
    head.extend_from_slice(&[0u8; FRAME_BYTES as usize]);
    encode_payload_prefix(header, table_id, &base, &mut head);
    let mut splices = Vec::new();
    crate::sstable::partition::encode_partition_spliced(update, &base, &mut head, &mut splices);
    let spliced: u64 = splices.iter().map(|(_, v)| v.len() as u64).sum();
    let uncompressed_len = head.len() as u64 + spliced;
    let mut flag = 0;
    if compression == LogCompression::Lz4 && splices.is_empty() && compress_payload(&mut head) {
        flag = COMPRESSED_FLAG;
    }
    let len = head.len() as u64 + spliced;
    // A length past u32 cannot be framed; the caller refuses it by size first
    // (max_mutation_size is at most 1 GiB), so the truncation never happens.
    let payload_len = (len - FRAME_BYTES) as u32 | flag;
    head[0..4].copy_from_slice(&payload_len.to_le_bytes());
    let mut crc = crc32c::crc32c(&head[0..4]);
    let mut at = FRAME_BYTES as usize;
    for &(pos, v) in &splices {
        crc = crc32c::crc32c_append(crc, &head[at..pos]);
        crc = crc32c::crc32c_append(crc, v);
        at = pos;
    }
    crc = crc32c::crc32c_append(crc, &head[at..]);
    head[4..8].copy_from_slice(&crc.to_le_bytes());
    RecordPieces {
        head,
        splices,
        len,
        uncompressed_len,
    }
}

thread_local! {
    /// Each writer thread's compression output, reused (as [`ENCODE_BUFFER`]).
    static COMPRESS_BUFFER: std::cell::Cell<Vec<u8>> = const { std::cell::Cell::new(Vec::new()) };
    /// Each writer thread's backoff after records that did not compress:
    /// (records still to write plain, misses in a row). A thread writing
    /// incompressible values (random bytes, compressed blobs) would otherwise
    /// pay a wasted LZ4 call per record; from the
    /// [`MISSES_BEFORE_BACKOFF`]-th miss in a row it skips 1, then 2, 4 ...
    /// up to [`MAX_COMPRESSION_SKIP`] records before trying again, and one
    /// success resets it. Occasional misses (a mix of compressible and
    /// incompressible writes) never skip anything.
    static COMPRESS_BACKOFF: std::cell::Cell<(u32, u32)> = const { std::cell::Cell::new((0, 0)) };
}

/// Longest run of records written plain, untried, after misses.
const MAX_COMPRESSION_SKIP: u32 = 64;
/// Misses in a row before records are skipped at all.
const MISSES_BEFORE_BACKOFF: u32 = 4;

/// Whether to try compressing this thread's next record (the backoff above).
fn compression_due() -> bool {
    COMPRESS_BACKOFF.with(|b| {
        let (left, misses) = b.get();
        if left > 0 {
            b.set((left - 1, misses));
            return false;
        }
        true
    })
}

/// Records an attempt's outcome in the backoff.
fn compression_outcome(kept: bool) {
    COMPRESS_BACKOFF.with(|b| {
        if kept {
            b.set((0, 0));
        } else {
            let misses = b.get().1.saturating_add(1);
            let skip = match misses.checked_sub(MISSES_BEFORE_BACKOFF) {
                None => 0,
                Some(n) => 1u32
                    .checked_shl(n)
                    .unwrap_or(MAX_COMPRESSION_SKIP)
                    .min(MAX_COMPRESSION_SKIP),
            };
            b.set((skip, misses));
        }
    });
}

/// Replaces the payload of the framed record in `head` (frame not yet
/// filled in) by its compressed form, if that is worth it; whether it did.
fn compress_payload(head: &mut Vec<u8>) -> bool {
    let payload_len = head.len() - FRAME_BYTES as usize;
    if !(MIN_COMPRESSED_PAYLOAD_BYTES..=MAX_COMPRESSED_PAYLOAD_BYTES).contains(&payload_len)
        || !compression_due()
    {
        return false;
    }
    let mut out = COMPRESS_BUFFER.with(|b| b.take());
    out.clear();
    put_varint(&mut out, payload_len as u64);
    let at = out.len();
    out.resize(at + crate::lz4::compress_bound(payload_len), 0);
    let kept = match crate::lz4::compress_into(&head[FRAME_BYTES as usize..], &mut out[at..]) {
        Ok(n) if at + n + MIN_COMPRESSION_SAVING_BYTES <= payload_len => {
            head.truncate(FRAME_BYTES as usize);
            head.extend_from_slice(&out[..at + n]);
            true
        }
        // Incompressible (or, never with a buffer of the maximum output size,
        // too small): the plain record is written.
        _ => false,
    };
    if out.capacity() <= ENCODE_BUFFER_KEEP_BYTES * 2 {
        let _ = COMPRESS_BUFFER.try_with(|b| b.set(out));
    }
    compression_outcome(kept);
    kept
}

/// The payload a record carries, decompressed if it is compressed
/// (invariant 6); damage is an error string, as from [`decode_payload`].
pub fn record_payload(
    payload: &[u8],
    compressed: bool,
) -> std::result::Result<std::borrow::Cow<'_, [u8]>, String> {
    if !compressed {
        return Ok(std::borrow::Cow::Borrowed(payload));
    }
    let mut r = Reader::new(payload);
    let claimed = r
        .varint()
        .map_err(|e| format!("undecodable compressed record: {}", e.0))?;
    let block = r.rest();
    if claimed == 0
        || claimed > MAX_UNCOMPRESSED_PAYLOAD_BYTES
        || claimed > 255 * block.len() as u64 + 16
    {
        return Err(format!(
            "compressed record claims {claimed} bytes from a {}-byte block",
            block.len()
        ));
    }
    let mut out = vec![0u8; claimed as usize];
    match crate::lz4::decompress_into(block, &mut out) {
        Ok(n) if n as u64 == claimed => Ok(std::borrow::Cow::Owned(out)),
        Ok(n) => Err(format!(
            "compressed record decompresses to {n} bytes, claims {claimed}"
        )),
        Err(e) => Err(format!("compressed record does not decompress: {e}")),
    }
}

/// The table a scanned record belongs to (its payload's first field), without
/// decoding the mutation.
pub fn record_table_id(payload: &[u8], compressed: bool) -> std::result::Result<u64, String> {
    let payload = record_payload(payload, compressed)?;
    Reader::new(&payload)
        .varint()
        .map_err(|e| format!("undecodable record: {}", e.0))
}

/// [`record_payload`] then [`decode_payload`]: a scanned record's mutation.
pub fn decode_record(
    header: &SegmentHeader,
    payload: &[u8],
    compressed: bool,
) -> std::result::Result<(u64, PartitionUpdate), String> {
    decode_payload(header, &record_payload(payload, compressed)?)
}

fn encode_payload_prefix(
    header: &SegmentHeader,
    table_id: u64,
    base: &EncodingBase,
    out: &mut Vec<u8>,
) {
    put_varint(out, table_id);
    if header.format_version >= TIME_BASE_SINCE_VERSION {
        // `base_for` gives every record `EncodingBase::around` its timestamp,
        // so the timestamp alone says the whole base (invariant 9).
        debug_assert_eq!(*base, EncodingBase::around(base.min_timestamp));
        put_zigzag(out, base.min_timestamp.wrapping_sub(header.time_base));
        return;
    }
    put_zigzag(out, base.min_timestamp);
    // Stored as a delta from the timestamp's second so the usual case (the base
    // built by `EncodingBase::around`) costs one byte, yet any base round-trips.
    put_zigzag(
        out,
        base.min_local_deletion
            .wrapping_sub(base.min_timestamp.div_euclid(MICROS_PER_SECOND)),
    );
    put_varint(out, u64::from(base.min_ttl));
}

/// Serialises and frames one mutation for a segment of this build's format
/// with time base 0: the returned bytes are exactly what is appended to such
/// a segment (tests and tools; the log writes the pieces).
pub fn encode_record(table_id: u64, update: &PartitionUpdate) -> Vec<u8> {
    encode_record_for(&SegmentHeader::current(0, 0), table_id, update)
}

/// [`encode_record`] for the segment `header` describes (its format's layout,
/// its time base).
pub fn encode_record_for(
    header: &SegmentHeader,
    table_id: u64,
    update: &PartitionUpdate,
) -> Vec<u8> {
    encode_record_with(header, table_id, update, LogCompression::None)
}

/// [`encode_record_for`] with the log's compression.
pub fn encode_record_with(
    header: &SegmentHeader,
    table_id: u64,
    update: &PartitionUpdate,
    compression: LogCompression,
) -> Vec<u8> {
    let pieces = encode_record_pieces(header, table_id, update, compression);
    let mut out = Vec::new();
    pieces.append_to(&mut out);
    out
}

fn frame_crc(len_bytes: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(len_bytes), payload)
}

/// Decodes a checksummed payload of a segment with `header` into
/// `(table_id, update)`.
pub fn decode_payload(
    header: &SegmentHeader,
    payload: &[u8],
) -> std::result::Result<(u64, PartitionUpdate), String> {
    let mut r = Reader::new(payload);
    let err = |e: crate::encoding::DecodeError| format!("undecodable mutation: {}", e.0);
    let table_id = r.varint().map_err(err)?;
    // Records carry varint row timestamps only (their base is per record, of
    // no width), in every version.
    let base = if header.format_version >= TIME_BASE_SINCE_VERSION {
        EncodingBase::around(r.zigzag().map_err(err)?.wrapping_add(header.time_base))
    } else {
        let min_timestamp = r.zigzag().map_err(err)?;
        let ldt_delta = r.zigzag().map_err(err)?;
        let min_ttl = u32::try_from(r.varint().map_err(err)?)
            .map_err(|_| "undecodable mutation: base ttl exceeds u32".to_string())?;
        EncodingBase {
            min_timestamp,
            min_local_deletion: ldt_delta.wrapping_add(min_timestamp.div_euclid(MICROS_PER_SECOND)),
            min_ttl,
            row_ts_bytes: 0,
        }
    };
    let partition = r.rest();
    // The partition starts with its key (varint length + bytes); decode_partition
    // wants the DecoratedKey up front to check it against.
    let key_bytes = Reader::new(partition).bytes().map_err(err)?;
    let key = DecoratedKey::new(key_bytes);
    let update = decode_partition(partition, &key, &base, HeaderOrder::KeyFirst).map_err(err)?;
    Ok((table_id, update))
}

/// One step of a segment scan.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ScanItem<'a> {
    /// A frame whose checksum is valid. `start` is the frame's offset, `end` the
    /// offset after it (the record's replay position).
    Record {
        start: u64,
        end: u64,
        payload: &'a [u8],
        /// Bit 31 of the length: `payload` is compressed ([`decode_record`]).
        compressed: bool,
    },
    /// The seal frame at `[start, end)` (invariant 5).
    Seal { start: u64, end: u64 },
    /// Bytes `[start, end)` are not a valid frame. `tail` = no valid frame starts
    /// after `start`, so `end` is the end of the file (invariant 3).
    Bad {
        start: u64,
        end: u64,
        reason: String,
        tail: bool,
    },
}

/// Checks the frame at `pos` of `bytes`; `Ok((end, compressed))` if valid.
fn check_frame(bytes: &[u8], pos: usize) -> std::result::Result<(usize, bool), String> {
    let remaining = bytes.len() - pos;
    if remaining < FRAME_BYTES as usize {
        return Err(format!(
            "partial frame header ({remaining} of {FRAME_BYTES} bytes)"
        ));
    }
    let len_bytes = &bytes[pos..pos + 4];
    let word = u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]);
    let compressed = word & COMPRESSED_FLAG != 0;
    let len = (word & !COMPRESSED_FLAG) as usize;
    if word == COMPRESSED_FLAG {
        return Err("zero record length (compressed)".to_string());
    }
    if len == 0 {
        // The seal, or zeros never written (a preallocated or zero-filled tail):
        // the seal's checksum tells them apart (crc32c of zeros is not zero).
        let stored = &bytes[pos + 4..pos + FRAME_BYTES as usize];
        if stored == &encode_seal()[4..] {
            return Ok((pos + FRAME_BYTES as usize, false));
        }
        return Err("zero record length".to_string());
    }
    if len > remaining - FRAME_BYTES as usize {
        return Err(format!(
            "record length {len} runs past the end of the segment ({} bytes left)",
            remaining - FRAME_BYTES as usize
        ));
    }
    let stored = u32::from_le_bytes([
        bytes[pos + 4],
        bytes[pos + 5],
        bytes[pos + 6],
        bytes[pos + 7],
    ]);
    let payload = &bytes[pos + FRAME_BYTES as usize..pos + FRAME_BYTES as usize + len];
    let computed = frame_crc(len_bytes, payload);
    if stored != computed {
        return Err(format!(
            "record checksum mismatch (stored {stored:08x}, computed {computed:08x})"
        ));
    }
    Ok((pos + FRAME_BYTES as usize + len, compressed))
}

/// Walks the records of a whole segment file (`bytes` includes the header, which
/// the caller has checked and decoded). Yields every valid frame and every bad region; after a
/// bad frame it resynchronises at the next offset where a valid frame starts, so
/// a damaged record in the middle is reported as such and the records after it
/// are still seen.
pub struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    /// Walks the records after `header` (the segment's, decoded from `bytes`).
    pub fn new(bytes: &'a [u8], header: &SegmentHeader) -> Scanner<'a> {
        Scanner {
            bytes,
            pos: (header.first_record_offset() as usize).min(bytes.len()),
        }
    }

    /// The first offset after `from` where a valid frame starts.
    ///
    /// Why a byte-by-byte search is affordable: a random length field is almost
    /// always larger than what is left (rejected without a checksum), zeros are
    /// rejected at once, and in real damage the next intact record is at most one
    /// record away.
    fn resync(&self, from: usize) -> Option<usize> {
        (from + 1..self.bytes.len()).find(|&q| check_frame(self.bytes, q).is_ok())
    }
}

impl<'a> Iterator for Scanner<'a> {
    type Item = ScanItem<'a>;

    fn next(&mut self) -> Option<ScanItem<'a>> {
        if self.pos >= self.bytes.len() {
            return None;
        }
        let start = self.pos;
        match check_frame(self.bytes, start) {
            Ok((end, _)) if end - start == FRAME_BYTES as usize => {
                self.pos = end;
                Some(ScanItem::Seal {
                    start: start as u64,
                    end: end as u64,
                })
            }
            Ok((end, compressed)) => {
                self.pos = end;
                Some(ScanItem::Record {
                    start: start as u64,
                    end: end as u64,
                    payload: &self.bytes[start + FRAME_BYTES as usize..end],
                    compressed,
                })
            }
            Err(reason) => {
                let next = self.resync(start);
                let end = next.unwrap_or(self.bytes.len());
                self.pos = end;
                Some(ScanItem::Bad {
                    start: start as u64,
                    end: end as u64,
                    reason,
                    tail: next.is_none(),
                })
            }
        }
    }
}

/// A header as builds before version 6 wrote it (24 bytes, no time base), for
/// tests that make older segments.
#[cfg(test)]
pub fn encode_header_before_time_base(format_version: u32, segment_id: u64) -> Vec<u8> {
    assert!(format_version < TIME_BASE_SINCE_VERSION);
    let mut out = Vec::with_capacity(HEADER_BYTES_BEFORE_TIME_BASE as usize);
    out.extend_from_slice(&SEGMENT_MAGIC);
    put_u32_le(&mut out, format_version);
    put_u64_le(&mut out, segment_id);
    let crc = crc32c::crc32c(&out);
    put_u32_le(&mut out, crc);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, DeletionTime, LivenessInfo, Row};

    /// 2026-01-01 in microseconds: the time base of the tests' segments.
    const T0: i64 = 1_767_225_600_000_000;

    /// The current format's header of a segment created at [`T0`].
    fn hdr() -> SegmentHeader {
        SegmentHeader::current(1, T0)
    }

    fn update(key: &[u8], ts: i64) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(DecoratedKey::new(key));
        let mut r = Row::new(b"ck".to_vec());
        r.liveness = LivenessInfo::new(ts);
        r.add_cell(Cell::live(0, ts, b"value".to_vec()));
        r.add_cell(Cell::tombstone(1, ts - 5, ts / 1_000_000));
        p.rows.push(r);
        p
    }

    #[test]
    fn record_round_trips_and_is_compact() {
        let p = update(b"key", 1_767_225_600_000_000);
        let rec = encode_record_for(&hdr(), 7, &p);
        let (end, compressed) = check_frame(&rec, 0).unwrap();
        assert_eq!((end, compressed), (rec.len(), false));
        let (t, q) = decode_payload(&hdr(), &rec[FRAME_BYTES as usize..]).unwrap();
        assert_eq!((t, &q), (7, &p));
        // 8 frame + ~12 base/table + key + one row with two cells.
        assert!(rec.len() < 60, "record is {} bytes", rec.len());
    }

    /// A value with a repeated half, as the harness's (db_bench's
    /// `compression_ratio` 0.5).
    fn compressible_update(key: &[u8], ts: i64) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(DecoratedKey::new(key));
        let mut r = Row::new(Vec::new());
        r.liveness = LivenessInfo::new(ts);
        let half: Vec<u8> = (0..50u32).map(|i| (i * 37 + 11) as u8).collect();
        r.add_cell(Cell::live(0, ts, [half.clone(), half].concat()));
        p.rows.push(r);
        p
    }

    #[test]
    fn compressed_records_round_trip_and_are_smaller() {
        let p = compressible_update(b"0123456789abcdef", 1_767_225_600_000_000);
        let plain = encode_record_for(&hdr(), 7, &p);
        let packed = encode_record_with(&hdr(), 7, &p, LogCompression::Lz4);
        assert!(
            packed.len() + 30 < plain.len(),
            "{} against {}",
            packed.len(),
            plain.len()
        );
        let (end, compressed) = check_frame(&packed, 0).unwrap();
        assert_eq!((end, compressed), (packed.len(), true));
        assert_eq!(
            decode_record(&hdr(), &packed[8..], true).unwrap(),
            (7, p.clone())
        );
        // Read as plain, the compressed payload is damage, not a mutation.
        assert!(decode_record(&hdr(), &packed[8..], false).is_err());
        // The flag is covered by the checksum: cleared, the frame is bad.
        let mut flipped = packed.clone();
        flipped[3] &= 0x7f;
        assert!(check_frame(&flipped, 0).is_err());
        // A record that does not shrink by the margin is written plain.
        let tiny = update(b"key", 5);
        assert_eq!(
            encode_record_with(&hdr(), 1, &tiny, LogCompression::Lz4),
            encode_record_for(&hdr(), 1, &tiny)
        );
    }

    #[test]
    fn incompressible_records_back_off_and_one_success_resets() {
        // A thread of its own: the backoff is per thread.
        std::thread::spawn(|| {
            // Four misses in a row, then skips of 1, 2, 4, 8, 16.
            let tried: Vec<u32> = (0..40)
                .filter(|_| {
                    let due = compression_due();
                    if due {
                        compression_outcome(false);
                    }
                    due
                })
                .collect();
            assert_eq!(tried, vec![0, 1, 2, 3, 5, 8, 13, 22, 39]);
            // The skip is capped: a compressible record is tried again within
            // MAX_COMPRESSION_SKIP records, compressed, and that resets it.
            for _ in 0..20 {
                while !compression_due() {}
                compression_outcome(false);
            }
            let packed = (0..=MAX_COMPRESSION_SKIP).find(|_| {
                let rec = encode_record_with(
                    &hdr(),
                    1,
                    &compressible_update(b"k", 5),
                    LogCompression::Lz4,
                );
                check_frame(&rec, 0).unwrap().1
            });
            assert!(packed.is_some());
            assert_eq!(COMPRESS_BACKOFF.with(|b| b.get()), (0, 0));
            // Random values never compress: written plain, decoded as written.
            use rand::{Rng, SeedableRng};
            let mut noise = vec![0u8; 200];
            rand_chacha::ChaCha8Rng::seed_from_u64(7).fill(&mut noise[..]);
            let mut u = PartitionUpdate::new(DecoratedKey::new(b"k"));
            let mut r = Row::new(Vec::new());
            r.add_cell(Cell::live(0, 5, noise));
            u.rows.push(r);
            let rec = encode_record_with(&hdr(), 1, &u, LogCompression::Lz4);
            assert!(!check_frame(&rec, 0).unwrap().1);
            assert_eq!(decode_record(&hdr(), &rec[8..], false).unwrap(), (1, u));
            assert_ne!(COMPRESS_BACKOFF.with(|b| b.get()), (0, 0));
        })
        .join()
        .unwrap();
    }

    #[test]
    fn damaged_compressed_payloads_are_errors_not_panics() {
        let p = compressible_update(b"k", 1_000_000);
        let packed = encode_record_with(&hdr(), 1, &p, LogCompression::Lz4);
        let payload = &packed[8..];
        // Claims beyond what the block can expand to, or absurd ones, are
        // refused before allocating.
        let mut claim = Vec::new();
        put_varint(&mut claim, 1 << 40);
        claim.extend_from_slice(&payload[1..]);
        assert!(record_payload(&claim, true).unwrap_err().contains("claims"));
        assert!(record_payload(&[0], true).is_err());
        assert!(record_payload(&[], true).is_err());
        // Every truncation and every single-byte change decodes or errs.
        for cut in 0..payload.len() {
            let _ = decode_record(&hdr(), &payload[..cut], true);
        }
        for i in 0..payload.len() {
            let mut b = payload.to_vec();
            b[i] ^= 0x5a;
            let _ = decode_record(&hdr(), &b, true);
        }
    }

    #[test]
    fn spliced_record_is_byte_for_byte_the_whole_record() {
        let mut p = update(b"key", 1_767_225_600_000_000);
        let big: Vec<u8> = (0..200_000u32).map(|i| (i * 7) as u8).collect();
        let mut r = Row::new(b"ck2".to_vec());
        r.add_cell(Cell::live(0, 5, big.clone()));
        r.add_cell(Cell::live(2, 6, vec![9; 10]));
        r.add_cell(Cell::live(3, 7, big[..70_000].to_vec()));
        p.rows.push(r);
        // The reference: the whole payload encoded by the sstable codec, framed.
        let base = base_for(&p);
        let mut payload = Vec::new();
        encode_payload_prefix(&hdr(), 3, &base, &mut payload);
        crate::sstable::partition::encode_partition(&p, &base, &mut payload);
        let len = (payload.len() as u32).to_le_bytes();
        let mut whole = len.to_vec();
        whole.extend_from_slice(&frame_crc(&len, &payload).to_le_bytes());
        whole.extend_from_slice(&payload);
        // Compression leaves a record with splices whole.
        let pieces = encode_record_pieces(&hdr(), 3, &p, LogCompression::Lz4);
        assert_eq!(pieces.splices.len(), 2);
        assert_eq!(pieces.uncompressed_len(), pieces.len());
        let mut joined = Vec::new();
        pieces.append_to(&mut joined);
        assert_eq!(pieces.len(), whole.len() as u64);
        assert_eq!(joined, whole);
        assert_eq!(check_frame(&joined, 0), Ok((joined.len(), false)));
        drop(pieces);
        assert_eq!(decode_payload(&hdr(), &joined[8..]).unwrap(), (3, p));
    }

    /// The reference framing: the payload encoded whole by the sstable codec.
    fn reference_record(table_id: u64, p: &PartitionUpdate) -> Vec<u8> {
        let base = base_for(p);
        let mut payload = Vec::new();
        encode_payload_prefix(&hdr(), table_id, &base, &mut payload);
        crate::sstable::partition::encode_partition(p, &base, &mut payload);
        let len = (payload.len() as u32).to_le_bytes();
        let mut whole = len.to_vec();
        whole.extend_from_slice(&frame_crc(&len, &payload).to_le_bytes());
        whole.extend_from_slice(&payload);
        whole
    }

    #[test]
    fn reused_encode_buffer_never_leaks_bytes_between_records() {
        // Alternate a wide record (rows with 300-byte values, a row body
        // whose length needs a two-byte varint) with small ones on one thread:
        // each must be exactly its reference encoding, whatever the buffer
        // held before.
        let mut wide = update(b"wide", 1_767_225_600_000_000);
        for i in 0..40u8 {
            let mut r = Row::new(vec![b'r', i]);
            r.add_cell(Cell::live(
                0,
                1_767_225_600_000_000 + i64::from(i),
                vec![i; 300],
            ));
            wide.rows.push(r);
        }
        let small = update(b"s", 9);
        for round in 0..3 {
            for (t, p) in [(1, &wide), (2, &small), (3, &wide), (4, &small)] {
                let rec = encode_record_for(&hdr(), t, p);
                assert_eq!(rec, reference_record(t, p), "round {round}, table {t}");
                assert_eq!(decode_payload(&hdr(), &rec[8..]).unwrap(), (t, p.clone()));
            }
        }
    }

    #[test]
    fn empty_update_and_extreme_timestamps_round_trip() {
        let p = PartitionUpdate::new(DecoratedKey::new(b""));
        let rec = encode_record_for(&hdr(), u64::MAX, &p);
        assert_eq!(
            decode_payload(&hdr(), &rec[8..]).unwrap(),
            (u64::MAX, p.clone())
        );
        let mut d = PartitionUpdate::new(DecoratedKey::new(b"k"));
        d.deletion.partition = Some(DeletionTime::new(i64::MAX, i64::MIN));
        let rec = encode_record_for(&hdr(), 0, &d);
        assert_eq!(decode_payload(&hdr(), &rec[8..]).unwrap(), (0, d));
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = encode_header(42, T0);
        assert_eq!(h.len() as u64, HEADER_BYTES);
        assert_eq!(decode_header(&h), Ok(SegmentHeader::current(42, T0)));
        for bit in 0..h.len() * 8 {
            let mut bad = h.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_header(&bad).is_err(), "bit {bit}");
        }
        assert!(decode_header(&h[..10]).is_err());
    }

    #[test]
    fn scanner_classifies_tail_and_middle_damage() {
        let mut seg = encode_header(1, T0);
        let recs: Vec<Vec<u8>> = (0..3)
            .map(|i| {
                encode_record_for(
                    &hdr(),
                    1,
                    &update(format!("k{i}").as_bytes(), 1_000_000 + i),
                )
            })
            .collect();
        for r in &recs {
            seg.extend_from_slice(r);
        }
        let clean: Vec<_> = Scanner::new(&seg, &hdr()).collect();
        assert_eq!(clean.len(), 3);
        assert!(clean.iter().all(|i| matches!(i, ScanItem::Record { .. })));

        // Torn tail: half of a fourth record, then zeros.
        let mut torn = seg.clone();
        let extra = encode_record_for(&hdr(), 1, &update(b"k3", 5));
        torn.extend_from_slice(&extra[..extra.len() / 2]);
        torn.extend_from_slice(&[0u8; 100]);
        let items: Vec<_> = Scanner::new(&torn, &hdr()).collect();
        assert_eq!(items.len(), 4);
        assert!(matches!(items[3], ScanItem::Bad { tail: true, .. }));

        // A flipped bit in the middle record: the scan resyncs on the third.
        let mut mid = seg.clone();
        let second = HEADER_BYTES as usize + recs[0].len();
        mid[second + 12] ^= 0x10;
        let items: Vec<_> = Scanner::new(&mid, &hdr()).collect();
        assert_eq!(items.len(), 3, "{items:?}");
        match &items[1] {
            ScanItem::Bad {
                start, end, tail, ..
            } => {
                assert_eq!(*start as usize, second);
                assert_eq!(*end as usize, second + recs[1].len());
                assert!(!tail);
            }
            other => panic!("expected bad frame, got {other:?}"),
        }
        assert!(matches!(items[2], ScanItem::Record { .. }));
    }

    #[test]
    fn seal_is_told_apart_from_zeros_and_records() {
        let mut seg = encode_header(1, T0);
        let rec = encode_record_for(&hdr(), 1, &update(b"k", 7));
        seg.extend_from_slice(&rec);
        seg.extend_from_slice(&encode_seal());
        let items: Vec<_> = Scanner::new(&seg, &hdr()).collect();
        assert_eq!(items.len(), 2, "{items:?}");
        let end = HEADER_BYTES + rec.len() as u64;
        assert_eq!(
            items[1],
            ScanItem::Seal {
                start: end,
                end: end + SEAL_BYTES
            }
        );
        // Zeros are not a seal; neither is a seal with a flipped bit.
        let mut zeros = seg[..end as usize].to_vec();
        zeros.extend_from_slice(&[0u8; 8]);
        let items: Vec<_> = Scanner::new(&zeros, &hdr()).collect();
        assert!(matches!(items[1], ScanItem::Bad { tail: true, .. }));
        for bit in 0..64 {
            let mut bad = seg.clone();
            bad[end as usize + bit / 8] ^= 1 << (bit % 8);
            let items: Vec<_> = Scanner::new(&bad, &hdr()).collect();
            assert!(
                !items.iter().any(|i| matches!(i, ScanItem::Seal { .. })),
                "bit {bit}: {items:?}"
            );
        }
        // Version 1 headers are still read; unknown versions are not.
        let v1 = encode_header_before_time_base(1, 3);
        let h1 = decode_header(&v1).unwrap();
        assert_eq!((h1.format_version, h1.segment_id, h1.time_base), (1, 3, 0));
        assert_eq!(h1.first_record_offset(), 24);
        assert!(is_sealed_format(SEGMENT_FORMAT_VERSION) && !is_sealed_format(1));
        let mut v9 = v1.clone();
        v9[8..12].copy_from_slice(&9u32.to_le_bytes());
        let crc = crc32c::crc32c(&v9[..20]);
        v9[20..24].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_header(&v9).unwrap_err().contains("version 9"));
        // A version-5 header claiming version 6 is too short for it, or fails
        // the checksum over the longer header.
        let mut v6 = encode_header_before_time_base(5, 3);
        v6[8..12].copy_from_slice(&6u32.to_le_bytes());
        assert!(decode_header(&v6).unwrap_err().contains("truncated"));
        v6.extend_from_slice(&[0u8; 8]);
        assert!(decode_header(&v6).unwrap_err().contains("checksum"));
    }

    #[test]
    fn record_timestamps_are_stored_from_the_time_base() {
        // A key-value write (16-byte key, 100-byte value) a second after the
        // segment was created: its base timestamp takes 3 bytes instead of
        // 8, and the version-5 local-deletion and TTL bases (2 bytes) are
        // gone: 140 bytes -> 133.
        let p = compressible_update(&[7u8; 16], T0 + 1_000_000);
        let v5 = SegmentHeader {
            format_version: 5,
            segment_id: 1,
            time_base: 0,
        };
        let old = encode_record_for(&v5, 1, &p);
        let new = encode_record_for(&hdr(), 1, &p);
        assert_eq!((old.len(), new.len()), (140, 133));
        assert_eq!(decode_payload(&v5, &old[8..]).unwrap(), (1, p.clone()));
        assert_eq!(decode_payload(&hdr(), &new[8..]).unwrap(), (1, p.clone()));
        // The time base is part of the record's meaning: read against another
        // base, the same bytes say other timestamps (so a record must go to a
        // segment of the base it was encoded for).
        let elsewhere = SegmentHeader::current(1, T0 + 5);
        let (_, moved) = decode_payload(&elsewhere, &new[8..]).unwrap();
        assert_eq!(moved.max_timestamp(), p.max_timestamp() + 5);
        // Any base and any timestamp round-trip, however far apart.
        for base in [i64::MIN, -1, 0, T0, i64::MAX] {
            for ts in [i64::MIN + 10, -7, 0, T0, i64::MAX] {
                let h = SegmentHeader::current(9, base);
                let p = update(b"k", ts);
                let rec = encode_record_for(&h, 3, &p);
                assert_eq!(
                    decode_payload(&h, &rec[8..]).unwrap(),
                    (3, p),
                    "{base} {ts}"
                );
            }
        }
    }
}
