//! Commit-log bytes: the segment header, the record frame, the mutation payload,
//! and the scanner that walks a segment and classifies damage. Pure functions over
//! byte slices: no file handles, no locks (the byte layout is drawn in
//! docs/DURABILITY.md, "Segment format").
//!
//! ```text
//! segment  = header record* seal?
//! header   = magic "STRATACL" (8) | format_version u32 LE = 2 | segment_id u64 LE
//!            | crc32c u32 LE of the 20 bytes before it                     = 24 bytes
//! record   = length u32 LE | crc32c u32 LE | payload (length bytes, length > 0)
//!            crc32c covers the 4 length bytes and the payload
//! seal     = length u32 LE = 0 | crc32c u32 LE of those 4 zero bytes        = 8 bytes
//! payload  = table_id varint | base_timestamp zigzag
//!            | base_ldt_delta zigzag (base.min_local_deletion - base_timestamp / 1e6)
//!            | base_min_ttl varint | partition (sstable::partition::encode_partition)
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

use crate::data::{DecoratedKey, PartitionUpdate, NO_TIMESTAMP};
use crate::encoding::{put_u32_le, put_u64_le, put_varint, put_zigzag, EncodingBase, Reader};
use crate::sstable::partition::decode_partition;

/// Segment magic: the first 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"STRATACL";
/// Segment format version written by this build, also the `2` in
/// `CommitLog-2-<id>.log`. An incompatible change bumps it (never reinterpret old
/// bytes). Version 2 added the seal (invariant 5).
pub const SEGMENT_FORMAT_VERSION: u32 = 2;
/// Oldest segment format this build still replays.
pub const OLDEST_SEGMENT_FORMAT_VERSION: u32 = 1;
/// The first format whose non-newest segments must end with a seal.
pub const SEALED_SINCE_VERSION: u32 = 2;
/// Bytes of a seal frame.
pub const SEAL_BYTES: u64 = FRAME_BYTES;
/// Bytes of the segment header; the first record starts here.
pub const HEADER_BYTES: u64 = 24;
/// Bytes of a record frame before its payload (length, crc32c).
pub const FRAME_BYTES: u64 = 8;

const MICROS_PER_SECOND: i64 = 1_000_000;

/// The 24-byte segment header.
pub fn encode_header(segment_id: u64) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_BYTES as usize);
    out.extend_from_slice(&SEGMENT_MAGIC);
    put_u32_le(&mut out, SEGMENT_FORMAT_VERSION);
    put_u64_le(&mut out, segment_id);
    let crc = crc32c::crc32c(&out);
    put_u32_le(&mut out, crc);
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

/// Checks a segment header; returns `(format_version, segment_id)` or why it is bad.
/// Every version from [`OLDEST_SEGMENT_FORMAT_VERSION`] to
/// [`SEGMENT_FORMAT_VERSION`] is accepted.
pub fn decode_header(bytes: &[u8]) -> std::result::Result<(u32, u64), String> {
    if (bytes.len() as u64) < HEADER_BYTES {
        return Err(format!(
            "segment header truncated: {} of {HEADER_BYTES} bytes",
            bytes.len()
        ));
    }
    let mut r = Reader::new(&bytes[..HEADER_BYTES as usize]);
    let magic = r.take(8).map_err(|e| e.0.to_string())?;
    let version = r.u32_le().map_err(|e| e.0.to_string())?;
    let id = r.u64_le().map_err(|e| e.0.to_string())?;
    let stored = r.u32_le().map_err(|e| e.0.to_string())?;
    let computed = crc32c::crc32c(&bytes[..20]);
    if stored != computed {
        return Err(format!(
            "segment header checksum mismatch (stored {stored:08x}, computed {computed:08x})"
        ));
    }
    if magic != SEGMENT_MAGIC {
        return Err("bad segment magic".to_string());
    }
    if !(OLDEST_SEGMENT_FORMAT_VERSION..=SEGMENT_FORMAT_VERSION).contains(&version) {
        return Err(format!(
            "unsupported commit log format version {version} (this build reads {OLDEST_SEGMENT_FORMAT_VERSION} to {SEGMENT_FORMAT_VERSION})"
        ));
    }
    Ok((version, id))
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
}

impl<'a> RecordPieces<'a> {
    /// Framed bytes of the record.
    pub fn len(&self) -> u64 {
        self.len
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
/// [`crate::encoding::SPLICE_MIN_BYTES`] or more by reference.
pub fn encode_record_pieces(table_id: u64, update: &PartitionUpdate) -> RecordPieces<'_> {
    let base = base_for(update);
    let mut head = take_encode_buffer(head_size_hint(update));
    head.extend_from_slice(&[0u8; FRAME_BYTES as usize]);
    encode_payload_prefix(table_id, &base, &mut head);
    let mut splices = Vec::new();
    crate::sstable::partition::encode_partition_spliced(update, &base, &mut head, &mut splices);
    let spliced: u64 = splices.iter().map(|(_, v)| v.len() as u64).sum();
    let len = head.len() as u64 + spliced;
    // A length past u32 cannot be framed; the caller refuses it by size first
    // (max_mutation_size is at most 1 GiB), so the truncation never happens.
    let payload_len = (len - FRAME_BYTES) as u32;
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
    RecordPieces { head, splices, len }
}

fn encode_payload_prefix(table_id: u64, base: &EncodingBase, out: &mut Vec<u8>) {
    put_varint(out, table_id);
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

/// Serialises and frames one mutation: the returned bytes are exactly what is
/// appended to the segment (tests and tools; the log writes the pieces).
pub fn encode_record(table_id: u64, update: &PartitionUpdate) -> Vec<u8> {
    let pieces = encode_record_pieces(table_id, update);
    let mut out = Vec::new();
    pieces.append_to(&mut out);
    out
}

fn frame_crc(len_bytes: &[u8], payload: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(len_bytes), payload)
}

/// Decodes a checksummed payload into `(table_id, update)`.
pub fn decode_payload(payload: &[u8]) -> std::result::Result<(u64, PartitionUpdate), String> {
    let mut r = Reader::new(payload);
    let err = |e: crate::encoding::DecodeError| format!("undecodable mutation: {}", e.0);
    let table_id = r.varint().map_err(err)?;
    let min_timestamp = r.zigzag().map_err(err)?;
    let ldt_delta = r.zigzag().map_err(err)?;
    let min_ttl = u32::try_from(r.varint().map_err(err)?)
        .map_err(|_| "undecodable mutation: base ttl exceeds u32".to_string())?;
    let base = EncodingBase {
        min_timestamp,
        min_local_deletion: ldt_delta.wrapping_add(min_timestamp.div_euclid(MICROS_PER_SECOND)),
        min_ttl,
    };
    let partition = r.rest();
    // The partition starts with its key (varint length + bytes); decode_partition
    // wants the DecoratedKey up front to check it against.
    let key_bytes = Reader::new(partition).bytes().map_err(err)?;
    let key = DecoratedKey::new(key_bytes);
    let update = decode_partition(partition, &key, &base).map_err(err)?;
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

/// Checks the frame at `pos` of `bytes`; `Ok(end)` if valid.
fn check_frame(bytes: &[u8], pos: usize) -> std::result::Result<usize, String> {
    let remaining = bytes.len() - pos;
    if remaining < FRAME_BYTES as usize {
        return Err(format!(
            "partial frame header ({remaining} of {FRAME_BYTES} bytes)"
        ));
    }
    let len_bytes = &bytes[pos..pos + 4];
    let len = u32::from_le_bytes([len_bytes[0], len_bytes[1], len_bytes[2], len_bytes[3]]) as usize;
    if len == 0 {
        // The seal, or zeros never written (a preallocated or zero-filled tail):
        // the seal's checksum tells them apart (crc32c of zeros is not zero).
        let stored = &bytes[pos + 4..pos + FRAME_BYTES as usize];
        if stored == &encode_seal()[4..] {
            return Ok(pos + FRAME_BYTES as usize);
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
    Ok(pos + FRAME_BYTES as usize + len)
}

/// Walks the records of a whole segment file (`bytes` includes the header, which
/// the caller has checked). Yields every valid frame and every bad region; after a
/// bad frame it resynchronises at the next offset where a valid frame starts, so
/// a damaged record in the middle is reported as such and the records after it
/// are still seen.
pub struct Scanner<'a> {
    bytes: &'a [u8],
    pos: usize,
}

impl<'a> Scanner<'a> {
    pub fn new(bytes: &'a [u8]) -> Scanner<'a> {
        Scanner {
            bytes,
            pos: (HEADER_BYTES as usize).min(bytes.len()),
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
            Ok(end) if end - start == FRAME_BYTES as usize => {
                self.pos = end;
                Some(ScanItem::Seal {
                    start: start as u64,
                    end: end as u64,
                })
            }
            Ok(end) => {
                self.pos = end;
                Some(ScanItem::Record {
                    start: start as u64,
                    end: end as u64,
                    payload: &self.bytes[start + FRAME_BYTES as usize..end],
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, DeletionTime, LivenessInfo, Row};

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
        let rec = encode_record(7, &p);
        let end = check_frame(&rec, 0).unwrap();
        assert_eq!(end, rec.len());
        let (t, q) = decode_payload(&rec[FRAME_BYTES as usize..]).unwrap();
        assert_eq!((t, &q), (7, &p));
        // 8 frame + ~12 base/table + key + one row with two cells.
        assert!(rec.len() < 60, "record is {} bytes", rec.len());
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
        encode_payload_prefix(3, &base, &mut payload);
        crate::sstable::partition::encode_partition(&p, &base, &mut payload);
        let len = (payload.len() as u32).to_le_bytes();
        let mut whole = len.to_vec();
        whole.extend_from_slice(&frame_crc(&len, &payload).to_le_bytes());
        whole.extend_from_slice(&payload);
        let pieces = encode_record_pieces(3, &p);
        assert_eq!(pieces.splices.len(), 2);
        let mut joined = Vec::new();
        pieces.append_to(&mut joined);
        assert_eq!(pieces.len(), whole.len() as u64);
        assert_eq!(joined, whole);
        assert_eq!(check_frame(&joined, 0), Ok(joined.len()));
        drop(pieces);
        assert_eq!(decode_payload(&joined[8..]).unwrap(), (3, p));
    }

    /// The reference framing: the payload encoded whole by the sstable codec.
    fn reference_record(table_id: u64, p: &PartitionUpdate) -> Vec<u8> {
        let base = base_for(p);
        let mut payload = Vec::new();
        encode_payload_prefix(table_id, &base, &mut payload);
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
                let rec = encode_record(t, p);
                assert_eq!(rec, reference_record(t, p), "round {round}, table {t}");
                assert_eq!(decode_payload(&rec[8..]).unwrap(), (t, p.clone()));
            }
        }
    }

    #[test]
    fn empty_update_and_extreme_timestamps_round_trip() {
        let p = PartitionUpdate::new(DecoratedKey::new(b""));
        let rec = encode_record(u64::MAX, &p);
        assert_eq!(decode_payload(&rec[8..]).unwrap(), (u64::MAX, p.clone()));
        let mut d = PartitionUpdate::new(DecoratedKey::new(b"k"));
        d.deletion.partition = Some(DeletionTime::new(i64::MAX, i64::MIN));
        let rec = encode_record(0, &d);
        assert_eq!(decode_payload(&rec[8..]).unwrap(), (0, d));
    }

    #[test]
    fn header_round_trips_and_rejects_damage() {
        let h = encode_header(42);
        assert_eq!(h.len() as u64, HEADER_BYTES);
        assert_eq!(decode_header(&h), Ok((SEGMENT_FORMAT_VERSION, 42)));
        for bit in 0..h.len() * 8 {
            let mut bad = h.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(decode_header(&bad).is_err(), "bit {bit}");
        }
        assert!(decode_header(&h[..10]).is_err());
    }

    #[test]
    fn scanner_classifies_tail_and_middle_damage() {
        let mut seg = encode_header(1);
        let recs: Vec<Vec<u8>> = (0..3)
            .map(|i| encode_record(1, &update(format!("k{i}").as_bytes(), 1_000_000 + i)))
            .collect();
        for r in &recs {
            seg.extend_from_slice(r);
        }
        let clean: Vec<_> = Scanner::new(&seg).collect();
        assert_eq!(clean.len(), 3);
        assert!(clean.iter().all(|i| matches!(i, ScanItem::Record { .. })));

        // Torn tail: half of a fourth record, then zeros.
        let mut torn = seg.clone();
        let extra = encode_record(1, &update(b"k3", 5));
        torn.extend_from_slice(&extra[..extra.len() / 2]);
        torn.extend_from_slice(&[0u8; 100]);
        let items: Vec<_> = Scanner::new(&torn).collect();
        assert_eq!(items.len(), 4);
        assert!(matches!(items[3], ScanItem::Bad { tail: true, .. }));

        // A flipped bit in the middle record: the scan resyncs on the third.
        let mut mid = seg.clone();
        let second = HEADER_BYTES as usize + recs[0].len();
        mid[second + 12] ^= 0x10;
        let items: Vec<_> = Scanner::new(&mid).collect();
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
        let mut seg = encode_header(3);
        let rec = encode_record(1, &update(b"k", 7));
        seg.extend_from_slice(&rec);
        seg.extend_from_slice(&encode_seal());
        let items: Vec<_> = Scanner::new(&seg).collect();
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
        let items: Vec<_> = Scanner::new(&zeros).collect();
        assert!(matches!(items[1], ScanItem::Bad { tail: true, .. }));
        for bit in 0..64 {
            let mut bad = seg.clone();
            bad[end as usize + bit / 8] ^= 1 << (bit % 8);
            let items: Vec<_> = Scanner::new(&bad).collect();
            assert!(
                !items.iter().any(|i| matches!(i, ScanItem::Seal { .. })),
                "bit {bit}: {items:?}"
            );
        }
        // Version 1 headers are still read; unknown versions are not.
        let mut v1 = encode_header(3);
        v1[8..12].copy_from_slice(&1u32.to_le_bytes());
        let crc = crc32c::crc32c(&v1[..20]);
        v1[20..24].copy_from_slice(&crc.to_le_bytes());
        assert_eq!(decode_header(&v1), Ok((1, 3)));
        assert!(is_sealed_format(SEGMENT_FORMAT_VERSION) && !is_sealed_format(1));
        let mut v9 = v1.clone();
        v9[8..12].copy_from_slice(&9u32.to_le_bytes());
        let crc = crc32c::crc32c(&v9[..20]);
        v9[20..24].copy_from_slice(&crc.to_le_bytes());
        assert!(decode_header(&v9).unwrap_err().contains("version 9"));
    }
}
