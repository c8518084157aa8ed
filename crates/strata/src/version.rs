//! The live set of a table's sstables as one immutable value, in the manner of
//! LevelDB's `Version` / `VersionEdit`.
//!
//! Glossary:
//! - a [`Version`] is every live sstable with all of its per-sstable attributes
//!   ([`LiveSSTable`]: id, level, and a handle `H`). The engine's handle is the
//!   open reader (`Arc<SSTableReader>`), the manifest's the recorded token range,
//!   the simulator's its synthetic metadata. Attributes that later strategies need
//!   (codec, time window, token shard) become fields of [`LiveSSTable`] or of the
//!   handle, never a vector parallel to the set.
//! - a [`VersionEdit`] is one change: add these (with their attributes), remove
//!   those, move these between levels.
//!
//! Why generic over the handle rather than one shared metadata type: the three
//! users hold different things per sstable (a reader whose statistics are on disk;
//! a token range in the manifest; a byte histogram in the simulator), but must
//! agree exactly on *how an edit changes the set*. Generic code keeps that one
//! function ([`Version::apply`]) and lets each user keep only what it has.
//!
//! Who calls: the table (flush, compaction, maintenance) through
//! `Table::apply_edit`, which persists the edit through the manifest and then
//! swaps the version into the table's view; the manifest itself (its list is
//! changed by the same function); the simulator and the compaction property tests
//! (their model live sets). A `Version` is immutable, so any thread may read one
//! it holds; building the next one is the caller's to serialise.
//!
//! Invariants:
//! 1. Ids are unique and the sstables are kept in ascending id order (iteration
//!    order is deterministic: the simulator's results depend on it).
//! 2. [`Version::apply`] either returns a version that differs from `self` by
//!    exactly the edit, or an error and no change: a removed or moved id must be
//!    live, an added id must not be (ids are never reused), and no id may appear
//!    twice in one edit.
//! 3. The per-level counts are derived from the set and never stored apart from
//!    it (`count_at_level` is what the L0 write stall reads on every write).
//! 4. An sstable's [`LiveBytes`] (the blob strategy's accounting) is set only by
//!    an edit's `accounted` list, in the same apply as the adds and removals it
//!    reflects, so a version never pairs a live set with accounting of another.

use crate::error::Error;
use std::collections::HashSet;
use std::fmt;

/// One live sstable and its attributes.
#[derive(Clone, Debug, PartialEq)]
pub struct LiveSSTable<H> {
    /// The sstable's generation, unique within the table.
    pub id: u64,
    /// Compaction level (0 = flushed; STCS keeps everything at 0).
    pub level: u32,
    /// What the owner of the version holds for it (module docs).
    pub handle: H,
    /// How much of it other sstables' deletions supersede (`None`: not accounted;
    /// only tables under the blob strategy keep it, see `compaction::live_bytes`).
    pub live: Option<LiveBytes>,
}

/// The blob strategy's per-sstable accounting (docs/compaction/blob.md), as of the
/// version it belongs to. Persisted in the manifest with the sstable's entry.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct LiveBytes {
    /// Bytes of the data stream (uncompressed) whose every write is superseded by
    /// a deletion held in *another* live sstable: garbage a rewrite reclaims.
    pub dead_bytes: u64,
    /// Partitions wholly superseded that way (their own tombstones included).
    /// When it equals the sstable's partition count, dropping the file changes
    /// no read.
    pub dead_partitions: u64,
    /// Some row holding live writes here is also written, live, in another
    /// sstable: an overwrite or partial update, which the strategy assumes never
    /// happens. Such sstables are merged, never dropped on accounting alone.
    pub shares_live_rows: bool,
    /// No deletion here covers a write held by another sstable (checked from
    /// partition headers where a partition deletion covers a holder's every
    /// write, row by row otherwise): once past gc grace, a tombstone-only
    /// sstable with this set can go without resurrecting anything.
    pub deletions_target_nothing: bool,
}

/// Why an edit does not apply to a version (invariant 2).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum EditError {
    /// A removed or moved sstable is not in the version.
    NotLive(u64),
    /// An added sstable is already in the version.
    AlreadyLive(u64),
    /// The edit names this id twice (added twice, removed twice, or both moved
    /// and removed).
    Duplicate(u64),
}

impl fmt::Display for EditError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EditError::NotLive(id) => write!(f, "sstable {id} is not live"),
            EditError::AlreadyLive(id) => write!(f, "sstable {id} is already live"),
            EditError::Duplicate(id) => write!(f, "sstable {id} is named twice in one edit"),
        }
    }
}

impl EditError {
    /// The engine's error for this refusal. A method rather than `From`: a
    /// `From` impl for the crate error would make the error module depend on
    /// this one (module graph, docs/ARCHITECTURE.md "Layers").
    pub fn into_error(self) -> Error {
        match self {
            // The callers' historical error for "no longer live" (a compaction
            // racing a manual operation): kept so that callers and tests see the
            // same variant as before versions existed.
            EditError::NotLive(_) => Error::NotFound(self.to_string()),
            EditError::AlreadyLive(_) | EditError::Duplicate(_) => {
                Error::InvalidInput(self.to_string())
            }
        }
    }
}

/// One change of the live set (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct VersionEdit<H> {
    pub added: Vec<LiveSSTable<H>>,
    pub removed: Vec<u64>,
    /// `(id, new level)`: the sstable stays, its file unchanged.
    pub moved: Vec<(u64, u32)>,
    /// `(id, accounting)` set after the adds, removals and moves (invariant 4);
    /// the id must be live in the result. `None` clears it.
    pub accounted: Vec<(u64, Option<LiveBytes>)>,
}

impl<H> Default for VersionEdit<H> {
    fn default() -> Self {
        VersionEdit {
            added: Vec::new(),
            removed: Vec::new(),
            moved: Vec::new(),
            accounted: Vec::new(),
        }
    }
}

impl<H> VersionEdit<H> {
    pub fn new() -> VersionEdit<H> {
        VersionEdit::default()
    }

    pub fn add(mut self, id: u64, level: u32, handle: H) -> Self {
        self.added.push(LiveSSTable {
            id,
            level,
            handle,
            live: None,
        });
        self
    }

    pub fn remove(mut self, id: u64) -> Self {
        self.removed.push(id);
        self
    }

    pub fn move_to(mut self, id: u64, level: u32) -> Self {
        self.moved.push((id, level));
        self
    }

    pub fn is_empty(&self) -> bool {
        self.added.is_empty()
            && self.removed.is_empty()
            && self.moved.is_empty()
            && self.accounted.is_empty()
    }

    /// The same edit over other handles (the manifest persists the table's edit
    /// with token ranges in place of readers).
    pub fn map<G>(&self, mut f: impl FnMut(&LiveSSTable<H>) -> G) -> VersionEdit<G> {
        VersionEdit {
            added: self
                .added
                .iter()
                .map(|s| LiveSSTable {
                    id: s.id,
                    level: s.level,
                    handle: f(s),
                    live: s.live,
                })
                .collect(),
            removed: self.removed.clone(),
            moved: self.moved.clone(),
            accounted: self.accounted.clone(),
        }
    }
}

/// The live set (module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct Version<H> {
    /// Ascending id (invariant 1).
    sstables: Vec<LiveSSTable<H>>,
    /// `per_level[l]` = sstables at level `l` (invariant 3).
    per_level: Vec<usize>,
}

impl<H> Default for Version<H> {
    fn default() -> Self {
        Version {
            sstables: Vec::new(),
            per_level: Vec::new(),
        }
    }
}

impl<H: Clone> Version<H> {
    /// The empty set.
    pub fn empty() -> Version<H> {
        Version::default()
    }

    /// The set holding exactly `sstables` (an error if an id repeats).
    pub fn from_sstables(
        sstables: impl IntoIterator<Item = LiveSSTable<H>>,
    ) -> Result<Version<H>, EditError> {
        let edit = VersionEdit {
            added: sstables.into_iter().collect(),
            ..VersionEdit::default()
        };
        Version::empty().apply(&edit)
    }

    /// The version `edit` makes of this one, checked (invariant 2): a copy
    /// changed by [`Version::apply_in_place`]. O(n + k log n) for n live
    /// sstables and k named by the edit: versions are copied, not shared,
    /// because a table holds hundreds to a few thousand sstables and edits are
    /// rare next to reads.
    pub fn apply(&self, edit: &VersionEdit<H>) -> Result<Version<H>, EditError> {
        self.check(edit)?;
        let mut next = self.clone();
        next.change(edit);
        Ok(next)
    }

    /// `edit` applied to this version itself, with the same checks as
    /// [`Version::apply`] and the same result, or an error and no change
    /// (invariant 2). For an owner that keeps no older version: the simulator,
    /// whose live set has tens of thousands of sstables and changes at every
    /// decision, where copying the set per edit made the run quadratic
    /// (docs/STATUS.md, "Simulator speed").
    pub fn apply_in_place(&mut self, edit: &VersionEdit<H>) -> Result<(), EditError> {
        self.check(edit)?;
        self.change(edit);
        Ok(())
    }

    /// Invariant 2's refusals, in the order `apply` has always reported them:
    /// removed and moved ids, then added ids, then accounted ids (which must be
    /// live in the result).
    fn check(&self, edit: &VersionEdit<H>) -> Result<(), EditError> {
        check_edit(edit, |id| self.get(id).is_some())
    }

    /// Applies an edit that [`Version::check`] accepted.
    /// The per-level counts change with the sstables they count (invariant 3),
    /// in O(k log n) rather than a recount of the whole set.
    fn change(&mut self, edit: &VersionEdit<H>) {
        if !edit.removed.is_empty() {
            for id in &edit.removed {
                if let Some(level) = self.level_of(*id) {
                    self.count(level, -1);
                }
            }
            // A sorted list, not a hash set: one binary search per sstable
            // costs less than hashing every id (9% of a simulator run).
            let mut removed = edit.removed.clone();
            removed.sort_unstable();
            self.sstables
                .retain(|s| removed.binary_search(&s.id).is_err());
        }
        for (id, level) in &edit.moved {
            if let Ok(i) = self.sstables.binary_search_by_key(id, |s| s.id) {
                let old = std::mem::replace(&mut self.sstables[i].level, *level);
                self.count(old, -1);
                self.count(*level, 1);
            }
        }
        for s in &edit.added {
            self.count(s.level, 1);
        }
        // Ids are handed out ascending, so adds usually land at the end and
        // the sort below finds the vector already ordered.
        let sorted_before = self.sstables.len();
        self.sstables.extend(edit.added.iter().cloned());
        if self.sstables[..sorted_before]
            .last()
            .zip(self.sstables.get(sorted_before))
            .is_some_and(|(a, b)| a.id > b.id)
            || !edit.added.windows(2).all(|w| w[0].id < w[1].id)
        {
            self.sstables.sort_by_key(|s| s.id);
        }
        for (id, live) in &edit.accounted {
            if let Ok(i) = self.sstables.binary_search_by_key(id, |s| s.id) {
                self.sstables[i].live = *live;
            }
        }
    }
}

/// Invariant 2's refusals, in the order `apply` has always reported them:
/// removed and moved ids, then added ids, then accounted ids (which must be
/// live in the result). `is_live` says whether an id is in the set the edit
/// applies to. Shared by [`Version`] and [`KeyedVersion`], so both refuse the
/// same edits.
pub fn check_edit<H>(
    edit: &VersionEdit<H>,
    is_live: impl Fn(u64) -> bool,
) -> Result<(), EditError> {
    let mut named = HashSet::with_capacity(edit.added.len() + edit.removed.len());
    for id in edit
        .removed
        .iter()
        .chain(edit.moved.iter().map(|(id, _)| id))
    {
        if !named.insert(*id) {
            return Err(EditError::Duplicate(*id));
        }
        if !is_live(*id) {
            return Err(EditError::NotLive(*id));
        }
    }
    for s in &edit.added {
        if !named.insert(s.id) {
            return Err(EditError::Duplicate(s.id));
        }
        if is_live(s.id) {
            return Err(EditError::AlreadyLive(s.id));
        }
    }
    let mut accounted = HashSet::with_capacity(edit.accounted.len());
    for (id, _) in &edit.accounted {
        if !accounted.insert(*id) {
            return Err(EditError::Duplicate(*id));
        }
        let live_after =
            (is_live(*id) && !edit.removed.contains(id)) || edit.added.iter().any(|s| s.id == *id);
        if !live_after {
            return Err(EditError::NotLive(*id));
        }
    }
    Ok(())
}

/// The live set keyed by id in a B-tree: the same edits as [`Version`], checked
/// by the same [`check_edit`], with the same result, but each edit costs
/// O(k log n) instead of [`Version`]'s O(n) compaction of its vector. For an
/// owner that edits one set in place hundreds of thousands of times over tens
/// of thousands of sstables (the simulator: at 10 TB the vector's removals
/// were a quarter of the run, docs/STATUS.md "Simulator speed"). The engine
/// keeps [`Version`], whose slice its readers index.
///
/// Invariants: 1 to 3 of the module, with iteration in ascending id.
#[derive(Clone, Debug, PartialEq)]
pub struct KeyedVersion<H> {
    sstables: std::collections::BTreeMap<u64, LiveSSTable<H>>,
}

impl<H> Default for KeyedVersion<H> {
    fn default() -> Self {
        KeyedVersion {
            sstables: std::collections::BTreeMap::new(),
        }
    }
}

impl<H: Clone> KeyedVersion<H> {
    pub fn empty() -> KeyedVersion<H> {
        KeyedVersion::default()
    }

    /// `edit` applied in place, or an error and no change (invariant 2).
    pub fn apply_in_place(&mut self, edit: &VersionEdit<H>) -> Result<(), EditError> {
        check_edit(edit, |id| self.sstables.contains_key(&id))?;
        for id in &edit.removed {
            self.sstables.remove(id);
        }
        for (id, level) in &edit.moved {
            if let Some(s) = self.sstables.get_mut(id) {
                s.level = *level;
            }
        }
        for s in &edit.added {
            self.sstables.insert(s.id, s.clone());
        }
        for (id, live) in &edit.accounted {
            if let Some(s) = self.sstables.get_mut(id) {
                s.live = *live;
            }
        }
        Ok(())
    }

    /// Every live sstable, ascending id.
    pub fn iter(&self) -> impl DoubleEndedIterator<Item = &LiveSSTable<H>> + '_ {
        self.sstables.values()
    }

    pub fn get(&self, id: u64) -> Option<&LiveSSTable<H>> {
        self.sstables.get(&id)
    }

    pub fn len(&self) -> usize {
        self.sstables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sstables.is_empty()
    }
}

impl<H> Version<H> {
    /// One sstable more (`delta` 1) or fewer (-1) at `level`; the counts end
    /// at the highest level holding an sstable, as if derived afresh
    /// (invariant 3: `level_count` reads their length).
    fn count(&mut self, level: u32, delta: isize) {
        let l = level as usize;
        if self.per_level.len() <= l {
            self.per_level.resize(l + 1, 0);
        }
        self.per_level[l] = self.per_level[l].saturating_add_signed(delta);
        while self.per_level.last() == Some(&0) {
            self.per_level.pop();
        }
    }

    /// Every live sstable, ascending id.
    pub fn iter(&self) -> std::slice::Iter<'_, LiveSSTable<H>> {
        self.sstables.iter()
    }

    /// The handles of every live sstable, ascending id.
    pub fn handles(&self) -> Handles<'_, H> {
        Handles(&self.sstables)
    }

    pub fn len(&self) -> usize {
        self.sstables.len()
    }

    pub fn is_empty(&self) -> bool {
        self.sstables.is_empty()
    }

    pub fn get(&self, id: u64) -> Option<&LiveSSTable<H>> {
        self.sstables
            .binary_search_by_key(&id, |s| s.id)
            .ok()
            .map(|i| &self.sstables[i])
    }

    pub fn contains(&self, id: u64) -> bool {
        self.get(id).is_some()
    }

    pub fn level_of(&self, id: u64) -> Option<u32> {
        self.get(id).map(|s| s.level)
    }

    /// Sstables at `level`.
    pub fn count_at_level(&self, level: u32) -> usize {
        self.per_level.get(level as usize).copied().unwrap_or(0)
    }

    /// One past the highest level holding an sstable (0 when empty).
    pub fn level_count(&self) -> usize {
        self.per_level.len()
    }
}

/// The handles of a version's sstables, ascending id: what a reader iterates
/// (`view.sstables()`), indexable and countable like the slice it replaces.
#[derive(Debug)]
pub struct Handles<'a, H>(&'a [LiveSSTable<H>]);

impl<H> Clone for Handles<'_, H> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<H> Copy for Handles<'_, H> {}

impl<'a, H> Handles<'a, H> {
    pub fn iter(&self) -> HandleIter<'a, H> {
        HandleIter(self.0.iter())
    }

    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    pub fn get(&self, index: usize) -> Option<&'a H> {
        self.0.get(index).map(|s| &s.handle)
    }
}

impl<H> std::ops::Index<usize> for Handles<'_, H> {
    type Output = H;

    fn index(&self, index: usize) -> &H {
        &self.0[index].handle
    }
}

impl<'a, H> IntoIterator for Handles<'a, H> {
    type Item = &'a H;
    type IntoIter = HandleIter<'a, H>;

    fn into_iter(self) -> HandleIter<'a, H> {
        self.iter()
    }
}

/// Iterator of [`Handles`].
#[derive(Debug)]
pub struct HandleIter<'a, H>(std::slice::Iter<'a, LiveSSTable<H>>);

impl<H> Clone for HandleIter<'_, H> {
    fn clone(&self) -> Self {
        HandleIter(self.0.clone())
    }
}

impl<'a, H> Iterator for HandleIter<'a, H> {
    type Item = &'a H;

    fn next(&mut self) -> Option<&'a H> {
        self.0.next().map(|s| &s.handle)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        self.0.size_hint()
    }
}

impl<H> ExactSizeIterator for HandleIter<'_, H> {}

impl<H> DoubleEndedIterator for HandleIter<'_, H> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.0.next_back().map(|s| &s.handle)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(ids: &[(u64, u32)]) -> Version<&'static str> {
        Version::from_sstables(ids.iter().map(|&(id, level)| LiveSSTable {
            id,
            level,
            handle: "x",
            live: None,
        }))
        .expect("distinct ids")
    }

    fn ids(v: &Version<&str>) -> Vec<(u64, u32)> {
        v.iter().map(|s| (s.id, s.level)).collect()
    }

    #[test]
    fn apply_adds_removes_moves_and_keeps_id_order() {
        let base = v(&[(3, 0), (1, 1), (2, 0)]);
        assert_eq!(ids(&base), vec![(1, 1), (2, 0), (3, 0)]);
        assert_eq!(base.count_at_level(0), 2);
        let edit = VersionEdit::new()
            .remove(2)
            .remove(3)
            .add(5, 1, "out")
            .add(4, 1, "out")
            .move_to(1, 2);
        let next = base.apply(&edit).expect("valid edit");
        assert_eq!(ids(&next), vec![(1, 2), (4, 1), (5, 1)]);
        assert_eq!(
            (next.count_at_level(0), next.count_at_level(1)),
            (0, 2),
            "per-level counts follow the set"
        );
        assert_eq!(next.count_at_level(2), 1);
        assert_eq!(next.level_count(), 3);
        assert_eq!(next.get(4).map(|s| s.handle), Some("out"));
        // The old version is untouched (immutable values).
        assert_eq!(ids(&base), vec![(1, 1), (2, 0), (3, 0)]);
    }

    #[test]
    fn apply_refuses_bad_edits_and_changes_nothing() {
        let base = v(&[(1, 0), (2, 0)]);
        let cases: Vec<(VersionEdit<&str>, EditError)> = vec![
            (VersionEdit::new().remove(9), EditError::NotLive(9)),
            (VersionEdit::new().move_to(9, 1), EditError::NotLive(9)),
            (VersionEdit::new().add(2, 0, "y"), EditError::AlreadyLive(2)),
            (
                VersionEdit::new().remove(1).remove(1),
                EditError::Duplicate(1),
            ),
            (
                VersionEdit::new().remove(1).move_to(1, 3),
                EditError::Duplicate(1),
            ),
            (
                VersionEdit::new().add(7, 0, "a").add(7, 1, "b"),
                EditError::Duplicate(7),
            ),
            // An id removed and re-added in one edit would be a reused id.
            (
                VersionEdit::new().remove(1).add(1, 1, "again"),
                EditError::Duplicate(1),
            ),
        ];
        for (edit, want) in cases {
            assert_eq!(base.apply(&edit), Err(want.clone()), "{edit:?}");
        }
        assert_eq!(ids(&base), vec![(1, 0), (2, 0)]);
        assert!(matches!(
            EditError::NotLive(4).into_error(),
            Error::NotFound(_)
        ));
        assert!(matches!(
            EditError::Duplicate(4).into_error(),
            Error::InvalidInput(_)
        ));
        assert!(Version::from_sstables(vec![
            LiveSSTable {
                id: 1,
                level: 0,
                handle: (),
                live: None,
            };
            2
        ])
        .is_err());
    }

    /// `apply_in_place` is `apply` without the copy: over a seeded random
    /// sequence of edits (valid and refused ones), both give the same set and
    /// the same per-level counts as a recount, and a refused edit changes
    /// nothing.
    #[test]
    fn apply_in_place_matches_apply_and_keeps_counts() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(16);
        let mut copied: Version<u64> = Version::empty();
        let mut in_place: Version<u64> = Version::empty();
        // The simulator's set: the same refusals and the same result.
        let mut keyed: KeyedVersion<u64> = KeyedVersion::empty();
        let mut next_id = 1u64;
        for _ in 0..2000 {
            let live: Vec<u64> = copied.iter().map(|s| s.id).collect();
            let mut edit = VersionEdit::new();
            for id in &live {
                match rng.gen_range(0..10) {
                    0 => edit = edit.remove(*id),
                    1 => edit = edit.move_to(*id, rng.gen_range(0..5)),
                    _ => {}
                }
            }
            for _ in 0..rng.gen_range(0..4) {
                // Now and then an id out of order, or one already used.
                let id = match rng.gen_range(0..20) {
                    0 => rng.gen_range(1..next_id.max(2)),
                    _ => {
                        next_id += 1;
                        next_id
                    }
                };
                edit = edit.add(id, rng.gen_range(0..5), id * 10);
            }
            if let (Some(id), true) = (live.first(), rng.gen_bool(0.2)) {
                edit.accounted.push((*id, Some(LiveBytes::default())));
            }
            let before = in_place.clone();
            let in_place_result = in_place.apply_in_place(&edit);
            assert_eq!(keyed.apply_in_place(&edit), in_place_result, "{edit:?}");
            match (copied.apply(&edit), in_place_result) {
                (Ok(next), Ok(())) => {
                    assert_eq!(next, in_place, "{edit:?}");
                    copied = next;
                }
                (Err(a), Err(b)) => {
                    assert_eq!(a, b);
                    assert_eq!(in_place, before, "a refused edit changed the set");
                }
                (a, b) => panic!("apply {a:?} but apply_in_place {b:?} for {edit:?}"),
            }
            assert!(keyed.iter().eq(in_place.iter()), "keyed set differs");
            let mut recount: Vec<usize> = Vec::new();
            for s in in_place.iter() {
                if recount.len() <= s.level as usize {
                    recount.resize(s.level as usize + 1, 0);
                }
                recount[s.level as usize] += 1;
            }
            assert_eq!(in_place.per_level, recount);
            assert!(in_place
                .iter()
                .zip(in_place.iter().skip(1))
                .all(|(a, b)| a.id < b.id));
        }
        assert!(in_place.len() > 10, "the sequence grew a set");
    }

    #[test]
    fn map_keeps_ids_levels_and_removals() {
        let edit = VersionEdit::new().add(4, 1, 40u64).remove(2).move_to(3, 2);
        let mapped = edit.map(|s| format!("{}@{}", s.handle, s.level));
        assert_eq!(mapped.added[0].handle, "40@1");
        assert_eq!((mapped.removed, mapped.moved), (vec![2], vec![(3, 2)]));
        assert!(VersionEdit::<()>::new().is_empty());
    }

    #[test]
    fn accounting_is_set_with_the_edit_and_only_on_live_sstables() {
        let base = v(&[(1, 0), (2, 0)]);
        let dead = LiveBytes {
            dead_bytes: 10,
            dead_partitions: 1,
            ..LiveBytes::default()
        };
        // The added sstable and a survivor are accounted in the same apply.
        let mut edit = VersionEdit::new().remove(2).add(3, 0, "new");
        edit.accounted = vec![(1, Some(dead)), (3, Some(LiveBytes::default()))];
        let next = base.apply(&edit).expect("valid edit");
        assert_eq!(next.get(1).and_then(|s| s.live), Some(dead));
        assert_eq!(next.get(3).and_then(|s| s.live), Some(LiveBytes::default()));
        assert_eq!(
            base.get(1).and_then(|s| s.live),
            None,
            "old version unchanged"
        );
        // Accounting a removed sstable, or one twice, is refused.
        let mut bad = VersionEdit::new().remove(2);
        bad.accounted = vec![(2, Some(dead))];
        assert_eq!(base.apply(&bad), Err(EditError::NotLive(2)));
        let mut twice = VersionEdit::<&str>::new();
        twice.accounted = vec![(1, None), (1, Some(dead))];
        assert_eq!(base.apply(&twice), Err(EditError::Duplicate(1)));
        // Carried through `map` (the manifest persists it).
        let mapped = edit.map(|_| ());
        assert_eq!(mapped.accounted, edit.accounted);
    }
}
