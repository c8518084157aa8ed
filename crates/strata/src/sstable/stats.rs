//! Per-sstable statistics (Cassandra's `-Statistics.db`): what compaction
//! strategies, tablestats/tablehistograms and `sstable metadata` look at without
//! reading data.
//!
//! Contract: [`StatsCollector`] is fed every partition by the writer (one thread);
//! the resulting [`SSTableStats`] is immutable and shared by the reader.
//!
//! Invariants:
//! 1. Statistics are exact except the two histograms, whose error is bounded:
//!    [`Log2Histogram`] by a factor 2 per value, [`StreamingHistogram`] by its bin
//!    merging (at most [`MAX_BINS`] bins).
//! 2. `max_local_deletion_seconds` is `NO_DELETION_TIME` as soon as one datum never
//!    expires (a live cell, a non-expiring row marker): an sstable whose maximum is
//!    in the past holds nothing live, which is what TWCS' "drop fully expired
//!    sstable" relies on.
//! 3. The encoding is varints with deltas (see docs/FORMAT.md); it is versioned
//!    with the sstable format.
//! 4. [`ClusteringCoverage`] (format version 5 on) is conservative: a range it
//!    says an sstable cannot hold really holds nothing of that sstable (no row,
//!    no deletion, no static row); older files have none and are always read.

use super::compression::Codec;
use super::format::{FIRST_VERSION_WITH_CLUSTERING_COVERAGE, FIRST_VERSION_WITH_ROW_TS_WIDTH};
use crate::data::{
    CellKind, ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo, PartitionDeletion,
    PartitionUpdate, Row, NO_DELETION_TIME,
};
use crate::encoding::{
    put_bytes, put_varint, put_zigzag, visit_row, CellView, DecodeError, DecodeResult,
    EncodingBase, Reader, RowVisitor,
};
use std::sync::Arc;

/// Maximum bins of the droppable-tombstone histogram (Cassandra keeps 100; 32 is
/// enough for the estimate and keeps the stats block small).
pub const MAX_BINS: usize = 32;
/// Local deletion times are rounded *up* to this granularity before binning, so a
/// tombstone is never estimated droppable before it is, and so that tombstones
/// written in the same minute share a bin (Cassandra rounds the same way).
pub const ROUNDING_SECONDS: i64 = 60;

/// A bounded streaming histogram (Ben-Haim & Tom-Tov, as Cassandra's
/// `StreamingHistogram`): at most [`MAX_BINS`] `(point, count)` bins; when a new
/// point would exceed that, the two nearest bins merge into their weighted mean.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct StreamingHistogram {
    /// Sorted by point, unique.
    bins: Vec<(i64, u64)>,
}

impl StreamingHistogram {
    pub fn update(&mut self, point: i64) {
        self.add(round_up(point), 1);
    }

    fn add(&mut self, point: i64, count: u64) {
        match self.bins.binary_search_by_key(&point, |b| b.0) {
            Ok(i) => self.bins[i].1 += count,
            Err(i) => self.bins.insert(i, (point, count)),
        }
        while self.bins.len() > MAX_BINS {
            // Merge the closest adjacent pair (first one on ties: deterministic).
            let mut best = 0;
            let mut best_gap = u128::MAX;
            for i in 0..self.bins.len() - 1 {
                let gap = (self.bins[i + 1].0 as i128 - self.bins[i].0 as i128) as u128;
                if gap < best_gap {
                    best_gap = gap;
                    best = i;
                }
            }
            let (p1, c1) = self.bins[best];
            let (p2, c2) = self.bins.remove(best + 1);
            let total = c1 + c2;
            let mean = (p1 as i128 * c1 as i128 + p2 as i128 * c2 as i128) / total.max(1) as i128;
            self.bins[best] = (mean as i64, total);
        }
    }

    pub fn bins(&self) -> &[(i64, u64)] {
        &self.bins
    }

    pub fn total(&self) -> u64 {
        self.bins.iter().map(|b| b.1).sum()
    }

    /// Estimated number of points `<= b`: the counts of the bins whose point is
    /// `<= b`. Exact while no bins have merged (at most [`MAX_BINS`] distinct
    /// rounded minutes); a merged bin sits at its weighted mean, so the error is at
    /// most that bin's count. Cassandra interpolates between bins (Ben-Haim's
    /// `sum`), which is never exact even on unmerged bins: one tombstone minute
    /// counts half before its time; the step function was chosen because
    /// `tombstone_threshold` decisions on few-minute workloads should be exact.
    pub fn sum(&self, b: i64) -> f64 {
        self.bins
            .iter()
            .take_while(|x| x.0 <= b)
            .map(|x| x.1 as f64)
            .sum()
    }

    fn encode(&self, out: &mut Vec<u8>) {
        put_varint(out, self.bins.len() as u64);
        let mut prev = 0i64;
        for &(p, c) in &self.bins {
            put_zigzag(out, p.wrapping_sub(prev));
            put_varint(out, c);
            prev = p;
        }
    }

    fn decode(r: &mut Reader<'_>) -> DecodeResult<StreamingHistogram> {
        let n = r.varint_usize()?;
        if n > MAX_BINS {
            return Err(DecodeError("too many histogram bins"));
        }
        let mut bins = Vec::with_capacity(n);
        let mut prev = 0i64;
        for _ in 0..n {
            let p = prev.wrapping_add(r.zigzag()?);
            if !bins.is_empty() && p <= prev {
                return Err(DecodeError("histogram bins out of order"));
            }
            bins.push((p, r.varint()?));
            prev = p;
        }
        Ok(StreamingHistogram { bins })
    }
}

fn round_up(t: i64) -> i64 {
    if t == NO_DELETION_TIME {
        return t;
    }
    let r = t.rem_euclid(ROUNDING_SECONDS);
    if r == 0 {
        t
    } else {
        t.saturating_add(ROUNDING_SECONDS - r)
    }
}

/// Counts per power-of-two bucket: bucket 0 holds 0, bucket `b >= 1` holds
/// `[2^(b-1), 2^b)`. Exact count, values within a factor 2 (invariant 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Log2Histogram {
    buckets: [u64; 65],
}

impl Default for Log2Histogram {
    fn default() -> Self {
        Log2Histogram { buckets: [0; 65] }
    }
}

impl Log2Histogram {
    pub fn bucket_of(v: u64) -> usize {
        64 - v.leading_zeros() as usize
    }

    /// Smallest value of bucket `b`.
    pub fn bucket_low(b: usize) -> u64 {
        if b == 0 {
            0
        } else {
            1u64 << (b - 1)
        }
    }

    /// Largest value of bucket `b`.
    pub fn bucket_high(b: usize) -> u64 {
        if b == 0 {
            0
        } else if b >= 64 {
            u64::MAX
        } else {
            (1u64 << b) - 1
        }
    }

    pub fn add(&mut self, v: u64) {
        self.buckets[Self::bucket_of(v)] += 1;
    }

    pub fn count(&self) -> u64 {
        self.buckets.iter().sum()
    }

    /// Non-empty buckets as `(low, high, count)`.
    pub fn non_empty(&self) -> Vec<(u64, u64, u64)> {
        (0..65)
            .filter(|&b| self.buckets[b] > 0)
            .map(|b| (Self::bucket_low(b), Self::bucket_high(b), self.buckets[b]))
            .collect()
    }

    /// Adds every count of `other` (histograms of several sstables).
    pub fn merge(&mut self, other: &Log2Histogram) {
        for (a, b) in self.buckets.iter_mut().zip(other.buckets.iter()) {
            *a += *b;
        }
    }

    /// Lower bound of the smallest value recorded.
    pub fn min(&self) -> Option<u64> {
        (0..65).find(|&b| self.buckets[b] > 0).map(Self::bucket_low)
    }

    /// Upper bound of the largest value recorded.
    pub fn max(&self) -> Option<u64> {
        (0..65)
            .rev()
            .find(|&b| self.buckets[b] > 0)
            .map(Self::bucket_high)
    }

    /// Mean estimated from bucket midpoints.
    pub fn mean(&self) -> f64 {
        let n = self.count();
        if n == 0 {
            return 0.0;
        }
        let s: f64 = (0..65)
            .map(|b| {
                self.buckets[b] as f64 * (Self::bucket_low(b) as f64 + Self::bucket_high(b) as f64)
                    / 2.0
            })
            .sum();
        s / n as f64
    }

    /// Upper bound of the bucket holding quantile `q` (0..=1).
    pub fn percentile(&self, q: f64) -> u64 {
        let n = self.count();
        let target = ((q.clamp(0.0, 1.0) * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        for b in 0..65 {
            seen += self.buckets[b];
            if seen >= target {
                return Self::bucket_high(b);
            }
        }
        0
    }

    fn encode(&self, out: &mut Vec<u8>) {
        let non_empty = self.buckets.iter().filter(|&&c| c > 0).count();
        put_varint(out, non_empty as u64);
        for (b, &c) in self.buckets.iter().enumerate() {
            if c > 0 {
                out.push(b as u8);
                put_varint(out, c);
            }
        }
    }

    fn decode(r: &mut Reader<'_>) -> DecodeResult<Log2Histogram> {
        let mut h = Log2Histogram::default();
        let n = r.varint_usize()?;
        let mut prev: Option<usize> = None;
        for _ in 0..n {
            let b = r.u8()? as usize;
            if b > 64 || prev.is_some_and(|p| b <= p) {
                return Err(DecodeError("bad log2 histogram bucket"));
            }
            h.buckets[b] = r.varint()?;
            prev = Some(b);
        }
        Ok(h)
    }
}

/// Which clusterings an sstable's rows span, and whether anything in it
/// applies beyond its rows: what lets a read of a clustering range skip the
/// sstable (invariant 4). Cassandra keeps the same bounds in its stats
/// metadata (`coveredClustering`), widened by range tombstone bounds; here a
/// range tombstone, like a partition deletion or a static row, sets
/// `beyond_rows` instead, and such an sstable is always read: simpler to keep
/// exact, and time-series tables, which gain from the bounds, rarely delete
/// ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClusteringCoverage {
    /// The smallest and largest clustering of any row (deleted rows
    /// included), in the byte order clusterings compare in; `None` when the
    /// sstable has no clustering row.
    pub rows: Option<(Vec<u8>, Vec<u8>)>,
    /// Whether some partition has a partition deletion, a range tombstone or a
    /// static row.
    pub beyond_rows: bool,
}

impl ClusteringCoverage {
    /// Whether the sstable may hold a row, a deletion or a static row that a
    /// read of `range` must see. Both bound tests are monotone (a start bound
    /// that refuses the largest clustering refuses every smaller one, and an
    /// end bound that refuses the smallest refuses every larger one), so a
    /// `false` is exact: nothing of the sstable is in `range`.
    pub fn may_hold(&self, range: &ClusteringRange) -> bool {
        if self.beyond_rows {
            return true;
        }
        match &self.rows {
            Some((min, max)) => range.start.admits_as_start(max) && range.end.admits_as_end(min),
            // Partitions with neither rows nor anything beyond them are not
            // written; read such a file anyway rather than trust the flags.
            None => true,
        }
    }

    const BEYOND_ROWS: u8 = 1;
    const HAS_ROWS: u8 = 2;

    fn encode(&self, out: &mut Vec<u8>) {
        let mut flags = 0;
        if self.beyond_rows {
            flags |= Self::BEYOND_ROWS;
        }
        if self.rows.is_some() {
            flags |= Self::HAS_ROWS;
        }
        out.push(flags);
        if let Some((min, max)) = &self.rows {
            put_bytes(out, min);
            put_bytes(out, max);
        }
    }

    fn decode(r: &mut Reader<'_>) -> DecodeResult<ClusteringCoverage> {
        let flags = r.u8()?;
        if flags & !(Self::BEYOND_ROWS | Self::HAS_ROWS) != 0 {
            return Err(DecodeError("unknown clustering coverage flags"));
        }
        let rows = if flags & Self::HAS_ROWS != 0 {
            let min = r.bytes()?.to_vec();
            let max = r.bytes()?.to_vec();
            if min > max {
                return Err(DecodeError("smallest clustering after the largest"));
            }
            Some((min, max))
        } else {
            None
        };
        Ok(ClusteringCoverage {
            rows,
            beyond_rows: flags & Self::BEYOND_ROWS != 0,
        })
    }
}

/// Everything recorded about one sstable (see the module docs).
#[derive(Clone, Debug, PartialEq)]
pub struct SSTableStats {
    /// Write timestamps (cells, row markers, every kind of deletion), microseconds.
    /// `i64::MAX` / `i64::MIN` when the sstable holds no timestamp at all.
    pub min_timestamp_micros: i64,
    pub max_timestamp_micros: i64,
    /// Local deletion times, seconds; live data counts as `NO_DELETION_TIME`
    /// (invariant 2).
    pub min_local_deletion_seconds: i64,
    pub max_local_deletion_seconds: i64,
    /// TTLs of expiring cells and row markers; 0 and 0 when nothing expires.
    pub min_ttl_seconds: u32,
    pub max_ttl_seconds: u32,
    /// Local deletion times of tombstones of every kind and of expiring data.
    pub droppable_tombstones: StreamingHistogram,
    /// Uncompressed serialized size of each partition.
    pub partition_size_bytes: Log2Histogram,
    pub cells_per_partition: Log2Histogram,
    pub partition_count: u64,
    /// Clustering rows (the static row is not counted).
    pub row_count: u64,
    pub cell_count: u64,
    /// Cell tombstones, expiring cells, row deletions, range tombstones and
    /// partition deletions, each counting one.
    pub tombstone_count: u64,
    /// Items that can be tombstones: cells + row deletions + range tombstones +
    /// partition deletions (the denominator of the droppable ratio).
    pub tombstone_candidates: u64,
    pub first_key: DecoratedKey,
    pub last_key: DecoratedKey,
    pub uncompressed_bytes: u64,
    /// Stored size of the data chunks (codec bytes and checksums included).
    pub compressed_bytes: u64,
    /// Seconds since the epoch, from the database's Clock.
    pub creation_time_seconds: i64,
    pub level: u32,
    /// The codec the writer was asked for (each chunk records what it used).
    pub codec: Codec,
    pub base: EncodingBase,
    /// Reserved for incremental repair (`repaired_at`); always 0 today.
    pub repaired_at: u64,
    /// What the rows span (format version 5 on; `None` before: unknown).
    pub coverage: Option<ClusteringCoverage>,
}

impl SSTableStats {
    /// Estimated fraction of this sstable's cells and deletions that are
    /// tombstones droppable at `gc_before_seconds` (now minus gc_grace_seconds);
    /// what `tombstone_threshold` is compared with.
    pub fn estimate_droppable(&self, gc_before_seconds: i64) -> f64 {
        let droppable = self
            .droppable_tombstones
            .sum(gc_before_seconds.saturating_sub(1));
        if self.tombstone_candidates == 0 {
            return 0.0;
        }
        (droppable / self.tombstone_candidates as f64).min(1.0)
    }

    /// Whether a read of `range` must consult this sstable: always for a file
    /// without coverage (before format version 5), else
    /// [`ClusteringCoverage::may_hold`].
    pub fn may_hold(&self, range: &ClusteringRange) -> bool {
        self.coverage.as_ref().is_none_or(|c| c.may_hold(range))
    }

    /// `compressed / uncompressed`, Cassandra's "SSTable Compression Ratio".
    pub fn compression_ratio(&self) -> f64 {
        if self.uncompressed_bytes == 0 {
            return 1.0;
        }
        self.compressed_bytes as f64 / self.uncompressed_bytes as f64
    }

    /// Encodes the block as format `version` reads it: the coverage from
    /// version 5 on (a caller writing an older version clears it), the
    /// base's row-timestamp width from version 8 on (older versions have
    /// none: it must be 0).
    pub fn encode(&self, out: &mut Vec<u8>, version: u32) {
        debug_assert!(version >= FIRST_VERSION_WITH_ROW_TS_WIDTH || self.base.row_ts_bytes == 0);
        let b = &self.base;
        put_zigzag(out, b.min_timestamp);
        put_zigzag(out, b.min_local_deletion);
        put_varint(out, b.min_ttl as u64);
        // Deltas against the base keep typical values to a few bytes.
        put_zigzag(out, self.min_timestamp_micros.wrapping_sub(b.min_timestamp));
        put_zigzag(
            out,
            self.max_timestamp_micros
                .wrapping_sub(self.min_timestamp_micros),
        );
        put_zigzag(
            out,
            self.min_local_deletion_seconds
                .wrapping_sub(b.min_local_deletion),
        );
        put_zigzag(
            out,
            self.max_local_deletion_seconds
                .wrapping_sub(self.min_local_deletion_seconds),
        );
        put_varint(out, self.min_ttl_seconds as u64);
        put_varint(out, self.max_ttl_seconds as u64);
        self.droppable_tombstones.encode(out);
        self.partition_size_bytes.encode(out);
        self.cells_per_partition.encode(out);
        for v in [
            self.partition_count,
            self.row_count,
            self.cell_count,
            self.tombstone_count,
            self.tombstone_candidates,
        ] {
            put_varint(out, v);
        }
        for k in [&self.first_key, &self.last_key] {
            out.extend_from_slice(&k.token.to_le_bytes());
            put_bytes(out, &k.key);
        }
        put_varint(out, self.uncompressed_bytes);
        put_varint(out, self.compressed_bytes);
        put_zigzag(out, self.creation_time_seconds);
        put_varint(out, self.level as u64);
        self.codec.encode(out);
        put_varint(out, self.repaired_at);
        // Written by format version 5 on; a writer of an older version
        // clears it (see [`SSTableStats::decode`]).
        if let Some(c) = &self.coverage {
            c.encode(out);
        }
        if version >= FIRST_VERSION_WITH_ROW_TS_WIDTH {
            out.push(b.row_ts_bytes);
        }
    }

    /// Decodes the stats block of a file of format `version` (the coverage
    /// is there from version 5 on).
    pub fn decode(r: &mut Reader<'_>, version: u32) -> DecodeResult<SSTableStats> {
        let mut base = EncodingBase {
            min_timestamp: r.zigzag()?,
            min_local_deletion: r.zigzag()?,
            min_ttl: u32::try_from(r.varint()?).map_err(|_| DecodeError("min_ttl out of range"))?,
            row_ts_bytes: 0,
        };
        let min_timestamp_micros = r.zigzag()?.wrapping_add(base.min_timestamp);
        let max_timestamp_micros = r.zigzag()?.wrapping_add(min_timestamp_micros);
        let min_local_deletion_seconds = r.zigzag()?.wrapping_add(base.min_local_deletion);
        let max_local_deletion_seconds = r.zigzag()?.wrapping_add(min_local_deletion_seconds);
        let ttl = |r: &mut Reader<'_>| {
            u32::try_from(r.varint()?).map_err(|_| DecodeError("ttl out of range"))
        };
        let min_ttl_seconds = ttl(r)?;
        let max_ttl_seconds = ttl(r)?;
        let droppable_tombstones = StreamingHistogram::decode(r)?;
        let partition_size_bytes = Log2Histogram::decode(r)?;
        let cells_per_partition = Log2Histogram::decode(r)?;
        let partition_count = r.varint()?;
        let row_count = r.varint()?;
        let cell_count = r.varint()?;
        let tombstone_count = r.varint()?;
        let tombstone_candidates = r.varint()?;
        let mut key = || -> DecodeResult<DecoratedKey> {
            let token = r.i64_le()?;
            Ok(DecoratedKey {
                token,
                key: Arc::from(r.bytes()?),
            })
        };
        let first_key = key()?;
        let last_key = key()?;
        let uncompressed_bytes = r.varint()?;
        let compressed_bytes = r.varint()?;
        let creation_time_seconds = r.zigzag()?;
        let level = u32::try_from(r.varint()?).map_err(|_| DecodeError("level out of range"))?;
        let codec = Codec::decode(r)?;
        let repaired_at = r.varint()?;
        let coverage = if version >= FIRST_VERSION_WITH_CLUSTERING_COVERAGE {
            Some(ClusteringCoverage::decode(r)?)
        } else {
            None
        };
        if version >= FIRST_VERSION_WITH_ROW_TS_WIDTH {
            base.row_ts_bytes = r.u8()?;
            if base.row_ts_bytes > 8 {
                return Err(DecodeError("row timestamp width beyond 8 bytes"));
            }
        }
        if first_key > last_key {
            return Err(DecodeError("first key after last key"));
        }
        Ok(SSTableStats {
            min_timestamp_micros,
            max_timestamp_micros,
            min_local_deletion_seconds,
            max_local_deletion_seconds,
            min_ttl_seconds,
            max_ttl_seconds,
            droppable_tombstones,
            partition_size_bytes,
            cells_per_partition,
            partition_count,
            row_count,
            cell_count,
            tombstone_count,
            tombstone_candidates,
            first_key,
            last_key,
            uncompressed_bytes,
            compressed_bytes,
            creation_time_seconds,
            level,
            codec,
            base,
            repaired_at,
            coverage,
        })
    }
}

/// Accumulates [`SSTableStats`] while the writer appends partitions.
#[derive(Debug, Clone)]
pub struct StatsCollector {
    min_ts: i64,
    max_ts: i64,
    min_ldt: i64,
    max_ldt: i64,
    min_ttl: u32,
    max_ttl: u32,
    histogram: StreamingHistogram,
    sizes: Log2Histogram,
    cells_per_partition: Log2Histogram,
    partitions: u64,
    rows: u64,
    cells: u64,
    tombstones: u64,
    candidates: u64,
    /// Cells of the partition being added.
    partition_cells: u64,
    /// An encoded row's histogram updates `(column, deletion time)`, applied
    /// at its end in the decoded row's cell order (see `end_encoded_row`).
    row_histogram: Vec<(u32, i64)>,
    row_has_complex: bool,
    first_key: Option<DecoratedKey>,
    last_key: Option<DecoratedKey>,
    /// The smallest and largest row clustering so far (a partition's rows
    /// are sorted: its first and last row are compared, nothing between).
    min_clustering: Option<Vec<u8>>,
    max_clustering: Option<Vec<u8>>,
    /// A partition deletion, range tombstone or static row seen.
    beyond_rows: bool,
}

impl Default for StatsCollector {
    fn default() -> Self {
        StatsCollector {
            min_ts: i64::MAX,
            max_ts: i64::MIN,
            min_ldt: i64::MAX,
            max_ldt: i64::MIN,
            min_ttl: u32::MAX,
            max_ttl: 0,
            histogram: StreamingHistogram::default(),
            sizes: Log2Histogram::default(),
            cells_per_partition: Log2Histogram::default(),
            partitions: 0,
            rows: 0,
            cells: 0,
            tombstones: 0,
            candidates: 0,
            partition_cells: 0,
            row_histogram: Vec::new(),
            row_has_complex: false,
            first_key: None,
            last_key: None,
            min_clustering: None,
            max_clustering: None,
            beyond_rows: false,
        }
    }
}

impl StatsCollector {
    pub fn partition_count(&self) -> u64 {
        self.partitions
    }

    fn timestamp(&mut self, ts: i64) {
        self.min_ts = self.min_ts.min(ts);
        self.max_ts = self.max_ts.max(ts);
    }

    fn ldt(&mut self, ldt: i64) {
        self.min_ldt = self.min_ldt.min(ldt);
        self.max_ldt = self.max_ldt.max(ldt);
    }

    fn ttl(&mut self, ttl: u32) {
        self.min_ttl = self.min_ttl.min(ttl);
        self.max_ttl = self.max_ttl.max(ttl);
    }

    /// A deletion of any kind: one tombstone.
    fn deletion(&mut self, d: &DeletionTime) {
        self.timestamp(d.marked_for_delete_at_micros);
        self.ldt(d.local_deletion_seconds);
        self.histogram.update(d.local_deletion_seconds);
        self.tombstones += 1;
        self.candidates += 1;
    }

    fn liveness(&mut self, l: &LivenessInfo) {
        if l.is_empty() {
            return;
        }
        self.timestamp(l.timestamp_micros);
        self.ldt(l.local_expiry_seconds);
        if l.is_expiring() {
            self.ttl(l.ttl_seconds);
        }
    }

    fn row_header(&mut self, liveness: &LivenessInfo, deletion: &DeletionTime) {
        self.liveness(liveness);
        if !deletion.is_live() {
            self.deletion(deletion);
        }
    }

    /// Records a cell; returns whether it is a tombstone candidate for the
    /// droppable histogram, which the caller updates (in cell order).
    fn cell(&mut self, timestamp: i64, kind: CellKind, ttl: u32, local_deletion: i64) -> bool {
        self.timestamp(timestamp);
        self.ldt(local_deletion);
        self.cells += 1;
        self.partition_cells += 1;
        self.candidates += 1;
        match kind {
            CellKind::Live | CellKind::Counter => false,
            CellKind::Expiring => {
                self.ttl(ttl);
                self.tombstones += 1;
                true
            }
            CellKind::Tombstone => {
                self.tombstones += 1;
                true
            }
        }
    }

    /// Records one row (after `start_partition`).
    pub(super) fn row(&mut self, row: &Row) {
        self.row_header(&row.liveness, &row.deletion);
        for c in &row.cells {
            if self.cell(
                c.timestamp_micros,
                c.kind,
                c.ttl_seconds,
                c.local_deletion_seconds,
            ) {
                self.histogram.update(c.local_deletion_seconds);
            }
        }
    }

    /// Starts a partition: its deletions and static row.
    pub(super) fn start_partition(
        &mut self,
        deletion: &PartitionDeletion,
        static_row: Option<&Row>,
    ) {
        self.partition_cells = 0;
        self.beyond_rows |=
            deletion.partition.is_some() || !deletion.ranges.is_empty() || static_row.is_some();
        if let Some(d) = &deletion.partition {
            self.deletion(d);
        }
        for rt in &deletion.ranges {
            self.deletion(&rt.deletion);
        }
        if let Some(s) = static_row {
            self.row(s);
        }
    }

    /// Widens the clustering span by a partition's first and last rows.
    pub(super) fn clustering_span(&mut self, first: Option<&[u8]>, last: Option<&[u8]>) {
        if let Some(first) = first {
            if self.min_clustering.as_deref().is_none_or(|m| first < m) {
                self.min_clustering = Some(first.to_vec());
            }
        }
        if let Some(last) = last {
            if self.max_clustering.as_deref().is_none_or(|m| last > m) {
                self.max_clustering = Some(last.to_vec());
            }
        }
    }

    /// Ends a partition of `rows` rows and `size_bytes` bytes.
    pub(super) fn finish_partition(&mut self, key: &DecoratedKey, rows: usize, size_bytes: u64) {
        self.rows += rows as u64;
        self.partitions += 1;
        self.sizes.add(size_bytes);
        self.cells_per_partition.add(self.partition_cells);
        if self.first_key.is_none() {
            self.first_key = Some(key.clone());
        }
        self.last_key = Some(key.clone());
    }

    /// Applies an encoded row's histogram updates. The streaming histogram
    /// depends on the order of its updates, and the encoding puts complex
    /// cells after every simple one while a decoded row holds cells by
    /// column: sorting by column (stably: a column's complex cells are
    /// written in path order, and a column is simple or complex, never both)
    /// gives the decoded order, so both paths write the same statistics.
    fn end_encoded_row(&mut self) {
        if self.row_has_complex {
            self.row_histogram.sort_by_key(|&(column, _)| column);
        }
        for i in 0..self.row_histogram.len() {
            self.histogram.update(self.row_histogram[i].1);
        }
        self.row_histogram.clear();
    }

    /// Records one appended partition of `size_bytes` uncompressed bytes.
    pub fn add_partition(&mut self, p: &PartitionUpdate, size_bytes: u64) {
        self.start_partition(&p.deletion, p.static_row.as_ref());
        for r in &p.rows {
            self.row(r);
        }
        self.clustering_span(
            p.rows.first().map(|r| r.clustering.as_slice()),
            p.rows.last().map(|r| r.clustering.as_slice()),
        );
        self.finish_partition(&p.key, p.rows.len(), size_bytes);
    }

    /// Records one row encoded against `base` (a flush copying the
    /// memtable's rows): the body is parsed for its timestamps and
    /// deletions, nothing is built. The figures equal what the decoded row
    /// would give ([`row`](Self::row)).
    pub(super) fn encoded_row(&mut self, body: &[u8], base: &EncodingBase) -> DecodeResult<()> {
        visit_row(&mut Reader::new(body), base, self)?;
        self.end_encoded_row();
        Ok(())
    }

    /// The final statistics; `None` if no partition was added.
    #[allow(clippy::too_many_arguments)]
    pub fn finish(
        &self,
        uncompressed_bytes: u64,
        compressed_bytes: u64,
        creation_time_seconds: i64,
        level: u32,
        codec: Codec,
        base: EncodingBase,
    ) -> Option<SSTableStats> {
        let (first_key, last_key) = (self.first_key.clone()?, self.last_key.clone()?);
        let (min_ttl, max_ttl) = if self.min_ttl > self.max_ttl {
            (0, 0)
        } else {
            (self.min_ttl, self.max_ttl)
        };
        Some(SSTableStats {
            min_timestamp_micros: self.min_ts,
            max_timestamp_micros: self.max_ts,
            min_local_deletion_seconds: self.min_ldt,
            max_local_deletion_seconds: self.max_ldt,
            min_ttl_seconds: min_ttl,
            max_ttl_seconds: max_ttl,
            droppable_tombstones: self.histogram.clone(),
            partition_size_bytes: self.sizes.clone(),
            cells_per_partition: self.cells_per_partition.clone(),
            partition_count: self.partitions,
            row_count: self.rows,
            cell_count: self.cells,
            tombstone_count: self.tombstones,
            tombstone_candidates: self.candidates,
            first_key,
            last_key,
            uncompressed_bytes,
            compressed_bytes,
            creation_time_seconds,
            level,
            codec,
            base,
            repaired_at: 0,
            coverage: Some(ClusteringCoverage {
                rows: self.min_clustering.clone().zip(self.max_clustering.clone()),
                beyond_rows: self.beyond_rows,
            }),
        })
    }
}

impl<'a> RowVisitor<'a> for StatsCollector {
    fn row(&mut self, liveness: &LivenessInfo, deletion: &DeletionTime, _cells: usize) {
        self.row_header(liveness, deletion);
        self.row_histogram.clear();
        self.row_has_complex = false;
    }

    fn cell(&mut self, c: CellView<'a>) {
        self.row_has_complex |= c.path.is_some();
        if StatsCollector::cell(
            self,
            c.timestamp_micros,
            c.kind,
            c.ttl_seconds,
            c.local_deletion_seconds,
        ) {
            self.row_histogram
                .push((c.column, c.local_deletion_seconds));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{Cell, ClusteringBound, PartitionDeletion, RangeTombstone};
    use crate::sstable::format::FORMAT_VERSION;

    #[test]
    fn streaming_histogram_is_bounded_and_sums() {
        let mut h = StreamingHistogram::default();
        for t in 0..10_000i64 {
            h.update(t * 7);
        }
        assert!(h.bins().len() <= MAX_BINS);
        assert_eq!(h.total(), 10_000);
        // Points are spread uniformly over [0, 70_000): half lie below 35_000.
        let half = h.sum(35_000);
        assert!((half - 5_000.0).abs() < 500.0, "{half}");
        assert_eq!(h.sum(-1), 0.0);
        assert_eq!(h.sum(1_000_000), 10_000.0);
    }

    #[test]
    fn rounding_is_up_so_nothing_is_droppable_early() {
        let mut h = StreamingHistogram::default();
        h.update(61);
        assert_eq!(h.bins(), &[(120, 1)]);
        assert_eq!(h.sum(119), 0.0);
        h.update(120);
        assert_eq!(h.bins(), &[(120, 2)]);
    }

    #[test]
    fn log2_histogram() {
        let mut h = Log2Histogram::default();
        for v in [0, 1, 2, 3, 100, 1000] {
            h.add(v);
        }
        assert_eq!(h.count(), 6);
        assert_eq!(h.min(), Some(0));
        assert_eq!(h.max(), Some(1023));
        assert_eq!(h.percentile(0.5), 3);
        assert_eq!(h.non_empty().len(), 5);
        let mut out = Vec::new();
        h.encode(&mut out);
        assert_eq!(Log2Histogram::decode(&mut Reader::new(&out)).unwrap(), h);
    }

    fn key(k: &[u8]) -> DecoratedKey {
        DecoratedKey::new(k)
    }

    #[test]
    fn collects_every_tombstone_kind_and_round_trips() {
        let now = 1_000_000;
        let mut p = PartitionUpdate::new(key(b"a"));
        p.deletion = PartitionDeletion {
            partition: Some(DeletionTime::new(5, now)),
            ranges: vec![],
        };
        let mut r = Row::new(b"c".to_vec());
        r.liveness = LivenessInfo::new(10);
        r.add_cell(Cell::live(0, 10, b"v".to_vec()));
        r.add_cell(Cell::tombstone(1, 11, now));
        r.add_cell(Cell::expiring(2, 12, 100, now, b"x".to_vec()));
        r.deletion = DeletionTime::new(9, now);
        p.rows.push(r);
        let mut c = StatsCollector::default();
        c.add_partition(&p, 77);
        let s = c
            .finish(
                77,
                50,
                1234,
                2,
                Codec::Zstd { level: 5 },
                EncodingBase::around(0),
            )
            .unwrap();
        assert_eq!(
            s.tombstone_count, 4,
            "partition deletion, row deletion, cell tombstone, expiring cell"
        );
        assert_eq!(s.tombstone_candidates, 5);
        assert_eq!((s.min_timestamp_micros, s.max_timestamp_micros), (5, 12));
        assert_eq!(
            (s.min_local_deletion_seconds, s.max_local_deletion_seconds),
            (now, NO_DELETION_TIME)
        );
        assert_eq!((s.min_ttl_seconds, s.max_ttl_seconds), (100, 100));
        assert_eq!(
            s.estimate_droppable(now),
            0.0,
            "gc_before must be after the deletion"
        );
        // Three deletions at `now`, the expiring cell at now + 100.
        assert!(
            (s.estimate_droppable(now + 61) - 3.0 / 5.0).abs() < 1e-9,
            "{}",
            s.estimate_droppable(now + 61)
        );
        assert!((s.estimate_droppable(now + 1000) - 4.0 / 5.0).abs() < 1e-9);
        let mut out = Vec::new();
        s.encode(&mut out, FORMAT_VERSION);
        assert!(
            out.len() < 120,
            "stats of one partition take {} bytes",
            out.len()
        );
        let mut rd = Reader::new(&out);
        assert_eq!(SSTableStats::decode(&mut rd, FORMAT_VERSION).unwrap(), s);
        assert!(rd.is_empty());
        // The base's row-timestamp width is in the block from version 8 on;
        // a version-7 block is the same bytes without it.
        let mut wide = s.clone();
        wide.base.row_ts_bytes = 3;
        let mut out = Vec::new();
        wide.encode(&mut out, FORMAT_VERSION);
        assert_eq!(
            SSTableStats::decode(&mut Reader::new(&out), FORMAT_VERSION).unwrap(),
            wide
        );
        let mut v7 = Vec::new();
        s.encode(&mut v7, 7);
        assert_eq!(v7.len() + 1, out.len());
        let mut rd = Reader::new(&v7);
        assert_eq!(SSTableStats::decode(&mut rd, 7).unwrap(), s);
        assert!(rd.is_empty());
        *out.last_mut().unwrap() = 9;
        assert!(SSTableStats::decode(&mut Reader::new(&out), FORMAT_VERSION).is_err());
        assert!(StatsCollector::default()
            .finish(0, 0, 0, 0, Codec::None, EncodingBase::ZERO)
            .is_none());
        // The partition deletion reaches every clustering.
        let coverage = s.coverage.clone().unwrap();
        assert!(coverage.beyond_rows);
        assert_eq!(coverage.rows, Some((b"c".to_vec(), b"c".to_vec())));
        // A version-4 block is the same bytes without the coverage.
        let mut old = s.clone();
        old.coverage = None;
        let mut out = Vec::new();
        old.encode(&mut out, 4);
        let mut rd = Reader::new(&out);
        assert_eq!(SSTableStats::decode(&mut rd, 4).unwrap(), old);
        assert!(rd.is_empty());
        assert!(old.may_hold(&ClusteringRange {
            start: ClusteringBound::inclusive(b"x".to_vec()),
            end: ClusteringBound::UNBOUNDED,
        }));
    }

    fn stats_of(partitions: &[PartitionUpdate]) -> SSTableStats {
        let mut c = StatsCollector::default();
        for p in partitions {
            c.add_partition(p, 10);
        }
        c.finish(10, 10, 0, 0, Codec::None, EncodingBase::ZERO)
            .unwrap()
    }

    fn partition(k: &[u8], clusterings: &[&[u8]]) -> PartitionUpdate {
        let mut p = PartitionUpdate::new(key(k));
        for c in clusterings {
            let mut r = Row::new(c.to_vec());
            r.add_cell(Cell::live(0, 1, b"v".to_vec()));
            p.rows.push(r);
        }
        p
    }

    fn range(start: ClusteringBound, end: ClusteringBound) -> ClusteringRange {
        ClusteringRange { start, end }
    }

    #[test]
    fn clustering_coverage_spans_every_partitions_rows() {
        let s = stats_of(&[
            partition(b"a", &[b"m", b"p"]),
            partition(b"b", &[b"d", b"f"]),
            partition(b"c", &[b"g", b"t"]),
        ]);
        let c = s.coverage.clone().unwrap();
        assert_eq!(c.rows, Some((b"d".to_vec(), b"t".to_vec())));
        assert!(!c.beyond_rows);
        let incl = |b: &[u8]| ClusteringBound::inclusive(b.to_vec());
        let excl = |b: &[u8]| ClusteringBound::exclusive(b.to_vec());
        let all = ClusteringBound::UNBOUNDED;
        // Inside, touching either end, and the whole range.
        assert!(s.may_hold(&range(incl(b"e"), incl(b"e"))));
        assert!(s.may_hold(&range(incl(b"t"), all.clone())));
        assert!(s.may_hold(&range(all.clone(), incl(b"d"))));
        assert!(s.may_hold(&ClusteringRange::ALL));
        // Before, after, and excluded by an exclusive end or start.
        assert!(!s.may_hold(&range(incl(b"a"), incl(b"c"))));
        assert!(!s.may_hold(&range(incl(b"u"), all.clone())));
        assert!(!s.may_hold(&range(all.clone(), excl(b"d"))));
        assert!(!s.may_hold(&range(excl(b"t"), all.clone())));
        // A prefix bound: an inclusive end "d" admits "d..." clusterings, an
        // exclusive start "t" refuses them.
        let s = stats_of(&[partition(b"a", &[b"d\x01", b"t\x05"])]);
        assert!(s.may_hold(&range(all.clone(), incl(b"d"))));
        assert!(!s.may_hold(&range(excl(b"t"), all.clone())));
        assert!(s.may_hold(&range(incl(b"t"), all)));
        // The encoding keeps it.
        let mut out = Vec::new();
        s.encode(&mut out, FORMAT_VERSION);
        let decoded = SSTableStats::decode(&mut Reader::new(&out), FORMAT_VERSION).unwrap();
        assert_eq!(decoded.coverage, s.coverage);
    }

    #[test]
    fn static_rows_and_range_tombstones_reach_beyond_the_rows() {
        let mut with_static = partition(b"a", &[b"m"]);
        let mut s = Row::new(Vec::new());
        s.add_cell(Cell::live(1, 1, b"s".to_vec()));
        with_static.static_row = Some(s);
        let mut with_range = partition(b"b", &[b"m"]);
        with_range.deletion.ranges.push(RangeTombstone {
            range: range(
                ClusteringBound::inclusive(b"a".to_vec()),
                ClusteringBound::inclusive(b"z".to_vec()),
            ),
            deletion: DeletionTime::new(5, 100),
        });
        let far = range(
            ClusteringBound::inclusive(b"x".to_vec()),
            ClusteringBound::UNBOUNDED,
        );
        for p in [with_static, with_range] {
            let s = stats_of(&[partition(b"0", &[b"m"]), p]);
            assert!(s.coverage.as_ref().unwrap().beyond_rows);
            assert!(s.may_hold(&far));
        }
        assert!(!stats_of(&[partition(b"0", &[b"m"])]).may_hold(&far));
    }

    #[test]
    fn unknown_coverage_flags_are_refused() {
        let s = stats_of(&[partition(b"a", &[b"m"])]);
        let mut out = Vec::new();
        s.encode(&mut out, FORMAT_VERSION);
        // The flags byte comes after the two bytes of "m"'s length-prefixed
        // min and max (1 + 1 each), then the row-timestamp width (1).
        let flags_at = out.len() - 6;
        assert_eq!(out[flags_at], ClusteringCoverage::HAS_ROWS);
        out[flags_at] |= 0x80;
        assert!(SSTableStats::decode(&mut Reader::new(&out), FORMAT_VERSION).is_err());
    }
}
