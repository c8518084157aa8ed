//! [`SSTableWriter`]: streams sorted partitions into a new sstable.
//!
//! Memory is bounded by one chunk of pending data, one index block, the chunk
//! table (12 bytes per chunk), the summary (one key per index block), the Bloom
//! filter and the statistics: the partition index itself is written to the file
//! block by block, between chunks, as it fills. Holding it in memory until
//! `finish` would cost ~25 bytes per partition (67 MB for a 160 MiB LCS sstable of
//! the seeds' 60-byte partitions).

use super::bloom::{FilterBuilder, KeyHash};
use super::compression::{compress_chunk, CompressionParams};
use super::data_file_path;
use super::format::{
    encode_chunk_table, encode_summary, seal_block, ChunkLocation, Footer, IndexBlockBuilder,
    IndexEntry, IndexLayout, RowIndexLocation, SummaryEntry,
    FIRST_VERSION_WITH_CLUSTERING_COVERAGE, FORMAT_VERSION, GRANULE_TARGET_BYTES,
    INDEX_BLOCK_TARGET_BYTES, MAX_TAIL_BYTES,
};
use super::identity::SSTableIdentity;
use super::partition::{
    encode_end, encode_header_parts, encode_row_key, is_single_row, EncodedPartition, HeaderOrder,
    MARKER_ROW_INDEX, ROW_INDEX_FRAMING_BYTES,
};
use super::reader::SSTableReader;
use super::row_index::{self, ROW_BLOCK_BYTES};
use super::stats::StatsCollector;
use crate::data::{DecoratedKey, PartitionDeletion, PartitionUpdate, Row};
use crate::encoding::{encode_row_spliced, put_varint, row_head_for_width, EncodingBase};
use crate::error::{Error, Result};
use crate::fs::{tmp_path, Fs, IoCause, IoCounters, IoTag, WritableFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// How to write one sstable.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    pub compression: CompressionParams,
    /// Target Bloom filter false-positive chance (Cassandra's
    /// `bloom_filter_fp_chance`, default 0.01; 1.0 disables the filter). Lower
    /// costs ~1.44 * log2(1/p) bits per partition of memory.
    pub bloom_fp_chance: f64,
    /// Partitions the caller expects to append: sizes the Bloom filter, as in
    /// Cassandra (flush knows the exact count; compaction passes the sum of its
    /// inputs, an upper bound). Appending more than this raises the FP rate.
    pub expected_partitions: u64,
    /// Why these bytes are written (flush, compaction at a level, ...).
    pub tag: IoTag,
    pub table_io: Option<Arc<IoCounters>>,
    /// LCS level recorded in the statistics.
    pub level: u32,
    /// Minimums that timestamps and deletion times are delta-encoded against.
    pub base: EncodingBase,
    /// From the database's Clock (the writer never reads the system time).
    pub creation_time_seconds: i64,
    /// Who the file belongs to, written as its identity header (format version
    /// 2). `None` writes a version-1 file without one: low-level unit tests only;
    /// every table writer passes one (`Table::writer_options`). Its
    /// `generation` must be the id the writer is created with; chunk length,
    /// codec and encoding base are taken from these options.
    pub identity: Option<SSTableIdentity>,
    /// The loaded dictionary a dictionary codec compresses with; its id must
    /// be the codec's (checked at create). `None` for other codecs.
    pub dictionary: Option<Arc<crate::dictionary::CompressionDictionary>>,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            compression: CompressionParams::default(),
            bloom_fp_chance: 0.01,
            expected_partitions: 1024,
            tag: IoTag::new(IoCause::Flush),
            table_io: None,
            level: 0,
            base: EncodingBase::ZERO,
            creation_time_seconds: 0,
            identity: None,
            dictionary: None,
        }
    }
}

impl WriterOptions {
    pub fn validate(&self) -> Result<()> {
        self.compression.validate()?;
        let have = self.dictionary.as_ref().map(|d| d.id());
        if self.compression.codec.dictionary() != have {
            // A chunk compressed with one dictionary and recorded as another
            // would never decode: refuse before writing anything.
            return Err(Error::InvalidInput(format!(
                "sstable writer: codec {:?} with dictionary {have:?} loaded",
                self.compression.codec
            )));
        }
        if !(self.bloom_fp_chance > 0.0 && self.bloom_fp_chance <= 1.0) {
            return Err(Error::option(
                "bloom_filter_fp_chance",
                format!("{} is not in (0, 1]", self.bloom_fp_chance),
            ));
        }
        Ok(())
    }
}

/// Writes one sstable; see the module docs. Dropping it without `finish` removes
/// the temporary file.
#[derive(Debug)]
pub struct SSTableWriter {
    fs: Fs,
    id: u64,
    final_path: PathBuf,
    tmp: PathBuf,
    /// `None` once finished (or after a failed I/O, when the writer is unusable).
    file: Option<WritableFile>,
    opts: WriterOptions,
    chunk_length: usize,
    /// Uncompressed bytes not yet cut into chunks; `pending[0]` sits at data-stream
    /// offset `pending_start`, always a multiple of the chunk length.
    pending: Vec<u8>,
    pending_start: u64,
    scratch: Vec<u8>,
    out: Vec<u8>,
    chunks: Vec<ChunkLocation>,
    compressed_bytes: u64,
    index: IndexBlockBuilder,
    /// Whether partitions get row indexes (version 3; not in version-1 files).
    row_index: bool,
    /// Where partitions put their flags: first in the current version, after
    /// the key in a version-1 file.
    order: HeaderOrder,
    /// A flags-first short partition's header, gathered before its body's
    /// length is known (reused).
    head: Vec<u8>,
    /// Whether index entries name granules of partitions (version 4; every
    /// file with an identity header) rather than single partitions.
    sparse_index: bool,
    /// The granule being gathered: its entry goes to the index block once a
    /// partition that cannot join it arrives, or at `finish`.
    granule: Option<IndexEntry>,
    /// The rows of the partition being written in the long form.
    rows: RowsState,
    /// The partition being appended row by row, if one is.
    streamed: Option<Streamed>,
    summary: Vec<SummaryEntry>,
    bloom: FilterBuilder,
    stats: StatsCollector,
    last_key: Option<DecoratedKey>,
    failed: bool,
}

impl SSTableWriter {
    /// Starts writing sstable `id` in `dir` (under a temporary name).
    pub fn create(fs: &Fs, dir: &Path, id: u64, opts: WriterOptions) -> Result<SSTableWriter> {
        opts.validate()?;
        let mut opts = opts;
        let header = match opts.identity.as_mut() {
            None => {
                // A version-1 file (no identity header) has nowhere to
                // record a row-timestamp width: its rows take varints.
                opts.base.row_ts_bytes = 0;
                None
            }
            Some(identity) => {
                if identity.generation != id {
                    return Err(Error::InvalidInput(format!(
                        "sstable writer for id {id} was given the identity of generation {}",
                        identity.generation
                    )));
                }
                identity.chunk_length_bytes = opts.compression.chunk_length_bytes;
                identity.codec = opts.compression.codec;
                identity.min_timestamp = opts.base.min_timestamp;
                identity.min_local_deletion = opts.base.min_local_deletion;
                identity.min_ttl = opts.base.min_ttl;
                identity.row_ts_bytes = opts.base.row_ts_bytes;
                Some(identity.encode(FORMAT_VERSION))
            }
        };
        let final_path = data_file_path(dir, id);
        let tmp = tmp_path(&final_path);
        let mut file = fs.create(&tmp, opts.tag, opts.table_io.clone())?;
        if let Some(h) = &header {
            // Dropping the file on error leaves a .tmp that the next open removes.
            if let Err(e) = file.write_all(h) {
                drop(file);
                let _ = fs.remove(&tmp);
                return Err(e);
            }
        }
        let chunk_length = opts.compression.chunk_length_bytes as usize;
        let row_index = opts.identity.is_some();
        Ok(SSTableWriter {
            fs: fs.clone(),
            id,
            final_path,
            tmp,
            file: Some(file),
            bloom: FilterBuilder::new(opts.expected_partitions, opts.bloom_fp_chance),
            opts,
            chunk_length,
            pending: Vec::with_capacity(chunk_length * 2),
            pending_start: 0,
            scratch: Vec::new(),
            out: Vec::new(),
            chunks: Vec::new(),
            compressed_bytes: 0,
            index: IndexBlockBuilder::new(IndexLayout {
                row_index,
                sparse: row_index,
                tokenless: row_index,
            }),
            row_index,
            order: if row_index {
                HeaderOrder::for_version(FORMAT_VERSION)
            } else {
                HeaderOrder::KeyFirst
            },
            head: Vec::new(),
            sparse_index: row_index,
            granule: None,
            rows: RowsState::default(),
            streamed: None,
            summary: Vec::new(),
            stats: StatsCollector::default(),
            last_key: None,
            failed: false,
        })
    }

    pub fn id(&self) -> u64 {
        self.id
    }

    /// The path the sstable will have once finished.
    pub fn final_path(&self) -> &Path {
        &self.final_path
    }

    /// Data-stream bytes appended so far (before compression).
    pub fn uncompressed_bytes_written(&self) -> u64 {
        self.pending_start + self.pending.len() as u64
    }

    /// Bytes handed to the file so far: compressed chunks and index blocks. Lags
    /// the final size by under one chunk of pending data plus the tail.
    pub fn position(&self) -> u64 {
        self.file.as_ref().map_or(0, |f| f.position())
    }

    pub fn partition_count(&self) -> u64 {
        self.stats.partition_count()
    }

    /// Appends one partition. Partitions must strictly increase by `DecoratedKey`
    /// and rows by clustering; violations are `InvalidInput` and write nothing.
    /// A partition with nothing in it is skipped.
    pub fn append(&mut self, p: &PartitionUpdate) -> Result<()> {
        self.append_from(p)
    }

    /// As [`SSTableWriter::append`] for a partition whose rows are already
    /// encoded (a flush from the memtable): each body is copied, so its base
    /// must be this sstable's (`InvalidInput` otherwise, nothing written) but
    /// for the row-timestamp width, which the copy changes to this sstable's
    /// ([`row_head_for_width`]). The bytes written are those `append` writes
    /// for the decoded partition.
    pub fn append_encoded(&mut self, p: &EncodedPartition<'_>) -> Result<()> {
        let same_minimums = EncodingBase {
            row_ts_bytes: self.opts.base.row_ts_bytes,
            ..p.base
        } == self.opts.base;
        if !same_minimums {
            return Err(Error::InvalidInput(format!(
                "rows encoded against base {:?} appended to sstable writer {} of base {:?}",
                p.base,
                self.tmp.display(),
                self.opts.base
            )));
        }
        self.append_from(p)
    }

    /// Starts a partition appended row by row ([`append_row`](Self::append_row),
    /// then [`end_partition`](Self::end_partition)): a compaction's merged
    /// stream, which never holds a whole partition. The bytes written are
    /// those [`append`](Self::append) writes for the same partition. The key
    /// must be after the last partition's and the static row's clustering
    /// empty (`InvalidInput` otherwise, nothing written). Memory: the header
    /// given here, and at most one row held back (an empty-clustering first
    /// row, which takes the short form if it stays the only one).
    pub fn begin_partition(
        &mut self,
        key: DecoratedKey,
        deletion: PartitionDeletion,
        static_row: Option<Row>,
    ) -> Result<()> {
        self.check_usable()?;
        if self.streamed.is_some() {
            return Err(Error::InvalidInput(format!(
                "sstable writer {}: a partition begun before the previous one ended",
                self.tmp.display()
            )));
        }
        self.check_key_order(&key)?;
        if static_row
            .as_ref()
            .is_some_and(|s| !s.clustering.is_empty())
        {
            return Err(Error::InvalidInput(
                "a static row has an empty clustering".to_string(),
            ));
        }
        self.streamed = Some(Streamed {
            key,
            deletion,
            static_row,
            held: None,
            open: false,
        });
        Ok(())
    }

    /// Appends the next row of the partition begun by
    /// [`begin_partition`](Self::begin_partition). Rows must strictly
    /// increase by clustering (`InvalidInput` otherwise, nothing written).
    pub fn append_row(&mut self, row: Row) -> Result<()> {
        self.check_usable()?;
        let Some(mut s) = self.streamed.take() else {
            return Err(Error::InvalidInput(format!(
                "sstable writer {}: a row appended outside a partition",
                self.tmp.display()
            )));
        };
        let after = match (&s.held, s.open) {
            (Some(h), _) => Some(h.clustering.as_slice()),
            (None, true) if self.rows.rows > 0 => Some(self.rows.prev.as_slice()),
            _ => None,
        };
        if after.is_some_and(|a| a >= row.clustering.as_slice()) {
            let token = s.key.token;
            self.streamed = Some(s);
            return Err(Error::InvalidInput(format!(
                "rows of partition token {token} are not in strictly increasing clustering order"
            )));
        }
        if !s.open && s.held.is_none() && row.clustering.is_empty() {
            // The short form's one row, unless another follows.
            s.held = Some(row);
            self.streamed = Some(s);
            return Ok(());
        }
        let r = self.append_streamed_row(&mut s, row);
        self.streamed = Some(s);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn append_streamed_row(&mut self, s: &mut Streamed, row: Row) -> Result<()> {
        if !s.open {
            self.open_rows(&s.deletion, s.static_row.as_ref(), &s.key.key);
            s.open = true;
            if let Some(h) = s.held.take() {
                self.put_row(&h.clustering, RowBody::Decoded(&h), &s.key)?;
            }
        }
        self.put_row(&row.clustering, RowBody::Decoded(&row), &s.key)
    }

    /// Ends the partition begun by [`begin_partition`](Self::begin_partition);
    /// returns whether anything was written (a partition with no rows,
    /// deletion or static row is skipped, as [`append`](Self::append) skips
    /// it).
    pub fn end_partition(&mut self) -> Result<bool> {
        self.check_usable()?;
        let Some(s) = self.streamed.take() else {
            return Err(Error::InvalidInput(format!(
                "sstable writer {}: a partition ended that was not begun",
                self.tmp.display()
            )));
        };
        let r = self.end_streamed(s);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn end_streamed(&mut self, s: Streamed) -> Result<bool> {
        if s.open {
            self.close_rows(&s.key)?;
            return Ok(true);
        }
        if let Some(h) = &s.held {
            let body = RowBody::Decoded(h);
            self.put_short(&s.key, &s.deletion, s.static_row.as_ref(), body)?;
            return Ok(true);
        }
        if s.deletion.is_empty() && s.static_row.is_none() {
            return Ok(false);
        }
        self.open_rows(&s.deletion, s.static_row.as_ref(), &s.key.key);
        self.close_rows(&s.key)?;
        Ok(true)
    }

    fn check_usable(&self) -> Result<()> {
        if self.failed || self.file.is_none() {
            return Err(Error::InvalidInput(format!(
                "sstable writer {} is unusable after an earlier failure",
                self.tmp.display()
            )));
        }
        Ok(())
    }

    fn check_key_order(&self, key: &DecoratedKey) -> Result<()> {
        if let Some(last) = &self.last_key {
            if key <= last {
                return Err(Error::InvalidInput(format!(
                    "partition (token {}, key {:02x?}) appended after (token {}, key {:02x?}): sstable partitions must strictly increase",
                    key.token, &key.key[..key.key.len().min(32)], last.token, &last.key[..last.key.len().min(32)]
                )));
            }
        }
        Ok(())
    }

    fn append_from<P: PartitionSource>(&mut self, p: &P) -> Result<()> {
        self.check_usable()?;
        if self.streamed.is_some() {
            return Err(Error::InvalidInput(format!(
                "sstable writer {}: a whole partition appended inside a streamed one",
                self.tmp.display()
            )));
        }
        let (key, deletion, static_row) = (p.key(), p.deletion(), p.static_row());
        if deletion.is_empty() && static_row.is_none() && p.row_count() == 0 {
            return Ok(());
        }
        self.check_key_order(key)?;
        if let Some(i) = (1..p.row_count()).find(|&i| p.clustering(i - 1) >= p.clustering(i)) {
            return Err(Error::InvalidInput(format!(
                "rows {} and {} of partition token {} are not in strictly increasing clustering order",
                i - 1,
                i,
                key.token
            )));
        }
        if static_row.is_some_and(|s| !s.clustering.is_empty()) {
            return Err(Error::InvalidInput(
                "a static row has an empty clustering".to_string(),
            ));
        }
        let r = self.append_checked(p);
        if r.is_err() {
            self.failed = true;
        }
        r
    }

    fn append_checked<P: PartitionSource>(&mut self, p: &P) -> Result<()> {
        let single_row = is_single_row(p.row_count(), || p.clustering(0).is_empty());
        if single_row {
            return self.put_short(p.key(), p.deletion(), p.static_row(), p.body(0));
        }
        self.open_rows(p.deletion(), p.static_row(), &p.key().key);
        for i in 0..p.row_count() {
            self.put_row(p.clustering(i), p.body(i), p.key())?;
        }
        self.close_rows(p.key())
    }

    /// Writes a partition in the short form: its header, flags first (the
    /// body's length after the flags) or key first, then its one row's body.
    fn put_short(
        &mut self,
        key: &DecoratedKey,
        deletion: &PartitionDeletion,
        static_row: Option<&Row>,
        body: RowBody<'_>,
    ) -> Result<()> {
        let base = self.opts.base;
        let start = self.uncompressed_bytes_written();
        self.stats.start_partition(deletion, static_row);
        if self.order == HeaderOrder::FlagsFirst {
            // flags, body length, the rest of the header, the body: the
            // length is known once the body is encoded, so the header waits.
            let mut head = std::mem::take(&mut self.head);
            head.clear();
            encode_header_parts(
                &key.key,
                deletion,
                static_row,
                true,
                &base,
                self.order,
                &mut self.scratch,
                &mut head,
            );
            let r = self.write_body(body, Some(&head));
            self.head = head;
            r?;
        } else {
            encode_header_parts(
                &key.key,
                deletion,
                static_row,
                true,
                &base,
                self.order,
                &mut self.scratch,
                &mut self.pending,
            );
            self.write_body(body, None)?;
        }
        self.row_stats(body, key)?;
        self.stats.clustering_span(Some(&[]), Some(&[]));
        self.finish_partition(key, start, None, 1)
    }

    /// Writes a partition's header in the long form (rows follow, then an
    /// end marker) and readies the row bookkeeping.
    fn open_rows(&mut self, deletion: &PartitionDeletion, static_row: Option<&Row>, key: &[u8]) {
        let base = self.opts.base;
        let start = self.uncompressed_bytes_written();
        encode_header_parts(
            key,
            deletion,
            static_row,
            false,
            &base,
            self.order,
            &mut self.scratch,
            &mut self.pending,
        );
        self.stats.start_partition(deletion, static_row);
        let rows_offset = self.uncompressed_bytes_written() - start;
        self.rows.reset(start, rows_offset);
    }

    /// Appends one row of a partition in the long form (after `open_rows`).
    fn put_row(&mut self, clustering: &[u8], body: RowBody<'_>, key: &DecoratedKey) -> Result<()> {
        let start = self.rows.start;
        let mut block_start = self.rows.rows == 0;
        if self.row_index {
            let at = self.uncompressed_bytes_written() - start;
            if self.rows.blocks.is_empty() || at - self.rows.blocks.last_offset() >= ROW_BLOCK_BYTES
            {
                // A block's first row shares no prefix, so a read can start
                // decoding there.
                self.rows.blocks.open(at, clustering, &self.rows.prev);
                block_start = true;
            }
        }
        let prev: &[u8] = if block_start { &[] } else { &self.rows.prev };
        encode_row_key(prev, clustering, &mut self.pending);
        self.write_body(body, None)?;
        self.row_stats(body, key)?;
        let rows = &mut self.rows;
        if rows.rows == 0 {
            rows.first.clear();
            rows.first.extend_from_slice(clustering);
        }
        rows.prev.clear();
        rows.prev.extend_from_slice(clustering);
        rows.rows += 1;
        Ok(())
    }

    /// Ends a partition in the long form: its row index (if its rows span
    /// two row blocks or more) and end marker.
    fn close_rows(&mut self, key: &DecoratedKey) -> Result<()> {
        let (start, rows_offset) = (self.rows.start, self.rows.rows_offset);
        let row_index = if self.rows.blocks.len() >= 2 {
            Some(self.write_row_index(key, start, rows_offset)?)
        } else {
            None
        };
        encode_end(&mut self.pending);
        if self.rows.rows > 0 {
            self.stats
                .clustering_span(Some(&self.rows.first), Some(&self.rows.prev));
        }
        let rows = self.rows.rows;
        self.finish_partition(key, start, row_index, rows)
    }

    /// Appends a row body, with `head` around its length.
    fn write_body(&mut self, body: RowBody<'_>, head: Option<&[u8]>) -> Result<()> {
        match body {
            RowBody::Decoded(row) => self.append_row_body(row, head),
            RowBody::Encoded { body, base } => self.append_encoded_body(body, &base, head),
        }
    }

    /// Records a row written in the statistics.
    fn row_stats(&mut self, body: RowBody<'_>, key: &DecoratedKey) -> Result<()> {
        match body {
            RowBody::Decoded(row) => {
                self.stats.row(row);
                Ok(())
            }
            // A body that does not parse came from a broken memtable, not the disk.
            RowBody::Encoded { body, base } => self.stats.encoded_row(body, &base).map_err(|e| {
                Error::InvalidInput(format!(
                    "an encoded row of partition token {} does not parse: {}",
                    key.token, e.0
                ))
            }),
        }
    }

    /// Indexes and filters the partition appended from data-stream offset
    /// `start`, and cuts what chunks and index blocks are full.
    fn finish_partition(
        &mut self,
        key: &DecoratedKey,
        start: u64,
        row_index: Option<RowIndexLocation>,
        rows: usize,
    ) -> Result<()> {
        let length = self.uncompressed_bytes_written() - start;
        self.index_partition(key, start, length, row_index);
        self.bloom.add(KeyHash::of(&key.key));
        self.stats.finish_partition(key, rows, length);
        self.last_key = Some(key.clone());
        self.cut_full_chunks()?;
        if self.index.size_bytes() >= INDEX_BLOCK_TARGET_BYTES {
            self.write_index_block()?;
        }
        Ok(())
    }

    /// Appends a row body (after its key, `partition::encode_row_key`), streaming it into
    /// chunks: the body is encoded without its large values
    /// ([`encode_row_spliced`]), and the values are copied from the update
    /// straight into the chunk buffer, one chunk at a time. So a 64 MiB value
    /// is never encoded into a whole-row buffer (issue 13: that buffer and the
    /// pending buffer each grew to the row's size by doubling, ~4x the value
    /// in allocations), and the pending buffer stays under two chunks.
    fn append_row_body(&mut self, row: &Row, head: Option<&[u8]>) -> Result<()> {
        let base = self.opts.base;
        let mut scratch = std::mem::take(&mut self.scratch);
        scratch.clear();
        let mut splices = Vec::new();
        encode_row_spliced(row, &base, &mut scratch, &mut splices);
        let spliced: usize = splices.iter().map(|(_, v)| v.len()).sum();
        self.put_body_length(head, scratch.len() + spliced);
        let mut at = 0;
        let mut r = Ok(());
        for &(pos, v) in &splices {
            r = r
                .and_then(|()| self.push_stream(&scratch[at..pos]))
                .and_then(|()| self.push_stream(v));
            at = pos;
        }
        r = r.and_then(|()| self.push_stream(&scratch[at..]));
        self.scratch = scratch;
        r
    }

    /// Appends a body encoded against `from` (this sstable's base but for the
    /// row-timestamp width), its row timestamp in this sstable's form
    /// (`append_encoded`).
    fn append_encoded_body(
        &mut self,
        body: &[u8],
        from: &EncodingBase,
        head: Option<&[u8]>,
    ) -> Result<()> {
        let mut ts_head = [0u8; 11];
        match row_head_for_width(body, from, &self.opts.base, &mut ts_head) {
            Some((len, replaced)) => {
                let rest = &body[replaced..];
                self.put_body_length(head, len + rest.len());
                self.push_stream(&ts_head[..len])?;
                self.push_stream(rest)
            }
            None => {
                self.put_body_length(head, body.len());
                self.push_stream(body)
            }
        }
    }

    /// A body's length, and around it a flags-first short partition's
    /// header `head` (its flags byte before the length, the rest after).
    fn put_body_length(&mut self, head: Option<&[u8]>, len: usize) {
        match head.and_then(|h| h.split_first()) {
            Some((flags, rest)) => {
                self.pending.push(*flags);
                put_varint(&mut self.pending, len as u64);
                self.pending.extend_from_slice(rest);
            }
            None => put_varint(&mut self.pending, len as u64),
        }
    }

    /// Appends data-stream bytes, cutting each chunk as soon as it is full.
    fn push_stream(&mut self, mut bytes: &[u8]) -> Result<()> {
        let cl = self.chunk_length;
        while !bytes.is_empty() {
            let room = (cl - self.pending.len() % cl).min(bytes.len());
            self.pending.extend_from_slice(&bytes[..room]);
            bytes = &bytes[room..];
            if self.pending.len() >= cl {
                self.cut_full_chunks()?;
            }
        }
        Ok(())
    }

    /// Appends the row index of partition `key` (its rows just written, row
    /// blocks in `self.rows`) before its end marker; returns where it is.
    fn write_row_index(
        &mut self,
        key: &DecoratedKey,
        start: u64,
        rows_offset: u64,
    ) -> Result<RowIndexLocation> {
        let rows_end = self.uncompressed_bytes_written() - start;
        let entries = self.rows.blocks.entries(&self.rows.prev, rows_end);
        let payload_start = rows_end + ROW_INDEX_FRAMING_BYTES;
        let mut payload = Vec::new();
        let root_offset = row_index::build(entries, payload_start, &mut payload);
        let len = u32::try_from(payload.len()).map_err(|_| {
            Error::InvalidInput(format!(
                "row index of {} bytes for partition token {} does not fit the format",
                payload.len(),
                key.token
            ))
        })?;
        self.pending.push(MARKER_ROW_INDEX);
        self.pending.extend_from_slice(&len.to_le_bytes());
        // Chunk by chunk: a wide partition's index is ~1% of its rows' bytes,
        // not to be held twice.
        self.push_stream(&payload)?;
        Ok(RowIndexLocation {
            root_offset,
            rows_offset,
        })
    }

    fn file(&mut self) -> Result<&mut WritableFile> {
        let tmp = &self.tmp;
        self.file.as_mut().ok_or_else(|| {
            Error::InvalidInput(format!("sstable writer {} already finished", tmp.display()))
        })
    }

    fn cut_full_chunks(&mut self) -> Result<()> {
        let cl = self.chunk_length;
        let mut consumed = 0;
        while self.pending.len() - consumed >= cl {
            let range = consumed..consumed + cl;
            self.write_chunk(range)?;
            consumed += cl;
        }
        if consumed > 0 {
            self.pending.drain(..consumed);
            self.pending_start += consumed as u64;
        }
        Ok(())
    }

    fn write_chunk(&mut self, range: std::ops::Range<usize>) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        compress_chunk(
            self.opts.compression.codec,
            self.opts.dictionary.as_deref(),
            &self.pending[range],
            &mut out,
            self.opts.compression.max_compressed_bytes,
        );
        let r = self.write_region(&out).map(|offset| {
            self.chunks.push(ChunkLocation {
                offset,
                length: out.len() as u32,
            });
            self.compressed_bytes += out.len() as u64;
        });
        self.out = out;
        r
    }

    /// Writes `bytes` at the end of the file and returns where they start.
    fn write_region(&mut self, bytes: &[u8]) -> Result<u64> {
        let f = self.file()?;
        let offset = f.position();
        f.write_all(bytes)?;
        Ok(offset)
    }

    /// Indexes the partition just written at `start`: its own entry (a dense
    /// index, or a partition that cannot share a granule), or one more
    /// partition in the open granule. A partition joins a granule only if
    /// neither has a row index (whose entry must locate it exactly), both
    /// are under [`GRANULE_TARGET_BYTES`], and it starts in the chunk where the
    /// granule starts, so that walking a granule reads the chunks a dense
    /// index would (only its last partition can run into the next chunk).
    fn index_partition(
        &mut self,
        key: &DecoratedKey,
        start: u64,
        length: u64,
        row_index: Option<RowIndexLocation>,
    ) {
        if !self.sparse_index {
            self.index.add(key, start, length, row_index, 1);
            return;
        }
        let cl = self.chunk_length as u64;
        if let Some(g) = self.granule.as_mut() {
            debug_assert_eq!(g.offset + g.length, start, "granules are contiguous");
            if g.row_index.is_none()
                && row_index.is_none()
                && g.length < GRANULE_TARGET_BYTES
                && length < GRANULE_TARGET_BYTES
                && start / cl == g.offset / cl
            {
                g.length += length;
                g.partitions += 1;
                return;
            }
        }
        self.close_granule();
        self.granule = Some(IndexEntry {
            key: key.clone(),
            offset: start,
            length,
            row_index,
            partitions: 1,
        });
    }

    /// Adds the open granule's entry to the index block.
    fn close_granule(&mut self) {
        if let Some(g) = self.granule.take() {
            self.index
                .add(&g.key, g.offset, g.length, g.row_index, g.partitions);
        }
    }

    fn write_index_block(&mut self) -> Result<()> {
        let mut out = std::mem::take(&mut self.out);
        out.clear();
        let r = match self.index.finish_into(&mut out) {
            None => Ok(()),
            Some(first_key) => self.write_region(&out).map(|offset| {
                self.summary.push(SummaryEntry {
                    first_key,
                    offset,
                    length: out.len() as u64,
                });
            }),
        };
        self.out = out;
        r
    }

    /// Writes the last chunk, the last index block and the tail, makes the file
    /// durable under its final name, and opens it. An sstable with no partitions
    /// is refused (`InvalidInput`) and its temporary file removed: callers abort
    /// instead.
    pub fn finish(mut self) -> Result<Arc<SSTableReader>> {
        if self.failed {
            return Err(Error::InvalidInput(format!(
                "sstable writer {} failed earlier",
                self.tmp.display()
            )));
        }
        let uncompressed_bytes = self.uncompressed_bytes_written();
        let Some(stats) = self.stats.finish(
            uncompressed_bytes,
            0,
            self.opts.creation_time_seconds,
            self.opts.level,
            self.opts.compression.codec,
            self.opts.base,
        ) else {
            return Err(Error::InvalidInput(format!(
                "sstable {} has no partitions; abort it instead",
                self.id
            )));
        };
        if !self.pending.is_empty() {
            let len = self.pending.len();
            self.write_chunk(0..len)?;
            self.pending_start += len as u64;
            self.pending.clear();
        }
        self.close_granule();
        self.write_index_block()?;
        let format_version = if self.opts.identity.is_some() {
            FORMAT_VERSION
        } else {
            1
        };
        let stats = super::stats::SSTableStats {
            compressed_bytes: self.compressed_bytes,
            // A version-1 file's stats block ends before the coverage.
            coverage: stats
                .coverage
                .filter(|_| format_version >= FIRST_VERSION_WITH_CLUSTERING_COVERAGE),
            ..stats
        };

        let mut tail = Vec::new();
        let chunk_table_offset = self.position();
        encode_chunk_table(&self.chunks, &mut tail);
        seal_block(&mut tail, 0);
        let summary_offset = chunk_table_offset + tail.len() as u64;
        let start = tail.len();
        encode_summary(&self.summary, &mut tail);
        seal_block(&mut tail, start);
        let filter_offset = chunk_table_offset + tail.len() as u64;
        let start = tail.len();
        self.bloom.finish().encode(&mut tail);
        seal_block(&mut tail, start);
        let stats_offset = chunk_table_offset + tail.len() as u64;
        let start = tail.len();
        stats.encode(&mut tail, format_version);
        seal_block(&mut tail, start);
        let footer = Footer {
            chunk_table_offset,
            summary_offset,
            filter_offset,
            stats_offset,
            uncompressed_bytes,
            chunk_length_bytes: self.opts.compression.chunk_length_bytes,
            format_version,
        };
        // The reader refuses a tail past MAX_TAIL_BYTES: never write one.
        if tail.len() as u64 > MAX_TAIL_BYTES {
            self.failed = true;
            return Err(Error::InvalidInput(format!(
                "sstable {}: its tail (chunk table, summary, Bloom filter, statistics) would \
                 take {} bytes, more than {MAX_TAIL_BYTES}, the most an sstable's tail may \
                 hold: split the output into smaller sstables",
                self.id,
                tail.len()
            )));
        }
        tail.extend_from_slice(&footer.encode());
        self.write_region(&tail)?;

        let file = self
            .file
            .take()
            .ok_or_else(|| Error::InvalidInput("sstable writer already finished".into()))?;
        if let Err(e) = file.finish_as(&self.final_path) {
            // The rename may or may not have happened; remove both names so no
            // half-durable file is mistaken for a live sstable.
            let _ = self.fs.remove(&self.tmp);
            let _ = self.fs.remove(&self.final_path);
            return Err(e);
        }
        SSTableReader::open(
            &self.fs,
            &self.final_path,
            self.id,
            self.opts.table_io.clone(),
        )
    }

    /// Abandons the sstable and removes its temporary file.
    pub fn abort(self) {
        drop(self)
    }
}

impl Drop for SSTableWriter {
    fn drop(&mut self) {
        if let Some(file) = self.file.take() {
            drop(file);
            let _ = self.fs.remove(&self.tmp);
        }
    }
}

/// A partition as the writer consumes it whole: decoded ([`PartitionUpdate`],
/// from tools and time-window flushes) or with its rows already encoded
/// ([`EncodedPartition`], from a flush). One append path serves both and the
/// row-by-row path of [`SSTableWriter::begin_partition`], so the bytes
/// written and the statistics kept cannot drift apart.
trait PartitionSource {
    fn key(&self) -> &DecoratedKey;
    fn deletion(&self) -> &PartitionDeletion;
    fn static_row(&self) -> Option<&Row>;
    fn row_count(&self) -> usize;
    fn clustering(&self, i: usize) -> &[u8];
    fn body(&self, i: usize) -> RowBody<'_>;
}

/// One row's body as the writer gets it: built, or encoded against `base`
/// (this sstable's but for the row-timestamp width).
#[derive(Clone, Copy, Debug)]
enum RowBody<'a> {
    Decoded(&'a Row),
    Encoded { body: &'a [u8], base: EncodingBase },
}

impl PartitionSource for PartitionUpdate {
    fn key(&self) -> &DecoratedKey {
        &self.key
    }
    fn deletion(&self) -> &PartitionDeletion {
        &self.deletion
    }
    fn static_row(&self) -> Option<&Row> {
        self.static_row.as_ref()
    }
    fn row_count(&self) -> usize {
        self.rows.len()
    }
    fn clustering(&self, i: usize) -> &[u8] {
        &self.rows[i].clustering
    }
    fn body(&self, i: usize) -> RowBody<'_> {
        RowBody::Decoded(&self.rows[i])
    }
}

impl PartitionSource for EncodedPartition<'_> {
    fn key(&self) -> &DecoratedKey {
        self.key
    }
    fn deletion(&self) -> &PartitionDeletion {
        self.deletion
    }
    fn static_row(&self) -> Option<&Row> {
        self.static_row
    }
    fn row_count(&self) -> usize {
        self.rows.len()
    }
    fn clustering(&self, i: usize) -> &[u8] {
        self.rows[i].clustering
    }
    fn body(&self, i: usize) -> RowBody<'_> {
        RowBody::Encoded {
            body: self.rows[i].body,
            base: self.base,
        }
    }
}

/// The partition being appended row by row ([`SSTableWriter::begin_partition`]).
#[derive(Debug)]
struct Streamed {
    key: DecoratedKey,
    deletion: PartitionDeletion,
    static_row: Option<Row>,
    /// An empty-clustering first row, held until a second row (then the
    /// partition takes the long form) or the end (the short form) decides.
    held: Option<Row>,
    /// Whether the header is written, in the long form.
    open: bool,
}

/// The rows of the partition being appended in the long form: where it
/// starts, the previous row's clustering (prefix compression and the order
/// check), the first one (the statistics' span), and its row blocks. Reused
/// across partitions, so a small partition allocates nothing.
#[derive(Debug, Default)]
struct RowsState {
    /// Data-stream offset of the partition.
    start: u64,
    /// Where its rows start, from `start`.
    rows_offset: u64,
    rows: usize,
    prev: Vec<u8>,
    first: Vec<u8>,
    blocks: RowBlocks,
}

impl RowsState {
    fn reset(&mut self, start: u64, rows_offset: u64) {
        self.start = start;
        self.rows_offset = rows_offset;
        self.rows = 0;
        self.prev.clear();
        self.first.clear();
        self.blocks.clear();
    }
}

/// The row blocks of a partition being written, for its row index: each
/// block's offset in the partition and its first and last clusterings, kept
/// in one byte buffer. A row index has one entry per ~4 KiB of rows (about
/// 1% of a partition of small rows, one per row of large ones): it is the
/// only part of a partition the writer holds until the partition ends, as
/// the format puts the index after the rows.
#[derive(Debug, Default)]
struct RowBlocks {
    keys: Vec<u8>,
    /// `(offset, first clustering's end in keys, last clustering's end)`; a
    /// block's first clustering starts where the previous block's last ends.
    marks: Vec<(u64, usize, usize)>,
}

impl RowBlocks {
    fn clear(&mut self) {
        self.keys.clear();
        self.marks.clear();
    }

    fn is_empty(&self) -> bool {
        self.marks.is_empty()
    }

    fn len(&self) -> usize {
        self.marks.len()
    }

    fn last_offset(&self) -> u64 {
        self.marks.last().map_or(0, |m| m.0)
    }

    /// Opens a block at `offset` whose first row is `first`; `prev` (the row
    /// before it) is the last of the block it closes.
    fn open(&mut self, offset: u64, first: &[u8], prev: &[u8]) {
        self.close(prev);
        self.keys.extend_from_slice(first);
        let end = self.keys.len();
        self.marks.push((offset, end, end));
    }

    fn close(&mut self, last: &[u8]) {
        if let Some(m) = self.marks.last_mut() {
            self.keys.extend_from_slice(last);
            m.2 = self.keys.len();
        }
    }

    /// The row index entries, the last block closed at `last` and `rows_end`.
    fn entries(&mut self, last: &[u8], rows_end: u64) -> Vec<row_index::Entry> {
        self.close(last);
        let mut from = 0;
        let mut out = Vec::with_capacity(self.marks.len());
        for (j, &(offset, first_end, last_end)) in self.marks.iter().enumerate() {
            let end = self.marks.get(j + 1).map_or(rows_end, |m| m.0);
            out.push(row_index::Entry {
                first: self.keys[from..first_end].to_vec(),
                last: self.keys[first_end..last_end].to_vec(),
                offset,
                width: end - offset,
            });
            from = last_end;
        }
        out
    }
}
