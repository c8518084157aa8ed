//! Garbage collection during compaction: Cassandra's purge rules.
//!
//! A merged partition loses, in order:
//! 1. everything shadowed by a deletion in the same merged partition (partition,
//!    range and row tombstones shadow older cells and row markers);
//! 2. tombstones (of every kind), expired cells and expired row markers whose local
//!    deletion time is before `gc_before = now - gc_grace_seconds` **and** whose
//!    timestamp is below the partition's *max purgeable timestamp*: the smallest
//!    min-timestamp of any sstable outside the compaction, or memtable, that may
//!    hold data of this partition (token range + bloom filter for sstables; a
//!    memtable is asked directly). A tombstone at or above it might still shadow
//!    older data elsewhere, so it must stay (Cassandra's `maxPurgeableTimestamp`);
//! 3. rows left empty, and the partition if nothing is left.
//!
//! Invariants:
//! 1. Purging never changes what a read returns at any time `>= now`: removed data
//!    was either shadowed (invisible) or a tombstone with nothing older left to
//!    shadow anywhere.
//! 2. Expiry is judged with the executor's `now`; reconciliation never is (data.rs
//!    invariant 2), so purging is the only time-dependent step of a compaction.

use crate::data::{CellKind, DeletionTime, LivenessInfo, PartitionDeletion, PartitionUpdate, Row};

/// Counts of what one partition's purge removed.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PurgeStats {
    pub shadowed_cells: u64,
    pub tombstones_purged: u64,
    pub expired_cells_purged: u64,
    pub rows_removed: u64,
}

impl PurgeStats {
    pub fn add(&mut self, o: &PurgeStats) {
        self.shadowed_cells += o.shadowed_cells;
        self.tombstones_purged += o.tombstones_purged;
        self.expired_cells_purged += o.expired_cells_purged;
        self.rows_removed += o.rows_removed;
    }
}

/// Purges `p` in place (module docs). `max_purgeable_micros` is the bound of rule
/// 2 for this partition (`i64::MAX` when nothing outside the compaction can hold
/// it). Returns what was removed; `p` may end up empty.
pub fn purge_partition(
    p: &mut PartitionUpdate,
    gc_before_seconds: i64,
    max_purgeable_micros: i64,
) -> PurgeStats {
    let purge = PartitionPurge::new(&p.deletion, gc_before_seconds, max_purgeable_micros);
    let mut stats = PurgeStats::default();
    p.rows.retain_mut(|row| purge.row(row, &mut stats));
    if let Some(s) = p.static_row.as_mut() {
        if !purge.static_row(s, &mut stats) {
            p.static_row = None;
        }
    }
    purge.header(&mut p.deletion, &mut stats);
    stats
}

/// The purge of one partition a part at a time, as a merged stream delivers
/// them: its deletions (taken before any of them is purged: rule 1 shadows
/// with those), then its static row and each row as they come.
/// [`purge_partition`] is this applied to every part of a partition held
/// whole, so the two cannot drift apart.
#[derive(Clone, Debug)]
pub struct PartitionPurge {
    deletion: PartitionDeletion,
    gc_before_seconds: i64,
    max_purgeable_micros: i64,
}

impl PartitionPurge {
    /// The purge of a partition whose merged deletions are `deletion`.
    pub fn new(
        deletion: &PartitionDeletion,
        gc_before_seconds: i64,
        max_purgeable_micros: i64,
    ) -> PartitionPurge {
        PartitionPurge {
            deletion: deletion.clone(),
            gc_before_seconds,
            max_purgeable_micros,
        }
    }

    fn purgeable(&self, d: &DeletionTime) -> bool {
        !d.is_live()
            && d.local_deletion_seconds < self.gc_before_seconds
            && d.marked_for_delete_at_micros < self.max_purgeable_micros
    }

    /// Rule 2 for the partition deletion and range tombstones.
    pub fn header(&self, deletion: &mut PartitionDeletion, stats: &mut PurgeStats) {
        if deletion
            .partition
            .as_ref()
            .is_some_and(|d| self.purgeable(d))
        {
            deletion.partition = None;
            stats.tombstones_purged += 1;
        }
        let before = deletion.ranges.len();
        deletion.ranges.retain(|rt| !self.purgeable(&rt.deletion));
        stats.tombstones_purged += (before - deletion.ranges.len()) as u64;
    }

    /// Rules 1 and 2 for the static row (shadowed by the partition deletion
    /// alone); whether anything is left of it (rule 3).
    pub fn static_row(&self, row: &mut Row, stats: &mut PurgeStats) -> bool {
        let covering = self.deletion.partition_deletion().max(row.deletion);
        self.shadow_and_purge(row, covering, stats);
        !row.is_empty()
    }

    /// Rules 1 to 3 for a clustering row: whether anything is left of it.
    pub fn row(&self, row: &mut Row, stats: &mut PurgeStats) -> bool {
        let covering = self.deletion.covering(&row.clustering).max(row.deletion);
        self.shadow_and_purge(row, covering, stats);
        if row.is_empty() {
            stats.rows_removed += 1;
            return false;
        }
        true
    }

    fn shadow_and_purge(&self, row: &mut Row, covering: DeletionTime, stats: &mut PurgeStats) {
        // Rule 1: shadowing, by the deletions before any of them is purged.
        let before = row.cells.len();
        row.shadow(covering);
        stats.shadowed_cells += (before - row.cells.len()) as u64;
        // Rule 2: purgeable deletions and expired data.
        if self.purgeable(&row.deletion) {
            row.deletion = DeletionTime::LIVE;
            stats.tombstones_purged += 1;
        }
        let marker = row.liveness;
        if marker.is_expiring()
            && marker.local_expiry_seconds < self.gc_before_seconds
            && marker.timestamp_micros < self.max_purgeable_micros
        {
            row.liveness = LivenessInfo::EMPTY;
        }
        let before = row.cells.len();
        let mut tombstones = 0u64;
        row.cells.retain(|c| {
            let dead_long_enough = match c.kind {
                CellKind::Live | CellKind::Counter => false,
                CellKind::Expiring | CellKind::Tombstone => {
                    c.local_deletion_seconds < self.gc_before_seconds
                }
            };
            let purge = dead_long_enough && c.timestamp_micros < self.max_purgeable_micros;
            if purge && c.kind == CellKind::Tombstone {
                tombstones += 1;
            }
            !purge
        });
        let removed = (before - row.cells.len()) as u64;
        stats.tombstones_purged += tombstones;
        stats.expired_cells_purged += removed - tombstones;
    }
}

/// Whether nothing at all is left of the partition.
pub fn is_empty(p: &PartitionUpdate) -> bool {
    p.rows.is_empty() && p.static_row.is_none() && p.deletion.is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, DecoratedKey, Row};

    fn part() -> PartitionUpdate {
        PartitionUpdate::new(DecoratedKey::new(b"k"))
    }

    #[test]
    fn shadowed_data_goes_and_young_tombstones_stay() {
        let mut p = part();
        p.deletion.partition = Some(DeletionTime::new(10, 100));
        let mut r = Row::new(b"a".to_vec());
        r.add_cell(Cell::live(0, 5, b"old".to_vec()));
        r.add_cell(Cell::live(1, 15, b"new".to_vec()));
        p.add_row(r);
        let s = purge_partition(&mut p, 50, i64::MAX);
        assert_eq!(s.shadowed_cells, 1);
        assert_eq!(p.rows[0].cells.len(), 1);
        assert!(
            p.deletion.partition.is_some(),
            "deleted at 100 > gc_before 50: kept"
        );
    }

    #[test]
    fn old_tombstones_purge_only_below_max_purgeable() {
        let mut p = part();
        p.deletion.partition = Some(DeletionTime::new(10, 100));
        let mut q = p.clone();
        // Something outside the compaction holds data from ts 5: the tombstone at 10
        // may shadow it, so it must stay.
        purge_partition(&mut p, 200, 5);
        assert!(p.deletion.partition.is_some());
        // Nothing older elsewhere: it goes, and the partition is empty.
        let s = purge_partition(&mut q, 200, 11);
        assert_eq!(s.tombstones_purged, 1);
        assert!(is_empty(&q));
    }

    #[test]
    fn expired_cells_and_markers_purge_after_grace() {
        let mut p = part();
        let mut r = Row::new(b"a".to_vec());
        r.liveness = LivenessInfo::expiring(1, 10, 100); // expires at 110
        r.add_cell(Cell::expiring(0, 1, 10, 100, b"v".to_vec()));
        r.add_cell(Cell::tombstone(1, 1, 100));
        p.add_row(r);
        let mut early = p.clone();
        purge_partition(&mut early, 105, i64::MAX);
        assert_eq!(
            early.rows[0].cells.len(),
            1,
            "tombstone at 100 < 105 purged, expiring (110) kept"
        );
        let s = purge_partition(&mut p, 111, i64::MAX);
        assert_eq!(s.expired_cells_purged, 1);
        assert_eq!(s.tombstones_purged, 1);
        assert_eq!(s.rows_removed, 1);
        assert!(is_empty(&p));
    }
}
