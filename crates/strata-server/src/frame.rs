//! Envelopes (the protocol's "frames" before v5): the 9-byte header, opcodes,
//! flags, and v4's per-envelope body compression (LZ4, Snappy).
//!
//! ```text
//!   0         8        16        24        32         40
//!   +---------+---------+---------+---------+---------+
//!   | version |  flags  |      stream       | opcode  |   v3 and later: 9 bytes
//!   +---------+---------+---------+---------+---------+
//!   |                length                 |
//!   +---------+---------+---------+---------+
//!   v1/v2: version, flags, stream (1 byte), opcode, length: 8 bytes
//! ```
//!
//! The top bit of `version` is the direction (1: response). Pure values, any
//! thread.
//!
//! Invariants:
//! 1. [`parse_header`] reads only the bytes it is given and validates nothing
//!    beyond the layout: which versions, opcodes and lengths are acceptable is
//!    the connection's decision (`conn`), so the same parser serves the
//!    handshake's "which version is this?" and the limits.
//! 2. Decompression is bounded before it allocates: the uncompressed length a
//!    body claims (LZ4's 4-byte prefix, Snappy's varint) is checked against the
//!    caller's maximum and against what the codec can expand the body to
//!    (256 times for LZ4, 32 for Snappy), so a few bytes never reserve
//!    megabytes.
//! 3. `Compression::compress` output is what `decompress` and Cassandra's
//!    compressors read: LZ4 as a 4-byte big-endian uncompressed length then one
//!    LZ4 block (Cassandra's `LZ4Compressor`), Snappy as a raw Snappy block.

use crate::wire::WireError;

/// Header length of protocol v3 and later.
pub const HEADER_LEN: usize = 9;
/// Header length of v1 and v2 (a 1-byte stream id); only ever written, to
/// refuse those versions in a form their clients read.
pub const LEGACY_HEADER_LEN: usize = 8;

pub const DIRECTION_RESPONSE: u8 = 0x80;
pub const VERSION_MASK: u8 = 0x7F;

/// Header flags.
pub mod flags {
    pub const COMPRESSED: u8 = 0x01;
    pub const TRACING: u8 = 0x02;
    pub const CUSTOM_PAYLOAD: u8 = 0x04;
    pub const WARNING: u8 = 0x08;
    pub const USE_BETA: u8 = 0x10;
}

/// The message types (section 2.4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Opcode {
    Error = 0x00,
    Startup = 0x01,
    Ready = 0x02,
    Authenticate = 0x03,
    Options = 0x05,
    Supported = 0x06,
    Query = 0x07,
    Result = 0x08,
    Prepare = 0x09,
    Execute = 0x0A,
    Register = 0x0B,
    Event = 0x0C,
    Batch = 0x0D,
    AuthChallenge = 0x0E,
    AuthResponse = 0x0F,
    AuthSuccess = 0x10,
}

impl Opcode {
    pub fn from_byte(b: u8) -> Option<Opcode> {
        Some(match b {
            0x00 => Opcode::Error,
            0x01 => Opcode::Startup,
            0x02 => Opcode::Ready,
            0x03 => Opcode::Authenticate,
            0x05 => Opcode::Options,
            0x06 => Opcode::Supported,
            0x07 => Opcode::Query,
            0x08 => Opcode::Result,
            0x09 => Opcode::Prepare,
            0x0A => Opcode::Execute,
            0x0B => Opcode::Register,
            0x0C => Opcode::Event,
            0x0D => Opcode::Batch,
            0x0E => Opcode::AuthChallenge,
            0x0F => Opcode::AuthResponse,
            0x10 => Opcode::AuthSuccess,
            _ => return None,
        })
    }

    /// Whether a client may send it.
    pub fn is_request(self) -> bool {
        matches!(
            self,
            Opcode::Startup
                | Opcode::Options
                | Opcode::Query
                | Opcode::Prepare
                | Opcode::Execute
                | Opcode::Register
                | Opcode::Batch
                | Opcode::AuthResponse
        )
    }

    /// Cassandra's `Message.Type` name, which its error messages print.
    pub fn name(self) -> &'static str {
        match self {
            Opcode::Error => "ERROR",
            Opcode::Startup => "STARTUP",
            Opcode::Ready => "READY",
            Opcode::Authenticate => "AUTHENTICATE",
            Opcode::Options => "OPTIONS",
            Opcode::Supported => "SUPPORTED",
            Opcode::Query => "QUERY",
            Opcode::Result => "RESULT",
            Opcode::Prepare => "PREPARE",
            Opcode::Execute => "EXECUTE",
            Opcode::Register => "REGISTER",
            Opcode::Event => "EVENT",
            Opcode::Batch => "BATCH",
            Opcode::AuthChallenge => "AUTH_CHALLENGE",
            Opcode::AuthResponse => "AUTH_RESPONSE",
            Opcode::AuthSuccess => "AUTH_SUCCESS",
        }
    }
}

/// A v3+ header as read, before any validation (invariant 1).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Header {
    /// The first byte: direction bit and version.
    pub version_byte: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    /// The body length, unsigned as Cassandra reads it (`getUnsignedInt`).
    pub body_len: u32,
}

impl Header {
    pub fn version(&self) -> u8 {
        self.version_byte & VERSION_MASK
    }

    pub fn is_response(&self) -> bool {
        self.version_byte & DIRECTION_RESPONSE != 0
    }
}

/// Reads a v3+ header from the first 9 bytes of `buf`; `None` if shorter.
pub fn parse_header(buf: &[u8]) -> Option<Header> {
    if buf.len() < HEADER_LEN {
        return None;
    }
    Some(Header {
        version_byte: buf[0],
        flags: buf[1],
        stream: i16::from_be_bytes([buf[2], buf[3]]),
        opcode: buf[4],
        body_len: u32::from_be_bytes([buf[5], buf[6], buf[7], buf[8]]),
    })
}

/// Writes a response header for `version` (the v1/v2 layout for those
/// versions, so that their clients can read the refusal).
pub fn write_response_header(
    out: &mut Vec<u8>,
    version: u8,
    flags: u8,
    stream: i16,
    opcode: Opcode,
    body_len: usize,
) {
    out.push(DIRECTION_RESPONSE | (version & VERSION_MASK));
    out.push(flags);
    if version >= 3 {
        out.extend_from_slice(&stream.to_be_bytes());
    } else {
        out.push(stream as u8);
    }
    out.push(opcode as u8);
    out.extend_from_slice(&(body_len as u32).to_be_bytes());
}

/// A whole response envelope: header and body.
pub fn encode_envelope(
    version: u8,
    flags: u8,
    stream: i16,
    opcode: Opcode,
    body: &[u8],
) -> Vec<u8> {
    let mut out = Vec::with_capacity(HEADER_LEN + body.len());
    write_response_header(&mut out, version, flags, stream, opcode, body.len());
    out.extend_from_slice(body);
    out
}

/// The most an LZ4 block can expand: bounds what a claimed length may
/// allocate (invariant 2).
const LZ4_MAX_RATIO: usize = 256;
/// The same for Snappy (a copy of up to 64 bytes costs 2 or 3 bytes).
const SNAPPY_MAX_RATIO: usize = 32;

/// v3/v4 envelope body compression, negotiated by STARTUP's `COMPRESSION`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    Lz4,
    Snappy,
}

impl Compression {
    pub fn name(self) -> &'static str {
        match self {
            Compression::Lz4 => "lz4",
            Compression::Snappy => "snappy",
        }
    }

    /// Compresses a body (invariant 3).
    pub fn compress(self, body: &[u8]) -> Vec<u8> {
        match self {
            Compression::Lz4 => {
                let bound = lz4_flex::block::get_maximum_output_size(body.len());
                let mut out = vec![0u8; 4 + bound];
                out[..4].copy_from_slice(&(body.len() as u32).to_be_bytes());
                // The output buffer is the documented worst case, so this
                // cannot fail; a failure would still be an error, not a panic.
                match lz4_flex::block::compress_into(body, &mut out[4..]) {
                    Ok(n) => {
                        out.truncate(4 + n);
                        out
                    }
                    Err(_) => {
                        // Unreachable with a worst-case buffer; answer with
                        // an uncompressible encoding instead of nothing.
                        lz4_literal_only(body)
                    }
                }
            }
            Compression::Snappy => snap::raw::Encoder::new()
                .compress_vec(body)
                .unwrap_or_else(|_| Vec::new()),
        }
    }

    /// Decompresses a request body whose uncompressed size must not pass
    /// `max_len` (invariant 2).
    pub fn decompress(self, body: &[u8], max_len: usize) -> Result<Vec<u8>, WireError> {
        match self {
            Compression::Lz4 => {
                if body.len() < 4 {
                    return Err(WireError::new(
                        "LZ4 body shorter than its 4-byte length prefix",
                    ));
                }
                let len = u32::from_be_bytes([body[0], body[1], body[2], body[3]]) as usize;
                // An LZ4 block expands at most ~255 times (a match length
                // grows by 255 per byte), so a longer claim is corrupt: refused
                // before allocating for it.
                if len > LZ4_MAX_RATIO * (body.len() - 4) + 16 {
                    return Err(WireError(format!(
                        "LZ4 body of {} bytes cannot decompress to the {len} its prefix claims",
                        body.len() - 4
                    )));
                }
                if len > max_len {
                    return Err(WireError(format!(
                        "Decompressed body of {len} bytes exceeds the maximum of {max_len}"
                    )));
                }
                let mut out = vec![0u8; len];
                let n = lz4_flex::block::decompress_into(&body[4..], &mut out)
                    .map_err(|e| WireError(format!("LZ4 decompression failed: {e}")))?;
                if n != len {
                    return Err(WireError(format!(
                        "LZ4 body decompressed to {n} bytes, its prefix said {len}"
                    )));
                }
                Ok(out)
            }
            Compression::Snappy => {
                let len = snap::raw::decompress_len(body)
                    .map_err(|e| WireError(format!("Snappy decompression failed: {e}")))?;
                // A Snappy copy of at most 64 bytes takes at least 2 bytes.
                if len > SNAPPY_MAX_RATIO * body.len() + 16 {
                    return Err(WireError(format!(
                        "Snappy body of {} bytes cannot decompress to the {len} it claims",
                        body.len()
                    )));
                }
                if len > max_len {
                    return Err(WireError(format!(
                        "Decompressed body of {len} bytes exceeds the maximum of {max_len}"
                    )));
                }
                snap::raw::Decoder::new()
                    .decompress_vec(body)
                    .map_err(|e| WireError(format!("Snappy decompression failed: {e}")))
            }
        }
    }
}

/// An LZ4 block holding `body` as one run of literals (valid for any input):
/// the fallback should the compressor ever refuse.
fn lz4_literal_only(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(body.len() + body.len() / 255 + 16);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    let n = body.len();
    if n >= 15 {
        out.push(0xF0);
        let mut rest = n - 15;
        while rest >= 255 {
            out.push(255);
            rest -= 255;
        }
        out.push(rest as u8);
    } else {
        out.push((n as u8) << 4);
    }
    out.extend_from_slice(body);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout() {
        let env = encode_envelope(4, flags::WARNING, -1, Opcode::Event, b"xyz");
        assert_eq!(env[..9], [0x84, 0x08, 0xFF, 0xFF, 0x0C, 0, 0, 0, 3]);
        let h = parse_header(&env).unwrap();
        assert!(h.is_response());
        assert_eq!((h.version(), h.stream, h.body_len), (4, -1, 3));
        let mut legacy = Vec::new();
        write_response_header(&mut legacy, 2, 0, 5, Opcode::Error, 10);
        assert_eq!(legacy, [0x82, 0, 5, 0, 0, 0, 0, 10]);
        assert_eq!(legacy.len(), LEGACY_HEADER_LEN);
    }

    #[test]
    fn compression_round_trips_and_bounds() {
        let body: Vec<u8> = (0..10_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        for c in [Compression::Lz4, Compression::Snappy] {
            let z = c.compress(&body);
            assert!(z.len() < body.len());
            assert_eq!(c.decompress(&z, body.len()).unwrap(), body);
            assert!(c.decompress(&z, body.len() - 1).is_err(), "{c:?}");
            assert_eq!(c.decompress(&c.compress(b""), 0).unwrap(), b"");
        }
        // Cassandra's LZ4 prefix is big-endian.
        let z = Compression::Lz4.compress(&body);
        assert_eq!(z[..4], (body.len() as u32).to_be_bytes());
        // A claimed 4 GiB is refused before allocating.
        assert!(Compression::Lz4
            .decompress(&[0xFF, 0xFF, 0xFF, 0xFF, 0], 1 << 20)
            .is_err());
    }

    #[test]
    fn literal_only_blocks_decode() {
        for n in [0usize, 1, 14, 15, 16, 269, 270, 1000] {
            let body: Vec<u8> = (0..n).map(|i| i as u8).collect();
            let z = lz4_literal_only(&body);
            assert_eq!(Compression::Lz4.decompress(&z, n).unwrap(), body, "{n}");
        }
    }
}
