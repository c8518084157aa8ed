//! The engine's data model below the schema layer (DESIGN.md §2): partitions of
//! rows of cells, all keys as bytes, and Cassandra's reconciliation rules.
//!
//! Vocabulary:
//! - A **partition** is identified by a [`DecoratedKey`]: the Murmur3 token of the
//!   serialized partition key, then the key bytes. Partitions sort by that pair.
//! - A **row** is identified within its partition by its **clustering**: the
//!   byte-comparable encoding of its clustering column values (`types::encode_clustering`),
//!   so rows sort by `memcmp` and the engine never needs the schema to order them.
//! - A **cell** is one column value with its write timestamp (microseconds), an
//!   optional TTL and a local deletion/expiry time (seconds, i64: no 2038 limit).
//! - Deletions: partition tombstone, range tombstone (clustering bounds), row
//!   tombstone, cell tombstone; each a [`DeletionTime`].
//!
//! Invariants:
//! 1. A deletion with `marked_for_delete_at_micros = T` shadows every datum whose
//!    write timestamp is `<= T` (Cassandra's rule), whatever its origin.
//! 2. Reconciliation is deterministic, commutative and associative and does not
//!    depend on "now": merging the same versions in any order, at any time, gives
//!    the same result. This is what makes compaction order irrelevant.
//!    Rule for two cells of one column: the higher timestamp wins; on equal
//!    timestamps a tombstone beats a non-tombstone (two tombstones: the later local
//!    deletion time wins); otherwise the greater value wins (bytes, memcmp); equal
//!    values: an expiring cell beats a non-expiring one, then the later expiry wins.
//!    (Cassandra 3.x asks `isLive(now)` on ties, which makes the outcome depend on
//!    when the merge ran; Cassandra 4.0 moved to a time-independent order like this one.)
//! 3. `Row::cells` is sorted by `(column, path)` with no duplicates; `PartitionUpdate::rows`
//!    is sorted by clustering with no duplicates.
//! 4. A row exists at `now` while its primary-key liveness (the row marker written
//!    by INSERT) or any of its cells is live and not shadowed.
//! 5. A complex column (a non-frozen collection or UDT) holds one cell per
//!    element, each with a non-empty path, and may hold a **complex deletion**:
//!    a tombstone cell of that column whose path is empty (so it sorts before
//!    the column's elements). It shadows the column's elements written at or
//!    before its timestamp, as Cassandra's per-column `DeletionTime` does: a
//!    collection overwrite is a complex deletion at `timestamp - 1` plus the new
//!    elements. Two complex deletions reconcile as two tombstones (invariant 2).
//! 6. A **counter cell** ([`CellKind::Counter`]) is live and never expires; its
//!    value is a counter context (`crate::counter`). Two counter cells of one
//!    column merge their contexts (the later timestamp stays), so no
//!    increment is lost whichever write wins; a tombstone beats a counter cell
//!    whatever their timestamps, as Cassandra's `Conflicts.resolveCounter`
//!    decides: a deleted counter stays deleted (until gc grace purges the
//!    tombstone). Row, range and partition deletions shadow counter cells by
//!    timestamp (invariant 1). Counter cells meet only counter cells and
//!    tombstones: the schema keeps counter and other columns in separate
//!    tables. A counter's own tombstone carries
//!    [`COUNTER_TOMBSTONE_TIMESTAMP`], above every deletion's, so that no
//!    row or partition deletion shadows it: were it shadowed, the answer
//!    would depend on whether it met a later increment before (tombstone
//!    wins, the increment is lost) or after (the increment counts) the
//!    deletion, that is on when flushes and compactions ran.

use std::cmp::Ordering;
use std::sync::Arc;

/// Timestamp meaning "no timestamp" (an absent row marker).
pub const NO_TIMESTAMP: i64 = i64::MIN;
/// Local deletion time of data that is not deleted and does not expire.
pub const NO_DELETION_TIME: i64 = i64::MAX;
/// The timestamp of a counter's tombstone (invariant 6): no deletion
/// shadows it, and it beats every increment until gc grace purges it.
pub const COUNTER_TOMBSTONE_TIMESTAMP: i64 = i64::MAX;
/// Cassandra's maximum TTL: 20 years.
pub const MAX_TTL_SECONDS: u32 = 20 * 365 * 24 * 3600;

/// Column identifier within a table: regular and static columns, numbered from 0
/// in schema order. Partition-key and clustering columns have no cells and no ids.
pub type ColumnId = u32;

/// When and at what timestamp something was deleted.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DeletionTime {
    /// Data written at or before this timestamp is shadowed.
    pub marked_for_delete_at_micros: i64,
    /// Server time of the deletion, seconds: gc grace counts from here.
    pub local_deletion_seconds: i64,
}

impl DeletionTime {
    pub const LIVE: DeletionTime = DeletionTime {
        marked_for_delete_at_micros: NO_TIMESTAMP,
        local_deletion_seconds: NO_DELETION_TIME,
    };

    pub fn new(marked_for_delete_at_micros: i64, local_deletion_seconds: i64) -> DeletionTime {
        DeletionTime {
            marked_for_delete_at_micros,
            local_deletion_seconds,
        }
    }

    pub fn is_live(&self) -> bool {
        self.marked_for_delete_at_micros == NO_TIMESTAMP
    }

    /// Whether data written at `timestamp_micros` is shadowed by this deletion.
    #[inline]
    pub fn deletes(&self, timestamp_micros: i64) -> bool {
        !self.is_live() && timestamp_micros <= self.marked_for_delete_at_micros
    }

    pub fn supersedes(&self, other: &DeletionTime) -> bool {
        (
            self.marked_for_delete_at_micros,
            self.local_deletion_seconds,
        ) > (
            other.marked_for_delete_at_micros,
            other.local_deletion_seconds,
        )
    }

    /// The stronger of two deletions (invariant 2).
    pub fn max(self, other: DeletionTime) -> DeletionTime {
        if other.supersedes(&self) {
            other
        } else {
            self
        }
    }
}

/// What a cell is.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CellKind {
    Live,
    /// Live until `local_deletion_seconds`, then a tombstone.
    Expiring,
    Tombstone,
    /// A counter's context (invariant 6): live, never expires.
    Counter,
}

impl CellKind {
    /// Whether a cell of this kind and local deletion time is live at
    /// `now_seconds`: not a tombstone and not expired (the one rule for a
    /// built [`Cell`] and an encoded cell's view alike).
    #[inline]
    pub fn is_live(self, local_deletion_seconds: i64, now_seconds: i64) -> bool {
        match self {
            CellKind::Live | CellKind::Counter => true,
            CellKind::Expiring => now_seconds < local_deletion_seconds,
            CellKind::Tombstone => false,
        }
    }
}

/// Applies complex deletions (invariant 5) over cells visited in `(column,
/// path)` order: remembers the current column's deletion as it passes and
/// answers, for each element cell, whether that deletion shadows it.
#[derive(Clone, Copy, Debug, Default)]
pub struct ComplexDeletions {
    current: Option<(ColumnId, i64)>,
}

impl ComplexDeletions {
    /// Whether the cell is an element shadowed by its column's complex
    /// deletion. Must be asked of every cell in order, tombstones included.
    #[inline]
    pub fn shadows(
        &mut self,
        column: ColumnId,
        path: Option<&[u8]>,
        kind: CellKind,
        timestamp_micros: i64,
    ) -> bool {
        match path {
            None => false,
            Some([]) => {
                if kind == CellKind::Tombstone {
                    self.current = Some((column, timestamp_micros));
                }
                false
            }
            Some(_) => {
                matches!(self.current, Some((c, at)) if c == column && timestamp_micros <= at)
            }
        }
    }

    /// [`ComplexDeletions::shadows`] for a built cell.
    #[inline]
    pub fn shadows_cell(&mut self, c: &Cell) -> bool {
        self.shadows(c.column, c.path.as_deref(), c.kind, c.timestamp_micros)
    }
}

/// One column value (or its deletion).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cell {
    pub column: ColumnId,
    /// Element key of a complex column's cell (`crate::complex` builds them);
    /// `None` for simple columns; empty for a complex deletion (invariant 5).
    pub path: Option<Box<[u8]>>,
    pub timestamp_micros: i64,
    pub kind: CellKind,
    /// TTL the cell was written with (`Expiring` only, else 0).
    pub ttl_seconds: u32,
    /// `Expiring`: expiry time; `Tombstone`: deletion time; `Live`: [`NO_DELETION_TIME`].
    pub local_deletion_seconds: i64,
    /// Serialized value; empty for tombstones.
    pub value: Vec<u8>,
}

impl Cell {
    pub fn live(column: ColumnId, timestamp_micros: i64, value: Vec<u8>) -> Cell {
        Cell {
            column,
            path: None,
            timestamp_micros,
            kind: CellKind::Live,
            ttl_seconds: 0,
            local_deletion_seconds: NO_DELETION_TIME,
            value,
        }
    }

    /// A cell written at `now_seconds` that expires `ttl_seconds` later.
    pub fn expiring(
        column: ColumnId,
        timestamp_micros: i64,
        ttl_seconds: u32,
        now_seconds: i64,
        value: Vec<u8>,
    ) -> Cell {
        Cell {
            column,
            path: None,
            timestamp_micros,
            kind: CellKind::Expiring,
            ttl_seconds,
            local_deletion_seconds: now_seconds.saturating_add(ttl_seconds as i64),
            value,
        }
    }

    /// A counter cell holding context `context` (invariant 6).
    pub fn counter(column: ColumnId, timestamp_micros: i64, context: Vec<u8>) -> Cell {
        Cell {
            kind: CellKind::Counter,
            ..Cell::live(column, timestamp_micros, context)
        }
    }

    /// The value a reader gets: the counter's total (a CQL `counter`, 8
    /// bytes) for a counter cell, the stored bytes otherwise.
    pub fn read_value(&self) -> crate::encoding::DecodeResult<std::borrow::Cow<'_, [u8]>> {
        Ok(match self.kind {
            CellKind::Counter => {
                std::borrow::Cow::Owned(crate::counter::total(&self.value)?.to_be_bytes().to_vec())
            }
            _ => std::borrow::Cow::Borrowed(&self.value),
        })
    }

    pub fn tombstone(column: ColumnId, timestamp_micros: i64, now_seconds: i64) -> Cell {
        Cell {
            column,
            path: None,
            timestamp_micros,
            kind: CellKind::Tombstone,
            ttl_seconds: 0,
            local_deletion_seconds: now_seconds,
            value: Vec::new(),
        }
    }

    /// The complex deletion of `column` (invariant 5): its elements written at
    /// or before `timestamp_micros` are gone.
    pub fn complex_deletion(column: ColumnId, timestamp_micros: i64, now_seconds: i64) -> Cell {
        Cell {
            path: Some(Box::default()),
            ..Cell::tombstone(column, timestamp_micros, now_seconds)
        }
    }

    /// Whether this cell is a complex deletion (invariant 5).
    pub fn is_complex_deletion(&self) -> bool {
        self.path.as_deref().is_some_and(|p| p.is_empty())
    }

    /// Live at `now_seconds`: not a tombstone and not expired.
    #[inline]
    pub fn is_live(&self, now_seconds: i64) -> bool {
        self.kind.is_live(self.local_deletion_seconds, now_seconds)
    }

    /// A tombstone, or an expiring cell past its expiry (which acts as one).
    pub fn is_tombstone_at(&self, now_seconds: i64) -> bool {
        !self.is_live(now_seconds)
    }

    /// Sort key within a row.
    pub fn cmp_position(&self, other: &Cell) -> Ordering {
        self.column
            .cmp(&other.column)
            .then_with(|| self.path.cmp(&other.path))
    }

    /// Heap-independent size estimate used for statistics.
    pub fn data_size(&self) -> usize {
        self.value.len() + self.path.as_ref().map_or(0, |p| p.len()) + 8
    }
}

/// Invariant 2 for cells: returns the version that wins (for two counter
/// cells, their merge: invariant 6).
pub fn reconcile_cells(a: Cell, b: Cell) -> Cell {
    match (a.kind, b.kind) {
        (CellKind::Tombstone, CellKind::Counter) => return a,
        (CellKind::Counter, CellKind::Tombstone) => return b,
        (CellKind::Counter, CellKind::Counter) => {
            // A context that does not decode (corruption) does not merge; the
            // rules below still pick one deterministically, and its reader
            // reports it.
            if let Some(value) = crate::counter::merge(&a.value, &b.value) {
                return Cell {
                    timestamp_micros: a.timestamp_micros.max(b.timestamp_micros),
                    value,
                    ..a
                };
            }
        }
        _ => {}
    }
    if a.timestamp_micros != b.timestamp_micros {
        return if a.timestamp_micros > b.timestamp_micros {
            a
        } else {
            b
        };
    }
    let a_tomb = a.kind == CellKind::Tombstone;
    let b_tomb = b.kind == CellKind::Tombstone;
    if a_tomb != b_tomb {
        return if a_tomb { a } else { b };
    }
    if a_tomb {
        return if b.local_deletion_seconds > a.local_deletion_seconds {
            b
        } else {
            a
        };
    }
    match a.value.cmp(&b.value) {
        Ordering::Greater => a,
        Ordering::Less => b,
        Ordering::Equal => {
            let a_exp = a.kind == CellKind::Expiring;
            let b_exp = b.kind == CellKind::Expiring;
            if a_exp != b_exp {
                if a_exp {
                    a
                } else {
                    b
                }
            } else if b.local_deletion_seconds > a.local_deletion_seconds {
                b
            } else {
                a
            }
        }
    }
}

/// Primary-key liveness: Cassandra's row marker, written by INSERT (not UPDATE).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct LivenessInfo {
    /// [`NO_TIMESTAMP`] when the row has no marker.
    pub timestamp_micros: i64,
    pub ttl_seconds: u32,
    /// Expiry time for a marker with TTL, else [`NO_DELETION_TIME`].
    pub local_expiry_seconds: i64,
}

impl LivenessInfo {
    pub const EMPTY: LivenessInfo = LivenessInfo {
        timestamp_micros: NO_TIMESTAMP,
        ttl_seconds: 0,
        local_expiry_seconds: NO_DELETION_TIME,
    };

    pub fn new(timestamp_micros: i64) -> LivenessInfo {
        LivenessInfo {
            timestamp_micros,
            ttl_seconds: 0,
            local_expiry_seconds: NO_DELETION_TIME,
        }
    }

    pub fn expiring(timestamp_micros: i64, ttl_seconds: u32, now_seconds: i64) -> LivenessInfo {
        LivenessInfo {
            timestamp_micros,
            ttl_seconds,
            local_expiry_seconds: now_seconds.saturating_add(ttl_seconds as i64),
        }
    }

    pub fn is_empty(&self) -> bool {
        self.timestamp_micros == NO_TIMESTAMP
    }

    pub fn is_expiring(&self) -> bool {
        self.ttl_seconds > 0
    }

    pub fn is_live(&self, now_seconds: i64) -> bool {
        !self.is_empty() && now_seconds < self.local_expiry_seconds
    }

    /// This marker as a read returns it under `deletion` at `now_seconds`:
    /// itself, or empty if it has expired or the deletion shadows it.
    #[inline]
    pub fn live_under(self, deletion: DeletionTime, now_seconds: i64) -> LivenessInfo {
        if !self.is_live(now_seconds) || deletion.deletes(self.timestamp_micros) {
            LivenessInfo::EMPTY
        } else {
            self
        }
    }

    /// Invariant 2 for markers: higher timestamp, then expiring over not, then later expiry.
    pub fn supersedes(&self, other: &LivenessInfo) -> bool {
        if self.timestamp_micros != other.timestamp_micros {
            return self.timestamp_micros > other.timestamp_micros;
        }
        if self.is_expiring() != other.is_expiring() {
            return self.is_expiring();
        }
        self.local_expiry_seconds > other.local_expiry_seconds
    }

    pub fn merge(self, other: LivenessInfo) -> LivenessInfo {
        if other.supersedes(&self) {
            other
        } else {
            self
        }
    }
}

/// A row: clustering, marker, row deletion and cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Row {
    /// Byte-comparable clustering; empty for a table without clustering columns
    /// (and for the static row).
    pub clustering: Vec<u8>,
    pub liveness: LivenessInfo,
    pub deletion: DeletionTime,
    /// Sorted by `(column, path)` (invariant 3).
    pub cells: Vec<Cell>,
}

impl Row {
    pub fn new(clustering: Vec<u8>) -> Row {
        Row {
            clustering,
            liveness: LivenessInfo::EMPTY,
            deletion: DeletionTime::LIVE,
            cells: Vec::new(),
        }
    }

    /// Adds or replaces (by reconciliation) a cell, keeping `cells` sorted.
    pub fn add_cell(&mut self, cell: Cell) {
        match self.cells.binary_search_by(|c| c.cmp_position(&cell)) {
            Ok(i) => {
                let old = std::mem::replace(&mut self.cells[i], Cell::live(0, 0, Vec::new()));
                self.cells[i] = reconcile_cells(old, cell);
            }
            Err(i) => self.cells.insert(i, cell),
        }
    }

    /// Merges two versions of the same row (invariant 2). The result still carries
    /// data shadowed by its own row deletion; [`Row::shadow`] drops that. Elements
    /// a complex deletion shadows are dropped here (they can never be read again),
    /// so a collection overwritten in the memtable does not keep its old elements.
    pub fn merge(self, other: Row) -> Row {
        debug_assert_eq!(self.clustering, other.clustering);
        let mut complex = ComplexDeletions::default();
        let mut cells = Vec::with_capacity(self.cells.len().max(other.cells.len()));
        let mut a = self.cells.into_iter().peekable();
        let mut b = other.cells.into_iter().peekable();
        loop {
            let next = match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => match x.cmp_position(y) {
                    Ordering::Less => a.next(),
                    Ordering::Greater => b.next(),
                    Ordering::Equal => match (a.next(), b.next()) {
                        (Some(x), Some(y)) => Some(reconcile_cells(x, y)),
                        _ => None,
                    },
                },
                (Some(_), None) => a.next(),
                (None, Some(_)) => b.next(),
                (None, None) => break,
            };
            if let Some(c) = next {
                if !complex.shadows_cell(&c) {
                    cells.push(c);
                }
            }
        }
        Row {
            clustering: self.clustering,
            liveness: self.liveness.merge(other.liveness),
            deletion: self.deletion.max(other.deletion),
            cells,
        }
    }

    /// Merges any number of versions of one row at once: the same row as
    /// merging them pairwise in any order (reconciliation is commutative and
    /// associative, and a complex deletion only ever grows), in one sort of all
    /// their cells rather than one pass over the largest per version. The
    /// memtable's chained rows (a large row plus many small updates of it) are
    /// read so. `None` for no rows.
    pub fn merge_many(rows: impl IntoIterator<Item = Row>) -> Option<Row> {
        let mut rows = rows.into_iter();
        let mut acc = rows.next()?;
        for r in rows {
            debug_assert_eq!(acc.clustering, r.clustering);
            acc.liveness = acc.liveness.merge(r.liveness);
            acc.deletion = acc.deletion.max(r.deletion);
            acc.cells.extend(r.cells);
        }
        // Stable, and runs of already sorted cells (each version's) make it
        // close to a merge.
        acc.cells.sort_by(|a, b| a.cmp_position(b));
        let mut complex = ComplexDeletions::default();
        let mut cells = Vec::with_capacity(acc.cells.len());
        let mut all = std::mem::take(&mut acc.cells).into_iter().peekable();
        while let Some(mut c) = all.next() {
            while let Some(same) = all.next_if(|n| n.cmp_position(&c) == Ordering::Equal) {
                c = reconcile_cells(c, same);
            }
            if !complex.shadows_cell(&c) {
                cells.push(c);
            }
        }
        acc.cells = cells;
        Some(acc)
    }

    /// Whether `self.merge(newer)` is exactly `newer`: `newer`'s liveness and
    /// deletion win, and every cell of `self` has a cell at the same position in
    /// `newer` with a strictly newer timestamp (so `reconcile_cells` returns
    /// `newer`'s). Lets a write that overwrites a whole row store it as it came,
    /// without building the merge (the memtable's hot-row path). A `false` only
    /// means "merge to find out".
    pub fn superseded_by(&self, newer: &Row) -> bool {
        // Counter cells merge rather than replace (invariant 6).
        let counters = |r: &Row| r.cells.iter().any(|c| c.kind == CellKind::Counter);
        if self.clustering != newer.clustering
            || counters(self)
            || counters(newer)
            || self.liveness.merge(newer.liveness) != newer.liveness
            || self.deletion.max(newer.deletion) != newer.deletion
        {
            return false;
        }
        let mut theirs = newer.cells.iter();
        'old: for c in &self.cells {
            for n in theirs.by_ref() {
                match n.cmp_position(c) {
                    Ordering::Less => continue,
                    Ordering::Equal if n.timestamp_micros > c.timestamp_micros => continue 'old,
                    _ => return false,
                }
            }
            return false;
        }
        true
    }

    /// Removes everything shadowed by `deletion` (the strongest of the partition,
    /// range and row deletions covering this row) — invariant 1.
    pub fn shadow(&mut self, deletion: DeletionTime) {
        if deletion.is_live() {
            let mut complex = ComplexDeletions::default();
            self.cells.retain(|c| !complex.shadows_cell(c));
            return;
        }
        if deletion.deletes(self.liveness.timestamp_micros) {
            self.liveness = LivenessInfo::EMPTY;
        }
        let mut complex = ComplexDeletions::default();
        self.cells
            .retain(|c| !complex.shadows_cell(c) && !deletion.deletes(c.timestamp_micros));
    }

    /// The row as a reader sees it at `now_seconds`, after shadowing by `covering`
    /// (partition and range deletions): only live cells remain; `None` if the row
    /// does not exist (invariant 4).
    pub fn live_view(&self, covering: DeletionTime, now_seconds: i64) -> Option<Row> {
        let deletion = covering.max(self.deletion);
        let liveness = if self.liveness.is_live(now_seconds)
            && !deletion.deletes(self.liveness.timestamp_micros)
        {
            self.liveness
        } else {
            LivenessInfo::EMPTY
        };
        let mut complex = ComplexDeletions::default();
        let cells: Vec<Cell> = self
            .cells
            .iter()
            .filter(|c| {
                !complex.shadows_cell(c)
                    && c.is_live(now_seconds)
                    && !deletion.deletes(c.timestamp_micros)
            })
            .cloned()
            .collect();
        if liveness.is_empty() && cells.is_empty() {
            return None;
        }
        Some(Row {
            clustering: self.clustering.clone(),
            liveness,
            deletion: DeletionTime::LIVE,
            cells,
        })
    }

    /// As [`Row::live_view`], consuming the row: live cells are kept, not
    /// cloned, so a read of a 16 MiB value does not copy it once more here.
    pub fn into_live_view(mut self, covering: DeletionTime, now_seconds: i64) -> Option<Row> {
        let deletion = covering.max(self.deletion);
        self.liveness = self.liveness.live_under(deletion, now_seconds);
        let mut complex = ComplexDeletions::default();
        self.cells.retain(|c| {
            !complex.shadows_cell(c)
                && c.is_live(now_seconds)
                && !deletion.deletes(c.timestamp_micros)
        });
        if self.liveness.is_empty() && self.cells.is_empty() {
            return None;
        }
        self.deletion = DeletionTime::LIVE;
        Some(self)
    }

    /// The element cells of complex column `column` (invariant 5), in path
    /// order: not its complex deletion, not tombstones. On a live view
    /// (`live_view`) these are exactly the live elements.
    pub fn elements(&self, column: ColumnId) -> impl Iterator<Item = &Cell> {
        self.cells.iter().filter(move |c| {
            c.column == column
                && c.kind != CellKind::Tombstone
                && c.path.as_deref().is_some_and(|p| !p.is_empty())
        })
    }

    /// Largest write timestamp in the row (marker, deletion, cells), or [`NO_TIMESTAMP`].
    pub fn max_timestamp(&self) -> i64 {
        let mut m = self
            .liveness
            .timestamp_micros
            .max(self.deletion.marked_for_delete_at_micros);
        for c in &self.cells {
            m = m.max(c.timestamp_micros);
        }
        m
    }

    pub fn is_empty(&self) -> bool {
        self.liveness.is_empty() && self.deletion.is_live() && self.cells.is_empty()
    }
}

/// One end of a clustering range. A bound is a clustering *prefix*: because every
/// clustering component encoding is prefix-free, "clustering starts with P" is a
/// contiguous byte range, so a prefix bound covers whole groups of rows.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusteringBound {
    pub prefix: Vec<u8>,
    pub inclusive: bool,
}

impl ClusteringBound {
    /// The unbounded start or end (empty prefix, inclusive: covers everything).
    pub const UNBOUNDED: ClusteringBound = ClusteringBound {
        prefix: Vec::new(),
        inclusive: true,
    };

    pub fn inclusive(prefix: Vec<u8>) -> ClusteringBound {
        ClusteringBound {
            prefix,
            inclusive: true,
        }
    }

    pub fn exclusive(prefix: Vec<u8>) -> ClusteringBound {
        ClusteringBound {
            prefix,
            inclusive: false,
        }
    }

    pub fn is_unbounded(&self) -> bool {
        self.prefix.is_empty() && self.inclusive
    }

    /// Whether `clustering` is at or after this bound used as a range start.
    #[inline]
    pub fn admits_as_start(&self, clustering: &[u8]) -> bool {
        // The empty prefix (an unbounded range, every point read of a table
        // without clustering columns) decides without comparing bytes.
        if self.prefix.is_empty() {
            return self.inclusive;
        }
        if self.inclusive {
            clustering >= self.prefix.as_slice()
        } else {
            clustering > self.prefix.as_slice() && !clustering.starts_with(&self.prefix)
        }
    }

    /// Whether `clustering` is at or before this bound used as a range end.
    #[inline]
    pub fn admits_as_end(&self, clustering: &[u8]) -> bool {
        if self.prefix.is_empty() {
            return self.inclusive;
        }
        if self.inclusive {
            clustering < self.prefix.as_slice() || clustering.starts_with(&self.prefix)
        } else {
            clustering < self.prefix.as_slice()
        }
    }
}

/// A clustering range `[start, end]` with prefix bounds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ClusteringRange {
    pub start: ClusteringBound,
    pub end: ClusteringBound,
}

impl ClusteringRange {
    pub const ALL: ClusteringRange = ClusteringRange {
        start: ClusteringBound::UNBOUNDED,
        end: ClusteringBound::UNBOUNDED,
    };

    #[inline]
    pub fn contains(&self, clustering: &[u8]) -> bool {
        self.start.admits_as_start(clustering) && self.end.admits_as_end(clustering)
    }
}

/// A deletion of every row whose clustering falls in `range`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct RangeTombstone {
    pub range: ClusteringRange,
    pub deletion: DeletionTime,
}

/// The position of a partition in the ring: token, then key bytes.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct DecoratedKey {
    pub token: i64,
    /// Serialized partition key (single value, or Cassandra's composite encoding).
    pub key: Arc<[u8]>,
}

impl DecoratedKey {
    pub fn new(key: &[u8]) -> DecoratedKey {
        DecoratedKey {
            token: crate::token::token_of(key),
            key: Arc::from(key),
        }
    }
}

impl Ord for DecoratedKey {
    fn cmp(&self, other: &Self) -> Ordering {
        self.token
            .cmp(&other.token)
            .then_with(|| self.key.cmp(&other.key))
    }
}

impl PartialOrd for DecoratedKey {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Partition-level deletion state: the partition tombstone and range tombstones.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PartitionDeletion {
    pub partition: Option<DeletionTime>,
    pub ranges: Vec<RangeTombstone>,
}

impl PartitionDeletion {
    pub fn partition_deletion(&self) -> DeletionTime {
        self.partition.unwrap_or(DeletionTime::LIVE)
    }

    /// The strongest deletion covering `clustering`: partition tombstone and every
    /// range tombstone that contains it.
    pub fn covering(&self, clustering: &[u8]) -> DeletionTime {
        let mut d = self.partition_deletion();
        for rt in &self.ranges {
            if rt.range.contains(clustering) {
                d = d.max(rt.deletion);
            }
        }
        d
    }

    /// Folds `other` in. Range tombstones are kept as a list; an identical range
    /// keeps only the stronger deletion, so repeated deletes of one range do not
    /// grow it.
    pub fn merge(&mut self, other: &PartitionDeletion) {
        if let Some(d) = other.partition {
            self.partition = Some(self.partition_deletion().max(d));
        }
        for rt in &other.ranges {
            match self.ranges.iter_mut().find(|r| r.range == rt.range) {
                Some(existing) => existing.deletion = existing.deletion.max(rt.deletion),
                None => self.ranges.push(rt.clone()),
            }
        }
    }

    pub fn is_empty(&self) -> bool {
        self.partition.is_none() && self.ranges.is_empty()
    }

    pub fn max_timestamp(&self) -> i64 {
        let mut m = self
            .partition
            .map_or(NO_TIMESTAMP, |d| d.marked_for_delete_at_micros);
        for rt in &self.ranges {
            m = m.max(rt.deletion.marked_for_delete_at_micros);
        }
        m
    }
}

/// One mutation of one partition: the unit of atomicity and of memtable batching.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionUpdate {
    pub key: DecoratedKey,
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
    /// Sorted by clustering, unique (invariant 3).
    pub rows: Vec<Row>,
}

impl PartitionUpdate {
    pub fn new(key: DecoratedKey) -> PartitionUpdate {
        PartitionUpdate {
            key,
            deletion: PartitionDeletion::default(),
            static_row: None,
            rows: Vec::new(),
        }
    }

    /// Adds a row, merging with an existing one of the same clustering.
    pub fn add_row(&mut self, row: Row) {
        match self
            .rows
            .binary_search_by(|r| r.clustering.as_slice().cmp(&row.clustering))
        {
            Ok(i) => {
                let old = std::mem::replace(&mut self.rows[i], Row::new(Vec::new()));
                self.rows[i] = old.merge(row);
            }
            Err(i) => self.rows.insert(i, row),
        }
    }

    pub fn cell_count(&self) -> usize {
        self.rows.iter().map(|r| r.cells.len()).sum::<usize>()
            + self.static_row.as_ref().map_or(0, |r| r.cells.len())
    }

    pub fn max_timestamp(&self) -> i64 {
        let mut m = self.deletion.max_timestamp();
        for r in self.rows.iter().chain(self.static_row.iter()) {
            m = m.max(r.max_timestamp());
        }
        m
    }
}

/// A random row of clustering `ck`, built for collisions between two such
/// rows: four columns, timestamps 1..6, every cell kind, an occasional row
/// deletion and (with `paths`) collection cells in column 3. Test rows for
/// `Row::superseded_by` and its encoded twin in the memtable.
#[cfg(test)]
pub(crate) fn colliding_row(rng: &mut impl rand::Rng, paths: bool) -> Row {
    let mut r = Row::new(b"ck".to_vec());
    if rng.gen_bool(0.7) {
        r.liveness = LivenessInfo::new(rng.gen_range(1..6));
    }
    if rng.gen_bool(0.1) {
        r.deletion = DeletionTime::new(rng.gen_range(1..6), 10);
    }
    for col in 0..4u32 {
        if rng.gen_bool(0.7) {
            let ts = rng.gen_range(1..6);
            let mut cell = match rng.gen_range(0..3) {
                0 => Cell::tombstone(col, ts, 100),
                1 => Cell::expiring(col, ts, 60, 200, vec![rng.gen_range(0..3)]),
                _ => Cell::live(col, ts, vec![rng.gen_range(0..3)]),
            };
            if paths && col == 3 && rng.gen_bool(0.2) {
                cell.path = Some(vec![rng.gen_range(0..2)].into_boxed_slice());
            }
            r.add_cell(cell);
        }
        if paths && col == 3 && rng.gen_bool(0.15) {
            r.add_cell(Cell::complex_deletion(col, rng.gen_range(1..6), 100));
        }
    }
    // As every writer leaves a row: no element its own complex deletion shadows.
    r.shadow(DeletionTime::LIVE);
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell(ts: i64, v: &[u8]) -> Cell {
        Cell::live(1, ts, v.to_vec())
    }

    #[test]
    fn higher_timestamp_wins_then_tombstone_then_value() {
        assert_eq!(reconcile_cells(cell(2, b"a"), cell(1, b"z")).value, b"a");
        let t = Cell::tombstone(1, 5, 100);
        assert_eq!(
            reconcile_cells(cell(5, b"z"), t.clone()).kind,
            CellKind::Tombstone
        );
        assert_eq!(
            reconcile_cells(t.clone(), cell(5, b"z")).kind,
            CellKind::Tombstone
        );
        assert_eq!(reconcile_cells(cell(5, b"a"), cell(5, b"b")).value, b"b");
        assert_eq!(reconcile_cells(cell(5, b"b"), cell(5, b"a")).value, b"b");
        let e = Cell::expiring(1, 5, 10, 100, b"b".to_vec());
        assert_eq!(
            reconcile_cells(cell(5, b"b"), e.clone()).kind,
            CellKind::Expiring
        );
        assert_eq!(reconcile_cells(e, cell(5, b"b")).kind, CellKind::Expiring);
    }

    #[test]
    fn counter_cells_merge_and_a_tombstone_beats_them_at_any_timestamp() {
        use crate::counter::{encode, total, Shard};
        let ctx = |id: u8, clock: i64, count: i64| {
            encode(&[Shard {
                id: [id; 16],
                clock,
                count,
                local: false,
            }])
        };
        let a = Cell::counter(0, 10, ctx(1, 3, 5));
        let b = Cell::counter(0, 20, ctx(2, 1, 7));
        let merged = reconcile_cells(a.clone(), b.clone());
        assert_eq!(merged.kind, CellKind::Counter);
        assert_eq!(merged.timestamp_micros, 20);
        assert_eq!(total(&merged.value).unwrap(), 12);
        assert_eq!(merged.read_value().unwrap().as_ref(), &12i64.to_be_bytes());
        // Deleted stays deleted: a later increment does not come back.
        let t = Cell::tombstone(0, 5, 100);
        assert_eq!(
            reconcile_cells(t.clone(), b.clone()).kind,
            CellKind::Tombstone
        );
        assert_eq!(
            reconcile_cells(b.clone(), t.clone()).kind,
            CellKind::Tombstone
        );
        // A row of counter cells is never superseded whole: the cells merge.
        let mut older = Row::new(Vec::new());
        older.add_cell(a);
        let mut newer = Row::new(Vec::new());
        newer.add_cell(b);
        assert!(!older.superseded_by(&newer));
        assert_eq!(total(&older.merge(newer).cells[0].value).unwrap(), 12);
    }

    #[test]
    fn reconciliation_is_commutative_and_associative() {
        let now = 100;
        let versions = vec![
            cell(1, b"a"),
            cell(2, b"b"),
            cell(2, b"c"),
            Cell::tombstone(1, 2, now),
            Cell::tombstone(1, 2, now + 1),
            Cell::expiring(1, 2, 5, now, b"c".to_vec()),
            Cell::expiring(1, 2, 7, now, b"c".to_vec()),
            Cell::expiring(1, 3, 7, now, b"a".to_vec()),
        ];
        for a in &versions {
            for b in &versions {
                assert_eq!(
                    reconcile_cells(a.clone(), b.clone()),
                    reconcile_cells(b.clone(), a.clone())
                );
                for c in &versions {
                    let l = reconcile_cells(reconcile_cells(a.clone(), b.clone()), c.clone());
                    let r = reconcile_cells(a.clone(), reconcile_cells(b.clone(), c.clone()));
                    assert_eq!(l, r);
                }
            }
        }
    }

    #[test]
    fn deletion_shadows_equal_and_older_timestamps() {
        let d = DeletionTime::new(10, 50);
        assert!(d.deletes(10));
        assert!(d.deletes(-3));
        assert!(!d.deletes(11));
        assert!(!DeletionTime::LIVE.deletes(i64::MIN + 1));
    }

    #[test]
    fn into_live_view_equals_live_view() {
        let mut r = Row::new(b"ck".to_vec());
        r.liveness = LivenessInfo::expiring(100, 10, 50);
        r.deletion = DeletionTime::new(90, 40);
        r.add_cell(Cell::live(0, 95, b"a".to_vec()));
        r.add_cell(Cell::live(1, 80, b"b".to_vec()));
        r.add_cell(Cell::expiring(2, 120, 5, 50, b"c".to_vec()));
        r.add_cell(Cell::tombstone(3, 130, 50));
        for covering in [
            DeletionTime::LIVE,
            DeletionTime::new(96, 40),
            DeletionTime::new(200, 40),
        ] {
            for now in [50, 56, 61] {
                assert_eq!(
                    r.clone().into_live_view(covering, now),
                    r.live_view(covering, now),
                    "{covering:?} at {now}"
                );
            }
        }
    }

    #[test]
    fn row_marker_keeps_row_alive_after_cells_deleted() {
        // INSERT (marker) then delete every column: the row stays, with nulls.
        let mut inserted = Row::new(b"k".to_vec());
        inserted.liveness = LivenessInfo::new(1);
        inserted.add_cell(Cell::live(0, 1, b"v".to_vec()));
        let mut del = Row::new(b"k".to_vec());
        del.add_cell(Cell::tombstone(0, 2, 100));
        let merged = inserted.merge(del.clone());
        let view = merged
            .live_view(DeletionTime::LIVE, 100)
            .expect("row with marker exists");
        assert!(view.cells.is_empty());
        // UPDATE (no marker) then the same delete: the row vanishes.
        let mut updated = Row::new(b"k".to_vec());
        updated.add_cell(Cell::live(0, 1, b"v".to_vec()));
        assert!(updated
            .merge(del)
            .live_view(DeletionTime::LIVE, 100)
            .is_none());
    }

    #[test]
    fn expired_cells_and_markers_disappear() {
        let mut r = Row::new(Vec::new());
        r.liveness = LivenessInfo::expiring(1, 10, 100);
        r.add_cell(Cell::expiring(0, 1, 10, 100, b"x".to_vec()));
        assert!(r.live_view(DeletionTime::LIVE, 109).is_some());
        assert!(r.live_view(DeletionTime::LIVE, 110).is_none());
    }

    #[test]
    fn prefix_bounds() {
        let all = ClusteringRange::ALL;
        assert!(all.contains(b""));
        assert!(all.contains(b"\xff\xff"));
        let r = ClusteringRange {
            start: ClusteringBound::exclusive(b"ab".to_vec()),
            end: ClusteringBound::inclusive(b"c".to_vec()),
        };
        assert!(!r.contains(b"ab"));
        assert!(
            !r.contains(b"abz"),
            "exclusive prefix start excludes every extension"
        );
        assert!(r.contains(b"ac"));
        assert!(r.contains(b"c"));
        assert!(
            r.contains(b"cz"),
            "inclusive prefix end includes every extension"
        );
        assert!(!r.contains(b"d"));
        let half_open = ClusteringRange {
            start: ClusteringBound::inclusive(b"b".to_vec()),
            end: ClusteringBound::exclusive(b"c".to_vec()),
        };
        assert!(half_open.contains(b"bzz"));
        assert!(!half_open.contains(b"c"));
        assert!(!half_open.contains(b"ca"));
    }

    #[test]
    fn partition_deletion_covering_takes_strongest() {
        let mut pd = PartitionDeletion {
            partition: Some(DeletionTime::new(5, 1)),
            ranges: vec![],
        };
        pd.merge(&PartitionDeletion {
            partition: None,
            ranges: vec![RangeTombstone {
                range: ClusteringRange {
                    start: ClusteringBound::inclusive(b"a".to_vec()),
                    end: ClusteringBound::inclusive(b"b".to_vec()),
                },
                deletion: DeletionTime::new(9, 2),
            }],
        });
        assert_eq!(pd.covering(b"a1").marked_for_delete_at_micros, 9);
        assert_eq!(pd.covering(b"c").marked_for_delete_at_micros, 5);
        assert_eq!(pd.max_timestamp(), 9);
    }

    #[test]
    fn update_rows_stay_sorted_and_unique() {
        let mut u = PartitionUpdate::new(DecoratedKey {
            token: 0,
            key: Arc::from(&b"k"[..]),
        });
        for c in [b"c", b"a", b"b", b"a"] {
            let mut r = Row::new(c.to_vec());
            r.add_cell(Cell::live(0, 1, c.to_vec()));
            u.add_row(r);
        }
        let keys: Vec<_> = u.rows.iter().map(|r| r.clustering.clone()).collect();
        assert_eq!(keys, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    }

    /// `superseded_by` is exact when it says yes: merging gives the newer row,
    /// on random rows built to collide in columns, timestamps and kinds.
    #[test]
    fn superseded_by_agrees_with_merge() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(33);
        let (mut yes, mut no) = (0, 0);
        for i in 0..20_000 {
            let old = colliding_row(&mut rng, i % 2 == 0);
            let new = colliding_row(&mut rng, i % 2 == 0);
            if old.superseded_by(&new) {
                yes += 1;
                assert_eq!(old.clone().merge(new.clone()), new, "{old:?} / {new:?}");
            } else {
                no += 1;
            }
        }
        assert!(yes > 100 && no > 100, "{yes} superseded, {no} not");
    }

    fn element(ts: i64, path: u8) -> Cell {
        Cell {
            path: Some(vec![path].into_boxed_slice()),
            ..Cell::live(3, ts, vec![path])
        }
    }

    fn paths(r: &Row) -> Vec<(ColumnId, Vec<u8>)> {
        r.cells
            .iter()
            .map(|c| (c.column, c.path.as_deref().unwrap_or(&[9]).to_vec()))
            .collect()
    }

    /// A complex deletion shadows its column's elements written at or before
    /// it, in either merge order, and nothing else: not newer elements, not
    /// other columns, not the simple cell of its own column id.
    #[test]
    fn complex_deletion_shadows_older_elements_of_its_column() {
        let mut old = Row::new(Vec::new());
        old.add_cell(Cell::live(3, 1, b"simple".to_vec()));
        old.add_cell(element(10, 1));
        old.add_cell(element(15, 2));
        old.add_cell(element(20, 3));
        old.add_cell(Cell {
            path: Some(vec![1].into_boxed_slice()),
            ..Cell::live(4, 5, Vec::new())
        });
        let mut new = Row::new(Vec::new());
        new.add_cell(Cell::complex_deletion(3, 15, 100));
        new.add_cell(element(16, 4));
        let merged = old.clone().merge(new.clone());
        assert_eq!(merged, new.clone().merge(old.clone()));
        assert_eq!(
            paths(&merged),
            vec![
                (3, vec![9]),
                (3, vec![]),
                (3, vec![3]),
                (3, vec![4]),
                (4, vec![1])
            ]
        );
        // Unmerged versions read the same: the view applies the deletion.
        let mut unmerged = old.clone();
        unmerged.cells.extend(new.cells.iter().cloned());
        unmerged.cells.sort_by(|a, b| a.cmp_position(b));
        let view = unmerged.live_view(DeletionTime::LIVE, 100).expect("live");
        assert_eq!(
            paths(&view),
            vec![(3, vec![9]), (3, vec![3]), (3, vec![4]), (4, vec![1])]
        );
        assert_eq!(unmerged.into_live_view(DeletionTime::LIVE, 100), Some(view));
        // A later deletion wins over an earlier one, whatever the order.
        let later = Cell::complex_deletion(3, 30, 90);
        let earlier = Cell::complex_deletion(3, 20, 110);
        assert_eq!(reconcile_cells(later.clone(), earlier.clone()), later);
        assert_eq!(reconcile_cells(earlier, later.clone()), later);
    }

    /// Merging rows with complex deletions is associative (compaction order
    /// does not matter) on random rows built to collide.
    #[test]
    fn merges_with_complex_deletions_are_associative() {
        use rand::SeedableRng;
        let mut rng = rand::rngs::StdRng::seed_from_u64(7);
        let mut shadowed = 0;
        for _ in 0..20_000 {
            let (a, b, c) = (
                colliding_row(&mut rng, true),
                colliding_row(&mut rng, true),
                colliding_row(&mut rng, true),
            );
            let l = a.clone().merge(b.clone()).merge(c.clone());
            let r = a.clone().merge(b.clone().merge(c.clone()));
            assert_eq!(l, r, "{a:?} / {b:?} / {c:?}");
            let all = a.cells.len() + b.cells.len() + c.cells.len();
            shadowed += usize::from(l.cells.len() + 2 < all);
        }
        assert!(shadowed > 100, "{shadowed} merges dropped elements");
    }

    /// `merge_many` gives what merging the same rows pairwise gives, in
    /// either order, on random rows built to collide (complex deletions and
    /// elements included).
    #[test]
    fn merge_many_equals_pairwise_merges() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(41);
        assert_eq!(Row::merge_many(Vec::new()), None);
        let mut multi = 0;
        for _ in 0..20_000 {
            let n = rng.gen_range(1..6);
            let rows: Vec<Row> = (0..n).map(|_| colliding_row(&mut rng, true)).collect();
            let forward = rows.iter().cloned().reduce(Row::merge);
            let backward = rows.iter().rev().cloned().reduce(Row::merge);
            let many = Row::merge_many(rows.clone());
            assert_eq!(many, forward, "{rows:?}");
            assert_eq!(many, backward, "{rows:?}");
            multi += usize::from(n > 2);
        }
        assert!(multi > 5_000, "{multi} merges of three rows or more");
    }
}
