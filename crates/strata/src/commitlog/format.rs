//! Commit-log bytes: the segment header, the record frame, the mutation payload,
//! and the scanner that walks a segment and classifies damage. Pure functions over
//! byte slices: no file handles, no locks (the byte layout is drawn in
//! docs/DURABILITY.md, "Segment format").
//!
//! ```text
//! segment  = header record*
//! header   = magic "STRATACL" (8) | format_version u32 LE = 1 | segment_id u64 LE
//!            | crc32c u32 LE of the 20 bytes before it                     = 24 bytes
//! record   = length u32 LE | crc32c u32 LE | payload (length bytes)
//!            crc32c covers the 4 length bytes and the payload
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

use crate::data::{DecoratedKey, PartitionUpdate, NO_TIMESTAMP};
use crate::encoding::{put_u32_le, put_u64_le, put_varint, put_zigzag, EncodingBase, Reader};
use crate::sstable::partition::{decode_partition, encode_partition};

/// Segment magic: the first 8 bytes of every segment file.
pub const SEGMENT_MAGIC: [u8; 8] = *b"STRATACL";
/// Segment format version, also the `1` in `CommitLog-1-<id>.log`. An
/// incompatible change bumps it (never reinterpret old bytes).
pub const SEGMENT_FORMAT_VERSION: u32 = 1;
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

/// Checks a segment header; returns `(format_version, segment_id)` or why it is bad.
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
    if version != SEGMENT_FORMAT_VERSION {
        return Err(format!(
            "unsupported commit log format version {version} (this build reads {SEGMENT_FORMAT_VERSION})"
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

/// Serialises and frames one mutation: the returned bytes are exactly what is
/// appended to the segment.
pub fn encode_record(table_id: u64, update: &PartitionUpdate) -> Vec<u8> {
    let base = base_for(update);
    let mut out = Vec::with_capacity(64 + update.cell_count() * 16);
    out.extend_from_slice(&[0u8; FRAME_BYTES as usize]);
    put_varint(&mut out, table_id);
    put_zigzag(&mut out, base.min_timestamp);
    // Stored as a delta from the timestamp's second so the usual case (the base
    // built by `EncodingBase::around`) costs one byte, yet any base round-trips.
    put_zigzag(
        &mut out,
        base.min_local_deletion
            .wrapping_sub(base.min_timestamp.div_euclid(MICROS_PER_SECOND)),
    );
    put_varint(&mut out, u64::from(base.min_ttl));
    encode_partition(update, &base, &mut out);
    let payload_len = (out.len() as u64 - FRAME_BYTES) as u32;
    out[0..4].copy_from_slice(&payload_len.to_le_bytes());
    let crc = frame_crc(&out[0..4], &out[FRAME_BYTES as usize..]);
    out[4..8].copy_from_slice(&crc.to_le_bytes());
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
        // Zeros: never written (a preallocated or zero-filled tail) — no record
        // has an empty payload.
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
        assert_eq!(decode_header(&h), Ok((1, 42)));
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
}
