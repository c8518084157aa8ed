//! Size-tiered compaction (Cassandra's `SizeTieredCompactionStrategy`): merge
//! sstables of similar size, so each byte is rewritten about once per tier and the
//! number of tiers grows with log(data / flush size). The algorithm, its math and
//! the options are in `docs/compaction/stcs.md`.
//!
//! Pure decider, stateless; `Send + Sync`.
//!
//! Invariants:
//! 1. [`get_buckets`] puts every given sstable in exactly one bucket and is
//!    deterministic (sstables are sorted by `(size_bytes, id)` first).
//! 2. A bucket proposed by [`most_interesting_bucket`] has between `min_threshold`
//!    and `max_threshold` sstables.
//! 3. Order of preference in `next_task`: drop fully expired sstables (the
//!    shared step of [`super::common::next_task`]), then the most interesting
//!    bucket, then one single-sstable tombstone compaction (shared step, largest
//!    first). Outputs go to level 0, unsplit.

use super::common::{largest_first, major_merge_of, sorted_ids, OverlapIndex};
use super::{
    CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext, TaskReason,
};
use crate::options::{CommonCompactionOptions, CompactionOptions, StcsOptions};

/// Cassandra's `getBuckets`: sort by size, then walk the sizes upwards; an sstable
/// joins the current bucket if its size is strictly between `bucket_low` and
/// `bucket_high` times the bucket's average, or if both it and the bucket's average
/// are below `min_sstable_size` (all small flushes share one bucket); otherwise it
/// starts a new bucket. Buckets come out in ascending size order.
///
/// Cassandra compares each sstable with every bucket of a `HashMap`; walking sizes
/// in order, only the newest bucket can match (an earlier bucket's average is at
/// most the size that opened a later one, divided by `bucket_high`), so comparing
/// with the last bucket gives the same buckets in O(n log n) and without the
/// hash-order dependence (or the collision of two buckets with equal averages, which
/// silently loses one in Cassandra). Averages are exact integer means.
pub fn get_buckets<'a>(
    sstables: impl IntoIterator<Item = &'a SSTableInfo>,
    options: &StcsOptions,
) -> Vec<Vec<&'a SSTableInfo>> {
    let mut sorted: Vec<&SSTableInfo> = sstables.into_iter().collect();
    sorted.sort_unstable_by_key(|s| (s.size_bytes, s.id));
    let min = options.min_sstable_size_bytes;
    let mut buckets: Vec<Vec<&SSTableInfo>> = Vec::new();
    let mut total: u128 = 0;
    for s in sorted {
        let size = s.size_bytes;
        if let Some(bucket) = buckets.last_mut() {
            let avg = (total / bucket.len() as u128) as u64;
            let similar = (size as f64) > avg as f64 * options.bucket_low
                && (size as f64) < avg as f64 * options.bucket_high;
            if similar || (size < min && avg < min) {
                bucket.push(s);
                total += size as u128;
                continue;
            }
        }
        buckets.push(vec![s]);
        total = size as u128;
    }
    buckets
}

/// Cassandra's `mostInterestingBucket`: drop buckets with fewer than
/// `min_threshold` sstables, trim the others to `max_threshold`, pick the
/// "hottest" (`Collections.max` by read rate, then by average size).
///
/// Strata keeps no per-sstable read rates, so every bucket is equally cold (as
/// in Cassandra on a table nobody reads) and the tie-breaker decides. Cassandra's
/// comparator orders ties by *ascending* average size, and `Collections.max`
/// returns the greatest: the bucket with the **largest** average size wins (the
/// comment beside that comparator says "compacting the smallest sstables
/// first", which is not what the code does). Strata matches the code. Averages
/// are over the trimmed bucket, integer means as Cassandra's `avgSize`. When two
/// buckets have the same average, Cassandra keeps whichever its `HashMap`
/// iterates first; Strata takes the bucket holding the smallest id, so the
/// choice is deterministic. Trimming keeps the smallest sstables (Cassandra
/// keeps the hottest; with equal hotness its stable sort leaves them in the
/// bucket's ascending size order, so it keeps the smallest too).
pub fn most_interesting_bucket<'a>(
    buckets: &[Vec<&'a SSTableInfo>],
    min_threshold: u32,
    max_threshold: u32,
) -> Option<Vec<&'a SSTableInfo>> {
    let mut best: Option<(u64, u64, Vec<&SSTableInfo>)> = None;
    for bucket in buckets {
        let mut trimmed = bucket.clone();
        trimmed.sort_unstable_by_key(|s| (s.size_bytes, s.id));
        trimmed.truncate(max_threshold as usize);
        if trimmed.len() < min_threshold as usize || trimmed.is_empty() {
            continue;
        }
        let total: u128 = trimmed.iter().map(|s| s.size_bytes as u128).sum();
        let avg = (total / trimmed.len() as u128) as u64;
        let min_id = trimmed.iter().map(|s| s.id).min().unwrap_or(u64::MAX);
        let better = match &best {
            None => true,
            // Larger average first; on equal averages the smaller id.
            Some((a, id, _)) => (avg, std::cmp::Reverse(min_id)) > (*a, std::cmp::Reverse(*id)),
        };
        if better {
            best = Some((avg, min_id, trimmed));
        }
    }
    best.map(|(_, _, b)| b)
}

/// Cassandra's `getEstimatedCompactionsByTasks`: each bucket with at least
/// `min_threshold` sstables needs `ceil(len / max_threshold)` compactions.
pub fn estimated_tasks(
    buckets: &[Vec<&SSTableInfo>],
    min_threshold: u32,
    max_threshold: u32,
) -> usize {
    buckets
        .iter()
        .filter(|b| b.len() >= min_threshold as usize)
        .map(|b| b.len().div_ceil(max_threshold.max(1) as usize))
        .sum()
}

/// Size-tiered compaction (module docs).
pub struct SizeTieredCompactionStrategy {
    common: CommonCompactionOptions,
    stcs: StcsOptions,
}

impl SizeTieredCompactionStrategy {
    pub fn new(options: &CompactionOptions) -> SizeTieredCompactionStrategy {
        SizeTieredCompactionStrategy {
            common: options.common(),
            stcs: options.stcs(),
        }
    }

    /// The buckets of the sstables not being compacted (for tests and `compactionstats`).
    pub fn buckets<'a>(&self, sstables: &'a [SSTableInfo]) -> Vec<Vec<&'a SSTableInfo>> {
        get_buckets(sstables.iter().filter(|s| !s.being_compacted), &self.stcs)
    }
}

impl CompactionStrategy for SizeTieredCompactionStrategy {
    fn name(&self) -> &'static str {
        "SizeTieredCompactionStrategy"
    }

    fn common_options(&self) -> &CommonCompactionOptions {
        &self.common
    }

    /// The most interesting bucket; before it the shared step drops fully
    /// expired sstables (Cassandra's STCS only drops them inside a compaction
    /// that picks them), after it a single-sstable tombstone compaction.
    fn own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        let buckets = self.buckets(sstables);
        most_interesting_bucket(
            &buckets,
            self.common.min_threshold,
            self.common.max_threshold,
        )
        .map(|bucket| CompactionTask::Merge {
            inputs: sorted_ids(bucket),
            output_level: 0,
            split: OutputSplit::None,
            reason: TaskReason::SizeTiered,
        })
    }

    /// Stateless: the same as [`CompactionStrategy::own_task`].
    fn peek_own_task(
        &self,
        sstables: &[SSTableInfo],
        all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.own_task(sstables, all, _ctx)
    }

    /// The largest first, as Cassandra (it holds the most purgeable bytes).
    fn tombstone_preference(&self, a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering {
        largest_first(a, b)
    }

    /// Everything the shared step does not drop, merged into one sstable.
    fn major_merge(
        &self,
        _sstables: &[SSTableInfo],
        rest: &[&SSTableInfo],
    ) -> Option<CompactionTask> {
        major_merge_of(rest, 1, 0, OutputSplit::None)
    }

    fn estimated_pending_tasks(&self, sstables: &[SSTableInfo], _ctx: &StrategyContext) -> usize {
        estimated_tasks(
            &self.buckets(sstables),
            self.common.min_threshold,
            self.common.max_threshold,
        )
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    fn sizes(buckets: &[Vec<&SSTableInfo>]) -> Vec<Vec<u64>> {
        buckets
            .iter()
            .map(|b| b.iter().map(|s| s.size_bytes / MIB).collect())
            .collect()
    }

    fn set_of(sizes_mib: &[u64]) -> Vec<SSTableInfo> {
        sizes_mib
            .iter()
            .enumerate()
            .map(|(i, &m)| sst(i as u64 + 1, 0, m * MIB))
            .collect()
    }

    #[test]
    fn buckets_by_average_with_small_sstables_together() {
        let o = StcsOptions::default(); // 0.5, 1.5, 50 MiB
        let set = set_of(&[1, 49, 20, 100, 120, 140, 400, 1000, 700, 5]);
        let b = get_buckets(&set, &o);
        // 1, 5, 20, 49 are all small; 100 joins 100..140 (avg 100 -> 110 -> 120);
        // 400 is > 1.5 * 120; 700 is > 1.5 * 400 -> own bucket; 1000 < 1.5 * 700.
        assert_eq!(
            sizes(&b),
            vec![
                vec![1, 5, 20, 49],
                vec![100, 120, 140],
                vec![400],
                vec![700, 1000]
            ]
        );
        // 60 MiB is neither small nor within 1.5x the small bucket's 18.75 MiB
        // average: its own bucket.
        let set = set_of(&[10, 20, 30, 15, 60]);
        assert_eq!(
            sizes(&get_buckets(&set, &o)),
            vec![vec![10, 15, 20, 30], vec![60]]
        );
        // With min_sstable_size 0 nothing is "small": the ratio rule alone, strict
        // (15 is not < 1.5 * 10).
        let o0 = StcsOptions {
            min_sstable_size_bytes: 0,
            ..o.clone()
        };
        assert_eq!(
            sizes(&get_buckets(&set, &o0)),
            vec![vec![10], vec![15, 20], vec![30], vec![60]]
        );
        // Boundaries are strict: exactly 1.5x the average starts a new bucket.
        let set = set_of(&[100, 150]);
        assert_eq!(sizes(&get_buckets(&set, &o)), vec![vec![100], vec![150]]);
    }

    #[test]
    fn most_interesting_bucket_respects_thresholds_and_prefers_large() {
        let o = StcsOptions::default();
        // Bucket of 3 small (< min_threshold 4) and a bucket of 4 at ~100 MiB.
        let set = set_of(&[1, 2, 3, 100, 101, 102, 103]);
        let b = get_buckets(&set, &o);
        let chosen = most_interesting_bucket(&b, 4, 32).expect("bucket");
        assert_eq!(sorted_ids(chosen), vec![4, 5, 6, 7]);
        assert!(most_interesting_bucket(&b, 5, 32).is_none());
        // Two eligible buckets: the larger average wins (Cassandra's
        // comparator under `Collections.max`).
        let set = set_of(&[1, 2, 3, 4, 100, 101, 102, 103]);
        let b = get_buckets(&set, &o);
        assert_eq!(
            sorted_ids(most_interesting_bucket(&b, 4, 32).expect("b")),
            vec![5, 6, 7, 8]
        );
        // max_threshold trims to the smallest sstables (ties by id).
        let set = set_of(&[10, 10, 9, 11, 10, 12]);
        let b = get_buckets(&set, &o);
        assert_eq!(
            sorted_ids(most_interesting_bucket(&b, 2, 3).expect("b")),
            vec![1, 2, 3]
        );
    }

    #[test]
    fn next_task_prefers_drop_then_bucket_then_tombstones() {
        let s = SizeTieredCompactionStrategy::new(&opts("'class': 'SizeTieredCompactionStrategy'"));
        let now = 1_000_000;
        let mut set = set_of(&[1, 2, 3, 4, 500]);
        // All four small ones merge; the output is one unsplit level-0 sstable.
        assert_eq!(
            s.next_task(&set, &ctx(now)),
            Some(CompactionTask::Merge {
                inputs: vec![1, 2, 3, 4],
                output_level: 0,
                split: OutputSplit::None,
                reason: TaskReason::SizeTiered
            })
        );
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 1);
        // One of them being compacted: the bucket falls below min_threshold.
        set[0].being_compacted = true;
        assert_eq!(s.next_task(&set, &ctx(now)), None);
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 0);
        // A fully expired sstable that nothing older overlaps is dropped first.
        set[4].max_local_deletion_seconds = 10;
        set[4].min_timestamp_micros = 1;
        set[4].max_timestamp_micros = 2;
        set[1].droppable_tombstone_ratio = 0.9;
        assert_eq!(
            s.next_task(&set, &ctx(now)),
            Some(CompactionTask::Drop { ids: vec![5] })
        );
        // Without it: no bucket, and the tombstone-heavy sstable is fully covered
        // by overlapping live sstables, so rewriting it would purge nothing...
        set.pop();
        assert_eq!(s.next_task(&set, &ctx(now)), None);
        // ... until nothing else overlaps it: then it is rewritten alone.
        set[1].first_token = 0;
        set[1].last_token = 0;
        for other in [0, 2, 3] {
            set[other].first_token = 1;
        }
        assert_eq!(
            s.next_task(&set, &ctx(now)),
            Some(CompactionTask::Rewrite {
                id: 2,
                output_level: 0,
                reason: TaskReason::Tombstone
            })
        );
        let disabled = SizeTieredCompactionStrategy::new(&opts(
            "'class': 'SizeTieredCompactionStrategy', 'enabled': false",
        ));
        assert_eq!(disabled.next_task(&set, &ctx(now)), None);
    }

    #[test]
    fn major_compaction_merges_everything_or_nothing() {
        let s = SizeTieredCompactionStrategy::new(&CompactionOptions::default());
        let mut set = set_of(&[1, 200, 3000]);
        set[2].max_local_deletion_seconds = 0;
        set[2].min_timestamp_micros = i64::MAX - 1;
        set[2].max_timestamp_micros = i64::MAX - 1;
        set[2].first_token = 5;
        set[2].last_token = 5;
        // 3 overlaps 1 and 2, which hold older live data: not droppable.
        assert_eq!(
            s.major_compaction(&set, &ctx(10)),
            vec![CompactionTask::Merge {
                inputs: vec![1, 2, 3],
                output_level: 0,
                split: OutputSplit::None,
                reason: TaskReason::Major
            }]
        );
        set[2].max_timestamp_micros = 0;
        set[2].min_timestamp_micros = 0;
        assert_eq!(
            s.major_compaction(&set, &ctx(10)),
            vec![
                CompactionTask::Drop { ids: vec![3] },
                CompactionTask::Merge {
                    inputs: vec![1, 2],
                    output_level: 0,
                    split: OutputSplit::None,
                    reason: TaskReason::Major
                }
            ]
        );
        set[0].being_compacted = true;
        assert!(s.major_compaction(&set, &ctx(10)).is_empty());
        assert!(s.major_compaction(&[], &ctx(10)).is_empty());
    }

    #[test]
    fn estimated_tasks_counts_chunks_of_max_threshold() {
        let set = set_of(&[1; 70]);
        let b = get_buckets(&set, &StcsOptions::default());
        assert_eq!(estimated_tasks(&b, 4, 32), 3);
        assert_eq!(estimated_tasks(&b, 71, 80), 0);
    }
}
