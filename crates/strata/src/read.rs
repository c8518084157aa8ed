//! The read path: merging one partition, or a token-ordered scan, across the
//! memtables and sstables of a table view.
//!
//! Contract: callers pass an immutable [`View`] (memtables newest first, sstables
//! in any order) and `now_seconds` from the table's clock; results contain only
//! live data as a reader sees it at that instant (DESIGN.md §2).
//!
//! Invariants:
//! 1. Merging is order-independent (reconciliation is commutative and
//!    associative), so sources may be visited in whatever order prunes best.
//! 2. An sstable is skipped only when it provably cannot contribute: its token
//!    range or bloom filter excludes the key, or its newest write is no newer than
//!    a partition tombstone already found (everything in it is shadowed), or,
//!    for a read of one whole row ([`RowQuery`]), its newest write is older
//!    than every part of the row already found (its marker and each column),
//!    or than a deletion covering the row (nothing in it can win), or its
//!    clustering coverage (format 5) shows nothing of it in the range. An
//!    sstable whose coverage says its rows are all it holds (no partition
//!    deletion, range tombstone or static row) is opened only when the merge
//!    reaches its first row in the read's direction; one that then shows
//!    such a deletion is reported corrupt, never merged.
//! 3. Paging never repeats or skips a row: a page ends after a whole row and the
//!    [`PagingState`] names the last row returned.
//! 4. A partition read pulls rows from its sources lazily: a read with `limit`
//!    decodes `limit` live rows plus the rows shadowed among them, plus at most
//!    one memtable batch and one sstable row block per source, whatever the
//!    partition's size (sstables of format version 3; older ones and partitions
//!    without a row index are decoded whole, as before).
//! 5. A value range read ([`read_value_range`]) reconciles and shadows the cell
//!    exactly as a partition read would, and reads from disk only the winning
//!    value's chunks under the requested range (plus each source's index
//!    block, partition header and row framing); values are read whole only to
//!    break a timestamp tie between two live cells.

use crate::data::{
    ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo, PartitionDeletion,
    PartitionUpdate, Row,
};
use crate::encoding::CellView;
use crate::error::{Error, Result};
use crate::fs::{IoCause, IoTag};
use crate::memtable::{MemSlice, Memtable, SHARDS};
use crate::sstable::{Admitted, PartitionScanner, SSTableReader, SSTableSlice};
use crate::version::{Handles, Version, VersionEdit};
use smallvec::SmallVec;
use std::cmp::Ordering;
use std::ops::Bound;
use std::sync::Arc;

/// The live sstables of a table, each with its level and reader
/// ([`crate::version`]).
pub type SSTableVersion = Version<Arc<SSTableReader>>;
/// A change of [`SSTableVersion`].
pub type SSTableEdit = VersionEdit<Arc<SSTableReader>>;

/// An immutable snapshot of a table's data: memtables (the active one first, then
/// those being flushed, newest first) and the version of the live sstables (each
/// with its level and other attributes; no vector parallel to it).
/// Writers replace the table's view whole; readers clone an `Arc<View>`.
#[derive(Clone, Debug)]
pub struct View {
    /// Never empty: `memtables[0]` is the active memtable.
    pub memtables: Vec<Arc<Memtable>>,
    pub version: Arc<SSTableVersion>,
    /// The version's sstables by key range (built with the version, shared by
    /// the views that only change memtables).
    keys: Arc<KeyIndex>,
}

impl View {
    pub fn new(memtables: Vec<Arc<Memtable>>, version: Arc<SSTableVersion>) -> View {
        let keys = Arc::new(KeyIndex::build(&version));
        View {
            memtables,
            version,
            keys,
        }
    }

    /// This view's sstables with other memtables (a memtable switch): the key
    /// index is shared, not rebuilt.
    pub fn with_memtables(&self, memtables: Vec<Arc<Memtable>>) -> View {
        View {
            memtables,
            version: self.version.clone(),
            keys: self.keys.clone(),
        }
    }

    /// The live sstables' readers, ascending id.
    pub fn sstables(&self) -> Handles<'_, Arc<SSTableReader>> {
        self.version.handles()
    }

    /// Sstables at level 0 (the L0 write stall checks this on every write; the
    /// version keeps it counted).
    pub fn l0_count(&self) -> usize {
        self.version.count_at_level(0)
    }

    pub fn active(&self) -> &Arc<Memtable> {
        &self.memtables[0]
    }

    /// Memtables switched out and waiting for (or in) flush.
    pub fn pending_flushes(&self) -> usize {
        self.memtables.len().saturating_sub(1)
    }
}

/// The live sstables by key range, so that a point read tests only the
/// sstables whose range can hold its key: on a level whose sstables do not
/// overlap (LCS levels 1 and up) that is one binary search, not a comparison
/// with every sstable of the level (issue 15, the read path).
#[derive(Debug, Default)]
struct KeyIndex {
    /// Per non-overlapping level: (first key, last key, position in the
    /// version), sorted by first key.
    runs: Vec<Vec<(DecoratedKey, DecoratedKey, usize)>>,
    /// Positions of sstables on levels whose ranges overlap (level 0 always):
    /// each is tested.
    others: Vec<usize>,
}

impl KeyIndex {
    fn build(version: &SSTableVersion) -> KeyIndex {
        let mut by_level: std::collections::BTreeMap<
            u32,
            Vec<(DecoratedKey, DecoratedKey, usize)>,
        > = Default::default();
        for (i, e) in version.iter().enumerate() {
            let st = e.handle.stats();
            by_level.entry(e.level).or_default().push((
                st.first_key.clone(),
                st.last_key.clone(),
                i,
            ));
        }
        let mut out = KeyIndex::default();
        for (level, mut v) in by_level {
            v.sort_by(|a, b| a.0.cmp(&b.0));
            // Level 0 holds flushes, which overlap by nature; any other level
            // is searched only if it really is disjoint (checked, not assumed
            // from the strategy).
            let disjoint = level > 0 && v.windows(2).all(|w| w[0].1 < w[1].0);
            if disjoint {
                out.runs.push(v);
            } else {
                out.others.extend(v.iter().map(|x| x.2));
            }
        }
        out
    }

    /// Positions (in the version) of the sstables whose key range may hold
    /// `key`: all of the overlapping levels, at most one per disjoint level.
    fn candidates<'a>(&'a self, key: &'a DecoratedKey) -> impl Iterator<Item = usize> + 'a {
        let from_runs = self.runs.iter().filter_map(move |run| {
            let p = run.partition_point(|(first, _, _)| first <= key);
            let (_, last, i) = run.get(p.checked_sub(1)?)?;
            (key <= last).then_some(*i)
        });
        self.others.iter().copied().chain(from_runs)
    }
}

/// Merges `other` into `acc` (same partition).
pub fn merge_partition(acc: &mut PartitionUpdate, other: PartitionUpdate) {
    acc.deletion.merge(&other.deletion);
    acc.static_row = match (acc.static_row.take(), other.static_row) {
        (Some(a), Some(b)) => Some(a.merge(b)),
        (a, b) => a.or(b),
    };
    if acc.rows.is_empty() {
        acc.rows = other.rows;
    } else if !other.rows.is_empty() {
        let a = std::mem::take(&mut acc.rows);
        acc.rows = merge_sorted_rows(a, other.rows);
    }
}

/// Merges two clustering-sorted row lists, reconciling rows present in both.
pub fn merge_sorted_rows(a: Vec<Row>, b: Vec<Row>) -> Vec<Row> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let mut a = a.into_iter().peekable();
    let mut b = b.into_iter().peekable();
    loop {
        let ord = match (a.peek(), b.peek()) {
            (Some(x), Some(y)) => x.clustering.cmp(&y.clustering),
            (Some(_), None) => Ordering::Less,
            (None, Some(_)) => Ordering::Greater,
            (None, None) => break,
        };
        match ord {
            Ordering::Less => out.extend(a.next()),
            Ordering::Greater => out.extend(b.next()),
            Ordering::Equal => {
                if let (Some(x), Some(y)) = (a.next(), b.next()) {
                    out.push(x.merge(y));
                }
            }
        }
    }
    out
}

/// A partition as a reader sees it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionResult {
    pub static_row: Option<Row>,
    /// Live rows only, in the requested order, at most `limit`.
    pub rows: Vec<Row>,
    /// SSTables whose data was actually read (Cassandra's "SSTables per read").
    pub sstables_read: usize,
    /// Whether anything (live or deleted) was found for the key in the
    /// sources read: an sstable whose clustering coverage excludes the range
    /// is not read, even if it holds other rows of the partition.
    pub found: bool,
}

/// [`live_rows`], consuming the partition: live rows and cells are moved, not
/// cloned (a scan returned every row it decoded as a copy).
pub fn into_live_rows(p: PartitionUpdate, now_seconds: i64) -> (Option<Row>, Vec<Row>) {
    let partition_deletion = p.deletion.partition_deletion();
    let static_row = p
        .static_row
        .and_then(|r| r.into_live_view(partition_deletion, now_seconds));
    let deletion = &p.deletion;
    let rows = p
        .rows
        .into_iter()
        .filter_map(|r| {
            let covering = deletion.covering(&r.clustering);
            r.into_live_view(covering, now_seconds)
        })
        .collect();
    (static_row, rows)
}

/// Applies deletions and expiry at `now_seconds`: only live rows remain
/// ([`into_live_rows`] on a copy, for a caller that keeps the partition).
pub fn live_rows(p: &PartitionUpdate, now_seconds: i64) -> (Option<Row>, Vec<Row>) {
    into_live_rows(p.clone(), now_seconds)
}

/// One source of a partition's rows in a read: a memtable's or an sstable's
/// slice, pulled one row at a time.
enum RowSource {
    Mem(MemSlice),
    Sst(SSTableSlice),
}

impl RowSource {
    fn next_row(&mut self) -> Result<Option<Row>> {
        match self {
            RowSource::Mem(m) => Ok(m.next_row()),
            RowSource::Sst(s) => s.next_row(),
        }
    }
}

/// A read of one row, whole: its clustering (empty in a table without
/// clustering columns) and the table's regular columns. The caller promises
/// the range selects at most this row and the table has no static columns
/// (a static row would need every sstable's part). Cassandra reads such a
/// "names" query in timestamp order and stops as soon as the sstables left
/// are older than everything it has found; so does [`read_row`].
#[derive(Clone, Copy, Debug)]
pub struct RowQuery<'a> {
    pub clustering: &'a [u8],
    pub columns: &'a [crate::data::ColumnId],
}

impl RowQuery<'_> {
    /// Whether an sstable whose newest write is at `max_ts` (and every one
    /// older) can change what `row` reads as, given the partition's
    /// deletions found so far. It cannot when a deletion newer than `max_ts`
    /// covers the row (it shadows all of that sstable's data for the row, and
    /// that sstable's deletions are older than anything they could still
    /// shadow), or when the row has a marker and a cell in every column, each
    /// newer than `max_ts` (reconciliation keeps the newer, and no older
    /// deletion shadows them). A cell with a path (a collection element)
    /// never settles its column.
    fn settled(&self, row: Option<&Row>, deletion: &PartitionDeletion, max_ts: i64) -> bool {
        let mut cover = deletion.covering(self.clustering);
        if let Some(r) = row {
            cover = cover.max(r.deletion);
        }
        if cover.marked_for_delete_at_micros > max_ts {
            return true;
        }
        let Some(r) = row else {
            return false;
        };
        r.liveness.timestamp_micros > max_ts
            && self.columns.iter().all(|&c| {
                r.cells.iter().any(|cell| {
                    // A counter cell merges with older ones (`data.rs` invariant 6).
                    cell.column == c
                        && cell.path.is_none()
                        && cell.kind != crate::data::CellKind::Counter
                        && cell.timestamp_micros > max_ts
                })
            })
    }
}

/// Reads one row (`query`), consulting sstables newest write first and
/// stopping once the rest cannot change it (invariant 2): a point read of a
/// row that the newest sstables hold reads those alone, as a time-series
/// read of a recent point reads its own window and not every older one.
///
/// `now_seconds` is asked for once, and only if some source holds the
/// partition: a read of a missing key (most reads a Bloom filter answers)
/// never reads the clock (it was 6% of such a read).
pub fn read_row(
    view: &View,
    key: &DecoratedKey,
    range: &ClusteringRange,
    query: &RowQuery<'_>,
    now_seconds: &dyn Fn() -> i64,
) -> Result<PartitionResult> {
    read_partition_with(view, key, range, false, 1, now_seconds, Some(query))
}

/// Reads one partition restricted to `range`, forward or reverse, at most `limit`
/// live rows.
///
/// Every source (memtable or sstable) yields the rows of the range lazily in
/// the requested direction (an sstable through its row index: invariant 4);
/// the sources' partition and range tombstones are gathered first, then rows
/// are merged by clustering, reconciled, shadowed and expired, and pulled only
/// until `limit` live rows are produced. An sstable that holds nothing but
/// rows (its clustering coverage) has no tombstones to gather and is opened
/// only when the merge reaches its first row. `now_seconds` is asked for as
/// in [`read_row`].
pub fn read_partition(
    view: &View,
    key: &DecoratedKey,
    range: &ClusteringRange,
    reversed: bool,
    limit: usize,
    now_seconds: &dyn Fn() -> i64,
) -> Result<PartitionResult> {
    read_partition_with(view, key, range, reversed, limit, now_seconds, None)
}

/// [`read_partition`], or [`read_row`] when `row` is given: then each
/// source's rows are merged as it is added (the range holds at most the one
/// row), so that before each sstable the read knows whether it can stop.
fn read_partition_with(
    view: &View,
    key: &DecoratedKey,
    range: &ClusteringRange,
    reversed: bool,
    limit: usize,
    now_seconds: &dyn Fn() -> i64,
    row: Option<&RowQuery<'_>>,
) -> Result<PartitionResult> {
    // One row asked for: each source's rows are merged here as it comes.
    let mut found_row: Option<Row> = None;
    let take_rows = |mut source: RowSource,
                     sources: &mut Vec<RowSource>,
                     found_row: &mut Option<Row>|
     -> Result<()> {
        if row.is_none() {
            sources.push(source);
            return Ok(());
        }
        while let Some(r) = source.next_row()? {
            *found_row = Some(match found_row.take() {
                None => r,
                Some(m) => m.merge(r),
            });
        }
        Ok(())
    };
    let mut deletion = PartitionDeletion::default();
    let mut static_row: Option<Row> = None;
    let mut sources: Vec<RowSource> = Vec::new();
    let mut found = false;
    let merge_static = |acc: &mut Option<Row>, s: Option<Row>| {
        *acc = match (acc.take(), s) {
            (Some(a), Some(b)) => Some(a.merge(b)),
            (a, b) => a.or(b),
        };
    };
    for m in &view.memtables {
        if let Some(mut s) = m.slice(key, range, reversed) {
            found = true;
            deletion.merge(&s.deletion);
            merge_static(&mut static_row, s.static_row.take());
            take_rows(RowSource::Mem(s), &mut sources, &mut found_row)?;
        }
    }
    // Newest sstables first, so a partition tombstone found early lets older ones
    // be skipped (invariant 2). Those with nothing in the range (no row,
    // deletion or static row: the stats' clustering coverage) are not
    // candidates: a recent point of a time series skips every newer flush of
    // its series this way.
    let candidates = sstables_newest_first(view, key, range);
    let mut sstables_read = 0;
    let mut deferred: Vec<Deferred<'_>> = Vec::new();
    for s in candidates {
        if deletion
            .partition_deletion()
            .deletes(s.stats().max_timestamp_micros)
        {
            break;
        }
        if row.is_some_and(|q| {
            q.settled(
                found_row.as_ref(),
                &deletion,
                s.stats().max_timestamp_micros,
            )
        }) {
            break;
        }
        // An sstable whose coverage says its rows are all it holds (no
        // partition deletion, range tombstone or static row) adds nothing to
        // the deletions gathered here: the merge opens it only when it
        // reaches the sstable's first row in the read's direction, so a
        // "most recent N" read of a time series opens the newest windows
        // and not every one (Cassandra's sstable lower bounds).
        if row.is_none() {
            if let Some(bound) = s.stats().coverage.as_ref().and_then(|c| {
                let (min, max) = c.rows.as_ref().filter(|_| !c.beyond_rows)?;
                Some(if reversed { max } else { min })
            }) {
                deferred.push(Deferred { bound, sstable: s });
                continue;
            }
        }
        sstables_read += 1;
        let tag = IoTag::new(IoCause::UserRead);
        if let Some(mut slice) = s.slice_admitted(key, range, reversed, tag, Admitted::Yes)? {
            found = true;
            deletion.merge(&slice.deletion);
            merge_static(&mut static_row, slice.static_row.take());
            take_rows(RowSource::Sst(slice), &mut sources, &mut found_row)?;
        }
    }
    if !found && deferred.is_empty() {
        // No source holds the partition (nothing was found, and no sstable
        // waits for the merge to reach it).
        return Ok(PartitionResult {
            static_row: None,
            rows: Vec::new(),
            sstables_read,
            found,
        });
    }
    let now_seconds = now_seconds();
    let static_row =
        static_row.and_then(|r| r.live_view(deletion.partition_deletion(), now_seconds));
    let rows = match found_row {
        Some(r) if limit > 0 => {
            let covering = deletion.covering(&r.clustering);
            r.into_live_view(covering, now_seconds)
                .into_iter()
                .collect()
        }
        Some(_) => Vec::new(),
        None => {
            let mut open = |s: &Arc<SSTableReader>| -> Result<Option<RowSource>> {
                sstables_read += 1;
                let tag = IoTag::new(IoCause::UserRead);
                let Some(slice) = s.slice_admitted(key, range, reversed, tag, Admitted::Yes)?
                else {
                    return Ok(None);
                };
                if !slice.deletion.is_empty() || slice.static_row.is_some() {
                    return Err(Error::corruption(
                        s.path(),
                        0,
                        "a partition deletion, range tombstone or static row in an sstable \
                         whose statistics say it holds none",
                    ));
                }
                found = true;
                Ok(Some(RowSource::Sst(slice)))
            };
            merge_rows(
                &mut sources,
                deferred,
                &mut open,
                &deletion,
                reversed,
                limit,
                now_seconds,
            )?
        }
    };
    Ok(PartitionResult {
        static_row,
        rows,
        sstables_read,
        found,
    })
}

/// The sstables that may hold something of `key` in `range`, newest write
/// first: the order in which a read consults them, so that a partition
/// tombstone found early lets it skip the older ones (invariant 2). An
/// sstable must admit the key by its range and Bloom filter, and `range` by
/// its clustering coverage (tested first: two comparisons, where a Bloom
/// probe is a few cache misses, and a time series' older windows all hold
/// every series).
fn sstables_newest_first<'a>(
    view: &'a View,
    key: &DecoratedKey,
    range: &ClusteringRange,
) -> Vec<&'a Arc<SSTableReader>> {
    // The key is hashed once for all the filters (and not at all if no
    // sstable's range admits it); the readers below do not test it again.
    let mut hash = None;
    let handles = view.sstables();
    let mut candidates: Vec<&Arc<SSTableReader>> = view
        .keys
        .candidates(key)
        .filter_map(|i| handles.get(i))
        .filter(|s| s.stats().may_hold(range) && s.may_contain_hashed(key, &mut hash))
        .collect();
    candidates.sort_by_key(|s| std::cmp::Reverse(s.stats().max_timestamp_micros));
    candidates
}

/// An sstable a merge opens only once it reaches `bound`, the first
/// clustering the sstable can hold in the read's direction (its smallest
/// forward, its largest reversed).
struct Deferred<'a> {
    bound: &'a [u8],
    sstable: &'a Arc<SSTableReader>,
}

/// Merges the sources' rows (each in `reversed` order) into at most `limit`
/// live rows, pulling each source only as far as needed, and opening each
/// deferred sstable (through `open`) only when the merge reaches its bound:
/// a row of it cannot come before that.
fn merge_rows(
    sources: &mut Vec<RowSource>,
    mut deferred: Vec<Deferred<'_>>,
    open: &mut dyn FnMut(&Arc<SSTableReader>) -> Result<Option<RowSource>>,
    deletion: &PartitionDeletion,
    reversed: bool,
    limit: usize,
    now_seconds: i64,
) -> Result<Vec<Row>> {
    let mut rows = Vec::new();
    if limit == 0 {
        return Ok(rows);
    }
    // The next to open last (popped first).
    deferred.sort_by(|a, b| {
        if reversed {
            a.bound.cmp(b.bound)
        } else {
            b.bound.cmp(a.bound)
        }
    });
    let mut heads: Vec<Option<Row>> = Vec::with_capacity(sources.len());
    for s in sources.iter_mut() {
        heads.push(s.next_row()?);
    }
    // The next clustering in the read's direction among the heads.
    let next_of = |heads: &[Option<Row>]| -> Option<Vec<u8>> {
        let mut next: Option<&[u8]> = None;
        for h in heads.iter().flatten() {
            let ck = h.clustering.as_slice();
            let first = match next {
                None => true,
                Some(n) if reversed => ck > n,
                Some(n) => ck < n,
            };
            if first {
                next = Some(ck);
            }
        }
        next.map(<[u8]>::to_vec)
    };
    while rows.len() < limit {
        let mut next = next_of(&heads);
        // Open every deferred sstable whose first row could be at or before
        // `next` (or any, when the open sources are exhausted).
        while let Some(d) = deferred.pop_if(|d| match &next {
            None => true,
            Some(n) if reversed => d.bound >= n.as_slice(),
            Some(n) => d.bound <= n.as_slice(),
        }) {
            if let Some(mut source) = open(d.sstable)? {
                heads.push(source.next_row()?);
                sources.push(source);
                next = next_of(&heads);
            }
        }
        let Some(next) = next else {
            break;
        };
        let mut merged: Option<Row> = None;
        for (i, head) in heads.iter_mut().enumerate() {
            if head.as_ref().is_some_and(|h| h.clustering == next) {
                if let Some(h) = head.take() {
                    merged = Some(match merged {
                        None => h,
                        Some(m) => m.merge(h),
                    });
                }
                *head = sources[i].next_row()?;
            }
        }
        if let Some(row) = merged {
            let covering = deletion.covering(&row.clustering);
            if let Some(live) = row.into_live_view(covering, now_seconds) {
                rows.push(live);
            }
        }
    }
    Ok(rows)
}

/// Where a scan resumes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PagingState {
    pub key: DecoratedKey,
    /// The last row returned from `key`; `None` if `key` was returned whole.
    pub last_clustering: Option<Vec<u8>>,
}

impl PagingState {
    /// Opaque bytes for a client to hand back (token, key, optional clustering).
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut out = Vec::new();
        crate::encoding::put_i64_le(&mut out, self.key.token);
        crate::encoding::put_bytes(&mut out, &self.key.key);
        match &self.last_clustering {
            Some(ck) => {
                out.push(1);
                crate::encoding::put_bytes(&mut out, ck);
            }
            None => out.push(0),
        }
        out
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<PagingState> {
        let bad = |_| Error::InvalidInput("malformed paging state".into());
        let mut r = crate::encoding::Reader::new(bytes);
        let token = r.i64_le().map_err(bad)?;
        let key: Arc<[u8]> = Arc::from(r.bytes().map_err(bad)?);
        if crate::token::token_of(&key) != token {
            return Err(Error::InvalidInput(
                "paging state token does not match its key".into(),
            ));
        }
        let last_clustering = match r.u8().map_err(bad)? {
            0 => None,
            1 => Some(r.bytes().map_err(bad)?.to_vec()),
            _ => return Err(Error::InvalidInput("malformed paging state".into())),
        };
        Ok(PagingState {
            key: DecoratedKey { token, key },
            last_clustering,
        })
    }
}

/// One partition of a scan page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ScanPartition {
    pub key: DecoratedKey,
    pub static_row: Option<Row>,
    pub rows: Vec<Row>,
}

#[derive(Clone, Debug, Default)]
pub struct ScanPage {
    pub partitions: Vec<ScanPartition>,
    /// `None` when the scan reached the end.
    pub next: Option<PagingState>,
}

/// A lazily refilled token-ordered cursor over one memtable.
struct MemtableCursor {
    memtable: Arc<Memtable>,
    shard: usize,
    buf: std::collections::VecDeque<DecoratedKey>,
    last: Option<DecoratedKey>,
    /// Keys fetched per batch: small at first (a page of ten rows copied 256
    /// keys out of every memtable), growing for long scans.
    batch: usize,
}

const FIRST_MEMTABLE_BATCH: usize = 16;
const MAX_MEMTABLE_BATCH: usize = 256;

impl MemtableCursor {
    /// From `start` on (after it when `exclusive`), or from the beginning.
    fn new(
        memtable: Arc<Memtable>,
        start: Option<&DecoratedKey>,
        exclusive: bool,
    ) -> MemtableCursor {
        let mut c = MemtableCursor {
            shard: start.map_or(0, Memtable::shard_index),
            memtable,
            buf: Default::default(),
            last: None,
            batch: FIRST_MEMTABLE_BATCH,
        };
        // Seek to `start` within its shard; later batches continue after the
        // last key fetched.
        if let Some(k) = start {
            let lower = if exclusive {
                Bound::Excluded(k)
            } else {
                Bound::Included(k)
            };
            c.buf = c.memtable.shard_batch(c.shard, lower, c.batch).into();
            c.last = c.buf.back().cloned();
            if c.buf.is_empty() {
                c.shard += 1;
            }
        }
        c
    }

    fn next(&mut self) -> Option<DecoratedKey> {
        loop {
            if let Some(p) = self.buf.pop_front() {
                return Some(p);
            }
            if self.shard >= SHARDS {
                return None;
            }
            self.batch = (self.batch * 4).min(MAX_MEMTABLE_BATCH);
            let batch = self.memtable.shard_batch(
                self.shard,
                self.last.as_ref().map_or(Bound::Unbounded, Bound::Excluded),
                self.batch,
            );
            if batch.is_empty() {
                self.shard += 1;
                self.last = None;
            } else {
                self.last = batch.last().cloned();
                self.buf.extend(batch);
            }
        }
    }
}

/// The sstables of one disjoint level from a scan's start on, in key order,
/// each opened only when the scan reaches it: a short scan opens one sstable
/// per level, not every sstable whose range ends after its start (each of
/// which read an index block and a data chunk before the merge looked at it).
struct RunCursor<'a> {
    view: &'a View,
    /// (first key, last key, position in the version), from the first
    /// sstable whose last key is not before the start.
    run: &'a [(DecoratedKey, DecoratedKey, usize)],
    start: Option<&'a DecoratedKey>,
    exclusive: bool,
    current: Option<PartitionScanner>,
    opened: usize,
}

impl<'a> RunCursor<'a> {
    fn new(
        view: &'a View,
        run: &'a [(DecoratedKey, DecoratedKey, usize)],
        start: Option<&'a DecoratedKey>,
        exclusive: bool,
    ) -> RunCursor<'a> {
        // Disjoint and sorted by first key, so sorted by last key too.
        let from = start.map_or(0, |k| run.partition_point(|(_, last, _)| last < k));
        RunCursor {
            view,
            run: &run[from..],
            start,
            exclusive,
            current: None,
            opened: 0,
        }
    }

    /// Moves to the run's next partition; `false` at its end.
    fn advance(&mut self) -> Result<bool> {
        loop {
            if let Some(c) = self.current.as_mut() {
                if c.advance()? {
                    return Ok(true);
                }
            }
            let Some((_, _, i)) = self.run.get(self.opened) else {
                self.current = None;
                return Ok(false);
            };
            let Some(s) = self.view.sstables().get(*i) else {
                self.current = None;
                return Ok(false);
            };
            let tag = IoTag::new(IoCause::UserRead);
            // Only the first sstable can hold the start; the later ones begin
            // after the previous one's last key, so after the start too.
            self.current = Some(match self.start {
                Some(k) if self.opened == 0 && self.exclusive => s.scan_after(k, tag)?,
                Some(k) if self.opened == 0 => s.scan(Some(k), tag)?,
                _ => s.scan(None, tag)?,
            });
            self.opened += 1;
        }
    }
}

/// One source of a scan, standing on its next partition (its head) once
/// [`advance`](Source::advance) has returned `true`.
enum Source<'a> {
    Mem {
        cursor: MemtableCursor,
        head: Option<PartitionUpdate>,
    },
    Sst(PartitionScanner),
    Run(RunCursor<'a>),
}

impl Source<'_> {
    fn advance(&mut self) -> Result<bool> {
        match self {
            Source::Mem { cursor, head } => {
                // A key the cursor listed is always there (partitions are never
                // removed from a memtable); the loop only keeps that total.
                *head = None;
                while let Some(k) = cursor.next() {
                    if let Some(p) = cursor.memtable.read(&k, &ClusteringRange::ALL) {
                        *head = Some(p);
                        return Ok(true);
                    }
                }
                Ok(false)
            }
            Source::Sst(s) => s.advance(),
            Source::Run(r) => r.advance(),
        }
    }

    /// The head's scanner, when an sstable's: its partition still encoded.
    fn scanner(&self) -> Option<&PartitionScanner> {
        match self {
            Source::Mem { .. } => None,
            Source::Sst(s) => Some(s),
            Source::Run(r) => r.current.as_ref(),
        }
    }

    /// The head's key, `(token, key)`.
    fn key(&self) -> Option<(i64, &[u8])> {
        match self {
            Source::Mem { head, .. } => head.as_ref().map(|p| (p.key.token, &p.key.key[..])),
            _ => self
                .scanner()
                .and_then(|s| s.current())
                .map(|p| (p.token, p.key)),
        }
    }

    /// The head, built (moved out of a memtable's, decoded from an sstable's).
    fn take(&mut self) -> Result<Option<PartitionUpdate>> {
        match self {
            Source::Mem { head, .. } => Ok(head.take()),
            _ => self.scanner().map(|s| s.decode_current()).transpose(),
        }
    }
}

/// One live row of a scan, as [`scan_rows`] hands it to its visitor: borrowed
/// from the cached chunk that holds it when one sstable holds its partition
/// (then nothing is built for it), else from the partition merged from its
/// sources.
#[derive(Clone, Copy, Debug)]
pub struct ScanRow<'a> {
    pub token: i64,
    /// The partition key, serialized.
    pub key: &'a [u8],
    /// The partition's static row: handed over before its clustering rows,
    /// and not counted towards the page.
    pub is_static: bool,
    pub clustering: &'a [u8],
    /// The row marker, empty if it has expired or is shadowed.
    pub liveness: LivenessInfo,
    /// The live cells, in `(column, path)` order.
    pub cells: &'a [CellView<'a>],
}

impl ScanRow<'_> {
    /// The row built (its clustering and values copied).
    pub fn to_row(&self) -> Row {
        Row {
            clustering: self.clustering.to_vec(),
            liveness: self.liveness,
            deletion: DeletionTime::LIVE,
            cells: self.cells.iter().map(CellView::to_cell).collect(),
        }
    }
}

/// How full a scan page is, and the last row it holds.
struct PageFill {
    rows: usize,
    limit: usize,
    /// The clustering of the last row handed over.
    last_clustering: Vec<u8>,
    /// A live row was left out of the partition that ends the page.
    partial: bool,
}

impl PageFill {
    fn full(&self) -> bool {
        self.partial || self.rows >= self.limit
    }

    /// Hands `row` to `visit` if the page has room for it (a static row
    /// always has: it does not count); otherwise marks the page partial.
    fn offer(&mut self, row: &ScanRow<'_>, visit: &mut dyn FnMut(&ScanRow<'_>)) -> bool {
        if row.is_static {
            visit(row);
            return true;
        }
        if self.rows >= self.limit {
            self.partial = true;
            return false;
        }
        visit(row);
        self.rows += 1;
        self.last_clustering.clear();
        self.last_clustering.extend_from_slice(row.clustering);
        true
    }

    /// Hands over a built partition's live static row and rows.
    fn offer_built(
        &mut self,
        (token, key): (i64, &[u8]),
        static_row: Option<&Row>,
        rows: &[Row],
        visit: &mut dyn FnMut(&ScanRow<'_>),
    ) {
        let mut cells: SmallVec<[CellView<'_>; 4]> = SmallVec::new();
        for (row, is_static) in static_row
            .map(|r| (r, true))
            .into_iter()
            .chain(rows.iter().map(|r| (r, false)))
        {
            cells.clear();
            cells.extend(row.cells.iter().map(CellView::of));
            let view = ScanRow {
                token,
                key,
                is_static,
                clustering: &row.clustering,
                liveness: row.liveness,
                cells: &cells,
            };
            if !self.offer(&view, visit) {
                return;
            }
        }
    }

    /// Where the next page starts when this one is full at partition `key`.
    fn paging(&self, token: i64, key: &[u8]) -> PagingState {
        PagingState {
            key: DecoratedKey {
                token,
                key: Arc::from(key),
            },
            last_clustering: self.partial.then(|| self.last_clustering.clone()),
        }
    }
}

/// Scans live rows in token order, at most `page_rows` rows, resuming after
/// `paging` (invariant 3), built into a page ([`scan_rows`], each row copied).
pub fn scan(
    view: &View,
    paging: Option<&PagingState>,
    page_rows: usize,
    now_seconds: i64,
) -> Result<ScanPage> {
    let mut partitions: Vec<ScanPartition> = Vec::new();
    let next = scan_rows(view, paging, page_rows, now_seconds, &mut |r| {
        let same = partitions
            .last()
            .is_some_and(|p| p.key.token == r.token && *p.key.key == *r.key);
        if !same {
            partitions.push(ScanPartition {
                key: DecoratedKey {
                    token: r.token,
                    key: Arc::from(r.key),
                },
                static_row: None,
                rows: Vec::new(),
            });
        }
        if let Some(p) = partitions.last_mut() {
            if r.is_static {
                p.static_row = Some(r.to_row());
            } else {
                p.rows.push(r.to_row());
            }
        }
    })?;
    Ok(ScanPage { partitions, next })
}

/// Scans live rows in token order, at most `page_rows` rows (static rows not
/// counted), resuming after `paging` (invariant 3), handing each to `visit`
/// as it is found; returns where the next page starts (`None` at the end).
///
/// A partition that one sstable alone holds, with nothing in its header but
/// its key, is handed over row by row from the scanner's cached chunk,
/// nothing built (issue 15: building each row was most of a scan's time);
/// any other is built from its sources, merged, and cut to its live rows.
pub fn scan_rows(
    view: &View,
    paging: Option<&PagingState>,
    page_rows: usize,
    now_seconds: i64,
    visit: &mut dyn FnMut(&ScanRow<'_>),
) -> Result<Option<PagingState>> {
    let mut fill = PageFill {
        rows: 0,
        limit: page_rows.max(1),
        last_clustering: Vec::new(),
        partial: false,
    };
    let start = paging.map(|p| &p.key);
    // A page that resumes inside a partition reads the rest of it as a slice
    // after the last row returned (through row indexes), and the sources start
    // after that partition: paging through a wide partition costs a page per
    // page, not a whole-partition decode. (An empty clustering cannot end a
    // partial page; a client's paging state holding one takes the general path.)
    let mut exclusive = false;
    if let Some(PagingState {
        key,
        last_clustering: Some(ck),
    }) = paging
    {
        if !ck.is_empty() {
            exclusive = true;
            let range = ClusteringRange {
                start: ClusteringBound::exclusive(ck.clone()),
                end: ClusteringBound::UNBOUNDED,
            };
            let now = || now_seconds;
            let rows = read_partition(view, key, &range, false, fill.limit + 1, &now)?.rows;
            let at = (key.token, &key.key[..]);
            fill.offer_built(at, None, &rows, visit);
            if fill.full() {
                return Ok(Some(fill.paging(at.0, at.1)));
            }
        }
    }
    let mut sources = Vec::new();
    // An empty memtable (the usual one after a flush) is no source: its cursor
    // would take all 64 shard locks to find nothing, on every page.
    for m in view.memtables.iter().filter(|m| !m.is_empty()) {
        sources.push(Source::Mem {
            cursor: MemtableCursor::new(m.clone(), start, exclusive),
            head: None,
        });
    }
    // Overlapping sstables (level 0, and every level of a tiered strategy)
    // each scan from the start; a disjoint level is one lazy source.
    let handles = view.sstables();
    for s in view.keys.others.iter().filter_map(|&i| handles.get(i)) {
        if start.is_none_or(|k| s.last_key() >= k) {
            let tag = IoTag::new(IoCause::UserRead);
            sources.push(Source::Sst(match start {
                Some(k) if exclusive => s.scan_after(k, tag)?,
                _ => s.scan(start, tag)?,
            }));
        }
    }
    for run in &view.keys.runs {
        sources.push(Source::Run(RunCursor::new(view, run, start, exclusive)));
    }
    // A source at its end has no head key.
    for s in sources.iter_mut() {
        s.advance()?;
    }
    let mut key: Vec<u8> = Vec::new();
    let mut holders: SmallVec<[usize; 8]> = SmallVec::new();
    loop {
        // The smallest head key, and the sources standing on it.
        let Some(token) = min_head(&sources).map(|(token, k)| {
            key.clear();
            key.extend_from_slice(k);
            token
        }) else {
            return Ok(None);
        };
        holders.clear();
        holders.extend((0..sources.len()).filter(|&i| sources[i].key() == Some((token, &key))));
        // `None`: pass the partition over (the previous page returned it
        // whole); `Some(after)`: its rows after `after` (all if `None`).
        let resume_after: Option<Option<&Vec<u8>>> = match paging {
            Some(p) if (p.key.token, &p.key.key[..]) == (token, &key[..]) => {
                p.last_clustering.as_ref().map(Some)
            }
            _ => Some(None),
        };
        if let Some(after) = resume_after {
            let mut handed = false;
            if let ([only], None) = (&holders[..], after) {
                if let Some(scanner) = sources[*only].scanner() {
                    // The fast path: rows straight from the cached chunk
                    // (the cells of a row of four or fewer on the stack).
                    let base = *scanner.base();
                    let mut cells: SmallVec<[CellView<'_>; 4]> = SmallVec::new();
                    let plain = scanner.visit_current_rows(|clustering, body| {
                        let Some(liveness) = crate::encoding::live_row_view(
                            body,
                            &base,
                            DeletionTime::LIVE,
                            now_seconds,
                            &mut cells,
                        )?
                        else {
                            return Ok(true);
                        };
                        let row = ScanRow {
                            token,
                            key: &key,
                            is_static: false,
                            clustering,
                            liveness,
                            cells: &cells,
                        };
                        Ok(fill.offer(&row, visit))
                    })?;
                    handed = plain;
                }
            }
            if !handed {
                let mut acc = PartitionUpdate::new(DecoratedKey {
                    token,
                    key: Arc::from(&key[..]),
                });
                for &i in &holders {
                    if let Some(p) = sources[i].take()? {
                        merge_partition(&mut acc, p);
                    }
                }
                if let Some(ck) = after {
                    acc.rows.retain(|r| r.clustering > *ck);
                    acc.static_row = None;
                }
                let (static_row, rows) = into_live_rows(acc, now_seconds);
                fill.offer_built((token, &key), static_row.as_ref(), &rows, visit);
            }
            if fill.full() {
                return Ok(Some(fill.paging(token, &key)));
            }
        }
        for &i in &holders {
            sources[i].advance()?;
        }
    }
}

/// The smallest key among the sources' heads (a source at its end has none).
fn min_head<'s>(sources: &'s [Source<'_>]) -> Option<(i64, &'s [u8])> {
    sources.iter().filter_map(Source::key).min()
}

/// Bytes of one cell value returned by [`read_value_range`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ValueSlice {
    /// Length of the whole value, so a client learns it from its first range.
    pub value_len: u64,
    /// Offset of `bytes[0]` in the value.
    pub offset: u64,
    /// `value[offset .. min(offset + length, value_len)]`: short at the end.
    pub bytes: Vec<u8>,
}

/// Where the winning cell's value is.
enum ValueSource {
    Mem(crate::memtable::MemRow),
    Sst(Arc<SSTableReader>),
}

/// A candidate cell: its metadata (value left out), where its value is.
struct Candidate {
    cell: crate::data::Cell,
    loc: crate::encoding::CellLocation,
    source: ValueSource,
}

impl Candidate {
    /// Value bytes `[from, from + len)` (the caller keeps them inside the value).
    fn read(&self, from: u64, len: u64, out: &mut Vec<u8>) -> Result<()> {
        let at = self.loc.value_at + from;
        match &self.source {
            ValueSource::Mem(row) => {
                let body = row.body();
                let piece = usize::try_from(at)
                    .ok()
                    .and_then(|a| body.get(a..a.checked_add(len as usize)?))
                    .ok_or_else(|| {
                        Error::InvalidInput("memtable row shorter than its cell".into())
                    })?;
                out.extend_from_slice(piece);
                Ok(())
            }
            ValueSource::Sst(r) => r.read_value_range(at, len, USER_READ, out),
        }
    }
}

const USER_READ: IoTag = IoTag::new(IoCause::UserRead);

/// Bytes `[offset, offset + length)` of the value of simple column `column` in
/// row `clustering` of partition `key`, as the normal read path would return
/// it at `now_seconds`, without reading the rest of the value (issue 13).
///
/// Each source (memtables, sstables newest first, skipped once a partition
/// tombstone shadows everything they hold: invariant 2) is asked for the
/// partition's deletions, the row's deletion and the cell's *location*; the
/// cells are reconciled by Cassandra's rules (higher timestamp, then tombstone,
/// then, only on a tie between two live cells, the greater value, which is
/// the one case that reads both values whole); the winner is dropped if a
/// partition, range or row deletion covers it or its TTL has expired; and only
/// the chunks under the requested bytes of the winner are read.
///
/// `None`: no live cell. A range running past the end is short (as `pread`);
/// an `offset` beyond the end of the value is `InvalidInput` (a client asking
/// for bytes that were never there has the wrong length, and silence would
/// hide it); `offset == value_len` returns no bytes.
pub fn read_value_range(
    view: &View,
    key: &DecoratedKey,
    clustering: &[u8],
    column: crate::data::ColumnId,
    offset: u64,
    length: u64,
    now_seconds: i64,
) -> Result<Option<ValueSlice>> {
    let mut deletion = PartitionDeletion::default();
    let mut row_deletion = crate::data::DeletionTime::LIVE;
    let mut best: Option<Candidate> = None;
    let consider = |best: &mut Option<Candidate>, c: Candidate| -> Result<()> {
        *best = Some(match best.take() {
            None => c,
            Some(b) => pick(b, c)?,
        });
        Ok(())
    };
    for m in &view.memtables {
        let Some((pd, row)) = m.row_for_value(key, clustering) else {
            continue;
        };
        deletion.merge(&pd);
        let Some(row) = row else { continue };
        let mut r = crate::encoding::Reader::new(row.body());
        let (rd, loc) = crate::encoding::locate_cell(&mut r, &m.row_base(), column)
            .map_err(|e| Error::InvalidInput(format!("memtable row does not decode: {}", e.0)))?;
        row_deletion = row_deletion.max(rd);
        if let Some(loc) = loc {
            let cell = loc.to_cell(column);
            consider(
                &mut best,
                Candidate {
                    cell,
                    loc,
                    source: ValueSource::Mem(row),
                },
            )?;
        }
    }
    let one_row = ClusteringRange {
        start: ClusteringBound::inclusive(clustering.to_vec()),
        end: ClusteringBound::inclusive(clustering.to_vec()),
    };
    for s in sstables_newest_first(view, key, &one_row) {
        if deletion
            .partition_deletion()
            .deletes(s.stats().max_timestamp_micros)
        {
            break;
        }
        let Some(found) =
            s.locate_cell_admitted(key, clustering, column, USER_READ, Admitted::Yes)?
        else {
            continue;
        };
        deletion.merge(&found.deletion);
        let Some((rd, loc)) = found.row else { continue };
        row_deletion = row_deletion.max(rd);
        if let Some(loc) = loc {
            let cell = loc.to_cell(column);
            consider(
                &mut best,
                Candidate {
                    cell,
                    loc,
                    source: ValueSource::Sst(Arc::clone(s)),
                },
            )?;
        }
    }
    let Some(winner) = best else {
        return Ok(None);
    };
    let shadow = deletion.covering(clustering).max(row_deletion);
    if shadow.deletes(winner.cell.timestamp_micros) || !winner.cell.is_live(now_seconds) {
        return Ok(None);
    }
    let value_len = winner.loc.value_len;
    if offset > value_len {
        return Err(Error::InvalidInput(format!(
            "offset {offset} is past the end of the {value_len}-byte value"
        )));
    }
    let take = length.min(value_len - offset);
    let mut bytes = Vec::new();
    winner.read(offset, take, &mut bytes)?;
    Ok(Some(ValueSlice {
        value_len,
        offset,
        bytes,
    }))
}

/// Cassandra's reconciliation ([`crate::data::reconcile_cells`]) of two
/// located cells. Timestamps and kinds decide without values except for two
/// live (or expiring) cells with equal timestamps, where the greater value
/// wins: only then are both values read.
fn pick(a: Candidate, b: Candidate) -> Result<Candidate> {
    use crate::data::CellKind;
    if a.cell.kind == CellKind::Counter || b.cell.kind == CellKind::Counter {
        // Two counter cells merge into a value neither holds; no slice of one
        // located cell answers.
        return Err(Error::InvalidInput(
            "a counter is read whole, not by slices".to_string(),
        ));
    }
    let (mut ca, mut cb) = (a.cell.clone(), b.cell.clone());
    let tie = ca.timestamp_micros == cb.timestamp_micros
        && ca.kind != CellKind::Tombstone
        && cb.kind != CellKind::Tombstone;
    if tie {
        a.read(0, a.loc.value_len, &mut ca.value)?;
        b.read(0, b.loc.value_len, &mut cb.value)?;
    }
    // Tell the winner apart by a marker column: reconciliation never looks at it.
    ca.column = 0;
    cb.column = 1;
    Ok(if crate::data::reconcile_cells(ca, cb).column == 0 {
        a
    } else {
        b
    })
}
