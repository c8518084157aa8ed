//! Time-window compaction (Cassandra's `TimeWindowCompactionStrategy`): sstables
//! are grouped by the window their *newest* write falls in; the newest window is
//! size-tiered, every older window is merged down to one sstable, and an sstable
//! whose data has all expired is dropped whole. The algorithm, the options and
//! when to use it are in `docs/compaction/twcs.md`.
//!
//! Pure decider; `Send + Sync`. State, behind a mutex, advanced only by
//! [`CompactionStrategy::next_task`] (observers such as
//! [`CompactionStrategy::estimated_pending_tasks`] never change it):
//! - the highest window seen (Cassandra's `highestWindowSeen`): once a newer
//!   window has appeared, an older one is never "the newest" again, even if the
//!   sstables that opened the newer window are compacted or dropped;
//! - when fully expired sstables were last looked for
//!   (`expired_sstable_check_frequency_seconds`, on the engine clock).
//!
//! Invariants:
//! 1. Window `w` holds write timestamps in `[w * W, (w + 1) * W)` microseconds,
//!    `W` the window length, aligned to the epoch (Cassandra's
//!    `getWindowBoundsInMillis`); timestamps are converted from
//!    `timestamp_resolution` first.
//! 2. A merge never mixes windows: its inputs all have their newest write in one
//!    window.
//! 3. Order of preference: drop fully expired sstables (when a check is due), then
//!    the newest qualifying window (the newest window needs `min_threshold`
//!    sstables and STCS's most interesting bucket among them; an older window
//!    needs 2 and merges all of them, as in Cassandra, except that with
//!    segregation on, pieces written after the window closed merge only
//!    among themselves once the window's own data is one sstable, so late
//!    pieces never drag the bulk into a merge), then one
//!    single-sstable tombstone compaction (the smallest, as Cassandra's TWCS).
//! 4. A drop names only sstables that [`super::common::droppable_expired`] allows,
//!    unless `unsafe_aggressive_sstable_expiration` is set, in which case an
//!    sstable is dropped as soon as everything in it is purgeable, whatever
//!    overlaps it (the operator's explicit choice, as in Cassandra).
//! 5. `estimated_pending_tasks` counts only windows that would merge now
//!    (a window merging nothing counts 0), each with Cassandra's formula.

use super::common::{self, droppable_expired, expiry_check_due, sorted_ids, Decide, OverlapIndex};
use super::stcs::{get_buckets, most_interesting_bucket};
use super::{
    CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext, TaskReason,
};
use crate::options::{
    CommonCompactionOptions, CompactionOptions, StcsOptions, TimestampResolution, TwcsOptions,
};
use parking_lot::Mutex;
use std::collections::BTreeMap;

#[derive(Debug, Default)]
struct TwcsState {
    highest_window_seen: Option<i64>,
    last_expired_check_seconds: Option<i64>,
}

/// Time-window compaction (module docs).
pub struct TimeWindowCompactionStrategy {
    common: CommonCompactionOptions,
    stcs: StcsOptions,
    twcs: TwcsOptions,
    /// Cassandra's TWCS constructor: tombstone compactions only when one of
    /// `unchecked_tombstone_compaction`, `tombstone_compaction_interval`,
    /// `tombstone_threshold` is given with a value other than "false".
    tombstone_compactions: bool,
    state: Mutex<TwcsState>,
}

pub use crate::split::window_of;

impl TimeWindowCompactionStrategy {
    pub fn new(options: &CompactionOptions) -> TimeWindowCompactionStrategy {
        TimeWindowCompactionStrategy {
            common: options.common(),
            stcs: options.stcs(),
            twcs: options.twcs(),
            tombstone_compactions: [
                "unchecked_tombstone_compaction",
                "tombstone_compaction_interval",
                "tombstone_threshold",
            ]
            .iter()
            .filter_map(|k| options.options().get(*k))
            .any(|v| v != "false"),
            state: Mutex::new(TwcsState::default()),
        }
    }

    /// Window length in microseconds.
    pub fn window_micros(&self) -> i64 {
        (self.twcs.window_seconds() as i64).saturating_mul(1_000_000)
    }

    /// The window an sstable belongs to: that of its newest write.
    pub fn window_of_sstable(&self, s: &SSTableInfo) -> i64 {
        let ts = self
            .twcs
            .timestamp_resolution
            .to_micros(s.max_timestamp_micros);
        window_of(ts, self.window_micros())
    }

    /// Cassandra's `getBuckets`: the sstables not being compacted, by window,
    /// oldest window first.
    pub fn buckets<'a>(&self, sstables: &'a [SSTableInfo]) -> BTreeMap<i64, Vec<&'a SSTableInfo>> {
        let mut buckets: BTreeMap<i64, Vec<&SSTableInfo>> = BTreeMap::new();
        for s in sstables.iter().filter(|s| !s.being_compacted) {
            buckets
                .entry(self.window_of_sstable(s))
                .or_default()
                .push(s);
        }
        buckets
    }

    /// Cassandra's `newestBucket` (invariant 3's middle step): walking windows
    /// from the newest, the first whose [`Self::window_choice`] is a merge.
    /// `highest` is the newest window seen.
    fn newest_bucket<'a>(
        &self,
        buckets: &BTreeMap<i64, Vec<&'a SSTableInfo>>,
        highest: i64,
        ctx: &StrategyContext,
    ) -> Option<Vec<&'a SSTableInfo>> {
        buckets
            .iter()
            .rev()
            .find_map(|(&window, bucket)| self.window_choice(window, bucket, highest, ctx))
    }

    /// What one window would merge now, if anything: Cassandra's rule for that
    /// window inside `newestBucket`.
    /// - The current window (at or above `highest`) with at least
    ///   `min_threshold` sstables: STCS's most interesting bucket of them, if
    ///   STCS has one (a small flush is not merged into a large sstable over
    ///   and over while the window is written).
    /// - A closed window with at least 2 sstables: all of them, trimmed to
    ///   `max_threshold` smallest first (Cassandra's `trimToThreshold`).
    ///   With segregation on, only while it holds two or more sstables
    ///   written while it was current; otherwise its sstables merge by size
    ///   tier only (docs/compaction/twcs.md, "Closed windows with
    ///   segregation").
    fn window_choice<'a>(
        &self,
        window: i64,
        bucket: &[&'a SSTableInfo],
        highest: i64,
        _ctx: &StrategyContext,
    ) -> Option<Vec<&'a SSTableInfo>> {
        if window >= highest {
            if bucket.len() < self.common.min_threshold as usize {
                return None;
            }
            let tiers = get_buckets(bucket.iter().copied(), &self.stcs);
            return most_interesting_bucket(
                &tiers,
                self.common.min_threshold,
                self.common.max_threshold,
            );
        }
        if bucket.len() < 2 {
            return None;
        }
        if !self.twcs.split_output_by_window {
            return Some(trim_to_threshold(bucket, self.common.max_threshold));
        }
        // With segregation, late writes keep adding small pieces to closed
        // windows. Merging each into the window's bulk rewrites the whole
        // window at nearly every flush: write amplification 28.7 instead of
        // 2.2 with 1% late writes (docs/compaction/twcs.md, "Closed windows
        // with segregation"). So a closed window merges whole only while it
        // holds two or more sstables written while it was current (the first
        // merge after it closes); after that its sstables merge by size tier:
        // late pieces among themselves, the bulk never again.
        let own_until = (window + 1).saturating_mul(self.window_micros()) / 1_000_000;
        let own = bucket
            .iter()
            .filter(|s| s.creation_time_seconds < own_until)
            .count();
        if own >= 2 {
            return Some(trim_to_threshold(bucket, self.common.max_threshold));
        }
        let tiers = get_buckets(bucket.iter().copied(), &self.closed_window_tiers());
        most_interesting_bucket(&tiers, 2, self.common.max_threshold)
    }

    /// The fully expired sstables to drop now (invariant 4).
    fn expired(
        &self,
        sstables: &[SSTableInfo],
        index: &OverlapIndex<'_>,
        ctx: &StrategyContext,
    ) -> Vec<u64> {
        if self.twcs.unsafe_aggressive_sstable_expiration {
            if self.common.only_purge_repaired_tombstones {
                return Vec::new();
            }
            let gc_before = ctx.gc_before();
            let mut ids: Vec<u64> = sstables
                .iter()
                .filter(|s| !s.being_compacted && s.max_local_deletion_seconds < gc_before)
                .map(|s| s.id)
                .collect();
            ids.sort_unstable();
            return ids;
        }
        droppable_expired(sstables, index, ctx, &self.common)
    }
}

impl TimeWindowCompactionStrategy {
    /// The highest window seen, counting `buckets`' newest, without storing it.
    fn highest_window(&self, buckets: &BTreeMap<i64, Vec<&SSTableInfo>>) -> i64 {
        let newest = buckets.keys().next_back().copied();
        match (self.state.lock().highest_window_seen, newest) {
            (Some(a), Some(b)) => a.max(b),
            (a, b) => a.or(b).unwrap_or(i64::MIN),
        }
    }

    fn window_merge(
        &self,
        buckets: &BTreeMap<i64, Vec<&SSTableInfo>>,
        highest: i64,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.newest_bucket(buckets, highest, ctx)
            .map(|chosen| CompactionTask::Merge {
                inputs: sorted_ids(chosen.iter().copied()),
                output_level: 0,
                split: self.output_split(),
                reason: TaskReason::TimeWindow,
            })
    }

    /// Size tiers inside a closed window (segregation on): the table's
    /// `bucket_low`/`bucket_high`, without `min_sstable_size`, which would put a
    /// small window's bulk and its late pieces in one bucket.
    fn closed_window_tiers(&self) -> StcsOptions {
        StcsOptions {
            min_sstable_size_bytes: 0,
            ..self.stcs.clone()
        }
    }

    /// Flush and merge outputs: cut by window when `split_output_by_window`
    /// (the default), so a write with an old timestamp lands in an sstable of
    /// its own window instead of stretching a new sstable back in time.
    pub fn output_split(&self) -> OutputSplit {
        if !self.twcs.split_output_by_window {
            return OutputSplit::None;
        }
        window_split(self.twcs.window_seconds(), self.twcs.timestamp_resolution)
    }
}

/// A cut into windows of `window_seconds`, in the unit the table's write
/// timestamps use (`timestamp_resolution`), never rolled over by size.
pub fn window_split(window_seconds: u64, resolution: TimestampResolution) -> OutputSplit {
    OutputSplit::TimeWindow {
        window: resolution.from_seconds(window_seconds.min(i64::MAX as u64) as i64),
        max_bytes: u64::MAX,
    }
}

/// Cassandra's `trimToThreshold`: at most `max_threshold` sstables, the smallest
/// first (ties by id, for determinism), returned in id order.
fn trim_to_threshold<'a>(bucket: &[&'a SSTableInfo], max_threshold: u32) -> Vec<&'a SSTableInfo> {
    let mut v = bucket.to_vec();
    v.sort_unstable_by_key(|s| (s.size_bytes, s.id));
    v.truncate(max_threshold.max(2) as usize);
    v.sort_unstable_by_key(|s| s.id);
    v
}

impl CompactionStrategy for TimeWindowCompactionStrategy {
    fn name(&self) -> &'static str {
        "TimeWindowCompactionStrategy"
    }

    fn common_options(&self) -> &CommonCompactionOptions {
        &self.common
    }

    /// Invariant 4, at most once per `expired_sstable_check_frequency_seconds`.
    fn expired_to_drop(
        &self,
        sstables: &[SSTableInfo],
        all: &OverlapIndex<'_>,
        ctx: &StrategyContext,
        decide: Decide,
    ) -> Vec<u64> {
        let due = expiry_check_due(
            &mut self.state.lock().last_expired_check_seconds,
            ctx.now_seconds,
            self.twcs.expired_sstable_check_frequency_seconds,
            decide,
        );
        if !due {
            return Vec::new();
        }
        self.expired(sstables, all, ctx)
    }

    /// The newest qualifying window (invariant 3); remembers the highest window.
    fn own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        let buckets = self.buckets(sstables);
        let highest = {
            let mut state = self.state.lock();
            if let Some((&newest, _)) = buckets.iter().next_back() {
                let seen = state.highest_window_seen.get_or_insert(newest);
                *seen = (*seen).max(newest);
            }
            state.highest_window_seen.unwrap_or(i64::MIN)
        };
        self.window_merge(&buckets, highest, ctx)
    }

    /// The same decision with the highest window seen read, not advanced.
    fn peek_own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        let buckets = self.buckets(sstables);
        let highest = self.highest_window(&buckets);
        self.window_merge(&buckets, highest, ctx)
    }

    fn tombstone_compactions(&self) -> bool {
        self.tombstone_compactions
    }

    /// The smallest first, as Cassandra's TWCS.
    fn tombstone_preference(&self, a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering {
        (a.size_bytes, a.id).cmp(&(b.size_bytes, b.id))
    }

    /// Everything the shared step does not drop, in one merge whose outputs are
    /// cut by time window when segregation is on: one sstable per window, the
    /// same result as merging window by window. Without segregation, everything
    /// into one sstable, as Cassandra 4.0's TWCS (which leaves one sstable that
    /// can only be dropped when its newest data expires: docs/compaction/twcs.md).
    fn major_merge(
        &self,
        _sstables: &[SSTableInfo],
        rest: &[&SSTableInfo],
    ) -> Option<CompactionTask> {
        common::major_merge_of(rest, 1, 0, self.output_split())
    }

    fn flush_split(&self) -> OutputSplit {
        self.output_split()
    }

    /// One or more level-0 sstables per window is the healthy state.
    fn stalls_writes_on_level0(&self) -> bool {
        false
    }

    /// Cassandra's estimate from `newestBucket`: every window that would
    /// merge now ([`Self::window_choice`]) counts `1 + ceil((n - max) / max)`
    /// when `n - max > min_threshold` (else 1), `n` its sstables, `max` and
    /// `min` the thresholds. A window that would merge nothing counts 0, so a
    /// table with nothing to do shows 0. Reads the highest window seen but
    /// never advances it.
    fn estimated_pending_tasks(&self, sstables: &[SSTableInfo], ctx: &StrategyContext) -> usize {
        let buckets = self.buckets(sstables);
        let highest = self.highest_window(&buckets);
        buckets
            .iter()
            .filter(|(&w, b)| self.window_choice(w, b, highest, ctx).is_some())
            .map(|(_, b)| {
                cassandra_window_tasks(
                    b.len(),
                    self.common.min_threshold,
                    self.common.max_threshold,
                )
            })
            .sum()
    }
}

/// The tasks Cassandra's `newestBucket` counts for one window of `n` sstables
/// that qualifies: `1 + (n - max > min ? ceil((n - max) / max) : 0)`, in
/// floating point as there (`remaining` is a double).
pub fn cassandra_window_tasks(n: usize, min_threshold: u32, max_threshold: u32) -> usize {
    let remaining = n as f64 - max_threshold as f64;
    let extra = if remaining > min_threshold as f64 {
        (remaining / max_threshold.max(1) as f64).ceil() as usize
    } else {
        0
    };
    1 + extra
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    const HOUR_MICROS: i64 = 3_600_000_000;

    /// An sstable whose writes span `[min_h, max_h]` hours (plus a minute, so it
    /// sits inside the hour), `size_mib` big.
    fn ts_sst(id: u64, min_h: i64, max_h: i64, size_mib: u64) -> SSTableInfo {
        SSTableInfo {
            min_timestamp_micros: min_h * HOUR_MICROS + 60_000_000,
            max_timestamp_micros: max_h * HOUR_MICROS + 60_000_000,
            ..sst(id, 0, size_mib * MIB)
        }
    }

    fn hourly(extra: &str) -> TimeWindowCompactionStrategy {
        TimeWindowCompactionStrategy::new(&opts(&format!(
            "'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', \
             'compaction_window_size': 1{extra}"
        )))
    }

    fn merge_inputs(t: Option<CompactionTask>) -> Vec<u64> {
        match t {
            Some(CompactionTask::Merge { inputs, .. }) => inputs,
            other => panic!("expected a merge, got {other:?}"),
        }
    }

    #[test]
    fn windows_align_to_the_epoch_and_floor_before_it() {
        assert_eq!(window_of(0, HOUR_MICROS), 0);
        assert_eq!(window_of(HOUR_MICROS - 1, HOUR_MICROS), 0);
        assert_eq!(window_of(HOUR_MICROS, HOUR_MICROS), 1);
        assert_eq!(window_of(-1, HOUR_MICROS), -1);
        let s = hourly("");
        // Bucketed by the newest write: an sstable spanning hours 3..5 is in 5.
        assert_eq!(s.window_of_sstable(&ts_sst(1, 3, 5, 1)), 5);
        // Millisecond timestamps are converted before bucketing.
        let ms = hourly(", 'timestamp_resolution': 'MILLISECONDS'");
        let mut t = ts_sst(2, 0, 0, 1);
        t.max_timestamp_micros = 7 * 3_600_000 + 5; // hour 7, in milliseconds
        assert_eq!(ms.window_of_sstable(&t), 7);
    }

    #[test]
    fn older_windows_merge_with_two_the_newest_needs_min_threshold() {
        let s = hourly("");
        // Hour 10 (newest) holds 3 flushes: below min_threshold 4. Hour 8 holds 2.
        let set = vec![
            ts_sst(1, 8, 8, 1),
            ts_sst(2, 8, 8, 1),
            ts_sst(3, 9, 9, 5),
            ts_sst(4, 10, 10, 1),
            ts_sst(5, 10, 10, 1),
            ts_sst(6, 10, 10, 1),
        ];
        assert_eq!(merge_inputs(s.next_task(&set, &ctx(0))), vec![1, 2]);
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 1);
        // A fourth flush in hour 10: the newest window now wins (newest first).
        let mut more = set.clone();
        more.push(ts_sst(7, 10, 10, 1));
        assert_eq!(merge_inputs(s.next_task(&more, &ctx(0))), vec![4, 5, 6, 7]);
        assert_eq!(s.estimated_pending_tasks(&more, &ctx(0)), 2);
    }

    #[test]
    fn late_pieces_in_a_closed_window_merge_among_themselves() {
        // A closed window (hour 3) holds its 100 MiB bulk, written with the
        // window, and late pieces written a day later.
        let late = |id: u64, mib: u64| SSTableInfo {
            creation_time_seconds: 28 * 3600,
            ..ts_sst(id, 3, 3, mib)
        };
        let bulk = SSTableInfo {
            creation_time_seconds: 4 * 3600 - 100,
            ..ts_sst(1, 3, 3, 100)
        };
        let set = vec![bulk, late(2, 1), ts_sst(9, 20, 20, 1)];
        // One late piece: nothing to merge it with of similar size, and the
        // estimate says so (Strata once counted this window as pending).
        assert!(hourly("").next_task(&set, &ctx(0)).is_none());
        assert_eq!(hourly("").estimated_pending_tasks(&set, &ctx(0)), 0);
        // Two: they merge together, not with the bulk.
        let mut more = set.clone();
        more.push(late(3, 1));
        assert_eq!(
            merge_inputs(hourly("").next_task(&more, &ctx(0))),
            vec![2, 3]
        );
        assert_eq!(hourly("").estimated_pending_tasks(&more, &ctx(0)), 1);
        // Two sstables of the window's own (written with it): the whole window
        // merges, late pieces included, as Cassandra.
        let mut own = more.clone();
        own.push(SSTableInfo {
            creation_time_seconds: 3 * 3600 + 60,
            ..ts_sst(4, 3, 3, 30)
        });
        assert_eq!(
            merge_inputs(hourly("").next_task(&own, &ctx(0))),
            vec![1, 2, 3, 4]
        );
        // Without segregation, Cassandra's rule: the whole window.
        let plain = hourly(", 'split_output_by_window': 'false'");
        assert_eq!(merge_inputs(plain.next_task(&more, &ctx(0))), vec![1, 2, 3]);
    }

    #[test]
    fn estimated_tasks_follow_cassandras_formula_and_count_only_what_merges() {
        // Cassandra: 1 + ceil((n - max) / max) when n - max > min, else 1.
        assert_eq!(cassandra_window_tasks(2, 2, 4), 1);
        assert_eq!(cassandra_window_tasks(8, 2, 4), 2);
        assert_eq!(cassandra_window_tasks(6, 2, 4), 1); // 6 - 4 = 2, not > 2
        assert_eq!(cassandra_window_tasks(7, 2, 4), 2);
        assert_eq!(cassandra_window_tasks(70, 4, 32), 3);
        let s = hourly(", 'min_threshold': 2, 'max_threshold': 4");
        // A closed window of 8 sstables: 2 tasks (Strata once counted 1).
        let mut set: Vec<SSTableInfo> = (1..=8).map(|i| ts_sst(i, 3, 3, 1)).collect();
        set.push(ts_sst(20, 20, 20, 1));
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 2);
        // The current window with two sstables STCS will not merge (846 and
        // 123 MiB: not one size tier): 0 (Strata once counted 1).
        let current = vec![ts_sst(1, 20, 20, 846), ts_sst(2, 20, 20, 123)];
        assert!(s.next_task(&current, &ctx(0)).is_none());
        assert_eq!(s.estimated_pending_tasks(&current, &ctx(0)), 0);
    }

    #[test]
    fn the_newest_window_is_size_tiered() {
        let s = hourly("");
        // Four small flushes and one large sstable in the newest window: only the
        // four similar ones merge.
        let set = vec![
            ts_sst(1, 10, 10, 400),
            ts_sst(2, 10, 10, 1),
            ts_sst(3, 10, 10, 1),
            ts_sst(4, 10, 10, 1),
            ts_sst(5, 10, 10, 1),
        ];
        assert_eq!(merge_inputs(s.next_task(&set, &ctx(0))), vec![2, 3, 4, 5]);
    }

    #[test]
    fn old_windows_are_trimmed_to_max_threshold_smallest_first() {
        // Cassandra's rule for closed windows (segregation off).
        let s = hourly(", 'max_threshold': 4, 'split_output_by_window': 'false'");
        let mut set: Vec<SSTableInfo> = (1..=6).map(|i| ts_sst(i, 3, 3, 7 - i)).collect();
        set.push(ts_sst(9, 20, 20, 1));
        // Sizes 6,5,4,3,2,1 MiB: the four smallest are ids 3..=6.
        assert_eq!(merge_inputs(s.next_task(&set, &ctx(0))), vec![3, 4, 5, 6]);
    }

    #[test]
    fn the_highest_window_seen_is_remembered() {
        let s = hourly("");
        let newer = vec![ts_sst(1, 10, 10, 1), ts_sst(2, 12, 12, 1)];
        assert!(s.next_task(&newer, &ctx(0)).is_none());
        // The hour-12 sstable was dropped; hour 10 has two flushes. Without the
        // memory hour 10 would look like the newest window and wait for four.
        let set = vec![ts_sst(1, 10, 10, 1), ts_sst(3, 10, 10, 1)];
        assert_eq!(merge_inputs(s.next_task(&set, &ctx(0))), vec![1, 3]);
        // Observing never advances it: a fresh strategy only observed stays put.
        let observer = hourly("");
        assert_eq!(observer.estimated_pending_tasks(&newer, &ctx(0)), 0);
        assert_eq!(observer.state.lock().highest_window_seen, None);
    }

    #[test]
    fn expired_sstables_drop_first_and_only_when_a_check_is_due() {
        let s = hourly(", 'expired_sstable_check_frequency_seconds': 600");
        let mut dead = ts_sst(1, 1, 1, 1);
        dead.max_local_deletion_seconds = 100;
        dead.first_token = 0;
        dead.last_token = 10;
        let mut live = ts_sst(2, 5, 5, 1);
        live.first_token = 20;
        live.last_token = 30;
        let set = vec![dead.clone(), live];
        assert_eq!(
            s.next_task(&set, &ctx(1000)),
            Some(CompactionTask::Drop { ids: vec![1] })
        );
        // Checked at 1000: the next look is due at 1600, not before.
        assert!(s.next_task(&set, &ctx(1500)).is_none());
        assert_eq!(
            s.next_task(&set, &ctx(1600)),
            Some(CompactionTask::Drop { ids: vec![1] })
        );
    }

    #[test]
    fn an_overlapping_older_sstable_blocks_the_drop_unless_unsafe() {
        let mut dead = ts_sst(1, 5, 5, 1);
        dead.max_local_deletion_seconds = 100;
        // An older, live sstable over the same tokens: its data may be shadowed by
        // the dead one's tombstones, so dropping the dead one could resurrect it.
        let older = ts_sst(2, 1, 1, 1);
        let set = vec![dead, older];
        let safe = hourly("");
        assert_ne!(
            safe.next_task(&set, &ctx(1000)),
            Some(CompactionTask::Drop { ids: vec![1] })
        );
        let unsafe_ = hourly(", 'unsafe_aggressive_sstable_expiration': 'true'");
        assert_eq!(
            unsafe_.next_task(&set, &ctx(1000)),
            Some(CompactionTask::Drop { ids: vec![1] })
        );
    }

    #[test]
    fn major_compaction_cuts_its_output_by_window() {
        let set = vec![
            ts_sst(1, 1, 1, 1),
            ts_sst(2, 1, 1, 1),
            ts_sst(3, 2, 2, 1),
            ts_sst(4, 3, 3, 1),
        ];
        let tasks = hourly("").major_compaction(&set, &ctx(0));
        assert_eq!(
            tasks,
            vec![CompactionTask::Merge {
                inputs: vec![1, 2, 3, 4],
                output_level: 0,
                split: OutputSplit::TimeWindow {
                    window: HOUR_MICROS,
                    max_bytes: u64::MAX
                },
                reason: TaskReason::Major,
            }]
        );
        // Without segregation, Cassandra 4.0's single output.
        let plain = hourly(", 'split_output_by_window': 'false'");
        let tasks = plain.major_compaction(&set, &ctx(0));
        assert!(matches!(
            &tasks[..],
            [CompactionTask::Merge {
                split: OutputSplit::None,
                ..
            }]
        ));
        assert_eq!(plain.flush_split(), OutputSplit::None);
        // Millisecond timestamps get a window in milliseconds.
        let ms = hourly(", 'timestamp_resolution': 'MILLISECONDS'");
        assert_eq!(
            ms.flush_split(),
            OutputSplit::TimeWindow {
                window: 3_600_000,
                max_bytes: u64::MAX
            }
        );
    }

    #[test]
    fn disabled_strategy_proposes_nothing() {
        let s = hourly(", 'enabled': 'false'");
        let set: Vec<SSTableInfo> = (1..=8).map(|i| ts_sst(i, 1, 1, 1)).collect();
        assert!(s.next_task(&set, &ctx(0)).is_none());
    }
}
