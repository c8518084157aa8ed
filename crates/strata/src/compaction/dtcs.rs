//! Date-tiered compaction (Cassandra's `DateTieredCompactionStrategy`, seed 003):
//! sstables are grouped by the *oldest* write they hold into windows that grow by
//! `min_threshold` going back in time, like the marks of a measuring stick; each
//! window is size-tiered; sstables older than `max_sstable_age_days` are left
//! alone, except that fully expired ones are still dropped. The algorithm, the
//! options and when to use it are in `docs/compaction/dtcs.md`.
//!
//! "Now" is the newest write timestamp of any live sstable, never the wall clock
//! (the seed: "DTCS compaction logic runs in relative time to the last flushed
//! sstable"), so the same sstables always give the same windows.
//!
//! Pure decider; `Send + Sync`. Its only state is when fully expired sstables
//! were last looked for (`expired_sstable_check_frequency_seconds`, on the engine
//! clock), advanced only by [`CompactionStrategy::next_task`].
//!
//! Invariants:
//! 1. Windows are fixed relative to the epoch: a window of size `s` covers
//!    `[k * s, (k + 1) * s)` for an integer `k`, and the sizes are `base`,
//!    `base * T`, `base * T^2`, ... (`T = min_threshold`) capped at
//!    `max_window_size_seconds`. Going back from "now", `T` windows of one size
//!    coalesce into one of the next size exactly at a boundary of the larger
//!    size, so every window nests in the next larger one.
//! 2. A merge never mixes windows: its inputs all have their oldest write in one
//!    window. Only the newest ("incoming") window needs `min_threshold` sstables;
//!    any older window with 2 qualifies.
//! 3. An sstable whose newest write is older than `now - max_sstable_age_days` is
//!    never an input of a merge, but is dropped when fully expired (Cassandra
//!    2.1's CASSANDRA-9056, where such sstables were never dropped, does not
//!    exist here: the expiry check looks at every sstable).
//! 4. Order of preference: drop fully expired sstables (when a check is due), then
//!    the newest qualifying window, then the smallest sstable worth a tombstone
//!    compaction.

use super::common::{self, droppable_expired, expiry_check_due, sorted_ids, Decide, OverlapIndex};
use super::stcs::{get_buckets, most_interesting_bucket};
use super::{
    CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext, TaskReason,
};
use crate::options::{CommonCompactionOptions, CompactionOptions, DtcsOptions, StcsOptions};
use parking_lot::Mutex;

/// A window of the measuring stick: timestamps `t` with `t div size == position`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Target {
    pub size: i64,
    pub position: i64,
}

impl Target {
    /// The incoming window: the base-sized one holding `now` (Cassandra's
    /// `getInitialTarget`).
    pub fn initial(now: i64, base: i64) -> Target {
        Target {
            size: base.max(1),
            position: now.div_euclid(base.max(1)),
        }
    }

    pub fn start(&self) -> i64 {
        self.position.saturating_mul(self.size)
    }

    /// Ordering of this window against a timestamp: `Less` if the window lies
    /// before it, `Equal` if it covers it.
    pub fn cmp_timestamp(&self, t: i64) -> std::cmp::Ordering {
        self.position.cmp(&t.div_euclid(self.size))
    }

    pub fn on_target(&self, t: i64) -> bool {
        self.cmp_timestamp(t).is_eq()
    }

    /// The next older window (Cassandra's `nextTarget`): the same size until the
    /// position reaches a multiple of `tier` (the windows so far then fill one
    /// window of the next size), then `tier` times larger, unless that would
    /// exceed `max_size`.
    pub fn next(&self, tier: i64, max_size: i64) -> Target {
        let grow = self.position.rem_euclid(tier) == 0
            && self.size.checked_mul(tier).is_some_and(|s| s <= max_size);
        if grow {
            Target {
                size: self.size * tier,
                position: self.position.div_euclid(tier) - 1,
            }
        } else {
            Target {
                size: self.size,
                position: self.position - 1,
            }
        }
    }
}

/// Cassandra's `getBuckets`: `items` as `(item, oldest timestamp)`, grouped into
/// windows walking back from `now`; buckets newest first, each bucket's items
/// newest first (ties by input order). Items newer than `now`'s window are not in
/// any bucket (cannot happen when `now` is the newest timestamp).
pub fn get_buckets_by_window<T: Copy>(
    items: &[(T, i64)],
    base: i64,
    tier: i64,
    now: i64,
    max_window: i64,
) -> Vec<(Target, Vec<T>)> {
    let mut sorted: Vec<(T, i64)> = items.to_vec();
    // Stable, so equal timestamps keep the caller's (id) order.
    sorted.sort_by_key(|(_, t)| std::cmp::Reverse(*t));
    let mut buckets: Vec<(Target, Vec<T>)> = Vec::new();
    let mut target = Target::initial(now, base);
    let mut i = 0;
    while i < sorted.len() {
        let t = sorted[i].1;
        match target.cmp_timestamp(t) {
            // Too new for the target (only before the first match): skip it.
            std::cmp::Ordering::Less => {
                i += 1;
                continue;
            }
            std::cmp::Ordering::Greater => {
                target = target.next(tier, max_window);
                continue;
            }
            std::cmp::Ordering::Equal => {}
        }
        let mut bucket = Vec::new();
        while i < sorted.len() && target.on_target(sorted[i].1) {
            bucket.push(sorted[i].0);
            i += 1;
        }
        buckets.push((target, bucket));
    }
    buckets
}

#[derive(Debug, Default)]
struct DtcsState {
    last_expired_check_seconds: Option<i64>,
}

/// Date-tiered compaction (module docs).
pub struct DateTieredCompactionStrategy {
    common: CommonCompactionOptions,
    stcs: StcsOptions,
    dtcs: DtcsOptions,
    /// Cassandra's DTCS constructor: tombstone compactions only when
    /// `tombstone_compaction_interval` or `tombstone_threshold` is given.
    tombstone_compactions: bool,
    state: Mutex<DtcsState>,
}

impl DateTieredCompactionStrategy {
    pub fn new(options: &CompactionOptions) -> DateTieredCompactionStrategy {
        DateTieredCompactionStrategy {
            common: options.common(),
            stcs: options.stcs(),
            dtcs: options.dtcs(),
            tombstone_compactions: ["tombstone_compaction_interval", "tombstone_threshold"]
                .iter()
                .any(|k| options.options().contains_key(*k)),
            state: Mutex::new(DtcsState::default()),
        }
    }

    /// "Now": the newest write of any sstable, being compacted or not (Cassandra
    /// reads the whole live set), in `timestamp_resolution` units.
    pub fn now_units(&self, sstables: &[SSTableInfo]) -> Option<i64> {
        sstables.iter().map(|s| s.max_timestamp_micros).max()
    }

    /// The windows of the sstables that may still be compacted (not being
    /// compacted, not older than the max age), newest first. Everything is in
    /// the table's `timestamp_resolution` units, as Cassandra computes it:
    /// window sizes are the options converted (truncated) into those units.
    pub fn buckets<'a>(&self, sstables: &'a [SSTableInfo]) -> Vec<(Target, Vec<&'a SSTableInfo>)> {
        let Some(now) = self.now_units(sstables) else {
            return Vec::new();
        };
        // Cassandra's `filterOldSSTables`: 0 means no age limit; otherwise an
        // sstable stays while its newest write is at or after `now - age`.
        let max_age = self.dtcs.max_sstable_age_units();
        let cutoff = if max_age > 0 {
            now.saturating_sub(max_age)
        } else {
            i64::MIN
        };
        let items: Vec<(&SSTableInfo, i64)> = sstables
            .iter()
            .filter(|s| !s.being_compacted && s.max_timestamp_micros >= cutoff)
            .map(|s| (s, s.min_timestamp_micros))
            .collect();
        get_buckets_by_window(
            &items,
            self.dtcs.base_units(),
            self.common.min_threshold.max(2) as i64,
            now,
            self.dtcs.max_window_units(),
        )
    }

    /// Cassandra's `newestBucket`: newest first, the first window whose
    /// size-tiered bucket qualifies (invariant 2).
    fn newest_bucket<'a>(
        &self,
        buckets: &[(Target, Vec<&'a SSTableInfo>)],
        now: i64,
    ) -> Option<Vec<&'a SSTableInfo>> {
        let incoming = Target::initial(now, self.dtcs.base_units());
        for (_, bucket) in buckets {
            let Some(first) = bucket.first() else {
                continue;
            };
            let in_first = incoming.on_target(first.min_timestamp_micros);
            let min = if in_first {
                self.common.min_threshold
            } else {
                2
            };
            if bucket.len() < min as usize {
                continue;
            }
            let tiers = get_buckets(bucket.iter().copied(), &self.stcs);
            if let Some(chosen) = most_interesting_bucket(&tiers, min, self.common.max_threshold) {
                return Some(chosen);
            }
        }
        None
    }
}

impl DateTieredCompactionStrategy {
    fn window_merge(&self, sstables: &[SSTableInfo]) -> Option<CompactionTask> {
        let now = self.now_units(sstables)?;
        let buckets = self.buckets(sstables);
        self.newest_bucket(&buckets, now)
            .map(|chosen| CompactionTask::Merge {
                inputs: sorted_ids(chosen.iter().copied()),
                output_level: 0,
                split: self.output_split(),
                reason: TaskReason::DateTiered,
            })
    }

    /// The largest window the measuring stick uses, in timestamp units:
    /// `base * T^k`, the largest such size not above `max_window_size_seconds`
    /// (at least `base`). Every window of the stick nests in one of these
    /// (invariant 1).
    pub fn largest_window_units(&self) -> i64 {
        let tier = self.common.min_threshold.max(2) as i64;
        let max = self.dtcs.max_window_units();
        let mut size = self.dtcs.base_units();
        while let Some(next) = size.checked_mul(tier) {
            if next > max {
                break;
            }
            size = next;
        }
        size
    }

    /// Flush and merge outputs: cut by the stick's largest windows when
    /// `split_output_by_window` (the default), so a write far older than the
    /// rest of its flush does not pull a new sstable into an old window. The cut
    /// must follow the stick's own boundaries: a cut inside a window (a day, say,
    /// inside a 16-hour window) would leave the window with two sstables after
    /// every merge of it, and the strategy would merge it forever.
    pub fn output_split(&self) -> OutputSplit {
        if !self.dtcs.split_output_by_window {
            return OutputSplit::None;
        }
        OutputSplit::TimeWindow {
            window: self.largest_window_units(),
            max_bytes: u64::MAX,
        }
    }
}

impl CompactionStrategy for DateTieredCompactionStrategy {
    fn name(&self) -> &'static str {
        "DateTieredCompactionStrategy"
    }

    fn common_options(&self) -> &CommonCompactionOptions {
        &self.common
    }

    /// Every sstable, past the max age included (invariant 3), at most once per
    /// `expired_sstable_check_frequency_seconds`.
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
            self.dtcs.expired_sstable_check_frequency_seconds,
            decide,
        );
        if !due {
            return Vec::new();
        }
        droppable_expired(sstables, all, ctx, &self.common)
    }

    /// The newest qualifying window (invariant 2). Stateless.
    fn own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.window_merge(sstables)
    }

    fn peek_own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.window_merge(sstables)
    }

    fn tombstone_compactions(&self) -> bool {
        self.tombstone_compactions
    }

    /// The smallest first, as Cassandra's DTCS.
    fn tombstone_preference(&self, a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering {
        (a.size_bytes, a.id).cmp(&(b.size_bytes, b.id))
    }

    /// Everything the shared step does not drop, merged into one (Cassandra's
    /// `getMaximalTask`), cut by the largest window when segregation is on.
    fn major_merge(
        &self,
        _sstables: &[SSTableInfo],
        rest: &[&SSTableInfo],
    ) -> Option<CompactionTask> {
        common::major_merge_of(rest, 2, 0, self.output_split())
    }

    fn flush_split(&self) -> OutputSplit {
        self.output_split()
    }

    /// One or more level-0 sstables per window is the healthy state.
    fn stalls_writes_on_level0(&self) -> bool {
        false
    }

    /// Cassandra's DTCS estimate: per window, each size-tiered bucket with at least
    /// `min_threshold` sstables needs `ceil(len / max_threshold)` tasks.
    fn estimated_pending_tasks(&self, sstables: &[SSTableInfo], _ctx: &StrategyContext) -> usize {
        self.buckets(sstables)
            .iter()
            .map(|(_, bucket)| {
                super::stcs::estimated_tasks(
                    &get_buckets(bucket.iter().copied(), &self.stcs),
                    self.common.min_threshold,
                    self.common.max_threshold,
                )
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    const MINUTE: i64 = 60_000_000;

    /// An sstable with writes from minute `min_m` to `max_m` (plus 1 s).
    fn m_sst(id: u64, min_m: i64, max_m: i64) -> SSTableInfo {
        SSTableInfo {
            min_timestamp_micros: min_m * MINUTE + 1_000_000,
            max_timestamp_micros: max_m * MINUTE + 1_000_000,
            ..sst(id, 0, MIB)
        }
    }

    fn dtcs(extra: &str) -> DateTieredCompactionStrategy {
        DateTieredCompactionStrategy::new(&opts(&format!(
            "'class': 'DateTieredCompactionStrategy', 'base_time_seconds': 60{extra}"
        )))
    }

    fn windows(buckets: &[(Target, Vec<&SSTableInfo>)]) -> Vec<(i64, i64, Vec<u64>)> {
        buckets
            .iter()
            .map(|(t, b)| {
                (
                    t.start() / MINUTE,
                    t.size / MINUTE,
                    b.iter().map(|s| s.id).collect(),
                )
            })
            .collect()
    }

    #[test]
    fn targets_coalesce_like_a_measuring_stick() {
        // Walking back from minute 17 with base 1 minute and T = 4: 17, 16 (a
        // multiple of 4: the four 1-minute windows 12..15 fill the 4-minute window
        // at 12), then 8, 4, 0 at 4 minutes, 16 minutes at -16...
        let mut t = Target::initial(17 * MINUTE + 5, MINUTE);
        let mut seen = vec![(t.start() / MINUTE, t.size / MINUTE)];
        for _ in 0..6 {
            t = t.next(4, 1 << 40);
            seen.push((t.start() / MINUTE, t.size / MINUTE));
        }
        assert_eq!(
            seen,
            vec![(17, 1), (16, 1), (12, 4), (8, 4), (4, 4), (0, 4), (-16, 16)]
        );
        // Every window nests in the next larger one (invariant 1).
        for (start, size) in &seen {
            assert_eq!(start.rem_euclid(*size), 0);
        }
    }

    #[test]
    fn the_seeds_picture_a_4_minute_window_compacts_its_four_1_minute_windows() {
        let s = dtcs("");
        // One flush per minute from minute 0 to 7 ("now" is in minute 7). Minutes
        // 0..3 fill the 4-minute window [0, 4); minutes 4..7 are still 1-minute
        // windows, each holding one sstable.
        let set: Vec<SSTableInfo> = (0..8).map(|m| m_sst(m as u64 + 1, m, m)).collect();
        let b = s.buckets(&set);
        assert_eq!(
            windows(&b),
            vec![
                (7, 1, vec![8]),
                (6, 1, vec![7]),
                (5, 1, vec![6]),
                (4, 1, vec![5]),
                (0, 4, vec![4, 3, 2, 1]),
            ]
        );
        assert_eq!(
            s.next_task(&set, &ctx(0)),
            Some(CompactionTask::Merge {
                inputs: vec![1, 2, 3, 4],
                output_level: 0,
                // Segregation by the stick's largest window (60 s x 4^5 =
                // 61,440 s, under the 86,400 s cap) is on by default.
                split: OutputSplit::TimeWindow {
                    window: 61_440_000_000,
                    max_bytes: u64::MAX
                },
                reason: TaskReason::DateTiered,
            })
        );
    }

    #[test]
    fn the_incoming_window_needs_min_threshold_older_ones_two() {
        let s = dtcs("");
        // Three flushes in the incoming minute 9, two in minute 8.
        let set = vec![
            m_sst(1, 8, 8),
            m_sst(2, 8, 8),
            m_sst(3, 9, 9),
            m_sst(4, 9, 9),
            m_sst(5, 9, 9),
        ];
        let t = s.next_task(&set, &ctx(0)).map(|t| t.input_ids());
        assert_eq!(t, Some(vec![1, 2]));
        let mut four = set.clone();
        four.push(m_sst(6, 9, 9));
        let t = s.next_task(&four, &ctx(0)).map(|t| t.input_ids());
        assert_eq!(t, Some(vec![3, 4, 5, 6]));
    }

    #[test]
    fn now_is_the_newest_data_not_the_clock() {
        let s = dtcs("");
        let set: Vec<SSTableInfo> = (0..8).map(|m| m_sst(m as u64 + 1, m, m)).collect();
        // A wall clock years later changes nothing.
        let later = s.next_task(&set, &ctx(10 * 365 * 86_400));
        assert_eq!(later.map(|t| t.input_ids()), Some(vec![1, 2, 3, 4]));
    }

    #[test]
    fn sstables_past_the_max_age_are_not_compacted_but_still_dropped() {
        // Max age one hour; data from minute 0..3 and then from minute 200.
        let s = dtcs(", 'max_sstable_age_days': '0.041666667'");
        let mut set: Vec<SSTableInfo> = (0..4).map(|m| m_sst(m as u64 + 1, m, m)).collect();
        set.push(m_sst(9, 200, 200));
        assert!(s
            .buckets(&set)
            .iter()
            .all(|(_, b)| b.iter().all(|x| x.id == 9)));
        assert!(s.next_task(&set, &ctx(0)).is_none());
        // An old sstable whose data has all expired is dropped (CASSANDRA-9056).
        let mut expired = set.clone();
        for x in expired.iter_mut().filter(|x| x.id <= 4) {
            x.max_local_deletion_seconds = 10;
        }
        let s = dtcs(", 'max_sstable_age_days': '0.041666667'");
        assert_eq!(
            s.next_task(&expired, &ctx(1000)),
            Some(CompactionTask::Drop {
                ids: vec![1, 2, 3, 4]
            })
        );
    }

    #[test]
    fn windows_stop_growing_at_the_max_window_size() {
        let s = dtcs(", 'max_window_size_seconds': 240");
        // Minutes 0..40, one flush each: no window may exceed 4 minutes.
        let set: Vec<SSTableInfo> = (0..40).map(|m| m_sst(m as u64 + 1, m, m)).collect();
        assert!(s.buckets(&set).iter().all(|(t, _)| t.size <= 4 * MINUTE));
        assert_eq!(
            s.estimated_pending_tasks(&set, &ctx(0)),
            9,
            "nine full 4-minute windows"
        );
    }

    #[test]
    fn the_output_cut_follows_the_sticks_boundaries() {
        // A merge cut by a length that is not a window of the stick would split
        // a window in two after every merge: it would never settle.
        for (extra, largest) in [
            ("'base_time_seconds': 60", 61_440i64),
            (
                "'max_window_size_seconds': 86400, 'base_time_seconds': 3600",
                57_600,
            ),
            (
                "'base_time_seconds': 60, 'max_window_size_seconds': 200",
                60,
            ),
        ] {
            let s = DateTieredCompactionStrategy::new(&opts(&format!(
                "'class': 'DateTieredCompactionStrategy', {extra}"
            )));
            assert_eq!(s.largest_window_units(), largest * 1_000_000, "{extra}");
            let mut t = Target::initial(1_000_000 * MINUTE, s.dtcs.base_units());
            for _ in 0..40 {
                assert_eq!((largest * 1_000_000) % t.size, 0, "{extra}: {t:?}");
                t = t.next(4, s.dtcs.max_window_units());
            }
        }
    }

    #[test]
    fn estimating_changes_no_state() {
        let s = dtcs("");
        let set: Vec<SSTableInfo> = (0..8).map(|m| m_sst(m as u64 + 1, m, m)).collect();
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 1);
        assert_eq!(s.state.lock().last_expired_check_seconds, None);
    }
}
