//! A multiply-xor hasher for in-process maps keyed by integers the engine
//! chooses itself (row sizes, `(reader serial, chunk index)` pairs).
//!
//! Contract: deterministic, fast for integer keys, well mixed in both the top
//! bits (hashbrown's control bytes) and the bottom ones (its bucket index).
//! Not a defence against chosen keys, as SipHash is: use it only where no
//! outside input picks the keys.

/// `HashMap<K, V, IntHash>`.
pub type IntHash = std::hash::BuildHasherDefault<IntHasher>;

const K: u64 = 0x9E37_79B9_7F4A_7C15;

#[derive(Default)]
pub struct IntHasher(u64);

impl std::hash::Hasher for IntHasher {
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(b)).wrapping_mul(K);
        }
    }

    fn write_u32(&mut self, n: u32) {
        self.write_u64(u64::from(n));
    }

    fn write_u64(&mut self, n: u64) {
        self.0 = (self.0.rotate_left(5) ^ n).wrapping_mul(K);
    }

    fn write_usize(&mut self, n: usize) {
        self.write_u64(n as u64);
    }

    fn finish(&self) -> u64 {
        // Fold the well-mixed high half down into the bucket bits as well.
        self.0 ^ (self.0 >> 32)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::hash::BuildHasher;

    #[test]
    fn consecutive_keys_spread_over_buckets_and_control_bytes() {
        let h = IntHash::default();
        let mut low = std::collections::HashSet::new();
        let mut top = std::collections::HashSet::new();
        for i in 0..4096u32 {
            let x = h.hash_one((7u64, i));
            low.insert(x & 4095);
            top.insert(x >> 57);
        }
        assert!(low.len() > 2_500, "bucket bits: {} of 4096", low.len());
        assert_eq!(top.len(), 128, "every 7-bit control value is used");
    }
}
