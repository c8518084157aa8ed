//! A reader of Cassandra's sstables (BIG `ma`..`nb` and `oa`, BTI `da`: their
//! Data.db rows are encoded alike), for importing a Cassandra snapshot: the
//! Statistics.db serialization header, CompressionInfo.db (LZ4, Zstd,
//! Snappy, Deflate, or none) and Data.db, decoded into Strata's partitions.
//!
//! Contract:
//! 1. Only Data.db, CompressionInfo.db (when the data is compressed) and
//!    Statistics.db are read; every chunk's CRC32 is checked, every length
//!    and count read from a file is bounded by what is left of its chunk,
//!    partition or file before anything is allocated, and no input panics.
//! 2. The header must match the target table ([`SSTableSource::check_schema`]):
//!    the key and clustering types and every column's name, kind and type
//!    exactly as Cassandra names them (`marshal::type_name`). A mismatch is
//!    refused naming the column and both types, because Cassandra's rows are
//!    decoded with the header's types and a wrong one gives wrong values,
//!    not an error. Columns of the table missing from the file are fine.
//! 3. A partition is read in two passes over its bytes: first its
//!    range-tombstone markers (rows are skipped by their recorded size),
//!    which Strata keeps in the partition's head, then its rows one at a
//!    time; memory is one chunk, one row and the partition's markers.
//! 4. What Strata cannot represent is refused, naming the file and the
//!    partition: shadowable row deletions (materialized views), legacy
//!    counter shards (a context the counter module refuses), a marker
//!    sequence that does not alternate open and close.

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use crate::cassandra::marshal;
use crate::cassandra::vint;
use crate::data::{
    Cell, CellKind, ClusteringBound, ClusteringRange, ColumnId, DecoratedKey, DeletionTime,
    LivenessInfo, PartitionDeletion, RangeTombstone, Row, NO_DELETION_TIME, NO_TIMESTAMP,
};
use crate::error::{Error, Result};
use crate::schema::{ColumnDef, ColumnKind, TableSchema};
use crate::types::{self, CqlType};

use crate::cassandra::nb::{DELETION_TIME_EPOCH_SECONDS, TIMESTAMP_EPOCH_MICROS};
/// Largest chunk accepted: Cassandra's `chunk_length_in_kb` is a power of
/// two, 64 KiB by default before 4.0 and 16 KiB since; 64 MiB bounds the
/// buffers a damaged CompressionInfo.db could ask for.
const MAX_CHUNK_BYTES: usize = 64 << 20;
/// Longest type name or column name the header may hold.
const MAX_NAME_BYTES: u64 = 1 << 20;

/// One sstable's files, by its name `<version>-<id>-<format>-<Component>`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SSTableName {
    pub version: String,
    pub id: String,
    pub format: String,
}

impl SSTableName {
    /// Parses a Data.db file name; `None` for any other file.
    pub fn parse_data(file_name: &str) -> Option<SSTableName> {
        let base = file_name.strip_suffix("-Data.db")?;
        let mut parts = base.splitn(3, '-');
        let version = parts.next()?;
        let id = parts.next()?;
        let format = parts.next()?;
        if version.len() != 2 || !version.bytes().all(|b| b.is_ascii_lowercase()) {
            return None;
        }
        if !matches!(format, "big" | "bti") || id.is_empty() {
            return None;
        }
        Some(SSTableName {
            version: version.to_string(),
            id: id.to_string(),
            format: format.to_string(),
        })
    }

    pub fn component(&self, dir: &Path, component: &str) -> PathBuf {
        dir.join(format!(
            "{}-{}-{}-{component}",
            self.version, self.id, self.format
        ))
    }

    /// Whether Strata reads this version: `ma` to `nb`, `oa`, `da`.
    pub fn supported(&self) -> bool {
        let v = self.version.as_str();
        (self.format == "big" && (("ma"..="nz").contains(&v) || v == "oa"))
            || (v == "da" && self.format == "bti")
    }

    /// Whether this version has the features BIG version `v` introduced.
    /// BTI's versions start again at `da`, which has everything of `oa`.
    fn at_least(&self, v: &str) -> bool {
        if self.format == "bti" {
            v <= "oa"
        } else {
            self.version.as_str() >= v
        }
    }

    /// `oa` and later encode deletion times as unsigned and a partition's
    /// deletion in the short form.
    fn uint_deletion_times(&self) -> bool {
        self.at_least("oa")
    }

    fn has_metadata_checksum(&self) -> bool {
        self.at_least("na")
    }

    fn has_max_compressed_length(&self) -> bool {
        self.at_least("na")
    }
}

/// The serialization header (`SerializationHeader.Component`).
#[derive(Clone, Debug)]
pub struct CassandraHeader {
    pub min_timestamp: i64,
    pub min_local_deletion: i64,
    pub min_ttl: i32,
    pub key_type: String,
    pub clustering_types: Vec<String>,
    pub static_columns: Vec<(String, String)>,
    pub regular_columns: Vec<(String, String)>,
}

/// A bounded cursor over bytes already in memory.
struct Bytes<'a> {
    b: &'a [u8],
    what: &'static str,
}

impl<'a> Bytes<'a> {
    fn err(&self, why: &str) -> Error {
        Error::InvalidInput(format!("{}: {why}", self.what))
    }
    fn take(&mut self, n: usize) -> Result<&'a [u8]> {
        if self.b.len() < n {
            return Err(self.err("cut short"));
        }
        let (a, rest) = self.b.split_at(n);
        self.b = rest;
        Ok(a)
    }
    fn i32(&mut self) -> Result<i32> {
        Ok(i32::from_be_bytes(
            self.take(4)?.try_into().unwrap_or([0; 4]),
        ))
    }
    fn i64(&mut self) -> Result<i64> {
        Ok(i64::from_be_bytes(
            self.take(8)?.try_into().unwrap_or([0; 8]),
        ))
    }
    fn u16(&mut self) -> Result<u16> {
        Ok(u16::from_be_bytes(
            self.take(2)?.try_into().unwrap_or([0; 2]),
        ))
    }
    fn vint(&mut self) -> Result<u64> {
        vint::read_unsigned(&mut self.b).map_err(|e| self.err(e.0))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.vint()?;
        if n > MAX_NAME_BYTES {
            return Err(self.err("a name longer than 1 MiB"));
        }
        let b = self.take(n as usize)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.err("a name that is not UTF-8"))
    }
    fn utf(&mut self) -> Result<String> {
        let n = self.u16()? as usize;
        let b = self.take(n)?;
        String::from_utf8(b.to_vec()).map_err(|_| self.err("a string that is not UTF-8"))
    }
}

/// Reads the HEADER component of Statistics.db.
pub fn read_header(name: &SSTableName, statistics: &[u8]) -> Result<CassandraHeader> {
    let mut b = Bytes {
        b: statistics,
        what: "Statistics.db",
    };
    let count = b.i32()?;
    if !(0..=16).contains(&count) {
        return Err(b.err("an implausible component count"));
    }
    if name.has_metadata_checksum() {
        b.take(4)?;
    }
    let mut header_at = None;
    for _ in 0..count {
        let ty = b.i32()?;
        let offset = b.i32()?;
        if ty == 3 {
            header_at = Some(offset);
        }
    }
    let at = header_at.ok_or_else(|| b.err("no serialization header"))?;
    let at = usize::try_from(at).map_err(|_| b.err("a negative offset"))?;
    if at > statistics.len() {
        return Err(b.err("the header's offset is past the end"));
    }
    let mut h = Bytes {
        b: &statistics[at..],
        what: "Statistics.db header",
    };
    let min_timestamp = (h.vint()? as i64).wrapping_add(TIMESTAMP_EPOCH_MICROS);
    let min_local_deletion = (h.vint()? as i64 as i32) as i64 + DELETION_TIME_EPOCH_SECONDS;
    let min_ttl = h.vint()? as i64 as i32;
    let key_type = h.string()?;
    let n = h.vint()?;
    if n > 1 << 16 {
        return Err(h.err("too many clustering columns"));
    }
    let mut clustering_types = Vec::new();
    for _ in 0..n {
        clustering_types.push(h.string()?);
    }
    let mut groups = [Vec::new(), Vec::new()];
    for group in groups.iter_mut() {
        let n = h.vint()?;
        if n > 1 << 16 {
            return Err(h.err("too many columns"));
        }
        for _ in 0..n {
            let name = h.string()?;
            let ty = h.string()?;
            group.push((name, ty));
        }
    }
    let [static_columns, regular_columns] = groups;
    Ok(CassandraHeader {
        min_timestamp,
        min_local_deletion,
        min_ttl,
        key_type,
        clustering_types,
        static_columns,
        regular_columns,
    })
}

/// How Data.db's chunks are compressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Compressor {
    Lz4,
    Zstd,
    Snappy,
    Deflate,
}

/// Data.db as a stream of uncompressed bytes that can be repositioned.
struct DataStream {
    path: PathBuf,
    file: File,
    file_len: u64,
    /// `None`: the data is stored raw.
    compressor: Option<Compressor>,
    chunk_length: usize,
    max_compressed: u64,
    offsets: Vec<u64>,
    data_length: u64,
    /// The chunk in `buf` and its uncompressed bytes.
    current: Option<usize>,
    buf: Vec<u8>,
    stored: Vec<u8>,
    pos: u64,
}

impl DataStream {
    fn open(name: &SSTableName, dir: &Path) -> Result<DataStream> {
        let path = name.component(dir, "Data.db");
        let file = File::open(&path).map_err(|e| Error::io(&path, e))?;
        let file_len = file.metadata().map_err(|e| Error::io(&path, e))?.len();
        let info_path = name.component(dir, "CompressionInfo.db");
        let mut s = DataStream {
            path: path.clone(),
            file,
            file_len,
            compressor: None,
            chunk_length: 0,
            max_compressed: u64::MAX,
            offsets: Vec::new(),
            data_length: file_len,
            current: None,
            buf: Vec::new(),
            stored: Vec::new(),
            pos: 0,
        };
        if !info_path.exists() {
            return Ok(s);
        }
        let info = std::fs::read(&info_path).map_err(|e| Error::io(&info_path, e))?;
        let mut b = Bytes {
            b: &info,
            what: "CompressionInfo.db",
        };
        let class = b.utf()?;
        let short = class.rsplit('.').next().unwrap_or(&class);
        s.compressor = Some(match short {
            "LZ4Compressor" => Compressor::Lz4,
            "ZstdCompressor" => Compressor::Zstd,
            "SnappyCompressor" => Compressor::Snappy,
            "DeflateCompressor" => Compressor::Deflate,
            other => {
                return Err(Error::InvalidInput(format!(
                    "{}: compressor {other} is not one Cassandra ships",
                    info_path.display()
                )))
            }
        });
        let options = b.i32()?;
        if !(0..=64).contains(&options) {
            return Err(b.err("an implausible option count"));
        }
        for _ in 0..options {
            b.utf()?;
            b.utf()?;
        }
        let chunk_length = b.i32()?;
        if chunk_length <= 0 || chunk_length as usize > MAX_CHUNK_BYTES {
            return Err(b.err("a chunk length outside 1 byte to 64 MiB"));
        }
        s.chunk_length = chunk_length as usize;
        if name.has_max_compressed_length() {
            s.max_compressed = b.i32()?.max(0) as u64;
        }
        s.data_length = b.i64()?.max(0) as u64;
        let chunks = b.i32()?;
        if chunks < 0 || chunks as usize > b.b.len() / 8 {
            return Err(b.err("more chunks than offsets"));
        }
        for _ in 0..chunks {
            let o = b.i64()?;
            if o < 0 || o as u64 > file_len {
                return Err(b.err("a chunk offset past the end of Data.db"));
            }
            s.offsets.push(o as u64);
        }
        if (s.offsets.len() as u64).saturating_mul(s.chunk_length as u64) < s.data_length {
            return Err(b.err("fewer chunks than the data length needs"));
        }
        Ok(s)
    }

    fn err(&self, why: impl std::fmt::Display) -> Error {
        Error::InvalidInput(format!("{}: {why}", self.path.display()))
    }

    fn position(&self) -> u64 {
        self.pos
    }

    fn at_end(&self) -> bool {
        self.pos >= self.data_length
    }

    fn seek(&mut self, pos: u64) {
        self.pos = pos;
    }

    fn load_chunk(&mut self, i: usize) -> Result<()> {
        if self.current == Some(i) {
            return Ok(());
        }
        let start = self.offsets[i];
        let end = self.offsets.get(i + 1).copied().unwrap_or(self.file_len);
        if end < start + 4 || end - start - 4 > (MAX_CHUNK_BYTES as u64) * 2 {
            return Err(self.err(format!("chunk {i} has an impossible length")));
        }
        let len = (end - start - 4) as usize;
        self.stored.resize(len + 4, 0);
        self.file
            .seek(SeekFrom::Start(start))
            .and_then(|_| self.file.read_exact(&mut self.stored))
            .map_err(|e| Error::io(&self.path, e))?;
        let (body, crc) = self.stored.split_at(len);
        let want = u32::from_be_bytes(crc.try_into().unwrap_or([0; 4]));
        if crc32fast::hash(body) != want {
            return Err(self.err(format!("chunk {i} at {start}: its CRC32 does not match")));
        }
        let expected = (self.data_length - i as u64 * self.chunk_length as u64)
            .min(self.chunk_length as u64) as usize;
        self.buf.clear();
        if len as u64 >= self.max_compressed {
            // Stored raw (na+), padded to the limit.
            self.buf.extend_from_slice(&body[..expected.min(len)]);
        } else {
            let compressor = self.compressor.unwrap_or(Compressor::Lz4);
            let out = decompress(compressor, body, expected)
                .map_err(|e| self.err(format!("chunk {i}: {e}")))?;
            self.buf = out;
        }
        if self.buf.len() != expected {
            return Err(self.err(format!(
                "chunk {i} holds {} bytes where {expected} were expected",
                self.buf.len()
            )));
        }
        self.current = Some(i);
        Ok(())
    }

    /// Reads `out.len()` bytes at the position.
    fn read(&mut self, out: &mut [u8]) -> Result<()> {
        if self.pos + out.len() as u64 > self.data_length {
            return Err(self.err("a partition runs past the end of the data"));
        }
        if self.compressor.is_none() {
            self.file
                .seek(SeekFrom::Start(self.pos))
                .and_then(|_| self.file.read_exact(out))
                .map_err(|e| Error::io(&self.path, e))?;
            self.pos += out.len() as u64;
            return Ok(());
        }
        let mut done = 0;
        while done < out.len() {
            let i = (self.pos / self.chunk_length as u64) as usize;
            self.load_chunk(i)?;
            let within = (self.pos % self.chunk_length as u64) as usize;
            let n = (self.buf.len() - within).min(out.len() - done);
            out[done..done + n].copy_from_slice(&self.buf[within..within + n]);
            done += n;
            self.pos += n as u64;
        }
        Ok(())
    }

    fn u8(&mut self) -> Result<u8> {
        let mut b = [0u8; 1];
        self.read(&mut b)?;
        Ok(b[0])
    }

    fn u16(&mut self) -> Result<u16> {
        let mut b = [0u8; 2];
        self.read(&mut b)?;
        Ok(u16::from_be_bytes(b))
    }

    fn i32(&mut self) -> Result<i32> {
        let mut b = [0u8; 4];
        self.read(&mut b)?;
        Ok(i32::from_be_bytes(b))
    }

    fn i64(&mut self) -> Result<i64> {
        let mut b = [0u8; 8];
        self.read(&mut b)?;
        Ok(i64::from_be_bytes(b))
    }

    fn vint(&mut self) -> Result<u64> {
        let first = self.u8()?;
        let extra = first.leading_ones() as usize;
        let mut v: u64 = if extra == 8 {
            0
        } else {
            (first & (0xff >> extra)) as u64
        };
        for _ in 0..extra {
            v = (v << 8) | self.u8()? as u64;
        }
        Ok(v)
    }

    /// `n` bytes, refused if more than `limit` (what is left of the
    /// enclosing structure) before allocating.
    fn bytes(&mut self, n: u64, limit: u64) -> Result<Vec<u8>> {
        if n > limit || n > self.data_length - self.pos.min(self.data_length) {
            return Err(self.err(format!("a length of {n} bytes runs past its row")));
        }
        let mut v = vec![0u8; n as usize];
        self.read(&mut v)?;
        Ok(v)
    }
}

fn decompress(c: Compressor, body: &[u8], expected: usize) -> std::result::Result<Vec<u8>, String> {
    match c {
        Compressor::Lz4 => {
            if body.len() < 4 {
                return Err("an LZ4 chunk without its length".into());
            }
            let n = u32::from_le_bytes([body[0], body[1], body[2], body[3]]) as usize;
            if n != expected {
                return Err(format!(
                    "an LZ4 chunk of {n} bytes where {expected} were expected"
                ));
            }
            let mut out = vec![0u8; n];
            let got = crate::lz4::decompress_into(&body[4..], &mut out)?;
            out.truncate(got);
            Ok(out)
        }
        Compressor::Zstd => zstd::bulk::decompress(body, expected).map_err(|e| e.to_string()),
        Compressor::Snappy => {
            let n = snap::raw::decompress_len(body).map_err(|e| e.to_string())?;
            if n != expected {
                return Err(format!(
                    "a Snappy chunk of {n} bytes where {expected} were expected"
                ));
            }
            snap::raw::Decoder::new()
                .decompress_vec(body)
                .map_err(|e| e.to_string())
        }
        Compressor::Deflate => {
            let mut out = Vec::with_capacity(expected);
            flate2::read::ZlibDecoder::new(body)
                .take(expected as u64 + 1)
                .read_to_end(&mut out)
                .map_err(|e| e.to_string())?;
            Ok(out)
        }
    }
}

/// A range-tombstone marker as read: `ClusteringPrefix.Kind` ordinal,
/// Strata's prefix, the deletion it closes and the one it opens.
type Marker = (u8, Vec<u8>, Option<DeletionTime>, Option<DeletionTime>);

/// A header column matched to the table: its id and type.
#[derive(Clone, Debug)]
struct Column {
    id: ColumnId,
    ty: CqlType,
    complex: bool,
    counter: bool,
}

/// One Cassandra sstable open for import.
pub struct SSTableSource {
    pub name: SSTableName,
    pub header: CassandraHeader,
    data: DataStream,
    clustering: Vec<(CqlType, bool)>,
    statics: std::sync::Arc<[Column]>,
    regulars: std::sync::Arc<[Column]>,
    /// Where the current partition's first unfiltered starts, and whether
    /// its rows are being read.
    rows_at: Option<u64>,
    legacy_deletion: bool,
}

/// A partition's key, deletion (markers turned back into ranges) and static row.
#[derive(Clone, Debug)]
pub struct SourcePartition {
    pub key: DecoratedKey,
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
}

impl SSTableSource {
    /// How far the reading is: uncompressed bytes read and in all.
    pub fn progress(&self) -> (u64, u64) {
        (self.data.position(), self.data.data_length)
    }

    /// Opens the sstable `name` in `dir` for `schema` (contract 2).
    pub fn open(dir: &Path, name: SSTableName, schema: &TableSchema) -> Result<SSTableSource> {
        if !name.supported() {
            return Err(Error::InvalidInput(format!(
                "{}: version {} of format {} is not one Strata reads (ma to nb, oa, da)",
                name.component(dir, "Data.db").display(),
                name.version,
                name.format
            )));
        }
        let stats_path = name.component(dir, "Statistics.db");
        let stats = std::fs::read(&stats_path).map_err(|e| Error::io(&stats_path, e))?;
        let header = read_header(&name, &stats)?;
        let data = DataStream::open(&name, dir)?;
        let mut source = SSTableSource {
            legacy_deletion: !name.uint_deletion_times(),
            name,
            header,
            data,
            clustering: Vec::new(),
            statics: std::sync::Arc::from([]),
            regulars: std::sync::Arc::from([]),
            rows_at: None,
        };
        source.check_schema(schema)?;
        Ok(source)
    }

    /// Contract 2: the header against the table.
    pub fn check_schema(&mut self, schema: &TableSchema) -> Result<()> {
        let file = self.data.path.display().to_string();
        let keys: Vec<&ColumnDef> = schema.partition_key_columns().collect();
        let want = marshal::key_type_name(&keys);
        if self.header.key_type != want {
            return Err(Error::InvalidInput(format!(
                "{file}: the partition key is {} here and {want} in table {}",
                self.header.key_type,
                schema.qualified_name()
            )));
        }
        let cks: Vec<&ColumnDef> = schema.clustering_columns().collect();
        if cks.len() != self.header.clustering_types.len() {
            return Err(Error::InvalidInput(format!(
                "{file}: {} clustering column(s) here, {} in table {}",
                self.header.clustering_types.len(),
                cks.len(),
                schema.qualified_name()
            )));
        }
        for (c, have) in cks.iter().zip(&self.header.clustering_types) {
            let want = marshal::clustering_type_name(&c.ty, c.descending);
            if *have != want {
                return Err(Error::InvalidInput(format!(
                    "{file}: clustering column {} is {have} here and {want} in the table",
                    c.name
                )));
            }
        }
        self.clustering = cks.iter().map(|c| (c.ty.clone(), c.descending)).collect();
        let columns = |list: &[(String, String)], kind: ColumnKind| -> Result<Vec<Column>> {
            list.iter()
                .map(|(name, ty)| {
                    let c = schema.column(name).map_err(|_| {
                        Error::InvalidInput(format!(
                            "{file}: column {name} is not in table {}",
                            schema.qualified_name()
                        ))
                    })?;
                    if c.kind != kind {
                        return Err(Error::InvalidInput(format!(
                            "{file}: column {name} is {} here and {:?} in the table",
                            if kind == ColumnKind::Static {
                                "static"
                            } else {
                                "regular"
                            },
                            c.kind
                        )));
                    }
                    let want = marshal::type_name(&c.ty);
                    if *ty != want {
                        return Err(Error::InvalidInput(format!(
                            "{file}: column {name} is {ty} here and {want} in the table"
                        )));
                    }
                    Ok(Column {
                        id: c.id.ok_or_else(|| {
                            Error::InvalidInput(format!("column {name} has no id"))
                        })?,
                        ty: c.ty.clone(),
                        complex: marshal::is_complex(&c.ty),
                        counter: c.ty == CqlType::Counter,
                    })
                })
                .collect()
        };
        // Cassandra's rows index columns in its own order (simple, then
        // complex, each by name), whatever order the header lists them in.
        let ordered = |list: &[(String, String)], kind: ColumnKind| -> Result<Vec<Column>> {
            let mut named: Vec<(String, Column)> = list
                .iter()
                .map(|(n, _)| n.clone())
                .zip(columns(list, kind)?)
                .collect();
            named.sort_by(|a, b| {
                a.1.complex
                    .cmp(&b.1.complex)
                    .then_with(|| a.0.as_bytes().cmp(b.0.as_bytes()))
            });
            Ok(named.into_iter().map(|(_, c)| c).collect())
        };
        self.statics = ordered(&self.header.static_columns, ColumnKind::Static)?.into();
        self.regulars = ordered(&self.header.regular_columns, ColumnKind::Regular)?.into();
        Ok(())
    }

    fn err(&self, key: Option<&DecoratedKey>, why: impl std::fmt::Display) -> Error {
        match key {
            Some(k) => Error::InvalidInput(format!(
                "{}: partition with token {}: {why}",
                self.data.path.display(),
                k.token
            )),
            None => Error::InvalidInput(format!("{}: {why}", self.data.path.display())),
        }
    }

    fn timestamp(&mut self) -> Result<i64> {
        Ok((self.data.vint()? as i64).wrapping_add(self.header.min_timestamp))
    }

    fn ldt(&mut self) -> Result<i64> {
        let delta = self.data.vint()? as i64 as i32;
        Ok(delta as i64 + self.header.min_local_deletion)
    }

    fn ttl(&mut self) -> Result<u32> {
        let delta = self.data.vint()? as i64 as i32;
        let ttl = delta.wrapping_add(self.header.min_ttl);
        u32::try_from(ttl).map_err(|_| self.err(None, format!("a negative TTL ({ttl})")))
    }

    fn deletion(&mut self) -> Result<DeletionTime> {
        let ts = self.timestamp()?;
        let ldt = self.ldt()?;
        Ok(DeletionTime::new(ts, self.ldt_from_cassandra(ldt)))
    }

    /// Cassandra's "no deletion time" (`Integer.MAX_VALUE` before `oa`).
    fn ldt_from_cassandra(&self, ldt: i64) -> i64 {
        if self.legacy_deletion && ldt == i32::MAX as i64 {
            NO_DELETION_TIME
        } else {
            ldt
        }
    }

    /// Clustering values (`ClusteringPrefix.serializeValuesWithoutSize`) as
    /// Strata's byte-comparable prefix.
    fn clustering(&mut self, count: usize, key: &DecoratedKey) -> Result<Vec<u8>> {
        if count > self.clustering.len() {
            return Err(self.err(
                Some(key),
                "a clustering with more values than the table's columns",
            ));
        }
        let mut values = Vec::with_capacity(count);
        let mut header = 0u64;
        for i in 0..count {
            if i % 32 == 0 {
                header = self.data.vint()?;
            }
            let bits = (header >> ((i % 32) * 2)) & 3;
            let ty = self.clustering[i].0.clone();
            let bytes = if bits & 2 != 0 {
                return Err(self.err(Some(key), "a null clustering value"));
            } else if bits & 1 != 0 {
                Vec::new()
            } else {
                self.value(&ty, u64::MAX)?
            };
            let v = types::deserialize(&ty, &bytes).map_err(|e| self.err(Some(key), e))?;
            values.push((v, self.clustering[i].1));
        }
        if values.is_empty() {
            return Ok(Vec::new());
        }
        let parts: Vec<(&types::Value, bool)> = values.iter().map(|(v, d)| (v, *d)).collect();
        Ok(types::encode_clustering(&parts))
    }

    /// A value as `AbstractType.readValue` reads it.
    fn value(&mut self, ty: &CqlType, limit: u64) -> Result<Vec<u8>> {
        let n = match marshal::fixed_length(ty) {
            Some(n) => n as u64,
            None => self.data.vint()?,
        };
        self.data.bytes(n, limit)
    }

    /// The next partition's head; `None` after the last. The rows of the
    /// partition before are passed over if not all read.
    pub fn next_partition(&mut self) -> Result<Option<SourcePartition>> {
        if let Some(end) = self.rows_at.take() {
            self.data.seek(end);
        }
        if self.data.at_end() {
            return Ok(None);
        }
        let len = self.data.u16()? as u64;
        let key_bytes = self.data.bytes(len, u16::MAX as u64)?;
        let key = DecoratedKey::new(&key_bytes);
        let partition = if self.legacy_deletion {
            let ldt = self.data.i32()? as i64;
            let at = self.data.i64()?;
            if at == i64::MIN && ldt == i32::MAX as i64 {
                None
            } else {
                Some(DeletionTime::new(at, ldt))
            }
        } else {
            let first = self.data.u8()?;
            if first & 0x80 != 0 {
                if first != 0x80 {
                    return Err(self.err(Some(&key), "a partition deletion with bad flags"));
                }
                None
            } else {
                let mut rest = [0u8; 7];
                self.data.read(&mut rest)?;
                let mut b = [0u8; 8];
                b[0] = first;
                b[1..].copy_from_slice(&rest);
                let at = i64::from_be_bytes(b);
                let ldt = self.data.i32()? as u32 as i64;
                Some(DeletionTime::new(at, ldt))
            }
        };
        let static_row = if self.statics.is_empty() {
            None
        } else {
            let flags = self.data.u8()?;
            let row = self.row(flags, &key, true)?;
            row.filter(|r| !r.is_empty())
        };
        let rows_at = self.data.position();
        // Pass 1: the markers.
        let mut ranges = Vec::new();
        let mut open: Option<(ClusteringBound, DeletionTime)> = None;
        loop {
            let flags = self.data.u8()?;
            if flags & 0x01 != 0 {
                break;
            }
            if flags & 0x02 != 0 {
                let (kind, prefix, end, start) = self.marker(&key)?;
                let inclusive_end = matches!(kind, 5 | 6);
                let inclusive_start = matches!(kind, 1 | 2);
                if let Some(end) = end {
                    let (from, d) = open
                        .take()
                        .ok_or_else(|| self.err(Some(&key), "a range closed that was not open"))?;
                    if d != end {
                        return Err(self.err(Some(&key), "a range closed with another deletion"));
                    }
                    ranges.push(RangeTombstone {
                        range: ClusteringRange {
                            start: from,
                            end: ClusteringBound {
                                prefix: prefix.clone(),
                                inclusive: inclusive_end,
                            },
                        },
                        deletion: d,
                    });
                }
                if let Some(start) = start {
                    if open.is_some() {
                        return Err(self.err(Some(&key), "a range opened inside another"));
                    }
                    open = Some((
                        ClusteringBound {
                            prefix,
                            inclusive: inclusive_start,
                        },
                        start,
                    ));
                }
            } else {
                self.skip_row(flags, &key)?;
            }
        }
        if open.is_some() {
            return Err(self.err(Some(&key), "a range left open at the partition's end"));
        }
        let end = self.data.position();
        self.data.seek(rows_at);
        self.rows_at = Some(end);
        Ok(Some(SourcePartition {
            key,
            deletion: PartitionDeletion { partition, ranges },
            static_row,
        }))
    }

    /// The next row of the current partition; `None` after its last.
    pub fn next_row(&mut self, key: &DecoratedKey) -> Result<Option<Row>> {
        if self.rows_at.is_none() {
            return Ok(None);
        }
        loop {
            let flags = self.data.u8()?;
            if flags & 0x01 != 0 {
                self.rows_at = None;
                return Ok(None);
            }
            if flags & 0x02 != 0 {
                self.marker(key)?;
                continue;
            }
            if let Some(row) = self.row(flags, key, false)? {
                return Ok(Some(row));
            }
        }
    }

    /// A marker: its kind, prefix, and the deletions it ends and starts.
    fn marker(&mut self, key: &DecoratedKey) -> Result<Marker> {
        let kind = self.data.u8()?;
        let size = self.data.u16()? as usize;
        let prefix = if size == 0 {
            Vec::new()
        } else {
            self.clustering(size, key)?
        };
        let _body = self.data.vint()?;
        let _previous = self.data.vint()?;
        let (end, start) = match kind {
            0 | 6 => (Some(self.deletion()?), None),
            1 | 7 => (None, Some(self.deletion()?)),
            2 | 5 => {
                let e = self.deletion()?;
                let s = self.deletion()?;
                (Some(e), Some(s))
            }
            other => return Err(self.err(Some(key), format!("a marker of kind {other}"))),
        };
        Ok((kind, prefix, end, start))
    }

    /// Passes over a row after its flags, by its recorded size: the first
    /// pass wants only the markers (contract 3). The clustering is walked
    /// value by value (its lengths come before the size), not decoded.
    fn skip_row(&mut self, flags: u8, key: &DecoratedKey) -> Result<()> {
        let ext = if flags & 0x80 != 0 {
            self.data.u8()?
        } else {
            0
        };
        if ext & 0x01 != 0 {
            return Err(self.err(Some(key), "a static row out of place"));
        }
        let mut header = 0u64;
        for i in 0..self.clustering.len() {
            if i % 32 == 0 {
                header = self.data.vint()?;
            }
            if (header >> ((i % 32) * 2)) & 3 == 0 {
                let n = match marshal::fixed_length(&self.clustering[i].0) {
                    Some(n) => n as u64,
                    None => self.data.vint()?,
                };
                self.skip(n, key)?;
            }
        }
        let size = self.data.vint()?;
        self.skip(size, key)
    }

    /// Moves `n` bytes on, refusing to pass the end of the data.
    fn skip(&mut self, n: u64, key: &DecoratedKey) -> Result<()> {
        let pos = self.data.position();
        if n > self.data.data_length.saturating_sub(pos) {
            return Err(self.err(Some(key), "a row runs past the end of the data"));
        }
        self.data.seek(pos + n);
        Ok(())
    }

    /// A row (`UnfilteredSerializer.deserializeRowBody`), after its flags.
    fn row(&mut self, flags: u8, key: &DecoratedKey, is_static: bool) -> Result<Option<Row>> {
        let ext = if flags & 0x80 != 0 {
            self.data.u8()?
        } else {
            0
        };
        if ext & 0x02 != 0 {
            return Err(self.err(
                Some(key),
                "a shadowable row deletion (a materialized view's)",
            ));
        }
        if (ext & 0x01 != 0) != is_static {
            return Err(self.err(Some(key), "a static row out of place"));
        }
        let clustering = if is_static {
            Vec::new()
        } else {
            let n = self.clustering.len();
            self.clustering(n, key)?
        };
        let size = self.data.vint()?;
        let body_start = self.data.position();
        let _previous = self.data.vint()?;
        let limit = size;
        let mut row = Row::new(clustering);
        if flags & 0x04 != 0 {
            let ts = self.timestamp()?;
            row.liveness = LivenessInfo::new(ts);
            if flags & 0x08 != 0 {
                let ttl = self.ttl()?;
                let ldt = self.ldt()?;
                row.liveness.ttl_seconds = ttl;
                row.liveness.local_expiry_seconds = ldt;
            }
        }
        if flags & 0x10 != 0 {
            row.deletion = self.deletion()?;
        }
        let columns = if is_static {
            self.statics.clone()
        } else {
            self.regulars.clone()
        };
        let present: Vec<usize> = if flags & 0x20 != 0 {
            (0..columns.len()).collect()
        } else {
            self.subset(columns.len(), key)?
        };
        let liveness = row.liveness;
        for i in present {
            let col = &columns[i];
            if col.complex {
                if flags & 0x40 != 0 {
                    let d = self.deletion()?;
                    if !d.is_live() {
                        let mut c =
                            Cell::complex_deletion(col.id, d.marked_for_delete_at_micros, 0);
                        c.local_deletion_seconds = d.local_deletion_seconds;
                        row.cells.push(c);
                    }
                }
                let n = self.data.vint()?;
                if n > limit {
                    return Err(self.err(Some(key), "more cells than the row has bytes"));
                }
                for _ in 0..n {
                    let c = self.cell(col, liveness, key, limit)?;
                    row.cells.push(c);
                }
            } else {
                let c = self.cell(col, liveness, key, limit)?;
                row.cells.push(c);
            }
        }
        if self.data.position() - body_start != size {
            return Err(self.err(
                Some(key),
                format!(
                    "a row of {} bytes where its size says {size}",
                    self.data.position() - body_start
                ),
            ));
        }
        row.cells.sort_by(|a, b| a.cmp_position(b));
        Ok(Some(row))
    }

    /// `Columns.deserializeSubset`.
    fn subset(&mut self, superset: usize, key: &DecoratedKey) -> Result<Vec<usize>> {
        let encoded = self.data.vint()?;
        if encoded == 0 {
            return Ok((0..superset).collect());
        }
        if superset < 64 {
            if superset < 64 && encoded >> superset != 0 {
                return Err(self.err(Some(key), "a column bitmap naming absent columns"));
            }
            return Ok((0..superset).filter(|i| encoded & (1 << i) == 0).collect());
        }
        let missing = encoded as usize;
        if missing > superset {
            return Err(self.err(Some(key), "more missing columns than columns"));
        }
        let count = superset - missing;
        let mut out = Vec::new();
        if count < superset / 2 {
            for _ in 0..count {
                let i = self.data.vint()? as usize;
                if i >= superset {
                    return Err(self.err(Some(key), "a column index out of range"));
                }
                out.push(i);
            }
        } else {
            let mut skip = Vec::new();
            for _ in 0..missing {
                let i = self.data.vint()? as usize;
                if i >= superset {
                    return Err(self.err(Some(key), "a column index out of range"));
                }
                skip.push(i);
            }
            out = (0..superset).filter(|i| !skip.contains(i)).collect();
        }
        Ok(out)
    }

    /// `Cell.Serializer.deserialize`.
    fn cell(
        &mut self,
        col: &Column,
        row: LivenessInfo,
        key: &DecoratedKey,
        limit: u64,
    ) -> Result<Cell> {
        let flags = self.data.u8()?;
        let deleted = flags & 0x01 != 0;
        let expiring = flags & 0x02 != 0;
        let empty = flags & 0x04 != 0;
        let use_row_ts = flags & 0x08 != 0;
        let use_row_ttl = flags & 0x10 != 0;
        let ts = if use_row_ts {
            if row.timestamp_micros == NO_TIMESTAMP {
                return Err(self.err(
                    Some(key),
                    "a cell takes the row's timestamp, which it has not",
                ));
            }
            row.timestamp_micros
        } else {
            self.timestamp()?
        };
        let (ldt, ttl) = if use_row_ttl {
            (row.local_expiry_seconds, row.ttl_seconds)
        } else {
            let ldt = if deleted || expiring {
                self.ldt()?
            } else {
                NO_DELETION_TIME
            };
            let ttl = if expiring { self.ttl()? } else { 0 };
            (ldt, ttl)
        };
        let path = if col.complex {
            let n = self.data.vint()?;
            let p = self.data.bytes(n, limit)?;
            Some(
                strata_path(&col.ty, &p)
                    .map_err(|e| self.err(Some(key), e))?
                    .into_boxed_slice(),
            )
        } else {
            None
        };
        let value = if empty {
            Vec::new()
        } else if col.complex {
            let n = self.data.vint()?;
            self.data.bytes(n, limit)?
        } else {
            self.value(&col.ty, limit)?
        };
        let kind = if deleted {
            CellKind::Tombstone
        } else if expiring {
            CellKind::Expiring
        } else if col.counter {
            crate::counter::total(&value)
                .map_err(|e| self.err(Some(key), format!("a counter: {}", e.0)))?;
            CellKind::Counter
        } else {
            CellKind::Live
        };
        Ok(Cell {
            column: col.id,
            path,
            timestamp_micros: ts,
            kind,
            ttl_seconds: if expiring { ttl } else { 0 },
            local_deletion_seconds: if deleted || expiring {
                ldt
            } else {
                NO_DELETION_TIME
            },
            value: if deleted { Vec::new() } else { value },
        })
    }
}

/// Strata's cell path of a Cassandra one (`complex` contract 1).
fn strata_path(ty: &CqlType, path: &[u8]) -> Result<Vec<u8>> {
    let key_ty = match ty {
        CqlType::Set { element, .. } => element.as_ref().clone(),
        CqlType::Map { key, .. } => key.as_ref().clone(),
        CqlType::List { .. } => CqlType::TimeUuid,
        CqlType::Udt { .. } => {
            if path.len() != 2 {
                return Err(Error::InvalidInput(
                    "a UDT field path that is not 2 bytes".into(),
                ));
            }
            return Ok(path.to_vec());
        }
        other => {
            return Err(Error::InvalidInput(format!(
                "a cell path in a column of type {}",
                other.name()
            )))
        }
    };
    let v = types::deserialize(&key_ty, path)?;
    Ok(types::element_path(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cassandra::nb::{Header, NbCompression, NbOptions, NbWriter};
    use crate::types::Value;
    use proptest::prelude::*;

    fn schema() -> TableSchema {
        TableSchema::from_cql(
            "CREATE TABLE ks.t (pk int, ck text, v bigint, s text static, m map<text, int>, \
             PRIMARY KEY (pk, ck))",
        )
        .unwrap()
    }

    /// A small valid sstable to damage.
    fn sample(dir: &Path, compression: NbCompression) {
        let schema = schema();
        let opts = NbOptions {
            compression,
            chunk_length: 1024,
            bloom_filter_fp_chance: 0.01,
            min_timestamp_micros: 0,
            min_local_deletion_seconds: 0,
            min_ttl_seconds: 0,
            now_seconds: 10,
        };
        let header = Header::new(&schema, &opts).unwrap();
        let mut w = NbWriter::create(dir, 1, header, opts).unwrap();
        let v = schema.column("v").unwrap().id.unwrap();
        let mut keys: Vec<DecoratedKey> = (0..20i32)
            .map(|k| DecoratedKey::new(&k.to_be_bytes()))
            .collect();
        keys.sort();
        for key in &keys {
            w.begin_partition(key, &PartitionDeletion::default(), None)
                .unwrap();
            for i in 0..5 {
                let mut row = Row::new(
                    schema
                        .encode_clustering(&[Value::Text(format!("r{i}"))])
                        .unwrap(),
                );
                row.liveness = LivenessInfo::new(5);
                row.add_cell(Cell::live(v, 5, 1i64.to_be_bytes().to_vec()));
                w.append_row(&row).unwrap();
            }
            w.end_partition().unwrap();
        }
        w.finish().unwrap();
    }

    fn read_all(dir: &Path) -> Result<usize> {
        let name = SSTableName::parse_data("nb-1-big-Data.db").unwrap();
        let mut src = SSTableSource::open(dir, name, &schema())?;
        let mut rows = 0;
        while let Some(p) = src.next_partition()? {
            while src.next_row(&p.key)?.is_some() {
                rows += 1;
            }
        }
        Ok(rows)
    }

    #[test]
    fn names_parse_as_cassandra_names_them() {
        let n = SSTableName::parse_data("nb-12-big-Data.db").unwrap();
        assert_eq!(
            (n.version.as_str(), n.id.as_str(), n.format.as_str()),
            ("nb", "12", "big")
        );
        assert!(n.supported());
        let da = SSTableName::parse_data("da-3gbe_0q5m_2w7l91u1p6ixhdnu7p-bti-Data.db").unwrap();
        assert!(da.supported());
        assert!(da.uint_deletion_times() && da.has_metadata_checksum());
        assert!(!n.uint_deletion_times() && n.has_metadata_checksum());
        assert!(!SSTableName::parse_data("la-1-big-Data.db")
            .unwrap()
            .supported());
        assert!(SSTableName::parse_data("nb-1-big-Index.db").is_none());
        assert!(SSTableName::parse_data("strata-1-Data.db").is_none());
    }

    #[test]
    fn a_written_sstable_reads_back() {
        for c in [
            NbCompression::Lz4,
            NbCompression::Zstd { level: 1 },
            NbCompression::None,
        ] {
            let dir = tempfile::tempdir().unwrap();
            sample(dir.path(), c);
            assert_eq!(read_all(dir.path()).unwrap(), 100);
        }
    }

    #[test]
    fn a_header_that_disagrees_with_the_table_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        sample(dir.path(), NbCompression::Lz4);
        let other = TableSchema::from_cql(
            "CREATE TABLE ks.t (pk int, ck text, v int, s text static, m map<text, int>, \
             PRIMARY KEY (pk, ck))",
        )
        .unwrap();
        let name = SSTableName::parse_data("nb-1-big-Data.db").unwrap();
        let e = SSTableSource::open(dir.path(), name, &other)
            .err()
            .unwrap()
            .to_string();
        assert!(
            e.contains("column v") && e.contains("LongType") && e.contains("Int32Type"),
            "{e}"
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(200))]
        /// Any damage to any component reads as an error or as data, never
        /// a panic or a hang.
        #[test]
        fn damaged_files_never_panic(
            component in 0usize..3,
            at in any::<prop::sample::Index>(),
            byte in any::<u8>(),
            cut in any::<bool>(),
            raw in any::<bool>(),
        ) {
            let dir = tempfile::tempdir().unwrap();
            sample(dir.path(), if raw { NbCompression::None } else { NbCompression::Lz4 });
            let file = ["Data.db", "Statistics.db", "CompressionInfo.db"][component];
            let path = dir.path().join(format!("nb-1-big-{file}"));
            if let Ok(mut bytes) = std::fs::read(&path) {
                if !bytes.is_empty() {
                    let i = at.index(bytes.len());
                    if cut {
                        bytes.truncate(i);
                    } else {
                        bytes[i] ^= byte | 1;
                    }
                    std::fs::write(&path, &bytes).unwrap();
                }
            }
            let _ = read_all(dir.path());
        }

        /// Arbitrary bytes as Data.db behind a valid header.
        #[test]
        fn arbitrary_data_never_panics(data in proptest::collection::vec(any::<u8>(), 0..600)) {
            let dir = tempfile::tempdir().unwrap();
            sample(dir.path(), NbCompression::None);
            std::fs::write(dir.path().join("nb-1-big-Data.db"), &data).unwrap();
            let _ = read_all(dir.path());
        }
    }
}
