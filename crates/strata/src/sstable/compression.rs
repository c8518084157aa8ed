//! Chunk codecs: how one chunk of the uncompressed data stream is stored.
//!
//! Contract: [`compress_chunk`] appends one stored chunk
//! `[codec id u8][payload][crc32c u32 LE of codec byte + payload]` to a buffer and
//! [`decompress_chunk`] checks and undoes it. Pure functions, callable from any
//! thread (each thread keeps its own zstd contexts).
//!
//! Invariants:
//! 1. Codec ids are written to disk and are **never renumbered**: 0 none, 1 LZ4
//!    (the LZ4 block format, no size prefix: written and read by liblz4,
//!    `crate::lz4`), 2 zstd (one frame), 3 zstd (one
//!    frame) compressed with the sstable's dictionary, 4 LZ4 block whose window
//!    starts with the last 64 KiB of the sstable's dictionary. A new codec takes
//!    a new id. The dictionary is the sstable's, not the chunk's: the sstable
//!    records its id (`Codec::encode`), and the caller passes it loaded.
//! 2. A chunk is stored compressed only if its compressed form is shorter than
//!    the writer's `max_compressed_bytes` (Cassandra's `maxCompressedLength`,
//!    from the table's `min_compress_ratio`; no limit by default, as Cassandra);
//!    otherwise it is stored raw with codec 0. Because the codec is per chunk,
//!    a raw chunk costs one byte and no decompression on read, and readers need
//!    not know the limit it was written under.
//! 3. Decompression knows the exact uncompressed length (the chunk grid is fixed)
//!    and rejects any payload that does not decode to exactly that many bytes.

use std::cell::RefCell;
use std::mem::MaybeUninit;

pub use crate::codec::{
    Codec, CompressionParams, CODEC_ID_LZ4, CODEC_ID_LZ4_DICT, CODEC_ID_NONE, CODEC_ID_ZSTD,
    CODEC_ID_ZSTD_DICT, MAX_CHUNK_LENGTH_BYTES, MIN_CHUNK_LENGTH_BYTES, ZSTD_MAX_LEVEL,
    ZSTD_MIN_LEVEL,
};
use crate::dictionary::CompressionDictionary;

pub use crate::codec::CHUNK_OVERHEAD_BYTES;

thread_local! {
    // Reusing a zstd context avoids re-allocating and re-initialising its tables
    // for every chunk: level 3 on 16 KiB chunks runs at 712 MiB/s with a
    // thread-local context vs 400 MiB/s with a fresh one (benches/sstable.rs,
    // `zstd_context_16KiB`).
    static ZSTD_CCTX: RefCell<Option<(i32, zstd::bulk::Compressor<'static>)>> = const { RefCell::new(None) };
    static ZSTD_DCTX: RefCell<Option<zstd::bulk::Decompressor<'static>>> = const { RefCell::new(None) };
    // Dictionary contexts: raw zstd contexts that take a prepared dictionary per
    // call (`*_using_cdict` / `*_using_ddict` only reference it), so one context
    // per thread serves every dictionary of every table.
    static ZSTD_DICT_CCTX: RefCell<Option<zstd::zstd_safe::CCtx<'static>>> = const { RefCell::new(None) };
    static ZSTD_DICT_DCTX: RefCell<Option<zstd::zstd_safe::DCtx<'static>>> = const { RefCell::new(None) };
}

fn zstd_dict_compress(
    dict: &CompressionDictionary,
    level: i32,
    input: &[u8],
    out: &mut Vec<u8>,
) -> bool {
    let encoder = dict.encoder(level);
    ZSTD_DICT_CCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let cctx = slot.get_or_insert_with(zstd::zstd_safe::CCtx::create);
        let start = out.len();
        out.resize(start + zstd::zstd_safe::compress_bound(input.len()), 0);
        match cctx.compress_using_cdict(&mut out[start..], input, encoder.as_cdict()) {
            Ok(n) => {
                out.truncate(start + n);
                true
            }
            Err(_) => {
                out.truncate(start);
                false
            }
        }
    })
}

fn zstd_dict_decompress(
    dict: &CompressionDictionary,
    payload: &[u8],
    dst: &mut [u8],
) -> Result<usize, String> {
    ZSTD_DICT_DCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dctx = slot.get_or_insert_with(zstd::zstd_safe::DCtx::create);
        dctx.decompress_using_ddict(dst, payload, dict.decoder())
            .map_err(|code| zstd::zstd_safe::get_error_name(code).to_string())
    })
}

fn zstd_compress(level: i32, input: &[u8], out: &mut Vec<u8>) -> std::io::Result<()> {
    ZSTD_CCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let cctx = match &mut *slot {
            Some((l, cctx)) if *l == level => cctx,
            other => &mut other.insert((level, zstd::bulk::Compressor::new(level)?)).1,
        };
        let start = out.len();
        out.resize(start + zstd::zstd_safe::compress_bound(input.len()), 0);
        match cctx.compress_to_buffer(input, &mut out[start..]) {
            Ok(n) => {
                out.truncate(start + n);
                Ok(())
            }
            Err(e) => {
                out.truncate(start);
                Err(e)
            }
        }
    })
}

/// Decompresses into `out[start..start + expected_len]` (already sized by the caller).
fn zstd_decompress(payload: &[u8], dst: &mut [u8]) -> std::io::Result<usize> {
    ZSTD_DCTX.with(|cell| {
        let mut slot = cell.borrow_mut();
        let dctx = match &mut *slot {
            Some(d) => d,
            none => none.insert(zstd::bulk::Decompressor::new()?),
        };
        dctx.decompress_to_buffer(payload, dst)
    })
}

/// Appends `input` as one stored chunk to `out` (invariant 2) and returns the
/// codec actually used. A dictionary codec needs `dict` (its id is the
/// caller's to match); without it the chunk is stored raw, never wrongly. A
/// compressed form of `max_compressed_bytes` or more is stored raw
/// (`crate::codec::NO_COMPRESSED_LIMIT`: never).
pub fn compress_chunk(
    codec: Codec,
    dict: Option<&CompressionDictionary>,
    input: &[u8],
    out: &mut Vec<u8>,
    max_compressed_bytes: u32,
) -> Codec {
    let start = out.len();
    let mut used = codec;
    out.push(codec.id());
    let compressed_ok = match (codec, dict) {
        (Codec::None, _) => false,
        (Codec::ZstdDict { level, .. }, Some(d)) => zstd_dict_compress(d, level, input, out),
        (Codec::Lz4Dict { .. }, Some(d)) => {
            let bound = lz4_flex::block::get_maximum_output_size(input.len());
            out.resize(start + 1 + bound, 0);
            match lz4_flex::block::compress_into_with_dict(
                input,
                &mut out[start + 1..],
                d.lz4_window(),
            ) {
                Ok(n) => {
                    out.truncate(start + 1 + n);
                    true
                }
                Err(_) => false,
            }
        }
        (Codec::ZstdDict { .. } | Codec::Lz4Dict { .. }, None) => false,
        (Codec::Lz4, _) => {
            // liblz4, the encoder RocksDB links: on the comparison harness's
            // rows it finds matches lz4_flex's leaves (BENCHMARKS.md, "Row
            // timestamps of a fixed width").
            let bound = crate::lz4::compress_bound(input.len());
            out.resize(start + 1 + bound, 0);
            match crate::lz4::compress_into(input, &mut out[start + 1..]) {
                Ok(n) => {
                    out.truncate(start + 1 + n);
                    true
                }
                Err(_) => false,
            }
        }
        (Codec::Zstd { level }, _) => zstd_compress(level, input, out).is_ok(),
    };
    // Invariant 2: keep the compressed form only if it is under the limit.
    let payload_len = out.len() - start - 1;
    if !compressed_ok || !crate::codec::keeps_compressed(payload_len, max_compressed_bytes) {
        out.truncate(start);
        out.push(CODEC_ID_NONE);
        out.extend_from_slice(input);
        used = Codec::None;
    }
    let crc = crc32c::crc32c(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
    used
}

/// Verifies a stored chunk (`[codec][payload][crc]`) and appends its
/// `expected_len` uncompressed bytes to `out`. `dict` is the sstable's
/// dictionary, needed by codecs 3 and 4. The error says what was wrong; the
/// caller adds the file and offset.
pub fn decompress_chunk(
    stored: &[u8],
    expected_len: usize,
    dict: Option<&CompressionDictionary>,
    out: &mut Vec<u8>,
) -> Result<(), String> {
    let start = out.len();
    out.reserve(expected_len);
    let spare = out
        .spare_capacity_mut()
        .get_mut(..expected_len)
        .ok_or("no room reserved for the chunk")?;
    decompress_chunk_into_uninit(stored, spare, dict)?;
    // SAFETY: the decode succeeded, so it initialized all `expected_len`
    // bytes after `start`, which the reservation above holds.
    unsafe { out.set_len(start + expected_len) };
    Ok(())
}

/// As [`decompress_chunk_into_uninit`], into bytes already initialized (a
/// buffer reused from the chunk cache): `dst`'s old contents are overwritten
/// whole on success, and on an error hold some mix of old and decoded bytes.
pub fn decompress_chunk_into(
    stored: &[u8],
    dst: &mut [u8],
    dict: Option<&CompressionDictionary>,
) -> Result<(), String> {
    // SAFETY: `[u8]` and `[MaybeUninit<u8>]` have one layout, and every
    // path of `decompress_chunk_into_uninit` writes only initialized bytes
    // (decoded output, or the zeros of `zeroed`), so `dst` stays initialized.
    let uninit = unsafe { &mut *(dst as *mut [u8] as *mut [MaybeUninit<u8>]) };
    decompress_chunk_into_uninit(stored, uninit, dict)
}

/// `dst` as initialized bytes, zeroed first: for the codecs whose decoders
/// take initialized output (all but plain LZ4, the default and the hot one).
fn zeroed(dst: &mut [MaybeUninit<u8>]) -> &mut [u8] {
    dst.fill(MaybeUninit::new(0));
    // SAFETY: every byte was just initialized; one layout.
    unsafe { &mut *(dst as *mut [MaybeUninit<u8>] as *mut [u8]) }
}

/// [`decompress_chunk`] into `dst`, which must be exactly the chunk's
/// uncompressed length and need not be initialized: a caller that owns the
/// final allocation (the chunk cache's new entry, a vector's spare capacity)
/// decodes straight into it. On `Ok` every byte of `dst` is initialized; on
/// an error `dst` holds garbage, perhaps uninitialized.
pub fn decompress_chunk_into_uninit(
    stored: &[u8],
    dst: &mut [MaybeUninit<u8>],
    dict: Option<&CompressionDictionary>,
) -> Result<(), String> {
    let expected_len = dst.len();
    if stored.len() < CHUNK_OVERHEAD_BYTES {
        return Err(format!(
            "chunk of {} bytes is shorter than its header and checksum",
            stored.len()
        ));
    }
    let (body, crc_bytes) = stored.split_at(stored.len() - 4);
    let stored_crc = u32::from_le_bytes([crc_bytes[0], crc_bytes[1], crc_bytes[2], crc_bytes[3]]);
    let actual = crc32c::crc32c(body);
    if stored_crc != actual {
        return Err(format!(
            "chunk checksum mismatch (stored {stored_crc:#010x}, computed {actual:#010x})"
        ));
    }
    let (codec, payload) = (body[0], &body[1..]);
    // The codec's name and, for the dictionary codecs, the dictionary's id,
    // for the error.
    let (name, dictionary, decoded) = match codec {
        CODEC_ID_NONE => {
            if payload.len() != expected_len {
                return Err(format!(
                    "raw chunk holds {} bytes, expected {expected_len}",
                    payload.len()
                ));
            }
            zeroed(dst).copy_from_slice(payload);
            return Ok(());
        }
        CODEC_ID_LZ4 => (
            "lz4",
            None,
            crate::lz4::decompress_into_uninit(payload, dst),
        ),
        CODEC_ID_ZSTD => (
            "zstd",
            None,
            zstd_decompress(payload, zeroed(dst)).map_err(|e| e.to_string()),
        ),
        CODEC_ID_ZSTD_DICT | CODEC_ID_LZ4_DICT => {
            let d = dict.ok_or_else(|| {
                format!("chunk uses codec {codec}, which needs the sstable's dictionary, and the sstable names none")
            })?;
            let dst = zeroed(dst);
            if codec == CODEC_ID_ZSTD_DICT {
                ("zstd", Some(d.id()), zstd_dict_decompress(d, payload, dst))
            } else {
                let r = crate::lz4::decompress_into_with_dict(payload, dst, d.lz4_window());
                ("lz4", Some(d.id()), r)
            }
        }
        other => return Err(format!("unknown codec id {other}")),
    };
    let with = dictionary.map_or(String::new(), |id| format!(" with dictionary {id}"));
    match decoded {
        Ok(n) if n == expected_len => Ok(()),
        Ok(n) => Err(format!(
            "{name} chunk{with} decoded to {n} bytes, expected {expected_len}"
        )),
        Err(e) => Err(format!("{name} chunk{with} does not decode: {e}")),
    }
}

/// For salvage, which does not know a chunk's length: decodes a dictionary
/// chunk (codec 3 or 4, checksum included in `stored`) of at most `max_len`
/// bytes, or `None` if it is not one.
pub(crate) fn decompress_chunk_up_to(
    stored: &[u8],
    max_len: usize,
    dict: &CompressionDictionary,
) -> Option<Vec<u8>> {
    let (body, crc) = stored.split_at(stored.len().checked_sub(4)?);
    if crc32c::crc32c(body).to_le_bytes() != crc {
        return None;
    }
    let (&codec, payload) = body.split_first()?;
    let mut out = vec![0u8; max_len];
    let n = match codec {
        CODEC_ID_ZSTD_DICT => zstd_dict_decompress(dict, payload, &mut out).ok()?,
        CODEC_ID_LZ4_DICT => {
            crate::lz4::decompress_into_with_dict(payload, &mut out, dict.lz4_window()).ok()?
        }
        _ => return None,
    };
    out.truncate(n);
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const NO_LIMIT: u32 = crate::codec::NO_COMPRESSED_LIMIT;

    fn codecs() -> [Codec; 6] {
        [
            Codec::None,
            Codec::Lz4,
            Codec::Zstd { level: 3 },
            Codec::Zstd { level: -7 },
            Codec::ZstdDict { level: 3, dict: 0 },
            Codec::Lz4Dict { dict: 0 },
        ]
    }

    /// A dictionary trained on text shaped like the tests' data (id 0: never
    /// stored).
    fn dict() -> CompressionDictionary {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        let samples: Vec<Vec<u8>> = (0..40)
            .map(|_| {
                let mut s = Vec::new();
                while s.len() < 4096 {
                    s.extend_from_slice(b"cassandra-stress key=");
                    s.extend((0..8).map(|_| rng.gen_range(b'a'..=b'z')));
                    s.extend_from_slice(b";value=");
                    s.extend((0..6).map(|_| rng.gen_range(b'0'..=b'9')));
                }
                s
            })
            .collect();
        crate::dictionary::train(&samples, 4096, Codec::ZstdDict { level: 3, dict: 0 })
            .unwrap()
            .unsaved()
    }

    #[test]
    fn ids_are_stable() {
        // Invariant 1: these numbers are on disk.
        assert_eq!(Codec::None.id(), 0);
        assert_eq!(Codec::Lz4.id(), 1);
        assert_eq!(Codec::Zstd { level: 9 }.id(), 2);
        for c in codecs().into_iter().filter(|c| c.dictionary().is_none()) {
            assert_eq!(Codec::from_id(c.id(), c.level()), Some(c));
        }
        assert_eq!(Codec::ZstdDict { level: 1, dict: 9 }.id(), 3);
        assert_eq!(Codec::Lz4Dict { dict: 9 }.id(), 4);
        // Dictionary codecs carry their dictionary id in the per-sstable record.
        for c in codecs() {
            let mut out = Vec::new();
            c.with_dictionary(77).encode(&mut out);
            let mut r = crate::encoding::Reader::new(&out);
            assert_eq!(Codec::decode(&mut r).unwrap(), c.with_dictionary(77));
            assert!(r.is_empty());
        }
        assert_eq!(Codec::from_id(3, 0), None, "needs its dictionary id");
        assert_eq!(Codec::from_id(5, 0), None);
        assert!(Codec::Zstd { level: 23 }.validate().is_err());
        assert!(Codec::Zstd { level: -8 }.validate().is_err());
        assert!(CompressionParams {
            codec: Codec::Lz4,
            chunk_length_bytes: 1,
            ..CompressionParams::default()
        }
        .validate()
        .is_err());
        assert_eq!(CompressionParams::default().codec, Codec::Lz4);
        assert_eq!(CompressionParams::default().chunk_length_bytes, 16384);
    }

    #[test]
    fn repetitive_data_compresses_random_data_is_stored_raw_under_a_ratio() {
        let repetitive: Vec<u8> = (0..16384u32)
            .map(|i| b"cassandra-stress"[(i % 16) as usize])
            .collect();
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        let random: Vec<u8> = (0..16384).map(|_| rng.gen()).collect();
        let d = dict();
        // min_compress_ratio 1.1: compressed only when at most 16384 / 1.1.
        let limit = crate::codec::max_compressed_length(16384, 1.1);
        assert_eq!(limit, 14895);
        for codec in codecs() {
            let mut out = Vec::new();
            let used = compress_chunk(codec, Some(&d), &repetitive, &mut out, limit);
            assert_eq!(used, codec);
            if codec != Codec::None {
                assert!(
                    out.len() < repetitive.len() / 8,
                    "{codec:?}: {} bytes",
                    out.len()
                );
            }
            let mut back = Vec::new();
            decompress_chunk(&out, repetitive.len(), Some(&d), &mut back).unwrap();
            assert_eq!(back, repetitive);

            let mut out = Vec::new();
            assert_eq!(
                compress_chunk(codec, Some(&d), &random, &mut out, limit),
                Codec::None,
                "{codec:?} on random data"
            );
            assert_eq!(out.len(), random.len() + CHUNK_OVERHEAD_BYTES);
            let mut back = Vec::new();
            decompress_chunk(&out, random.len(), Some(&d), &mut back).unwrap();
            assert_eq!(back, random);

            // Cassandra's default (ratio 0, no limit): kept compressed even
            // though it grew, and still read back.
            let mut out = Vec::new();
            assert_eq!(
                compress_chunk(codec, Some(&d), &random, &mut out, NO_LIMIT),
                codec
            );
            let mut back = Vec::new();
            decompress_chunk(&out, random.len(), Some(&d), &mut back).unwrap();
            assert_eq!(back, random);
        }
    }

    #[test]
    fn a_chunk_compressed_to_exactly_the_limit_is_stored_raw() {
        // Cassandra: `compressedLength >= maxCompressedLength` stores raw.
        let data: Vec<u8> = (0..4096u32).map(|i| (i % 7) as u8).collect();
        let mut probe = Vec::new();
        compress_chunk(Codec::Lz4, None, &data, &mut probe, NO_LIMIT);
        let payload = (probe.len() - CHUNK_OVERHEAD_BYTES) as u32;
        let mut at = Vec::new();
        assert_eq!(
            compress_chunk(Codec::Lz4, None, &data, &mut at, payload),
            Codec::None
        );
        let mut above = Vec::new();
        assert_eq!(
            compress_chunk(Codec::Lz4, None, &data, &mut above, payload + 1),
            Codec::Lz4
        );
    }

    #[test]
    fn a_dictionary_shrinks_small_chunks_and_is_required_to_read_them() {
        let d = dict();
        let chunk: Vec<u8> = b"cassandra-stress key=qwertyui;value=123456".to_vec();
        for (with, without) in [
            (
                Codec::ZstdDict { level: 3, dict: 0 },
                Codec::Zstd { level: 3 },
            ),
            (Codec::Lz4Dict { dict: 0 }, Codec::Lz4),
        ] {
            let (mut a, mut b) = (Vec::new(), Vec::new());
            assert_eq!(
                compress_chunk(with, Some(&d), &chunk, &mut a, NO_LIMIT),
                with
            );
            compress_chunk(without, None, &chunk, &mut b, NO_LIMIT);
            assert!(a.len() < b.len(), "{with:?}: {} vs {}", a.len(), b.len());
            let err = decompress_chunk(&a, chunk.len(), None, &mut Vec::new()).unwrap_err();
            assert!(err.contains("needs the sstable's dictionary"), "{err}");
            // Asked to compress without its dictionary, a chunk is stored raw
            // rather than with a codec id that promises one.
            let mut raw = Vec::new();
            assert_eq!(
                compress_chunk(with, None, &chunk, &mut raw, NO_LIMIT),
                Codec::None
            );
        }
    }

    #[test]
    fn every_bit_flip_is_detected() {
        let data: Vec<u8> = (0..600u32).map(|i| (i % 7) as u8).collect();
        let d = dict();
        for codec in codecs() {
            let mut stored = Vec::new();
            compress_chunk(codec, Some(&d), &data, &mut stored, NO_LIMIT);
            for bit in 0..stored.len() * 8 {
                let mut bad = stored.clone();
                bad[bit / 8] ^= 1 << (bit % 8);
                let mut out = Vec::new();
                assert!(
                    decompress_chunk(&bad, data.len(), Some(&d), &mut out).is_err(),
                    "{codec:?} bit {bit}"
                );
            }
            // A wrong expected length is caught too.
            assert!(decompress_chunk(&stored, data.len() + 1, Some(&d), &mut Vec::new()).is_err());
        }
    }

    #[test]
    fn empty_and_tiny_chunks() {
        let d = dict();
        for codec in codecs() {
            for input in [&b""[..], b"x", b"abcabcab"] {
                let mut stored = Vec::new();
                compress_chunk(codec, Some(&d), input, &mut stored, NO_LIMIT);
                let mut back = Vec::new();
                decompress_chunk(&stored, input.len(), Some(&d), &mut back).unwrap();
                assert_eq!(back, input);
            }
        }
    }
}
