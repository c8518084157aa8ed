//! Rules every strategy shares (Cassandra's `CompactionController` and
//! `AbstractCompactionStrategy`): which sstables may be dropped whole because all
//! their data has expired, and which single sstable is worth rewriting alone to
//! purge its tombstones. Also the token-overlap index the strategies use to keep
//! every decision O(n log n).
//!
//! Also the decision steps every strategy shares, written once: [`next_task`]
//! (fully expired drops first, then the strategy's own task, then a
//! single-sstable tombstone compaction) and [`major_compaction`] (drops, then the
//! strategy's major merge). Strategies provide only their own parts.
//!
//! Pure functions over [`SSTableInfo`]; callable from any thread.
//!
//! Invariants:
//! 1. [`fully_expired`] is Cassandra's `getFullyExpiredSSTables`, rule for rule: a
//!    candidate is returned only if it holds nothing live after `gc_before` and its
//!    newest write is older than the oldest write of every sstable or memtable that
//!    could hold data its tombstones shadow. Dropping it therefore resurrects
//!    nothing.
//! 2. [`OverlapIndex::overlapping`] returns exactly the indexed sstables whose
//!    inclusive token range intersects the query range, in (first token, id)
//!    order.
//! 3. [`worth_dropping_tombstones`] never says yes before
//!    `tombstone_compaction_interval` has passed since the sstable was written, so
//!    an estimate that turns out wrong cannot make the same sstable compact in a
//!    loop (the reason Cassandra added the interval).

use super::verdicts::{Rejection, RememberedRejections};
use super::view::DecisionView;
use super::{CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext};
use crate::options::CommonCompactionOptions;

/// Whether a decision may advance the strategy's state.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Decide {
    /// A real decision (the task will be run): state advances.
    Advance,
    /// An observer asking what would run: no state changes.
    Observe,
}

/// The ids of `set`, ascending: how every task names its inputs (invariant 2 of
/// the decider contract: ties and orders broken by id).
pub fn sorted_ids<'a>(set: impl IntoIterator<Item = &'a SSTableInfo>) -> Vec<u64> {
    let mut ids: Vec<u64> = set.into_iter().map(|s| s.id).collect();
    ids.sort_unstable();
    ids
}

/// Whether an expiry check that runs every `frequency_seconds`
/// (`expired_sstable_check_frequency_seconds`) is due at `now_seconds`; a real
/// decision ([`Decide::Advance`]) records the check in `last`, an observer
/// leaves it alone.
pub fn expiry_check_due(
    last: &mut Option<i64>,
    now_seconds: i64,
    frequency_seconds: u64,
    decide: Decide,
) -> bool {
    let due = last.is_none_or(|l| now_seconds.saturating_sub(l) >= frequency_seconds as i64);
    if due && decide == Decide::Advance {
        *last = Some(now_seconds);
    }
    due
}

/// The merge of a major compaction: every sstable of `rest` (ids ascending)
/// into `output_level`, cut by `split`; `None` with fewer than `min_inputs`.
/// Each strategy's `major_merge` chooses only the level, the split and the
/// minimum.
pub fn major_merge_of(
    rest: &[&SSTableInfo],
    min_inputs: usize,
    output_level: u32,
    split: OutputSplit,
) -> Option<CompactionTask> {
    (!rest.is_empty() && rest.len() >= min_inputs).then(|| CompactionTask::Merge {
        inputs: sorted_ids(rest.iter().copied()),
        output_level,
        split,
        reason: super::TaskReason::Major,
    })
}

/// Tombstone-compaction order "largest first, ties by id" (Cassandra's STCS:
/// the largest sstable holds the most purgeable bytes).
pub fn largest_first(a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering {
    b.size_bytes.cmp(&a.size_bytes).then(a.id.cmp(&b.id))
}

/// The background decision of every strategy, in order: nothing when the
/// strategy is disabled; drop fully expired sstables (a drop costs no I/O and
/// frees the most space); the strategy's own task; a single-sstable tombstone
/// compaction of the first sstable, in the strategy's preference, that is worth
/// one ([`worth_dropping_tombstones`]).
pub fn next_task<S: CompactionStrategy + ?Sized>(
    strategy: &S,
    sstables: &[SSTableInfo],
    ctx: &StrategyContext,
    decide: Decide,
) -> Option<CompactionTask> {
    let common = strategy.common_options();
    if !common.enabled {
        return None;
    }
    let index = OverlapIndex::new(sstables);
    let ids = strategy.expired_to_drop(sstables, &index, ctx, decide);
    if !ids.is_empty() {
        return Some(CompactionTask::Drop { ids });
    }
    let own = match decide {
        Decide::Advance => strategy.own_task(sstables, &index, ctx),
        Decide::Observe => strategy.peek_own_task(sstables, &index, ctx),
    };
    if own.is_some() {
        return own;
    }
    if !strategy.tombstone_compactions() {
        return None;
    }
    let mut candidates: Vec<&SSTableInfo> = sstables
        .iter()
        .filter(|s| !s.being_compacted && s.droppable_tombstone_ratio > common.tombstone_threshold)
        .collect();
    candidates.sort_by(|a, b| strategy.tombstone_preference(a, b));
    candidates
        .into_iter()
        .find(|s| worth_dropping_tombstones(s, &index, ctx, common))
        .map(|s| CompactionTask::Rewrite {
            id: s.id,
            output_level: strategy.tombstone_output_level(s),
            reason: super::TaskReason::Tombstone,
        })
}

/// The major compaction of every strategy: nothing while any sstable is being
/// compacted (a major compaction needs all of them, as Cassandra); fully expired
/// sstables dropped; everything else merged by the strategy's
/// [`CompactionStrategy::major_merge`].
pub fn major_compaction<S: CompactionStrategy + ?Sized>(
    strategy: &S,
    sstables: &[SSTableInfo],
    ctx: &StrategyContext,
) -> Vec<CompactionTask> {
    if sstables.is_empty() || sstables.iter().any(|s| s.being_compacted) {
        return Vec::new();
    }
    let index = OverlapIndex::new(sstables);
    let dropped = droppable_expired(sstables, &index, ctx, strategy.common_options());
    let rest: Vec<&SSTableInfo> = sstables
        .iter()
        .filter(|s| dropped.binary_search(&s.id).is_err())
        .collect();
    let mut tasks = Vec::new();
    if !dropped.is_empty() {
        tasks.push(CompactionTask::Drop { ids: dropped });
    }
    tasks.extend(strategy.major_merge(sstables, &rest));
    tasks
}

/// Cassandra's `getFullyExpiredSSTables(cfs, compacting, overlapping, gcBefore)`.
///
/// `compacting` is the set considered for dropping (with the other inputs of the
/// same compaction, if any); `overlapping` is every *other* live sstable whose
/// token range overlaps one of them. The rule:
///
/// - the candidates are the members of `compacting` whose
///   `max_local_deletion_seconds < gc_before` (nothing live, every tombstone
///   purgeable);
/// - `min` is the smallest `min_timestamp_micros` over the sstables that still
///   hold something live — the non-candidate members of `compacting` and the
///   members of `overlapping` with `max_local_deletion_seconds >= gc_before` (an
///   overlapping sstable that is itself fully expired shadows nothing) — and over
///   the memtables;
/// - a candidate is dropped iff its `max_timestamp_micros < min`: none of its
///   tombstones can shadow anything that would come back.
///
/// Returns the ids of the droppable candidates, ascending.
pub fn fully_expired<'a>(
    compacting: impl IntoIterator<Item = &'a SSTableInfo>,
    overlapping: impl IntoIterator<Item = &'a SSTableInfo>,
    gc_before: i64,
    memtable_min_timestamp_micros: Option<i64>,
) -> Vec<u64> {
    let mut min_timestamp = memtable_min_timestamp_micros.unwrap_or(i64::MAX);
    for s in overlapping {
        if s.max_local_deletion_seconds >= gc_before {
            min_timestamp = min_timestamp.min(s.min_timestamp_micros);
        }
    }
    let mut candidates = Vec::new();
    for s in compacting {
        if s.max_local_deletion_seconds < gc_before {
            candidates.push(s);
        } else {
            min_timestamp = min_timestamp.min(s.min_timestamp_micros);
        }
    }
    let mut ids: Vec<u64> = candidates
        .into_iter()
        .filter(|s| s.max_timestamp_micros < min_timestamp)
        .map(|s| s.id)
        .collect();
    ids.sort_unstable();
    ids
}

/// The sstables a strategy may drop right now: each sstable that is not
/// `being_compacted` and passes [`fully_expired`] *on its own* against every
/// other sstable overlapping it (being compacted or not) and the memtables.
///
/// Judging each candidate alone is what Cassandra does in `worthDroppingTombstones`
/// and inside a compaction whose only input it is. The alternative, passing every
/// uncompacting sstable as one `compacting` set (TWCS's up-front check), lets a
/// live sstable in a *disjoint* token range block the drop, which no resurrection
/// argument needs; dropping several candidates together is still safe because a
/// fully expired sstable never counts as a blocker (invariant 1).
///
/// `index` must cover all of `sstables`. Returns ids ascending; empty when
/// `only_purge_repaired_tombstones` is set (Strata has no repair yet, so nothing
/// is repaired).
pub fn droppable_expired(
    sstables: &[SSTableInfo],
    index: &OverlapIndex<'_>,
    ctx: &StrategyContext,
    options: &CommonCompactionOptions,
) -> Vec<u64> {
    if options.only_purge_repaired_tombstones {
        return Vec::new();
    }
    let gc_before = ctx.gc_before();
    let mut ids = Vec::new();
    for s in sstables {
        // Cheap filter first: almost every sstable holds live data.
        if s.being_compacted || s.max_local_deletion_seconds >= gc_before {
            continue;
        }
        if drops_alone(s, index.overlapping(s.first_token, s.last_token), ctx) {
            ids.push(s.id);
        }
    }
    ids.sort_unstable();
    ids
}

/// [`droppable_expired`] over a [`DecisionView`]: the same ids, found from the
/// view's expiry index (only sstables whose newest deletion time is before
/// `gc_before`) rather than a pass over every sstable.
pub fn droppable_expired_in(
    view: &DecisionView<'_>,
    ctx: &StrategyContext,
    options: &CommonCompactionOptions,
) -> Vec<u64> {
    if options.only_purge_repaired_tombstones {
        return Vec::new();
    }
    let mut ids: Vec<u64> = view
        .expiry_candidates(ctx.gc_before())
        .filter(|s| {
            !s.being_compacted && drops_alone(s, view.overlapping_nearest_first(s).flatten(), ctx)
        })
        .map(|s| s.id)
        .collect();
    ids.sort_unstable();
    ids
}

/// Whether the fully expired `s` may be dropped on its own, `overlapping`
/// being every sstable whose range meets its own (itself included or not).
/// The answer [`fully_expired`] gives for `[s]`, but it stops at the first
/// blocker: a leveled set's candidates are mostly blocked by the level above,
/// which callers pass first, and scanning every level for each of them made
/// this most of a large simulated run.
fn drops_alone<'a>(
    s: &'a SSTableInfo,
    mut overlapping: impl Iterator<Item = &'a SSTableInfo>,
    ctx: &StrategyContext,
) -> bool {
    // The engine's row-level check (compaction::expiry) may have cleared what
    // the one-timestamp-per-sstable rule below would block.
    if s.expiry_verified {
        return true;
    }
    let gc_before = ctx.gc_before();
    let memtable_min = ctx.memtable_min_timestamp_micros.unwrap_or(i64::MAX);
    s.max_local_deletion_seconds < gc_before
        && s.max_timestamp_micros < memtable_min
        && !overlapping.any(|o| {
            o.id != s.id
                && o.max_local_deletion_seconds >= gc_before
                && o.min_timestamp_micros <= s.max_timestamp_micros
        })
}

/// The shared steps of [`next_task`] around a strategy's own task, over a
/// [`DecisionView`] (strategies that decide on one: LCS). Same order and
/// same answers as [`next_task`] gives for the view's sstables, for a
/// strategy that keeps the default `expired_to_drop`: this path drops what
/// [`droppable_expired_in`] finds and never calls the hook, so a strategy
/// that overrides it (TWCS, DTCS, blob) must stay on [`next_task`]. Two
/// copies of the shared step exist until every strategy decides on a view
/// (docs/STATUS.md).
pub fn next_task_in<S: CompactionStrategy + ?Sized>(
    strategy: &S,
    view: &DecisionView<'_>,
    ctx: &StrategyContext,
    own_task: impl FnOnce() -> Option<CompactionTask>,
) -> Option<CompactionTask> {
    let common = strategy.common_options();
    if !common.enabled {
        return None;
    }
    let ids = droppable_expired_in(view, ctx, common);
    if !ids.is_empty() {
        return Some(CompactionTask::Drop { ids });
    }
    if let Some(own) = own_task() {
        return Some(own);
    }
    if common.only_purge_repaired_tombstones {
        return None;
    }
    // A kept view (the simulator's) leaves out the candidates whose "no" it
    // remembers and still holds (compaction::verdicts): the first worth in
    // preference order is the same.
    let mut candidates: Vec<&SSTableInfo> = view
        .tombstone_candidates_to_ask(
            common.tombstone_threshold,
            common.tombstone_compaction_interval_seconds,
            ctx.now_seconds,
            ctx.gc_before(),
        )
        .into_iter()
        .filter(|s| !s.being_compacted)
        .collect();
    candidates.sort_by(|a, b| strategy.tombstone_preference(a, b));
    for s in candidates {
        match tombstone_verdict(s, view.overlapping_nearest_first(s), ctx, common) {
            TombstoneVerdict::Worth => {
                return Some(CompactionTask::Rewrite {
                    id: s.id,
                    output_level: strategy.tombstone_output_level(s),
                    reason: super::TaskReason::Tombstone,
                })
            }
            TombstoneVerdict::No(Some(why)) => view.remember_tombstone_rejection(s.id, why),
            TombstoneVerdict::No(None) => {}
        }
    }
    None
}

/// The simulator's invariant check of a kept view's remembered answers: each
/// still-binding "no" (not yet released by time) is what the rule says now,
/// asked with every overlapping sstable. `Err` names the first that is not.
pub fn check_remembered_tombstone_rejections(
    view: &DecisionView<'_>,
    ctx: &StrategyContext,
    options: &CommonCompactionOptions,
) -> Result<(), String> {
    let RememberedRejections {
        asked_with,
        answers,
    } = view.remembered_tombstone_rejections();
    if asked_with
        != Some((
            options.tombstone_threshold,
            options.tombstone_compaction_interval_seconds,
        ))
    {
        return Ok(()); // forgotten at the next decision (contract 5)
    }
    for (id, why) in answers {
        let released = match &why {
            Rejection::Young { until_now } => ctx.now_seconds >= *until_now,
            Rejection::Covered {
                newest_deletion, ..
            } => *newest_deletion < ctx.gc_before(),
        };
        let Some(s) = view.get(id) else {
            return Err(format!(
                "remembered answer for sstable {id}, not in the view"
            ));
        };
        if released
            || s.being_compacted
            || s.droppable_tombstone_ratio <= options.tombstone_threshold
        {
            continue;
        }
        let all = std::iter::once(view.overlapping(s.first_token, s.last_token).collect());
        if matches!(
            tombstone_verdict(s, all, ctx, options),
            TombstoneVerdict::Worth
        ) {
            return Err(format!(
                "sstable {id}: remembered as not worth a tombstone rewrite ({why:?}), but it is now"
            ));
        }
    }
    Ok(())
}

/// Cassandra's `worthDroppingTombstones`: whether rewriting `sstable` alone is
/// expected to purge enough tombstones.
///
/// In order: never when `only_purge_repaired_tombstones` (nothing is repaired);
/// not before `tombstone_compaction_interval` seconds since creation (invariant 3);
/// not unless `droppable_tombstone_ratio > tombstone_threshold`; yes if
/// `unchecked_tombstone_compaction`; yes if no other sstable overlaps it, or if it
/// is fully expired against those that do; otherwise estimate the share of its
/// partitions outside every overlapping token range (tombstones there are surely
/// purgeable) and require `share * ratio > tombstone_threshold`.
///
/// Cassandra estimates the share from the index summary; Strata has only the token
/// bounds and assumes partitions are spread uniformly between them (Murmur3 tokens
/// are). Like Cassandra, it answers no for fewer than two partitions (too few
/// samples).
pub fn worth_dropping_tombstones(
    sstable: &SSTableInfo,
    index: &OverlapIndex<'_>,
    ctx: &StrategyContext,
    options: &CommonCompactionOptions,
) -> bool {
    let overlapping = std::iter::once(
        index
            .overlapping(sstable.first_token, sstable.last_token)
            .collect(),
    );
    matches!(
        tombstone_verdict(sstable, overlapping, ctx, options),
        TombstoneVerdict::Worth
    )
}

/// The rule's answer, and for a no that can be remembered, why
/// (compaction::verdicts).
enum TombstoneVerdict {
    Worth,
    No(Option<Rejection>),
}

/// [`worth_dropping_tombstones`] with the overlapping sstables given in
/// groups (asked for only once the cheap checks pass; they may include
/// `sstable` itself, and their order does not change the answer).
///
/// An sstable that cannot be fully expired yet (newest deletion at or after
/// `gc_before`: [`fully_expired`] refuses it whatever overlaps it) is judged
/// by coverage alone, group by group, and turned down as soon as the groups
/// seen leave too little uncovered: more overlaps only cover more, and each
/// step of `outside x ratio` is monotonic in floating point too, so the
/// answer is the one all overlaps give. Nearest levels first is what makes
/// this cheap: the next level up tiles the ring.
fn tombstone_verdict<'a>(
    sstable: &SSTableInfo,
    groups: impl Iterator<Item = Vec<&'a SSTableInfo>>,
    ctx: &StrategyContext,
    options: &CommonCompactionOptions,
) -> TombstoneVerdict {
    use TombstoneVerdict::{No, Worth};
    if options.only_purge_repaired_tombstones {
        return No(None);
    }
    let interval = i64::try_from(options.tombstone_compaction_interval_seconds).unwrap_or(i64::MAX);
    let old_enough_at = sstable.creation_time_seconds.saturating_add(interval);
    if ctx.now_seconds < old_enough_at {
        return No(Some(Rejection::Young {
            until_now: old_enough_at,
        }));
    }
    let ratio = sstable.droppable_tombstone_ratio;
    if ratio <= options.tombstone_threshold {
        return No(None);
    }
    if options.unchecked_tombstone_compaction {
        return Worth;
    }
    let gc_before = ctx.gc_before();
    let mut seen: Vec<&SSTableInfo> = Vec::new();
    if sstable.max_local_deletion_seconds < gc_before {
        seen.extend(groups.flatten().filter(|o| o.id != sstable.id));
        if seen.is_empty() {
            return Worth;
        }
        if !fully_expired(
            [sstable],
            seen.iter().copied(),
            gc_before,
            ctx.memtable_min_timestamp_micros,
        )
        .is_empty()
        {
            return Worth;
        }
        if sstable.partition_count < 2 {
            return No(None);
        }
        let outside = 1.0 - covered_fraction(sstable, &seen);
        return if outside * ratio > options.tombstone_threshold {
            Worth
        } else {
            No(None)
        };
    }
    for group in groups {
        let before = seen.len();
        seen.extend(group.into_iter().filter(|o| o.id != sstable.id));
        if seen.len() == before {
            continue;
        }
        let covered = |outside| {
            No(Some(Rejection::Covered {
                newest_deletion: sstable.max_local_deletion_seconds,
                outside,
                deps: seen.iter().map(|o| o.id).collect(),
            }))
        };
        if sstable.partition_count < 2 {
            return covered(None);
        }
        let outside = 1.0 - covered_fraction(sstable, &seen);
        // The negation of the rule's test, so that a NaN decides as it does.
        let passes = outside * ratio > options.tombstone_threshold;
        if !passes {
            return covered(Some(outside));
        }
    }
    // Nothing overlaps, or everything that does leaves enough uncovered.
    Worth
}

/// Fraction of `sstable`'s token span (inclusive) covered by the union of the
/// `others`' spans. In i128 so that the full i64 token range cannot overflow.
fn covered_fraction(sstable: &SSTableInfo, others: &[&SSTableInfo]) -> f64 {
    let (lo, hi) = (sstable.first_token as i128, sstable.last_token as i128);
    let span = hi - lo + 1;
    let mut clipped: Vec<(i128, i128)> = others
        .iter()
        .map(|o| {
            (
                (o.first_token as i128).max(lo),
                (o.last_token as i128).min(hi),
            )
        })
        .filter(|(a, b)| a <= b)
        .collect();
    clipped.sort_unstable();
    let mut covered: i128 = 0;
    let mut current: Option<(i128, i128)> = None;
    for (a, b) in clipped {
        match current {
            Some((ca, cb)) if a <= cb + 1 => current = Some((ca, cb.max(b))),
            Some((ca, cb)) => {
                covered += cb - ca + 1;
                current = Some((a, b));
            }
            None => current = Some((a, b)),
        }
    }
    if let Some((ca, cb)) = current {
        covered += cb - ca + 1;
    }
    covered as f64 / span as f64
}

/// Sstables sorted by `(first_token, id)` with the running maximum of
/// `last_token`, answering "which sstables overlap `[first, last]`" in
/// O(log n + k') where k' counts the sstables between the first possible match
/// and the last (invariant 2). For non-overlapping sets (an LCS level) k' is the
/// answer's size; for L0's wide flushes it degrades gracefully to a linear scan.
/// Chosen over an interval tree because it is ten lines and the sets are rebuilt
/// for every decision anyway.
pub struct OverlapIndex<'a> {
    by_first: Vec<&'a SSTableInfo>,
    prefix_max_last: Vec<i64>,
}

impl<'a> OverlapIndex<'a> {
    pub fn new(sstables: impl IntoIterator<Item = &'a SSTableInfo>) -> OverlapIndex<'a> {
        let mut by_first: Vec<&SSTableInfo> = sstables.into_iter().collect();
        by_first.sort_unstable_by_key(|s| (s.first_token, s.id));
        let mut prefix_max_last = Vec::with_capacity(by_first.len());
        let mut max = i64::MIN;
        for s in &by_first {
            max = max.max(s.last_token);
            prefix_max_last.push(max);
        }
        OverlapIndex {
            by_first,
            prefix_max_last,
        }
    }

    /// The indexed sstables in `(first_token, id)` order.
    pub fn sorted(&self) -> &[&'a SSTableInfo] {
        &self.by_first
    }

    pub fn len(&self) -> usize {
        self.by_first.len()
    }

    pub fn is_empty(&self) -> bool {
        self.by_first.is_empty()
    }

    /// Every indexed sstable whose token range intersects `[first, last]`.
    pub fn overlapping(&self, first: i64, last: i64) -> impl Iterator<Item = &'a SSTableInfo> + '_ {
        let end = self.by_first.partition_point(|s| s.first_token <= last);
        // prefix_max_last is non-decreasing: before `start` nothing reaches `first`.
        let start = self.prefix_max_last[..end].partition_point(|&m| m < first);
        self.by_first[start..end]
            .iter()
            .copied()
            .filter(move |s| s.last_token >= first)
    }
}

/// The smallest range covering every sstable in `set` (`None` when empty).
pub fn token_hull<'a>(set: impl IntoIterator<Item = &'a SSTableInfo>) -> Option<(i64, i64)> {
    set.into_iter().fold(None, |acc, s| match acc {
        None => Some((s.first_token, s.last_token)),
        Some((a, b)) => Some((a.min(s.first_token), b.max(s.last_token))),
    })
}

#[cfg(test)]
mod tests {
    use super::super::test_util::*;
    use super::*;

    fn expired(id: u64, first: i64, last: i64, ts: (i64, i64), ldt: i64) -> SSTableInfo {
        SSTableInfo {
            min_timestamp_micros: ts.0,
            max_timestamp_micros: ts.1,
            max_local_deletion_seconds: ldt,
            ..sst_range(id, 0, MIB, first, last)
        }
    }

    fn common() -> CommonCompactionOptions {
        CommonCompactionOptions::default()
    }

    #[test]
    fn overlap_index_matches_brute_force() {
        let set: Vec<SSTableInfo> = (0..40u64)
            .map(|i| {
                let first = ((i * 37) % 100) as i64 - 50;
                sst_range(i, 0, MIB, first, first + (i % 7) as i64 * 5)
            })
            .collect();
        let index = OverlapIndex::new(&set);
        for a in -60..60 {
            for w in [0, 3, 20] {
                let got: Vec<u64> = index.overlapping(a, a + w).map(|s| s.id).collect();
                let mut want: Vec<&SSTableInfo> = set
                    .iter()
                    .filter(|s| s.first_token <= a + w && s.last_token >= a)
                    .collect();
                want.sort_by_key(|s| (s.first_token, s.id));
                let want: Vec<u64> = want.iter().map(|s| s.id).collect();
                assert_eq!(got, want, "[{a}, {}]", a + w);
            }
        }
        assert_eq!(OverlapIndex::new(&[]).overlapping(0, 1).count(), 0);
    }

    #[test]
    fn expired_drop_blocked_by_overlapping_older_sstable_then_unblocked() {
        let c = ctx(10_000);
        // 1: fully expired (ldt 5000 < gc_before 10000), writes at ts 100..200.
        let dead = expired(1, 0, 100, (100, 200), 5_000);
        // 2: live, overlapping, older write (ts 50) that 1's tombstones may shadow.
        let older = expired(2, 50, 150, (50, 60), i64::MAX);
        // 3: live, not overlapping, even older: cannot hold shadowed data.
        let disjoint = expired(3, 200, 300, (1, 2), i64::MAX);
        let set = vec![dead.clone(), older, disjoint.clone()];
        let index = OverlapIndex::new(&set);
        assert!(droppable_expired(&set, &index, &c, &common()).is_empty());

        // Once the older overlapping sstable is gone (compacted away), 1 drops.
        let set = vec![dead.clone(), disjoint.clone()];
        let index = OverlapIndex::new(&set);
        assert_eq!(droppable_expired(&set, &index, &c, &common()), vec![1]);

        // A newer overlapping sstable does not block.
        let newer = expired(4, 0, 10, (300, 400), i64::MAX);
        let set = vec![dead.clone(), disjoint.clone(), newer];
        let index = OverlapIndex::new(&set);
        assert_eq!(droppable_expired(&set, &index, &c, &common()), vec![1]);

        // An overlapping older sstable that is itself fully expired does not block,
        // and both drop.
        let older_dead = expired(5, 50, 150, (50, 60), 9_000);
        let set = vec![dead.clone(), older_dead];
        let index = OverlapIndex::new(&set);
        assert_eq!(droppable_expired(&set, &index, &c, &common()), vec![1, 5]);

        // A memtable holding an older write blocks (it may hold any token).
        let mem = StrategyContext {
            memtable_min_timestamp_micros: Some(150),
            ..c
        };
        let set = vec![dead.clone()];
        let index = OverlapIndex::new(&set);
        assert!(droppable_expired(&set, &index, &mem, &common()).is_empty());

        // Not yet past gc grace: ldt 5000 >= gc_before 4000.
        let early = StrategyContext {
            now_seconds: 10_000,
            gc_grace_seconds: 6_000,
            memtable_min_timestamp_micros: None,
        };
        assert!(droppable_expired(&set, &index, &early, &common()).is_empty());

        // Being compacted: not proposed. only_purge_repaired_tombstones: never.
        let busy = vec![SSTableInfo {
            being_compacted: true,
            ..dead.clone()
        }];
        let index = OverlapIndex::new(&busy);
        assert!(droppable_expired(&busy, &index, &c, &common()).is_empty());
        let repaired_only = CommonCompactionOptions {
            only_purge_repaired_tombstones: true,
            ..common()
        };
        let index = OverlapIndex::new(&set);
        assert!(droppable_expired(&set, &index, &c, &repaired_only).is_empty());
    }

    #[test]
    fn fully_expired_follows_cassandra_set_rule() {
        // With several members in `compacting`, a live member's min timestamp
        // bounds every candidate, even a disjoint one (Cassandra's rule as is).
        let a = expired(1, 0, 10, (100, 200), 10);
        let live = expired(2, 500, 600, (150, 900), i64::MAX);
        assert!(fully_expired([&a, &live], [], 1000, None).is_empty());
        let live_newer = expired(3, 500, 600, (201, 900), i64::MAX);
        assert_eq!(fully_expired([&a, &live_newer], [], 1000, None), vec![1]);
        // Equal timestamps block (strictly older required).
        let tie = expired(4, 0, 10, (200, 300), i64::MAX);
        assert!(fully_expired([&a], [&tie], 1000, None).is_empty());
    }

    #[test]
    fn tombstone_compaction_threshold_and_interval() {
        let o = common(); // threshold 0.2, interval 86400 s
        let base = SSTableInfo {
            droppable_tombstone_ratio: 0.5,
            creation_time_seconds: 1_000,
            ..sst_range(1, 0, MIB, 0, 999)
        };
        let alone = vec![base.clone()];
        let index = OverlapIndex::new(&alone);
        let at = |now| ctx(now);
        // Too young: created at 1000, interval 86400.
        assert!(!worth_dropping_tombstones(&base, &index, &at(87_399), &o));
        assert!(worth_dropping_tombstones(&base, &index, &at(87_400), &o));
        // Ratio must exceed the threshold strictly.
        let low = SSTableInfo {
            droppable_tombstone_ratio: 0.2,
            ..base.clone()
        };
        assert!(!worth_dropping_tombstones(&low, &index, &at(100_000), &o));

        // Overlapped on 3/4 of its span by a live older sstable: 0.25 * 0.5 = 0.125
        // <= 0.2, not worth it; unchecked_tombstone_compaction skips the check.
        let other = SSTableInfo {
            min_timestamp_micros: 0,
            ..sst_range(2, 0, MIB, 250, 5_000)
        };
        let set = vec![base.clone(), other];
        let index = OverlapIndex::new(&set);
        assert!(!worth_dropping_tombstones(&base, &index, &at(100_000), &o));
        let unchecked = CommonCompactionOptions {
            unchecked_tombstone_compaction: true,
            ..o.clone()
        };
        assert!(worth_dropping_tombstones(
            &base,
            &index,
            &at(100_000),
            &unchecked
        ));
        // Overlapped on 1/4 only: 0.75 * 0.5 = 0.375 > 0.2.
        let small_overlap = SSTableInfo {
            min_timestamp_micros: 0,
            ..sst_range(3, 0, MIB, 750, 5_000)
        };
        let set = vec![base.clone(), small_overlap];
        let index = OverlapIndex::new(&set);
        assert!(worth_dropping_tombstones(&base, &index, &at(100_000), &o));
        // Too few partitions to estimate.
        let one = SSTableInfo {
            partition_count: 1,
            ..base.clone()
        };
        let set = vec![one.clone(), set[1].clone()];
        let index = OverlapIndex::new(&set);
        assert!(!worth_dropping_tombstones(&one, &index, &at(100_000), &o));
        // Interval 0 and threshold 0.0 (the simulator's aggressive settings).
        let eager = CommonCompactionOptions {
            tombstone_compaction_interval_seconds: 0,
            tombstone_threshold: 0.0,
            ..o
        };
        let fresh = SSTableInfo {
            droppable_tombstone_ratio: 0.01,
            creation_time_seconds: 500,
            ..base
        };
        let alone = vec![fresh.clone()];
        let index = OverlapIndex::new(&alone);
        assert!(worth_dropping_tombstones(&fresh, &index, &at(500), &eager));
    }

    /// `drops_alone` restates `fully_expired`'s rule for one sstable so that
    /// it can stop at the first blocker: the two must never drift apart.
    #[test]
    fn drops_alone_is_fully_expired_for_one_sstable() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(3);
        let mut random = |id: u64| {
            // Coarse timestamps, so that equal ones (the rule's edge) are common.
            let newest = rng.gen_range(0..40i64);
            expired(
                id,
                0,
                0,
                (newest - rng.gen_range(0..5), newest),
                rng.gen_range(0..2_000),
            )
        };
        let (mut drops, mut blocked) = (0, 0);
        for round in 0..2_000u64 {
            let s = random(0);
            let others: Vec<SSTableInfo> = (1..=round % 5).map(&mut random).collect();
            let c = StrategyContext {
                now_seconds: 1_000,
                gc_grace_seconds: 0,
                memtable_min_timestamp_micros: (round % 3 == 0).then_some(30),
            };
            let want = !fully_expired(
                [&s],
                others.iter(),
                c.gc_before(),
                c.memtable_min_timestamp_micros,
            )
            .is_empty();
            assert_eq!(drops_alone(&s, others.iter(), &c), want, "round {round}");
            if want {
                drops += 1;
            } else if s.max_local_deletion_seconds < c.gc_before() {
                blocked += 1;
            }
        }
        assert!(
            drops > 100 && blocked > 100,
            "{drops} drops, {blocked} blocked"
        );
    }

    #[test]
    fn covered_fraction_handles_full_token_range() {
        let whole = sst(1, 0, MIB);
        let half = sst_range(2, 0, MIB, 0, i64::MAX);
        let f = covered_fraction(&whole, &[&half]);
        assert!((f - 0.5).abs() < 1e-9, "{f}");
        let adjacent = [
            sst_range(3, 0, MIB, i64::MIN, -1),
            sst_range(4, 0, MIB, 0, i64::MAX),
        ];
        let f = covered_fraction(&whole, &[&adjacent[0], &adjacent[1]]);
        assert!((f - 1.0).abs() < 1e-12, "{f}");
        assert_eq!(token_hull(&adjacent), Some((i64::MIN, i64::MAX)));
        assert_eq!(token_hull(&[]), None);
    }
}
