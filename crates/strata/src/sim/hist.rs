//! Bytes per write-time bucket of one simulated sstable: how the simulator knows
//! what a merge keeps and what expiry removes, without tracking cells.
//!
//! A bucket `b` holds the bytes written in `[b * width, (b + 1) * width)` seconds
//! since the start of the run. A bucket is purgeable once its *newest* possible
//! write is: `(b + 1) * width <= cutoff`, where `cutoff = now - ttl - gc_grace`.
//! Judging by the newest write delays each purge by at most one bucket width
//! (the default width is `ttl / 256`, 11 minutes for a 2-day TTL), and never
//! purges data early.
//!
//! Invariants:
//! 1. Buckets are sorted by index, distinct, with positive byte counts; `cum` is
//!    their running sum (so [`Hist::share_purgeable`] is a binary search, run
//!    once per sstable per simulated instant).
//! 2. `min_write <= max_write`, both within the buckets' span: they are the exact
//!    write-time bounds for flushes and conservative bounds after merges.

/// Write-time histogram (module docs). Immutable once built.
#[derive(Clone, Debug, PartialEq)]
pub struct Hist {
    width: f64,
    buckets: Vec<(i64, f64)>,
    cum: Vec<f64>,
    min_write: f64,
    max_write: f64,
}

impl Hist {
    fn from_sorted(width: f64, buckets: Vec<(i64, f64)>, min_write: f64, max_write: f64) -> Hist {
        let mut cum = Vec::with_capacity(buckets.len());
        let mut total = 0.0;
        for (_, b) in &buckets {
            total += b;
            cum.push(total);
        }
        Hist {
            width,
            buckets,
            cum,
            min_write,
            max_write,
        }
    }

    /// `bytes` written at a constant rate over `[from, to)`.
    pub fn uniform(from: f64, to: f64, bytes: f64, width: f64) -> Hist {
        let span = (to - from).max(f64::MIN_POSITIVE);
        let first = (from / width).floor() as i64;
        let last = ((to / width).ceil() as i64 - 1).max(first);
        let mut buckets = Vec::new();
        for b in first..=last {
            let lo = (b as f64 * width).max(from);
            let hi = ((b + 1) as f64 * width).min(to);
            let share = if to > from {
                (hi - lo).max(0.0) / span
            } else {
                1.0
            };
            if share > 0.0 {
                buckets.push((b, bytes * share));
            }
        }
        Hist::from_sorted(width, buckets, from, to.max(from))
    }

    /// The sum of `parts` (all of the same width).
    pub fn merge(parts: &[&Hist]) -> Hist {
        let weighted: Vec<(&Hist, f64)> = parts.iter().map(|&h| (h, 1.0)).collect();
        Hist::merge_weighted(&weighted)
    }

    /// The sum of each part times its weight (a share of each input sstable:
    /// what one merge output holds of it).
    pub fn merge_weighted(parts: &[(&Hist, f64)]) -> Hist {
        let width = parts.first().map_or(1.0, |(h, _)| h.width);
        let mut all: Vec<(i64, f64)> = parts
            .iter()
            .filter(|&&(_, w)| w > 0.0)
            .flat_map(|&(h, w)| h.buckets.iter().map(move |&(b, v)| (b, v * w)))
            .collect();
        all.sort_unstable_by_key(|&(b, _)| b);
        let mut buckets: Vec<(i64, f64)> = Vec::with_capacity(all.len());
        for (b, bytes) in all {
            match buckets.last_mut() {
                Some(last) if last.0 == b => last.1 += bytes,
                _ => buckets.push((b, bytes)),
            }
        }
        let min_write = parts
            .iter()
            .filter(|&&(_, w)| w > 0.0)
            .map(|(h, _)| h.min_write)
            .fold(f64::INFINITY, f64::min);
        let max_write = parts
            .iter()
            .filter(|&&(_, w)| w > 0.0)
            .map(|(h, _)| h.max_write)
            .fold(f64::NEG_INFINITY, f64::max);
        if min_write > max_write {
            return Hist::from_sorted(width, Vec::new(), 0.0, 0.0);
        }
        Hist::from_sorted(width, buckets, min_write, max_write)
    }

    /// The buckets that are not purgeable at `cutoff`; the write-time bounds
    /// shrink to the live buckets.
    pub fn without_purgeable(&self, cutoff: f64) -> Hist {
        let keep = self.first_live(cutoff);
        let buckets = self.buckets[keep..].to_vec();
        let (min_write, max_write) = match (buckets.first(), buckets.last()) {
            (Some(f), Some(l)) => (
                self.min_write.max(f.0 as f64 * self.width),
                self.max_write.min((l.0 + 1) as f64 * self.width),
            ),
            _ => (self.min_write, self.max_write),
        };
        Hist::from_sorted(self.width, buckets, min_write, max_write.max(min_write))
    }

    /// Index of the first bucket that is not purgeable at `cutoff`.
    fn first_live(&self, cutoff: f64) -> usize {
        self.buckets
            .partition_point(|&(b, _)| (b + 1) as f64 * self.width <= cutoff)
    }

    /// Share of the bytes purgeable at `cutoff`, 0..=1.
    pub fn share_purgeable(&self, cutoff: f64) -> f64 {
        let total = self.total();
        let k = self.first_live(cutoff);
        if k == 0 || total <= 0.0 {
            return 0.0;
        }
        (self.cum[k - 1] / total).min(1.0)
    }

    /// Every bucket times `factor` (an output's share of a merge).
    pub fn scaled(&self, factor: f64) -> Hist {
        let buckets = self.buckets.iter().map(|&(b, v)| (b, v * factor)).collect();
        Hist::from_sorted(self.width, buckets, self.min_write, self.max_write)
    }

    pub fn total(&self) -> f64 {
        self.cum.last().copied().unwrap_or(0.0)
    }

    /// `(min, max)` write time, seconds since the start.
    pub fn write_range(&self) -> (f64, f64) {
        (self.min_write, self.max_write)
    }

    pub fn buckets(&self) -> usize {
        self.buckets.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uniform_merge_purge_scale() {
        let a = Hist::uniform(0.0, 100.0, 1000.0, 30.0);
        // Buckets [0,30) [30,60) [60,90) [90,120): 300, 300, 300, 100.
        assert_eq!(a.buckets(), 4);
        assert!((a.total() - 1000.0).abs() < 1e-9);
        let b = Hist::uniform(100.0, 130.0, 300.0, 30.0);
        let m = Hist::merge(&[&a, &b]);
        assert_eq!(m.buckets(), 5);
        assert!((m.total() - 1300.0).abs() < 1e-9);
        assert_eq!(m.write_range(), (0.0, 130.0));
        // Cutoff 60: buckets 0 and 1 (newest write < 60) are purgeable.
        assert!((m.share_purgeable(60.0) - 600.0 / 1300.0).abs() < 1e-12);
        assert_eq!(m.share_purgeable(59.0), 300.0 / 1300.0);
        let live = m.without_purgeable(60.0);
        assert!((live.total() - 700.0).abs() < 1e-9);
        assert_eq!(live.write_range(), (60.0, 130.0));
        let half = live.scaled(0.5);
        assert!((half.total() - 350.0).abs() < 1e-9);
        // Everything purgeable: empty, no panic.
        let none = m.without_purgeable(1e9);
        assert_eq!((none.total(), none.buckets()), (0.0, 0));
        assert_eq!(m.share_purgeable(1e9), 1.0);
    }
}
