//! LZ4 block decoding by the reference C implementation (liblz4, built from
//! source by `lz4-sys`), and encoding of plain LZ4 chunks and the commit
//! log's small records by liblz4 with a per-thread state ([`compress_into`]);
//! chunks with a dictionary are still encoded by `lz4_flex`.
//!
//! Contract: [`compress_into`] writes one LZ4 block that both decoders read.
//! [`decompress_into`] and [`decompress_into_with_dict`] decode one
//! LZ4 block (the block format, no size prefix, as `lz4_flex::block` writes
//! it) into `dst` and return the decoded length, or an error if the block is
//! malformed or decodes to more than `dst` holds. They never read outside
//! `src` (or the dictionary) nor write outside `dst`, whatever the input:
//! `LZ4_decompress_safe*` is the reference decoder's bounds-checked entry
//! point, the one meant for untrusted input (and fuzzed as such upstream).
//!
//! Why two implementations of one format: measured on 16 KiB chunks of the
//! comparison harness's rows, the C decoder runs 1.8-2.2x faster than
//! `lz4_flex`'s checked decoder (3.1 µs against 5.6 µs a chunk in criterion),
//! and a point read that misses the chunk cache spent a third of its time
//! decoding. On whole chunks neither encoder was faster consistently, but
//! liblz4 finds matches lz4_flex leaves: on the comparison harness's rows,
//! once their constant framing sits together (sstable format 8), 72.4 bytes
//! per pair against 75.9 (BENCHMARKS.md, "Row timestamps of a fixed
//! width"), so plain chunks are encoded by it too. On the commit log's
//! records, 100-200 bytes each, lz4_flex zeroed its 8 KiB hash table per
//! call, where liblz4 resets a kept state (BENCHMARKS.md, "Reads in equal
//! states: profiled" and "The encoder state reused").

use std::cell::RefCell;
use std::mem::MaybeUninit;
use std::os::raw::{c_char, c_int, c_void};

extern "C" {
    // The three below are liblz4's too (lz4.h; the `_fastReset` variant is in
    // its static-linking section, and lz4-sys links the library statically).
    fn LZ4_sizeofState() -> c_int;
    fn LZ4_initStream(buffer: *mut c_void, size: usize) -> *mut c_void;
    fn LZ4_compress_fast_extState_fastReset(
        state: *mut c_void,
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        acceleration: c_int,
    ) -> c_int;
    // Part of liblz4's stable API (lz4.h) since 1.7; lz4-sys builds it but
    // does not declare it.
    fn LZ4_decompress_safe_usingDict(
        src: *const c_char,
        dst: *mut c_char,
        src_size: c_int,
        dst_capacity: c_int,
        dict_start: *const c_char,
        dict_size: c_int,
    ) -> c_int;
}

/// A length as the C API's `int`: blocks here are at most a chunk or a commit
/// log record, far below 2 GiB; anything larger is refused, not truncated.
fn c_len(n: usize, what: &str) -> Result<c_int, String> {
    c_int::try_from(n).map_err(|_| format!("lz4 {what} of {n} bytes is beyond the codec's limit"))
}

fn decoded(n: c_int) -> Result<usize, String> {
    usize::try_from(n)
        .map_err(|_| "malformed lz4 block (or it decodes to more than the room given)".to_string())
}

thread_local! {
    /// This thread's encoder state (`u64`s: LZ4's state wants pointer
    /// alignment), set up once by `LZ4_initStream`; each call after that
    /// resets it cheaply instead of zeroing its 16 KiB hash table, which is
    /// what lz4_flex does per call (and what made a compressed commit-log
    /// record cost more than the bytes it saved, for small records).
    static ENCODER: RefCell<Option<Box<[u64]>>> = const { RefCell::new(None) };
}

/// The most bytes one block of `n` input bytes can take (LZ4_compressBound).
pub fn compress_bound(n: usize) -> usize {
    n + n / 255 + 16
}

/// Encodes `src` as one LZ4 block into `dst`; returns its length, or an error
/// if `dst` is too small (at least [`compress_bound`] is always enough).
pub fn compress_into(src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
    let (src_len, dst_len) = (c_len(src.len(), "input")?, c_len(dst.len(), "output")?);
    ENCODER.with(|cell| {
        let mut slot = cell.borrow_mut();
        if slot.is_none() {
            // SAFETY: a pure function of the library's build.
            let bytes = usize::try_from(unsafe { LZ4_sizeofState() })
                .map_err(|_| "liblz4 reports no state size".to_string())?;
            let mut state = vec![0u64; bytes.div_ceil(8)].into_boxed_slice();
            // SAFETY: the buffer is live, 8-byte aligned and `bytes` long;
            // LZ4_initStream returns null instead of using a buffer it cannot.
            let init = unsafe { LZ4_initStream(state.as_mut_ptr().cast::<c_void>(), bytes) };
            if init.is_null() {
                return Err("liblz4 refused its encoder state".to_string());
            }
            *slot = Some(state);
        }
        let Some(state) = slot.as_mut() else {
            return Err("no lz4 encoder state".to_string());
        };
        // SAFETY: the state was initialised above (a `_fastReset` call needs
        // one initialised by LZ4_initStream or left by an earlier
        // compression), the slices are live for the lengths given and do not
        // overlap, and the encoder writes at most `dst_len` bytes.
        let n = unsafe {
            LZ4_compress_fast_extState_fastReset(
                state.as_mut_ptr().cast::<c_void>(),
                src.as_ptr().cast::<c_char>(),
                dst.as_mut_ptr().cast::<c_char>(),
                src_len,
                dst_len,
                1,
            )
        };
        match usize::try_from(n) {
            Ok(n) if n > 0 || src.is_empty() => Ok(n),
            _ => Err(format!(
                "lz4 encoding of {} bytes needs more than {} bytes of room",
                src.len(),
                dst.len()
            )),
        }
    })
}

/// Decodes the block `src` into `dst`; returns how many bytes it wrote.
pub fn decompress_into(src: &[u8], dst: &mut [u8]) -> Result<usize, String> {
    // SAFETY: `[u8]` and `[MaybeUninit<u8>]` have one layout, and the decoder
    // writes only initialized bytes, so `dst` stays initialized.
    let dst = unsafe { &mut *(dst as *mut [u8] as *mut [MaybeUninit<u8>]) };
    decompress_into_uninit(src, dst)
}

/// [`decompress_into`] into memory not yet initialized (a new chunk-cache
/// entry: zeroing 16 KiB before decoding over it was 7% of a point read).
/// On `Ok(n)` the first `n` bytes of `dst` are initialized.
pub fn decompress_into_uninit(src: &[u8], dst: &mut [MaybeUninit<u8>]) -> Result<usize, String> {
    let (src_len, dst_len) = (c_len(src.len(), "block")?, c_len(dst.len(), "output")?);
    // SAFETY: both pointers are valid for the lengths given (they come from
    // live slices), the regions cannot overlap (`dst` is borrowed mutably),
    // and the safe decoder stays within them (module contract); it reads
    // nothing of `dst` it has not written (a match copies from output the
    // block has already produced, else the block is malformed).
    let n = unsafe {
        lz4_sys::LZ4_decompress_safe(
            src.as_ptr().cast::<c_char>(),
            dst.as_mut_ptr().cast::<c_char>(),
            src_len,
            dst_len,
        )
    };
    decoded(n)
}

/// Decodes the block `src`, written with `dict` as the window before its
/// first byte (`lz4_flex::block::compress_into_with_dict`), into `dst`.
pub fn decompress_into_with_dict(src: &[u8], dst: &mut [u8], dict: &[u8]) -> Result<usize, String> {
    let (src_len, dst_len) = (c_len(src.len(), "block")?, c_len(dst.len(), "output")?);
    let dict_len = c_len(dict.len(), "dictionary")?;
    // SAFETY: as in `decompress_into`; the dictionary is a third live slice,
    // only read, and it cannot overlap `dst` either.
    let n = unsafe {
        LZ4_decompress_safe_usingDict(
            src.as_ptr().cast::<c_char>(),
            dst.as_mut_ptr().cast::<c_char>(),
            src_len,
            dst_len,
            dict.as_ptr().cast::<c_char>(),
            dict_len,
        )
    };
    decoded(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Rows of the comparison harness's shape: random keys, values half random
    /// and half one repeated letter.
    fn sample(rng: &mut rand_chacha::ChaCha8Rng, len: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(len);
        while v.len() < len {
            v.extend((0..66).map(|_| rng.gen::<u8>()));
            let letter = rng.gen_range(b'a'..=b'z');
            v.extend(std::iter::repeat_n(letter, 50));
        }
        v.truncate(len);
        v
    }

    #[test]
    fn decodes_what_lz4_flex_encodes() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for len in [0, 1, 5, 13, 100, 4096, 16 * 1024, 70_000] {
            let input = sample(&mut rng, len);
            let block = lz4_flex::block::compress(&input);
            let mut out = vec![0u8; len];
            assert_eq!(decompress_into(&block, &mut out), Ok(len), "{len} bytes");
            assert_eq!(out, input);

            let dict = sample(&mut rng, 80 * 1024);
            let window = &dict[dict.len() - 64 * 1024..];
            let block = lz4_flex::block::compress_with_dict(&input, window);
            let mut out = vec![0u8; len];
            assert_eq!(
                decompress_into_with_dict(&block, &mut out, window),
                Ok(len),
                "{len} bytes with a dictionary"
            );
            assert_eq!(out, input);
        }
    }

    #[test]
    fn the_reused_encoder_state_writes_blocks_both_decoders_read() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(9);
        // Inputs of every size class, one after another on one thread's
        // state: each must be whole on its own, nothing carried over.
        for round in 0..300 {
            let len = [0, 1, 12, 64, 300, 4096, 20_000][round % 7] + rng.gen_range(0..50);
            let input = sample(&mut rng, len);
            let mut block = vec![0u8; compress_bound(len)];
            let n = compress_into(&input, &mut block).expect("room enough");
            block.truncate(n);
            let mut out = vec![0u8; len];
            assert_eq!(decompress_into(&block, &mut out), Ok(len));
            assert_eq!(out, input);
            let other = lz4_flex::block::decompress(&block, len).expect("lz4_flex reads it");
            assert_eq!(other, input);
        }
        let input = sample(&mut rng, 4096);
        assert!(
            compress_into(&input, &mut [0u8; 100]).is_err(),
            "too little room"
        );
    }

    #[test]
    fn refuses_short_room_and_garbage_without_reading_or_writing_outside() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        let input = sample(&mut rng, 16 * 1024);
        let block = lz4_flex::block::compress(&input);
        let mut short = vec![0u8; input.len() - 1];
        assert!(decompress_into(&block, &mut short).is_err());
        // Truncations and random corruptions of a real block: each is an
        // error or some bytes within the room, never a crash.
        let mut out = vec![0u8; input.len()];
        let mut refused = 0;
        for cut in [0, 1, block.len() / 2, block.len() - 1] {
            let r = decompress_into(&block[..cut], &mut out);
            assert!(r.map_or(true, |n| n <= out.len()));
        }
        for _ in 0..2_000 {
            let mut bad = block.clone();
            for _ in 0..rng.gen_range(1..8) {
                let i = rng.gen_range(0..bad.len());
                bad[i] = rng.gen();
            }
            let r = decompress_into(&bad, &mut out);
            refused += usize::from(r.is_err());
            assert!(r.map_or(true, |n| n <= out.len()));
            let r = decompress_into_with_dict(&bad, &mut out, &input[..1024]);
            assert!(r.map_or(true, |n| n <= out.len()));
        }
        assert!(
            refused > 0,
            "some corruption must be detected by the decoder"
        );
    }
}
