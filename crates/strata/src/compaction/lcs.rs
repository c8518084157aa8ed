//! Leveled compaction (Cassandra's `LeveledCompactionStrategy` / `LeveledManifest`)
//! with seed 000's tunable leveling multiplier (`fanout_size`) and its closing
//! proposal, the fixed-levels mode (`level_count`). Algorithm, math and options:
//! `docs/compaction/lcs.md`.
//!
//! Levels: L0 receives flushes and may overlap itself; each level `L >= 1` holds
//! sstables with disjoint token ranges, with a target of
//! `fanout_size^L * sstable_size` bytes (Cassandra's `maxBytesForLevel`; L0's
//! nominal target is `4 * sstable_size`, used only for scores), or in
//! fixed-levels mode targets that follow the top level ([`level_target_bytes`]).
//! L0 goes to L1 by Cassandra's rule (once it holds one sstable's worth; merged
//! within itself until then, whole or, with `l0_size_tiered`, by size tiers) or,
//! with `l0_compaction_trigger = n`, by RocksDB's (once it holds `n` sstables;
//! never merged within itself below that). The top level is
//! L8 (Cassandra's nine levels) or, in fixed-levels mode, `L{level_count}`; it is
//! never compacted upwards.
//!
//! Pure decider over metadata, `Send + Sync`. State kept behind a mutex (no I/O):
//! the round-robin position of each level (token after which the next candidate is
//! sought) and Cassandra's per-level starvation counters. The state advances
//! when a task is proposed
//! ([`CompactionStrategy::next_task`], [`CompactionStrategy::major_compaction`]),
//! never when work is
//! only observed (`peek_task`, `estimated_pending_tasks`, `level_scores`: those
//! decide on a copy of the state).
//!
//! Invariants:
//! 1. A task writing into level `L >= 1` includes every level-`L` sstable that
//!    overlaps the token hull of its inputs; a [`CompactionTask::Move`] into `L` is
//!    proposed only when no level-`L` sstable overlaps the moved one. Hence level
//!    `L` stays overlap-free, also with tasks running concurrently (an in-flight
//!    task's output hull is covered by its inputs, which are `being_compacted`, so
//!    a conflicting candidate is skipped). The property test replays random task
//!    interleavings to check this.
//! 2. Outputs land in level `from + 1`, in L0 (L0 merges of less than one
//!    sstable's worth, L0 size tiering), in the same level (tombstone rewrites), or
//!    in the top level (folding down levels above it); never above the top level.
//! 3. Sstables are cut at `sstable_size_in_mb` in both modes. In fixed-levels
//!    mode the targets of L1..L(N-1) follow the top level's actual bytes
//!    ([`level_target_bytes`]): the top never holds more than the ratio `r`
//!    times the level below's target once `r` exceeds the fanout, and no level
//!    above `level_count` is ever written.

use std::collections::HashSet;

use parking_lot::Mutex;

use super::common::{self, sorted_ids, token_hull, Decide, OverlapIndex};
use super::stcs::{get_buckets, most_interesting_bucket};
use super::view::DecisionView;
use super::{
    CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext, TaskReason,
};
use crate::options::{CommonCompactionOptions, CompactionOptions, LcsOptions, StcsOptions};

/// Most L0 sstables compacted into L1 at once; above this many, L0 is size-tiered
/// first when a higher level also needs work (Cassandra's `MAX_COMPACTING_L0`).
pub const MAX_COMPACTING_L0: usize = 32;
// The option's bound says why it must equal this.
const _: () = assert!(MAX_COMPACTING_L0 as u64 == crate::options::MAX_L0_COMPACTION_TRIGGER);
/// Compactions that may pass without one targeting the highest non-empty level
/// before one of its sstables is pulled into the next compaction (Cassandra's
/// `NO_COMPACTION_LIMIT`), so its tombstones eventually meet newer data and purge.
pub const NO_COMPACTION_LIMIT: u32 = 25;
/// Highest level without fixed levels: Cassandra keeps L0..L8.
pub const MAX_LEVEL: u32 = 8;
/// A level is compacted when its score exceeds this (Cassandra's 1.001: slack so a
/// level exactly at its target is left alone).
pub const SCORE_THRESHOLD: f64 = 1.001;
/// Seed 000's derived sstable size (the first fixed-levels design, kept for the
/// model's seed formula): at most this many times `sstable_size_in_mb`.
pub const FIXED_LEVELS_MAX_SIZE_FACTOR: u64 = 64;

const MIB: u64 = 1024 * 1024;

/// Fixed-levels mode: the ratio `r` between consecutive steps, derived from
/// the top level's actual bytes (RocksDB's `level_compaction_dynamic_level_bytes`
/// with a fixed level count):
///
/// ```text
/// r = max(fanout, (top_bytes / s)^(1 / (N + 1)))      s = sstable_size_in_mb, N = level_count
/// ```
///
/// There are `N + 1` steps from one sstable's worth to the top: L0 batches
/// grow to `s * r` ([`fixed_levels_l0_batch_bytes`]; Cassandra's L0 rule merges
/// the pile with each flush meanwhile, which costs about `r / 2` per byte, as a
/// round-robin level does), then each level is `r` times the one below. A
/// step's cost grows with its ratio, so an even split minimises the sum
/// (docs/compaction/lcs.md, "Fixed-levels mode"). Never below `fanout`: small
/// data keeps the normal mode's targets. With `level_count == 0`, `fanout`.
pub fn fixed_levels_ratio(top_bytes: u64, lcs: &LcsOptions) -> f64 {
    let fanout = lcs.fanout_size as f64;
    if lcs.level_count == 0 {
        return fanout;
    }
    let s = lcs.sstable_size_bytes().max(1) as f64;
    (top_bytes as f64 / s)
        .powf(1.0 / (lcs.level_count as f64 + 1.0))
        .max(fanout)
}

/// The L0 bytes at which L0 is promoted into L1: one sstable's worth
/// (Cassandra's rule) in normal mode; in fixed-levels mode
/// `max(s, top_bytes / r^N)`, the first of the `N + 1` steps of
/// [`fixed_levels_ratio`], so L1 is `r` batches rather than growing away
/// from a batch that does not (issue 16: "L0 -> L1 grows with data").
pub fn fixed_levels_l0_batch_bytes(top_bytes: u64, lcs: &LcsOptions) -> u64 {
    let s = lcs.sstable_size_bytes();
    if lcs.level_count == 0 {
        return s;
    }
    let r = fixed_levels_ratio(top_bytes, lcs);
    let batch = top_bytes as f64 / r.powi(lcs.level_count as i32);
    // `as` saturates; the max keeps at least one sstable's worth.
    (batch as u64).max(s)
}

/// The target of `level` (>= 1) in bytes. Normal mode: Cassandra's
/// `fanout^level * s`. Fixed-levels mode (`N = level_count`), below the top:
/// `max(fanout^level * s, top_bytes / r^(N - level))` with `r` from
/// [`fixed_levels_ratio`]: the targets follow the top level's actual size, so
/// the top never holds more than `r` times the level below (the first design's
/// top overfilled once its derived sstable size hit its clamp: issue 16). The
/// top level's own target is `max(fanout^N * s, top_bytes)`: it is full once
/// the targets follow it, never over. Level 0 (scores only): `4 * s`.
pub fn level_target_bytes(lcs: &LcsOptions, level: u32, top_bytes: u64) -> f64 {
    let s = lcs.sstable_size_bytes() as f64;
    if level == 0 {
        return 4.0 * s;
    }
    let fanout = lcs.fanout_size as f64;
    let normal = fanout.powi(level as i32) * s;
    let n = lcs.level_count;
    if n == 0 {
        return normal;
    }
    if level >= n {
        return normal.max(top_bytes as f64);
    }
    let r = fixed_levels_ratio(top_bytes, lcs);
    normal.max(top_bytes as f64 / r.powi((n - level) as i32))
}

/// Seed 000's proposal, the first fixed-levels design (before issue 16): the
/// sstable size `s`
/// at which levels L1..L`level_count` with targets `fanout^i * s` together hold
/// `total_bytes`:
///
/// ```text
/// s = total_bytes / sum_{i=1..N} fanout^i
/// ```
///
/// The geometric series (rather than seed 000's `data = s * fanout^N`, which
/// counts only the top level) gives the top level the share of the data it really
/// holds in steady state, `(fanout - 1) / fanout` of it, so the lower levels come
/// out at their targets instead of 1/fanout below. Rounded to whole MiB and
/// clamped to `[sstable_size_in_mb, 64 * sstable_size_in_mb]`; with
/// `level_count == 0`, `sstable_size_in_mb`. The strategy no longer uses it
/// (sstables stay at `sstable_size_in_mb`); the model prints the seed's formula
/// with it, beside the refined prediction of the current design.
pub fn fixed_levels_sstable_size(total_bytes: u64, lcs: &LcsOptions) -> u64 {
    let min = lcs.sstable_size_bytes();
    if lcs.level_count == 0 {
        return min;
    }
    let fanout = lcs.fanout_size as f64;
    let denominator: f64 = (1..=lcs.level_count).map(|i| fanout.powi(i as i32)).sum();
    let raw_mib = (total_bytes as f64 / denominator / MIB as f64).round();
    // `as` saturates on huge floats; the clamp bounds it anyway.
    let bytes = (raw_mib as u64).saturating_mul(MIB);
    bytes.clamp(min, min.saturating_mul(FIXED_LEVELS_MAX_SIZE_FACTOR))
}

#[derive(Clone, Debug, PartialEq)]
struct LcsState {
    /// Per level: last token of the last compaction out of it; the next candidate
    /// is the first sstable starting after it (Cassandra's `lastCompactedSSTables`).
    last_compacted_token: Vec<Option<i64>>,
    /// Per level: compactions proposed since one last targeted it (Cassandra's
    /// `compactionCounter`).
    rounds_without_compaction: Vec<u32>,
}

impl LcsState {
    fn ensure_levels(&mut self, levels: usize) {
        if self.last_compacted_token.len() < levels {
            self.last_compacted_token.resize(levels, None);
            self.rounds_without_compaction.resize(levels, 0);
        }
    }
}

/// How many level slots a decision tracks (the length the per-level state is
/// given): through the highest level holding an sstable or the top level,
/// whichever is higher, plus one spare so `top + 1` exists.
fn level_count(view: &DecisionView<'_>, top: u32) -> u32 {
    view.level_slots().saturating_sub(1).max(top) + 2
}

/// Whether two of `set` have intersecting token ranges.
fn any_overlap(set: &[&SSTableInfo]) -> bool {
    let mut ranges: Vec<(i64, i64)> = set.iter().map(|s| (s.first_token, s.last_token)).collect();
    ranges.sort_unstable();
    ranges.windows(2).any(|w| w[1].0 <= w[0].1)
}

/// Highest level >= 1 below `count` holding an sstable.
fn highest_non_empty(view: &DecisionView<'_>, count: u32) -> Option<u32> {
    (1..count).rev().find(|&l| view.level_len(l) > 0)
}

/// Leveled compaction (module docs).
pub struct LeveledCompactionStrategy {
    common: CommonCompactionOptions,
    stcs: StcsOptions,
    lcs: LcsOptions,
    state: Mutex<LcsState>,
}

impl LeveledCompactionStrategy {
    pub fn new(options: &CompactionOptions) -> LeveledCompactionStrategy {
        LeveledCompactionStrategy {
            common: options.common(),
            stcs: options.stcs(),
            lcs: options.lcs(),
            state: Mutex::new(LcsState {
                last_compacted_token: Vec::new(),
                rounds_without_compaction: Vec::new(),
            }),
        }
    }

    /// The highest level: `level_count` in fixed-levels mode, else [`MAX_LEVEL`].
    pub fn top_level(&self) -> u32 {
        if self.lcs.level_count > 0 {
            self.lcs.level_count
        } else {
            MAX_LEVEL
        }
    }

    /// The sstable size decisions use: `sstable_size_in_mb`, in both modes
    /// (fixed-levels mode bounds its sstables as RocksDB's dynamic levels do;
    /// its level targets follow the data instead: [`level_target_bytes`]).
    pub fn effective_sstable_size(&self, _sstables: &[SSTableInfo]) -> u64 {
        self.lcs.sstable_size_bytes()
    }

    /// [`Self::effective_sstable_size`], for observers.
    pub fn observed_sstable_size(&self, sstables: &[SSTableInfo]) -> u64 {
        self.effective_sstable_size(sstables)
    }

    /// Whether `self` and `other` hold the same decision state (round-robin
    /// positions, starvation counters): for tests that show
    /// observing leaves the state alone.
    pub fn same_state_as(&self, other: &LeveledCompactionStrategy) -> bool {
        *self.state.lock() == *other.state.lock()
    }

    /// The target of `level` given the top level's bytes
    /// ([`level_target_bytes`]; `size` is the sstable size in use).
    fn level_target(&self, level: u32, size: u64, top_bytes: u64) -> f64 {
        if self.lcs.level_count == 0 {
            return self.max_bytes_for_level(level, size) as f64;
        }
        level_target_bytes(&self.lcs, level, top_bytes)
    }

    /// Cassandra's `maxBytesForLevel`: `4 * sstable_size` for L0 (nominal), else
    /// `fanout^level * sstable_size` (saturating).
    pub fn max_bytes_for_level(&self, level: u32, sstable_size_bytes: u64) -> u64 {
        if level == 0 {
            return sstable_size_bytes.saturating_mul(4);
        }
        let bytes = (self.lcs.fanout_size as f64).powi(level as i32) * sstable_size_bytes as f64;
        if bytes >= u64::MAX as f64 {
            u64::MAX
        } else {
            bytes as u64
        }
    }

    /// Cassandra's `getCompactionCandidates`, plus folding down levels above the top.
    fn leveled_task(
        &self,
        view: &DecisionView<'_>,
        count: u32,
        size: u64,
        state: &mut LcsState,
    ) -> Option<CompactionTask> {
        let top = self.top_level();
        // Computed first, as Cassandra: if L0 has fallen behind, size-tier it before
        // any higher-level compaction, to bound the sstables a read must touch.
        let l0_catch_up = self.l0_catch_up(view);

        // Sstables above the top level exist only after `level_count` was lowered
        // (or the mode switched): fold them into the top level first. While any
        // remain, nothing else may write into the top level: such a task's range
        // could overlap an in-flight fold's output without overlapping any of the
        // fold's top-level inputs.
        let mut above_top = false;
        for level in (top + 1)..count {
            if view.level_len(level) == 0 {
                continue;
            }
            above_top = true;
            if let Some(task) = self.fold_down(view, level, top, size) {
                return Some(task);
            }
        }

        // Deepest level over its target first (not the highest score, unlike
        // LevelDB): compacting higher levels first keeps the data that L0 batches
        // are merged into small. The top level has nowhere to go.
        for level in (1..top).rev() {
            if view.level_len(level) == 0 {
                continue;
            }
            let target = self.level_target(level, size, view.level_bytes(top));
            let score = view.level_idle_bytes(level) as f64 / target;
            if score <= SCORE_THRESHOLD {
                continue;
            }
            if l0_catch_up.is_some() {
                return l0_catch_up;
            }
            if above_top && level + 1 == top {
                continue;
            }
            let Some(candidates) = self.candidates_for(view, level, state) else {
                continue;
            };
            let candidates = self.with_starved(view, count, level + 1, candidates, state);
            if let Some((_, last)) = token_hull(candidates.iter().copied()) {
                state.last_compacted_token[level as usize] = Some(last);
            }
            return Some(self.promotion(level, &candidates, size));
        }

        // Higher levels are happy: a standard L0 compaction.
        if view.level_len(0) == 0 {
            return None;
        }
        match self.l0_candidates(view, size) {
            Some((candidates, output_level)) if !(above_top && output_level == top) => {
                Some(CompactionTask::Merge {
                    inputs: sorted_ids(candidates.iter().copied()),
                    output_level,
                    split: OutputSplit::Size { max_bytes: size },
                    reason: TaskReason::Leveled { from_level: 0 },
                })
            }
            // Nothing standard to do (everything overlaps a running compaction):
            // keep L0 small with size tiering if it has fallen behind.
            _ => l0_catch_up,
        }
    }

    /// A lone sstable moves up a level when nothing there overlaps it and
    /// `single_sstable_uplevel` is on (Cassandra 4.0's `SingleSSTableLCSTask`);
    /// anything else is a merge split at the sstable size.
    fn promotion(&self, from_level: u32, candidates: &[&SSTableInfo], size: u64) -> CompactionTask {
        if candidates.len() == 1 && self.lcs.single_sstable_uplevel {
            return CompactionTask::Move {
                id: candidates[0].id,
                to_level: from_level + 1,
            };
        }
        CompactionTask::Merge {
            inputs: sorted_ids(candidates.iter().copied()),
            output_level: from_level + 1,
            split: OutputSplit::Size { max_bytes: size },
            reason: TaskReason::Leveled { from_level },
        }
    }

    /// Cassandra's `getCandidatesFor(level)` for `level >= 1`: walking the level in
    /// token order from just after the last compaction out of it (wrapping), the
    /// first sstable that, with every next-level sstable it overlaps, is not being
    /// compacted. Round robin spreads the rewriting evenly over the token range.
    fn candidates_for<'a>(
        &self,
        view: &'a DecisionView<'_>,
        level: u32,
        state: &LcsState,
    ) -> Option<Vec<&'a SSTableInfo>> {
        let after = state.last_compacted_token[level as usize];
        for s in view.level_round_robin(level, after) {
            if s.being_compacted {
                continue;
            }
            let mut candidates = vec![s];
            let mut busy = false;
            for o in view.overlapping_in_level(level + 1, s.first_token, s.last_token) {
                busy |= o.being_compacted;
                candidates.push(o);
            }
            if !busy {
                return Some(candidates);
            }
        }
        None
    }

    /// Cassandra's `getOverlappingStarvedSSTables`: count one more compaction for
    /// every level and reset the target's; if the highest non-empty level has gone
    /// more than [`NO_COMPACTION_LIMIT`] compactions without being targeted, add one
    /// of its sstables lying entirely within the candidates' token hull (so no new
    /// overlap appears in the output level). Its data moves down and meets newer
    /// data, which lets its tombstones purge.
    fn with_starved<'a>(
        &self,
        view: &'a DecisionView<'_>,
        count: u32,
        target_level: u32,
        mut candidates: Vec<&'a SSTableInfo>,
        state: &mut LcsState,
    ) -> Vec<&'a SSTableInfo> {
        for rounds in state.rounds_without_compaction.iter_mut().skip(1) {
            *rounds = rounds.saturating_add(1);
        }
        state.rounds_without_compaction[target_level as usize] = 0;
        let Some(highest) = highest_non_empty(view, count) else {
            return candidates;
        };
        if state.rounds_without_compaction[highest as usize] <= NO_COMPACTION_LIMIT {
            return candidates;
        }
        let Some((min, max)) = token_hull(candidates.iter().copied()) else {
            return candidates;
        };
        if min == max {
            // Single-partition candidates: nothing can be strictly contained.
            return candidates;
        }
        let starved = view.overlapping_in_level(highest, min, max).find(|s| {
            min <= s.first_token
                && s.last_token <= max
                && !s.being_compacted
                && !candidates.iter().any(|c| c.id == s.id)
        });
        if let Some(s) = starved {
            candidates.push(s);
        }
        candidates
    }

    /// Cassandra's `getSTCSInL0CompactionCandidate`: with more than
    /// [`MAX_COMPACTING_L0`] sstables in L0, the most interesting size-tiered bucket
    /// of L0 (thresholds and bucket bounds from the options; Cassandra hard-codes
    /// 4 and 32, the defaults), written back to L0 unsplit.
    fn l0_catch_up(&self, view: &DecisionView<'_>) -> Option<CompactionTask> {
        if view.level_len(0) <= MAX_COMPACTING_L0 {
            return None;
        }
        let buckets = get_buckets(
            view.level_sorted(0).filter(|s| !s.being_compacted),
            &self.stcs,
        );
        let bucket = most_interesting_bucket(
            &buckets,
            self.common.min_threshold,
            self.common.max_threshold,
        )?;
        Some(CompactionTask::Merge {
            inputs: sorted_ids(bucket.iter().copied()),
            output_level: 0,
            split: OutputSplit::None,
            reason: TaskReason::L0SizeTiered,
        })
    }

    /// Cassandra's `getCandidatesFor(0)` and `getNextLevel`: oldest first (by max
    /// timestamp), take each L0 sstable with every L0 sstable overlapping it,
    /// skipping groups that touch a running L0 compaction and sstables inside the
    /// running L0 compactions' token hull; at most [`MAX_COMPACTING_L0`] (the
    /// oldest). With at least one sstable's worth, add the overlapping L1 sstables
    /// and promote to L1 (none may be busy); otherwise merge within L0. Fewer than
    /// two candidates: nothing.
    ///
    /// Cassandra promotes when the L0 bytes are strictly above the sstable size but
    /// decides the output level with "not strictly below": at exactly the sstable
    /// size it writes into L1 without the overlapping L1 sstables. Strata uses `>=`
    /// for both, which keeps L1 overlap-free at that boundary.
    fn l0_candidates<'a>(
        &self,
        view: &'a DecisionView<'_>,
        size: u64,
    ) -> Option<(Vec<&'a SSTableInfo>, u32)> {
        // Fixed-levels mode promotes larger batches as the data grows (the
        // first of its `N + 1` even steps); normal mode: one sstable's worth.
        let batch = if self.lcs.level_count == 0 {
            size
        } else {
            fixed_levels_l0_batch_bytes(view.level_bytes(self.top_level()), &self.lcs)
        };
        let compacting = OverlapIndex::new(view.level_sorted(0).filter(|s| s.being_compacted));
        let compacting_hull = token_hull(compacting.sorted().iter().copied());
        let mut by_age: Vec<&SSTableInfo> = view.level_sorted(0).collect();
        by_age.sort_unstable_by_key(|s| (s.max_timestamp_micros, s.id));

        let mut removed: HashSet<u64> = HashSet::new();
        let mut chosen: HashSet<u64> = HashSet::new();
        let mut candidates: Vec<&SSTableInfo> = Vec::new();
        for &s in &by_age {
            if chosen.contains(&s.id) {
                continue;
            }
            // The group {s} + overlapping L0 touches a running compaction iff s is
            // running or a running L0 sstable overlaps s.
            if s.being_compacted
                || compacting
                    .overlapping(s.first_token, s.last_token)
                    .next()
                    .is_some()
            {
                continue;
            }
            let group: Vec<&SSTableInfo> = std::iter::once(s)
                .chain(
                    view.overlapping_in_level(0, s.first_token, s.last_token)
                        .filter(|t| t.id != s.id && !removed.contains(&t.id)),
                )
                .collect();
            for t in group {
                let clear = match compacting_hull {
                    None => true,
                    Some((a, b)) => t.last_token < a || t.first_token > b,
                };
                if clear && chosen.insert(t.id) {
                    candidates.push(t);
                }
                removed.insert(t.id);
            }
            if candidates.len() > MAX_COMPACTING_L0 {
                candidates.sort_unstable_by_key(|s| (s.max_timestamp_micros, s.id));
                candidates.truncate(MAX_COMPACTING_L0);
                break;
            }
        }

        let total = candidates
            .iter()
            .map(|s| s.size_bytes)
            .fold(0u64, u64::saturating_add);
        // `l0_compaction_trigger` (RocksDB's rule): promote at a count of
        // sstables, whatever their bytes, and never merge L0 within itself
        // below it; Cassandra's rule promotes at one sstable's worth.
        let trigger = self.lcs.l0_compaction_trigger as usize;
        if trigger > 0 && candidates.len() < trigger {
            return None;
        }
        let promote = trigger > 0 || total >= batch;
        if !promote && self.lcs.l0_size_tiered {
            // Fixed mode: as below, never a tier of disjoint slices.
            return self
                .l0_tier(&candidates)
                .filter(|tier| self.lcs.level_count == 0 || any_overlap(tier))
                .map(|tier| (tier, 0));
        }
        let mut output_level = 0;
        if promote {
            let (first, last) = token_hull(candidates.iter().copied())?;
            let l1: Vec<&SSTableInfo> = view.overlapping_in_level(1, first, last).collect();
            if l1.iter().any(|s| s.being_compacted)
                || compacting.overlapping(first, last).next().is_some()
            {
                return None;
            }
            candidates.extend(l1);
            output_level = 1;
        }
        if candidates.len() < 2 {
            return None;
        }
        // Fixed-levels mode merges within L0 up to batches of many sstables,
        // cut at `s` into disjoint slices: merging slices that no flush
        // overlaps would rewrite them for nothing, and again at the next
        // decision (the simulator's "did not settle"). Normal mode's piles are
        // below one sstable, a single output: Cassandra's rule as is.
        if output_level == 0 && self.lcs.level_count > 0 && !any_overlap(&candidates) {
            return None;
        }
        Some((candidates, output_level))
    }

    /// `l0_size_tiered`: below one sstable's worth, only a size tier of L0 is
    /// merged (the most interesting STCS bucket of at least `min_threshold`), so
    /// each flushed byte is rewritten about `log_T k` times in L0, not `k / 2`.
    /// The small-sstable rule (`min_sstable_size`, 50 MiB by default) is left out
    /// here: below it every L0 sstable would share one bucket, and a merged tier
    /// would be merged again with each new flush, as Cassandra's rule does.
    fn l0_tier<'a>(&self, candidates: &[&'a SSTableInfo]) -> Option<Vec<&'a SSTableInfo>> {
        let stcs = StcsOptions {
            min_sstable_size_bytes: 0,
            ..self.stcs.clone()
        };
        let buckets = get_buckets(candidates.iter().copied(), &stcs);
        most_interesting_bucket(
            &buckets,
            self.common.min_threshold,
            self.common.max_threshold,
        )
    }

    /// Merge (or move) the first free sstable of a level above the top, with the
    /// top-level sstables it overlaps, into the top level. Skipped while anything
    /// overlapping it is being compacted (an in-flight task's output could land
    /// there).
    fn fold_down(
        &self,
        view: &DecisionView<'_>,
        level: u32,
        top: u32,
        size: u64,
    ) -> Option<CompactionTask> {
        for s in view.level_sorted(level) {
            if s.being_compacted
                || view
                    .overlapping(s.first_token, s.last_token)
                    .any(|o| o.being_compacted)
            {
                continue;
            }
            let mut inputs: Vec<&SSTableInfo> = vec![s];
            inputs.extend(view.overlapping_in_level(top, s.first_token, s.last_token));
            if inputs.len() == 1 {
                return Some(CompactionTask::Move {
                    id: s.id,
                    to_level: top,
                });
            }
            return Some(CompactionTask::Merge {
                inputs: sorted_ids(inputs.iter().copied()),
                output_level: top,
                split: OutputSplit::Size { max_bytes: size },
                reason: TaskReason::Leveled { from_level: level },
            });
        }
        None
    }

    /// The leveled task of `next_task` (drops and tombstone rewrites are the
    /// shared steps of [`super::common::next_task_in`]) on `state`.
    fn own_task_in(&self, view: &DecisionView<'_>, state: &mut LcsState) -> Option<CompactionTask> {
        let size = self.lcs.sstable_size_bytes();
        let count = level_count(view, self.top_level());
        state.ensure_levels(count as usize);
        self.leveled_task(view, count, size, state)
    }

    /// The whole decision over `view`: the shared steps around the leveled
    /// task, which advances the strategy's state only for [`Decide::Advance`].
    fn decide_in(
        &self,
        view: &DecisionView<'_>,
        ctx: &StrategyContext,
        decide: Decide,
    ) -> Option<CompactionTask> {
        common::next_task_in(self, view, ctx, || match decide {
            Decide::Advance => self.own_task_in(view, &mut self.state.lock()),
            Decide::Observe => {
                let mut copy = self.state.lock().clone();
                self.own_task_in(view, &mut copy)
            }
        })
    }
}

impl CompactionStrategy for LeveledCompactionStrategy {
    fn name(&self) -> &'static str {
        "LeveledCompactionStrategy"
    }

    fn common_options(&self) -> &CommonCompactionOptions {
        &self.common
    }

    /// The leveled task (Cassandra's `getCompactionCandidates`); before it the
    /// shared step drops fully expired sstables (Cassandra drops them only inside
    /// a compaction that happens to include them; a drop costs no I/O), after it
    /// a single-sstable tombstone compaction.
    fn own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.own_task_in(&DecisionView::of(sstables), &mut self.state.lock())
    }

    fn peek_own_task(
        &self,
        sstables: &[SSTableInfo],
        _all: &OverlapIndex<'_>,
        _ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        let mut copy = self.state.lock().clone();
        self.own_task_in(&DecisionView::of(sstables), &mut copy)
    }

    /// Decides on a view built from `sstables` (the indexes LCS queries),
    /// which is what [`CompactionStrategy::next_task_in`] is given ready-made.
    fn next_task(&self, sstables: &[SSTableInfo], ctx: &StrategyContext) -> Option<CompactionTask> {
        self.decide_in(&DecisionView::of(sstables), ctx, Decide::Advance)
    }

    fn next_task_in(
        &self,
        view: &DecisionView<'_>,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.decide_in(view, ctx, Decide::Advance)
    }

    fn peek_task(&self, sstables: &[SSTableInfo], ctx: &StrategyContext) -> Option<CompactionTask> {
        self.decide_in(&DecisionView::of(sstables), ctx, Decide::Observe)
    }

    /// Cassandra's `findDroppableSSTable`: from the highest level down, by
    /// droppable ratio (highest first); rewritten into its own level.
    fn tombstone_preference(&self, a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering {
        b.level
            .cmp(&a.level)
            .then(
                b.droppable_tombstone_ratio
                    .total_cmp(&a.droppable_tombstone_ratio),
            )
            .then(a.id.cmp(&b.id))
    }

    fn tombstone_output_level(&self, sstable: &SSTableInfo) -> u32 {
        sstable.level
    }

    /// Everything the shared step does not drop, merged into the lowest level
    /// whose target holds it all (the top level at most), split at the sstable
    /// size. Cassandra's major LCS writer instead fills L1 to its target, then
    /// L2, ..., leaving each level a slice of the token range; one level gives the
    /// same single sstable per read and leaves every level under its target.
    fn major_merge(
        &self,
        sstables: &[SSTableInfo],
        rest: &[&SSTableInfo],
    ) -> Option<CompactionTask> {
        let size = self.effective_sstable_size(sstables);
        let total = rest
            .iter()
            .map(|s| s.size_bytes)
            .fold(0u64, u64::saturating_add);
        let top = self.top_level();
        let level = (1..=top)
            .find(|&l| self.max_bytes_for_level(l, size) >= total)
            .unwrap_or(top);
        common::major_merge_of(rest, 1, level, OutputSplit::Size { max_bytes: size })
    }

    /// Cassandra's `getEstimatedTasks`: per level below the top, the bytes above
    /// 1.001 x target divided by the sstable size, rounded up; plus one task per
    /// sstable above the top level. (Cassandra also counts the top level's excess,
    /// which no compaction ever removes.)
    fn estimated_pending_tasks(&self, sstables: &[SSTableInfo], _ctx: &StrategyContext) -> usize {
        let size = self.observed_sstable_size(sstables);
        let top = self.top_level();
        let view = DecisionView::of(sstables);
        let mut tasks = 0usize;
        for level in 0..level_count(&view, top) {
            if level > top {
                tasks += view.level_len(level);
                continue;
            }
            if level == top {
                continue;
            }
            let target = self.level_target(level, size, view.level_bytes(top));
            let limit = (target * SCORE_THRESHOLD) as u64;
            let excess = view.level_bytes(level).saturating_sub(limit);
            tasks += excess.div_ceil(size.max(1)) as usize;
        }
        tasks
    }

    /// Index = level, 0 through the top level (and any level above it that holds
    /// sstables): bytes not being compacted / [`Self::max_bytes_for_level`].
    fn level_scores(&self, sstables: &[SSTableInfo]) -> Vec<f64> {
        let size = self.observed_sstable_size(sstables);
        let top = self.top_level();
        let view = DecisionView::of(sstables);
        let last = highest_non_empty(&view, level_count(&view, top))
            .unwrap_or(0)
            .max(top);
        (0..=last)
            .map(|l| {
                view.level_idle_bytes(l) as f64 / self.level_target(l, size, view.level_bytes(top))
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{ctx, opts, sst, sst_range};
    use super::*;

    const S: u64 = 160 * MIB;

    fn lcs(extra: &str) -> LeveledCompactionStrategy {
        LeveledCompactionStrategy::new(&opts(&format!(
            "'class': 'LeveledCompactionStrategy'{extra}"
        )))
    }

    /// `count` disjoint sstables of `size` in `level`, ids from `first_id`, token
    /// ranges `[start + k * width, start + (k + 1) * width - 1]`.
    fn level(
        first_id: u64,
        lvl: u32,
        count: u64,
        size: u64,
        start: i64,
        width: i64,
    ) -> Vec<SSTableInfo> {
        (0..count)
            .map(|k| {
                let a = start + k as i64 * width;
                sst_range(first_id + k, lvl, size, a, a + width - 1)
            })
            .collect()
    }

    fn merge_of(t: &Option<CompactionTask>) -> (Vec<u64>, u32, TaskReason) {
        match t {
            Some(CompactionTask::Merge {
                inputs,
                output_level,
                reason,
                ..
            }) => (inputs.clone(), *output_level, *reason),
            other => panic!("expected a merge, got {other:?}"),
        }
    }

    #[test]
    fn level_targets_follow_fanout() {
        let s = lcs(", 'fanout_size': 4");
        assert_eq!(s.max_bytes_for_level(0, S), 4 * S);
        assert_eq!(s.max_bytes_for_level(1, S), 4 * S);
        assert_eq!(s.max_bytes_for_level(3, S), 64 * S);
        assert_eq!(lcs("").max_bytes_for_level(2, S), 100 * S);
        assert_eq!(lcs("").max_bytes_for_level(30, u64::MAX / 2), u64::MAX);
    }

    #[test]
    fn deepest_level_over_target_is_compacted_first() {
        let s = lcs("");
        // L1: 11 x 160 MiB = score 1.1; L2: 50 x 160 MiB = score 0.5.
        let mut set = level(1, 1, 11, S, 0, 1000);
        set.extend(level(100, 2, 50, S, 0, 220));
        let (inputs, out, reason) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((out, reason), (2, TaskReason::Leveled { from_level: 1 }));
        assert_eq!(inputs[0], 1, "round robin starts at the lowest token");
        // L2 at score 1.2 too: L2 goes first even though L1's score is higher.
        let mut set = level(1, 1, 50, S, 0, 200); // score 5.0
        set.extend(level(100, 2, 120, S, 0, 100)); // score 1.2
        let task = s.next_task(&set, &ctx(0)).expect("a task");
        assert_eq!(task.output_level(), Some(3), "{task:?}");
        let scores = s.level_scores(&set);
        assert_eq!(scores.len(), 9);
        assert!((scores[1] - 5.0).abs() < 1e-9 && (scores[2] - 1.2).abs() < 1e-9);
        // Exactly at target (score 1.0 <= 1.001): nothing to do.
        let set = level(1, 1, 10, S, 0, 1000);
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 0);
        let set = level(1, 1, 13, S, 0, 1000);
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 3);
    }

    #[test]
    fn next_level_overlaps_are_included_and_busy_ones_skip_the_candidate() {
        let s = lcs("");
        let mut set = level(1, 1, 11, S, 0, 100); // [0,99], [100,199], ...
        set.extend([
            sst_range(50, 2, S, -100, 50),
            sst_range(51, 2, S, 60, 120),
            sst_range(52, 2, S, 121, 130),
            sst_range(53, 2, S, 131, 250),
            sst_range(54, 2, S, 251, 400),
        ]);
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![1, 50, 51], 2));
        // Next call continues after token 120 (the hull's end): sstable 3 [200,299]
        // starts after it; 2 [100,199] is skipped this round.
        let (inputs, _, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!(inputs, vec![3, 53, 54]);
        // An overlapping L2 sstable being compacted makes the candidate wait.
        let s = lcs("");
        set.iter_mut()
            .find(|x| x.id == 51)
            .expect("51")
            .being_compacted = true;
        let (inputs, _, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!(inputs, vec![3, 53, 54]);
    }

    #[test]
    fn round_robin_walks_the_level_and_wraps() {
        let s = lcs("");
        // 12 L1 sstables over target, L2 empty: every candidate is a lone move.
        let set = level(1, 1, 12, S, 0, 100);
        let ids: Vec<u64> = (0..14)
            .map(|_| match s.next_task(&set, &ctx(0)) {
                Some(CompactionTask::Move { id, to_level: 2 }) => id,
                other => panic!("expected a move, got {other:?}"),
            })
            .collect();
        assert_eq!(ids, vec![1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 1, 2]);
        // single_sstable_uplevel off: a one-input merge instead of a move.
        let s = lcs(", 'single_sstable_uplevel': false");
        assert_eq!(
            s.next_task(&set, &ctx(0)),
            Some(CompactionTask::Merge {
                inputs: vec![1],
                output_level: 2,
                split: OutputSplit::Size { max_bytes: S },
                reason: TaskReason::Leveled { from_level: 1 }
            })
        );
    }

    #[test]
    fn observing_pending_work_changes_no_state() {
        // `observed` is looked at (peek, pending estimate, scores) before every
        // decision; `plain` only decides. Both must make the same decisions and
        // hold the same state throughout: observing never moves the round robin.
        let observed = lcs(", 'level_count': 3, 'sstable_size_in_mb': 10");
        let plain = lcs(", 'level_count': 3, 'sstable_size_in_mb': 10");
        let mut set = level(1, 1, 12, 60 * MIB, 0, 100);
        set.push(sst(99, 3, 50_000 * MIB));
        let mut decisions = Vec::new();
        for round in 0..14 {
            let peeked = observed.peek_task(&set, &ctx(0));
            for _ in 0..5 {
                assert_eq!(observed.peek_task(&set, &ctx(0)), peeked, "round {round}");
                let _ = observed.estimated_pending_tasks(&set, &ctx(0));
                let _ = observed.level_scores(&set);
                let _ = observed.observed_sstable_size(&set);
            }
            assert!(observed.same_state_as(&plain), "round {round}: state moved");
            let decided = observed.next_task(&set, &ctx(0));
            assert_eq!(decided, peeked, "round {round}: peek differs from decision");
            assert_eq!(decided, plain.next_task(&set, &ctx(0)), "round {round}");
            assert!(decided.is_some(), "round {round}: L1 is over target");
            decisions.push(decided);
        }
        // The decisions did walk the level: the state that observing leaves
        // alone is real (the old observer, calling `next_task`, moved it).
        decisions.sort_by_key(|t| format!("{t:?}"));
        decisions.dedup();
        assert!(decisions.len() >= 12, "{decisions:?}");
    }

    #[test]
    fn l0_promotes_with_overlapping_l1_or_merges_within_l0() {
        let s = lcs("");
        // Two small flushes (< one sstable's worth): merged within L0.
        let mut set = vec![
            sst_range(1, 0, 50 * MIB, 0, 500),
            sst_range(2, 0, 50 * MIB, 400, 900),
            sst_range(10, 1, S, 0, 99),
            sst_range(11, 1, S, 600, 700),
            sst_range(12, 1, S, 1000, 2000),
        ];
        assert_eq!(
            s.next_task(&set, &ctx(0)),
            Some(CompactionTask::Merge {
                inputs: vec![1, 2],
                output_level: 0,
                split: OutputSplit::Size { max_bytes: S },
                reason: TaskReason::Leveled { from_level: 0 }
            })
        );
        // A third makes 50 + 50 + 60 >= 160 MiB: promoted with every L1 sstable in
        // the hull [0, 900] (11 lies in the gap between 1 and 2: still included, or
        // the output spanning the gap would overlap it).
        set.push(sst_range(3, 0, 60 * MIB, 850, 900));
        set[0].last_token = 100;
        set[1].first_token = 800;
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![1, 2, 3, 10, 11], 1));
        // A busy L1 sstable in the hull blocks the promotion.
        set[3].being_compacted = true;
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        // A single L0 sstable is left alone.
        let set = vec![sst_range(1, 0, S * 2, 0, 10)];
        assert_eq!(s.next_task(&set, &ctx(0)), None);
    }

    #[test]
    fn l0_size_tiered_merges_tiers_not_the_whole_pile() {
        let s = lcs(", 'l0_size_tiered': true");
        // Flushes of 10 MiB (below `min_sstable_size`, which L0 tiering ignores)
        // against 160 MiB sstables: three wait, the fourth makes a tier.
        let flush = |id| sst_range(id, 0, 10 * MIB, 0, 1000);
        let mut set: Vec<SSTableInfo> = (1..=3).map(flush).collect();
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        set.push(flush(4));
        let (inputs, out, reason) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![1, 2, 3, 4], 0));
        assert_eq!(reason, TaskReason::Leveled { from_level: 0 });
        // A merged 40 MiB tier is not merged again with the next flushes: it
        // waits for three more of its size. Cassandra's rule (the default)
        // merges the whole pile at every flush.
        let mut set = vec![sst_range(5, 0, 40 * MIB, 0, 1000)];
        set.extend((6..=8).map(flush));
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        let (inputs, _, _) = merge_of(&lcs("").next_task(&set, &ctx(0)));
        assert_eq!(inputs, vec![5, 6, 7, 8]);
        // One sstable's worth in L0 is promoted whole, tiers and all, as before.
        set.push(sst_range(9, 0, 90 * MIB, 0, 1000));
        set.push(sst_range(20, 1, S, 0, 1000));
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![5, 6, 7, 8, 9, 20], 1));
    }

    #[test]
    fn l0_compaction_trigger_promotes_at_a_count_and_never_merges_l0_below_it() {
        let s = lcs(", 'l0_compaction_trigger': 4");
        let flush = |id| sst_range(id, 0, 10 * MIB, 0, 1000);
        // Three flushes wait, unmerged (Cassandra's rule merges them as a pile).
        let mut set: Vec<SSTableInfo> = (1..=3).map(flush).collect();
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        let (inputs, out, _) = merge_of(&lcs("").next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![1, 2, 3], 0));
        // The fourth takes all four into L1 with L1's overlap, though 40 MiB is
        // far below one sstable's worth (160 MiB).
        set.push(flush(4));
        set.push(sst_range(20, 1, S, 0, 500));
        set.push(sst_range(21, 1, S, 501, 1000));
        set.push(sst_range(22, 1, S, 2000, 3000));
        let (inputs, out, reason) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![1, 2, 3, 4, 20, 21], 1));
        assert_eq!(reason, TaskReason::Leveled { from_level: 0 });
        // Bytes do not count: three flushes of two sstables' worth each wait.
        let big: Vec<SSTableInfo> = (1..=3).map(|id| sst_range(id, 0, 2 * S, 0, 1000)).collect();
        assert_eq!(s.next_task(&big, &ctx(0)), None);
        // While L1's overlap is being compacted the batch waits, whole.
        set[4].being_compacted = true;
        assert_eq!(s.next_task(&set, &ctx(0)), None);
    }

    #[test]
    fn l0_candidates_avoid_the_gaps_of_a_running_l0_compaction() {
        let s = lcs("");
        // A and B are being merged into L1; that output may span [0, 60]. C and D,
        // flushed since, lie in the gap: promoting them to L1 now could overlap it.
        let mut set = vec![
            sst_range(1, 0, 100 * MIB, 0, 10),
            sst_range(2, 0, 100 * MIB, 50, 60),
            sst_range(3, 0, 100 * MIB, 20, 30),
            sst_range(4, 0, 100 * MIB, 35, 40),
        ];
        set[0].being_compacted = true;
        set[1].being_compacted = true;
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        // Outside the running compaction's hull they go ahead.
        set[2].first_token = 70;
        set[2].last_token = 80;
        set[3].first_token = 75;
        set[3].last_token = 90;
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![3, 4], 1));
    }

    #[test]
    fn l0_takes_the_32_oldest() {
        let s = lcs("");
        // 40 overlapping flushes, older = smaller max timestamp = smaller id.
        let set: Vec<SSTableInfo> = (1..=40).map(|i| sst(i, 0, 10 * MIB)).collect();
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!(inputs, (1..=32).collect::<Vec<u64>>());
        assert_eq!(out, 1);
    }

    #[test]
    fn l0_size_tiering_when_behind_and_a_higher_level_needs_work() {
        let s = lcs("");
        let mut set: Vec<SSTableInfo> = (1..=33).map(|i| sst(i, 0, (i % 3 + 1) * MIB)).collect();
        set.extend(level(100, 1, 11, S, 0, 100)); // L1 score 1.1
        let t = s.next_task(&set, &ctx(0));
        let (inputs, out, reason) = merge_of(&t);
        assert_eq!((out, reason), (0, TaskReason::L0SizeTiered));
        assert_eq!(inputs.len(), 32, "trimmed to max_threshold");
        assert!(matches!(
            t,
            Some(CompactionTask::Merge {
                split: OutputSplit::None,
                ..
            })
        ));
        // 32 in L0 is not "behind": the L1 promotion goes first (a lone move here).
        set.retain(|x| x.id != 33);
        assert!(matches!(
            s.next_task(&set, &ctx(0)),
            Some(CompactionTask::Move { to_level: 2, .. })
        ));
        // 33 in L0 but no higher level over target: Cassandra's standard L0
        // compaction (32 oldest with the L1 overlaps) is preferred.
        let set: Vec<SSTableInfo> = (1..=33).map(|i| sst(i, 0, 10 * MIB)).collect();
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs.len(), out), (32, 1));
    }

    #[test]
    fn starved_top_level_sstable_joins_after_25_rounds() {
        let s = lcs("");
        // L1 far over target (100 sstables [k*100, k*100+99]); L2 has each range's
        // twin; L3 holds small sstables inside each range and is never targeted.
        let mut set = level(1, 1, 100, S, 0, 100);
        set.extend(level(1000, 2, 100, MIB, 0, 100));
        set.extend(
            (0..100).map(|k| sst_range(5000 + k, 3, MIB, k as i64 * 100 + 10, k as i64 * 100 + 20)),
        );
        for round in 1..=NO_COMPACTION_LIMIT + 1 {
            let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
            assert_eq!(out, 2);
            let l3: Vec<u64> = inputs.into_iter().filter(|&id| id >= 5000).collect();
            if round <= NO_COMPACTION_LIMIT {
                assert!(l3.is_empty(), "round {round}: {l3:?}");
            } else {
                // Round 26: 26 > 25, the L3 sstable inside [2500, 2599] joins.
                assert_eq!(l3, vec![5025], "round {round}");
            }
        }
    }

    #[test]
    fn expired_drop_blocked_by_overlapping_older_then_unblocked() {
        let s = lcs("");
        let dead = SSTableInfo {
            max_local_deletion_seconds: 100,
            min_timestamp_micros: 5_000,
            max_timestamp_micros: 6_000,
            ..sst_range(1, 2, S, 0, 100)
        };
        let older = SSTableInfo {
            min_timestamp_micros: 10,
            ..sst_range(2, 3, S, 50, 300)
        };
        let set = vec![dead.clone(), older];
        assert_eq!(s.next_task(&set, &ctx(1_000)), None);
        assert_eq!(
            s.next_task(&[dead], &ctx(1_000)),
            Some(CompactionTask::Drop { ids: vec![1] })
        );
    }

    #[test]
    fn tombstone_rewrite_prefers_highest_level_and_ratio() {
        let s = lcs("");
        let now = 200_000;
        let mut set = level(1, 1, 3, MIB, 0, 100);
        set.extend(level(10, 2, 3, MIB, 1000, 100));
        set[0].droppable_tombstone_ratio = 0.9;
        set[4].droppable_tombstone_ratio = 0.3;
        set[5].droppable_tombstone_ratio = 0.5;
        assert_eq!(
            s.next_task(&set, &ctx(now)),
            Some(CompactionTask::Rewrite {
                id: 12,
                output_level: 2,
                reason: TaskReason::Tombstone
            })
        );
        // Too young for tombstone_compaction_interval (1 day).
        assert_eq!(s.next_task(&set, &ctx(86_399)), None);
    }

    #[test]
    fn fixed_levels_targets_follow_the_top_level() {
        // N = 3, fanout 4, sstables of 10 MiB.
        let s = lcs(", 'fanout_size': 4, 'level_count': 3, 'sstable_size_in_mb': 10");
        let o = opts(
            "'class': 'LeveledCompactionStrategy', 'fanout_size': 4, 'level_count': 3, 'sstable_size_in_mb': 10",
        )
        .lcs();
        // Small data: the normal targets (4^i x 10 MiB), the ratio is the fanout.
        assert_eq!(fixed_levels_ratio(0, &o), 4.0);
        assert_eq!(level_target_bytes(&o, 1, 0), 40.0 * MIB as f64);
        assert_eq!(level_target_bytes(&o, 2, 500 * MIB), 160.0 * MIB as f64);
        // At exactly 4^3 x s in the top the two rules meet (no jump).
        let meet = 640 * MIB;
        assert!((fixed_levels_ratio(meet, &o) - 4.0).abs() < 1e-9);
        assert!((level_target_bytes(&o, 2, meet) - 160.0 * MIB as f64).abs() < 1.0);
        // 64,000 MiB in L3: four steps from one sstable, r = 6400^(1/4) = 8.94;
        // L2 = 64,000 / r, L1 = L2 / r, L0 batches L1 / r.
        let top = 64_000 * MIB;
        let r = 6400f64.powf(1.0 / 4.0);
        assert!((fixed_levels_ratio(top, &o) - r).abs() < 1e-9);
        let l2 = level_target_bytes(&o, 2, top);
        let l1 = level_target_bytes(&o, 1, top);
        assert!((l2 - top as f64 / r).abs() < 1.0 && (l1 - l2 / r).abs() < 1.0);
        let batch = fixed_levels_l0_batch_bytes(top, &o);
        assert!((batch as f64 - l1 / r).abs() < 2.0, "{batch}");
        assert_eq!(fixed_levels_l0_batch_bytes(0, &o), 10 * MIB);
        // The top is full, never over: its target is its own size.
        assert_eq!(level_target_bytes(&o, 3, top), top as f64);
        // Normal mode: Cassandra's targets, whatever the top holds.
        let normal = LcsOptions {
            level_count: 0,
            ..o.clone()
        };
        assert_eq!(level_target_bytes(&normal, 2, top), 160.0 * MIB as f64);
        assert_eq!(fixed_levels_ratio(top, &normal), 4.0);

        // Decisions: sstables stay at 10 MiB whatever the data.
        let mut set = vec![sst_range(1, 3, top, 0, 1_000_000)];
        assert_eq!(s.effective_sstable_size(&set), 10 * MIB);
        // L2 at 3,000 MiB (< 7,155) and L1 at 150 MiB (< 800): nothing to do,
        // where the normal targets (160 MiB, 40 MiB) would promote both.
        set.extend(level(100, 2, 300, 10 * MIB, 0, 1000));
        set.extend(level(1000, 1, 15, 10 * MIB, 0, 1000));
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 0);
        let scores = s.level_scores(&set);
        assert!(
            (scores[1] - 150.0 * MIB as f64 / l1).abs() < 1e-9,
            "{scores:?}"
        );
        assert!((scores[3] - 1.0).abs() < 1e-9, "{scores:?}");
        // L2 at 7,500 MiB: over target, promoted into the top at 10 MiB a piece.
        set.extend(level(400, 2, 450, 10 * MIB, 400_000, 1000));
        assert_eq!(
            s.next_task(&set, &ctx(0)),
            Some(CompactionTask::Merge {
                inputs: vec![1, 100],
                output_level: 3,
                split: OutputSplit::Size {
                    max_bytes: 10 * MIB
                },
                reason: TaskReason::Leveled { from_level: 2 }
            })
        );
        // L0 waits for a batch of 89 MiB (not one 10 MiB sstable): 50 MiB is
        // merged within L0, 100 MiB goes to L1 with the L1 sstables it meets.
        let flush = |id, mib: u64| sst_range(id, 0, mib * MIB, 0, 1_000_000);
        let mut set = vec![
            sst_range(1, 3, top, 0, 1_000_000),
            flush(2, 25),
            flush(3, 25),
        ];
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![2, 3], 0));
        set.push(flush(4, 50));
        let (inputs, out, _) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!((inputs, out), (vec![2, 3, 4], 1));
        // Disjoint L0 slices (a merged pile cut at s) below the batch: left
        // alone until a flush overlaps them.
        let slices = vec![
            sst_range(1, 3, top, 0, 1_000_000),
            sst_range(5, 0, 10 * MIB, 0, 99),
            sst_range(6, 0, 10 * MIB, 100, 199),
        ];
        assert_eq!(s.next_task(&slices, &ctx(0)), None);
        // Normal mode promotes at one sstable's worth.
        let n = lcs(", 'fanout_size': 4, 'sstable_size_in_mb': 10");
        let (inputs, out, _) = merge_of(&n.next_task(&set[1..3], &ctx(0)));
        assert_eq!((inputs, out), (vec![2, 3], 1));
        // The pure seed formula is still there for the model: 169 GB / 84.
        let o4 =
            opts("'class': 'LeveledCompactionStrategy', 'level_count': 3, 'fanout_size': 4").lcs();
        assert_eq!(fixed_levels_sstable_size(169_000_000_000, &o4), 1919 * MIB);
        assert_eq!(
            fixed_levels_sstable_size(169_000_000_000, &LcsOptions::default()),
            160 * MIB
        );
    }

    #[test]
    fn fixed_levels_top_is_never_promoted_and_levels_above_fold_down() {
        let s = lcs(", 'level_count': 2, 'sstable_size_in_mb': 1");
        // Data 10 x 1 GiB in L2 (top) and nothing else: the size becomes
        // 10 GiB / 110 -> 93 MiB, L2 target 9.3 GiB < 10 GiB, yet nothing moves.
        let set = level(1, 2, 10, 1024 * MIB, 0, 100);
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 0);
        // After level_count was lowered, an L4 sstable folds into L2 with the L2
        // sstables it overlaps; one overlapping nothing just moves down.
        let mut set = level(1, 2, 10, 1024 * MIB, 0, 100);
        set.push(sst_range(50, 4, MIB, 150, 250));
        let (inputs, out, reason) = merge_of(&s.next_task(&set, &ctx(0)));
        assert_eq!(
            (inputs, out, reason),
            (vec![2, 3, 50], 2, TaskReason::Leveled { from_level: 4 })
        );
        assert_eq!(s.estimated_pending_tasks(&set, &ctx(0)), 1);
        set.last_mut().expect("50").first_token = 5000;
        set.last_mut().expect("50").last_token = 6000;
        assert_eq!(
            s.next_task(&set, &ctx(0)),
            Some(CompactionTask::Move {
                id: 50,
                to_level: 2
            })
        );
    }

    #[test]
    fn major_compaction_lands_in_the_level_that_holds_it() {
        let s = lcs("");
        let mut set = level(1, 0, 4, S, 0, 100);
        set.extend(level(10, 1, 10, S, 0, 40));
        // 14 x 160 MiB > L1's 1600 MiB target -> L2.
        assert_eq!(
            s.major_compaction(&set, &ctx(0)),
            vec![CompactionTask::Merge {
                inputs: vec![1, 2, 3, 4, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19],
                output_level: 2,
                split: OutputSplit::Size { max_bytes: S },
                reason: TaskReason::Major
            }]
        );
        set[0].being_compacted = true;
        assert!(s.major_compaction(&set, &ctx(0)).is_empty());
    }

    #[test]
    fn disabled_strategy_proposes_nothing_but_major_still_works() {
        let s = lcs(", 'enabled': false");
        let set = level(1, 1, 12, S, 0, 100);
        assert_eq!(s.next_task(&set, &ctx(0)), None);
        assert_eq!(s.major_compaction(&set, &ctx(0)).len(), 1);
    }
}
