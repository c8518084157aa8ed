//! Protocol v5's framing after the handshake: checksummed segments that carry
//! envelopes (Cassandra's `FrameEncoderCrc`/`FrameDecoderCrc`, and the LZ4
//! variants when STARTUP negotiated `lz4`).
//!
//! ```text
//! uncompressed: header 6 bytes, little-endian
//!   bits 0..17  payload length (at most 131,071)
//!   bit  17     self-contained flag
//!   bits 24..48 CRC24 of the first 3 bytes
//! compressed (lz4): header 8 bytes, little-endian
//!   bits 0..17  compressed length
//!   bits 17..34 uncompressed length (0: the payload is stored uncompressed)
//!   bit  34     self-contained flag
//!   bits 40..64 CRC24 of the first 5 bytes
//! then the payload, then the CRC32 of the payload as sent (little-endian),
//! the CRC32 started with the bytes FA 2D 55 CA (Cassandra's `Crc.crc32()`).
//! ```
//!
//! A self-contained segment holds one or more whole envelopes; an envelope
//! larger than one segment's payload is cut across consecutive segments that
//! are not self-contained. Pure functions, any thread.
//!
//! Invariants:
//! 1. [`SegmentDecoder::decode`] never allocates more than one segment's
//!    payload (131,071 bytes) per call, whatever the header claims: lengths
//!    are 17-bit fields, and a decompressed length above the maximum is
//!    refused before the output is allocated.
//! 2. A header whose CRC24 does not match, or a payload whose CRC32 does not,
//!    is an error: the stream can no longer be trusted (Cassandra 4.0.1+ closes
//!    the connection on either; see CASSANDRA-16479).
//! 3. The encoder writes what the decoder (and Cassandra's decoder) reads:
//!    round-trip and fixed-vector tests below.

/// The largest payload one segment carries (17 bits).
pub const MAX_PAYLOAD: usize = (1 << 17) - 1;

const CRC24_INIT: u32 = 0x875060;
const CRC24_POLY: u32 = 0x1974F0B;
const CRC32_INITIAL_BYTES: [u8; 4] = [0xFA, 0x2D, 0x55, 0xCA];

/// Cassandra's `Crc.crc24`: over the `len` low bytes of `bytes`, least
/// significant first.
pub fn crc24(mut bytes: u64, len: usize) -> u32 {
    let mut crc = CRC24_INIT;
    for _ in 0..len {
        crc ^= ((bytes & 0xff) as u32) << 16;
        bytes >>= 8;
        for _ in 0..8 {
            crc <<= 1;
            if crc & 0x1000000 != 0 {
                crc ^= CRC24_POLY;
            }
        }
    }
    crc & 0xFFFFFF
}

/// Cassandra's `Crc.crc32()` over `payload`.
pub fn crc32(payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&CRC32_INITIAL_BYTES);
    h.update(payload);
    h.finalize()
}

/// One decoded segment's payload.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Segment {
    pub self_contained: bool,
    pub payload: Vec<u8>,
}

/// Why a segment could not be read (invariant 2: each closes the connection).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SegmentError {
    HeaderCrc { read: u32, computed: u32 },
    PayloadCrc { read: u32, computed: u32 },
    Decompress(String),
}

impl std::fmt::Display for SegmentError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SegmentError::HeaderCrc { read, computed } => write!(
                f,
                "unrecoverable CRC mismatch detected in frame header. Read {read}, Computed {computed}"
            ),
            SegmentError::PayloadCrc { read, computed } => write!(
                f,
                "unrecoverable CRC mismatch detected in frame body. Read {read}, Computed {computed}"
            ),
            SegmentError::Decompress(m) => write!(f, "frame decompression failed: {m}"),
        }
    }
}

/// Reads segments from the bytes received so far.
#[derive(Clone, Copy, Debug)]
pub struct SegmentDecoder {
    pub compressed: bool,
}

impl SegmentDecoder {
    fn header_len(&self) -> usize {
        if self.compressed {
            8
        } else {
            6
        }
    }

    /// The whole length of the segment starting at `buf`, once its header is
    /// there and checked; `Ok(None)` while fewer bytes than a header arrived.
    pub fn segment_len(&self, buf: &[u8]) -> Result<Option<usize>, SegmentError> {
        let hl = self.header_len();
        if buf.len() < hl {
            return Ok(None);
        }
        let mut h = 0u64;
        for (i, b) in buf[..hl].iter().enumerate() {
            h |= (*b as u64) << (8 * i);
        }
        let covered = hl - 3;
        let read = ((h >> (8 * covered)) & 0xFFFFFF) as u32;
        let computed = crc24(h, covered);
        if read != computed {
            return Err(SegmentError::HeaderCrc { read, computed });
        }
        let payload_len = (h & 0x1FFFF) as usize;
        Ok(Some(hl + payload_len + 4))
    }

    /// Decodes the segment at the start of `buf` if it is all there: the
    /// segment and the bytes it took.
    pub fn decode(&self, buf: &[u8]) -> Result<Option<(Segment, usize)>, SegmentError> {
        let Some(total) = self.segment_len(buf)? else {
            return Ok(None);
        };
        if buf.len() < total {
            return Ok(None);
        }
        let hl = self.header_len();
        let mut h = 0u64;
        for (i, b) in buf[..hl].iter().enumerate() {
            h |= (*b as u64) << (8 * i);
        }
        let payload = &buf[hl..total - 4];
        let t = &buf[total - 4..total];
        let read = u32::from_le_bytes([t[0], t[1], t[2], t[3]]);
        let computed = crc32(payload);
        if read != computed {
            return Err(SegmentError::PayloadCrc { read, computed });
        }
        let segment = if self.compressed {
            let uncompressed_len = ((h >> 17) & 0x1FFFF) as usize;
            let self_contained = h & (1 << 34) != 0;
            let payload = if uncompressed_len == 0 {
                payload.to_vec()
            } else {
                // Bounded by the 17-bit field (invariant 1).
                let mut out = vec![0u8; uncompressed_len];
                let n = lz4_flex::block::decompress_into(payload, &mut out)
                    .map_err(|e| SegmentError::Decompress(e.to_string()))?;
                if n != uncompressed_len {
                    return Err(SegmentError::Decompress(format!(
                        "{n} bytes decompressed, the header said {uncompressed_len}"
                    )));
                }
                out
            };
            Segment {
                self_contained,
                payload,
            }
        } else {
            Segment {
                self_contained: h & (1 << 17) != 0,
                payload: payload.to_vec(),
            }
        };
        Ok(Some((segment, total)))
    }
}

/// Appends one segment carrying `payload` (at most [`MAX_PAYLOAD`] bytes).
pub fn encode_segment(out: &mut Vec<u8>, payload: &[u8], self_contained: bool, compressed: bool) {
    debug_assert!(payload.len() <= MAX_PAYLOAD);
    let len = payload.len().min(MAX_PAYLOAD);
    let payload = &payload[..len];
    if !compressed {
        let mut h = len as u64;
        if self_contained {
            h |= 1 << 17;
        }
        h |= (crc24(h, 3) as u64) << 24;
        out.extend_from_slice(&h.to_le_bytes()[..6]);
        out.extend_from_slice(payload);
        out.extend_from_slice(&crc32(payload).to_le_bytes());
        return;
    }
    // Compress; keep the result only when it is smaller (Cassandra's
    // FrameEncoderLZ4 does the same, marking a stored payload with an
    // uncompressed length of 0).
    let bound = lz4_flex::block::get_maximum_output_size(len);
    let mut z = vec![0u8; bound];
    let (body, uncompressed_len): (&[u8], usize) =
        match lz4_flex::block::compress_into(payload, &mut z) {
            Ok(n) if n < len => (&z[..n], len),
            _ => (payload, 0),
        };
    let mut h = body.len() as u64 | ((uncompressed_len as u64) << 17);
    if self_contained {
        h |= 1 << 34;
    }
    h |= (crc24(h, 5) as u64) << 40;
    out.extend_from_slice(&h.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&crc32(body).to_le_bytes());
}

/// Cuts `envelopes` (whole envelopes, concatenated) into segments: envelopes
/// are packed into self-contained segments up to [`MAX_PAYLOAD`]; one larger
/// than that goes alone, across segments that are not self-contained.
pub struct SegmentWriter {
    pub compressed: bool,
    pending: Vec<u8>,
}

impl SegmentWriter {
    pub fn new(compressed: bool) -> SegmentWriter {
        SegmentWriter {
            compressed,
            pending: Vec::new(),
        }
    }

    /// Adds one envelope; segments that are complete go to `out`.
    pub fn push(&mut self, envelope: &[u8], out: &mut Vec<u8>) {
        if envelope.len() > MAX_PAYLOAD {
            self.flush(out);
            for chunk in envelope.chunks(MAX_PAYLOAD) {
                encode_segment(out, chunk, false, self.compressed);
            }
            return;
        }
        if self.pending.len() + envelope.len() > MAX_PAYLOAD {
            self.flush(out);
        }
        self.pending.extend_from_slice(envelope);
    }

    /// Writes what is pending as one self-contained segment.
    pub fn flush(&mut self, out: &mut Vec<u8>) {
        if !self.pending.is_empty() {
            encode_segment(out, &self.pending, true, self.compressed);
            self.pending.clear();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksums_match_the_drivers_vectors() {
        // Computed with the Python driver's `compute_crc24`/`compute_crc32`
        // (cassandra/segment.py, the same bit loop as Cassandra's Crc.java):
        // a self-contained 5-byte uncompressed header, the same as an LZ4
        // header with no uncompressed length, and the payload "hello".
        assert_eq!(crc24(5 | (1 << 17), 3), 0x9a9919);
        assert_eq!(crc24(5 | (1 << 34), 5), 0x8eabe4);
        assert_eq!(crc32(b"hello"), 0xb60e8074);
        let h: u64 = 5 | (1 << 17);
        let c = crc24(h, 3);
        // Any flipped bit of the covered bytes changes the CRC.
        for bit in 0..24 {
            assert_ne!(crc24(h ^ (1 << bit), 3), c, "bit {bit}");
        }
    }

    #[test]
    fn segments_round_trip_both_formats() {
        for compressed in [false, true] {
            let dec = SegmentDecoder { compressed };
            for len in [0usize, 1, 100, 5000, MAX_PAYLOAD] {
                let payload: Vec<u8> = (0..len).map(|i| (i % 13) as u8).collect();
                for sc in [false, true] {
                    let mut out = Vec::new();
                    encode_segment(&mut out, &payload, sc, compressed);
                    let (seg, used) = dec.decode(&out).unwrap().unwrap();
                    assert_eq!(used, out.len());
                    assert_eq!(seg.payload, payload);
                    assert_eq!(seg.self_contained, sc);
                    // Every prefix is "not yet".
                    assert_eq!(dec.decode(&out[..out.len() - 1]).unwrap(), None);
                }
            }
        }
    }

    #[test]
    fn corruption_is_detected() {
        for compressed in [false, true] {
            let dec = SegmentDecoder { compressed };
            let mut out = Vec::new();
            encode_segment(&mut out, b"hello, segment", true, compressed);
            for i in 0..out.len() {
                let mut bad = out.clone();
                bad[i] ^= 0x01;
                match dec.decode(&bad) {
                    Err(_) => {}
                    // A flip in the length makes the segment look longer: not
                    // yet complete is acceptable, never a wrong payload.
                    Ok(None) => {}
                    Ok(Some((seg, _))) => panic!("byte {i}: accepted {seg:?}"),
                }
            }
        }
    }

    #[test]
    fn writer_packs_small_envelopes_and_splits_large_ones() {
        let mut w = SegmentWriter::new(false);
        let mut out = Vec::new();
        w.push(&[1u8; 10], &mut out);
        w.push(&[2u8; 20], &mut out);
        assert!(out.is_empty());
        w.flush(&mut out);
        let dec = SegmentDecoder { compressed: false };
        let (seg, used) = dec.decode(&out).unwrap().unwrap();
        assert_eq!(used, out.len());
        assert!(seg.self_contained);
        assert_eq!(seg.payload.len(), 30);

        let big = vec![7u8; MAX_PAYLOAD * 2 + 5];
        let mut out = Vec::new();
        w.push(&big, &mut out);
        let mut at = 0;
        let mut joined = Vec::new();
        let mut n = 0;
        while at < out.len() {
            let (seg, used) = dec.decode(&out[at..]).unwrap().unwrap();
            assert!(!seg.self_contained);
            joined.extend_from_slice(&seg.payload);
            at += used;
            n += 1;
        }
        assert_eq!(n, 3);
        assert_eq!(joined, big);
    }
}
