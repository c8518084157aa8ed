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

    /// The smallest cutoff above `cutoff` at which [`Hist::share_purgeable`]
    /// changes (the end of the oldest bucket live at `cutoff`), or `None` once
    /// every bucket is purgeable. Between the two it stays the same, so the
    /// simulator recomputes a ratio only when the cutoff reaches this.
    pub fn next_purge_cutoff(&self, cutoff: f64) -> Option<f64> {
        let k = self.first_live(cutoff);
        self.buckets
            .get(k)
            .map(|&(b, _)| (b + 1) as f64 * self.width)
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

    /// The histogram cut into time windows of `window` seconds, aligned so that
    /// window `w` holds run-time `t` with `floor((t + offset) / window) == w`
    /// (`offset`: the run's start in epoch seconds, so windows align to the
    /// epoch as the engine's do). A bucket goes whole to the window of its
    /// midpoint: the cut is exact when windows are a whole number of buckets, and
    /// off by at most half a bucket otherwise. Windows ascending, none empty.
    pub fn split_by_window(&self, window: f64, offset: f64) -> Vec<(i64, Hist)> {
        let mut out: Vec<(i64, Vec<(i64, f64)>)> = Vec::new();
        for &(b, bytes) in &self.buckets {
            let mid = (b as f64 + 0.5) * self.width;
            let w = ((mid + offset) / window).floor() as i64;
            match out.last_mut() {
                Some(last) if last.0 == w => last.1.push((b, bytes)),
                _ => out.push((w, vec![(b, bytes)])),
            }
        }
        out.into_iter()
            .map(|(w, buckets)| {
                let lo = buckets.first().map_or(0.0, |f| f.0 as f64 * self.width);
                let hi = buckets
                    .last()
                    .map_or(0.0, |l| (l.0 + 1) as f64 * self.width);
                let min_write = self.min_write.max(lo);
                let max_write = self.max_write.min(hi).max(min_write);
                (
                    w,
                    Hist::from_sorted(self.width, buckets, min_write, max_write),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_by_window_keeps_every_byte_in_its_window() {
        // 10 s of writes, 1 s buckets, windows of 4 s starting at epoch 100:
        // run-time 0 is epoch 100 = window 25 (100 / 4), run-time 4 is window 26.
        let h = Hist::uniform(0.0, 10.0, 1000.0, 1.0);
        let parts = h.split_by_window(4.0, 100.0);
        let windows: Vec<i64> = parts.iter().map(|(w, _)| *w).collect();
        assert_eq!(windows, vec![25, 26, 27]);
        let sizes: Vec<f64> = parts.iter().map(|(_, p)| p.total().round()).collect();
        assert_eq!(sizes, vec![400.0, 400.0, 200.0]);
        assert_eq!(parts[1].1.write_range(), (4.0, 8.0));
    }

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
