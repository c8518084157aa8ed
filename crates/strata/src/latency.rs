//! A lock-free latency histogram for a table's reads and writes
//! (`tablehistograms`): four buckets per power of two, so a percentile is
//! known to within 19%, about Cassandra's `EstimatedHistogram` (buckets 1.2
//! apart).
//!
//! Contract:
//! 1. `record` is one relaxed atomic add: cheap enough for every read and
//!    write.
//! 2. A percentile is the upper bound of the bucket that holds it, never
//!    below the true value.
//! 3. Values from 0 to u64::MAX are kept (the last bucket is open-ended).

use std::sync::atomic::{AtomicU64, Ordering};

/// Sub-buckets per power of two.
const SUB: usize = 4;
/// Values 0..SUB each have their own bucket, then SUB per power of two.
pub const BUCKETS: usize = SUB + (64 - 2) * SUB;

#[derive(Debug)]
pub struct LatencyHistogram {
    counts: [AtomicU64; BUCKETS],
}

impl Default for LatencyHistogram {
    fn default() -> Self {
        LatencyHistogram {
            counts: std::array::from_fn(|_| AtomicU64::new(0)),
        }
    }
}

fn bucket_of(v: u64) -> usize {
    if v < SUB as u64 {
        return v as usize;
    }
    let exp = 63 - v.leading_zeros() as usize; // >= 2
    let sub = ((v >> (exp - 2)) & 3) as usize;
    SUB + (exp - 2) * SUB + sub
}

/// The largest value bucket `b` holds.
fn bucket_high(b: usize) -> u64 {
    if b < SUB {
        return b as u64;
    }
    let exp = (b - SUB) / SUB + 2;
    let sub = ((b - SUB) % SUB) as u64;
    let low = (4 + sub) << (exp - 2);
    let width = 1u64 << (exp - 2);
    low.saturating_add(width - 1)
}

impl LatencyHistogram {
    pub fn record(&self, v: u64) {
        self.counts[bucket_of(v)].fetch_add(1, Ordering::Relaxed);
    }

    /// The counts now (each bucket read once; a concurrent record may land
    /// in either snapshot).
    pub fn snapshot(&self) -> Vec<u64> {
        self.counts
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .collect()
    }
}

/// Percentile `q` (0..=1) of a snapshot: its bucket's upper bound (contract
/// 2); `None` when empty.
pub fn percentile(counts: &[u64], q: f64) -> Option<u64> {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return None;
    }
    let target = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
    let mut seen = 0;
    for (b, c) in counts.iter().enumerate() {
        seen += c;
        if seen >= target {
            return Some(bucket_high(b));
        }
    }
    None
}

/// The smallest recorded value's bucket bound.
pub fn min(counts: &[u64]) -> Option<u64> {
    counts.iter().position(|&c| c > 0).map(bucket_high)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_cover_every_value_in_order_within_a_quarter() {
        let mut last = 0;
        for b in 0..BUCKETS {
            let high = bucket_high(b);
            assert!(b == 0 || high > last, "bucket {b}");
            last = high;
        }
        assert_eq!(bucket_high(BUCKETS - 1), u64::MAX);
        for v in [
            0u64,
            1,
            3,
            4,
            5,
            7,
            8,
            100,
            1000,
            123_456,
            u64::MAX / 3,
            u64::MAX,
        ] {
            let b = bucket_of(v);
            assert!(bucket_high(b) >= v, "{v}");
            assert!(b == 0 || bucket_high(b - 1) < v, "{v}");
            assert!(bucket_high(b) as f64 <= (v as f64) * 1.25 + 1.0, "{v}");
        }
    }

    #[test]
    fn percentiles_are_bucket_bounds_at_or_above_the_value() {
        let h = LatencyHistogram::default();
        assert_eq!(percentile(&h.snapshot(), 0.5), None);
        for v in 1..=100u64 {
            h.record(v);
        }
        let s = h.snapshot();
        let p50 = percentile(&s, 0.5).unwrap();
        assert!((50..=63).contains(&p50), "{p50}");
        let p99 = percentile(&s, 0.99).unwrap();
        assert!((99..=111).contains(&p99), "{p99}");
        assert_eq!(min(&s), Some(1));
        assert!(percentile(&s, 1.0).unwrap() >= 100);
    }
}
