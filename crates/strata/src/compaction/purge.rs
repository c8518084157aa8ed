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

use crate::data::{CellKind, DeletionTime, LivenessInfo, PartitionUpdate};

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
    let mut stats = PurgeStats::default();
    let purgeable = |d: &DeletionTime| {
        !d.is_live()
            && d.local_deletion_seconds < gc_before_seconds
            && d.marked_for_delete_at_micros < max_purgeable_micros
    };

    // Rule 1: shadowing. Uses the deletions before any of them is purged.
    let deletion = p.deletion.clone();
    for row in p.rows.iter_mut() {
        let covering = deletion.covering(&row.clustering).max(row.deletion);
        let before = row.cells.len();
        row.shadow(covering);
        stats.shadowed_cells += (before - row.cells.len()) as u64;
    }
    if let Some(s) = p.static_row.as_mut() {
        let covering = deletion.partition_deletion().max(s.deletion);
        let before = s.cells.len();
        s.shadow(covering);
        stats.shadowed_cells += (before - s.cells.len()) as u64;
    }

    // Rule 2: purgeable deletions and expired data.
    if p.deletion.partition.as_ref().is_some_and(purgeable) {
        p.deletion.partition = None;
        stats.tombstones_purged += 1;
    }
    let before = p.deletion.ranges.len();
    p.deletion.ranges.retain(|rt| !purgeable(&rt.deletion));
    stats.tombstones_purged += (before - p.deletion.ranges.len()) as u64;
    for row in p.rows.iter_mut().chain(p.static_row.iter_mut()) {
        if purgeable(&row.deletion) {
            row.deletion = DeletionTime::LIVE;
            stats.tombstones_purged += 1;
        }
        let marker = row.liveness;
        if marker.is_expiring()
            && marker.local_expiry_seconds < gc_before_seconds
            && marker.timestamp_micros < max_purgeable_micros
        {
            row.liveness = LivenessInfo::EMPTY;
        }
        let before = row.cells.len();
        let mut tombstones = 0u64;
        row.cells.retain(|c| {
            let dead_long_enough = match c.kind {
                CellKind::Live => false,
                CellKind::Expiring | CellKind::Tombstone => {
                    c.local_deletion_seconds < gc_before_seconds
                }
            };
            let purge = dead_long_enough && c.timestamp_micros < max_purgeable_micros;
            if purge && c.kind == CellKind::Tombstone {
                tombstones += 1;
            }
            !purge
        });
        let removed = (before - row.cells.len()) as u64;
        stats.tombstones_purged += tombstones;
        stats.expired_cells_purged += removed - tombstones;
    }

    // Rule 3: empty rows and static row.
    let before = p.rows.len();
    p.rows.retain(|r| !r.is_empty());
    stats.rows_removed += (before - p.rows.len()) as u64;
    if p.static_row.as_ref().is_some_and(|r| r.is_empty()) {
        p.static_row = None;
    }
    stats
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
