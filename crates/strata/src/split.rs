//! Output splitting: how a token-ordered stream of partitions (a flush, or the
//! merged stream of a compaction) is cut into sstables.
//!
//! A compaction task and a flush each carry an [`OutputSplit`]; the writer side
//! routes every partition through an [`OutputSet`], which keeps one open output
//! per *bucket* and rolls an output over when it reaches the rule's size:
//!
//! | rule | bucket of a piece | used by |
//! |---|---|---|
//! | [`OutputSplit::None`] | always 0, never rolled over | one-to-one rewrites (recompression, scrub), STCS |
//! | [`OutputSplit::Size`] | always 0, rolled over at `max_bytes` | LCS (`sstable_size_in_mb`) |
//! | [`OutputSplit::Token`] | the token shard holding the partition | unified compaction's shards |
//! | [`OutputSplit::TimeWindow`] | the window of each cell's write timestamp | TWCS/DTCS segregation |
//!
//! Time windows cut *inside* partitions: a partition whose cells were written in
//! three windows becomes three pieces, one per window, each holding the cells,
//! row markers, row deletions, range tombstones and partition deletion whose
//! timestamps fall in that window. This is safe because reconciliation is
//! commutative and per cell (DESIGN.md §2): a read merges the pieces back, and a
//! tombstone separated from the data it shadows is still not purged while an
//! sstable overlapping its partition holds older data (Cassandra's purge rule,
//! `compaction::purge`). It is what lets a few old-timestamp writes land in an
//! sstable of their own window instead of stretching a new sstable's time range.
//!
//! Who calls: one thread owns an `OutputSet` (the flush or compaction thread).
//! Deciding (which rule, which boundaries) is the strategy's job; this module
//! only applies a rule.
//!
//! Invariants:
//! 1. Every cell, marker, row deletion, range tombstone and partition deletion of
//!    the input appears in exactly one output piece; merging the pieces gives the
//!    input back (`split_by_window` property test).
//! 2. Within one output, partitions stay in strictly increasing key order: pieces
//!    reach an output in input order, and an input partition contributes at most
//!    one piece to each bucket.
//! 3. An output is rolled over only between partitions, never inside one.
//! 4. At most `max_open` outputs are open at once; when a new bucket would exceed
//!    that, the least recently written output is finished first (a later piece of
//!    its bucket starts a new output). Token buckets arrive in order, so the
//!    previous shard's output is finished as soon as the next shard begins.

use crate::data::{DecoratedKey, PartitionDeletion, PartitionUpdate, Row, NO_TIMESTAMP};
use crate::error::{Error, Result};
use crate::sstable::{EncodedPartition, SSTableReader, SSTableWriter};
use std::sync::Arc;

/// How outputs are cut. Sizes are on-disk (compressed) bytes as the writer
/// reports its position.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum OutputSplit {
    /// One output for everything.
    None,
    /// A new output once the current one reaches `max_bytes` (LCS's
    /// `sstable_size_in_mb`; RocksDB's `target_file_size_base`).
    Size { max_bytes: u64 },
    /// Outputs never straddle a token boundary: `boundaries` (strictly
    /// increasing) cut the ring into `boundaries.len() + 1` shards, shard `i`
    /// holding tokens in `[boundaries[i-1], boundaries[i])`. Each shard also rolls
    /// over at `max_bytes` (`u64::MAX`: never).
    Token {
        boundaries: Arc<[i64]>,
        max_bytes: u64,
    },
    /// Every piece of data goes to the output of the window its write timestamp
    /// falls in: window `w` holds timestamps in `[w * window, (w + 1) * window)`,
    /// aligned to the epoch as TWCS's windows are. `window` is in the unit of
    /// the table's write timestamps: microseconds, unless the strategy's
    /// `timestamp_resolution` says clients write another unit. Each window rolls
    /// over at `max_bytes` (`u64::MAX`: never).
    TimeWindow { window: i64, max_bytes: u64 },
}

impl OutputSplit {
    /// Checks the rule's parameters; an error names what is wrong.
    pub fn validate(&self) -> Result<()> {
        match self {
            OutputSplit::None => Ok(()),
            OutputSplit::Size { max_bytes } | OutputSplit::Token { max_bytes, .. }
                if *max_bytes == 0 =>
            {
                Err(Error::InvalidInput(
                    "output split: max_bytes must be at least 1".into(),
                ))
            }
            OutputSplit::Size { .. } => Ok(()),
            OutputSplit::Token { boundaries, .. } => {
                if boundaries.windows(2).any(|w| w[0] >= w[1]) {
                    return Err(Error::InvalidInput(
                        "output split: token boundaries must strictly increase".into(),
                    ));
                }
                Ok(())
            }
            OutputSplit::TimeWindow { window, max_bytes } => {
                if *window <= 0 {
                    return Err(Error::InvalidInput(format!(
                        "output split: a time window must be positive, got {window}"
                    )));
                }
                if *max_bytes == 0 {
                    return Err(Error::InvalidInput(
                        "output split: max_bytes must be at least 1".into(),
                    ));
                }
                Ok(())
            }
        }
    }

    /// The size at which an output of this rule rolls over.
    pub fn max_bytes(&self) -> u64 {
        match self {
            OutputSplit::None => u64::MAX,
            OutputSplit::Size { max_bytes }
            | OutputSplit::Token { max_bytes, .. }
            | OutputSplit::TimeWindow { max_bytes, .. } => *max_bytes,
        }
    }

    /// Whether every partition goes whole to one output (every rule but
    /// `TimeWindow`), so a flush may hand over rows still encoded.
    pub fn keeps_partitions_whole(&self) -> bool {
        !matches!(self, OutputSplit::TimeWindow { .. })
    }

    /// Cuts one partition into `(bucket, piece)` pairs, buckets ascending. Every
    /// rule but `TimeWindow` yields the partition whole.
    pub fn pieces(&self, p: PartitionUpdate) -> Vec<(i64, PartitionUpdate)> {
        match self {
            OutputSplit::None | OutputSplit::Size { .. } => vec![(0, p)],
            OutputSplit::Token { boundaries, .. } => {
                vec![(token_shard(boundaries, p.key.token) as i64, p)]
            }
            OutputSplit::TimeWindow { window, .. } => split_by_window(p, *window),
        }
    }
}

/// The shard of `token` under `boundaries` (see [`OutputSplit::Token`]).
pub fn token_shard(boundaries: &[i64], token: i64) -> usize {
    boundaries.partition_point(|&b| b <= token)
}

/// The window holding `timestamp` (floor division, so timestamps before
/// the epoch get negative windows rather than sharing window 0).
pub fn window_of(timestamp: i64, window: i64) -> i64 {
    timestamp.div_euclid(window)
}

/// Cuts `p` by the write timestamps of its parts (invariant 1). Parts without a
/// timestamp (an empty marker, a live deletion) belong nowhere and are dropped,
/// as they carry no data. A partition with no timestamped part at all (which a
/// writer never produces) yields nothing.
pub fn split_by_window(p: PartitionUpdate, window: i64) -> Vec<(i64, PartitionUpdate)> {
    let key = p.key.clone();
    let new_piece = || PartitionUpdate::new(key.clone());
    let mut pieces: Vec<(i64, PartitionUpdate)> = split_header(p.deletion, p.static_row, window)
        .into_iter()
        .map(|(w, (deletion, static_row))| {
            let mut piece = new_piece();
            piece.deletion = deletion;
            piece.static_row = static_row;
            (w, piece)
        })
        .collect();
    // Rows arrive sorted and each contributes at most one row to a window, so
    // pushing keeps every piece's rows sorted and unique.
    for row in p.rows {
        for (w, r) in split_row(row, window) {
            slot(&mut pieces, w, new_piece).rows.push(r);
        }
    }
    pieces
}

/// One row cut by timestamps: marker, row deletion and each cell to its window.
fn split_row(row: Row, window: i64) -> Vec<(i64, Row)> {
    let mut out: Vec<(i64, Row)> = Vec::new();
    let clustering = row.clustering;
    let new_row = || Row::new(clustering.clone());
    if row.liveness.timestamp_micros != NO_TIMESTAMP {
        let w = window_of(row.liveness.timestamp_micros, window);
        slot(&mut out, w, new_row).liveness = row.liveness;
    }
    if !row.deletion.is_live() {
        let w = window_of(row.deletion.marked_for_delete_at_micros, window);
        slot(&mut out, w, new_row).deletion = row.deletion;
    }
    // Cells are sorted by (column, path); each window receives a subsequence, so
    // its cells stay sorted.
    for cell in row.cells {
        let w = window_of(cell.timestamp_micros, window);
        slot(&mut out, w, new_row).cells.push(cell);
    }
    out
}

/// A partition's deletions and static row cut by window, windows ascending:
/// the pieces [`split_by_window`] starts a partition's pieces with.
fn split_header(
    deletion: PartitionDeletion,
    static_row: Option<Row>,
    window: i64,
) -> Vec<(i64, (PartitionDeletion, Option<Row>))> {
    let mut pieces: Vec<(i64, (PartitionDeletion, Option<Row>))> = Vec::new();
    let empty = || (PartitionDeletion::default(), None);
    if let Some(d) = deletion.partition {
        if !d.is_live() {
            let w = window_of(d.marked_for_delete_at_micros, window);
            slot(&mut pieces, w, empty).0.partition = Some(d);
        }
    }
    for rt in deletion.ranges {
        let w = window_of(rt.deletion.marked_for_delete_at_micros, window);
        slot(&mut pieces, w, empty).0.ranges.push(rt);
    }
    if let Some(row) = static_row {
        for (w, r) in split_row(row, window) {
            slot(&mut pieces, w, empty).1 = Some(r);
        }
    }
    pieces
}

/// The entry for window `w` in a vector sorted by window, created by `make` if
/// absent. A partition rarely spans more than a few windows, so a small sorted
/// vector beats a map.
fn slot<T>(v: &mut Vec<(i64, T)>, w: i64, make: impl FnOnce() -> T) -> &mut T {
    let i = match v.binary_search_by_key(&w, |(vw, _)| *vw) {
        Ok(i) => i,
        Err(i) => {
            v.insert(i, (w, make()));
            i
        }
    };
    &mut v[i].1
}

/// One output being written: the writer side of an [`OutputSet`].
pub trait OutputSink {
    fn append(&mut self, p: &PartitionUpdate) -> Result<()>;
    /// Appends a partition with encoded rows. By default decoded and appended;
    /// the sstable writer copies the rows as they are.
    fn append_encoded(&mut self, p: &EncodedPartition<'_>) -> Result<()> {
        let decoded = p.decode().map_err(|e| {
            Error::InvalidInput(format!(
                "an encoded row of partition token {} does not parse: {}",
                p.key.token, e.0
            ))
        })?;
        self.append(&decoded)
    }
    /// Starts a partition appended a row at a time (then `append_row`,
    /// `end_partition`): what the sstable writer's
    /// [`begin_partition`](SSTableWriter::begin_partition) does.
    fn begin_partition(
        &mut self,
        key: DecoratedKey,
        deletion: PartitionDeletion,
        static_row: Option<Row>,
    ) -> Result<()>;
    fn append_row(&mut self, row: Row) -> Result<()>;
    /// Ends the partition; whether anything was written.
    fn end_partition(&mut self) -> Result<bool>;
    /// Bytes written so far (the roll-over measure).
    fn position(&self) -> u64;
}

/// Creates, finishes and abandons outputs for an [`OutputSet`]. The engine's
/// implementation creates sstable writers; tests use an in-memory one.
pub trait OutputFactory {
    type Sink: OutputSink;
    type Finished;
    /// Opens a new output for `bucket`.
    fn create(&mut self, bucket: i64) -> Result<Self::Sink>;
    /// Completes an output (for an sstable: fsync, rename, open for reading).
    fn finish(&mut self, sink: Self::Sink) -> Result<Self::Finished>;
    /// Throws an unfinished output away (its partial file is removed).
    fn abort(&mut self, sink: Self::Sink);
}

/// A finished output and the bucket it was written for (a token shard, a time
/// window, or 0).
#[derive(Debug)]
pub struct FinishedOutput<T> {
    pub bucket: i64,
    pub output: T,
    pub bytes: u64,
}

struct Open<S> {
    bucket: i64,
    sink: S,
    /// Sequence number of the last append, for least-recently-written eviction.
    last_write: u64,
    /// Whether any partition was written to it: a streamed partition the
    /// merge purged whole writes nothing, and an output that received only
    /// such partitions is aborted, not finished empty.
    wrote: bool,
}

/// Routes partitions to outputs under one [`OutputSplit`] (invariants 2-4).
pub struct OutputSet<F: OutputFactory> {
    rule: OutputSplit,
    factory: F,
    open: Vec<Open<F::Sink>>,
    finished: Vec<FinishedOutput<F::Finished>>,
    max_open: usize,
    writes: u64,
    /// Bytes of finished outputs plus positions of open ones, as of the last call.
    bytes_written: u64,
    /// The partition being appended a row at a time, if one is.
    streamed: Option<StreamedPartition>,
}

/// A partition an [`OutputSet`] receives a row at a time
/// ([`OutputSet::begin_partition`]): the buckets it has a piece open in.
struct StreamedPartition {
    key: DecoratedKey,
    /// Buckets whose output has this partition begun, in the order begun.
    begun: Vec<i64>,
    /// Whether an output that already ended its piece wrote something (an
    /// output finished early to cap the open ones, invariant 4).
    wrote: bool,
}

/// Open outputs allowed at once by default: enough for every window a normal
/// out-of-order backlog touches, few enough that file handles and per-writer
/// buffers (one chunk, an index block and a Bloom filter each) stay small.
pub const DEFAULT_MAX_OPEN_OUTPUTS: usize = 32;

impl<F: OutputFactory> OutputSet<F> {
    pub fn new(rule: OutputSplit, factory: F) -> Result<OutputSet<F>> {
        rule.validate()?;
        Ok(OutputSet {
            rule,
            factory,
            open: Vec::new(),
            finished: Vec::new(),
            max_open: DEFAULT_MAX_OPEN_OUTPUTS,
            writes: 0,
            bytes_written: 0,
            streamed: None,
        })
    }

    /// Caps the outputs open at once (at least 1).
    pub fn with_max_open(mut self, max_open: usize) -> OutputSet<F> {
        self.max_open = max_open.max(1);
        self
    }

    pub fn rule(&self) -> &OutputSplit {
        &self.rule
    }

    /// Bytes written to every output so far, finished or open.
    pub fn bytes_written(&self) -> u64 {
        self.bytes_written
    }

    /// Appends one partition, cut into pieces by the rule. On error the set is
    /// unusable: call [`OutputSet::abort`].
    pub fn append(&mut self, p: PartitionUpdate) -> Result<()> {
        self.check_not_streaming()?;
        for (bucket, piece) in self.rule.pieces(p) {
            self.append_piece(bucket, &piece)?;
        }
        Ok(())
    }

    /// As [`OutputSet::append`] for a partition whose rows are already encoded
    /// (a flush from the memtable), which goes whole to one output. A rule
    /// that cuts inside partitions (time windows) needs the rows decoded: the
    /// caller checks [`OutputSplit::keeps_partitions_whole`]; here it is
    /// `InvalidInput` and nothing is written.
    pub fn append_encoded(&mut self, p: &EncodedPartition<'_>) -> Result<()> {
        self.check_not_streaming()?;
        let bucket = match &self.rule {
            OutputSplit::None | OutputSplit::Size { .. } => 0,
            OutputSplit::Token { boundaries, .. } => token_shard(boundaries, p.key.token) as i64,
            OutputSplit::TimeWindow { .. } => {
                return Err(Error::InvalidInput(
                    "output split: time windows cut partitions, which needs them decoded".into(),
                ))
            }
        };
        self.append_with(bucket, |sink| sink.append_encoded(p))
    }

    /// Starts a partition appended a row at a time ([`append_row`](Self::append_row),
    /// then [`end_partition`](Self::end_partition)), so that no part of the
    /// pipeline holds it whole (a compaction's merge, a time-window flush).
    /// Under the time-window rule its deletions and static row are cut by
    /// window now and each row as it comes, into the same pieces
    /// [`append`](Self::append) cuts the whole partition into; every output
    /// a piece goes to has the partition open until it ends. Outputs roll
    /// over only once it ends (invariant 3). On error the set is unusable:
    /// call [`OutputSet::abort`].
    pub fn begin_partition(
        &mut self,
        key: DecoratedKey,
        deletion: PartitionDeletion,
        static_row: Option<Row>,
    ) -> Result<()> {
        self.check_not_streaming()?;
        self.streamed = Some(StreamedPartition {
            key: key.clone(),
            begun: Vec::new(),
            wrote: false,
        });
        match &self.rule {
            OutputSplit::TimeWindow { window, .. } => {
                let window = *window;
                for (w, (d, s)) in split_header(deletion, static_row, window) {
                    self.begin_piece(w, &key, d, s)?;
                }
                Ok(())
            }
            OutputSplit::None | OutputSplit::Size { .. } => {
                self.begin_piece(0, &key, deletion, static_row)
            }
            OutputSplit::Token { boundaries, .. } => {
                let bucket = token_shard(boundaries, key.token) as i64;
                self.begin_piece(bucket, &key, deletion, static_row)
            }
        }
    }

    /// Appends the next row (strictly after the previous one by
    /// clustering) of the partition begun by
    /// [`begin_partition`](Self::begin_partition).
    pub fn append_row(&mut self, row: Row) -> Result<()> {
        let Some(s) = self.streamed.as_ref() else {
            return Err(Error::InvalidInput(
                "output split: a row appended outside a partition".into(),
            ));
        };
        match &self.rule {
            OutputSplit::TimeWindow { window, .. } => {
                let (window, key) = (*window, s.key.clone());
                for (w, r) in split_row(row, window) {
                    let begun = self.streamed.as_ref().is_some_and(|s| s.begun.contains(&w));
                    if !begun {
                        self.begin_piece(w, &key, PartitionDeletion::default(), None)?;
                    }
                    self.row_to(w, r)?;
                }
                Ok(())
            }
            _ => {
                let bucket = s.begun.first().copied().ok_or_else(|| {
                    Error::InvalidInput("output split: the partition's output is gone".into())
                })?;
                self.row_to(bucket, row)
            }
        }
    }

    /// Ends the partition begun by [`begin_partition`](Self::begin_partition)
    /// in every output holding a piece of it, then rolls over what reached
    /// the rule's size; returns whether anything of it was written.
    pub fn end_partition(&mut self) -> Result<bool> {
        let Some(s) = self.streamed.take() else {
            return Err(Error::InvalidInput(
                "output split: a partition ended that was not begun".into(),
            ));
        };
        let mut wrote = s.wrote;
        let mut begun = s.begun;
        begun.sort_unstable();
        for &b in &begun {
            let i = self.open_index(b)?;
            let o = &mut self.open[i];
            let before = o.sink.position();
            let ended = o.sink.end_partition()?;
            o.wrote |= ended;
            wrote |= ended;
            self.bytes_written += o.sink.position().saturating_sub(before);
        }
        let max_bytes = self.rule.max_bytes();
        for b in begun {
            if let Some(i) = self.open.iter().position(|o| o.bucket == b) {
                if self.open[i].sink.position() >= max_bytes {
                    self.finish_open(i)?;
                }
            }
        }
        Ok(wrote)
    }

    fn check_not_streaming(&self) -> Result<()> {
        match self.streamed {
            Some(_) => Err(Error::InvalidInput(
                "output split: a partition begun and not ended".into(),
            )),
            None => Ok(()),
        }
    }

    /// The open output of `bucket`, which holds a piece of the streamed
    /// partition.
    fn open_index(&self, bucket: i64) -> Result<usize> {
        self.open
            .iter()
            .position(|o| o.bucket == bucket)
            .ok_or_else(|| {
                Error::InvalidInput(format!("output split: no open output for bucket {bucket}"))
            })
    }

    /// Begins the streamed partition's piece in `bucket`'s output.
    fn begin_piece(
        &mut self,
        bucket: i64,
        key: &DecoratedKey,
        deletion: PartitionDeletion,
        static_row: Option<Row>,
    ) -> Result<()> {
        let i = self.route(bucket)?;
        self.writes += 1;
        let o = &mut self.open[i];
        let before = o.sink.position();
        o.sink.begin_partition(key.clone(), deletion, static_row)?;
        o.last_write = self.writes;
        self.bytes_written += o.sink.position().saturating_sub(before);
        if let Some(s) = self.streamed.as_mut() {
            s.begun.push(bucket);
        }
        Ok(())
    }

    /// Appends a row of the streamed partition to `bucket`'s output.
    fn row_to(&mut self, bucket: i64, row: Row) -> Result<()> {
        let i = self.open_index(bucket)?;
        self.writes += 1;
        let o = &mut self.open[i];
        let before = o.sink.position();
        o.sink.append_row(row)?;
        o.last_write = self.writes;
        self.bytes_written += o.sink.position().saturating_sub(before);
        Ok(())
    }

    fn append_piece(&mut self, bucket: i64, piece: &PartitionUpdate) -> Result<()> {
        self.append_with(bucket, |sink| sink.append(piece))
    }

    /// Routes one piece to `bucket`'s output (opening, evicting and rolling
    /// over as the rule says); `write` appends it to the sink.
    fn append_with(
        &mut self,
        bucket: i64,
        write: impl FnOnce(&mut F::Sink) -> Result<()>,
    ) -> Result<()> {
        let max_bytes = self.rule.max_bytes();
        let i = self.route(bucket)?;
        self.writes += 1;
        let o = &mut self.open[i];
        let before = o.sink.position();
        write(&mut o.sink)?;
        o.wrote = true;
        o.last_write = self.writes;
        let after = o.sink.position();
        self.bytes_written += after.saturating_sub(before);
        if after >= max_bytes {
            self.finish_open(i)?;
        }
        Ok(())
    }

    /// The index of `bucket`'s open output, opening one (and finishing
    /// what the rule says is done, or the least recently written output
    /// when too many are open) as needed.
    fn route(&mut self, bucket: i64) -> Result<usize> {
        if matches!(self.rule, OutputSplit::Token { .. }) {
            // Shards arrive in token order: an earlier shard's output is done.
            let done: Vec<usize> = (0..self.open.len())
                .filter(|&i| self.open[i].bucket < bucket)
                .collect();
            for i in done.into_iter().rev() {
                self.finish_open(i)?;
            }
        }
        if let Some(i) = self.open.iter().position(|o| o.bucket == bucket) {
            return Ok(i);
        }
        if self.open.len() >= self.max_open {
            let lru = (0..self.open.len())
                .min_by_key(|&i| self.open[i].last_write)
                .unwrap_or(0);
            self.finish_open(lru)?;
        }
        let sink = self.factory.create(bucket)?;
        self.open.push(Open {
            wrote: false,
            bucket,
            sink,
            last_write: 0,
        });
        Ok(self.open.len() - 1)
    }

    fn finish_open(&mut self, i: usize) -> Result<()> {
        let mut o = self.open.swap_remove(i);
        // An output finished while it holds a piece of the streamed
        // partition (too many outputs open) ends the piece first; a later
        // part of that window starts a new output.
        if let Some(s) = self.streamed.as_mut() {
            if let Some(j) = s.begun.iter().position(|&b| b == o.bucket) {
                s.begun.remove(j);
                let before = o.sink.position();
                let ended = o.sink.end_partition()?;
                o.wrote |= ended;
                s.wrote |= ended;
                self.bytes_written += o.sink.position().saturating_sub(before);
            }
        }
        if !o.wrote {
            self.factory.abort(o.sink);
            return Ok(());
        }
        let bytes = o.sink.position();
        let output = self.factory.finish(o.sink)?;
        self.finished.push(FinishedOutput {
            bucket: o.bucket,
            output,
            bytes,
        });
        Ok(())
    }

    /// Finishes every open output and returns all outputs, ordered by bucket and
    /// then by creation. On error the unfinished outputs are aborted and the
    /// finished ones are returned with the error for the caller to discard.
    pub fn finish(
        mut self,
    ) -> std::result::Result<Vec<FinishedOutput<F::Finished>>, FinishError<F>> {
        self.open.sort_by_key(|o| o.bucket);
        while !self.open.is_empty() {
            if let Err(error) = self.finish_open(0) {
                return Err(self.into_error(error));
            }
        }
        // A stable sort keeps roll-over order within a bucket.
        self.finished.sort_by_key(|f| f.bucket);
        Ok(self.finished)
    }

    /// Aborts every open output; returns the finished ones for the caller to
    /// discard (mark obsolete).
    pub fn abort(mut self) -> Vec<FinishedOutput<F::Finished>> {
        for o in self.open.drain(..) {
            self.factory.abort(o.sink);
        }
        self.finished
    }

    fn into_error(self, error: Error) -> FinishError<F> {
        FinishError {
            error,
            finished: self.abort(),
        }
    }
}

/// A failed [`OutputSet::finish`]: the error and the outputs already finished
/// (to be discarded by the caller).
pub struct FinishError<F: OutputFactory> {
    pub error: Error,
    pub finished: Vec<FinishedOutput<F::Finished>>,
}

impl<F: OutputFactory> std::fmt::Debug for FinishError<F> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} ({} finished outputs)",
            self.error,
            self.finished.len()
        )
    }
}

impl OutputSink for SSTableWriter {
    fn append(&mut self, p: &PartitionUpdate) -> Result<()> {
        SSTableWriter::append(self, p)
    }
    fn append_encoded(&mut self, p: &EncodedPartition<'_>) -> Result<()> {
        SSTableWriter::append_encoded(self, p)
    }
    fn begin_partition(
        &mut self,
        key: DecoratedKey,
        deletion: PartitionDeletion,
        static_row: Option<Row>,
    ) -> Result<()> {
        SSTableWriter::begin_partition(self, key, deletion, static_row)
    }
    fn append_row(&mut self, row: Row) -> Result<()> {
        SSTableWriter::append_row(self, row)
    }
    fn end_partition(&mut self) -> Result<bool> {
        SSTableWriter::end_partition(self)
    }
    fn position(&self) -> u64 {
        SSTableWriter::position(self)
    }
}

/// The engine's outputs: sstable writers made by `create` (which allocates the
/// id and sets level, codec, I/O tag and Bloom filter size), finished into
/// readers. Used by flush and by the compaction executor alike.
pub struct SSTableOutputs<C: FnMut(i64) -> Result<SSTableWriter>> {
    create: C,
}

impl<C: FnMut(i64) -> Result<SSTableWriter>> SSTableOutputs<C> {
    pub fn new(create: C) -> SSTableOutputs<C> {
        SSTableOutputs { create }
    }
}

impl<C: FnMut(i64) -> Result<SSTableWriter>> OutputFactory for SSTableOutputs<C> {
    type Sink = SSTableWriter;
    type Finished = Arc<SSTableReader>;
    fn create(&mut self, bucket: i64) -> Result<SSTableWriter> {
        (self.create)(bucket)
    }
    fn finish(&mut self, sink: SSTableWriter) -> Result<Arc<SSTableReader>> {
        sink.finish()
    }
    fn abort(&mut self, sink: SSTableWriter) {
        sink.abort()
    }
}

/// Expected partitions of one output under `split`, from the inputs' totals,
/// for sizing its Bloom filter: everything for an unsplit output, the size
/// share (plus a margin) for outputs rolled over by size. Time-window and
/// token-shard outputs also take their size share: a filter sized for all
/// partitions would waste memory on every one of several outputs.
pub fn partitions_per_output(split: &OutputSplit, total_partitions: u64, total_bytes: u64) -> u64 {
    let max_bytes = split.max_bytes();
    if max_bytes == u64::MAX {
        return total_partitions;
    }
    let share = (max_bytes as f64 / total_bytes.max(1) as f64).min(1.0);
    (total_partitions as f64 * share * 1.1) as u64 + 16
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{
        Cell, ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo,
        RangeTombstone,
    };
    use crate::read::merge_partition;
    use rand::{Rng, SeedableRng};

    /// An in-memory output: counts bytes as the sum of a fixed cost per row.
    struct MemSink {
        parts: Vec<PartitionUpdate>,
        bytes: u64,
        /// The partition being appended a row at a time.
        streamed: Option<PartitionUpdate>,
    }

    impl OutputSink for MemSink {
        fn append(&mut self, p: &PartitionUpdate) -> Result<()> {
            assert!(
                self.streamed.is_none(),
                "a whole partition inside a streamed one"
            );
            // As the sstable writer, an empty partition writes nothing.
            if p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty() {
                return Ok(());
            }
            if let Some(last) = self.parts.last() {
                assert!(last.key < p.key, "invariant 2: keys increase in an output");
            }
            self.bytes += 10 + 100 * p.rows.len() as u64;
            self.parts.push(p.clone());
            Ok(())
        }
        fn begin_partition(
            &mut self,
            key: DecoratedKey,
            deletion: PartitionDeletion,
            static_row: Option<Row>,
        ) -> Result<()> {
            assert!(self.streamed.is_none(), "a partition begun twice");
            let mut p = PartitionUpdate::new(key);
            p.deletion = deletion;
            p.static_row = static_row;
            self.streamed = Some(p);
            Ok(())
        }
        fn append_row(&mut self, row: Row) -> Result<()> {
            let p = self.streamed.as_mut().expect("a row inside a partition");
            if let Some(last) = p.rows.last() {
                assert!(last.clustering < row.clustering, "rows increase");
            }
            // Costed as `append` costs it: the roll-over point is the same.
            self.bytes += 100;
            p.rows.push(row);
            Ok(())
        }
        fn end_partition(&mut self) -> Result<bool> {
            let p = self.streamed.take().expect("a partition to end");
            if p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty() {
                return Ok(false);
            }
            if let Some(last) = self.parts.last() {
                assert!(last.key < p.key, "invariant 2: keys increase in an output");
            }
            self.bytes += 10;
            self.parts.push(p);
            Ok(true)
        }
        fn position(&self) -> u64 {
            self.bytes
        }
    }

    #[derive(Default)]
    struct MemFactory {
        created: Vec<i64>,
        aborted: usize,
        fail_create_at: Option<usize>,
    }

    impl OutputFactory for MemFactory {
        type Sink = MemSink;
        type Finished = MemSink;
        fn create(&mut self, bucket: i64) -> Result<MemSink> {
            if self.fail_create_at == Some(self.created.len()) {
                return Err(Error::InvalidInput("injected".into()));
            }
            self.created.push(bucket);
            Ok(MemSink {
                parts: Vec::new(),
                bytes: 0,
                streamed: None,
            })
        }
        fn finish(&mut self, sink: MemSink) -> Result<MemSink> {
            Ok(sink)
        }
        fn abort(&mut self, _sink: MemSink) {
            self.aborted += 1;
        }
    }

    fn key(i: u32) -> DecoratedKey {
        DecoratedKey::new(&i.to_be_bytes())
    }

    fn sorted_keys(n: u32) -> Vec<DecoratedKey> {
        let mut keys: Vec<DecoratedKey> = (0..n).map(key).collect();
        keys.sort();
        keys
    }

    fn row(ck: u8, ts: i64) -> Row {
        let mut r = Row::new(vec![ck]);
        r.add_cell(Cell::live(0, ts, vec![ck]));
        r
    }

    fn partition(k: DecoratedKey, rows: usize, ts: i64) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(k);
        for ck in 0..rows {
            p.add_row(row(ck as u8, ts));
        }
        p
    }

    fn run(rule: OutputSplit, parts: Vec<PartitionUpdate>) -> Vec<FinishedOutput<MemSink>> {
        let mut set = OutputSet::new(rule, MemFactory::default()).expect("valid rule");
        for p in parts {
            set.append(p).expect("append");
        }
        set.finish().expect("finish")
    }

    /// As [`run`], each partition appended a row at a time.
    fn run_streamed(
        rule: OutputSplit,
        parts: Vec<PartitionUpdate>,
        max_open: usize,
    ) -> Vec<FinishedOutput<MemSink>> {
        let mut set = OutputSet::new(rule, MemFactory::default())
            .expect("valid rule")
            .with_max_open(max_open);
        for p in parts {
            set.begin_partition(p.key, p.deletion, p.static_row)
                .expect("begin");
            for r in p.rows {
                set.append_row(r).expect("row");
            }
            set.end_partition().expect("end");
        }
        set.finish().expect("finish")
    }

    /// Partitions of random rows whose cells, markers and deletions fall in
    /// a few windows of 10.
    fn random_window_partitions(rng: &mut impl Rng, n: u32) -> Vec<PartitionUpdate> {
        sorted_keys(n)
            .into_iter()
            .map(|k| {
                let mut p = PartitionUpdate::new(k);
                if rng.gen_ratio(1, 4) {
                    p.deletion.partition = Some(DeletionTime::new(rng.gen_range(0..60), 1));
                }
                if rng.gen_ratio(1, 4) {
                    p.deletion.ranges.push(RangeTombstone {
                        range: ClusteringRange {
                            start: ClusteringBound::inclusive(vec![2]),
                            end: ClusteringBound::exclusive(vec![5]),
                        },
                        deletion: DeletionTime::new(rng.gen_range(0..60), 1),
                    });
                }
                if rng.gen_ratio(1, 4) {
                    let mut s = Row::new(Vec::new());
                    s.add_cell(Cell::live(1, rng.gen_range(0..60), vec![1]));
                    p.static_row = Some(s);
                }
                for ck in 0..rng.gen_range(0..8u8) {
                    let mut r = Row::new(vec![ck]);
                    if rng.gen() {
                        r.liveness = LivenessInfo::new(rng.gen_range(0..60));
                    }
                    for c in 0..rng.gen_range(1..4u32) {
                        r.add_cell(Cell::live(c, rng.gen_range(0..60), vec![ck]));
                    }
                    p.rows.push(r);
                }
                p
            })
            .collect()
    }

    fn contents(out: &[FinishedOutput<MemSink>]) -> Vec<(i64, Vec<PartitionUpdate>)> {
        // A streamed output whose partitions were all empty is aborted, not
        // finished (an empty sstable is refused): outputs holding nothing
        // are not part of what either path produced.
        out.iter()
            .filter(|o| !o.output.parts.is_empty())
            .map(|o| (o.bucket, o.output.parts.clone()))
            .collect()
    }

    #[test]
    fn rows_appended_one_at_a_time_reach_the_outputs_whole_partitions_reach() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(20260801);
        let rules = [
            OutputSplit::None,
            OutputSplit::Size { max_bytes: 700 },
            OutputSplit::Token {
                boundaries: Arc::from(&[-(1i64 << 62), 0, 1 << 62][..]),
                max_bytes: 900,
            },
            OutputSplit::TimeWindow {
                window: 10,
                max_bytes: 800,
            },
        ];
        for round in 0..40 {
            let parts = random_window_partitions(&mut rng, 30);
            for rule in &rules {
                let whole = run(rule.clone(), parts.clone());
                let streamed = run_streamed(rule.clone(), parts.clone(), DEFAULT_MAX_OPEN_OUTPUTS);
                assert_eq!(
                    contents(&streamed),
                    contents(&whole),
                    "round {round}, {rule:?}"
                );
            }
            // Fewer open outputs than windows: a window's output is finished
            // inside a partition and a later row of it starts another. Every
            // part still lands once in its window, keys increasing per output.
            let rule = OutputSplit::TimeWindow {
                window: 10,
                max_bytes: u64::MAX,
            };
            let streamed = run_streamed(rule.clone(), parts.clone(), 2);
            let whole = run(rule, parts.clone());
            let by_window = |out: &[FinishedOutput<MemSink>]| {
                let mut m: std::collections::BTreeMap<i64, Vec<PartitionUpdate>> =
                    Default::default();
                for o in out {
                    for p in &o.output.parts {
                        let pieces = m.entry(o.bucket).or_default();
                        match pieces.iter_mut().find(|q| q.key == p.key) {
                            Some(q) => merge_partition(q, p.clone()),
                            None => pieces.push(p.clone()),
                        }
                    }
                }
                for pieces in m.values_mut() {
                    pieces.sort_by(|a, b| a.key.cmp(&b.key));
                }
                m
            };
            assert_eq!(
                by_window(&streamed),
                by_window(&whole),
                "round {round}, capped"
            );
        }
    }

    #[test]
    fn none_writes_one_output_whatever_the_size() {
        let parts: Vec<_> = sorted_keys(50)
            .into_iter()
            .map(|k| partition(k, 20, 1))
            .collect();
        let out = run(OutputSplit::None, parts);
        assert_eq!(out.len(), 1);
        assert_eq!(out[0].output.parts.len(), 50);
    }

    #[test]
    fn size_rolls_over_between_partitions_only() {
        // Each partition costs 10 + 100 * 3 = 310 bytes; 1,000 bytes per output
        // means the fourth partition crosses the limit and closes the output.
        let parts: Vec<_> = sorted_keys(10)
            .into_iter()
            .map(|k| partition(k, 3, 1))
            .collect();
        let out = run(OutputSplit::Size { max_bytes: 1000 }, parts);
        let sizes: Vec<usize> = out.iter().map(|o| o.output.parts.len()).collect();
        assert_eq!(sizes, vec![4, 4, 2]);
        assert!(out.iter().all(|o| o.bytes == o.output.bytes));
        // Every partition is whole in exactly one output.
        let rows: usize = out
            .iter()
            .flat_map(|o| &o.output.parts)
            .map(|p| p.rows.len())
            .sum();
        assert_eq!(rows, 30);
    }

    #[test]
    fn token_outputs_never_straddle_a_boundary() {
        let keys = sorted_keys(200);
        let boundaries: Arc<[i64]> = Arc::from(vec![-(1 << 62), 0, 1 << 62]);
        let out = run(
            OutputSplit::Token {
                boundaries: boundaries.clone(),
                max_bytes: u64::MAX,
            },
            keys.iter().cloned().map(|k| partition(k, 1, 1)).collect(),
        );
        assert_eq!(out.len(), 4, "200 random tokens fill all four shards");
        for o in &out {
            for p in &o.output.parts {
                assert_eq!(token_shard(&boundaries, p.key.token) as i64, o.bucket);
            }
        }
        // Shards were finished in order as the stream moved on: one open at a time.
        let buckets: Vec<i64> = out.iter().map(|o| o.bucket).collect();
        assert_eq!(buckets, vec![0, 1, 2, 3]);
        assert_eq!(
            token_shard(&boundaries, 0),
            2,
            "a boundary starts its shard"
        );
        assert_eq!(token_shard(&boundaries, -1), 1);
    }

    #[test]
    fn token_shards_roll_over_at_their_size() {
        let boundaries: Arc<[i64]> = Arc::from(vec![0]);
        let out = run(
            OutputSplit::Token {
                boundaries,
                max_bytes: 300,
            },
            sorted_keys(40)
                .into_iter()
                .map(|k| partition(k, 1, 1))
                .collect(),
        );
        // 110 bytes a partition: three per output.
        assert!(out.iter().all(|o| o.output.parts.len() <= 3));
        assert_eq!(out.iter().map(|o| o.output.parts.len()).sum::<usize>(), 40);
    }

    #[test]
    fn time_window_segregates_old_writes_into_their_own_window() {
        let hour = 3_600_000_000i64;
        let keys = sorted_keys(3);
        let mut parts = Vec::new();
        for (i, k) in keys.iter().enumerate() {
            let mut p = partition(k.clone(), 4, 10 * hour + 5);
            if i == 1 {
                // One write two days old, as a repair or hint would bring.
                p.add_row(row(9, -38 * hour));
            }
            parts.push(p);
        }
        let out = run(
            OutputSplit::TimeWindow {
                window: hour,
                max_bytes: u64::MAX,
            },
            parts,
        );
        assert_eq!(out.len(), 2);
        assert_eq!(
            out[0].bucket, -38,
            "pre-epoch timestamps floor, not truncate"
        );
        assert_eq!(out[0].output.parts.len(), 1);
        assert_eq!(out[0].output.parts[0].rows.len(), 1);
        assert_eq!(out[1].bucket, 10);
        assert_eq!(out[1].output.parts.len(), 3);
    }

    /// A partition with every kind of part at random timestamps.
    fn random_partition(rng: &mut rand::rngs::StdRng, k: DecoratedKey) -> PartitionUpdate {
        let ts = |rng: &mut rand::rngs::StdRng| rng.gen_range(-50i64..500);
        let mut p = PartitionUpdate::new(k);
        if rng.gen_bool(0.3) {
            p.deletion.partition = Some(DeletionTime::new(ts(rng), 7));
        }
        for _ in 0..rng.gen_range(0..3) {
            let a: u8 = rng.gen_range(0..20);
            p.deletion.ranges.push(RangeTombstone {
                range: ClusteringRange {
                    start: ClusteringBound::inclusive(vec![a]),
                    end: ClusteringBound::exclusive(vec![a + 3]),
                },
                deletion: DeletionTime::new(ts(rng), 8),
            });
        }
        if rng.gen_bool(0.3) {
            let mut s = Row::new(Vec::new());
            s.add_cell(Cell::live(5, ts(rng), vec![1]));
            s.add_cell(Cell::live(6, ts(rng), vec![2]));
            p.static_row = Some(s);
        }
        for ck in 0..rng.gen_range(0u8..30) {
            let mut r = Row::new(vec![ck]);
            if rng.gen_bool(0.5) {
                r.liveness = LivenessInfo::new(ts(rng));
            }
            if rng.gen_bool(0.2) {
                r.deletion = DeletionTime::new(ts(rng), 9);
            }
            for col in 0..rng.gen_range(0..4) {
                r.add_cell(Cell::live(col, ts(rng), vec![ck, col as u8]));
            }
            if !r.is_empty() {
                p.rows.push(r);
            }
        }
        p
    }

    #[test]
    fn split_by_window_keeps_every_part_exactly_once() {
        let mut rng = rand::rngs::StdRng::seed_from_u64(20261125);
        for case in 0..500 {
            let window = rng.gen_range(1i64..200);
            // Normalised through a merge, as every partition a writer sees is
            // (identical range tombstone ranges keep only the stronger deletion).
            let mut p = PartitionUpdate::new(key(case));
            merge_partition(&mut p, random_partition(&mut rng, key(case)));
            let pieces = split_by_window(p.clone(), window);
            // Buckets ascend, no piece is empty, and every part sits in its window.
            assert!(pieces.windows(2).all(|w| w[0].0 < w[1].0));
            for (w, piece) in &pieces {
                assert!(
                    !crate::compaction::purge::is_empty(piece),
                    "case {case}: empty piece"
                );
                assert!(piece
                    .rows
                    .windows(2)
                    .all(|r| r[0].clustering < r[1].clustering));
                for r in piece.rows.iter().chain(piece.static_row.iter()) {
                    for c in &r.cells {
                        assert_eq!(window_of(c.timestamp_micros, window), *w);
                    }
                    assert!(r.cells.windows(2).all(|c| c[0].cmp_position(&c[1]).is_lt()));
                }
            }
            // Merging the pieces gives the partition back (invariant 1).
            let mut merged = PartitionUpdate::new(p.key.clone());
            for (_, piece) in pieces {
                merge_partition(&mut merged, piece);
            }
            let mut expected_ranges = p.deletion.ranges.clone();
            let mut got_ranges = merged.deletion.ranges.clone();
            let order = |r: &RangeTombstone| {
                (
                    r.range.start.prefix.clone(),
                    r.deletion.marked_for_delete_at_micros,
                )
            };
            expected_ranges.sort_by_key(order);
            got_ranges.sort_by_key(order);
            assert_eq!(
                merged.deletion.partition, p.deletion.partition,
                "case {case}"
            );
            assert_eq!(got_ranges, expected_ranges, "case {case}");
            assert_eq!(merged.static_row, p.static_row, "case {case}");
            assert_eq!(merged.rows, p.rows, "case {case}");
        }
    }

    #[test]
    fn open_outputs_are_capped_by_finishing_the_least_recent() {
        let window = 10i64;
        let keys = sorted_keys(20);
        let mut set = OutputSet::new(
            OutputSplit::TimeWindow {
                window,
                max_bytes: u64::MAX,
            },
            MemFactory::default(),
        )
        .expect("rule")
        .with_max_open(2);
        // Partitions alternate among three windows: each third bucket evicts one.
        for (i, k) in keys.into_iter().enumerate() {
            let ts = (i % 3) as i64 * window;
            set.append(partition(k, 1, ts)).expect("append");
        }
        let out = set.finish().expect("finish");
        assert!(out.len() > 3, "eviction made extra outputs: {}", out.len());
        assert_eq!(out.iter().map(|o| o.output.parts.len()).sum::<usize>(), 20);
        for o in &out {
            assert!(o.output.parts.windows(2).all(|w| w[0].key < w[1].key));
        }
    }

    #[test]
    fn a_failed_create_leaves_finished_outputs_to_the_caller() {
        let factory = MemFactory {
            fail_create_at: Some(1),
            ..MemFactory::default()
        };
        let mut set = OutputSet::new(OutputSplit::Size { max_bytes: 100 }, factory).expect("rule");
        let keys = sorted_keys(3);
        set.append(partition(keys[0].clone(), 1, 1))
            .expect("first output");
        let err = set.append(partition(keys[1].clone(), 1, 1));
        assert!(err.is_err(), "second output's creation fails");
        let finished = set.abort();
        assert_eq!(
            finished.len(),
            1,
            "the first output was finished at 110 bytes"
        );
    }

    #[test]
    fn invalid_rules_are_refused_with_a_reason() {
        let bad = [
            OutputSplit::Size { max_bytes: 0 },
            OutputSplit::Token {
                boundaries: Arc::from(vec![5, 5]),
                max_bytes: 1,
            },
            OutputSplit::TimeWindow {
                window: 0,
                max_bytes: 1,
            },
        ];
        for rule in bad {
            let e = OutputSet::new(rule.clone(), MemFactory::default())
                .err()
                .unwrap_or_else(|| panic!("{rule:?} accepted"));
            assert!(e.to_string().contains("output split"), "{e}");
        }
    }
}
