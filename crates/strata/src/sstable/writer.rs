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
    /// Row blocks of the partition being appended: (first row, partition offset).
    /// Reused across partitions, so a small partition allocates nothing.
    blocks: Vec<(usize, u64)>,
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
            blocks: Vec::new(),
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

    fn append_from<P: PartitionSource>(&mut self, p: &P) -> Result<()> {
        if self.failed || self.file.is_none() {
            return Err(Error::InvalidInput(format!(
                "sstable writer {} is unusable after an earlier failure",
                self.tmp.display()
            )));
        }
        let (key, deletion, static_row) = (p.key(), p.deletion(), p.static_row());
        if deletion.is_empty() && static_row.is_none() && p.row_count() == 0 {
            return Ok(());
        }
        if let Some(last) = &self.last_key {
            if key <= last {
                return Err(Error::InvalidInput(format!(
                    "partition (token {}, key {:02x?}) appended after (token {}, key {:02x?}): sstable partitions must strictly increase",
                    key.token, &key.key[..key.key.len().min(32)], last.token, &last.key[..last.key.len().min(32)]
                )));
            }
        }
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
        let base = self.opts.base;
        let start = self.uncompressed_bytes_written();
        let single_row = is_single_row(p.row_count(), || p.clustering(0).is_empty());
        if single_row && self.order == HeaderOrder::FlagsFirst {
            // flags, body length, the rest of the header, the body: the
            // length is known once the body is encoded, so the header waits.
            let mut head = std::mem::take(&mut self.head);
            head.clear();
            encode_header_parts(
                &p.key().key,
                p.deletion(),
                p.static_row(),
                true,
                &base,
                self.order,
                &mut self.scratch,
                &mut head,
            );
            let r = p.write_body(0, self, Some(&head));
            self.head = head;
            r?;
            return self.finish_partition(p, start, None);
        }
        encode_header_parts(
            &p.key().key,
            p.deletion(),
            p.static_row(),
            single_row,
            &base,
            self.order,
            &mut self.scratch,
            &mut self.pending,
        );
        let rows_offset = self.uncompressed_bytes_written() - start;
        self.blocks.clear();
        let mut prev: &[u8] = &[];
        for i in 0..p.row_count() {
            if self.row_index {
                let at = self.uncompressed_bytes_written() - start;
                let block_start = self.blocks.last().map_or(0, |b| b.1);
                if self.blocks.is_empty() || at - block_start >= ROW_BLOCK_BYTES {
                    // A block's first row shares no prefix, so a read can start
                    // decoding there.
                    self.blocks.push((i, at));
                    prev = &[];
                }
            }
            if !single_row {
                encode_row_key(prev, p.clustering(i), &mut self.pending);
            }
            p.write_body(i, self, None)?;
            prev = p.clustering(i);
        }
        let row_index = if self.blocks.len() >= 2 {
            Some(self.write_row_index(p, start, rows_offset)?)
        } else {
            None
        };
        if !single_row {
            encode_end(&mut self.pending);
        }
        self.finish_partition(p, start, row_index)
    }

    /// Indexes and filters the partition appended from data-stream offset
    /// `start`, and cuts what chunks and index blocks are full.
    fn finish_partition<P: PartitionSource>(
        &mut self,
        p: &P,
        start: u64,
        row_index: Option<RowIndexLocation>,
    ) -> Result<()> {
        let length = self.uncompressed_bytes_written() - start;
        self.index_partition(p.key(), start, length, row_index);
        self.bloom.add(KeyHash::of(&p.key().key));
        p.add_stats(&mut self.stats, length)?;
        self.last_key = Some(p.key().clone());
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

    /// Appends the row index of partition `p` (its rows just written, row blocks
    /// in `self.blocks`) before its end marker; returns where it is.
    fn write_row_index<P: PartitionSource>(
        &mut self,
        p: &P,
        start: u64,
        rows_offset: u64,
    ) -> Result<RowIndexLocation> {
        let rows_end = self.uncompressed_bytes_written() - start;
        let entries: Vec<row_index::Entry> = self
            .blocks
            .iter()
            .enumerate()
            .map(|(j, &(first_row, offset))| {
                let (last_row, end) = match self.blocks.get(j + 1) {
                    Some(&(next_row, next_offset)) => (next_row - 1, next_offset),
                    None => (p.row_count() - 1, rows_end),
                };
                row_index::Entry {
                    first: p.clustering(first_row).to_vec(),
                    last: p.clustering(last_row).to_vec(),
                    offset,
                    width: end - offset,
                }
            })
            .collect();
        let payload_start = rows_end + ROW_INDEX_FRAMING_BYTES;
        let mut payload = Vec::new();
        let root_offset = row_index::build(entries, payload_start, &mut payload);
        let len = u32::try_from(payload.len()).map_err(|_| {
            Error::InvalidInput(format!(
                "row index of {} bytes for partition token {} does not fit the format",
                payload.len(),
                p.key().token
            ))
        })?;
        self.pending.push(MARKER_ROW_INDEX);
        self.pending.extend_from_slice(&len.to_le_bytes());
        self.pending.extend_from_slice(&payload);
        self.cut_full_chunks()?;
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

/// A partition as the writer consumes it: decoded ([`PartitionUpdate`], from
/// compaction and tools) or with its rows already encoded
/// ([`EncodedPartition`], from a flush). One append path serves both, so the
/// bytes written and the statistics kept cannot drift apart.
trait PartitionSource {
    fn key(&self) -> &DecoratedKey;
    fn deletion(&self) -> &PartitionDeletion;
    fn static_row(&self) -> Option<&Row>;
    fn row_count(&self) -> usize;
    fn clustering(&self, i: usize) -> &[u8];
    /// Appends row `i`'s body (length and bytes) to `w`'s data stream, with
    /// `head` around its length (`SSTableWriter::put_body_length`).
    fn write_body(&self, i: usize, w: &mut SSTableWriter, head: Option<&[u8]>) -> Result<()>;
    /// Records the partition, `length` uncompressed bytes, in `stats`.
    fn add_stats(&self, stats: &mut StatsCollector, length: u64) -> Result<()>;
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
    fn write_body(&self, i: usize, w: &mut SSTableWriter, head: Option<&[u8]>) -> Result<()> {
        w.append_row_body(&self.rows[i], head)
    }
    fn add_stats(&self, stats: &mut StatsCollector, length: u64) -> Result<()> {
        stats.add_partition(self, length);
        Ok(())
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
    fn write_body(&self, i: usize, w: &mut SSTableWriter, head: Option<&[u8]>) -> Result<()> {
        w.append_encoded_body(self.rows[i].body, &self.base, head)
    }
    fn add_stats(&self, stats: &mut StatsCollector, length: u64) -> Result<()> {
        // A body that does not parse came from a broken memtable, not the disk.
        stats.add_encoded_partition(self, length).map_err(|e| {
            Error::InvalidInput(format!(
                "an encoded row of partition token {} does not parse: {}",
                self.key.token, e.0
            ))
        })
    }
}
