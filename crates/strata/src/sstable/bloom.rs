//! The per-sstable Bloom filter over partition keys (Cassandra's `-Filter.db`,
//! here a block inside the one sstable file).
//!
//! Contract: built once by the writer from every partition key it appends, then
//! immutable; [`BloomFilter::may_contain`] is callable from any thread. A "no" is
//! definite; a "yes" is wrong with probability about `bloom_filter_fp_chance`.
//!
//! Sizing (the textbook optimum, as Cassandra's `BloomCalculations`):
//! `m = -n ln p / (ln 2)^2` bits, rounded up to whole 64-bit words, and
//! `k = round(m / n * ln 2)` probes, clamped to 1..=[`MAX_PROBES`].
//!
//! Probes use double hashing (Kirsch & Mitzenmacher): probe `i` sets bit
//! `(h1 + i * h2) mod m`, with `(h1, h2)` the two halves of the 128-bit Murmur3
//! hash of the key. Taking the bit index from the *low* bits with `mod` (rather than
//! a multiply-shift range reduction, which keeps the high bits) matters: `h1` is
//! the partition token, and an sstable of a token-range shard (LCS, UCS) holds keys
//! whose tokens share their high bits, which would pile every first probe into one
//! corner of the bit array.
//!
//! Invariants:
//! 1. Every key added makes `may_contain` true forever (no false negatives).
//! 2. The serialized form records the hash function id, `k` and `m`; a reader
//!    never assumes them. Hash id 1 = Murmur3 x64 128, seed 0, Cassandra's variant
//!    (tail bytes sign-extended): never renumbered.
//! 3. `fp_chance >= 1` builds an empty filter that answers "maybe" to everything
//!    (Cassandra's `AlwaysPresentFilter`).

use crate::encoding::{put_varint, Reader};

/// On-disk id of the hash function (invariant 2).
pub const HASH_MURMUR3_X64_128: u8 = 1;
/// More probes cost more than they save: at p = 1e-6, k = 20.
pub const MAX_PROBES: u32 = 30;

/// The filter hashes with the partitioner's Murmur3 (`h1` is the token), so the
/// hash id 1 written in every filter means exactly `token::murmur3_x64_128(key, 0)`;
/// `murmur3_h1_matches_cassandra_tokens` pins it, because changing it would make
/// every existing filter answer "no" for present keys.
pub use crate::token::murmur3_x64_128;

/// The hash pair a filter probes with; computed once per lookup.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct KeyHash(pub u64, pub u64);

impl KeyHash {
    pub fn of(key: &[u8]) -> KeyHash {
        let (a, b) = murmur3_x64_128(key, 0);
        KeyHash(a, b)
    }
}

/// A Bloom filter with `k` probes over `64 * words.len()` bits.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BloomFilter {
    words: Vec<u64>,
    probes: u32,
}

impl BloomFilter {
    /// A filter sized for `expected_keys` at false-positive chance `fp_chance`.
    pub fn with_capacity(expected_keys: u64, fp_chance: f64) -> BloomFilter {
        if fp_chance >= 1.0 || fp_chance.is_nan() {
            return BloomFilter {
                words: Vec::new(),
                probes: 0,
            }; // invariant 3
        }
        let n = expected_keys.max(1) as f64;
        let p = fp_chance.max(1e-12);
        let ln2 = std::f64::consts::LN_2;
        let bits = (-n * p.ln() / (ln2 * ln2)).ceil().max(64.0);
        let words = (bits / 64.0).ceil() as usize;
        // k from the *requested* m (before rounding up to words), as the formula says.
        let probes = ((bits / n) * ln2).round().clamp(1.0, MAX_PROBES as f64) as u32;
        BloomFilter {
            words: vec![0; words],
            probes,
        }
    }

    pub fn bit_count(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// Bytes of the bit array (tablestats' "Bloom filter space used").
    pub fn size_bytes(&self) -> u64 {
        self.words.len() as u64 * 8
    }

    #[inline]
    fn for_each_bit(&self, h: KeyHash, mut f: impl FnMut(usize) -> bool) -> bool {
        let m = self.bit_count();
        let mut x = h.0;
        for _ in 0..self.probes {
            if !f((x % m) as usize) {
                return false;
            }
            x = x.wrapping_add(h.1);
        }
        true
    }

    pub fn add(&mut self, h: KeyHash) {
        if self.words.is_empty() {
            return;
        }
        let mut bits = [0usize; MAX_PROBES as usize];
        let mut n = 0;
        self.for_each_bit(h, |b| {
            bits[n] = b;
            n += 1;
            true
        });
        for &b in &bits[..n] {
            self.words[b / 64] |= 1 << (b % 64);
        }
    }

    /// False only if the key was never added (invariant 1).
    #[inline]
    pub fn may_contain(&self, h: KeyHash) -> bool {
        if self.words.is_empty() {
            return true;
        }
        self.for_each_bit(h, |b| self.words[b / 64] & (1 << (b % 64)) != 0)
    }

    /// `[hash id u8][k u8][words varint][words × u64 LE]`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        out.push(HASH_MURMUR3_X64_128);
        out.push(self.probes as u8);
        put_varint(out, self.words.len() as u64);
        out.reserve(self.words.len() * 8);
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<BloomFilter, String> {
        let mut r = Reader::new(bytes);
        let hash = r.u8().map_err(|e| e.0.to_string())?;
        if hash != HASH_MURMUR3_X64_128 {
            return Err(format!("unknown bloom filter hash id {hash}"));
        }
        let probes = r.u8().map_err(|e| e.0.to_string())? as u32;
        let n = r.varint_usize().map_err(|e| e.0.to_string())?;
        if probes > MAX_PROBES || (n > 0 && probes == 0) {
            return Err(format!("bloom filter with {probes} probes over {n} words"));
        }
        if r.remaining() != n.saturating_mul(8) {
            return Err(format!(
                "bloom filter of {n} words but {} bytes of bits",
                r.remaining()
            ));
        }
        let words = r
            .rest()
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        Ok(BloomFilter { words, probes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn murmur3_h1_matches_cassandra_tokens() {
        // From the DataStax driver's cassandra.cmurmur3 (see tests/vectors/gen_murmur3_vectors.py).
        let vectors: [(&str, i64); 7] = [
            ("", 0),
            ("61", -8839064797231613815),
            ("68656c6c6f", -3758069500696749310),
            ("80a5caef94b9de83a8cdf297bce186", 3105901963887054591),
            ("ffffffffffffffffffffffffffffff", -2195530867418009455),
            (
                "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f20",
                9025539228862924306,
            ),
            ("706172746974696f6e2d6b65792d30303031", -4702419024183491970),
        ];
        for (hex, token) in vectors {
            let bytes: Vec<u8> = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).unwrap())
                .collect();
            assert_eq!(murmur3_x64_128(&bytes, 0).0 as i64, token, "{hex}");
        }
    }

    fn measured_fp_rate(p: f64, n: u64, seed: u64) -> f64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut f = BloomFilter::with_capacity(n, p);
        for i in 0..n {
            f.add(KeyHash::of(
                format!("present-{i}-{}", rng.gen::<u32>()).as_bytes(),
            ));
        }
        let trials = 200_000u64;
        let hits = (0..trials)
            .filter(|i| f.may_contain(KeyHash::of(format!("absent-{i}").as_bytes())))
            .count();
        hits as f64 / trials as f64
    }

    #[test]
    fn false_positive_rate_is_near_target() {
        for (p, seed) in [(0.01, 1), (0.1, 2)] {
            let rate = measured_fp_rate(p, 50_000, seed);
            assert!(
                rate <= p * 1.5 && rate >= p / 1.5,
                "target {p}, measured {rate}"
            );
        }
    }

    #[test]
    fn narrow_token_range_keeps_the_rate() {
        // Keys whose h1 share their high 16 bits, as in a token-range shard.
        let p = 0.01;
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let n = 20_000;
        let mut f = BloomFilter::with_capacity(n, p);
        let mk = |rng: &mut rand_chacha::ChaCha8Rng| {
            KeyHash((0xabcd << 48) | (rng.gen::<u64>() >> 16), rng.gen())
        };
        for _ in 0..n {
            f.add(mk(&mut rng));
        }
        let hits = (0..100_000).filter(|_| f.may_contain(mk(&mut rng))).count();
        let rate = hits as f64 / 100_000.0;
        assert!(rate <= p * 1.5, "measured {rate}");
    }

    #[test]
    fn sizing_and_no_false_negatives() {
        let f = BloomFilter::with_capacity(1000, 0.01);
        assert_eq!(f.probes(), 7);
        // 9585 bits -> 150 words.
        assert_eq!(f.bit_count(), 9600);
        let mut f = BloomFilter::with_capacity(100, 0.01);
        for i in 0..500u32 {
            f.add(KeyHash::of(&i.to_le_bytes()));
        }
        for i in 0..500u32 {
            assert!(
                f.may_contain(KeyHash::of(&i.to_le_bytes())),
                "overfilled filters still have no false negatives"
            );
        }
        let always = BloomFilter::with_capacity(10, 1.0);
        assert!(always.may_contain(KeyHash::of(b"x")));
        assert_eq!(always.size_bytes(), 0);
    }

    #[test]
    fn encode_decode() {
        let mut f = BloomFilter::with_capacity(10, 0.05);
        f.add(KeyHash::of(b"k"));
        let mut out = Vec::new();
        f.encode(&mut out);
        assert_eq!(BloomFilter::decode(&out).unwrap(), f);
        assert!(BloomFilter::decode(&out[..out.len() - 1]).is_err());
        let mut bad = out.clone();
        bad[0] = 9;
        assert!(BloomFilter::decode(&bad).is_err());
    }
}
