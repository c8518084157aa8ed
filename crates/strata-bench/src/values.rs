//! Deterministic values: the bytes every workload writes are a function of
//! (seed, partition, row, column), so a read can check content, not only
//! presence, without keeping what was written.
//!
//! Owns: the generator (SplitMix64, a fixed algorithm: the same bytes on every
//! platform and release). Pure functions; any thread.
//!
//! Invariants:
//! 1. `value_bytes` is a function of its arguments alone and returns exactly
//!    `size` bytes.
//! 2. Changing any one of seed, partition, row or column changes the bytes
//!    (the inputs are mixed through separate SplitMix rounds, not xored flat).

/// One SplitMix64 step (Vigna): a cheap, well-mixed 64-bit permutation.
pub(crate) fn splitmix(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// The value of (partition, row, column): deterministic, so reads can verify it.
pub fn value_bytes(seed: u64, partition: u64, row: u32, column: u32, size: usize) -> Vec<u8> {
    let mut state =
        splitmix(seed ^ splitmix(partition ^ splitmix(((row as u64) << 32) | column as u64)));
    let mut out = Vec::with_capacity(size + 8);
    while out.len() < size {
        state = splitmix(state);
        out.extend_from_slice(&state.to_le_bytes());
    }
    out.truncate(size);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_deterministic_and_distinct() {
        assert_eq!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 3, 4, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 3, 5, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 2, 4, 4, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(1, 3, 3, 4, 34));
        assert_ne!(value_bytes(1, 2, 3, 4, 34), value_bytes(2, 2, 3, 4, 34));
        assert_eq!(value_bytes(9, 9, 9, 9, 0).len(), 0);
        assert_eq!(value_bytes(9, 9, 9, 9, 1000).len(), 1000);
    }
}
