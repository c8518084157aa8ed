//! The blob strategy (`BlobCompactionStrategy`; aliases `CFSCompactionStrategy`
//! and DSE's full class name): compaction for large immutable blocks, after
//! DataStax's CFS strategy (seed 002). The algorithm, what it assumes and when
//! not to use it are in docs/compaction/blob.md.
//!
//! Blocks are written once and deleted whole, so merging sstables buys nothing
//! but I/O: a read of a block finds it in one sstable whatever their number.
//! What costs space is deleted blocks, and those are known exactly from the
//! accounting the table keeps for this strategy ([`super::live_bytes`],
//! [`crate::version::LiveBytes`]). The decisions, in order:
//!
//! 1. (shared step) fully expired sstables are dropped — Cassandra's rule, and
//!    also a tombstone-only sstable past gc grace whose accounting says its
//!    deletions target nothing any more ([`BlobCompactionStrategy::expired_to_drop`]);
//! 2. sstables whose every partition is superseded by deletions held elsewhere
//!    are dropped whole, at zero I/O ([`CompactionTask::DropDead`]);
//! 3. sstables that share live rows with another (an overwrite or a partial
//!    update: the assumption broken) are merged together, so one version of each
//!    row remains; they are never dropped on accounting alone;
//! 4. the most fragmented sstable whose size over live bytes passes
//!    `max_sstable_fragmentation` (strictly) is rewritten alone, without what
//!    other sstables' deletions supersede;
//! 5. (shared step) single-sstable tombstone compaction by the tombstone options.
//!
//! Nothing else is ever compacted: the sstable count is not a reason.
//!
//! Pure decider, stateless; `Send + Sync`. An sstable not accounted yet
//! (`live == None`) is left alone by steps 2-4.
//!
//! Invariants:
//! 1. A `DropDead` names only sstables with `dead_partitions ==
//!    partition_count` (and at least one partition); an accounting-based
//!    expired drop only sstables that are fully expired at `gc_before`, whose
//!    deletions target nothing, that share no live row, and that no memtable
//!    write could be shadowed by.
//! 2. A fragmentation rewrite names one sstable with
//!    `uncompressed > max_sstable_fragmentation * live` where `live =
//!    uncompressed - dead_bytes`.

use super::common::{
    droppable_expired, largest_first, major_merge_of, sorted_ids, Decide, OverlapIndex,
};
use super::{
    CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext, TaskReason,
};
use crate::options::{BlobOptions, CommonCompactionOptions, CompactionOptions};

/// The blob strategy (module docs).
pub struct BlobCompactionStrategy {
    common: CommonCompactionOptions,
    blob: BlobOptions,
}

/// Bytes of `s` not superseded by deletions elsewhere (`None`: not accounted).
pub fn live_bytes(s: &SSTableInfo) -> Option<u64> {
    s.live
        .map(|l| s.uncompressed_bytes.saturating_sub(l.dead_bytes))
}

/// Size over live bytes (infinite when nothing is live), `None` when not
/// accounted.
pub fn fragmentation(s: &SSTableInfo) -> Option<f64> {
    let live = live_bytes(s)?;
    Some(if live == 0 {
        f64::INFINITY
    } else {
        s.uncompressed_bytes as f64 / live as f64
    })
}

fn wholly_dead(s: &SSTableInfo) -> bool {
    s.partition_count > 0
        && s.live
            .is_some_and(|l| l.dead_partitions >= s.partition_count)
}

impl BlobCompactionStrategy {
    pub fn new(options: &CompactionOptions) -> BlobCompactionStrategy {
        BlobCompactionStrategy {
            common: options.common(),
            blob: options.blob(),
        }
    }

    fn dead_drops(&self, sstables: &[SSTableInfo]) -> Vec<u64> {
        sorted_ids(
            sstables
                .iter()
                .filter(|s| !s.being_compacted && wholly_dead(s)),
        )
    }

    /// Sstables sharing live rows, oldest first, at most `max_threshold`; only
    /// when at least two are free (a lone one waits for its partner's task).
    fn overwrite_merge(&self, sstables: &[SSTableInfo]) -> Option<Vec<u64>> {
        let mut ids = sorted_ids(sstables.iter().filter(|s| {
            !s.being_compacted && s.live.is_some_and(|l| l.shares_live_rows) && !wholly_dead(s)
        }));
        ids.truncate(self.common.max_threshold.max(2) as usize);
        (ids.len() >= 2).then_some(ids)
    }

    /// The sstables past the fragmentation limit, most fragmented first (ties by
    /// id).
    fn fragmented<'a>(&self, sstables: &'a [SSTableInfo]) -> Vec<&'a SSTableInfo> {
        let max = self.blob.max_sstable_fragmentation;
        let mut out: Vec<(&SSTableInfo, f64)> = sstables
            .iter()
            .filter(|s| !s.being_compacted && !wholly_dead(s))
            .filter_map(|s| {
                let live = live_bytes(s)?;
                (s.uncompressed_bytes as f64 > max * live as f64)
                    .then(|| (s, fragmentation(s).unwrap_or(f64::INFINITY)))
            })
            .collect();
        out.sort_by(|a, b| b.1.total_cmp(&a.1).then(a.0.id.cmp(&b.0.id)));
        out.into_iter().map(|(s, _)| s).collect()
    }
}

impl CompactionStrategy for BlobCompactionStrategy {
    fn name(&self) -> &'static str {
        "BlobCompactionStrategy"
    }

    fn common_options(&self) -> &CommonCompactionOptions {
        &self.common
    }

    fn own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        let ids = self.dead_drops(sstables);
        if !ids.is_empty() {
            return Some(CompactionTask::DropDead { ids });
        }
        if let Some(inputs) = self.overwrite_merge(sstables) {
            return Some(CompactionTask::Merge {
                inputs,
                output_level: 0,
                split: OutputSplit::None,
                reason: TaskReason::Overwrite,
            });
        }
        self.fragmented(sstables)
            .first()
            .map(|s| CompactionTask::Rewrite {
                id: s.id,
                output_level: 0,
                reason: TaskReason::Fragmentation,
            })
    }

    fn peek_own_task(
        &self,
        sstables: &[SSTableInfo],
        all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.own_task(sstables, all, _ctx)
    }

    /// Cassandra's rule, plus the accounting's: a tombstone-only sstable past gc
    /// grace whose deletions target nothing older anywhere (its targets were
    /// dropped) goes even when an older sstable with unrelated live blocks
    /// overlaps it — the case that makes tombstones pile up under the coarse rule.
    fn expired_to_drop(
        &self,
        sstables: &[SSTableInfo],
        all: &OverlapIndex<'_>,
        ctx: &StrategyContext,
        _decide: Decide,
    ) -> Vec<u64> {
        let mut ids = droppable_expired(sstables, all, ctx, &self.common);
        if self.common.only_purge_repaired_tombstones {
            return ids;
        }
        let gc_before = ctx.gc_before();
        for s in sstables {
            let clear = s
                .live
                .is_some_and(|l| l.deletions_target_nothing && !l.shares_live_rows);
            let memtable_safe = ctx
                .memtable_min_timestamp_micros
                .is_none_or(|m| m > s.max_timestamp_micros);
            if !s.being_compacted
                && clear
                && memtable_safe
                && s.max_local_deletion_seconds < gc_before
            {
                ids.push(s.id);
            }
        }
        ids.sort_unstable();
        ids.dedup();
        ids
    }

    /// The largest first, as size-tiered.
    fn tombstone_preference(&self, a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering {
        largest_first(a, b)
    }

    /// `nodetool compact`: everything the shared step does not drop, into one
    /// sstable (the operator asked for it; the background never does this).
    fn major_merge(
        &self,
        _sstables: &[SSTableInfo],
        rest: &[&SSTableInfo],
    ) -> Option<CompactionTask> {
        major_merge_of(rest, 1, 0, OutputSplit::None)
    }

    /// Healthy blob tables hold many flush-sized sstables: no level-0 stall.
    fn stalls_writes_on_level0(&self) -> bool {
        false
    }

    fn tracks_live_bytes(&self) -> bool {
        true
    }

    /// One task for all the whole-sstable drops, one for the overwrite merge,
    /// one per fragmented sstable.
    fn estimated_pending_tasks(&self, sstables: &[SSTableInfo], _ctx: &StrategyContext) -> usize {
        usize::from(!self.dead_drops(sstables).is_empty())
            + usize::from(self.overwrite_merge(sstables).is_some())
            + self.fragmented(sstables).len()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;
    use crate::version::LiveBytes;

    fn blob(text: &str) -> BlobCompactionStrategy {
        BlobCompactionStrategy::new(&opts(&format!("'class': 'BlobCompactionStrategy'{text}")))
    }

    /// An accounted sstable of `uncompressed` bytes, `dead` of them superseded.
    fn acc(id: u64, uncompressed: u64, dead: u64, dead_partitions: u64) -> SSTableInfo {
        SSTableInfo {
            uncompressed_bytes: uncompressed,
            partition_count: 4,
            live: Some(LiveBytes {
                dead_bytes: dead,
                dead_partitions,
                shares_live_rows: false,
                deletions_target_nothing: true,
            }),
            ..sst(id, 0, uncompressed)
        }
    }

    fn decide(s: &BlobCompactionStrategy, set: &[SSTableInfo]) -> Option<CompactionTask> {
        s.next_task(set, &ctx(0))
    }

    #[test]
    fn many_live_sstables_are_never_merged() {
        let set: Vec<SSTableInfo> = (1..=40).map(|i| acc(i, 64 * MIB, 0, 0)).collect();
        assert_eq!(decide(&blob(""), &set), None);
        assert_eq!(blob("").estimated_pending_tasks(&set, &ctx(0)), 0);
    }

    #[test]
    fn a_wholly_dead_sstable_is_dropped_without_io() {
        let set = vec![
            acc(1, 64 * MIB, 64 * MIB, 4),
            acc(2, 64 * MIB, 60 * MIB, 3),
            acc(3, 64 * MIB, 64 * MIB, 4),
        ];
        assert_eq!(
            decide(&blob(""), &set),
            Some(CompactionTask::DropDead { ids: vec![1, 3] })
        );
        // Busy or unaccounted sstables are not touched.
        let mut busy = set.clone();
        busy[0].being_compacted = true;
        busy[2].live = None;
        assert_eq!(
            decide(&blob(""), &busy),
            Some(CompactionTask::Rewrite {
                id: 2,
                output_level: 0,
                reason: TaskReason::Fragmentation
            })
        );
    }

    #[test]
    fn fragmentation_rewrites_strictly_above_the_limit() {
        // 100 bytes, 20 live: exactly 5.0 -> left alone; 19 live -> rewritten.
        let at = vec![acc(1, 100, 80, 0)];
        assert_eq!(decide(&blob(""), &at), None);
        let above = vec![acc(1, 100, 81, 0)];
        assert_eq!(
            decide(&blob(""), &above),
            Some(CompactionTask::Rewrite {
                id: 1,
                output_level: 0,
                reason: TaskReason::Fragmentation
            })
        );
        // The option moves the limit.
        assert_eq!(
            decide(&blob(", 'max_sstable_fragmentation': 6"), &above),
            None
        );
        // The most fragmented goes first.
        let two = vec![acc(1, 100, 85, 0), acc(2, 100, 90, 0)];
        assert!(matches!(
            decide(&blob(""), &two),
            Some(CompactionTask::Rewrite { id: 2, .. })
        ));
        assert_eq!(blob("").estimated_pending_tasks(&two, &ctx(0)), 2);
    }

    #[test]
    fn overwrites_are_merged_never_dropped() {
        let mut a = acc(1, 64 * MIB, 0, 0);
        let mut b = acc(2, 64 * MIB, 0, 0);
        for s in [&mut a, &mut b] {
            if let Some(l) = s.live.as_mut() {
                l.shares_live_rows = true;
            }
        }
        let set = vec![a.clone(), b, acc(3, 64 * MIB, 0, 0)];
        assert_eq!(
            decide(&blob(""), &set),
            Some(CompactionTask::Merge {
                inputs: vec![1, 2],
                output_level: 0,
                split: OutputSplit::None,
                reason: TaskReason::Overwrite
            })
        );
        // A lone flagged sstable waits for its partner.
        assert_eq!(decide(&blob(""), &[a]), None);
    }

    #[test]
    fn expired_tombstones_whose_targets_are_gone_are_dropped() {
        // A tombstone-only sstable past gc grace, overlapped by an older live
        // sstable (the coarse rule blocks it), targets nothing by the accounting.
        let mut t = acc(5, MIB, 0, 0);
        t.max_local_deletion_seconds = 100;
        t.min_timestamp_micros = 9_000;
        t.max_timestamp_micros = 9_000;
        let old = acc(1, 64 * MIB, 0, 0); // timestamps 1000..1999: older than t
        let s = blob("");
        let c = StrategyContext {
            now_seconds: 1_000,
            gc_grace_seconds: 0,
            memtable_min_timestamp_micros: None,
        };
        let set = vec![old.clone(), t.clone()];
        assert_eq!(
            s.next_task(&set, &c),
            Some(CompactionTask::Drop { ids: vec![5] })
        );
        // Not before gc grace has passed.
        let early = StrategyContext {
            gc_grace_seconds: 10_000,
            ..c
        };
        assert_eq!(s.next_task(&set, &early), None);
        // Not while its deletions still target something, or a memtable holds
        // writes old enough to be shadowed by it.
        let mut targeting = t.clone();
        if let Some(l) = targeting.live.as_mut() {
            l.deletions_target_nothing = false;
        }
        assert_eq!(s.next_task(&[old.clone(), targeting], &c), None);
        let mem = StrategyContext {
            memtable_min_timestamp_micros: Some(5_000),
            ..c
        };
        assert_eq!(s.next_task(&set, &mem), None);
    }
}
