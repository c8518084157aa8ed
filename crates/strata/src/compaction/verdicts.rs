//! The "not worth it" answers of the tombstone-rewrite rule
//! ([`super::common::worth_dropping_tombstones`], Cassandra's
//! `worthDroppingTombstones`) that a kept [`super::view::DecisionView`]
//! remembers between decisions. Only the simulator keeps a view; a view built
//! per decision (the engine's) remembers nothing, so the engine asks the rule
//! about every candidate every time, as Cassandra does.
//!
//! Why: with a TTL, most sstables of a large leveled set carry a droppable
//! ratio above `tombstone_threshold`, and the rule turns nearly all of them
//! down (younger than `tombstone_compaction_interval`, or covered by the level
//! next to them). Asking again about every one at every decision made the
//! simulator quadratic in the data: normal LCS at 1 TiB with a 2-day TTL spent
//! two thirds of 145 s there, and 10 TiB was out of reach (BENCHMARKS.md,
//! "Simulator speed", part 3).
//!
//! Contract: a remembered "no" is one the rule would give again now. A
//! candidate's answer is forgotten (the candidate is *open* again) when
//! 1. time passes its bound: a young sstable's at `creation +
//!    tombstone_compaction_interval`; a covered one's once `gc_before` passes
//!    its newest local deletion time (from then on it may be fully expired
//!    against what overlaps it, which the rule accepts);
//! 2. the candidate is re-indexed (any change but its ratio) or removed;
//! 3. its ratio changes so that the uncovered share its answer was computed
//!    from would now pass (`outside x ratio > threshold`): more overlaps only
//!    shrink the uncovered share, so a "no" from part of the overlaps is a "no";
//! 4. one of the sstables that share was computed from leaves the view or
//!    changes its token range (adding sstables never reopens: they only cover
//!    more);
//! 5. a decision asks with another `tombstone_threshold` or interval (all
//!    forgotten).
//!
//! Invariant (checked by [`super::view::DecisionView::check`]): every key of the
//! view's droppable-ratio index is either open or the current key of a
//! remembered candidate, and nothing else is open.

use std::collections::{BTreeSet, HashMap};

/// Key of the droppable-ratio index: `(ratio bits, id)`.
pub(crate) type RatioKey = (u64, u64);

/// Why the rule said no, in the terms that say how long the answer holds.
#[derive(Clone, Debug, PartialEq)]
pub enum Rejection {
    /// Younger than the interval: no until `now >= until_now`.
    Young { until_now: i64 },
    /// Overlapped by `deps` (non-empty), whose union leaves `outside` of its
    /// span uncovered (`None`: fewer than two partitions, no at any ratio).
    /// Holds while `gc_before <= newest_deletion` and `outside x ratio <=
    /// threshold`.
    Covered {
        newest_deletion: i64,
        outside: Option<f64>,
        deps: Vec<u64>,
    },
}

/// What a view remembers, for checks: the `(threshold, interval)` the
/// answers were given under and each `(candidate id, rejection)`.
#[derive(Clone, Debug, Default)]
pub struct RememberedRejections {
    pub asked_with: Option<(f64, u64)>,
    pub answers: Vec<(u64, Rejection)>,
}

#[derive(Clone, Debug)]
struct Remembered {
    rejection: Rejection,
    /// The candidate's current ratio key (`None`: ratio 0, not indexed).
    key: Option<RatioKey>,
    /// Distinguishes this answer from earlier ones in `dependents` lists.
    serial: u64,
}

/// The remembered answers (module docs).
#[derive(Clone, Debug, Default)]
pub struct TombstoneVerdicts {
    /// `(threshold bits, interval)` the answers were given under.
    asked_with: Option<(u64, u64)>,
    /// Ratio keys of the candidates with no remembered answer.
    open: BTreeSet<RatioKey>,
    remembered: HashMap<u64, Remembered>,
    /// Dependency id -> `(candidate, serial)` whose coverage counted it;
    /// entries of forgotten answers are dropped lazily.
    dependents: HashMap<u64, Vec<(u64, u64)>>,
    young_until: BTreeSet<(i64, u64)>,
    covered_until: BTreeSet<(i64, u64)>,
    next_serial: u64,
}

impl TombstoneVerdicts {
    /// A candidate entered the ratio index (inserted or re-indexed): open.
    pub(crate) fn indexed(&mut self, key: Option<RatioKey>) {
        if let Some(k) = key {
            self.open.insert(k);
        }
    }

    /// The sstable `id` (ratio key `key`) left the indexes: removed, or about
    /// to be re-indexed. Its own answer is forgotten (contract 2).
    pub(crate) fn unindexed(&mut self, id: u64, key: Option<RatioKey>) {
        if let Some(k) = key {
            self.open.remove(&k);
        }
        self.forget(id);
    }

    /// The sstable `id` left the view or changed its token range: answers
    /// computed from it are forgotten (contract 4).
    pub(crate) fn dependency_changed(&mut self, id: u64) {
        for (candidate, serial) in self.dependents.remove(&id).unwrap_or_default() {
            if self.remembered.get(&candidate).map(|r| r.serial) == Some(serial) {
                self.reopen(candidate);
            }
        }
    }

    /// Only the ratio of `id` changed (`old` -> `new` key, `ratio` the new
    /// value): an open candidate moves in the open set; a remembered one stays
    /// remembered unless contract 3 reopens it.
    pub(crate) fn ratio_changed(
        &mut self,
        id: u64,
        old: Option<RatioKey>,
        new: Option<RatioKey>,
        ratio: f64,
    ) {
        let threshold = self.asked_with.map(|(t, _)| f64::from_bits(t));
        match self.remembered.get_mut(&id) {
            None => {
                if let Some(k) = old {
                    self.open.remove(&k);
                }
                if let Some(k) = new {
                    self.open.insert(k);
                }
            }
            Some(r) => {
                r.key = new;
                let passes = match (&r.rejection, threshold) {
                    (
                        Rejection::Covered {
                            outside: Some(o), ..
                        },
                        Some(t),
                    ) => o * ratio > t,
                    (
                        Rejection::Covered {
                            outside: Some(_), ..
                        },
                        None,
                    ) => true,
                    _ => false,
                };
                if passes {
                    self.reopen(id);
                }
            }
        }
    }

    /// Prepares a decision at `now` / `gc_before` under `(threshold,
    /// interval)`: forgets everything if those differ from the answers'
    /// (contract 5; `all` gives every ratio key to reopen), then reopens what
    /// time has released (contract 1).
    pub(crate) fn prepare(
        &mut self,
        threshold: f64,
        interval: u64,
        now: i64,
        gc_before: i64,
        all: impl FnOnce() -> BTreeSet<RatioKey>,
    ) {
        let asked = (threshold.to_bits(), interval);
        if self.asked_with != Some(asked) {
            *self = TombstoneVerdicts {
                asked_with: Some(asked),
                open: all(),
                next_serial: self.next_serial,
                ..TombstoneVerdicts::default()
            };
            return;
        }
        let due: Vec<u64> = self
            .young_until
            .range(..=(now, u64::MAX))
            .chain(self.covered_until.range(..(gc_before, 0)))
            .map(|&(_, id)| id)
            .collect();
        for id in due {
            self.reopen(id);
        }
    }

    /// Open candidates whose ratio is above `threshold`, by ratio then id.
    pub(crate) fn open_above(&self, threshold: f64) -> impl Iterator<Item = u64> + '_ {
        self.open
            .range((
                std::ops::Bound::Excluded((threshold.to_bits(), u64::MAX)),
                std::ops::Bound::Unbounded,
            ))
            .map(|&(_, id)| id)
    }

    /// Remembers the rule's no for `id` (ratio key `key`).
    pub(crate) fn remember(&mut self, id: u64, key: Option<RatioKey>, rejection: Rejection) {
        self.forget(id);
        if let Some(k) = key {
            self.open.remove(&k);
        }
        let serial = self.next_serial;
        self.next_serial += 1;
        match &rejection {
            Rejection::Young { until_now } => {
                self.young_until.insert((*until_now, id));
            }
            Rejection::Covered {
                newest_deletion,
                deps,
                ..
            } => {
                self.covered_until.insert((*newest_deletion, id));
                for &d in deps {
                    let list = self.dependents.entry(d).or_default();
                    list.push((id, serial));
                    if list.len() > 64 {
                        // Long-lived dependencies collect answers since
                        // forgotten: keep the list to what is current.
                        let remembered = &self.remembered;
                        list.retain(|(c, s)| {
                            remembered.get(c).map(|r| r.serial) == Some(*s) || *c == id
                        });
                    }
                }
            }
        }
        self.remembered.insert(
            id,
            Remembered {
                rejection,
                key,
                serial,
            },
        );
    }

    /// A copy of the remembered answers, by candidate id.
    pub(crate) fn snapshot(&self) -> RememberedRejections {
        let mut answers: Vec<(u64, Rejection)> = self
            .remembered
            .iter()
            .map(|(&id, r)| (id, r.rejection.clone()))
            .collect();
        answers.sort_by_key(|(id, _)| *id);
        RememberedRejections {
            asked_with: self.asked_with.map(|(t, i)| (f64::from_bits(t), i)),
            answers,
        }
    }

    /// Invariant (module docs): open keys plus remembered candidates' keys are
    /// exactly `ratio_keys`.
    pub(crate) fn check(&self, ratio_keys: &BTreeSet<RatioKey>) -> Result<(), String> {
        let mut union = self.open.clone();
        for r in self.remembered.values() {
            if let Some(k) = r.key {
                if !union.insert(k) {
                    return Err(format!("ratio key {k:?} both open and remembered"));
                }
            }
        }
        if union != *ratio_keys {
            return Err("open and remembered candidates differ from the ratio index".into());
        }
        Ok(())
    }

    /// Drops `id`'s answer without reopening it.
    fn forget(&mut self, id: u64) -> Option<Remembered> {
        let r = self.remembered.remove(&id)?;
        match &r.rejection {
            Rejection::Young { until_now } => {
                self.young_until.remove(&(*until_now, id));
            }
            Rejection::Covered {
                newest_deletion, ..
            } => {
                self.covered_until.remove(&(*newest_deletion, id));
            }
        }
        Some(r)
    }

    fn reopen(&mut self, id: u64) {
        if let Some(Remembered { key: Some(k), .. }) = self.forget(id) {
            self.open.insert(k);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::common::{check_remembered_tombstone_rejections, next_task_in};
    use super::super::lcs::LeveledCompactionStrategy;
    use super::super::test_util::{opts, sst_range, MIB};
    use super::super::view::DecisionView;
    use super::super::{CompactionStrategy, CompactionTask, SSTableInfo, StrategyContext};
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    const INTERVAL: i64 = 3_600;

    fn lcs() -> LeveledCompactionStrategy {
        LeveledCompactionStrategy::new(&opts(&format!(
            "'class': 'LeveledCompactionStrategy', 'tombstone_compaction_interval': {INTERVAL}"
        )))
    }

    fn at(now: i64) -> StrategyContext {
        StrategyContext {
            now_seconds: now,
            gc_grace_seconds: 600,
            memtable_min_timestamp_micros: Some(now * 1_000_000),
        }
    }

    /// The shared step alone (no strategy task), as the simulator asks it.
    fn decide(view: &DecisionView<'_>, now: i64) -> Option<CompactionTask> {
        next_task_in(&lcs(), view, &at(now), || None)
    }

    /// An sstable with droppable tombstones above the threshold, created at 0,
    /// whose newest deletion is far in the future (never fully expired).
    fn candidate(id: u64, level: u32, first: i64, last: i64, ratio: f64) -> SSTableInfo {
        SSTableInfo {
            droppable_tombstone_ratio: ratio,
            ..sst_range(id, level, MIB, first, last)
        }
    }

    #[test]
    fn a_covered_candidate_is_asked_again_once_its_cover_leaves() {
        let mut view = DecisionView::new();
        view.insert(candidate(1, 1, 0, 999, 0.5));
        view.insert(sst_range(2, 2, MIB, 0, 999));
        assert_eq!(decide(&view, 10_000), None, "covered by the level above");
        assert_eq!(view.remembered_tombstone_rejections().answers.len(), 1);
        // Another cover arriving changes nothing; the first one leaving
        // reopens the question even though the newcomer still covers it.
        view.insert(sst_range(3, 3, MIB, 0, 499));
        assert_eq!(decide(&view, 10_001), None);
        view.remove(2);
        assert!(view.remembered_tombstone_rejections().answers.is_empty());
        // Half uncovered now: 0.5 x 0.5 = 0.25 > 0.2.
        assert!(matches!(
            decide(&view, 10_002),
            Some(CompactionTask::Rewrite { id: 1, .. })
        ));
    }

    #[test]
    fn a_young_candidate_is_asked_again_when_it_comes_of_age() {
        let mut view = DecisionView::new();
        view.insert(SSTableInfo {
            creation_time_seconds: 1_000,
            ..candidate(1, 1, 0, 999, 0.5)
        });
        assert_eq!(decide(&view, 1_000 + INTERVAL - 1), None, "too young");
        assert_eq!(view.remembered_tombstone_rejections().answers.len(), 1);
        assert!(matches!(
            decide(&view, 1_000 + INTERVAL),
            Some(CompactionTask::Rewrite { id: 1, .. })
        ));
    }

    #[test]
    fn a_covered_answer_lapses_when_the_candidate_may_have_expired() {
        let mut view = DecisionView::new();
        view.insert(SSTableInfo {
            max_local_deletion_seconds: 20_000,
            ..candidate(1, 1, 0, 999, 0.5)
        });
        view.insert(sst_range(2, 2, MIB, 0, 999));
        assert_eq!(decide(&view, 10_000), None);
        let asked = |gc_before| {
            view.tombstone_candidates_to_ask(0.2, INTERVAL as u64, 10_000, gc_before)
                .len()
        };
        // From then on fully_expired may accept it, whatever covers it.
        assert_eq!(asked(20_000), 0, "newest deletion not before gc_before");
        assert_eq!(asked(20_001), 1, "lapsed");
    }

    #[test]
    fn a_rising_ratio_reopens_a_partly_covered_candidate() {
        let mut view = DecisionView::new();
        view.insert(candidate(1, 1, 0, 999, 0.3));
        view.insert(sst_range(2, 2, MIB, 0, 499));
        // Half uncovered: 0.5 x 0.3 = 0.15, not above 0.2.
        assert_eq!(decide(&view, 10_000), None);
        assert_eq!(view.remembered_tombstone_rejections().answers.len(), 1);
        view.update(1, |s| s.droppable_tombstone_ratio = 0.35);
        assert_eq!(
            view.remembered_tombstone_rejections().answers.len(),
            1,
            "0.175: still no"
        );
        view.update(1, |s| s.droppable_tombstone_ratio = 0.5);
        assert!(view.remembered_tombstone_rejections().answers.is_empty());
        assert!(matches!(
            decide(&view, 10_001),
            Some(CompactionTask::Rewrite { id: 1, .. })
        ));
    }

    /// Seeded random edits, time and decisions: a kept view (remembering
    /// answers) decides exactly as a view built afresh from the same sstables,
    /// and every answer it remembers is the rule's.
    #[test]
    fn a_kept_view_decides_as_a_fresh_one() {
        let mut total_rewrites = 0usize;
        for seed in 0..8u64 {
            let mut rng = ChaCha8Rng::seed_from_u64(seed);
            let mut view = DecisionView::new();
            let mut now = 100_000i64;
            let mut next_id = 1u64;
            let mut remembered_at_most = 0usize;
            let mut rewrites = 0usize;
            for step in 0..600 {
                let live: Vec<u64> = view.sstables().iter().map(|s| s.id).collect();
                let pick = |rng: &mut ChaCha8Rng| live[rng.gen_range(0..live.len())];
                match rng.gen_range(0..10) {
                    0..=3 => {
                        let level = rng.gen_range(0..4u32);
                        let width = [100_000i64, 30_000, 10_000, 4_000][level as usize];
                        let first = rng.gen_range(-100_000..100_000i64);
                        let newest = now + rng.gen_range(-4_000..40_000i64);
                        view.insert(SSTableInfo {
                            creation_time_seconds: now - rng.gen_range(0..2 * INTERVAL),
                            droppable_tombstone_ratio: rng.gen_range(0.0..0.5),
                            max_local_deletion_seconds: newest,
                            min_timestamp_micros: (newest - 9_000) * 1_000_000,
                            max_timestamp_micros: (newest - 4_000) * 1_000_000,
                            partition_count: rng.gen_range(1..8),
                            ..sst_range(next_id, level, MIB, first, first + width)
                        });
                        next_id += 1;
                    }
                    4 if !live.is_empty() => {
                        view.remove(pick(&mut rng));
                    }
                    5 | 6 if !live.is_empty() => {
                        let up = rng.gen_range(0.0..0.3);
                        view.update(pick(&mut rng), |s| {
                            s.droppable_tombstone_ratio =
                                (s.droppable_tombstone_ratio + up).min(1.0)
                        });
                    }
                    7 if !live.is_empty() => {
                        let (level, shift) = (rng.gen_range(0..4u32), rng.gen_range(-5_000..5_000));
                        let moved = rng.gen_bool(0.5);
                        view.update(pick(&mut rng), |s| {
                            s.level = level;
                            if moved {
                                s.first_token += shift;
                                s.last_token += shift;
                            }
                        });
                    }
                    8 if !live.is_empty() => {
                        let busy = rng.gen_bool(0.3);
                        view.update(pick(&mut rng), |s| s.being_compacted = busy);
                    }
                    _ => now += rng.gen_range(0..1_500),
                }
                let fresh_set = view.sstables().to_vec();
                let fresh = DecisionView::of(&fresh_set);
                let got = decide(&view, now);
                assert_eq!(got, decide(&fresh, now), "seed {seed} step {step}");
                view.check()
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                check_remembered_tombstone_rejections(&view, &at(now), lcs().common_options())
                    .unwrap_or_else(|e| panic!("seed {seed} step {step}: {e}"));
                remembered_at_most =
                    remembered_at_most.max(view.remembered_tombstone_rejections().answers.len());
                // Carry the task out as the engine would.
                match got {
                    Some(CompactionTask::Rewrite { id, .. }) => {
                        rewrites += 1;
                        if let Some(old) = view.remove(id) {
                            view.insert(SSTableInfo {
                                id: next_id,
                                droppable_tombstone_ratio: 0.0,
                                creation_time_seconds: now,
                                ..old
                            });
                            next_id += 1;
                        }
                    }
                    Some(CompactionTask::Drop { ids }) => {
                        for id in ids {
                            view.remove(id);
                        }
                    }
                    _ => {}
                }
            }
            // The run must have exercised the memory.
            assert!(
                remembered_at_most >= 20,
                "seed {seed}: {remembered_at_most} remembered"
            );
            total_rewrites += rewrites;
        }
        // And the rule's yes.
        assert!(total_rewrites >= 20, "{total_rewrites} rewrites");
    }
}
