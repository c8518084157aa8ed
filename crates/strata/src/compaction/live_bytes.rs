//! The blob strategy's live-byte accounting (issue 13, docs/compaction/blob.md):
//! how much of each sstable other sstables' deletions supersede, whether its
//! own deletions still target anything, and whether a row it writes is also
//! written, live, elsewhere (an overwrite the strategy assumes never happens).
//!
//! Glossary:
//! - **superseded**: a write in sstable `S` is superseded when a deletion held in
//!   another live sstable covers it with a timestamp at or above the write's
//!   (Cassandra's rule: on equal timestamps the tombstone wins). A partition of
//!   `S` is *wholly* superseded when every write in it is, and every deletion in
//!   it too (a newer deletion covering the same rows makes an older one
//!   redundant): removing the partition from `S` changes no read.
//! - **holder**: another live sstable whose token range and Bloom filter admit a
//!   partition key of `S`.
//!
//! Who calls: `Table::commit_edit`, under the manifest lock, for tables whose
//! strategy [`tracks_live_bytes`](super::CompactionStrategy::tracks_live_bytes):
//! [`account_edit`] gives the accounting of every sstable an edit adds, of every
//! surviving sstable that may share a partition with what it adds or removes, and
//! of every sstable not accounted yet; the table commits it in the same
//! manifest write as the edit itself (version invariant 4), so what is on disk
//! is always the accounting of the listed set, across restarts. The
//! fragmentation rewrite in the executor calls [`live_set_deletions`].
//!
//! Reads are tagged as compaction reads (level 0). The cost is one Bloom probe
//! per (partition, other sstable) pair and, only where needed, partition
//! headers and rows: the header of a holder that has deletions, and of `S`'s
//! own partition when `S` has deletions; the partition of `S` only when some
//! holder's deletions are newer than `S`'s oldest write, when a holder has
//! writes of the same partition that no partition deletion supersedes (the
//! overwrite check), or when only `S`'s row deletions can tell whether they
//! target a holder's writes.
//!
//! Invariants:
//! 1. Never more permissive than the data: `dead_partitions` counts only
//!    partitions wholly superseded by deletions held elsewhere; expiring cells
//!    count as live; a deletion held only in a memtable counts for nothing;
//!    `deletions_target_nothing` is false as soon as a deletion covers a write
//!    another sstable holds (judged from headers when a partition deletion
//!    covers a holder's every write, else row by row).
//! 2. The accounting of an sstable is a function of the live set alone (it is
//!    recomputed whole, never adjusted by deltas), so recomputing it after a
//!    restart gives the persisted value.
//! 3. An sstable whose accounting fails (a read error) is left unaccounted
//!    (`None`): the strategy then neither drops nor rewrites it.

use crate::data::{
    ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, PartitionDeletion,
    PartitionUpdate, Row,
};
use crate::error::{Error, Result};
use crate::fs::IoTag;
use crate::read::{SSTableEdit, SSTableVersion};
use crate::sstable::SSTableReader;
use crate::version::LiveBytes;
use std::collections::{BTreeMap, BTreeSet, HashSet};
use std::sync::Arc;

/// Accounting reads are compaction work.
const TAG: IoTag = IoTag::compaction(0);

/// The deletions one partition receives from a set of sstables: partition and
/// range tombstones, and row deletions by clustering.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PartitionDeletions {
    pub partition: PartitionDeletion,
    pub rows: BTreeMap<Vec<u8>, DeletionTime>,
}

impl PartitionDeletions {
    /// The strongest deletion covering the row at `clustering`.
    pub fn covering(&self, clustering: &[u8]) -> DeletionTime {
        let d = self.partition.covering(clustering);
        match self.rows.get(clustering) {
            Some(r) => d.max(*r),
            None => d,
        }
    }

    pub fn is_empty(&self) -> bool {
        self.partition.is_empty() && self.rows.is_empty()
    }

    /// Newest deletion timestamp, or `i64::MIN` when empty.
    pub fn max_timestamp(&self) -> i64 {
        self.rows
            .values()
            .fold(self.partition.max_timestamp(), |m, d| {
                m.max(d.marked_for_delete_at_micros)
            })
    }

    fn add_row(&mut self, clustering: &[u8], d: DeletionTime) {
        if d.is_live() {
            return;
        }
        let e = self
            .rows
            .entry(clustering.to_vec())
            .or_insert(DeletionTime::LIVE);
        *e = e.max(d);
    }

    fn merge(&mut self, other: &PartitionDeletions) {
        self.partition.merge(&other.partition);
        for (ck, d) in &other.rows {
            self.add_row(ck, *d);
        }
    }

    /// The deletions `p` itself holds.
    fn of(p: &PartitionUpdate) -> PartitionDeletions {
        let mut d = PartitionDeletions {
            partition: p.deletion.clone(),
            rows: BTreeMap::new(),
        };
        for r in &p.rows {
            d.add_row(&r.clustering, r.deletion);
        }
        d
    }

    /// Removes from `p` every write these deletions supersede (cells, row
    /// markers, rows left empty; the static row by the partition deletion).
    /// `p`'s own deletions stay: purging them is the purge rules' business.
    /// Returns the number of cells removed.
    pub fn shadow(&self, p: &mut PartitionUpdate) -> u64 {
        let mut removed = 0u64;
        for row in p.rows.iter_mut() {
            let before = row.cells.len();
            row.shadow(self.covering(&row.clustering));
            removed += (before - row.cells.len()) as u64;
        }
        p.rows.retain(|r| !r.is_empty());
        if let Some(st) = p.static_row.as_mut() {
            let before = st.cells.len();
            st.shadow(self.partition.partition_deletion());
            removed += (before - st.cells.len()) as u64;
            if st.is_empty() {
                p.static_row = None;
            }
        }
        removed
    }
}

/// Deletions of `key` held by `sources` (those with any tombstone and a Bloom
/// hit). Partition headers are read first; rows (for row deletions) only when
/// the partition deletion found does not already cover `stop_at_micros` (the
/// newest write the caller cares about).
fn gather(
    sources: &[&Arc<SSTableReader>],
    key: &DecoratedKey,
    stop_at_micros: i64,
) -> Result<PartitionDeletions> {
    let mut out = PartitionDeletions::default();
    let mut slices = Vec::new();
    for s in sources {
        if s.stats().tombstone_count == 0 || !s.may_contain(key) {
            continue;
        }
        if let Some(slice) = s.slice(key, &ClusteringRange::ALL, false, TAG)? {
            out.partition.merge(&slice.deletion);
            slices.push(slice);
        }
    }
    if out.partition.partition_deletion().deletes(stop_at_micros) {
        return Ok(out);
    }
    for mut slice in slices {
        while let Some(row) = slice.next_row()? {
            out.add_row(&row.clustering, row.deletion);
        }
    }
    Ok(out)
}

/// The deletions of `key` held by every live sstable of `version` except
/// `exclude`: what the fragmentation rewrite of `exclude` shadows its partition
/// with ([`PartitionDeletions::shadow`]).
pub fn live_set_deletions(
    version: &SSTableVersion,
    exclude: u64,
    key: &DecoratedKey,
) -> Result<PartitionDeletions> {
    let others: Vec<&Arc<SSTableReader>> = version
        .iter()
        .filter(|s| s.id != exclude && covers_token(&s.handle, key.token))
        .map(|s| &s.handle)
        .collect();
    gather(&others, key, i64::MAX)
}

fn covers_token(s: &SSTableReader, token: i64) -> bool {
    s.first_key().token <= token && token <= s.last_key().token
}

/// Whether any write in `row` survives `deletions` (cells of every kind count
/// as writes: a cell tombstone on a live row is a partial update).
fn has_live_writes(row: &Row, deletions: &PartitionDeletions) -> bool {
    let d = deletions.covering(&row.clustering).max(row.deletion);
    (!row.liveness.is_empty() && !d.deletes(row.liveness.timestamp_micros))
        || row.cells.iter().any(|c| !d.deletes(c.timestamp_micros))
}

/// Whether `s` holds writes at all (rows or cells); tombstone-only sstables
/// hold none and can be no one's overwrite partner or deletion target.
fn holds_writes(s: &SSTableReader) -> bool {
    s.stats().row_count > 0 || s.stats().cell_count > 0
}

/// Relative weight of a row in the data stream, to share a partition's length
/// among its rows (values dominate; the constants stand for the per-row and
/// per-cell framing).
fn row_weight(r: &Row) -> u128 {
    let cells: usize = r.cells.iter().map(|c| c.value.len() + 12).sum();
    (r.clustering.len() + 12 + cells) as u128
}

/// The accounting of sstable `id` of `version`, computed whole (invariant 2).
pub fn account(version: &SSTableVersion, id: u64) -> Result<LiveBytes> {
    let me = version
        .get(id)
        .ok_or_else(|| Error::NotFound(format!("sstable {id} is not live")))?;
    let s = &me.handle;
    let (lo, hi) = (s.first_key().token, s.last_key().token);
    let others: Vec<&Arc<SSTableReader>> = version
        .iter()
        .filter(|o| {
            o.id != id && o.handle.first_key().token <= hi && lo <= o.handle.last_key().token
        })
        .map(|o| &o.handle)
        .collect();
    let (min_ts, max_ts) = (
        s.stats().min_timestamp_micros,
        s.stats().max_timestamp_micros,
    );
    let own_deletions = s.stats().tombstone_count > 0;
    let mut live = LiveBytes {
        deletions_target_nothing: true,
        ..LiveBytes::default()
    };
    for (key, span) in s.partition_spans(TAG)? {
        let holders: Vec<&Arc<SSTableReader>> = others
            .iter()
            .filter(|o| covers_token(o, key.token) && o.may_contain(&key))
            .copied()
            .collect();
        if holders.is_empty() {
            continue;
        }
        let ext = gather(&holders, &key, max_ts)?;
        if ext.partition.partition_deletion().deletes(max_ts) {
            // Every write and deletion of this partition here is older than a
            // partition deletion held elsewhere: removing it changes no read,
            // and whatever its own deletions target, that one targets too.
            live.dead_bytes += span;
            live.dead_partitions += 1;
            continue;
        }
        // Our own partition-level deletions, from the partition's header (a
        // partition with a row index is not read further): they decide which
        // holders can still share live rows, and whether our deletions target
        // anything, usually without reading our rows.
        // Read at most once per partition, and only when needed.
        let mut head = if own_deletions {
            Some(Head::read(s, &key)?)
        } else {
            None
        };
        let own_header = head
            .as_ref()
            .map(|h| h.deletion.clone())
            .unwrap_or_default();
        let newest_pd = ext
            .partition
            .partition_deletion()
            .max(own_header.partition_deletion());
        // Holders whose writes of this partition are not all superseded by a
        // partition deletion: possible overwrite partners.
        let partners: Vec<&Arc<SSTableReader>> = holders
            .iter()
            .filter(|o| holds_writes(o) && !newest_pd.deletes(o.stats().max_timestamp_micros))
            .copied()
            .collect();
        let may_be_dead = !ext.is_empty() && ext.max_timestamp() >= min_ts;
        // Our deletions target a holder's writes when they cover one of them.
        // Candidates: holders with a write as old as our newest datum. A
        // candidate whose every write our partition deletion covers decides it
        // from headers alone; otherwise our deletions are read whole and the
        // candidates' rows are checked (below), so a re-written file newer
        // than our tombstone pins nothing.
        let mut target_candidates: Vec<&Arc<SSTableReader>> = Vec::new();
        if own_deletions && live.deletions_target_nothing {
            let candidates: Vec<&Arc<SSTableReader>> = holders
                .iter()
                .filter(|o| holds_writes(o) && o.stats().min_timestamp_micros <= max_ts)
                .copied()
                .collect();
            if covers_a_holder_whole(&own_header, &candidates, &key)? {
                live.deletions_target_nothing = false;
            } else {
                target_candidates = candidates;
            }
        }
        let own_rows_needed = !target_candidates.is_empty();
        // Partners whose rows (or static row) fall within our partition's
        // clustering bounds; a file split across two flushes has none, and
        // costs no data read.
        let partners = if partners.is_empty() {
            partners
        } else {
            let head = match head.take() {
                Some(h) => h,
                None => Head::read(s, &key)?,
            };
            close_partners(&head, &key, partners)?
        };
        if !may_be_dead && partners.is_empty() && !own_rows_needed {
            continue;
        }
        let Some(p) = s.read_partition(&key, TAG)? else {
            continue; // a Bloom false positive on our own index cannot happen; harmless
        };
        let own = PartitionDeletions::of(&p);
        if may_be_dead {
            let (dead, whole) = superseded_share(&p, &ext, span);
            live.dead_bytes += dead;
            if whole {
                live.dead_partitions += 1;
                continue;
            }
        }
        if own_rows_needed
            && live.deletions_target_nothing
            && deletions_cover_a_write(&own, &target_candidates, &key)?
        {
            live.deletions_target_nothing = false;
        }
        if !live.shares_live_rows && !partners.is_empty() {
            let mut all = ext.clone();
            all.merge(&own);
            live.shares_live_rows = shares_live_rows(&p, &all, &partners)?;
        }
    }
    Ok(live)
}

/// Whether `own`'s partition deletion covers every write some candidate holds
/// of `key` (its newest write is older), the candidate really holding the
/// partition (its header is read; a Bloom false positive is not a target).
fn covers_a_holder_whole(
    own: &PartitionDeletion,
    candidates: &[&Arc<SSTableReader>],
    key: &DecoratedKey,
) -> Result<bool> {
    let pd = own.partition_deletion();
    for o in candidates {
        if pd.deletes(o.stats().max_timestamp_micros)
            && o.slice(key, &ClusteringRange::ALL, false, TAG)?.is_some()
        {
            return Ok(true);
        }
    }
    Ok(false)
}

/// Whether `own` covers any write (cell, row marker, static cell) that one of
/// `candidates` holds of `key`: the row-level answer to "does dropping our
/// deletions bring something back". Stops at the first covered write.
fn deletions_cover_a_write(
    own: &PartitionDeletions,
    candidates: &[&Arc<SSTableReader>],
    key: &DecoratedKey,
) -> Result<bool> {
    if own.is_empty() {
        return Ok(false);
    }
    let newest = own.max_timestamp();
    let covered = |r: &Row, d: DeletionTime| {
        (!r.liveness.is_empty() && d.deletes(r.liveness.timestamp_micros))
            || r.cells.iter().any(|c| d.deletes(c.timestamp_micros))
    };
    for o in candidates {
        if o.stats().min_timestamp_micros > newest {
            continue;
        }
        let Some(mut slice) = o.slice(key, &ClusteringRange::ALL, false, TAG)? else {
            continue;
        };
        if let Some(st) = &slice.static_row {
            if covered(st, own.partition.partition_deletion()) {
                return Ok(true);
            }
        }
        while let Some(r) = slice.next_row()? {
            if covered(&r, own.covering(&r.clustering)) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// What [`account`] needs of its own partition without reading its rows: the
/// header's deletions, whether there is a static row, and the clustering
/// bounds (from the row index root when there is one).
#[derive(Default)]
struct Head {
    deletion: PartitionDeletion,
    has_static: bool,
    bounds: Option<(Vec<u8>, Vec<u8>)>,
}

impl Head {
    fn read(s: &Arc<SSTableReader>, key: &DecoratedKey) -> Result<Head> {
        Ok(match s.slice(key, &ClusteringRange::ALL, false, TAG)? {
            Some(sl) => Head {
                has_static: sl.static_row.is_some(),
                bounds: sl.clustering_bounds(),
                deletion: sl.deletion,
            },
            None => Head::default(),
        })
    }
}

/// The `partners` holding a row within our partition's clustering bounds
/// (`mine`) for `key`, or a static row when we have one: the only ones an
/// overwrite check must read further. Bounds come from row-index roots (no row
/// block read), so the cost is a header and a root per partner.
fn close_partners<'a>(
    mine: &Head,
    key: &DecoratedKey,
    partners: Vec<&'a Arc<SSTableReader>>,
) -> Result<Vec<&'a Arc<SSTableReader>>> {
    let has_static = mine.has_static;
    let Some((lo, hi)) = mine.bounds.clone() else {
        // No rows: only static rows can be shared.
        if !has_static {
            return Ok(Vec::new());
        }
        let mut out = Vec::new();
        for o in partners {
            if o.slice(key, &ClusteringRange::ALL, false, TAG)?
                .is_some_and(|sl| sl.static_row.is_some())
            {
                out.push(o);
            }
        }
        return Ok(out);
    };
    let hull = ClusteringRange {
        start: ClusteringBound::inclusive(lo),
        end: ClusteringBound::inclusive(hi),
    };
    let mut out = Vec::new();
    for o in partners {
        let Some(mut sl) = o.slice(key, &hull, false, TAG)? else {
            continue;
        };
        if (has_static && sl.static_row.is_some()) || sl.next_row()?.is_some() {
            out.push(o);
        }
    }
    Ok(out)
}

/// Bytes of `p` (whose length in the data stream is `span`) superseded by
/// `ext`, and whether all of it is.
fn superseded_share(p: &PartitionUpdate, ext: &PartitionDeletions, span: u64) -> (u64, bool) {
    let mut dead_w = 0u128;
    let mut total_w = 0u128;
    let mut whole = true;
    for r in &p.rows {
        let w = row_weight(r);
        total_w += w;
        if ext.covering(&r.clustering).deletes(r.max_timestamp()) {
            dead_w += w;
        } else {
            whole = false;
        }
    }
    if let Some(st) = &p.static_row {
        let w = row_weight(st);
        total_w += w;
        if ext
            .partition
            .partition_deletion()
            .deletes(st.max_timestamp())
        {
            dead_w += w;
        } else {
            whole = false;
        }
    }
    // Own partition and range tombstones are redundant only under a newer
    // partition deletion (a range tombstone elsewhere may cover less).
    if !p.deletion.is_empty()
        && !ext
            .partition
            .partition_deletion()
            .deletes(p.deletion.max_timestamp())
    {
        whole = false;
    }
    if whole {
        return (span, true);
    }
    let dead = (span as u128 * dead_w)
        .checked_div(total_w)
        .unwrap_or(0)
        .min(span as u128) as u64;
    (dead, false)
}

/// Whether a row of `p` with live writes is also written, live, in one of
/// `partners` (reading their rows only within the clustering span of `p`'s
/// live rows, so a file split across flushes costs no data read).
fn shares_live_rows(
    p: &PartitionUpdate,
    all: &PartitionDeletions,
    partners: &[&Arc<SSTableReader>],
) -> Result<bool> {
    let mine: BTreeSet<&[u8]> = p
        .rows
        .iter()
        .filter(|r| has_live_writes(r, all))
        .map(|r| r.clustering.as_slice())
        .collect();
    let static_live = p.static_row.as_ref().is_some_and(|st| {
        let d = all.partition.partition_deletion();
        st.cells.iter().any(|c| !d.deletes(c.timestamp_micros))
    });
    let (Some(first), Some(last)) = (mine.first(), mine.last()) else {
        if !static_live {
            return Ok(false);
        }
        // Only the static row: compare static rows alone.
        for o in partners {
            if let Some(slice) = o.slice(&p.key, &ClusteringRange::ALL, false, TAG)? {
                if slice.static_row.is_some() {
                    return Ok(true);
                }
            }
        }
        return Ok(false);
    };
    let range = ClusteringRange {
        start: ClusteringBound::inclusive(first.to_vec()),
        end: ClusteringBound::inclusive(last.to_vec()),
    };
    for o in partners {
        let Some(mut slice) = o.slice(&p.key, &range, false, TAG)? else {
            continue;
        };
        if static_live && slice.static_row.is_some() {
            return Ok(true);
        }
        while let Some(r) = slice.next_row()? {
            if mine.contains(r.clustering.as_slice()) && has_live_writes(&r, all) {
                return Ok(true);
            }
        }
    }
    Ok(false)
}

/// The accounting an edit brings (module docs): for every sstable it adds, every
/// survivor that may share a partition with what it adds or removes, and every
/// sstable of `after` not accounted yet. `before` is the version the edit
/// applies to, `after` the result. An sstable whose accounting fails is
/// returned as `None` with its error in `failures` (invariant 3); the edit
/// itself never fails for it.
pub fn account_edit(
    before: &SSTableVersion,
    after: &SSTableVersion,
    edit: &SSTableEdit,
    failures: &mut Vec<(u64, Error)>,
) -> Vec<(u64, Option<LiveBytes>)> {
    let added: HashSet<u64> = edit.added.iter().map(|s| s.id).collect();
    // The partitions the edit adds or removes; `None` when an index cannot be
    // read, and then every survivor counts as affected (invariant 3: the
    // unreadable one ends up unaccounted, the others exact).
    let mut keys: Option<Vec<DecoratedKey>> = Some(Vec::new());
    let changed = edit.added.iter().map(|s| &s.handle).chain(
        edit.removed
            .iter()
            .filter_map(|id| before.get(*id))
            .map(|s| &s.handle),
    );
    for h in changed {
        match h.partition_spans(TAG) {
            Ok(spans) => {
                if let Some(k) = keys.as_mut() {
                    k.extend(spans.into_iter().map(|(k, _)| k));
                }
            }
            Err(_) => keys = None,
        }
    }
    let mut out = Vec::new();
    for s in after.iter() {
        let affected = added.contains(&s.id)
            || s.live.is_none()
            || keys.as_ref().is_none_or(|keys| {
                keys.iter()
                    .any(|k| covers_token(&s.handle, k.token) && s.handle.may_contain(k))
            });
        if !affected {
            continue;
        }
        match account(after, s.id) {
            Ok(l) => out.push((s.id, Some(l))),
            Err(e) => {
                failures.push((s.id, e));
                out.push((s.id, None));
            }
        }
    }
    // Entries that change nothing are left out, so a no-op edit stays empty.
    out.retain(|(id, l)| after.get(*id).map(|s| s.live) != Some(*l));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, RangeTombstone};

    fn row(ck: u8, ts: i64, value_len: usize) -> Row {
        let mut r = Row::new(vec![ck]);
        r.add_cell(Cell::live(1, ts, vec![7; value_len]));
        r
    }

    fn partition(rows: Vec<Row>) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(DecoratedKey::new(b"k"));
        for r in rows {
            p.add_row(r);
        }
        p
    }

    #[test]
    fn a_newer_partition_deletion_supersedes_everything() {
        let p = partition(vec![row(1, 10, 100), row(2, 20, 100)]);
        let mut ext = PartitionDeletions::default();
        ext.partition.partition = Some(DeletionTime::new(20, 0));
        assert_eq!(superseded_share(&p, &ext, 1000), (1000, true));
        // One microsecond older leaves the newer row live: about half is dead.
        ext.partition.partition = Some(DeletionTime::new(19, 0));
        let (dead, whole) = superseded_share(&p, &ext, 1000);
        assert!(!whole);
        assert!((400..=600).contains(&dead), "{dead}");
    }

    #[test]
    fn row_and_range_deletions_supersede_only_their_rows() {
        let p = partition(vec![row(1, 10, 100), row(2, 10, 100), row(3, 10, 100)]);
        let mut ext = PartitionDeletions::default();
        ext.add_row(&[1], DeletionTime::new(10, 0));
        ext.partition.ranges.push(RangeTombstone {
            range: ClusteringRange {
                start: ClusteringBound::inclusive(vec![2]),
                end: ClusteringBound::inclusive(vec![3]),
            },
            deletion: DeletionTime::new(11, 0),
        });
        assert_eq!(superseded_share(&p, &ext, 300), (300, true));
        // Own deletions not superseded by a partition deletion keep it whole-live.
        let mut own = p.clone();
        own.deletion.partition = Some(DeletionTime::new(5, 0));
        assert!(!superseded_share(&own, &ext, 300).1);
    }

    #[test]
    fn shadow_removes_superseded_writes_and_keeps_the_rest() {
        let mut p = partition(vec![row(1, 10, 4), row(2, 30, 4)]);
        let mut ext = PartitionDeletions::default();
        ext.partition.partition = Some(DeletionTime::new(20, 0));
        assert_eq!(ext.shadow(&mut p), 1);
        assert_eq!(p.rows.len(), 1);
        assert_eq!(p.rows[0].clustering, vec![2]);
    }

    #[test]
    fn live_writes_count_cell_tombstones_as_writes() {
        let mut r = Row::new(vec![1]);
        r.add_cell(Cell::tombstone(1, 50, 0));
        let none = PartitionDeletions::default();
        assert!(has_live_writes(&r, &none), "a partial delete is an update");
        let mut newer = PartitionDeletions::default();
        newer.add_row(&[1], DeletionTime::new(50, 0));
        assert!(!has_live_writes(&r, &newer));
    }
}
