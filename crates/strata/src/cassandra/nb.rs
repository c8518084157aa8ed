//! A writer of Cassandra's BIG `nb` sstables (the format Cassandra 4.0 and
//! 5.0 write by default, and read in every mode), fed partitions in token
//! order, a row at a time.
//!
//! What it writes, per sstable `nb-<generation>-big-*` in one directory:
//! `Data.db` (partitions, rows, cells and range-tombstone markers as
//! Cassandra's `UnfilteredSerializer` writes them, in chunks compressed with
//! LZ4 or Zstd, each followed by its CRC32, or raw beside `CRC.db`),
//! `CompressionInfo.db`, `Index.db` (one entry per partition, with the
//! promoted row index of a partition wider than 64 KiB),
//! `Summary.db` (every 128th index entry), `Filter.db` (Cassandra's Bloom
//! filter on the Murmur3 hash), `Statistics.db` (validation, stats and
//! serialization header), `Digest.crc32` and `TOC.txt`.
//!
//! Contract:
//! 1. Byte-exact where Cassandra checks or decodes: every structure above is
//!    laid out as Cassandra 5.0.9's serializers lay it out (the names of its
//!    classes are given where each is written), so its reader, verifier and
//!    offline tools accept the files.
//! 2. Statistics that decide what Cassandra skips or drops are exact: min and
//!    max timestamps over every timestamp written (cells, row markers and
//!    every kind of deletion), min and max local deletion times (no deletion
//!    time counts as "none", which keeps a live cell's sstable from being
//!    dropped as expired), TTLs, the covered clustering range (never narrower
//!    than the rows and markers written), repaired-at 0, level 0.
//! 3. Nothing is purged or reinterpreted: every cell, marker, tombstone and
//!    TTL the caller hands over is written as it is, so Cassandra reconciles
//!    it as Strata would. Overlapping range tombstones are written as
//!    Cassandra's non-overlapping markers: at every clustering the deletion
//!    in force is the strongest of the ranges covering it, as before.
//! 4. What `nb` cannot hold is refused, naming the partition: a local
//!    deletion or expiry time past 2038-01-19 (`nb` keeps them in a signed
//!    32-bit integer; Cassandra 5.0 refuses such TTLs itself unless its
//!    storage mode is `NONE`).
//! 5. Memory: one chunk of data, the current row's bytes, the current
//!    partition's range tombstones and row index (about 40 bytes per 64 KiB
//!    of partition, plus two clusterings), and the filter's bits.
//!    The filter and summary are built from Index.db once the data is
//!    written, so the filter is sized for the exact key count.
//! 6. Every file is written under its final name in the caller's directory;
//!    the caller publishes the directory (see `export`).

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::cassandra::marshal;
use crate::cassandra::vint;
use crate::data::{
    CellKind, ColumnId, DecoratedKey, DeletionTime, LivenessInfo, PartitionDeletion, Row,
    NO_DELETION_TIME,
};
use crate::error::{Error, Result};
use crate::schema::{ColumnDef, TableSchema};
use crate::types::{self, CqlType};

/// 2015-09-22 00:00 UTC, the epoch of Cassandra's `EncodingStats`.
pub(crate) const TIMESTAMP_EPOCH_MICROS: i64 = 1_442_880_000_000_000;
pub(crate) const DELETION_TIME_EPOCH_SECONDS: i64 = 1_442_880_000;
/// The largest local deletion time `nb` holds (`Integer.MAX_VALUE - 1`;
/// `Integer.MAX_VALUE` means "none").
pub const MAX_NB_DELETION_TIME: i64 = i32::MAX as i64 - 1;
/// Cassandra's `min_index_interval` default: one summary entry per 128 keys.
const MIN_INDEX_INTERVAL: u64 = 128;
/// `column_index_size`'s default: a partition's row index gets an entry
/// (`IndexInfo`) per 64 KiB of unfiltereds (`BigFormatPartitionWriter`).
const ROW_INDEX_BLOCK_BYTES: u64 = 64 * 1024;
/// `ClusteringPrefix.Kind.CLUSTERING.ordinal()`, the kind byte of a row's
/// clustering in an `IndexInfo`.
const CLUSTERING_KIND: u8 = 4;
/// Chunk size of `CRC.db` for uncompressed data (Cassandra's default buffer).
const CRC_CHUNK_BYTES: usize = 64 * 1024;
const PARTITIONER: &str = "org.apache.cassandra.dht.Murmur3Partitioner";

// Row flags (`UnfilteredSerializer`).
const END_OF_PARTITION: u8 = 0x01;
const IS_MARKER: u8 = 0x02;
const HAS_TIMESTAMP: u8 = 0x04;
const HAS_TTL: u8 = 0x08;
const HAS_DELETION: u8 = 0x10;
const HAS_ALL_COLUMNS: u8 = 0x20;
const HAS_COMPLEX_DELETION: u8 = 0x40;
const EXTENSION_FLAG: u8 = 0x80;
const IS_STATIC: u8 = 0x01;

// Cell flags (`Cell.Serializer`).
const CELL_IS_DELETED: u8 = 0x01;
const CELL_IS_EXPIRING: u8 = 0x02;
const CELL_HAS_EMPTY_VALUE: u8 = 0x04;
const CELL_USE_ROW_TIMESTAMP: u8 = 0x08;
const CELL_USE_ROW_TTL: u8 = 0x10;

/// How Data.db is compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NbCompression {
    /// Raw data, a CRC32 per 64 KiB in `CRC.db`.
    None,
    /// Cassandra's `LZ4Compressor`.
    Lz4,
    /// Cassandra's `ZstdCompressor` at a level.
    Zstd { level: i32 },
}

impl NbCompression {
    /// The `compression` option Cassandra's table needs to match.
    pub fn cql_option(&self, chunk_length: usize) -> String {
        let kb = chunk_length / 1024;
        match self {
            NbCompression::None => "{'enabled': 'false'}".to_string(),
            NbCompression::Lz4 => {
                format!("{{'class': 'org.apache.cassandra.io.compress.LZ4Compressor', 'chunk_length_in_kb': '{kb}'}}")
            }
            NbCompression::Zstd { level } => format!(
                "{{'class': 'org.apache.cassandra.io.compress.ZstdCompressor', 'chunk_length_in_kb': '{kb}', 'compression_level': '{level}'}}"
            ),
        }
    }
}

/// What every sstable of one export shares.
#[derive(Clone, Debug)]
pub struct NbOptions {
    pub compression: NbCompression,
    /// Uncompressed bytes per chunk: a power of two, 1 KiB to 1 MiB.
    pub chunk_length: usize,
    /// The Bloom filter's target false-positive chance, (0, 1].
    pub bloom_filter_fp_chance: f64,
    /// The smallest timestamp, local deletion time and TTL the data holds
    /// (lower bounds suffice): the base of the rows' deltas.
    pub min_timestamp_micros: i64,
    pub min_local_deletion_seconds: i64,
    pub min_ttl_seconds: u32,
    /// The clock's "now" for counting tombstones (expired cells count).
    pub now_seconds: i64,
}

/// One column of the serialization header.
#[derive(Clone, Debug)]
struct HeaderColumn {
    id: ColumnId,
    name: String,
    ty: CqlType,
    complex: bool,
}

/// The serialization header (`SerializationHeader.Component`) and the
/// column lookups the rows need.
#[derive(Clone, Debug)]
pub struct Header {
    min_timestamp: i64,
    min_ldt: i64,
    min_ttl: i32,
    key_type: String,
    clustering: Vec<(CqlType, bool)>,
    statics: Vec<HeaderColumn>,
    regulars: Vec<HeaderColumn>,
    /// Column id to (static, index in Cassandra's order).
    by_id: BTreeMap<ColumnId, (bool, usize)>,
}

impl Header {
    pub fn new(schema: &TableSchema, opts: &NbOptions) -> Result<Header> {
        let keys: Vec<&ColumnDef> = schema.partition_key_columns().collect();
        let columns = |defs: Vec<&ColumnDef>| -> Result<Vec<HeaderColumn>> {
            defs.into_iter()
                .map(|c| {
                    Ok(HeaderColumn {
                        id: c.id.ok_or_else(|| {
                            Error::InvalidInput(format!("column {} has no id", c.name))
                        })?,
                        name: c.name.clone(),
                        ty: c.ty.clone(),
                        complex: marshal::is_complex(&c.ty),
                    })
                })
                .collect()
        };
        let statics = columns(marshal::cassandra_order(schema.static_columns()))?;
        let regulars = columns(marshal::cassandra_order(schema.regular_columns()))?;
        let mut by_id = BTreeMap::new();
        for (i, c) in statics.iter().enumerate() {
            by_id.insert(c.id, (true, i));
        }
        for (i, c) in regulars.iter().enumerate() {
            by_id.insert(c.id, (false, i));
        }
        let min_ldt = opts
            .min_local_deletion_seconds
            .clamp(0, MAX_NB_DELETION_TIME);
        Ok(Header {
            min_timestamp: opts.min_timestamp_micros,
            min_ldt,
            min_ttl: opts.min_ttl_seconds.min(i32::MAX as u32) as i32,
            key_type: marshal::key_type_name(&keys),
            clustering: schema
                .clustering_columns()
                .map(|c| (c.ty.clone(), c.descending))
                .collect(),
            statics,
            regulars,
            by_id,
        })
    }

    fn has_static(&self) -> bool {
        !self.statics.is_empty()
    }

    /// `SerializationHeader.Serializer.serialize` (the HEADER component).
    fn encode(&self, out: &mut Vec<u8>) {
        vint::write_unsigned(
            out,
            self.min_timestamp.wrapping_sub(TIMESTAMP_EPOCH_MICROS) as u64,
        );
        vint::write_unsigned_i32(out, (self.min_ldt - DELETION_TIME_EPOCH_SECONDS) as i32);
        vint::write_unsigned_i32(out, self.min_ttl);
        marshal::write_with_length(self.key_type.as_bytes(), out);
        vint::write_unsigned(out, self.clustering.len() as u64);
        for (ty, desc) in &self.clustering {
            marshal::write_with_length(marshal::clustering_type_name(ty, *desc).as_bytes(), out);
        }
        for group in [&self.statics, &self.regulars] {
            vint::write_unsigned(out, group.len() as u64);
            for c in group.iter() {
                marshal::write_with_length(c.name.as_bytes(), out);
                marshal::write_with_length(marshal::type_name(&c.ty).as_bytes(), out);
            }
        }
    }

    fn write_timestamp(&self, ts: i64, out: &mut Vec<u8>) {
        vint::write_unsigned(out, ts.wrapping_sub(self.min_timestamp) as u64);
    }

    fn write_ldt(&self, ldt: i64, out: &mut Vec<u8>) {
        // Callers have checked ldt against MAX_NB_DELETION_TIME; "none" is
        // never written as a delta.
        vint::write_unsigned_i32(out, (nb_ldt(ldt) as i64 - self.min_ldt) as i32);
    }

    fn write_ttl(&self, ttl: u32, out: &mut Vec<u8>) {
        vint::write_unsigned_i32(out, (ttl as i32).wrapping_sub(self.min_ttl));
    }

    fn write_deletion(&self, d: DeletionTime, out: &mut Vec<u8>) {
        self.write_timestamp(d.marked_for_delete_at_micros, out);
        self.write_ldt(d.local_deletion_seconds, out);
    }

    /// `ClusteringPrefix.serializeValuesWithoutSize`: per 32 values a header
    /// of null/empty bits, then the values that are neither.
    fn write_clustering_values(&self, values: &[Vec<u8>], out: &mut Vec<u8>) -> Result<()> {
        for (block, chunk) in values.chunks(32).enumerate() {
            let mut header = 0u64;
            for (i, v) in chunk.iter().enumerate() {
                if v.is_empty() {
                    header |= 1 << (i * 2);
                }
            }
            vint::write_unsigned(out, header);
            for (i, v) in chunk.iter().enumerate() {
                if !v.is_empty() {
                    marshal::write_value(&self.clustering[block * 32 + i].0, v, out)?;
                }
            }
        }
        Ok(())
    }

    /// Cassandra's serialized values of a clustering or clustering prefix.
    fn clustering_values(&self, encoded: &[u8]) -> Result<Vec<Vec<u8>>> {
        let values = types::decode_clustering(&self.clustering, encoded)?;
        Ok(values.iter().map(types::serialize).collect())
    }
}

/// An `nb` local deletion time: `Integer.MAX_VALUE` for none.
fn nb_ldt(ldt: i64) -> i32 {
    if ldt == NO_DELETION_TIME {
        i32::MAX
    } else {
        ldt.clamp(i32::MIN as i64, MAX_NB_DELETION_TIME) as i32
    }
}

/// Cassandra's `EstimatedHistogram` bucket offsets: 1, then x1.2 rounded.
fn histogram_offsets(size: usize) -> Vec<i64> {
    let mut out = Vec::with_capacity(size);
    let mut last = 1i64;
    out.push(last);
    while out.len() < size {
        let mut next = (last as f64 * 1.2 + 0.5).floor() as i64;
        if next == last {
            next += 1;
        }
        out.push(next);
        last = next;
    }
    out
}

/// An `EstimatedHistogram`: counts per bucket, the last one the overflow.
#[derive(Clone, Debug)]
struct Histogram {
    offsets: Vec<i64>,
    buckets: Vec<u64>,
}

impl Histogram {
    fn new(size: usize) -> Histogram {
        Histogram {
            offsets: histogram_offsets(size),
            buckets: vec![0; size + 1],
        }
    }

    fn add(&mut self, n: i64) {
        let i = self.offsets.partition_point(|&o| o < n);
        self.buckets[i] += 1;
    }

    fn encode(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&(self.buckets.len() as i32).to_be_bytes());
        for (i, b) in self.buckets.iter().enumerate() {
            let offset = self.offsets[if i == 0 { 0 } else { i - 1 }];
            out.extend_from_slice(&offset.to_be_bytes());
            out.extend_from_slice(&(*b as i64).to_be_bytes());
        }
    }
}

/// What the sstable's statistics record (`MetadataCollector`), and the
/// export's counts.
#[derive(Clone, Debug)]
struct Stats {
    timestamps: Option<(i64, i64)>,
    ldts: Option<(i64, i64)>,
    ttls: Option<(u32, u32)>,
    partition_sizes: Histogram,
    cells_per_partition: Histogram,
    /// Local deletion times rounded up to the minute, and their counts
    /// (`StreamingTombstoneHistogramBuilder`, at most 100 bins).
    drop_times: BTreeMap<i64, u64>,
    /// The smallest and largest clustering (or marker prefix) written.
    min_clustering: Option<Vec<u8>>,
    max_clustering: Option<Vec<u8>>,
    total_columns_set: u64,
    total_rows: u64,
    partition_cells: u64,
    tombstones: u64,
    cells: u64,
    markers: u64,
    now_seconds: i64,
}

const TOMBSTONE_HISTOGRAM_BINS: usize = 100;
const TOMBSTONE_HISTOGRAM_ROUND_SECONDS: i64 = 60;

impl Stats {
    fn new(now_seconds: i64) -> Stats {
        Stats {
            timestamps: None,
            ldts: None,
            ttls: None,
            partition_sizes: Histogram::new(155),
            cells_per_partition: Histogram::new(118),
            drop_times: BTreeMap::new(),
            min_clustering: None,
            max_clustering: None,
            total_columns_set: 0,
            total_rows: 0,
            partition_cells: 0,
            tombstones: 0,
            cells: 0,
            markers: 0,
            now_seconds,
        }
    }

    fn timestamp(&mut self, ts: i64) {
        self.timestamps = Some(match self.timestamps {
            None => (ts, ts),
            Some((a, b)) => (a.min(ts), b.max(ts)),
        });
    }

    fn ttl(&mut self, ttl: u32) {
        self.ttls = Some(match self.ttls {
            None => (ttl, ttl),
            Some((a, b)) => (a.min(ttl), b.max(ttl)),
        });
    }

    fn ldt(&mut self, ldt: i64) {
        self.ldts = Some(match self.ldts {
            None => (ldt, ldt),
            Some((a, b)) => (a.min(ldt), b.max(ldt)),
        });
        if ldt != NO_DELETION_TIME {
            let rem = ldt.rem_euclid(TOMBSTONE_HISTOGRAM_ROUND_SECONDS);
            let point = if rem == 0 {
                ldt
            } else {
                ldt + TOMBSTONE_HISTOGRAM_ROUND_SECONDS - rem
            };
            *self.drop_times.entry(point).or_insert(0) += 1;
            if self.drop_times.len() > TOMBSTONE_HISTOGRAM_BINS {
                self.merge_closest_drop_times();
            }
        }
    }

    /// Merges the two nearest bins into their weighted mean, as a streaming
    /// histogram does once it has more bins than it keeps.
    fn merge_closest_drop_times(&mut self) {
        let points: Vec<(i64, u64)> = self.drop_times.iter().map(|(&p, &c)| (p, c)).collect();
        let Some(i) = (0..points.len() - 1).min_by_key(|&i| points[i + 1].0 - points[i].0) else {
            return;
        };
        let ((p1, c1), (p2, c2)) = (points[i], points[i + 1]);
        self.drop_times.remove(&p1);
        self.drop_times.remove(&p2);
        let merged = ((p1 as i128 * c1 as i128 + p2 as i128 * c2 as i128)
            / (c1 as i128 + c2 as i128)) as i64;
        *self.drop_times.entry(merged).or_insert(0) += c1 + c2;
    }

    fn deletion(&mut self, d: DeletionTime) {
        if !d.is_live() {
            self.timestamp(d.marked_for_delete_at_micros);
            self.ldt(d.local_deletion_seconds);
            self.tombstones += 1;
        }
    }

    fn liveness(&mut self, l: LivenessInfo) {
        if l.is_empty() {
            return;
        }
        self.timestamp(l.timestamp_micros);
        self.ttl(l.ttl_seconds);
        self.ldt(l.local_expiry_seconds);
        if !l.is_live(self.now_seconds) {
            self.tombstones += 1;
        }
    }

    fn clustering(&mut self, c: &[u8], is_end: bool) {
        if self.min_clustering.as_deref().is_none_or(|m| c < m) {
            self.min_clustering = Some(c.to_vec());
        }
        // An end bound covers every clustering it prefixes.
        let above = match self.max_clustering.as_deref() {
            None => true,
            Some(m) => (is_end && m.starts_with(c)) || (c > m && !c.starts_with(m)),
        };
        if above {
            self.max_clustering = Some(c.to_vec());
        }
    }
}

/// One side of a clustering prefix: before or after every clustering it
/// prefixes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Side {
    Before,
    After,
}

#[derive(Clone, Debug, PartialEq, Eq)]
struct Point {
    prefix: Vec<u8>,
    side: Side,
}

fn cmp_points(a: &Point, b: &Point) -> std::cmp::Ordering {
    use std::cmp::Ordering::*;
    if a.prefix == b.prefix {
        return a.side.cmp(&b.side);
    }
    if b.prefix.starts_with(&a.prefix) {
        return if a.side == Side::Before {
            Less
        } else {
            Greater
        };
    }
    if a.prefix.starts_with(&b.prefix) {
        return if b.side == Side::Before {
            Greater
        } else {
            Less
        };
    }
    a.prefix.cmp(&b.prefix)
}

/// Whether the point comes before the row of clustering `c`.
fn point_before_row(p: &Point, c: &[u8]) -> bool {
    if c.starts_with(&p.prefix) {
        p.side == Side::Before
    } else {
        p.prefix.as_slice() < c
    }
}

/// A range-tombstone marker (`RangeTombstoneBoundMarker` or
/// `RangeTombstoneBoundaryMarker`).
#[derive(Clone, Debug, PartialEq, Eq)]
struct Marker {
    at: Point,
    /// The deletion in force before and after the marker (LIVE: none).
    before: DeletionTime,
    after: DeletionTime,
}

impl Marker {
    /// `ClusteringPrefix.Kind` ordinal.
    fn kind(&self) -> u8 {
        match (self.before.is_live(), self.after.is_live(), self.at.side) {
            (true, false, Side::Before) => 1,  // INCL_START_BOUND
            (true, false, Side::After) => 7,   // EXCL_START_BOUND
            (false, true, Side::Before) => 0,  // EXCL_END_BOUND
            (false, true, Side::After) => 6,   // INCL_END_BOUND
            (false, false, Side::Before) => 2, // EXCL_END_INCL_START_BOUNDARY
            (false, false, Side::After) => 5,  // INCL_END_EXCL_START_BOUNDARY
            (true, true, _) => unreachable!("a marker changes the deletion in force"),
        }
    }
}

/// Cassandra's markers for a partition's range tombstones (contract 3): at
/// each point where the strongest covering deletion changes, one marker.
fn markers(deletion: &PartitionDeletion) -> Vec<Marker> {
    // (point, +1 start / -1 end, deletion)
    let mut events: Vec<(Point, bool, DeletionTime)> = Vec::new();
    for rt in &deletion.ranges {
        if rt.deletion.is_live() {
            continue;
        }
        let start = Point {
            prefix: rt.range.start.prefix.clone(),
            side: if rt.range.start.inclusive {
                Side::Before
            } else {
                Side::After
            },
        };
        let end = Point {
            prefix: rt.range.end.prefix.clone(),
            side: if rt.range.end.inclusive {
                Side::After
            } else {
                Side::Before
            },
        };
        if cmp_points(&start, &end) != std::cmp::Ordering::Less {
            continue; // an empty range
        }
        events.push((start, true, rt.deletion));
        events.push((end, false, rt.deletion));
    }
    events.sort_by(|a, b| cmp_points(&a.0, &b.0));
    let key = |d: DeletionTime| (d.marked_for_delete_at_micros, d.local_deletion_seconds);
    let mut active: BTreeMap<(i64, i64), u32> = BTreeMap::new();
    let strongest = |active: &BTreeMap<(i64, i64), u32>| {
        active
            .keys()
            .next_back()
            .map_or(DeletionTime::LIVE, |&(ts, ldt)| DeletionTime::new(ts, ldt))
    };
    let mut out = Vec::new();
    let mut i = 0;
    while i < events.len() {
        let before = strongest(&active);
        let at = events[i].0.clone();
        while i < events.len() && events[i].0 == at {
            let (_, start, d) = &events[i];
            if *start {
                *active.entry(key(*d)).or_insert(0) += 1;
            } else if let Some(n) = active.get_mut(&key(*d)) {
                *n -= 1;
                if *n == 0 {
                    active.remove(&key(*d));
                }
            }
            i += 1;
        }
        let after = strongest(&active);
        if before != after {
            out.push(Marker { at, before, after });
        }
    }
    out
}

/// Data.db as it is written: chunks of `chunk_length` uncompressed bytes,
/// compressed (each followed by its CRC32) or raw (CRCs in CRC.db), and the
/// CRC32 of the whole file for Digest.crc32.
struct DataFile {
    path: PathBuf,
    file: BufWriter<File>,
    compression: NbCompression,
    chunk_length: usize,
    buf: Vec<u8>,
    scratch: Vec<u8>,
    uncompressed: u64,
    on_disk: u64,
    chunk_offsets: Vec<u64>,
    raw_crcs: Vec<u32>,
    digest: crc32fast::Hasher,
}

impl DataFile {
    fn create(path: &Path, compression: NbCompression, chunk_length: usize) -> Result<DataFile> {
        let chunk = if compression == NbCompression::None {
            CRC_CHUNK_BYTES
        } else {
            chunk_length
        };
        Ok(DataFile {
            path: path.to_path_buf(),
            file: BufWriter::with_capacity(1 << 20, create_new(path)?),
            compression,
            chunk_length: chunk,
            buf: Vec::with_capacity(chunk),
            scratch: Vec::new(),
            uncompressed: 0,
            on_disk: 0,
            chunk_offsets: Vec::new(),
            raw_crcs: Vec::new(),
            digest: crc32fast::Hasher::new(),
        })
    }

    /// Uncompressed position: where the next byte goes.
    fn position(&self) -> u64 {
        self.uncompressed + self.buf.len() as u64
    }

    fn write(&mut self, mut bytes: &[u8]) -> Result<()> {
        while !bytes.is_empty() {
            let room = self.chunk_length - self.buf.len();
            let n = room.min(bytes.len());
            self.buf.extend_from_slice(&bytes[..n]);
            bytes = &bytes[n..];
            if self.buf.len() == self.chunk_length {
                self.flush_chunk()?;
            }
        }
        Ok(())
    }

    fn flush_chunk(&mut self) -> Result<()> {
        if self.buf.is_empty() {
            return Ok(());
        }
        self.chunk_offsets.push(self.on_disk);
        let stored: &[u8] = match self.compression {
            NbCompression::None => {
                self.raw_crcs.push(crc32fast::hash(&self.buf));
                &self.buf
            }
            NbCompression::Lz4 => {
                // LZ4Compressor: the uncompressed length (little-endian),
                // then one LZ4 block.
                let bound = crate::lz4::compress_bound(self.buf.len());
                self.scratch.clear();
                self.scratch.resize(4 + bound, 0);
                self.scratch[..4].copy_from_slice(&(self.buf.len() as u32).to_le_bytes());
                let n = crate::lz4::compress_into(&self.buf, &mut self.scratch[4..])
                    .map_err(|e| Error::InvalidInput(format!("LZ4 compression failed: {e}")))?;
                self.scratch.truncate(4 + n);
                &self.scratch
            }
            NbCompression::Zstd { level } => {
                // ZstdCompressor: one plain zstd frame.
                self.scratch = zstd::bulk::compress(&self.buf, level)
                    .map_err(|e| Error::InvalidInput(format!("zstd compression failed: {e}")))?;
                &self.scratch
            }
        };
        self.file
            .write_all(stored)
            .map_err(|e| Error::io(&self.path, e))?;
        self.digest.update(stored);
        self.on_disk += stored.len() as u64;
        if self.compression != NbCompression::None {
            let crc = crc32fast::hash(stored).to_be_bytes();
            self.file
                .write_all(&crc)
                .map_err(|e| Error::io(&self.path, e))?;
            self.digest.update(&crc);
            self.on_disk += 4;
        }
        self.uncompressed += self.buf.len() as u64;
        self.buf.clear();
        Ok(())
    }

    /// Flushes the last chunk and syncs.
    fn finish(&mut self) -> Result<DataWritten> {
        self.flush_chunk()?;
        self.file.flush().map_err(|e| Error::io(&self.path, e))?;
        self.file
            .get_ref()
            .sync_all()
            .map_err(|e| Error::io(&self.path, e))?;
        Ok(DataWritten {
            uncompressed: self.uncompressed,
            on_disk: self.on_disk,
            chunk_offsets: std::mem::take(&mut self.chunk_offsets),
            raw_crcs: std::mem::take(&mut self.raw_crcs),
            digest: self.digest.clone().finalize(),
        })
    }
}

/// What a finished Data.db is: its lengths, chunk offsets (compressed),
/// chunk CRCs (uncompressed) and the whole file's CRC32.
struct DataWritten {
    uncompressed: u64,
    on_disk: u64,
    chunk_offsets: Vec<u64>,
    raw_crcs: Vec<u32>,
    digest: u32,
}

fn create_new(path: &Path) -> Result<File> {
    std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| Error::io(path, e))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    let mut f = create_new(path)?;
    f.write_all(bytes).map_err(|e| Error::io(path, e))?;
    f.sync_all().map_err(|e| Error::io(path, e))?;
    Ok(())
}

/// Counts of what one sstable holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct NbSummary {
    pub generation: u64,
    pub partitions: u64,
    pub rows: u64,
    pub cells: u64,
    pub tombstones: u64,
    pub range_tombstone_markers: u64,
    pub uncompressed_bytes: u64,
    pub data_bytes: u64,
    pub min_timestamp_micros: Option<i64>,
    pub max_timestamp_micros: Option<i64>,
    /// `None` when nothing in the sstable has a local deletion time.
    pub max_local_deletion_seconds: Option<i64>,
}

/// The partition being written.
struct Open {
    key: DecoratedKey,
    deletion: DeletionTime,
    start: u64,
    previous_start: u64,
    markers: std::vec::IntoIter<Marker>,
    next_marker: Option<Marker>,
    /// Bytes of the key, deletion and static row (`headerLength`).
    header_length: u64,
    index: RowIndex,
}

/// A partition's row index as `BigFormatPartitionWriter` builds it: a block
/// closes after the unfiltered that takes it to 64 KiB, and the last one
/// (open at the partition's end) closes after the end-of-partition byte, so
/// its width counts that byte as Cassandra's does.
struct RowIndex {
    /// The serialized `IndexInfo`s so far.
    infos: Vec<u8>,
    /// Where each `IndexInfo` starts in `infos`.
    offsets: Vec<u32>,
    /// The open block: its first unfiltered's position (from the partition's
    /// start) and clustering, `None` between blocks.
    block: Option<(u64, Vec<u8>)>,
    /// The clustering of the last unfiltered written.
    last: Vec<u8>,
    /// The deletion a range-tombstone marker leaves open, live if none.
    open_marker: DeletionTime,
}

impl RowIndex {
    fn new() -> RowIndex {
        RowIndex {
            infos: Vec::new(),
            offsets: Vec::new(),
            block: None,
            last: Vec::new(),
            open_marker: DeletionTime::LIVE,
        }
    }

    /// Records an unfiltered whose clustering serializes as `clustering`
    /// (`ClusteringPrefix.serializer`), written at `at` and ending at `end`
    /// (both from the partition's start).
    fn add(&mut self, clustering: &[u8], at: u64, end: u64) {
        if self.block.is_none() {
            self.block = Some((at, clustering.to_vec()));
        }
        self.last.clear();
        self.last.extend_from_slice(clustering);
        if self
            .block
            .as_ref()
            .is_some_and(|b| end - b.0 >= ROW_INDEX_BLOCK_BYTES)
        {
            self.close_block(end);
        }
    }

    /// `IndexInfo.Serializer.serialize`: first and last clustering, offset,
    /// width less 64 KiB as a signed vint, then the marker left open.
    fn close_block(&mut self, end: u64) {
        let Some((start, first)) = self.block.take() else {
            return;
        };
        self.offsets.push(self.infos.len() as u32);
        self.infos.extend_from_slice(&first);
        self.infos.extend_from_slice(&self.last);
        vint::write_unsigned(&mut self.infos, start);
        vint::write_signed(
            &mut self.infos,
            (end - start) as i64 - ROW_INDEX_BLOCK_BYTES as i64,
        );
        if self.open_marker.is_live() {
            self.infos.push(0);
        } else {
            self.infos.push(1);
            write_fixed_deletion(self.open_marker, &mut self.infos);
        }
    }

    /// The Index.db entry's tail after the partition's position: the
    /// promoted index's size and body (`RowIndexEntry.IndexedEntry`), or a
    /// size of 0 for a partition of one block.
    fn write_entry(&self, header_length: u64, deletion: DeletionTime, out: &mut Vec<u8>) {
        if self.offsets.len() < 2 {
            vint::write_unsigned(out, 0);
            return;
        }
        let count = self.offsets.len() as u64;
        let size = vint::unsigned_size(header_length)
            + 12
            + vint::unsigned_size(count)
            + self.infos.len()
            + 4 * self.offsets.len();
        vint::write_unsigned(out, size as u64);
        vint::write_unsigned(out, header_length);
        write_fixed_deletion(deletion, out);
        vint::write_unsigned(out, count);
        out.extend_from_slice(&self.infos);
        for o in &self.offsets {
            out.extend_from_slice(&o.to_be_bytes());
        }
    }
}

/// `DeletionTime.Serializer` in `nb`: the local deletion time as an `int`,
/// then the timestamp as a `long`.
fn write_fixed_deletion(d: DeletionTime, out: &mut Vec<u8>) {
    out.extend_from_slice(&nb_ldt(d.local_deletion_seconds).to_be_bytes());
    out.extend_from_slice(&d.marked_for_delete_at_micros.to_be_bytes());
}

/// One `nb` sstable being written (module docs).
pub struct NbWriter {
    dir: PathBuf,
    generation: u64,
    opts: NbOptions,
    header: std::sync::Arc<Header>,
    data: DataFile,
    index: BufWriter<File>,
    index_position: u64,
    stats: Stats,
    open: Option<Open>,
    row_buf: Vec<u8>,
    body_buf: Vec<u8>,
    clustering_buf: Vec<u8>,
    keys: u64,
    first_key: Option<DecoratedKey>,
    last_key: Option<DecoratedKey>,
}

impl NbWriter {
    pub fn create(
        dir: &Path,
        generation: u64,
        header: Header,
        opts: NbOptions,
    ) -> Result<NbWriter> {
        let data = DataFile::create(
            &component_path(dir, generation, "Data.db"),
            opts.compression,
            opts.chunk_length,
        )?;
        let index = BufWriter::new(create_new(&component_path(dir, generation, "Index.db"))?);
        Ok(NbWriter {
            dir: dir.to_path_buf(),
            generation,
            stats: Stats::new(opts.now_seconds),
            opts,
            header: std::sync::Arc::new(header),
            data,
            index,
            index_position: 0,
            open: None,
            row_buf: Vec::new(),
            body_buf: Vec::new(),
            clustering_buf: Vec::new(),
            keys: 0,
            first_key: None,
            last_key: None,
        })
    }

    /// Uncompressed bytes written so far.
    pub fn uncompressed_bytes(&self) -> u64 {
        self.data.position()
    }

    /// Starts a partition: its key, deletion and static row. Keys must come
    /// in increasing (token, key) order.
    pub fn begin_partition(
        &mut self,
        key: &DecoratedKey,
        deletion: &PartitionDeletion,
        static_row: Option<&Row>,
    ) -> Result<()> {
        if self.open.is_some() {
            return Err(Error::InvalidInput(
                "nb writer: a partition is already open".into(),
            ));
        }
        if self.last_key.as_ref().is_some_and(|k| k >= key) {
            return Err(Error::InvalidInput(
                "nb writer: partitions out of token order".into(),
            ));
        }
        if key.key.len() > u16::MAX as usize {
            return Err(Error::InvalidInput(format!(
                "a partition key of {} bytes: Cassandra's limit is 65535",
                key.key.len()
            )));
        }
        let start = self.data.position();
        let part = deletion.partition_deletion();
        self.check_deletion(key, part)?;
        self.row_buf.clear();
        self.row_buf
            .extend_from_slice(&(key.key.len() as u16).to_be_bytes());
        self.row_buf.extend_from_slice(&key.key);
        write_fixed_deletion(part, &mut self.row_buf);
        self.stats.deletion(part);
        let buf = std::mem::take(&mut self.row_buf);
        self.data.write(&buf)?;
        self.row_buf = buf;
        let mut markers = markers(deletion).into_iter();
        for m in markers.as_slice() {
            self.check_deletion(key, m.before)?;
            self.check_deletion(key, m.after)?;
        }
        let next_marker = markers.next();
        self.open = Some(Open {
            key: key.clone(),
            deletion: part,
            start,
            previous_start: 0,
            markers,
            next_marker,
            header_length: 0,
            index: RowIndex::new(),
        });
        if self.header.has_static() {
            let empty = Row::new(Vec::new());
            let row = static_row.unwrap_or(&empty);
            self.write_row(row, true)?;
        }
        let end = self.data.position();
        if let Some(open) = self.open.as_mut() {
            open.header_length = end - start;
        }
        Ok(())
    }

    /// Appends a row (rows in clustering order).
    pub fn append_row(&mut self, row: &Row) -> Result<()> {
        self.write_markers_before(Some(&row.clustering))?;
        self.write_row(row, false)
    }

    /// Ends the partition: the markers left, the end flag, its index entry.
    pub fn end_partition(&mut self) -> Result<()> {
        self.write_markers_before(None)?;
        let mut open = self
            .open
            .take()
            .ok_or_else(|| Error::InvalidInput("nb writer: no partition is open".into()))?;
        self.data.write(&[END_OF_PARTITION])?;
        let size = self.data.position() - open.start;
        open.index.close_block(size);
        self.stats.partition_sizes.add(size as i64);
        self.stats
            .cells_per_partition
            .add(self.stats.partition_cells as i64);
        self.stats.partition_cells = 0;
        // Index.db: the key, its Data.db position, its row index.
        let mut entry = Vec::with_capacity(open.key.key.len() + 12);
        entry.extend_from_slice(&(open.key.key.len() as u16).to_be_bytes());
        entry.extend_from_slice(&open.key.key);
        vint::write_unsigned(&mut entry, open.start);
        open.index
            .write_entry(open.header_length, open.deletion, &mut entry);
        self.index
            .write_all(&entry)
            .map_err(|e| Error::io(self.dir.join("Index.db"), e))?;
        self.index_position += entry.len() as u64;
        self.keys += 1;
        if self.first_key.is_none() {
            self.first_key = Some(open.key.clone());
        }
        self.last_key = Some(open.key);
        Ok(())
    }

    fn check_deletion(&self, key: &DecoratedKey, d: DeletionTime) -> Result<()> {
        if d.is_live() {
            return Ok(());
        }
        check_ldt(key, d.local_deletion_seconds)
    }

    /// Writes the markers that come before `row` (all when `None`).
    fn write_markers_before(&mut self, row: Option<&[u8]>) -> Result<()> {
        loop {
            let Some(open) = self.open.as_mut() else {
                return Err(Error::InvalidInput(
                    "nb writer: no partition is open".into(),
                ));
            };
            let due = match (&open.next_marker, row) {
                (None, _) => false,
                (Some(_), None) => true,
                (Some(m), Some(c)) => point_before_row(&m.at, c),
            };
            if !due {
                return Ok(());
            }
            let m = open.next_marker.take().expect("checked above");
            open.next_marker = open.markers.next();
            self.write_marker(&m)?;
        }
    }

    fn write_marker(&mut self, m: &Marker) -> Result<()> {
        let values = self.header.clustering_values(&m.at.prefix)?;
        let mut out = std::mem::take(&mut self.row_buf);
        out.clear();
        out.push(IS_MARKER);
        out.push(m.kind());
        out.extend_from_slice(&(values.len() as u16).to_be_bytes());
        if !values.is_empty() {
            self.header.write_clustering_values(&values, &mut out)?;
        }
        // ClusteringBoundOrBoundary.Serializer: kind, size, values.
        let clustering_end = out.len();
        let mut body = std::mem::take(&mut self.body_buf);
        body.clear();
        if !m.before.is_live() {
            self.header.write_deletion(m.before, &mut body);
        }
        if !m.after.is_live() {
            self.header.write_deletion(m.after, &mut body);
        }
        let previous = self.previous_size();
        vint::write_unsigned(
            &mut out,
            (body.len() + vint::unsigned_size(previous)) as u64,
        );
        vint::write_unsigned(&mut out, previous);
        out.extend_from_slice(&body);
        self.stats.markers += 1;
        self.stats
            .clustering(&m.at.prefix, m.at.side == Side::After);
        self.stats.deletion(m.before);
        self.stats.deletion(m.after);
        self.emit_unfiltered(&out, None, 1..clustering_end)?;
        if let Some(open) = self.open.as_mut() {
            open.index.open_marker = m.after;
        }
        self.row_buf = out;
        self.body_buf = body;
        Ok(())
    }

    /// The size of the unfiltered before the next one (from the partition's
    /// start for the first).
    fn previous_size(&self) -> u64 {
        let open = self.open.as_ref().expect("a partition is open");
        self.data.position() - open.start - open.previous_start
    }

    /// Writes one unfiltered and adds it to the row index, whose clustering
    /// is `kind` (for a row) then `bytes[clustering]`.
    fn emit_unfiltered(
        &mut self,
        bytes: &[u8],
        kind: Option<u8>,
        clustering: std::ops::Range<usize>,
    ) -> Result<()> {
        let pos = self.data.position();
        self.data.write(bytes)?;
        let end = self.data.position();
        if let Some(open) = self.open.as_mut() {
            open.previous_start = pos - open.start;
            let prefix = &mut self.clustering_buf;
            prefix.clear();
            prefix.extend(kind);
            prefix.extend_from_slice(&bytes[clustering]);
            open.index.add(prefix, pos - open.start, end - open.start);
        }
        Ok(())
    }

    /// `UnfilteredSerializer.serialize(Row)` and its body.
    fn write_row(&mut self, row: &Row, is_static: bool) -> Result<()> {
        let key = self
            .open
            .as_ref()
            .map(|o| o.key.clone())
            .ok_or_else(|| Error::InvalidInput("nb writer: no partition is open".into()))?;
        let header = self.header.clone();
        let columns = if is_static {
            &header.statics
        } else {
            &header.regulars
        };
        // The row's cells by column, in Cassandra's column order; cells of
        // columns the table no longer has are dropped data, not written.
        let mut groups: Vec<(usize, std::ops::Range<usize>)> = Vec::new();
        let mut i = 0;
        while i < row.cells.len() {
            let id = row.cells[i].column;
            let mut j = i + 1;
            while j < row.cells.len() && row.cells[j].column == id {
                j += 1;
            }
            if let Some(&(st, idx)) = header.by_id.get(&id) {
                if st == is_static {
                    groups.push((idx, i..j));
                }
            }
            i = j;
        }
        groups.sort_by_key(|g| g.0);
        // Cassandra's static rows never carry a primary key liveness (its
        // UpdateStatement gives one only to regular rows, and a static row
        // lives by its cells alone); Strata's reads ignore one too, so it is
        // not written, or Cassandra would see a static-only row no read here
        // shows once its cells are deleted.
        let liveness = if is_static {
            LivenessInfo::EMPTY
        } else {
            row.liveness
        };
        let has_complex_deletion = groups.iter().any(|(idx, r)| {
            columns[*idx].complex && row.cells[r.clone()].iter().any(|c| c.is_complex_deletion())
        });
        let mut flags = 0u8;
        if !liveness.is_empty() {
            flags |= HAS_TIMESTAMP;
            if liveness.is_expiring() {
                flags |= HAS_TTL;
                check_ldt(&key, liveness.local_expiry_seconds)?;
            }
        }
        if !row.deletion.is_live() {
            flags |= HAS_DELETION;
            check_ldt(&key, row.deletion.local_deletion_seconds)?;
        }
        if has_complex_deletion {
            flags |= HAS_COMPLEX_DELETION;
        }
        if groups.len() == columns.len() {
            flags |= HAS_ALL_COLUMNS;
        }
        if is_static {
            flags |= EXTENSION_FLAG;
        }

        let mut body = std::mem::take(&mut self.body_buf);
        body.clear();
        let h = &*header;
        if flags & HAS_TIMESTAMP != 0 {
            h.write_timestamp(liveness.timestamp_micros, &mut body);
        }
        if flags & HAS_TTL != 0 {
            h.write_ttl(liveness.ttl_seconds, &mut body);
            h.write_ldt(liveness.local_expiry_seconds, &mut body);
        }
        if flags & HAS_DELETION != 0 {
            h.write_deletion(row.deletion, &mut body);
        }
        if flags & HAS_ALL_COLUMNS == 0 {
            write_subset(groups.iter().map(|g| g.0), columns.len(), &mut body);
        }
        let mut cells_written = 0u64;
        for (idx, range) in &groups {
            let col = &columns[*idx];
            let cells = &row.cells[range.clone()];
            if col.complex {
                let deletion = cells
                    .iter()
                    .find(|c| c.is_complex_deletion())
                    .map_or(DeletionTime::LIVE, |c| {
                        DeletionTime::new(c.timestamp_micros, c.local_deletion_seconds)
                    });
                if has_complex_deletion {
                    if !deletion.is_live() {
                        check_ldt(&key, deletion.local_deletion_seconds)?;
                    }
                    h.write_deletion(deletion, &mut body);
                }
                self.stats.deletion(deletion);
                let elements: Vec<_> = cells.iter().filter(|c| !c.is_complex_deletion()).collect();
                vint::write_unsigned(&mut body, elements.len() as u64);
                for c in elements {
                    let path = match c.path.as_deref() {
                        Some(p) => marshal::cell_path(&col.ty, p)?,
                        None => {
                            return Err(Error::InvalidInput(format!(
                                "a cell of collection column {} without an element key",
                                col.name
                            )))
                        }
                    };
                    write_cell(h, &key, c, liveness, Some(&path), &col.ty, &mut body)?;
                    cells_written += 1;
                }
            } else {
                for c in cells {
                    write_cell(h, &key, c, liveness, None, &col.ty, &mut body)?;
                    cells_written += 1;
                }
            }
        }

        let mut out = std::mem::take(&mut self.row_buf);
        out.clear();
        out.push(flags);
        if is_static {
            out.push(IS_STATIC);
        } else {
            let values = self.header.clustering_values(&row.clustering)?;
            self.header.write_clustering_values(&values, &mut out)?;
        }
        // Clustering.Serializer: the values (a row's kind byte is added).
        let clustering_end = out.len();
        let previous = if is_static { 0 } else { self.previous_size() };
        vint::write_unsigned(
            &mut out,
            (body.len() + vint::unsigned_size(previous)) as u64,
        );
        vint::write_unsigned(&mut out, previous);
        out.extend_from_slice(&body);
        if is_static {
            self.data.write(&out)?;
        } else {
            self.emit_unfiltered(&out, Some(CLUSTERING_KIND), 1..clustering_end)?;
        }
        self.row_buf = out;
        self.body_buf = body;

        // Statistics (`Rows.collectStats`), for every row but an empty static one.
        let empty = liveness.is_empty() && row.deletion.is_live() && groups.is_empty();
        if !empty {
            if !is_static {
                self.stats.clustering(&row.clustering, false);
            }
            self.stats.liveness(liveness);
            self.stats.deletion(row.deletion);
            for (idx, range) in &groups {
                let col_complex = columns[*idx].complex;
                for c in &row.cells[range.clone()] {
                    if col_complex && c.is_complex_deletion() {
                        continue; // counted above
                    }
                    self.stats.timestamp(c.timestamp_micros);
                    self.stats.ttl(if c.kind == CellKind::Expiring {
                        c.ttl_seconds
                    } else {
                        0
                    });
                    self.stats.ldt(match c.kind {
                        CellKind::Live | CellKind::Counter => NO_DELETION_TIME,
                        _ => c.local_deletion_seconds,
                    });
                    if !c.is_live(self.stats.now_seconds) {
                        self.stats.tombstones += 1;
                    }
                }
            }
            self.stats.partition_cells += cells_written;
            self.stats.cells += cells_written;
            self.stats.total_columns_set += groups.len() as u64;
            self.stats.total_rows += 1;
        }
        Ok(())
    }

    /// Writes the remaining components and returns what the sstable holds.
    pub fn finish(mut self) -> Result<NbSummary> {
        if self.open.is_some() {
            return Err(Error::InvalidInput(
                "nb writer: a partition is still open".into(),
            ));
        }
        if self.keys == 0 {
            return Err(Error::InvalidInput(
                "nb writer: an sstable without partitions".into(),
            ));
        }
        let index_path = component_path(&self.dir, self.generation, "Index.db");
        self.index.flush().map_err(|e| Error::io(&index_path, e))?;
        self.index
            .get_ref()
            .sync_all()
            .map_err(|e| Error::io(&index_path, e))?;
        let DataWritten {
            uncompressed,
            on_disk,
            chunk_offsets: offsets,
            raw_crcs,
            digest,
        } = self.data.finish()?;
        let dir = self.dir.clone();
        let generation = self.generation;
        let path = |c: &str| component_path(&dir, generation, c);

        let mut components = vec![
            "Data.db",
            "Index.db",
            "Summary.db",
            "Filter.db",
            "Statistics.db",
            "Digest.crc32",
            "TOC.txt",
        ];
        match self.opts.compression {
            NbCompression::None => {
                // ChecksumWriter: the chunk size, then a CRC32 per chunk.
                let mut crc = Vec::with_capacity(4 + raw_crcs.len() * 4);
                crc.extend_from_slice(&(CRC_CHUNK_BYTES as i32).to_be_bytes());
                for c in &raw_crcs {
                    crc.extend_from_slice(&c.to_be_bytes());
                }
                write_file(&path("CRC.db"), &crc)?;
                components.push("CRC.db");
            }
            compression => {
                write_file(
                    &path("CompressionInfo.db"),
                    &compression_info(compression, self.opts.chunk_length, uncompressed, &offsets),
                )?;
                components.push("CompressionInfo.db");
            }
        }
        write_file(&path("Digest.crc32"), digest.to_string().as_bytes())?;

        let (filter, summary) = filter_and_summary(
            &path("Index.db"),
            self.keys,
            self.opts.bloom_filter_fp_chance,
        )?;
        write_file(&path("Filter.db"), &filter)?;
        let first = self.first_key.clone().expect("keys > 0");
        let last = self.last_key.clone().expect("keys > 0");
        let mut summary = summary;
        summary.extend_from_slice(&(first.key.len() as i32).to_be_bytes());
        summary.extend_from_slice(&first.key);
        summary.extend_from_slice(&(last.key.len() as i32).to_be_bytes());
        summary.extend_from_slice(&last.key);
        write_file(&path("Summary.db"), &summary)?;

        let ratio = match self.opts.compression {
            NbCompression::None => -1.0,
            _ => on_disk as f64 / uncompressed.max(1) as f64,
        };
        write_file(&path("Statistics.db"), &self.statistics(ratio))?;
        let mut toc = String::new();
        for c in &components {
            toc.push_str(c);
            toc.push('\n');
        }
        write_file(&path("TOC.txt"), toc.as_bytes())?;

        let s = &self.stats;
        Ok(NbSummary {
            generation,
            partitions: self.keys,
            rows: s.total_rows,
            cells: s.cells,
            tombstones: s.tombstones,
            range_tombstone_markers: s.markers,
            uncompressed_bytes: uncompressed,
            data_bytes: on_disk,
            min_timestamp_micros: s.timestamps.map(|t| t.0),
            max_timestamp_micros: s.timestamps.map(|t| t.1),
            max_local_deletion_seconds: s.ldts.map(|t| t.1).filter(|&l| l != NO_DELETION_TIME),
        })
    }

    /// Statistics.db (`MetadataSerializer`): VALIDATION, STATS and HEADER,
    /// each followed by its CRC32. COMPACTION (a cardinality sketch only
    /// used for key-count estimates) is left out: Cassandra then estimates
    /// from the index, as for any sstable without it.
    fn statistics(&self, compression_ratio: f64) -> Vec<u8> {
        let mut validation = Vec::new();
        write_utf(&mut validation, PARTITIONER);
        validation.extend_from_slice(&self.opts.bloom_filter_fp_chance.to_be_bytes());
        let mut header = Vec::new();
        self.header.encode(&mut header);
        let stats = self.stats_component(compression_ratio);
        let parts: [(i32, &[u8]); 3] = [(0, &validation), (2, &stats), (3, &header)];

        let mut out = Vec::new();
        let mut crc = crc32fast::Hasher::new();
        out.extend_from_slice(&(parts.len() as i32).to_be_bytes());
        crc.update(&(parts.len() as i32).to_be_bytes());
        out.extend_from_slice(&crc.clone().finalize().to_be_bytes());
        let mut position = 4 + 8 * parts.len() as i32 + 2 * 4;
        for (ty, bytes) in &parts {
            out.extend_from_slice(&ty.to_be_bytes());
            crc.update(&ty.to_be_bytes());
            out.extend_from_slice(&position.to_be_bytes());
            crc.update(&position.to_be_bytes());
            position += bytes.len() as i32 + 4;
        }
        out.extend_from_slice(&crc.finalize().to_be_bytes());
        for (_, bytes) in &parts {
            out.extend_from_slice(bytes);
            out.extend_from_slice(&crc32fast::hash(bytes).to_be_bytes());
        }
        out
    }

    /// `StatsMetadata.StatsMetadataSerializer.serialize` for `nb`.
    fn stats_component(&self, compression_ratio: f64) -> Vec<u8> {
        let s = &self.stats;
        let mut out = Vec::new();
        s.partition_sizes.encode(&mut out);
        s.cells_per_partition.encode(&mut out);
        let no_position = |out: &mut Vec<u8>| {
            out.extend_from_slice(&(-1i64).to_be_bytes());
            out.extend_from_slice(&0i32.to_be_bytes());
        };
        no_position(&mut out); // commit-log upper bound
        let (min_ts, max_ts) = s.timestamps.unwrap_or((i64::MIN, i64::MAX));
        out.extend_from_slice(&min_ts.to_be_bytes());
        out.extend_from_slice(&max_ts.to_be_bytes());
        let (min_ldt, max_ldt) = s.ldts.unwrap_or((NO_DELETION_TIME, NO_DELETION_TIME));
        out.extend_from_slice(&nb_ldt(min_ldt).to_be_bytes());
        out.extend_from_slice(&nb_ldt(max_ldt).to_be_bytes());
        let (min_ttl, max_ttl) = s.ttls.unwrap_or((0, 0));
        out.extend_from_slice(&(min_ttl as i32).to_be_bytes());
        out.extend_from_slice(&(max_ttl as i32).to_be_bytes());
        out.extend_from_slice(&compression_ratio.to_be_bytes());
        // The legacy tombstone histogram: (double point, long count).
        out.extend_from_slice(&(s.drop_times.len() as i32).to_be_bytes());
        out.extend_from_slice(&(s.drop_times.len() as i32).to_be_bytes());
        for (&point, &count) in &s.drop_times {
            out.extend_from_slice(&(nb_ldt(point) as f64).to_be_bytes());
            out.extend_from_slice(&(count as i64).to_be_bytes());
        }
        out.extend_from_slice(&0i32.to_be_bytes()); // level
        out.extend_from_slice(&0i64.to_be_bytes()); // repaired at
                                                    // Covered clustering: the values of the smallest and largest
                                                    // clustering, read as an inclusive start and end.
        for c in [&s.min_clustering, &s.max_clustering] {
            let values = match c {
                Some(c) => self.header.clustering_values(c).unwrap_or_default(),
                None => Vec::new(),
            };
            out.extend_from_slice(&(values.len() as i32).to_be_bytes());
            for v in &values {
                out.extend_from_slice(&(v.len() as u16).to_be_bytes());
                out.extend_from_slice(v);
            }
        }
        out.push(0); // no legacy counter shards
        out.extend_from_slice(&(s.total_columns_set as i64).to_be_bytes());
        out.extend_from_slice(&(s.total_rows as i64).to_be_bytes());
        no_position(&mut out); // commit-log lower bound
        out.extend_from_slice(&0i32.to_be_bytes()); // commit-log intervals: none
        out.push(0); // no pending repair
        out.push(0); // not transient
        out.push(0); // no originating host id
        out
    }
}

fn check_ldt(key: &DecoratedKey, ldt: i64) -> Result<()> {
    if ldt != NO_DELETION_TIME && ldt > MAX_NB_DELETION_TIME {
        return Err(Error::InvalidInput(format!(
            "partition with token {}: a deletion or expiry time after 2038-01-19 ({ldt} s), \
             which Cassandra's nb format cannot hold",
            key.token
        )));
    }
    Ok(())
}

/// `Cell.Serializer.serialize`.
fn write_cell(
    h: &Header,
    key: &DecoratedKey,
    c: &crate::data::Cell,
    row: LivenessInfo,
    path: Option<&[u8]>,
    ty: &CqlType,
    out: &mut Vec<u8>,
) -> Result<()> {
    let deleted = c.kind == CellKind::Tombstone;
    let expiring = c.kind == CellKind::Expiring;
    if deleted || expiring {
        check_ldt(key, c.local_deletion_seconds)?;
    }
    let value: &[u8] = if deleted { &[] } else { &c.value };
    let use_row_ts = !row.is_empty() && c.timestamp_micros == row.timestamp_micros;
    let use_row_ttl = expiring
        && row.is_expiring()
        && c.ttl_seconds == row.ttl_seconds
        && c.local_deletion_seconds == row.local_expiry_seconds;
    let mut flags = 0u8;
    if value.is_empty() {
        flags |= CELL_HAS_EMPTY_VALUE;
    }
    if deleted {
        flags |= CELL_IS_DELETED;
    } else if expiring {
        flags |= CELL_IS_EXPIRING;
    }
    if use_row_ts {
        flags |= CELL_USE_ROW_TIMESTAMP;
    }
    if use_row_ttl {
        flags |= CELL_USE_ROW_TTL;
    }
    out.push(flags);
    if !use_row_ts {
        h.write_timestamp(c.timestamp_micros, out);
    }
    if (deleted || expiring) && !use_row_ttl {
        h.write_ldt(c.local_deletion_seconds, out);
    }
    if expiring && !use_row_ttl {
        h.write_ttl(c.ttl_seconds, out);
    }
    if let Some(p) = path {
        marshal::write_with_length(p, out);
        // A complex column's cell value is typed by the collection: always
        // length-prefixed.
        if !value.is_empty() {
            marshal::write_with_length(value, out);
        }
    } else if !value.is_empty() {
        marshal::write_value(ty, value, out)?;
    }
    Ok(())
}

/// `Columns.serializeSubset`: a bitmap of the missing columns below 64
/// columns, else a count and the shorter list of indexes.
fn write_subset(present: impl Iterator<Item = usize> + Clone, superset: usize, out: &mut Vec<u8>) {
    let count = present.clone().count();
    if count == superset {
        vint::write_unsigned(out, 0);
    } else if superset < 64 {
        let mut missing = if superset == 0 {
            0
        } else {
            u64::MAX >> (64 - superset)
        };
        for i in present {
            missing &= !(1u64 << i);
        }
        vint::write_unsigned(out, missing);
    } else {
        vint::write_unsigned(out, (superset - count) as u64);
        if count < superset / 2 {
            for i in present {
                vint::write_unsigned(out, i as u64);
            }
        } else {
            let present: Vec<usize> = present.collect();
            let mut p = present.iter().peekable();
            for i in 0..superset {
                if p.peek() == Some(&&i) {
                    p.next();
                } else {
                    vint::write_unsigned(out, i as u64);
                }
            }
        }
    }
}

fn write_utf(out: &mut Vec<u8>, s: &str) {
    out.extend_from_slice(&(s.len() as u16).to_be_bytes());
    out.extend_from_slice(s.as_bytes());
}

/// CompressionInfo.db (`CompressionMetadata.Writer`).
fn compression_info(
    c: NbCompression,
    chunk_length: usize,
    data_length: u64,
    offsets: &[u64],
) -> Vec<u8> {
    let mut out = Vec::new();
    let (class, options): (&str, Vec<(String, String)>) = match c {
        NbCompression::Lz4 => ("LZ4Compressor", Vec::new()),
        NbCompression::Zstd { level } => (
            "ZstdCompressor",
            vec![("compression_level".into(), level.to_string())],
        ),
        NbCompression::None => ("", Vec::new()),
    };
    write_utf(&mut out, class);
    out.extend_from_slice(&(options.len() as i32).to_be_bytes());
    for (k, v) in &options {
        write_utf(&mut out, k);
        write_utf(&mut out, v);
    }
    out.extend_from_slice(&(chunk_length as i32).to_be_bytes());
    out.extend_from_slice(&i32::MAX.to_be_bytes()); // max compressed length
    out.extend_from_slice(&(data_length as i64).to_be_bytes());
    out.extend_from_slice(&(offsets.len() as i32).to_be_bytes());
    for o in offsets {
        out.extend_from_slice(&(*o as i64).to_be_bytes());
    }
    out
}

/// Cassandra's Bloom filter parameters for `keys` at `fp_chance`
/// (`BloomCalculations.computeBloomSpec`): (hash count, buckets per key).
fn bloom_spec(fp_chance: f64) -> (u32, u64) {
    const PROBS: &[&[f64]] = &[
        &[1.0],
        &[1.0, 1.0],
        &[1.0, 0.393, 0.400],
        &[1.0, 0.283, 0.237, 0.253],
        &[1.0, 0.221, 0.155, 0.147, 0.160],
        &[1.0, 0.181, 0.109, 0.092, 0.092, 0.101],
        &[1.0, 0.154, 0.0804, 0.0609, 0.0561, 0.0578, 0.0638],
        &[1.0, 0.133, 0.0618, 0.0423, 0.0359, 0.0347, 0.0364],
        &[1.0, 0.118, 0.0489, 0.0306, 0.024, 0.0217, 0.0216, 0.0229],
        &[
            1.0, 0.105, 0.0397, 0.0228, 0.0166, 0.0141, 0.0133, 0.0135, 0.0145,
        ],
        &[
            1.0, 0.0952, 0.0329, 0.0174, 0.0118, 0.00943, 0.00844, 0.00819, 0.00846,
        ],
        &[
            1.0, 0.0869, 0.0276, 0.0136, 0.00864, 0.0065, 0.00552, 0.00513, 0.00509,
        ],
        &[
            1.0, 0.08, 0.0236, 0.0108, 0.00646, 0.00459, 0.00371, 0.00329, 0.00314,
        ],
        &[
            1.0, 0.074, 0.0203, 0.00875, 0.00492, 0.00332, 0.00255, 0.00217, 0.00199, 0.00194,
        ],
        &[
            1.0, 0.0689, 0.0177, 0.00718, 0.00381, 0.00244, 0.00179, 0.00146, 0.00129, 0.00121,
            0.0012,
        ],
        &[
            1.0, 0.0645, 0.0156, 0.00596, 0.003, 0.00183, 0.00128, 0.001, 0.000852, 0.000775,
            0.000744,
        ],
        &[
            1.0, 0.0606, 0.0138, 0.005, 0.00239, 0.00139, 0.000935, 0.000702, 0.000574, 0.000505,
            0.00047, 0.000459,
        ],
        &[
            1.0, 0.0571, 0.0123, 0.00423, 0.00193, 0.00107, 0.000692, 0.000499, 0.000394, 0.000335,
            0.000302, 0.000287, 0.000284,
        ],
        &[
            1.0, 0.054, 0.0111, 0.00362, 0.00158, 0.000839, 0.000519, 0.00036, 0.000275, 0.000226,
            0.000198, 0.000183, 0.000176,
        ],
        &[
            1.0, 0.0513, 0.00998, 0.00312, 0.0013, 0.000663, 0.000394, 0.000264, 0.000194,
            0.000155, 0.000132, 0.000118, 0.000111, 0.000109,
        ],
        &[
            1.0, 0.0488, 0.00906, 0.0027, 0.00108, 0.00053, 0.000303, 0.000196, 0.00014, 0.000108,
            8.89e-05, 7.77e-05, 7.12e-05, 6.79e-05, 6.71e-05,
        ],
    ];
    let opt_k = |b: usize| -> usize {
        let row = PROBS[b];
        let mut best = 0;
        let mut min = f64::MAX;
        for (j, &p) in row.iter().enumerate() {
            if p < min {
                min = p;
                best = j.max(1);
            }
        }
        best
    };
    if fp_chance >= PROBS[2][1] {
        // Cassandra's trivial case: BloomSpecification(2, optK[2]) — two
        // hashes, optK[2] buckets (its argument order).
        return (2, opt_k(2) as u64);
    }
    let max_b = PROBS.len() - 1;
    let fp = fp_chance.max(PROBS[max_b][PROBS[max_b].len() - 1]);
    let mut b = 2;
    let mut k = opt_k(2);
    while PROBS[b][k] > fp && b < max_b {
        b += 1;
        k = opt_k(b);
    }
    while k > 1 && PROBS[b][k - 1] <= fp {
        k -= 1;
    }
    (k as u32, b as u64)
}

/// Filter.db and Summary.db (without its first and last keys), from the
/// keys of Index.db in one pass.
fn filter_and_summary(index: &Path, keys: u64, fp_chance: f64) -> Result<(Vec<u8>, Vec<u8>)> {
    let (hashes, buckets) = bloom_spec(fp_chance);
    let bits = keys
        .checked_mul(buckets)
        .and_then(|b| b.checked_add(20))
        .ok_or_else(|| Error::InvalidInput("too many keys for one Bloom filter".into()))?;
    let words = bits.div_ceil(64);
    let capacity = words * 64;
    let mut bitset = vec![0u8; (words * 8) as usize];

    let mut offsets: Vec<u32> = Vec::new();
    let mut entries: Vec<u8> = Vec::new();
    // Streamed: Index.db is as large as the keys, and the filter is built
    // in one pass over it.
    let file = File::open(index).map_err(|e| Error::io(index, e))?;
    let mut input = std::io::BufReader::with_capacity(1 << 16, file);
    let io = |e| Error::io(index, e);
    let mut n = 0u64;
    let mut position = 0u64;
    let mut key = Vec::new();
    let mut head = [0u8; 2];
    loop {
        match input.read_exact(&mut head) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break,
            Err(e) => return Err(io(e)),
        }
        let len = u16::from_be_bytes(head) as usize;
        key.resize(len, 0);
        input.read_exact(&mut key).map_err(io)?;
        let mut entry_len = 2 + len as u64;
        // The partition's position, then its row index's size and body.
        let mut index_size = 0;
        for _ in 0..2 {
            let mut vint_bytes = [0u8; 9];
            input.read_exact(&mut vint_bytes[..1]).map_err(io)?;
            let extra = vint_bytes[0].leading_ones() as usize;
            input
                .read_exact(&mut vint_bytes[1..1 + extra])
                .map_err(io)?;
            index_size = vint::read_unsigned(&mut &vint_bytes[..1 + extra])
                .map_err(|e| Error::InvalidInput(format!("{}: {}", index.display(), e.0)))?;
            entry_len += 1 + extra as u64;
        }
        // Written by this module a moment ago, so bounded by the file.
        let skipped =
            std::io::copy(&mut (&mut input).take(index_size), &mut std::io::sink()).map_err(io)?;
        if skipped != index_size {
            return Err(Error::InvalidInput(format!(
                "{}: a row index runs past the end of the file",
                index.display()
            )));
        }
        entry_len += index_size;
        // BloomFilter.add: bit i is |(h1 + i*h0) mod m| of the key's Murmur3.
        let (h0, h1) = crate::token::murmur3_x64_128(&key, 0);
        let mut base = h1 as i64;
        for _ in 0..hashes {
            let bit = (base % capacity as i64).unsigned_abs();
            bitset[(bit >> 3) as usize] |= 1 << (bit & 7);
            base = base.wrapping_add(h0 as i64);
        }
        if n.is_multiple_of(MIN_INDEX_INTERVAL) {
            offsets.push(entries.len() as u32);
            entries.extend_from_slice(&key);
            entries.extend_from_slice(&(position as i64).to_le_bytes());
        }
        position += entry_len;
        n += 1;
    }
    if n != keys {
        return Err(Error::InvalidInput(format!(
            "Index.db holds {n} keys where {keys} were written"
        )));
    }
    let mut filter = Vec::with_capacity(8 + bitset.len());
    filter.extend_from_slice(&(hashes as i32).to_be_bytes());
    filter.extend_from_slice(&(words as i32).to_be_bytes());
    filter.extend_from_slice(&bitset);

    // IndexSummary.Serializer: native-order offsets shifted by their own
    // size, then the entries.
    let mut summary = Vec::new();
    summary.extend_from_slice(&(MIN_INDEX_INTERVAL as i32).to_be_bytes());
    summary.extend_from_slice(&(offsets.len() as i32).to_be_bytes());
    let off_heap = offsets.len() as i64 * 4 + entries.len() as i64;
    summary.extend_from_slice(&off_heap.to_be_bytes());
    summary.extend_from_slice(&128i32.to_be_bytes()); // sampling level
    let full = n.div_ceil(MIN_INDEX_INTERVAL) as i32;
    summary.extend_from_slice(&full.to_be_bytes());
    let base = offsets.len() as u32 * 4;
    for o in &offsets {
        summary.extend_from_slice(&(o + base).to_le_bytes());
    }
    summary.extend_from_slice(&entries);
    Ok((filter, summary))
}

/// `<dir>/nb-<generation>-big-<component>`.
pub fn component_path(dir: &Path, generation: u64, component: &str) -> PathBuf {
    dir.join(format!("nb-{generation}-big-{component}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::{ClusteringBound, ClusteringRange, RangeTombstone};
    use crate::types::Value;

    /// A schema with a clustering column, a static and a regular column.
    fn schema() -> TableSchema {
        TableSchema::from_cql(
            "CREATE TABLE ks.t (pk int, ck text, v bigint, s text static, \
             PRIMARY KEY (pk, ck))",
        )
        .unwrap()
    }

    /// Options of the tests' sstables: deletion times from 1,000 s, "now"
    /// at 2,000 s.
    fn test_options(compression: NbCompression, chunk_length: usize) -> NbOptions {
        NbOptions {
            compression,
            chunk_length,
            bloom_filter_fp_chance: 0.01,
            min_timestamp_micros: 0,
            min_local_deletion_seconds: 1_000,
            min_ttl_seconds: 0,
            now_seconds: 2_000,
        }
    }

    fn write_sample(dir: &Path, compression: NbCompression, keys: i32) -> NbSummary {
        let schema = schema();
        let opts = test_options(compression, 1024);
        let header = Header::new(&schema, &opts).unwrap();
        let mut w = NbWriter::create(dir, 1, header, opts).unwrap();
        let v = schema.column("v").unwrap().id.unwrap();
        let mut parts: Vec<DecoratedKey> = (0..keys)
            .map(|k| DecoratedKey::new(&k.to_be_bytes()))
            .collect();
        parts.sort();
        for key in &parts {
            let mut deletion = PartitionDeletion::default();
            deletion.ranges.push(RangeTombstone {
                range: range(
                    &schema
                        .encode_clustering(&[Value::Text("m".into())])
                        .unwrap(),
                    true,
                    &[],
                    true,
                ),
                deletion: DeletionTime::new(5, 1_500),
            });
            w.begin_partition(key, &deletion, None).unwrap();
            for i in 0..20 {
                let ck = schema
                    .encode_clustering(&[Value::Text(format!("r{i:02}"))])
                    .unwrap();
                let mut row = Row::new(ck);
                row.liveness = LivenessInfo::new(10 + i as i64);
                row.add_cell(crate::data::Cell::live(
                    v,
                    10 + i as i64,
                    (i as i64).to_be_bytes().to_vec(),
                ));
                w.append_row(&row).unwrap();
            }
            w.end_partition().unwrap();
        }
        w.finish().unwrap()
    }

    fn read(dir: &Path, c: &str) -> Vec<u8> {
        std::fs::read(component_path(dir, 1, c)).unwrap()
    }

    /// The uncompressed Data.db, checking every chunk's CRC on the way.
    fn data_of(dir: &Path) -> Vec<u8> {
        let data = read(dir, "Data.db");
        let info = read(dir, "CompressionInfo.db");
        let class_len = u16::from_be_bytes([info[0], info[1]]) as usize;
        assert_eq!(&info[2..2 + class_len], b"LZ4Compressor");
        let mut p = 2 + class_len;
        let be32 = |b: &[u8]| i32::from_be_bytes(b[..4].try_into().unwrap());
        let be64 = |b: &[u8]| i64::from_be_bytes(b[..8].try_into().unwrap());
        assert_eq!(be32(&info[p..]), 0); // options
        p += 4;
        let chunk_length = be32(&info[p..]) as usize;
        p += 8; // and max compressed length
        let length = be64(&info[p..]) as usize;
        p += 8;
        let chunks = be32(&info[p..]) as usize;
        p += 4;
        let offsets: Vec<usize> = (0..chunks)
            .map(|i| be64(&info[p + 8 * i..]) as usize)
            .collect();
        let mut out = Vec::new();
        for (i, &o) in offsets.iter().enumerate() {
            let end = offsets.get(i + 1).copied().unwrap_or(data.len()) - 4;
            let stored = &data[o..end];
            let crc = u32::from_be_bytes(data[end..end + 4].try_into().unwrap());
            assert_eq!(crc, crc32fast::hash(stored), "chunk {i}");
            let n = u32::from_le_bytes(stored[..4].try_into().unwrap()) as usize;
            assert!(n <= chunk_length);
            let mut buf = vec![0u8; n];
            crate::lz4::decompress_into(&stored[4..], &mut buf).unwrap();
            out.extend_from_slice(&buf);
        }
        assert_eq!(out.len(), length);
        out
    }

    #[test]
    fn components_agree_with_each_other() {
        let dir = tempfile::tempdir().unwrap();
        let s = write_sample(dir.path(), NbCompression::Lz4, 300);
        assert_eq!((s.partitions, s.rows, s.cells), (300, 6_000, 6_000));
        assert_eq!(s.range_tombstone_markers, 600);
        // Digest.crc32: the CRC32 of Data.db as stored, in decimal.
        let digest = String::from_utf8(read(dir.path(), "Digest.crc32")).unwrap();
        assert_eq!(
            digest,
            crc32fast::hash(&read(dir.path(), "Data.db")).to_string()
        );
        let data = data_of(dir.path());
        // Every Index.db entry points at its partition's key in Data.db, and
        // each partition ends with the end flag right before the next.
        let index = read(dir.path(), "Index.db");
        let mut input = index.as_slice();
        let mut positions = Vec::new();
        while !input.is_empty() {
            let len = u16::from_be_bytes([input[0], input[1]]) as usize;
            let key = input[2..2 + len].to_vec();
            input = &input[2 + len..];
            let pos = vint::read_unsigned(&mut input).unwrap() as usize;
            assert_eq!(vint::read_unsigned(&mut input).unwrap(), 0);
            assert_eq!(&data[pos..pos + 2], &(len as u16).to_be_bytes());
            assert_eq!(&data[pos + 2..pos + 2 + len], key.as_slice());
            positions.push((pos, key));
        }
        assert_eq!(positions.len(), 300);
        for w in positions.windows(2) {
            assert_eq!(data[w[1].0 - 1], END_OF_PARTITION);
        }
        assert_eq!(*data.last().unwrap(), END_OF_PARTITION);
        // Filter.db: every key's five bits are set.
        let filter = read(dir.path(), "Filter.db");
        let hashes = i32::from_be_bytes(filter[..4].try_into().unwrap());
        let words = i32::from_be_bytes(filter[4..8].try_into().unwrap()) as u64;
        assert_eq!(hashes, 5);
        assert_eq!(words, (300 * 10 + 20u64).div_ceil(64));
        let bits = &filter[8..];
        for (_, key) in &positions {
            let (h0, h1) = crate::token::murmur3_x64_128(key, 0);
            let mut base = h1 as i64;
            for _ in 0..hashes {
                let b = (base % (words * 64) as i64).unsigned_abs();
                assert!(bits[(b >> 3) as usize] & (1 << (b & 7)) != 0);
                base = base.wrapping_add(h0 as i64);
            }
        }
        // Summary.db: every 128th key, then the first and last key.
        let summary = read(dir.path(), "Summary.db");
        assert_eq!(i32::from_be_bytes(summary[4..8].try_into().unwrap()), 3);
        let tail = &summary[summary.len() - 8..];
        assert_eq!(tail[..4], 4i32.to_be_bytes());
        assert_eq!(tail[4..], positions.last().unwrap().1[..]);
        // Statistics.db: the table of contents and every CRC.
        let st = read(dir.path(), "Statistics.db");
        assert_eq!(st[..4], 3i32.to_be_bytes());
        assert_eq!(st[4..8], crc32fast::hash(&st[..4]).to_be_bytes());
        let toc_end = 8 + 3 * 8;
        // The second CRC runs over the count and the entries, not the first CRC.
        let mut toc_crc = crc32fast::Hasher::new();
        toc_crc.update(&st[..4]);
        toc_crc.update(&st[8..toc_end]);
        assert_eq!(
            st[toc_end..toc_end + 4],
            toc_crc.finalize().to_be_bytes()[..]
        );
        let offset = |i: usize| {
            i32::from_be_bytes(st[8 + 8 * i + 4..8 + 8 * i + 8].try_into().unwrap()) as usize
        };
        for i in 0..3 {
            let start = offset(i);
            let end = if i < 2 { offset(i + 1) } else { st.len() } - 4;
            assert_eq!(
                st[end..end + 4],
                crc32fast::hash(&st[start..end]).to_be_bytes()[..]
            );
        }
        let toc = String::from_utf8(read(dir.path(), "TOC.txt")).unwrap();
        assert!(toc.contains("CompressionInfo.db") && !toc.contains("CRC.db"));
    }

    #[test]
    fn uncompressed_data_has_crc_db() {
        let dir = tempfile::tempdir().unwrap();
        let s = write_sample(dir.path(), NbCompression::None, 1_000);
        let data = read(dir.path(), "Data.db");
        assert_eq!(data.len() as u64, s.uncompressed_bytes);
        let crc = read(dir.path(), "CRC.db");
        assert_eq!(crc[..4], (CRC_CHUNK_BYTES as i32).to_be_bytes());
        let chunks: Vec<_> = data.chunks(CRC_CHUNK_BYTES).collect();
        assert_eq!(crc.len(), 4 + 4 * chunks.len());
        for (i, c) in chunks.iter().enumerate() {
            assert_eq!(crc[4 + 4 * i..8 + 4 * i], crc32fast::hash(c).to_be_bytes());
        }
        assert!(!component_path(dir.path(), 1, "CompressionInfo.db").exists());
    }

    #[test]
    fn an_expiry_after_2038_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let schema = schema();
        let opts = NbOptions {
            compression: NbCompression::Lz4,
            chunk_length: 1024,
            bloom_filter_fp_chance: 0.01,
            min_timestamp_micros: 0,
            min_local_deletion_seconds: 0,
            min_ttl_seconds: 0,
            now_seconds: 0,
        };
        let header = Header::new(&schema, &opts).unwrap();
        let mut w = NbWriter::create(dir.path(), 1, header, opts).unwrap();
        let v = schema.column("v").unwrap().id.unwrap();
        let key = DecoratedKey::new(&1i32.to_be_bytes());
        w.begin_partition(&key, &PartitionDeletion::default(), None)
            .unwrap();
        let mut row = Row::new(
            schema
                .encode_clustering(&[Value::Text("a".into())])
                .unwrap(),
        );
        row.add_cell(crate::data::Cell::expiring(
            v,
            1,
            100,
            i32::MAX as i64,
            vec![0; 8],
        ));
        let e = w.append_row(&row).unwrap_err().to_string();
        assert!(e.contains("2038"), "{e}");
    }

    #[test]
    fn histogram_offsets_are_cassandras() {
        let o = histogram_offsets(155);
        assert_eq!(&o[..12], &[1, 2, 3, 4, 5, 6, 7, 8, 10, 12, 14, 17]);
        assert_eq!(o.len(), 155);
        let mut h = Histogram::new(155);
        h.add(0);
        h.add(1);
        h.add(9);
        h.add(i64::MAX);
        assert_eq!(h.buckets[0], 2);
        assert_eq!(h.buckets[8], 1);
        assert_eq!(h.buckets[155], 1);
    }

    #[test]
    fn bloom_spec_is_cassandras() {
        // BloomCalculations.computeBloomSpec(20, p) in Cassandra 5.0.9.
        assert_eq!(bloom_spec(0.01), (5, 10));
        assert_eq!(bloom_spec(0.1), (3, 5));
        assert_eq!(bloom_spec(0.001), (7, 15));
    }

    #[test]
    fn subsets_are_cassandras() {
        let mut out = Vec::new();
        write_subset([0usize, 2].into_iter(), 4, &mut out);
        assert_eq!(out, [0b1010]);
        out.clear();
        write_subset([0usize, 1, 2, 3].into_iter(), 4, &mut out);
        assert_eq!(out, [0]);
        out.clear();
        // 70 columns, two present: the count missing, then the present ones.
        write_subset([3usize, 69].into_iter(), 70, &mut out);
        assert_eq!(out, [68, 3, 69]);
    }

    /// Reads one `IndexInfo` clustering of the sample schema (one text
    /// column): a row's kind and values, or a bound's kind, size and values.
    /// Returns the kind and the text.
    fn index_clustering(input: &mut &[u8]) -> (u8, String) {
        let kind = input[0];
        *input = &input[1..];
        let size = if kind == CLUSTERING_KIND {
            1
        } else {
            let n = u16::from_be_bytes([input[0], input[1]]);
            *input = &input[2..];
            n
        };
        if size == 0 {
            return (kind, String::new());
        }
        assert_eq!(
            vint::read_unsigned(input).unwrap(),
            0,
            "no null or empty values"
        );
        let len = vint::read_unsigned(input).unwrap() as usize;
        let text = String::from_utf8(input[..len].to_vec()).unwrap();
        *input = &input[len..];
        (kind, text)
    }

    #[test]
    fn a_static_row_is_written_without_liveness() {
        // Found by the golden statements' trip through Cassandra: a
        // static-only INSERT then `DELETE s` left Cassandra a row that
        // Strata's reads (and Cassandra's own writes) do not have.
        let schema = schema();
        let dir = tempfile::tempdir().unwrap();
        let opts = test_options(NbCompression::Lz4, 4096);
        let header = Header::new(&schema, &opts).unwrap();
        let mut w = NbWriter::create(dir.path(), 1, header, opts).unwrap();
        let s_col = schema.column("s").unwrap().id.unwrap();
        let mut st = Row::new(Vec::new());
        st.liveness = LivenessInfo::new(1_000);
        st.add_cell(crate::data::Cell::tombstone(s_col, 1_010, 1_500));
        let key = DecoratedKey::new(&1i32.to_be_bytes());
        w.begin_partition(&key, &PartitionDeletion::default(), Some(&st))
            .unwrap();
        w.end_partition().unwrap();
        w.finish().unwrap();
        let data = data_of(dir.path());
        let flags = data[2 + 4 + 12];
        assert_eq!(flags & EXTENSION_FLAG, EXTENSION_FLAG, "the static row");
        assert_eq!(data[2 + 4 + 12 + 1], IS_STATIC);
        assert_eq!(flags & (HAS_TIMESTAMP | HAS_TTL), 0, "no liveness");
    }

    #[test]
    fn a_wide_partition_gets_cassandras_row_index() {
        let schema = schema();
        let dir = tempfile::tempdir().unwrap();
        let opts = test_options(NbCompression::Lz4, 4096);
        let header = Header::new(&schema, &opts).unwrap();
        let mut w = NbWriter::create(dir.path(), 1, header, opts).unwrap();
        let v = schema.column("v").unwrap().id.unwrap();
        let text = |t: &str| schema.encode_clustering(&[Value::Text(t.into())]).unwrap();
        let narrow = DecoratedKey::new(&1i32.to_be_bytes());
        let wide = DecoratedKey::new(&2i32.to_be_bytes());
        let mut keys = [narrow.clone(), wide.clone()];
        keys.sort();
        let deleted = DeletionTime::new(5, 1_500);
        for key in &keys {
            let mut deletion = PartitionDeletion::default();
            let rows = if *key == wide { 20_000 } else { 10 };
            if *key == wide {
                deletion.ranges.push(RangeTombstone {
                    range: range(&text("r05000"), true, &text("r09000"), false),
                    deletion: deleted,
                });
            }
            w.begin_partition(key, &deletion, None).unwrap();
            for i in 0..rows {
                let mut row = Row::new(text(&format!("r{i:05}")));
                row.liveness = LivenessInfo::new(10);
                row.add_cell(crate::data::Cell::live(
                    v,
                    10,
                    (i as i64).to_be_bytes().to_vec(),
                ));
                w.append_row(&row).unwrap();
            }
            w.end_partition().unwrap();
        }
        w.finish().unwrap();
        let data = data_of(dir.path());
        let index = read(dir.path(), "Index.db");

        let mut input = index.as_slice();
        let mut entries = Vec::new();
        while !input.is_empty() {
            let len = u16::from_be_bytes([input[0], input[1]]) as usize;
            let key = input[2..2 + len].to_vec();
            input = &input[2 + len..];
            let start = vint::read_unsigned(&mut input).unwrap() as usize;
            let size = vint::read_unsigned(&mut input).unwrap() as usize;
            let (entry, rest) = input.split_at(size);
            input = rest;
            entries.push((key, start, entry));
        }
        assert_eq!(entries.len(), 2);
        let mut blocks_seen = 0;
        for (n, &(ref key, start, entry)) in entries.iter().enumerate() {
            let partition_end = entries.get(n + 1).map_or(data.len(), |e| e.1);
            if key.as_slice() == narrow.key.as_ref() {
                assert!(
                    entry.is_empty(),
                    "a partition of one block has no row index"
                );
                continue;
            }
            let mut e = entry;
            let header_length = vint::read_unsigned(&mut e).unwrap() as usize;
            // Key and live partition deletion (2 + 4 + 12 bytes), then the
            // table's (empty) static row, which the header includes.
            assert!(header_length > 2 + 4 + 12);
            assert_eq!(data[start + 18], EXTENSION_FLAG);
            assert_eq!(data[start + 19], IS_STATIC);
            assert_eq!(e[..12], [0x7f, 0xff, 0xff, 0xff, 0x80, 0, 0, 0, 0, 0, 0, 0]);
            e = &e[12..];
            let count = vint::read_unsigned(&mut e).unwrap() as usize;
            let offsets: Vec<usize> = e[e.len() - 4 * count..]
                .chunks(4)
                .map(|c| u32::from_be_bytes(c.try_into().unwrap()) as usize)
                .collect();
            let all_infos = &e[..e.len() - 4 * count];
            let mut infos = all_infos;
            let mut expected_offset = header_length;
            let mut open_markers = 0;
            for (i, &o) in offsets.iter().enumerate() {
                assert_eq!(o, all_infos.len() - infos.len(), "offset of block {i}");
                let (first_kind, first) = index_clustering(&mut infos);
                let (_, last) = index_clustering(&mut infos);
                let offset = vint::read_unsigned(&mut infos).unwrap() as usize;
                let zigzag = vint::read_unsigned(&mut infos).unwrap() as i64;
                let width = ((zigzag >> 1) ^ -(zigzag & 1)) as usize + 64 * 1024;
                assert_eq!(offset, expected_offset, "blocks are contiguous");
                expected_offset += width;
                // The block starts with the unfiltered its first clustering names.
                let at = &data[start + offset..];
                if first_kind == CLUSTERING_KIND {
                    assert_eq!(at[0] & IS_MARKER, 0);
                } else {
                    assert_eq!(at[0], IS_MARKER);
                    assert_eq!(at[1], first_kind);
                }
                assert!(first <= last);
                let has_marker = infos[0] == 1;
                if has_marker {
                    assert_eq!(infos[1..13], [0, 0, 0x05, 0xdc, 0, 0, 0, 0, 0, 0, 0, 5]);
                    infos = &infos[13..];
                    open_markers += 1;
                } else {
                    infos = &infos[1..];
                }
                // The deletion is open at a block's end exactly when its last
                // unfiltered is inside the range.
                let inside = last.as_str() >= "r05000" && last.as_str() < "r09000";
                assert_eq!(has_marker, inside, "block {i} ends at {last}");
                if i + 1 < count {
                    assert!(width >= 64 * 1024, "only the last block is short");
                }
            }
            assert!(infos.is_empty());
            assert!(count >= 5, "{count} blocks");
            assert!(open_markers >= 1);
            // The last block runs through the end-of-partition byte.
            assert_eq!(start + expected_offset, partition_end);
            assert_eq!(data[partition_end - 1], END_OF_PARTITION);
            blocks_seen = count;
        }
        assert!(blocks_seen > 0, "the wide partition was indexed");
    }

    fn range(start: &[u8], start_incl: bool, end: &[u8], end_incl: bool) -> ClusteringRange {
        ClusteringRange {
            start: ClusteringBound {
                prefix: start.to_vec(),
                inclusive: start_incl,
            },
            end: ClusteringBound {
                prefix: end.to_vec(),
                inclusive: end_incl,
            },
        }
    }

    #[test]
    fn overlapping_ranges_become_alternating_markers() {
        let d1 = DeletionTime::new(10, 100);
        let d2 = DeletionTime::new(20, 100);
        let deletion = PartitionDeletion {
            partition: None,
            ranges: vec![
                RangeTombstone {
                    range: range(b"b", true, b"f", true),
                    deletion: d1,
                },
                RangeTombstone {
                    range: range(b"d", false, b"h", false),
                    deletion: d2,
                },
            ],
        };
        let m = markers(&deletion);
        let kinds: Vec<u8> = m.iter().map(|m| m.kind()).collect();
        // open b (incl), boundary after d (d1 -> d2), close before h.
        assert_eq!(kinds, [1, 5, 0]);
        assert_eq!(m[0].at.prefix, b"b");
        assert_eq!(m[1].at.prefix, b"d");
        assert_eq!((m[1].before, m[1].after), (d1, d2));
        assert_eq!(m[2].at.prefix, b"h");
    }

    #[test]
    fn a_range_inside_a_stronger_one_leaves_no_marker() {
        let strong = DeletionTime::new(50, 100);
        let deletion = PartitionDeletion {
            partition: None,
            ranges: vec![
                RangeTombstone {
                    range: range(b"", true, b"", true),
                    deletion: strong,
                },
                RangeTombstone {
                    range: range(b"c", true, b"d", true),
                    deletion: DeletionTime::new(5, 100),
                },
            ],
        };
        let m = markers(&deletion);
        assert_eq!(m.len(), 2);
        assert_eq!((m[0].kind(), m[1].kind()), (1, 6));
        assert!(m[0].at.prefix.is_empty() && m[1].at.prefix.is_empty());
    }

    #[test]
    fn points_order_around_rows() {
        let before = Point {
            prefix: b"ab".to_vec(),
            side: Side::Before,
        };
        let after = Point {
            prefix: b"ab".to_vec(),
            side: Side::After,
        };
        assert!(point_before_row(&before, b"abc"));
        assert!(!point_before_row(&after, b"abc"));
        assert!(point_before_row(&after, b"b"));
        assert!(!point_before_row(&before, b"aa"));
        assert_eq!(cmp_points(&before, &after), std::cmp::Ordering::Less);
        let inner = Point {
            prefix: b"abc".to_vec(),
            side: Side::After,
        };
        assert_eq!(cmp_points(&before, &inner), std::cmp::Ordering::Less);
        assert_eq!(cmp_points(&after, &inner), std::cmp::Ordering::Greater);
    }
}
