//! Whether a fully expired sstable can be dropped although Cassandra's overlap
//! rule says no: the row-level check of issue 12 point 3, and the report behind
//! `strata sstable expiredblockers`.
//!
//! Cassandra's rule ([`super::common::fully_expired`]) blocks the drop of a fully
//! expired sstable `C` while any overlapping sstable (or memtable) with live data
//! holds a write as old as `C`'s newest one: `C`'s tombstones and expired cells
//! might shadow that write, and dropping `C` would bring it back. It judges by
//! one minimum timestamp per sstable, so a handful of late writes with old
//! timestamps (repair, hints, `USING TIMESTAMP`), which expire TTL seconds after
//! they *arrive*, pin every older-than-them window for a whole TTL: the
//! "overlaps with token range of expired SSTables" that operators report.
//!
//! This module asks the precise question instead. For each blocker `O` (a source
//! the coarse rule names), it finds the data in `O` old enough to be shadowed by
//! `C` (timestamp at or below `C`'s newest write) and looks up, through `C`'s
//! Bloom filter and index, what `C` holds of those partitions. `O`'s old data is
//! safe from `C` when `C` holds nothing of its partition, or holds no partition
//! deletion, no range tombstone covering its rows, and no row of the same
//! clustering (so no cell, marker or row deletion of `C` can reconcile against
//! it). Only then is `C` dropped despite the coarse rule. A time series whose late
//! writes carry old event times (their own clusterings) thus pins nothing.
//!
//! Who calls: the compaction runtime, under the table's decision lock, for the
//! fully expired sstables the coarse rule blocks (results are cached per set of
//! blockers, see `runtime`); `Table::expired_blockers` for the report. Reads go
//! through the sstables' own readers (I/O tagged as compaction reads).
//!
//! Invariants:
//! 1. Never more permissive than the data allows: an sstable is declared
//!    unshadowed only if, for every blocker, every datum with a timestamp at or
//!    below the candidate's newest write is in a partition the candidate lacks, or
//!    in a row the candidate neither holds nor deletes. Anything unknown (a read
//!    error, a blocker larger than the check's budget, an unreadable sstable)
//!    blocks.
//! 2. The check reads each blocker's data once and at most one partition of the
//!    candidate per partition of old data; the candidate is never scanned whole.

use crate::data::{DecoratedKey, PartitionUpdate, Row};
use crate::error::Result;
use crate::fs::{IoCause, IoTag};
use crate::memtable::Memtable;
use crate::sstable::SSTableReader;
use std::sync::Arc;

/// Largest blocker, in uncompressed bytes, that the check reads through. A
/// blocker is typically the small sstable of late writes that segregation makes;
/// a large one (segregation off: the late writes mixed into a whole window) is
/// reported as blocking rather than read whole at every check.
pub const DEFAULT_BLOCKER_BUDGET_BYTES: u64 = 64 * 1024 * 1024;

/// One source that holds data old enough to be shadowed by the candidate.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct Blocker {
    /// `"sstable"` or `"memtable"`.
    pub kind: &'static str,
    /// Sstable generation or memtable id.
    pub id: u64,
    /// The source's oldest write: what the coarse rule compares.
    pub min_timestamp_micros: i64,
    /// Why it still blocks after the row-level check, or `None` when the check
    /// found nothing of it that the candidate could shadow.
    pub blocks_because: Option<String>,
}

/// The verdict on one fully expired candidate.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct ExpiryCheck {
    pub candidate: u64,
    pub candidate_max_timestamp_micros: i64,
    /// Every source the coarse rule names, with the row-level result.
    pub blockers: Vec<Blocker>,
}

impl ExpiryCheck {
    /// Dropping the candidate shadows nothing (invariant 1).
    pub fn unshadowed(&self) -> bool {
        self.blockers.iter().all(|b| b.blocks_because.is_none())
    }
}

/// Checks `candidate` against `sstables` (every *other* live sstable that the
/// coarse rule counts: overlapping token range, live data, a write at or below
/// the candidate's newest) and `memtables` (those holding such a write).
/// The verdict with the row-level check off (`row_level_expiry_check: false`):
/// every source the coarse rule names blocks, for `reason`, and nothing is read.
pub fn coarse_only(
    candidate: &Arc<SSTableReader>,
    sstables: &[Arc<SSTableReader>],
    memtables: &[Arc<Memtable>],
    reason: &str,
) -> ExpiryCheck {
    let mut blockers: Vec<Blocker> = sstables
        .iter()
        .map(|o| Blocker {
            kind: "sstable",
            id: o.id(),
            min_timestamp_micros: o.stats().min_timestamp_micros,
            blocks_because: Some(reason.to_string()),
        })
        .collect();
    blockers.extend(memtables.iter().map(|m| Blocker {
        kind: "memtable",
        id: m.id(),
        min_timestamp_micros: m.min_timestamp().unwrap_or(i64::MAX),
        blocks_because: Some(reason.to_string()),
    }));
    ExpiryCheck {
        candidate: candidate.id(),
        candidate_max_timestamp_micros: candidate.stats().max_timestamp_micros,
        blockers,
    }
}

pub fn check(
    candidate: &Arc<SSTableReader>,
    sstables: &[Arc<SSTableReader>],
    memtables: &[Arc<Memtable>],
    budget_bytes: u64,
) -> ExpiryCheck {
    let cmax = candidate.stats().max_timestamp_micros;
    let mut blockers = Vec::new();
    for o in sstables {
        let because = if o.stats().uncompressed_bytes > budget_bytes {
            Some(format!(
                "{} uncompressed bytes, more than the {budget_bytes}-byte budget of the row-level check",
                o.stats().uncompressed_bytes
            ))
        } else {
            match sstable_blocks(candidate, o, cmax) {
                Ok(b) => b,
                Err(e) => Some(format!("could not be checked: {e}")),
            }
        };
        blockers.push(Blocker {
            kind: "sstable",
            id: o.id(),
            min_timestamp_micros: o.stats().min_timestamp_micros,
            blocks_because: because,
        });
    }
    for m in memtables {
        let because = match memtable_blocks(candidate, m, cmax) {
            Ok(b) => b,
            Err(e) => Some(format!("could not be checked: {e}")),
        };
        blockers.push(Blocker {
            kind: "memtable",
            id: m.id(),
            min_timestamp_micros: m.min_timestamp().unwrap_or(i64::MAX),
            blocks_because: because,
        });
    }
    ExpiryCheck {
        candidate: candidate.id(),
        candidate_max_timestamp_micros: cmax,
        blockers,
    }
}

fn sstable_blocks(
    candidate: &Arc<SSTableReader>,
    o: &Arc<SSTableReader>,
    cmax: i64,
) -> Result<Option<String>> {
    let tag = IoTag::new(IoCause::Compaction);
    let mut scanner = o.scan(None, tag)?;
    while let Some(p) = scanner.next().transpose()? {
        if let Some(why) = partition_blocks(candidate, &p, cmax)? {
            return Ok(Some(format!("sstable {}: {why}", o.id())));
        }
    }
    Ok(None)
}

fn memtable_blocks(
    candidate: &Arc<SSTableReader>,
    m: &Arc<Memtable>,
    cmax: i64,
) -> Result<Option<String>> {
    // Only a memtable whose oldest write is at or below the candidate's newest
    // can hold something to shadow; its partitions are read from memory.
    if m.min_timestamp().is_none_or(|t| t > cmax) {
        return Ok(None);
    }
    for part in m.all_partitions() {
        let p = m.materialize(&part, &crate::data::ClusteringRange::ALL);
        if let Some(why) = partition_blocks(candidate, &p, cmax)? {
            return Ok(Some(format!("memtable {}: {why}", m.id())));
        }
    }
    Ok(None)
}

/// Whether `candidate` holds anything that could shadow the old data (at or
/// below `cmax`) of partition `p` of a blocker; why, if so.
fn partition_blocks(
    candidate: &Arc<SSTableReader>,
    p: &PartitionUpdate,
    cmax: i64,
) -> Result<Option<String>> {
    let old_rows: Vec<&Row> = p
        .rows
        .iter()
        .filter(|r| r.max_timestamp() != crate::data::NO_TIMESTAMP && min_timestamp(r) <= cmax)
        .collect();
    let old_static = p
        .static_row
        .as_ref()
        .is_some_and(|r| !r.is_empty() && min_timestamp(r) <= cmax);
    // Deletions in the blocker need no check: dropping the candidate can only
    // bring back data it shadows, and a deletion is never brought back.
    if old_rows.is_empty() && !old_static {
        return Ok(None);
    }
    if !candidate.may_contain(&p.key) {
        return Ok(None);
    }
    let tag = IoTag::new(IoCause::Compaction);
    let Some(c) = candidate.read_partition(&p.key, tag)? else {
        return Ok(None);
    };
    if let Some(why) = candidate_shadows(&c, &p.key, &old_rows, old_static) {
        return Ok(Some(why));
    }
    Ok(None)
}

/// The decision of [`partition_blocks`] once both sides are in memory.
fn candidate_shadows(
    c: &PartitionUpdate,
    key: &DecoratedKey,
    old_rows: &[&Row],
    old_static: bool,
) -> Option<String> {
    let name = || format!("partition with token {}", key.token);
    if c.deletion.partition.is_some_and(|d| !d.is_live()) {
        return Some(format!("{}: the candidate deletes the partition", name()));
    }
    if old_static && c.static_row.is_some() {
        return Some(format!("{}: both hold the static row", name()));
    }
    for r in old_rows {
        if c.deletion
            .ranges
            .iter()
            .any(|rt| rt.range.contains(&r.clustering))
        {
            return Some(format!(
                "{}: a range tombstone of the candidate covers an old row",
                name()
            ));
        }
        if c.rows
            .binary_search_by(|x| x.clustering.as_slice().cmp(&r.clustering))
            .is_ok()
        {
            return Some(format!("{}: both hold the same row", name()));
        }
    }
    None
}

/// Smallest timestamp in a row (marker, deletion, cells), ignoring absent ones.
fn min_timestamp(r: &Row) -> i64 {
    let mut m = i64::MAX;
    if !r.liveness.is_empty() {
        m = m.min(r.liveness.timestamp_micros);
    }
    if !r.deletion.is_live() {
        m = m.min(r.deletion.marked_for_delete_at_micros);
    }
    for c in &r.cells {
        m = m.min(c.timestamp_micros);
    }
    m
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, ClusteringBound, ClusteringRange, DeletionTime, RangeTombstone};

    fn row(ck: u8, ts: i64) -> Row {
        let mut r = Row::new(vec![ck]);
        r.add_cell(Cell::live(0, ts, vec![ck]));
        r
    }

    fn part(rows: &[(u8, i64)]) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(DecoratedKey::new(b"k"));
        for &(ck, ts) in rows {
            p.add_row(row(ck, ts));
        }
        p
    }

    #[test]
    fn disjoint_rows_are_not_shadowed_and_shared_rows_are() {
        let candidate = part(&[(10, 500), (11, 500)]);
        let key = candidate.key.clone();
        let old = row(3, 100);
        assert_eq!(candidate_shadows(&candidate, &key, &[&old], false), None);
        let same = row(10, 100);
        assert!(candidate_shadows(&candidate, &key, &[&same], false)
            .is_some_and(|w| w.contains("same row")));
    }

    #[test]
    fn deletions_of_the_candidate_block() {
        let mut c = part(&[(10, 500)]);
        let key = c.key.clone();
        let old = row(3, 100);
        c.deletion.ranges.push(RangeTombstone {
            range: ClusteringRange {
                start: ClusteringBound::inclusive(vec![0]),
                end: ClusteringBound::inclusive(vec![5]),
            },
            deletion: DeletionTime::new(400, 1),
        });
        assert!(candidate_shadows(&c, &key, &[&old], false)
            .is_some_and(|w| w.contains("range tombstone")));
        let mut d = part(&[]);
        d.deletion.partition = Some(DeletionTime::new(400, 1));
        assert!(candidate_shadows(&d, &key, &[&old], false)
            .is_some_and(|w| w.contains("deletes the partition")));
        // Nothing old on the blocker's side: nothing to shadow.
        assert_eq!(
            candidate_shadows(&part(&[(1, 500)]), &key, &[], false),
            None
        );
        // Static rows on both sides.
        let mut s = part(&[]);
        s.static_row = Some(row(0, 500));
        assert!(candidate_shadows(&s, &key, &[], true).is_some());
    }

    #[test]
    fn min_timestamp_ignores_absent_parts() {
        let mut r = row(1, 700);
        r.add_cell(Cell::live(1, 300, vec![]));
        assert_eq!(min_timestamp(&r), 300);
        r.deletion = DeletionTime::new(200, 1);
        assert_eq!(min_timestamp(&r), 200);
    }
}
