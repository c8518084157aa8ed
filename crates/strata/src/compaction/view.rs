//! The live set as a decision sees it: every [`SSTableInfo`] plus the indexes a
//! leveled decision queries (per-level token order, level byte totals, the
//! sstables that may be expired, those with droppable tombstones), so that a
//! decision costs O(levels x log n + what it looks at) rather than a rebuild
//! of every index from the slice.
//!
//! Two owners:
//! - the engine, and every caller of [`super::CompactionStrategy::next_task`]
//!   with a slice, builds a view afresh per decision with [`DecisionView::of`]
//!   (O(n log n), as the indexes it replaces were): the decision is exactly the
//!   one the slice gives;
//! - the simulator keeps one view for the whole run ([`DecisionView::new`]) and
//!   changes it with each edit ([`DecisionView::insert`], [`DecisionView::remove`],
//!   [`DecisionView::update`]), each O(log n): at 60,000 sstables rebuilding the
//!   indexes per decision was 71% of a 10 TB run (docs/STATUS.md, "Simulator
//!   speed").
//!
//! Not synchronised: the owner changes it from one thread; decisions borrow it.
//!
//! Invariants:
//! 1. The indexes describe exactly [`DecisionView::sstables`]: after any sequence
//!    of changes, a view equals the one [`DecisionView::of`] builds from the same
//!    sstables ([`DecisionView::check`], used by the simulator's invariant
//!    checks and the tests).
//! 2. Every query returns sstables in `(first_token, id)` order within a level,
//!    the order the slice-built indexes gave, so decisions that take "the first
//!    that fits" take the same one.
//! 3. [`DecisionView::overlapping_in_level`] returns exactly the level's
//!    sstables whose inclusive token range meets the query's, whatever the
//!    level's shape (disjoint or not).
//! 4. The order of [`DecisionView::sstables`] carries no meaning: the owner may
//!    reorder it (removal swaps the last sstable into the hole).

use std::borrow::Cow;
use std::cell::RefCell;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::ops::Bound;

use super::verdicts::{Rejection, RememberedRejections, TombstoneVerdicts};
use super::SSTableInfo;

/// Levels above this are indexed with it (only a corrupt or foreign manifest
/// has them); LCS folds them down like any level above its top.
pub const MAX_INDEXED_LEVEL: u32 = 32;

/// One level: its sstables by `(first_token, id)` (value: position in the
/// view's slice), the multiset of their token spans (for overlap queries on
/// levels whose sstables may overlap), and byte totals.
#[derive(Clone, Debug, Default, PartialEq)]
struct LevelIndex {
    by_first: BTreeMap<(i64, u64), usize>,
    /// `last_token - first_token` (0 when inverted) -> how many sstables span it.
    spans: BTreeMap<u64, usize>,
    bytes: u64,
    /// Bytes of the sstables marked `being_compacted`.
    busy_bytes: u64,
}

fn span(s: &SSTableInfo) -> u64 {
    (s.last_token as i128 - s.first_token as i128).clamp(0, u64::MAX as i128) as u64
}

fn level_slot(level: u32) -> usize {
    level.min(MAX_INDEXED_LEVEL) as usize
}

/// Key of the droppable-ratio index: the ratio's bits (which order as the
/// values for non-negative floats), then the id. Only ratios above 0 are
/// indexed.
fn ratio_key(s: &SSTableInfo) -> Option<(u64, u64)> {
    (s.droppable_tombstone_ratio > 0.0).then(|| (s.droppable_tombstone_ratio.to_bits(), s.id))
}

/// The live set with its decision indexes (module docs).
#[derive(Clone, Debug)]
pub struct DecisionView<'a> {
    infos: Cow<'a, [SSTableInfo]>,
    /// id -> position in `infos`; built on the first change (a view built for
    /// one decision never needs it).
    position: Option<HashMap<u64, usize>>,
    levels: Vec<LevelIndex>,
    /// `(max_local_deletion_seconds, id)`: the candidates for an expiry drop
    /// are a prefix.
    by_expiry: BTreeSet<(i64, u64)>,
    by_ratio: BTreeSet<(u64, u64)>,
    total_bytes: u64,
    /// A kept view's remembered tombstone-rewrite answers
    /// (`compaction::verdicts`); `None` for a view built per decision.
    /// Decisions borrow the view shared and record answers as they go, hence
    /// the cell.
    verdicts: Option<RefCell<TombstoneVerdicts>>,
}

impl Default for DecisionView<'static> {
    fn default() -> Self {
        DecisionView::new()
    }
}

impl DecisionView<'static> {
    /// An empty view to keep up to date (the simulator).
    pub fn new() -> DecisionView<'static> {
        DecisionView {
            infos: Cow::Owned(Vec::new()),
            position: Some(HashMap::new()),
            levels: Vec::new(),
            by_expiry: BTreeSet::new(),
            by_ratio: BTreeSet::new(),
            total_bytes: 0,
            verdicts: Some(RefCell::new(TombstoneVerdicts::default())),
        }
    }
}

impl<'a> DecisionView<'a> {
    /// The view of `sstables`, built afresh (the engine's per-decision view).
    pub fn of(sstables: &'a [SSTableInfo]) -> DecisionView<'a> {
        let mut levels: Vec<Vec<((i64, u64), usize)>> = Vec::new();
        let mut spans: Vec<BTreeMap<u64, usize>> = Vec::new();
        let mut bytes: Vec<(u64, u64)> = Vec::new();
        let mut total_bytes = 0u64;
        for (i, s) in sstables.iter().enumerate() {
            let l = level_slot(s.level);
            if levels.len() <= l {
                levels.resize_with(l + 1, Vec::new);
                spans.resize_with(l + 1, BTreeMap::new);
                bytes.resize(l + 1, (0, 0));
            }
            levels[l].push(((s.first_token, s.id), i));
            *spans[l].entry(span(s)).or_insert(0) += 1;
            bytes[l].0 = bytes[l].0.saturating_add(s.size_bytes);
            if s.being_compacted {
                bytes[l].1 = bytes[l].1.saturating_add(s.size_bytes);
            }
            total_bytes = total_bytes.saturating_add(s.size_bytes);
        }
        let levels = levels
            .into_iter()
            .zip(spans)
            .zip(bytes)
            .map(|((mut entries, spans), (bytes, busy_bytes))| {
                // Sorted first: the map is then built in one pass.
                entries.sort_unstable_by_key(|e| e.0);
                LevelIndex {
                    by_first: entries.into_iter().collect(),
                    spans,
                    bytes,
                    busy_bytes,
                }
            })
            .collect();
        DecisionView {
            infos: Cow::Borrowed(sstables),
            position: None,
            levels,
            by_expiry: sstables
                .iter()
                .map(|s| (s.max_local_deletion_seconds, s.id))
                .collect(),
            by_ratio: sstables.iter().filter_map(ratio_key).collect(),
            total_bytes,
            verdicts: None,
        }
    }

    /// Every sstable, in no particular order (invariant 4).
    pub fn sstables(&self) -> &[SSTableInfo] {
        &self.infos
    }

    pub fn len(&self) -> usize {
        self.infos.len()
    }

    pub fn is_empty(&self) -> bool {
        self.infos.is_empty()
    }

    /// Bytes of every sstable (saturating).
    pub fn total_bytes(&self) -> u64 {
        self.total_bytes
    }

    /// The sstable with this id, if any (O(1) once the view has been changed,
    /// else a scan).
    pub fn get(&self, id: u64) -> Option<&SSTableInfo> {
        match &self.position {
            Some(p) => p.get(&id).map(|&i| &self.infos[i]),
            None => self.infos.iter().find(|s| s.id == id),
        }
    }

    /// One past the highest indexed level that holds an sstable (levels above
    /// [`MAX_INDEXED_LEVEL`] count as it); 0 when empty.
    pub fn level_slots(&self) -> u32 {
        self.levels
            .iter()
            .rposition(|l| !l.by_first.is_empty())
            .map_or(0, |l| l as u32 + 1)
    }

    fn level(&self, level: u32) -> Option<&LevelIndex> {
        self.levels.get(level_slot(level))
    }

    /// Sstables at `level`.
    pub fn level_len(&self, level: u32) -> usize {
        self.level(level).map_or(0, |l| l.by_first.len())
    }

    /// Bytes at `level`.
    pub fn level_bytes(&self, level: u32) -> u64 {
        self.level(level).map_or(0, |l| l.bytes)
    }

    /// Bytes at `level` not being compacted.
    pub fn level_idle_bytes(&self, level: u32) -> u64 {
        self.level(level)
            .map_or(0, |l| l.bytes.saturating_sub(l.busy_bytes))
    }

    fn at(&self, position: usize) -> &SSTableInfo {
        &self.infos[position]
    }

    /// The level's sstables in `(first_token, id)` order (invariant 2).
    pub fn level_sorted(&self, level: u32) -> impl DoubleEndedIterator<Item = &SSTableInfo> + '_ {
        self.level(level)
            .into_iter()
            .flat_map(|l| l.by_first.values())
            .map(|&i| self.at(i))
    }

    /// The level's sstables in round-robin order: those whose first token is
    /// after `after`, then the rest from the start (all from the start when
    /// `after` is `None`). Cassandra's walk from the last compacted token.
    pub fn level_round_robin(
        &self,
        level: u32,
        after: Option<i64>,
    ) -> impl Iterator<Item = &SSTableInfo> + '_ {
        let split = after.map_or(Bound::Unbounded, |t| Bound::Excluded((t, u64::MAX)));
        let (tail, head) = match self.level(level) {
            Some(l) => (
                Some(l.by_first.range((split, Bound::Unbounded))),
                Some(l.by_first.range((Bound::Unbounded, split_inclusive(after)))),
            ),
            None => (None, None),
        };
        tail.into_iter()
            .flatten()
            .chain(head.into_iter().flatten())
            .map(|(_, &i)| self.at(i))
    }

    /// The sstables of `level` whose token range meets `[first, last]`, in
    /// `(first_token, id)` order (invariants 2, 3). The scan starts at
    /// `first` minus the level's widest span, so a disjoint level costs
    /// O(log n + answer) and a level of whole-ring flushes a scan of it.
    pub fn overlapping_in_level(
        &self,
        level: u32,
        first: i64,
        last: i64,
    ) -> impl Iterator<Item = &SSTableInfo> + '_ {
        let range = self.level(level).and_then(|l| {
            let widest = *l.spans.last_key_value()?.0;
            let start = (first as i128 - widest as i128).max(i64::MIN as i128) as i64;
            (start <= last).then(|| l.by_first.range((start, 0)..=(last, u64::MAX)))
        });
        range
            .into_iter()
            .flatten()
            .map(|(_, &i)| self.at(i))
            .filter(move |s| s.last_token >= first)
    }

    /// The sstables overlapping `s` (itself included when it is indexed), one
    /// group per level, nearest first: the levels above it upwards, its own,
    /// then those below it downwards. A leveled set's next level up tiles the
    /// ring, so a coverage question is usually settled by the first group
    /// (`common::tombstone_verdict`).
    pub fn overlapping_nearest_first<'s>(
        &'s self,
        s: &SSTableInfo,
    ) -> impl Iterator<Item = Vec<&'s SSTableInfo>> + 's {
        let (own, first, last) = (level_slot(s.level) as u32, s.first_token, s.last_token);
        let slots = self.levels.len() as u32;
        (own + 1..slots)
            .chain((0..=own.min(slots)).rev())
            .map(move |l| self.overlapping_in_level(l, first, last).collect())
    }

    /// Every sstable, any level, whose token range meets `[first, last]`
    /// (level by level; callers use it as a set).
    pub fn overlapping(&self, first: i64, last: i64) -> impl Iterator<Item = &SSTableInfo> + '_ {
        (0..self.levels.len() as u32).flat_map(move |l| self.overlapping_in_level(l, first, last))
    }

    /// The sstables whose `max_local_deletion_seconds` is below `gc_before`
    /// (the only ones that can be fully expired), by that time then id.
    pub fn expiry_candidates(&self, gc_before: i64) -> impl Iterator<Item = &SSTableInfo> + '_ {
        self.by_expiry
            .range(..(gc_before, 0))
            .filter_map(|&(_, id)| self.get(id))
    }

    /// The sstables whose droppable tombstone ratio is above `threshold`, in no
    /// meaningful order. A negative threshold (no option allows it) makes
    /// every sstable one.
    pub fn tombstone_candidates(&self, threshold: f64) -> Vec<&SSTableInfo> {
        if threshold.is_nan() || threshold < 0.0 {
            return self
                .infos
                .iter()
                .filter(|s| s.droppable_tombstone_ratio > threshold)
                .collect();
        }
        self.by_ratio
            .range((
                Bound::Excluded((threshold.to_bits(), u64::MAX)),
                Bound::Unbounded,
            ))
            .filter_map(|&(_, id)| self.get(id))
            .collect()
    }

    fn positions(&mut self) -> &mut HashMap<u64, usize> {
        let infos = &self.infos;
        self.position
            .get_or_insert_with(|| infos.iter().enumerate().map(|(i, s)| (s.id, i)).collect())
    }

    fn index(&mut self, position: usize) {
        let s = &self.infos[position];
        let l = level_slot(s.level);
        if self.levels.len() <= l {
            self.levels.resize_with(l + 1, LevelIndex::default);
        }
        let level = &mut self.levels[l];
        level.by_first.insert((s.first_token, s.id), position);
        *level.spans.entry(span(s)).or_insert(0) += 1;
        level.bytes = level.bytes.saturating_add(s.size_bytes);
        if s.being_compacted {
            level.busy_bytes = level.busy_bytes.saturating_add(s.size_bytes);
        }
        self.by_expiry.insert((s.max_local_deletion_seconds, s.id));
        let key = ratio_key(s);
        if let Some(k) = key {
            self.by_ratio.insert(k);
        }
        self.total_bytes = self.total_bytes.saturating_add(s.size_bytes);
        if let Some(v) = &mut self.verdicts {
            v.get_mut().indexed(key);
        }
    }

    fn unindex(&mut self, position: usize) {
        let s = &self.infos[position];
        if let Some(level) = self.levels.get_mut(level_slot(s.level)) {
            level.by_first.remove(&(s.first_token, s.id));
            let sp = span(s);
            if let Some(n) = level.spans.get_mut(&sp) {
                *n -= 1;
                if *n == 0 {
                    level.spans.remove(&sp);
                }
            }
            level.bytes = level.bytes.saturating_sub(s.size_bytes);
            if s.being_compacted {
                level.busy_bytes = level.busy_bytes.saturating_sub(s.size_bytes);
            }
        }
        self.by_expiry.remove(&(s.max_local_deletion_seconds, s.id));
        let (id, key) = (s.id, ratio_key(s));
        if let Some(k) = key {
            self.by_ratio.remove(&k);
        }
        self.total_bytes = self.total_bytes.saturating_sub(s.size_bytes);
        if let Some(v) = &mut self.verdicts {
            v.get_mut().unindexed(id, key);
        }
    }

    /// Adds `info`; false (and no change) if its id is already in the view.
    pub fn insert(&mut self, info: SSTableInfo) -> bool {
        let position = self.infos.len();
        if self.positions().insert(info.id, position).is_some() {
            // Put the old position back: the view is unchanged.
            let old = self.infos.iter().position(|s| s.id == info.id);
            if let Some(old) = old {
                self.positions().insert(info.id, old);
            }
            return false;
        }
        self.infos.to_mut().push(info);
        self.index(position);
        true
    }

    /// Removes the sstable `id` and returns it (`None` if absent). O(log n):
    /// the last sstable takes its place in the slice.
    pub fn remove(&mut self, id: u64) -> Option<SSTableInfo> {
        let position = self.positions().remove(&id)?;
        self.unindex(position);
        if let Some(v) = &mut self.verdicts {
            v.get_mut().dependency_changed(id);
        }
        let infos = self.infos.to_mut();
        let removed = infos.swap_remove(position);
        if let Some(moved) = infos.get(position) {
            let (key, level, moved_id) = ((moved.first_token, moved.id), moved.level, moved.id);
            self.positions().insert(moved_id, position);
            if let Some(slot) = self
                .levels
                .get_mut(level_slot(level))
                .and_then(|l| l.by_first.get_mut(&key))
            {
                *slot = position;
            }
        }
        Some(removed)
    }

    /// Changes the sstable `id` with `change` (level, busy mark, ratio, or any
    /// other field) and re-indexes it; false if absent. A change of the
    /// droppable ratio alone (the simulator's most frequent, every time the
    /// purge cutoff passes a bucket) touches only the ratio index.
    pub fn update(&mut self, id: u64, change: impl FnOnce(&mut SSTableInfo)) -> bool {
        let Some(&position) = self.positions().get(&id) else {
            return false;
        };
        let before = self.infos[position].clone();
        change(&mut self.infos.to_mut()[position]);
        let after = &self.infos[position];
        let same_place = (after.id, after.level, after.first_token, after.last_token)
            == (
                before.id,
                before.level,
                before.first_token,
                before.last_token,
            )
            && (
                after.size_bytes,
                after.being_compacted,
                after.max_local_deletion_seconds,
            ) == (
                before.size_bytes,
                before.being_compacted,
                before.max_local_deletion_seconds,
            );
        if same_place {
            let (old_key, new_key) = (ratio_key(&before), ratio_key(after));
            if old_key != new_key {
                if let Some(k) = old_key {
                    self.by_ratio.remove(&k);
                }
                if let Some(k) = new_key {
                    self.by_ratio.insert(k);
                }
                let ratio = after.droppable_tombstone_ratio;
                if let Some(v) = &mut self.verdicts {
                    v.get_mut().ratio_changed(id, old_key, new_key, ratio);
                }
            }
            return true;
        }
        let moved = (after.id, after.first_token, after.last_token)
            != (before.id, before.first_token, before.last_token);
        // Anything else: out of every index as it was, back in as it is.
        let after = std::mem::replace(&mut self.infos.to_mut()[position], before);
        self.unindex(position);
        self.infos.to_mut()[position] = after;
        let new_id = self.infos[position].id;
        if new_id != id {
            let positions = self.positions();
            positions.remove(&id);
            positions.insert(new_id, position);
        }
        self.index(position);
        if moved {
            if let Some(v) = &mut self.verdicts {
                v.get_mut().dependency_changed(id);
            }
        }
        true
    }

    /// The sstables a tombstone-rewrite decision at `now` / `gc_before` should
    /// ask the rule about: every one whose droppable ratio is above
    /// `threshold`, less (for a kept view) those whose remembered answer still
    /// holds (`compaction::verdicts`). In no meaningful order.
    pub fn tombstone_candidates_to_ask(
        &self,
        threshold: f64,
        interval_seconds: u64,
        now: i64,
        gc_before: i64,
    ) -> Vec<&SSTableInfo> {
        let Some(cell) = &self.verdicts else {
            return self.tombstone_candidates(threshold);
        };
        let mut v = cell.borrow_mut();
        v.prepare(threshold, interval_seconds, now, gc_before, || {
            self.by_ratio.clone()
        });
        v.open_above(threshold)
            .filter_map(|id| self.get(id))
            .collect()
    }

    /// Remembers the rule's no for `id` (a kept view; otherwise nothing).
    pub fn remember_tombstone_rejection(&self, id: u64, rejection: Rejection) {
        if let (Some(cell), Some(s)) = (&self.verdicts, self.get(id)) {
            cell.borrow_mut().remember(id, ratio_key(s), rejection);
        }
    }

    /// The remembered answers, by candidate id (the simulator's invariant
    /// checks ask the rule again).
    pub fn remembered_tombstone_rejections(&self) -> RememberedRejections {
        match &self.verdicts {
            None => RememberedRejections::default(),
            Some(cell) => cell.borrow().snapshot(),
        }
    }

    /// Invariant 1: the indexes are what [`DecisionView::of`] builds from the
    /// same sstables. `Err` names the first index that differs.
    pub fn check(&self) -> Result<(), String> {
        let fresh = DecisionView::of(&self.infos);
        let trim = |levels: &[LevelIndex]| -> Vec<LevelIndex> {
            let mut v = levels.to_vec();
            while v.last().is_some_and(|l| *l == LevelIndex::default()) {
                v.pop();
            }
            v
        };
        if trim(&self.levels) != trim(&fresh.levels) {
            return Err("level indexes differ from a rebuild".into());
        }
        if self.by_expiry != fresh.by_expiry {
            return Err("expiry index differs from a rebuild".into());
        }
        if self.by_ratio != fresh.by_ratio {
            return Err("droppable-ratio index differs from a rebuild".into());
        }
        if self.total_bytes != fresh.total_bytes {
            return Err("total bytes differ from a rebuild".into());
        }
        if let Some(v) = &self.verdicts {
            v.borrow().check(&self.by_ratio)?;
        }
        if let Some(p) = &self.position {
            let fresh: HashMap<u64, usize> = self
                .infos
                .iter()
                .enumerate()
                .map(|(i, s)| (s.id, i))
                .collect();
            if *p != fresh || fresh.len() != self.infos.len() {
                return Err("id positions differ from a rebuild (or ids repeat)".into());
            }
        }
        Ok(())
    }
}

/// The upper bound of the round robin's wrapped part: everything up to and
/// including first token `after`.
fn split_inclusive(after: Option<i64>) -> Bound<(i64, u64)> {
    match after {
        Some(t) => Bound::Included((t, u64::MAX)),
        None => Bound::Excluded((i64::MIN, 0)),
    }
}

#[cfg(test)]
mod tests {
    use super::super::test_util::{sst, sst_range, MIB};
    use super::*;

    /// A deterministic mix: overlapping L0, disjoint-ish upper levels, some
    /// expiring, some with droppable tombstones, some busy.
    fn mixed(n: u64) -> Vec<SSTableInfo> {
        (1..=n)
            .map(|i| {
                let level = (i % 4) as u32;
                let first = ((i * 7919) % 1000) as i64 * 1000 - 500_000;
                let width = if level == 0 { 400_000 } else { 900 };
                SSTableInfo {
                    max_local_deletion_seconds: if i % 3 == 0 {
                        1000 + i as i64
                    } else {
                        i64::MAX
                    },
                    droppable_tombstone_ratio: (i % 5) as f64 / 10.0,
                    being_compacted: i % 7 == 0,
                    ..sst_range(i, level, i * MIB, first, first + width)
                }
            })
            .collect()
    }

    #[test]
    fn queries_match_brute_force() {
        let set = mixed(200);
        let view = DecisionView::of(&set);
        assert_eq!(view.level_slots(), 4);
        for level in 0..5u32 {
            let mut want: Vec<&SSTableInfo> = set.iter().filter(|s| s.level == level).collect();
            want.sort_by_key(|s| (s.first_token, s.id));
            let got: Vec<u64> = view.level_sorted(level).map(|s| s.id).collect();
            assert_eq!(got, want.iter().map(|s| s.id).collect::<Vec<_>>());
            let bytes: u64 = want.iter().map(|s| s.size_bytes).sum();
            let idle: u64 = want
                .iter()
                .filter(|s| !s.being_compacted)
                .map(|s| s.size_bytes)
                .sum();
            assert_eq!(
                (view.level_bytes(level), view.level_idle_bytes(level)),
                (bytes, idle)
            );
            for a in (-600_000..600_000).step_by(37_000) {
                for w in [0, 500, 50_000] {
                    let got: Vec<u64> = view
                        .overlapping_in_level(level, a, a + w)
                        .map(|s| s.id)
                        .collect();
                    let brute: Vec<u64> = want
                        .iter()
                        .filter(|s| s.first_token <= a + w && s.last_token >= a)
                        .map(|s| s.id)
                        .collect();
                    assert_eq!(got, brute, "L{level} [{a}, {}]", a + w);
                }
                // Round robin: first tokens after `a`, then the rest.
                let (after, before): (Vec<&SSTableInfo>, Vec<&SSTableInfo>) =
                    want.iter().partition(|s| s.first_token > a);
                let brute: Vec<u64> = after.iter().chain(&before).map(|s| s.id).collect();
                let got: Vec<u64> = view
                    .level_round_robin(level, Some(a))
                    .map(|s| s.id)
                    .collect();
                assert_eq!(got, brute, "round robin after {a}");
            }
        }
        let got: Vec<u64> = view.expiry_candidates(1100).map(|s| s.id).collect();
        let mut brute: Vec<&SSTableInfo> = set
            .iter()
            .filter(|s| s.max_local_deletion_seconds < 1100)
            .collect();
        brute.sort_by_key(|s| (s.max_local_deletion_seconds, s.id));
        assert_eq!(got, brute.iter().map(|s| s.id).collect::<Vec<_>>());
        assert!(!got.is_empty());
        for threshold in [0.0, 0.15, 0.2, 0.35, 0.9] {
            let mut got: Vec<u64> = view
                .tombstone_candidates(threshold)
                .iter()
                .map(|s| s.id)
                .collect();
            got.sort_unstable();
            let brute: Vec<u64> = set
                .iter()
                .filter(|s| s.droppable_tombstone_ratio > threshold)
                .map(|s| s.id)
                .collect();
            assert_eq!(got, brute, "threshold {threshold}");
        }
    }

    #[test]
    fn kept_view_equals_a_rebuild_after_every_change() {
        let set = mixed(120);
        let mut view = DecisionView::new();
        for s in &set {
            assert!(view.insert(s.clone()));
            view.check().expect("after insert");
        }
        assert!(!view.insert(set[3].clone()), "an id already present");
        view.check().expect("refused insert changes nothing");
        // Removals from the middle, front and back; level moves; busy marks;
        // ratio changes.
        for (k, id) in [60u64, 1, 120, 33, 34, 90].into_iter().enumerate() {
            let removed = view.remove(id).expect("live");
            assert_eq!(removed.id, id);
            assert!(view.remove(id).is_none());
            view.check()
                .unwrap_or_else(|e| panic!("after removal {k}: {e}"));
        }
        for id in [2u64, 50, 77] {
            assert!(view.update(id, |s| {
                s.level += 1;
                s.being_compacted = !s.being_compacted;
                s.droppable_tombstone_ratio = 0.5;
            }));
            view.check().expect("after update");
        }
        // Ratio-only changes take the short path: into, within and out of the
        // ratio index.
        for (id, ratio) in [(5u64, 0.9), (5, 0.7), (5, 0.0), (10, 0.3)] {
            assert!(view.update(id, |s| s.droppable_tombstone_ratio = ratio));
            view.check().expect("after a ratio change");
            let got = view.tombstone_candidates(0.0).iter().any(|s| s.id == id);
            assert_eq!(got, ratio > 0.0, "sstable {id} at ratio {ratio}");
        }
        assert!(
            !view.update(60, |s| s.level = 9),
            "removed: nothing to update"
        );
        let mut kept: Vec<SSTableInfo> = view.sstables().to_vec();
        kept.sort_by_key(|s| s.id);
        assert_eq!(kept.len(), 114);
        assert_eq!(
            view.total_bytes(),
            kept.iter().map(|s| s.size_bytes).sum::<u64>()
        );
        assert_eq!(view.get(50).map(|s| s.level), Some(3));
        // A level above the indexed maximum is grouped with it.
        assert!(view.insert(sst(1000, 40, MIB)));
        assert_eq!(view.level_len(MAX_INDEXED_LEVEL), 1);
        assert_eq!(view.level_slots(), MAX_INDEXED_LEVEL + 1);
        view.check().expect("deep level");
        // A drifted index is reported.
        let mut broken = view.clone();
        broken.total_bytes += 1;
        assert!(broken.check().is_err());
    }
}
