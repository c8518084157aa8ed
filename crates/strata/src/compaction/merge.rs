//! The merge of one partition across a compaction's inputs, a row at a time
//! (Cassandra's `UnfilteredRowIterators.merge` under a `PurgeFunction`):
//! the inputs' deletions and static rows are merged first, then their rows
//! in a k-way merge by clustering, each row reconciled across the inputs
//! that hold it, shadowed and purged on its own and handed on, so that no
//! step holds the partition whole (issue: a 1 GiB blob file took 2.1 GB to
//! compact when each input's share was decoded whole and merged into one
//! more copy).
//!
//! Who calls: the compaction executor, one merge per partition of a task, on
//! the task's thread.
//!
//! Invariants:
//! 1. The rows handed on are exactly those of [`crate::read::merge_partition`]
//!    over the inputs' whole partitions followed by
//!    [`super::purge::purge_partition`] (and, for a fragmentation rewrite,
//!    the live set's deletions' shadowing before it), in clustering order:
//!    the whole-partition merge this replaces is the oracle of
//!    `merging_a_row_at_a_time_equals_merging_whole`.
//! 2. Memory: one row per input (its next row, already read) and the row
//!    being merged, besides what the inputs' scanners hold.

use super::live_bytes::PartitionDeletions;
use super::purge::{PartitionPurge, PurgeStats};
use crate::data::{PartitionDeletion, Row};
use crate::error::Result;
use crate::sstable::{PartitionHead, RowScanner};

/// The rows of one input's partition, in clustering order.
pub trait RowSource {
    fn next_row(&mut self) -> Result<Option<Row>>;
}

impl RowSource for RowScanner {
    fn next_row(&mut self) -> Result<Option<Row>> {
        RowScanner::next_row(self)
    }
}

/// What a fragmentation rewrite shadows and how the merge purges: the
/// partition's bounds for Cassandra's purge rules, and the deletions other
/// live sstables hold of it (`None` for every other task).
#[derive(Clone, Debug)]
pub struct MergeRules {
    pub gc_before_seconds: i64,
    pub max_purgeable_micros: i64,
    pub live_set: Option<PartitionDeletions>,
}

/// One input of a merge: its rows, the next one read, and the clustering of
/// the last one taken (to check their order), whose successor is read only
/// when the next merged row is asked for: by then the row taken has been
/// written, so an input holds one row at a time (invariant 2).
struct Source<'a, S> {
    rows: &'a mut S,
    head: Option<Row>,
    refill: bool,
    /// Whether a row was taken, and its clustering.
    taken: bool,
    last: Vec<u8>,
}

/// One partition being merged (module docs): built from the heads of the
/// inputs that hold it, it yields the merged rows one at a time.
pub struct PartitionMerge<'a, S: RowSource> {
    /// Each input, in input order.
    sources: Vec<Source<'a, S>>,
    purge: PartitionPurge,
    live_set: Option<PartitionDeletions>,
    stats: PurgeStats,
}

impl<'a, S: RowSource> PartitionMerge<'a, S> {
    /// Merges the heads (in input order, each with its input's rows) into
    /// the partition's deletion and static row, purged, which the caller
    /// writes before the rows; then reads each input's first row.
    pub fn new(
        heads: Vec<(PartitionHead, &'a mut S)>,
        rules: MergeRules,
    ) -> Result<(PartitionMerge<'a, S>, PartitionDeletion, Option<Row>)> {
        let mut deletion = PartitionDeletion::default();
        let mut static_row: Option<Row> = None;
        let mut sources = Vec::with_capacity(heads.len());
        for (head, source) in heads {
            deletion.merge(&head.deletion);
            static_row = match (static_row.take(), head.static_row) {
                (Some(a), Some(b)) => Some(a.merge(b)),
                (a, b) => a.or(b),
            };
            sources.push(Source {
                rows: source,
                head: None,
                refill: true,
                taken: false,
                last: Vec::new(),
            });
        }
        let mut stats = PurgeStats::default();
        if let (Some(live), Some(st)) = (&rules.live_set, static_row.as_mut()) {
            let before = st.cells.len();
            st.shadow(live.partition.partition_deletion());
            stats.shadowed_cells += (before - st.cells.len()) as u64;
            if st.is_empty() {
                static_row = None;
            }
        }
        let purge = PartitionPurge::new(
            &deletion,
            rules.gc_before_seconds,
            rules.max_purgeable_micros,
        );
        if let Some(st) = static_row.as_mut() {
            if !purge.static_row(st, &mut stats) {
                static_row = None;
            }
        }
        purge.header(&mut deletion, &mut stats);
        Ok((
            PartitionMerge {
                sources,
                purge,
                live_set: rules.live_set,
                stats,
            },
            deletion,
            static_row,
        ))
    }

    /// The next merged row that anything is left of, in clustering order;
    /// `None` after the last.
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            for s in self.sources.iter_mut().filter(|s| s.refill) {
                s.refill = false;
                s.head = s.rows.next_row()?;
                if let Some(r) = &s.head {
                    if s.taken && r.clustering <= s.last {
                        return Err(crate::error::Error::InvalidInput(
                            "merge: an input's rows are not in increasing clustering order".into(),
                        ));
                    }
                }
            }
            // The first input (in input order) holding the smallest
            // clustering; a linear pass, as a task has a few inputs.
            let mut min: Option<usize> = None;
            for (i, s) in self.sources.iter().enumerate() {
                if let Some(r) = &s.head {
                    let smaller = match min.and_then(|m| self.sources[m].head.as_ref()) {
                        None => true,
                        Some(m) => r.clustering < m.clustering,
                    };
                    if smaller {
                        min = Some(i);
                    }
                }
            }
            let Some(m) = min else {
                return Ok(None);
            };
            let mut row = self.take(m)?;
            for i in m + 1..self.sources.len() {
                if self.sources[i]
                    .head
                    .as_ref()
                    .is_some_and(|r| r.clustering == row.clustering)
                {
                    let other = self.take(i)?;
                    row = row.merge(other);
                }
            }
            if let Some(live) = &self.live_set {
                // The garbage of a fragmented blob sstable is deleted by
                // tombstones held in other sstables (`live_bytes`).
                let before = row.cells.len();
                row.shadow(live.covering(&row.clustering));
                self.stats.shadowed_cells += (before - row.cells.len()) as u64;
                if row.is_empty() {
                    continue;
                }
            }
            if self.purge.row(&mut row, &mut self.stats) {
                return Ok(Some(row));
            }
        }
    }

    /// Input `i`'s next row; its following one is read at the next call of
    /// [`next_row`](Self::next_row).
    fn take(&mut self, i: usize) -> Result<Row> {
        let s = &mut self.sources[i];
        let row = s.head.take().ok_or_else(|| {
            crate::error::Error::InvalidInput("merge: an input's row taken twice".into())
        })?;
        s.refill = true;
        s.taken = true;
        s.last.clear();
        s.last.extend_from_slice(&row.clustering);
        Ok(row)
    }

    /// What the purge removed from this partition so far.
    pub fn stats(&self) -> PurgeStats {
        self.stats
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compaction::purge::{is_empty, purge_partition};
    use crate::data::{
        Cell, ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo,
        PartitionUpdate, RangeTombstone,
    };
    use crate::read::merge_partition;
    use rand::{Rng, SeedableRng};

    /// An input's rows in memory.
    struct Rows(std::vec::IntoIter<Row>);

    impl RowSource for Rows {
        fn next_row(&mut self) -> Result<Option<Row>> {
            Ok(self.0.next())
        }
    }

    fn random_row(rng: &mut impl Rng, ck: u8) -> Row {
        let mut r = Row::new(vec![ck]);
        match rng.gen_range(0..3) {
            0 => {}
            1 => r.liveness = LivenessInfo::expiring(rng.gen_range(1..20), 10, 90),
            _ => r.liveness = LivenessInfo::new(rng.gen_range(1..20)),
        }
        if rng.gen_ratio(1, 6) {
            r.deletion = DeletionTime::new(rng.gen_range(1..20), rng.gen_range(80..120));
        }
        for c in 0..4u32 {
            if rng.gen_bool(0.6) {
                let ts = rng.gen_range(1..20);
                r.add_cell(match rng.gen_range(0..4) {
                    0 => Cell::tombstone(c, ts, rng.gen_range(80..120)),
                    1 => Cell::expiring(c, ts, 10, rng.gen_range(80..110), vec![ck, 1]),
                    _ => Cell::live(c, ts, vec![ck, rng.gen()]),
                });
            }
        }
        r
    }

    fn random_input(rng: &mut impl Rng, key: &DecoratedKey) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(key.clone());
        if rng.gen_ratio(1, 4) {
            p.deletion.partition = Some(DeletionTime::new(rng.gen_range(1..20), 100));
        }
        if rng.gen_ratio(1, 4) {
            p.deletion.ranges.push(RangeTombstone {
                range: ClusteringRange {
                    start: ClusteringBound::inclusive(vec![rng.gen_range(0..6)]),
                    end: ClusteringBound::exclusive(vec![rng.gen_range(3..12)]),
                },
                deletion: DeletionTime::new(rng.gen_range(1..20), rng.gen_range(80..120)),
            });
        }
        if rng.gen_ratio(1, 4) {
            p.static_row = Some(Row {
                clustering: Vec::new(),
                ..random_row(rng, 0)
            });
        }
        for ck in 0..12u8 {
            if rng.gen_bool(0.4) {
                p.rows.push(random_row(rng, ck));
            }
        }
        p
    }

    #[test]
    fn merging_a_row_at_a_time_equals_merging_whole() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(20260802);
        let key = DecoratedKey::new(b"k");
        let (mut nonempty, mut total) = (0, PurgeStats::default());
        for case in 0..3000 {
            let inputs: Vec<PartitionUpdate> = (0..rng.gen_range(1..5))
                .map(|_| random_input(&mut rng, &key))
                .collect();
            let gc_before = rng.gen_range(70..130);
            let max_purgeable = rng.gen_range(0..25);
            let live_set = rng.gen_ratio(1, 3).then(|| {
                let other = random_input(&mut rng, &key);
                let mut d = PartitionDeletions {
                    partition: other.deletion.clone(),
                    ..PartitionDeletions::default()
                };
                for r in other.rows.iter().filter(|r| !r.deletion.is_live()) {
                    d.rows.insert(r.clustering.clone(), r.deletion);
                }
                d
            });
            // The oracle: the whole-partition merge compaction did before.
            let mut want = PartitionUpdate::new(key.clone());
            for p in inputs.clone() {
                merge_partition(&mut want, p);
            }
            let mut want_stats = PurgeStats::default();
            if let Some(live) = &live_set {
                want_stats.shadowed_cells += live.shadow(&mut want);
            }
            want_stats.add(&purge_partition(&mut want, gc_before, max_purgeable));

            let mut sources: Vec<Rows> = inputs
                .iter()
                .map(|p| Rows(p.rows.clone().into_iter()))
                .collect();
            let heads = inputs
                .iter()
                .zip(sources.iter_mut())
                .map(|(p, s)| {
                    (
                        PartitionHead {
                            key: key.clone(),
                            deletion: p.deletion.clone(),
                            static_row: p.static_row.clone(),
                        },
                        s,
                    )
                })
                .collect();
            let rules = MergeRules {
                gc_before_seconds: gc_before,
                max_purgeable_micros: max_purgeable,
                live_set,
            };
            let (mut m, deletion, static_row) = PartitionMerge::new(heads, rules).unwrap();
            let mut got = PartitionUpdate::new(key.clone());
            got.deletion = deletion;
            got.static_row = static_row;
            while let Some(r) = m.next_row().unwrap() {
                got.rows.push(r);
            }
            let stats = m.stats();
            assert_eq!(got, want, "case {case}");
            assert_eq!(
                stats.shadowed_cells, want_stats.shadowed_cells,
                "case {case}"
            );
            assert_eq!(
                stats.tombstones_purged, want_stats.tombstones_purged,
                "case {case}"
            );
            assert_eq!(
                stats.expired_cells_purged, want_stats.expired_cells_purged,
                "case {case}"
            );
            nonempty += usize::from(!is_empty(&got));
            total.add(&stats);
        }
        // The cases reach every rule: merges left empty and not, each kind
        // of removal.
        assert!(
            nonempty > 1000 && nonempty < 3000,
            "{nonempty} non-empty merges"
        );
        assert!(
            total.shadowed_cells > 0
                && total.tombstones_purged > 0
                && total.expired_cells_purged > 0,
            "{total:?}"
        );
    }

    #[test]
    fn an_input_out_of_clustering_order_is_an_error_not_a_wrong_merge() {
        let key = DecoratedKey::new(b"k");
        let row = |ck: u8| {
            let mut r = Row::new(vec![ck]);
            r.liveness = LivenessInfo::new(1);
            r
        };
        let mut bad = Rows(vec![row(2), row(1)].into_iter());
        let head = PartitionHead {
            key,
            deletion: PartitionDeletion::default(),
            static_row: None,
        };
        let rules = MergeRules {
            gc_before_seconds: 0,
            max_purgeable_micros: i64::MIN,
            live_set: None,
        };
        let (mut m, _, _) = PartitionMerge::new(vec![(head, &mut bad)], rules).unwrap();
        assert_eq!(m.next_row().unwrap(), Some(row(2)));
        assert!(m.next_row().is_err(), "row 1 after row 2");
    }
}
