//! The per-sstable Bloom filter over partition keys (Cassandra's `-Filter.db`,
//! here a block inside the one sstable file).
//!
//! Contract: built once by the writer from every partition key it appends, then
//! immutable; [`BloomFilter::may_contain`] is callable from any thread. A "no" is
//! definite; a "yes" is wrong with probability at most about
//! `bloom_filter_fp_chance`.
//!
//! Two layouts, told apart by the filter's hash id (invariant 2):
//!
//! - **Blocked** (id 2, what writers choose since sstable format 7): the bit
//!   array is a run of 512-bit lines aligned to 64 bytes, one cache line each.
//!   A key's line is chosen from the hash's second half (`h2`, by a
//!   multiply-shift range reduction), and its `k` probes all fall in that line:
//!   probe 0 tests bit `x >> 23` of the line, with `x` the low 32 bits of `h1`,
//!   and each next probe multiplies `x` by `0x9e3779b9` (wrapping) first. A
//!   lookup costs one cache miss and no division, where the spread layout costs
//!   `k` misses and `k` 64-bit divisions: for a key no sstable holds this was a
//!   quarter of the read (BENCHMARKS.md, "A Bloom filter in one cache line").
//!   Keys crowd some lines more than others, so at the same bits per key the
//!   blocked filter answers "yes" wrongly a little more often; the writer sizes
//!   it from the exact false-positive chance of the layout (a Poisson sum over
//!   keys per line, [`blocked_fp_chance`]) so the table's
//!   `bloom_filter_fp_chance` still holds: 4% more bits than the spread layout
//!   at p = 0.01 (9.97 bits per key, 6 probes), 1% at 0.1, 8% at 0.001. When
//!   that would cost more than a quarter more bits (p below about 5e-5, where
//!   one line cannot hold enough probes), or `p > 0.5`, the writer uses the
//!   spread layout.
//! - **Spread** (id 1, every filter before format 7): the textbook optimum, as
//!   Cassandra's `BloomCalculations`: `m = -n ln p / (ln 2)^2` bits, rounded up
//!   to whole 64-bit words, and `k = round(m / n * ln 2)` probes, clamped to
//!   1..=[`MAX_PROBES`]. Probe `i` sets bit `(h1 + i * h2) mod m` (double
//!   hashing, Kirsch & Mitzenmacher).
//!
//! `h1` is the partition token, and an sstable of a token-range shard (LCS,
//! UCS) holds keys whose tokens share their high bits. Neither layout lets
//! those bits choose where a key goes: the spread one reduces with `mod` (the
//! low bits), the blocked one picks the line from `h2` and the probes from
//! `h1`'s low 32 bits.
//!
//! Invariants:
//! 1. Every key added makes `may_contain` true forever (no false negatives).
//! 2. The serialized form records the hash and layout id, `k` and the size; a
//!    reader never assumes them. Ids are never renumbered: 1 = Murmur3 x64 128,
//!    seed 0, Cassandra's variant (tail bytes sign-extended), spread; 2 = the
//!    same hash, blocked.
//! 3. `fp_chance >= 1` builds an empty filter that answers "maybe" to everything
//!    (Cassandra's `AlwaysPresentFilter`).
//!
//! Sizing: a writer's [`FilterBuilder`] keeps the key hashes and sizes the
//! filter at the file's end, for the keys it holds, up to
//! [`EXACT_SIZING_MAX_KEYS`] (64 MiB of hashes); past that, from the
//! caller's estimate. A compaction's estimate counts a key once per input
//! holding it and adds a margin per split output, so at 20M keys its
//! filters came out 1.5 bytes per key where 1.25 would do (BENCHMARKS.md,
//! "Bloom filters sized from the keys"). RocksDB sizes its filters the same
//! way, at the end of the file.

use crate::encoding::{put_varint, Reader};

/// On-disk id of the spread layout over Murmur3 (invariant 2).
pub const HASH_MURMUR3_X64_128: u8 = 1;
/// On-disk id of the blocked layout over the same Murmur3 (invariant 2).
pub const HASH_MURMUR3_X64_128_BLOCKED: u8 = 2;
/// More probes cost more than they save: at p = 1e-6, k = 20.
pub const MAX_PROBES: u32 = 30;
/// Bits in one line of the blocked layout: a 64-byte cache line.
pub const LINE_BITS: u64 = 512;
/// The blocked layout is chosen only while it needs at most this many times
/// the spread layout's bits for the same false-positive chance.
const BLOCKED_MAX_EXTRA: f64 = 1.25;
/// Above this chance the blocked layout's sizing sum would need hundreds of
/// keys per line (and such a filter saves little anyway): spread.
const BLOCKED_MAX_FP_CHANCE: f64 = 0.5;
/// The multiplier that moves a blocked probe to the next bit (the 32-bit
/// golden ratio: odd, so every `x` maps to a distinct next one).
const PROBE_STEP: u32 = 0x9e37_79b9;

/// The filter hashes with the partitioner's Murmur3 (`h1` is the token), so the
/// hash ids 1 and 2 written in every filter mean exactly
/// `token::murmur3_x64_128(key, 0)`; `murmur3_h1_matches_cassandra_tokens` pins
/// it, because changing it would make every existing filter answer "no" for
/// present keys.
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

/// Which layout a filter uses (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Layout {
    Spread,
    Blocked,
}

/// One line of the blocked layout; the alignment keeps it in one cache line.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(C, align(64))]
struct Line([u64; 8]);

#[derive(Clone, Debug, PartialEq, Eq)]
enum Bits {
    Spread(Vec<u64>),
    Blocked(Vec<Line>),
}

/// Keys a [`FilterBuilder`] holds hashes for (16 bytes each, 64 MiB) before
/// it falls back to the caller's estimate: enough for any output a split
/// compaction or a flush writes (a 160 MB sstable of 80-byte pairs holds 2M
/// keys), while one huge unsplit output (a major compaction of a large STCS
/// table) does not hold gigabytes.
pub const EXACT_SIZING_MAX_KEYS: usize = 1 << 22;

/// Builds one sstable's filter from the hashes of the keys it is given
/// (the module's "Sizing").
#[derive(Debug)]
pub struct FilterBuilder {
    fp_chance: f64,
    expected_keys: u64,
    max_pending: usize,
    /// The hashes so far, while the filter can still be sized exactly.
    pending: Vec<KeyHash>,
    /// The filter once it is sized from the estimate (past the cap, or a
    /// disabled filter from the start), fed as keys arrive.
    sized: Option<BloomFilter>,
}

impl FilterBuilder {
    /// `expected_keys` is only used past [`EXACT_SIZING_MAX_KEYS`] keys.
    pub fn new(expected_keys: u64, fp_chance: f64) -> FilterBuilder {
        FilterBuilder::with_cap(expected_keys, fp_chance, EXACT_SIZING_MAX_KEYS)
    }

    fn with_cap(expected_keys: u64, fp_chance: f64, max_pending: usize) -> FilterBuilder {
        // A disabled filter (invariant 3) has nothing to size.
        let disabled = fp_chance >= 1.0 || fp_chance.is_nan();
        // Reserved up front, for the estimate: a large vector's untouched
        // pages cost no memory, and growing by doubling would copy it and hold
        // both copies for a moment.
        let reserve = if disabled {
            0
        } else {
            usize::try_from(expected_keys).map_or(max_pending, |n| n.min(max_pending))
        };
        FilterBuilder {
            fp_chance,
            expected_keys,
            max_pending,
            pending: Vec::with_capacity(reserve),
            sized: disabled.then(|| BloomFilter::with_capacity(0, fp_chance)),
        }
    }

    pub fn add(&mut self, h: KeyHash) {
        if let Some(f) = self.sized.as_mut() {
            f.add(h);
            return;
        }
        self.pending.push(h);
        if self.pending.len() >= self.max_pending {
            let n = self.expected_keys.max(self.pending.len() as u64);
            self.sized = Some(self.filter_of_pending(n));
        }
    }

    /// The filter over every key added; the builder is empty afterwards.
    pub fn finish(&mut self) -> BloomFilter {
        match self.sized.take() {
            Some(f) => f,
            None => self.filter_of_pending(self.pending.len() as u64),
        }
    }

    /// A filter sized for `keys` holding the pending hashes, which it frees.
    fn filter_of_pending(&mut self, keys: u64) -> BloomFilter {
        let mut f = BloomFilter::with_capacity(keys, self.fp_chance);
        for h in std::mem::take(&mut self.pending) {
            f.add(h);
        }
        f
    }
}

/// A Bloom filter with `k` probes in one of the two layouts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BloomFilter {
    bits: Bits,
    probes: u32,
}

/// Bits per key and probes of the spread layout for chance `p`.
fn spread_sizing(p: f64) -> (f64, u32) {
    let ln2 = std::f64::consts::LN_2;
    let bits_per_key = -p.ln() / (ln2 * ln2);
    let probes = (bits_per_key * ln2).round().clamp(1.0, MAX_PROBES as f64) as u32;
    (bits_per_key, probes)
}

/// The false-positive chance of a blocked filter with `bits_per_key` bits per
/// key and `probes` probes: keys per line are Poisson with mean
/// `LINE_BITS / bits_per_key`, and a line holding `j` keys has each bit set
/// with chance `1 - (1 - 1/512)^(k j)`; an absent key is wrongly admitted when
/// all its `k` probes of its line are set. Exact for uniform probes, which the
/// multiplicative step approximates (measured in the tests below).
pub fn blocked_fp_chance(bits_per_key: f64, probes: u32) -> f64 {
    let mean = LINE_BITS as f64 / bits_per_key;
    let keep = 1.0 - 1.0 / LINE_BITS as f64;
    let last = (mean + 12.0 * mean.sqrt() + 30.0).ceil() as u32;
    let mut chance_of_j = (-mean).exp(); // P(j = 0)
    let mut fp = 0.0;
    for j in 0..=last {
        if j > 0 {
            chance_of_j *= mean / j as f64;
        }
        let set = 1.0 - keep.powf((probes * j) as f64);
        fp += chance_of_j * set.powi(probes as i32);
    }
    fp
}

/// Bits per key and probes of the blocked layout for chance `p`, or `None`
/// when the spread layout should be used (module docs).
fn blocked_sizing(p: f64) -> Option<(f64, u32)> {
    if p > BLOCKED_MAX_FP_CHANCE {
        return None;
    }
    let (spread_bits, _) = spread_sizing(p);
    let mut bits = spread_bits;
    // One percent more bits per step: at most 23 steps before giving up.
    while bits <= spread_bits * BLOCKED_MAX_EXTRA {
        let ideal = (bits * std::f64::consts::LN_2).round() as u32;
        // A crowded line prefers a probe or two fewer than the textbook k.
        let best = (ideal.saturating_sub(2).max(1)..=ideal.clamp(1, MAX_PROBES))
            .map(|k| (blocked_fp_chance(bits, k), k))
            .min_by(|a, b| a.0.total_cmp(&b.0));
        if let Some((fp, k)) = best {
            if fp <= p {
                return Some((bits, k));
            }
        }
        bits *= 1.01;
    }
    None
}

/// The bits a spread filter of `words` words sets for `h`, in probe order:
/// `(h1 + i * h2) mod m`, wrapping (the layout's definition; module docs).
#[inline]
fn spread_bits(h: KeyHash, probes: u32, words: usize) -> impl Iterator<Item = usize> {
    let m = words as u64 * 64;
    (0..probes as u64).map(move |i| (h.0.wrapping_add(i.wrapping_mul(h.1)) % m) as usize)
}

/// The bits of its line a blocked filter sets for `h`, in probe order: the
/// top 9 bits of `x`, `x` starting at `h1`'s low 32 bits and multiplied by
/// [`PROBE_STEP`] before each next probe (module docs).
#[inline]
fn line_bits(h: KeyHash, probes: u32) -> impl Iterator<Item = usize> {
    let mut x = h.0 as u32;
    (0..probes).map(move |_| {
        let b = (x >> 23) as usize;
        x = x.wrapping_mul(PROBE_STEP);
        b
    })
}

impl BloomFilter {
    /// A filter sized for `expected_keys` at false-positive chance
    /// `fp_chance`, in the blocked layout where that layout can meet the
    /// chance within a quarter more bits, else in the spread one.
    pub fn with_capacity(expected_keys: u64, fp_chance: f64) -> BloomFilter {
        BloomFilter::with_layout(expected_keys, fp_chance, Layout::Blocked)
    }

    /// As [`with_capacity`](Self::with_capacity) in the given layout; a
    /// blocked filter the chance does not suit is built spread.
    pub fn with_layout(expected_keys: u64, fp_chance: f64, layout: Layout) -> BloomFilter {
        if fp_chance >= 1.0 || fp_chance.is_nan() {
            return BloomFilter {
                bits: Bits::Spread(Vec::new()),
                probes: 0,
            }; // invariant 3
        }
        let n = expected_keys.max(1) as f64;
        let p = fp_chance.max(1e-12);
        if layout == Layout::Blocked {
            if let Some((bits_per_key, probes)) = blocked_sizing(p) {
                let lines = ((n * bits_per_key) / LINE_BITS as f64).ceil().max(1.0) as usize;
                return BloomFilter {
                    bits: Bits::Blocked(vec![Line([0; 8]); lines]),
                    probes,
                };
            }
        }
        let (bits_per_key, _) = spread_sizing(p);
        let bits = (n * bits_per_key).ceil().max(64.0);
        let words = (bits / 64.0).ceil() as usize;
        // k from the *requested* m (before rounding up to words), as the formula says.
        let probes = ((bits / n) * std::f64::consts::LN_2)
            .round()
            .clamp(1.0, MAX_PROBES as f64) as u32;
        BloomFilter {
            bits: Bits::Spread(vec![0; words]),
            probes,
        }
    }

    pub fn layout(&self) -> Layout {
        match self.bits {
            Bits::Spread(_) => Layout::Spread,
            Bits::Blocked(_) => Layout::Blocked,
        }
    }

    pub fn bit_count(&self) -> u64 {
        match &self.bits {
            Bits::Spread(words) => words.len() as u64 * 64,
            Bits::Blocked(lines) => lines.len() as u64 * LINE_BITS,
        }
    }

    pub fn probes(&self) -> u32 {
        self.probes
    }

    /// Bytes of the bit array (tablestats' "Bloom filter space used").
    pub fn size_bytes(&self) -> u64 {
        self.bit_count() / 8
    }

    /// The line a key's probes fall in: `h2` reduced to `0..lines` by its
    /// high bits (a multiply, not a division).
    #[inline]
    fn line_index(h: KeyHash, lines: usize) -> usize {
        ((h.1 as u128 * lines as u128) >> 64) as usize
    }

    pub fn add(&mut self, h: KeyHash) {
        let probes = self.probes;
        match &mut self.bits {
            Bits::Spread(words) => {
                if words.is_empty() {
                    return;
                }
                for b in spread_bits(h, probes, words.len()) {
                    words[b / 64] |= 1 << (b % 64);
                }
            }
            Bits::Blocked(lines) => {
                let i = Self::line_index(h, lines.len());
                let line = &mut lines[i].0;
                for b in line_bits(h, probes) {
                    line[b / 64] |= 1 << (b % 64);
                }
            }
        }
    }

    /// False only if the key was never added (invariant 1).
    #[inline]
    pub fn may_contain(&self, h: KeyHash) -> bool {
        let set = |words: &[u64], b: usize| words[b / 64] & (1 << (b % 64)) != 0;
        match &self.bits {
            Bits::Blocked(lines) => {
                let line = &lines[Self::line_index(h, lines.len())].0;
                // Every probe is tested (no early exit): the line is one cache
                // line, so the branch would cost more than the few ANDs.
                line_bits(h, self.probes).fold(true, |all, b| all & set(line, b))
            }
            Bits::Spread(words) => {
                words.is_empty() || spread_bits(h, self.probes, words.len()).all(|b| set(words, b))
            }
        }
    }

    /// `[hash id u8][k u8][units varint][units × (u64 LE) or units × (8 × u64 LE)]`:
    /// words for the spread layout, 64-byte lines for the blocked one.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let (id, units, words): (u8, usize, Box<dyn Iterator<Item = &u64>>) = match &self.bits {
            Bits::Spread(words) => (HASH_MURMUR3_X64_128, words.len(), Box::new(words.iter())),
            Bits::Blocked(lines) => (
                HASH_MURMUR3_X64_128_BLOCKED,
                lines.len(),
                Box::new(lines.iter().flat_map(|line| line.0.iter())),
            ),
        };
        out.push(id);
        out.push(self.probes as u8);
        put_varint(out, units as u64);
        out.reserve(self.size_bytes() as usize);
        for w in words {
            out.extend_from_slice(&w.to_le_bytes());
        }
    }

    pub fn decode(bytes: &[u8]) -> Result<BloomFilter, String> {
        let mut r = Reader::new(bytes);
        let hash = r.u8().map_err(|e| e.0.to_string())?;
        let unit_bytes = match hash {
            HASH_MURMUR3_X64_128 => 8,
            HASH_MURMUR3_X64_128_BLOCKED => 64,
            _ => return Err(format!("unknown bloom filter hash id {hash}")),
        };
        let probes = r.u8().map_err(|e| e.0.to_string())? as u32;
        let n = r.varint_usize().map_err(|e| e.0.to_string())?;
        // A blocked filter always has a line and a probe (an "always maybe"
        // filter is written spread with no words).
        let blocked = hash == HASH_MURMUR3_X64_128_BLOCKED;
        if probes > MAX_PROBES || (n > 0 && probes == 0) || (blocked && n == 0) {
            return Err(format!("bloom filter with {probes} probes over {n} units"));
        }
        if r.remaining() != n.saturating_mul(unit_bytes) {
            return Err(format!(
                "bloom filter of {n} {}-byte units but {} bytes of bits",
                unit_bytes,
                r.remaining()
            ));
        }
        let mut words = r
            .rest()
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]));
        let bits = if blocked {
            let mut lines = Vec::with_capacity(n);
            for _ in 0..n {
                let mut line = Line([0; 8]);
                for w in line.0.iter_mut() {
                    *w = words.next().unwrap_or(0);
                }
                lines.push(line);
            }
            Bits::Blocked(lines)
        } else {
            Bits::Spread(words.collect())
        };
        Ok(BloomFilter { bits, probes })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    const LAYOUTS: [Layout; 2] = [Layout::Spread, Layout::Blocked];

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

    fn measured_fp_rate(layout: Layout, p: f64, n: u64, seed: u64) -> f64 {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
        let mut f = BloomFilter::with_layout(n, p, layout);
        assert_eq!(f.layout(), layout);
        for i in 0..n {
            f.add(KeyHash::of(
                format!("present-{i}-{}", rng.gen::<u32>()).as_bytes(),
            ));
        }
        let trials = 400_000u64;
        let hits = (0..trials)
            .filter(|i| f.may_contain(KeyHash::of(format!("absent-{i}").as_bytes())))
            .count();
        hits as f64 / trials as f64
    }

    #[test]
    fn false_positive_rate_is_near_target() {
        for layout in LAYOUTS {
            for (p, seed) in [(0.01, 1), (0.1, 2), (0.001, 4)] {
                let rate = measured_fp_rate(layout, p, 50_000, seed);
                assert!(
                    rate <= p * 1.25 && rate >= p / 2.0,
                    "{layout:?}: target {p}, measured {rate}"
                );
            }
        }
    }

    #[test]
    fn the_blocked_sizing_sum_matches_a_filter() {
        // The Poisson sum the writer sizes with predicts what a built filter
        // measures, so the multiplicative probe step behaves as uniform probes.
        for (bits_per_key, probes, seed) in [(8.0, 5, 5), (10.0, 6, 6), (5.0, 3, 7)] {
            let n = 40_000u64;
            let lines = (n as f64 * bits_per_key / LINE_BITS as f64).ceil() as usize;
            let mut f = BloomFilter {
                bits: Bits::Blocked(vec![Line([0; 8]); lines]),
                probes,
            };
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
            for _ in 0..n {
                f.add(KeyHash(rng.gen(), rng.gen()));
            }
            let trials = 400_000;
            let hits = (0..trials)
                .filter(|_| f.may_contain(KeyHash(rng.gen(), rng.gen())))
                .count();
            let measured = hits as f64 / trials as f64;
            let predicted = blocked_fp_chance(bits_per_key, probes);
            assert!(
                (measured / predicted - 1.0).abs() < 0.1,
                "{bits_per_key} bits, {probes} probes: predicted {predicted}, measured {measured}"
            );
        }
    }

    #[test]
    fn narrow_token_range_keeps_the_rate() {
        // Keys whose h1 share their high 16 bits, as in a token-range shard.
        for layout in LAYOUTS {
            let p = 0.01;
            let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
            let n = 20_000;
            let mut f = BloomFilter::with_layout(n, p, layout);
            let mk = |rng: &mut rand_chacha::ChaCha8Rng| {
                KeyHash((0xabcd << 48) | (rng.gen::<u64>() >> 16), rng.gen())
            };
            for _ in 0..n {
                f.add(mk(&mut rng));
            }
            let hits = (0..100_000).filter(|_| f.may_contain(mk(&mut rng))).count();
            let rate = hits as f64 / 100_000.0;
            assert!(rate <= p * 1.5, "{layout:?}: measured {rate}");
        }
    }

    #[test]
    fn a_blocked_key_sets_bits_in_one_cache_line_only() {
        let mut f = BloomFilter::with_capacity(10_000, 0.01);
        assert_eq!(f.layout(), Layout::Blocked);
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(8);
        for _ in 0..200 {
            let before = f.clone();
            let h = KeyHash(rng.gen(), rng.gen());
            f.add(h);
            let (Bits::Blocked(old), Bits::Blocked(new)) = (&before.bits, &f.bits) else {
                panic!("blocked");
            };
            let changed: Vec<usize> = (0..old.len()).filter(|&i| old[i] != new[i]).collect();
            assert!(changed.len() <= 1, "{changed:?}");
            assert!(f.may_contain(h));
        }
        // And a line is one aligned cache line.
        assert_eq!(std::mem::size_of::<Line>(), 64);
        assert_eq!(std::mem::align_of::<Line>(), 64);
    }

    #[test]
    fn writers_choose_blocked_where_it_meets_the_chance_cheaply() {
        let n = 1000;
        for (p, layout) in [
            (0.5, Layout::Blocked),
            (0.1, Layout::Blocked),
            (0.01, Layout::Blocked),
            (1e-4, Layout::Blocked),
            (1e-5, Layout::Spread),
            (1e-6, Layout::Spread),
            (0.0, Layout::Spread),
            (0.9, Layout::Spread),
        ] {
            let f = BloomFilter::with_capacity(n, p);
            assert_eq!(f.layout(), layout, "p = {p}");
            if layout == Layout::Blocked {
                let spread = BloomFilter::with_layout(n, p, Layout::Spread);
                let extra = f.bit_count() as f64 / spread.bit_count() as f64;
                assert!(extra <= BLOCKED_MAX_EXTRA + 0.05, "p = {p}: {extra}");
            }
        }
        // p = 0.01: 9.97 bits per key and 6 probes (module docs).
        let f = BloomFilter::with_capacity(100_000, 0.01);
        assert_eq!(f.probes(), 6);
        assert_eq!(f.bit_count(), 1949 * LINE_BITS);
    }

    #[test]
    fn sizing_and_no_false_negatives() {
        let f = BloomFilter::with_layout(1000, 0.01, Layout::Spread);
        assert_eq!(f.probes(), 7);
        // 9585 bits -> 150 words.
        assert_eq!(f.bit_count(), 9600);
        for layout in LAYOUTS {
            let mut f = BloomFilter::with_layout(100, 0.01, layout);
            for i in 0..500u32 {
                f.add(KeyHash::of(&i.to_le_bytes()));
            }
            for i in 0..500u32 {
                assert!(
                    f.may_contain(KeyHash::of(&i.to_le_bytes())),
                    "{layout:?}: overfilled filters still have no false negatives"
                );
            }
            // One key: a single line (or 64 bits), never none.
            let mut one = BloomFilter::with_layout(0, 0.01, layout);
            one.add(KeyHash::of(b"only"));
            assert!(one.may_contain(KeyHash::of(b"only")));
        }
        let always = BloomFilter::with_capacity(10, 1.0);
        assert!(always.may_contain(KeyHash::of(b"x")));
        assert_eq!(always.size_bytes(), 0);
    }

    #[test]
    fn encode_decode() {
        for layout in LAYOUTS {
            let mut f = BloomFilter::with_layout(300, 0.05, layout);
            for i in 0..300u32 {
                f.add(KeyHash::of(&i.to_be_bytes()));
            }
            let mut out = Vec::new();
            f.encode(&mut out);
            let back = BloomFilter::decode(&out).unwrap();
            assert_eq!(back, f);
            assert!((0..300u32).all(|i| back.may_contain(KeyHash::of(&i.to_be_bytes()))));
            assert!(BloomFilter::decode(&out[..out.len() - 1]).is_err());
            let mut bad = out.clone();
            bad[0] = 9;
            assert!(BloomFilter::decode(&bad).is_err());
            let mut no_probes = out.clone();
            no_probes[1] = 0;
            assert!(BloomFilter::decode(&no_probes).is_err());
        }
        // A spread filter's bytes are not a blocked filter's: the unit sizes
        // differ, so relabelling one as the other is refused.
        let mut f = BloomFilter::with_layout(300, 0.05, Layout::Spread);
        f.add(KeyHash::of(b"k"));
        let mut out = Vec::new();
        f.encode(&mut out);
        out[0] = HASH_MURMUR3_X64_128_BLOCKED;
        assert!(BloomFilter::decode(&out).is_err());
        // An empty blocked filter is refused; the empty spread one is "always maybe".
        assert!(BloomFilter::decode(&[HASH_MURMUR3_X64_128_BLOCKED, 0, 0]).is_err());
        let always = BloomFilter::decode(&[HASH_MURMUR3_X64_128, 0, 0]).unwrap();
        assert!(always.may_contain(KeyHash::of(b"x")));
    }

    #[test]
    fn spread_filters_keep_their_bits() {
        // The spread layout's bit positions are on disk in every filter before
        // format 7: pinned, so a change to its probing cannot pass unseen.
        let mut f = BloomFilter::with_layout(13, 0.1, Layout::Spread);
        f.add(KeyHash(5, 7));
        let mut out = Vec::new();
        f.encode(&mut out);
        // m = 64 bits (one word, 62.3 asked), k = round(64 / 13 * ln 2) = 3:
        // bits 5, 12 and 19.
        assert_eq!(f.probes(), 3);
        assert_eq!(&out[..3], &[1, 3, 1]);
        assert_eq!(
            u64::from_le_bytes(out[3..11].try_into().unwrap()),
            (1 << 5) | (1 << 12) | (1 << 19)
        );
    }

    #[test]
    fn builder_sizes_from_the_keys_it_got_until_its_cap() {
        let keys: Vec<KeyHash> = (0..5_000u32)
            .map(|i| KeyHash::of(&i.to_be_bytes()))
            .collect();
        // An estimate three times too high: the filter is the one the
        // actual count asks for, and holds every key.
        let mut b = FilterBuilder::new(15_000, 0.01);
        keys.iter().for_each(|&h| b.add(h));
        let f = b.finish();
        assert_eq!(f, {
            let mut exact = BloomFilter::with_capacity(5_000, 0.01);
            keys.iter().for_each(|&h| exact.add(h));
            exact
        });
        assert!(keys.iter().all(|&h| f.may_contain(h)));
        // Past the cap, the estimate sizes it (never below the keys seen at
        // the cap), and it still holds every key.
        let mut b = FilterBuilder::with_cap(15_000, 0.01, 1_000);
        keys.iter().for_each(|&h| b.add(h));
        let f = b.finish();
        assert_eq!(
            f.size_bytes(),
            BloomFilter::with_capacity(15_000, 0.01).size_bytes()
        );
        assert!(keys.iter().all(|&h| f.may_contain(h)));
        // A disabled filter holds nothing and answers "maybe".
        let mut b = FilterBuilder::new(15_000, 1.0);
        keys.iter().for_each(|&h| b.add(h));
        let f = b.finish();
        assert_eq!(f.size_bytes(), 0);
        assert!(f.may_contain(KeyHash::of(b"absent")));
    }
}
