//! Finding one cell of one row in an sstable without reading its value, and
//! reading any byte range of that value (issue 13: large values read in ranges).
//!
//! How a cell is found, touching only what it must:
//! 1. the partition index entry (one index block), as for any lookup;
//! 2. the partition header (key, deletions, static row), read from a growing
//!    prefix of the partition (usually one chunk);
//! 3. the row: through the row index (format 3, partitions of two row blocks or
//!    more) down to the block that may hold the clustering, else from the first
//!    row; row entries are walked by their body lengths, so a row that is not
//!    the one wanted is skipped without reading its chunks;
//! 4. the row body up to the cell ([`crate::encoding::locate_cell`]), skipping
//!    other values unread.
//!
//! Then [`SSTableReader::read_value_range`] reads only the chunks under the
//! requested bytes, decompressing whole chunks straight into the result.
//!
//! Who calls: the read path (`crate::read::read_value_range`), any thread.
//!
//! Invariants:
//! 1. Bytes outside the partition, malformed framing and failed checksums are
//!    `Error::Corruption` naming the file offset of the chunk involved; nothing
//!    panics on any file content.
//! 2. Memory: one decompressed chunk and one stored chunk besides the result;
//!    a value's bytes are copied once, from the decompressed chunk (or straight
//!    from the codec) into the result.

use super::format::RowIndexLocation;
use super::partition::{decode_header, MARKER_ROW};
use super::reader::SSTableReader;
use super::row_index::{decode_node, seek_forward};
use crate::data::{
    ClusteringBound, ClusteringRange, ColumnId, DecoratedKey, DeletionTime, PartitionDeletion,
};
use crate::encoding::{locate_cell, ByteSource, CellLocation, DecodeError, Reader};
use crate::error::{Error, Result};
use crate::fs::IoTag;

/// The most [`SSTableReader::read_value_range`] reserves before reading: a
/// range longer than this grows chunk by chunk (a partition or value of the
/// largest legal size costs a few reallocations, which its decompression
/// dwarfs).
const RESERVE_AHEAD_BYTES: u64 = 64 << 20;

/// A cell found in an sstable: the partition's deletions, the row's deletion,
/// and where the cell's value is in the data stream.
#[derive(Clone, Debug)]
pub struct SSTableCell {
    pub deletion: PartitionDeletion,
    /// `None` if the partition has no row with that clustering.
    pub row: Option<(DeletionTime, Option<CellLocation>)>,
}

/// Why a cursor read failed.
#[derive(Debug)]
enum CursorError {
    Decode(DecodeError),
    Io(Error),
}

impl From<DecodeError> for CursorError {
    fn from(e: DecodeError) -> Self {
        CursorError::Decode(e)
    }
}

/// Reads the data stream forward within `[pos, end)`, one chunk at a time;
/// [`ByteSource::skip`] moves without reading.
struct DataCursor<'r> {
    reader: &'r SSTableReader,
    tag: IoTag,
    pos: u64,
    end: u64,
    chunk_index: Option<usize>,
    chunk: Vec<u8>,
    stored: Vec<u8>,
}

impl DataCursor<'_> {
    fn error(&self, e: CursorError) -> Error {
        match e {
            CursorError::Io(e) => e,
            CursorError::Decode(d) => self.reader.corrupt_data(self.pos, d.0),
        }
    }
}

impl ByteSource for DataCursor<'_> {
    type Error = CursorError;

    fn u8(&mut self) -> std::result::Result<u8, CursorError> {
        if self.pos >= self.end {
            return Err(DecodeError("read past the end of the partition").into());
        }
        let cl = self.reader.chunk_length();
        let i = (self.pos / cl) as usize;
        if self.chunk_index != Some(i) {
            self.chunk.clear();
            self.chunk_index = None;
            self.reader
                .read_chunk_reusing(i, self.tag, &mut self.stored, &mut self.chunk)
                .map_err(CursorError::Io)?;
            self.chunk_index = Some(i);
        }
        let b = *self
            .chunk
            .get((self.pos - i as u64 * cl) as usize)
            .ok_or(DecodeError("chunk shorter than the data stream says"))?;
        self.pos += 1;
        Ok(b)
    }

    fn skip(&mut self, n: u64) -> std::result::Result<(), CursorError> {
        match self.pos.checked_add(n).filter(|&p| p <= self.end) {
            Some(p) => {
                self.pos = p;
                Ok(())
            }
            None => Err(DecodeError("skip past the end of the partition").into()),
        }
    }

    fn position(&self) -> u64 {
        self.pos
    }

    fn remaining(&self) -> u64 {
        self.end.saturating_sub(self.pos)
    }
}

impl SSTableReader {
    /// Finds simple column `column` of row `clustering` of partition `key`
    /// without reading its value (see the module docs). `None` if this sstable
    /// does not hold the partition.
    pub fn locate_cell(
        &self,
        key: &DecoratedKey,
        clustering: &[u8],
        column: ColumnId,
        tag: IoTag,
    ) -> Result<Option<SSTableCell>> {
        self.locate_cell_admitted(key, clustering, column, tag, super::reader::Admitted::No)
    }

    /// [`locate_cell`](Self::locate_cell) when the caller already tested the
    /// key's range and filter (`Admitted::Yes`).
    pub fn locate_cell_admitted(
        &self,
        key: &DecoratedKey,
        clustering: &[u8],
        column: ColumnId,
        tag: IoTag,
        admitted: super::reader::Admitted,
    ) -> Result<Option<SSTableCell>> {
        // A located partition's bytes, when finding it read them (a walk of a
        // sparse index's granule), are small and in the chunk cache for a
        // user read: the cursor below reads them again from there.
        let Some(super::reader::Located {
            offset,
            length,
            row_index,
            ..
        }) = self.locate(key, tag, admitted)?
        else {
            return Ok(None);
        };
        let end = offset
            .checked_add(length)
            .filter(|&e| e <= self.uncompressed_bytes())
            .ok_or_else(|| {
                self.corrupt_data(
                    offset,
                    format!("index points past the data stream: {offset}+{length}"),
                )
            })?;
        let (deletion, rows_offset, single_row, short_body_len) =
            self.partition_header(key, offset, length, row_index, tag)?;
        if single_row && row_index.is_some() {
            return Err(self.corrupt_data(
                offset,
                "a one-row partition in the short form has a row index",
            ));
        }
        let mut c = DataCursor {
            reader: self,
            tag,
            pos: offset + rows_offset,
            end,
            chunk_index: None,
            chunk: Vec::new(),
            stored: Vec::new(),
        };
        // Where to start walking rows, and the one clustering that block may
        // start with (its first row has no shared prefix).
        if let Some(loc) = row_index {
            match self.seek_block(offset, length, loc, clustering, tag)? {
                Some(block_offset) => c.pos = offset + block_offset,
                None => {
                    return Ok(Some(SSTableCell {
                        deletion,
                        row: None,
                    }))
                }
            }
        }
        let short = single_row.then_some(short_body_len);
        let row = find_row(&mut c, clustering, self, column, short).map_err(|e| c.error(e))?;
        Ok(Some(SSTableCell { deletion, row }))
    }

    /// The partition header's deletions and where the rows start, relative to
    /// the partition, whether it is in the short form, and the short form's
    /// body length if the header held it. With a row index the header's
    /// length is known; without one, a prefix of the partition is decoded,
    /// doubled until the header fits (it is a few bytes unless a static row
    /// is large).
    fn partition_header(
        &self,
        key: &DecoratedKey,
        offset: u64,
        length: u64,
        row_index: Option<RowIndexLocation>,
        tag: IoTag,
    ) -> Result<(PartitionDeletion, u64, bool, Option<u64>)> {
        let mut want = match row_index {
            Some(loc) => loc.rows_offset,
            None => self.chunk_length().min(length),
        };
        loop {
            let bytes = self.read_range(offset, want.min(length), tag)?;
            let mut r = Reader::new(&bytes);
            match decode_header(&mut r, key, self.base(), self.header_order()) {
                Ok(h) => {
                    let body_len = h.body_len.map(|n| n as u64);
                    return Ok((h.deletion, r.position() as u64, h.single_row, body_len));
                }
                Err(e) if want >= length || row_index.is_some() => {
                    return Err(self.corrupt_data(offset, format!("partition header: {}", e.0)))
                }
                Err(_) => want = want.saturating_mul(2),
            }
        }
    }

    /// Descends the row index of the partition at `offset` to the row block
    /// that may hold `clustering`; its offset in the partition, or `None` if no
    /// block can.
    fn seek_block(
        &self,
        offset: u64,
        length: u64,
        loc: RowIndexLocation,
        clustering: &[u8],
        tag: IoTag,
    ) -> Result<Option<u64>> {
        let range = ClusteringRange {
            start: ClusteringBound::inclusive(clustering.to_vec()),
            end: ClusteringBound::inclusive(clustering.to_vec()),
        };
        let mut node_at = loc.root_offset;
        let mut width = length
            .checked_sub(1 + loc.root_offset)
            .filter(|&w| w > 0)
            .ok_or_else(|| self.corrupt_data(offset, "row index root outside its partition"))?;
        for _ in 0..=super::row_index::MAX_HEIGHT {
            if node_at.checked_add(width).is_none_or(|e| e > length) {
                return Err(self.corrupt_data(offset, "row index points past its partition"));
            }
            let bytes = self.read_range(offset + node_at, width, tag)?;
            let node = decode_node(bytes).map_err(|e| {
                self.corrupt_data(offset + node_at, format!("row index node: {}", e.0))
            })?;
            let Some(pos) = seek_forward(&node, &range) else {
                return Ok(None);
            };
            let e = node.entry(pos);
            if e.first.as_slice() > clustering {
                return Ok(None);
            }
            if node.level == 0 {
                return Ok(Some(e.offset));
            }
            node_at = e.offset;
            width = e.width;
        }
        Err(self.corrupt_data(offset, "row index deeper than any index written"))
    }

    /// Data-stream bytes `[at, at + len)` appended to `out`: whole chunks are
    /// decompressed straight into `out`, partial ones (the first and the last)
    /// through the chunk cache or one scratch chunk; one stored-chunk buffer is
    /// reused throughout.
    pub fn read_value_range(&self, at: u64, len: u64, tag: IoTag, out: &mut Vec<u8>) -> Result<()> {
        let end = at
            .checked_add(len)
            .filter(|&e| e <= self.uncompressed_bytes())
            .ok_or_else(|| {
                self.corrupt_data(at, format!("value runs past the data stream: {at}+{len}"))
            })?;
        if len == 0 {
            return Ok(());
        }
        let cl = self.chunk_length();
        // `len` is the file's word (an index entry's, a cell's), bounded only by
        // the data stream the footer claims: reserve at most this much ahead,
        // and let a longer range grow as its chunks are read and verified, so
        // a crafted length never allocates what the file does not hold.
        out.reserve(len.min(RESERVE_AHEAD_BYTES) as usize);
        let mut stored = Vec::new();
        let mut scratch = Vec::new();
        let mut pos = at;
        while pos < end {
            let i = (pos / cl) as usize;
            let chunk_start = i as u64 * cl;
            let chunk_end = (chunk_start + cl).min(self.uncompressed_bytes());
            if pos == chunk_start && chunk_end <= end {
                self.read_chunk_reusing(i, tag, &mut stored, out)?;
                pos = chunk_end;
                continue;
            }
            // A part of a chunk (a small partition's bytes, or a large
            // value's ends) goes through the chunk cache; whole chunks of a
            // large value above stream past it, so one large read does not
            // evict the hot set.
            let chunk = self.chunk_cached(i, tag, &mut stored, &mut scratch)?;
            let lo = (pos - chunk_start) as usize;
            let hi = ((end.min(chunk_end)) - chunk_start) as usize;
            let piece = chunk
                .get(lo..hi)
                .ok_or_else(|| self.corrupt_data(pos, "chunk shorter than the data stream says"))?;
            out.extend_from_slice(piece);
            pos = chunk_start + hi as u64;
        }
        Ok(())
    }
}

/// Walks row entries from the cursor (at a row marker that starts a block or
/// the partition's rows) to `clustering`; the row's deletion and cell, or
/// `None` once a greater clustering or the end of the rows is reached.
/// `short`: the partition is in the short form, the cursor at its one row's
/// body (`Some(Some(len))`, the length read with the header) or at the
/// body's length (`Some(None)`).
fn find_row(
    c: &mut DataCursor<'_>,
    clustering: &[u8],
    reader: &SSTableReader,
    column: ColumnId,
    short: Option<Option<u64>>,
) -> std::result::Result<Option<(DeletionTime, Option<CellLocation>)>, CursorError> {
    let single_row = short.is_some();
    let mut prev: Vec<u8> = Vec::new();
    loop {
        let ck = if single_row {
            Vec::new()
        } else {
            let marker = c.u8()?;
            if marker != MARKER_ROW {
                // The end marker or the row index: no more rows.
                return Ok(None);
            }
            let shared = c.varint()?;
            if shared > prev.len() as u64 {
                return Err(DecodeError(
                    "shared clustering prefix longer than the previous clustering",
                )
                .into());
            }
            let suffix_len = c.varint()?;
            let suffix = c.take_vec(suffix_len)?;
            let mut ck = prev[..shared as usize].to_vec();
            ck.extend_from_slice(&suffix);
            ck
        };
        let body_len = match short {
            Some(Some(n)) => n,
            _ => c.varint()?,
        };
        match ck.as_slice().cmp(clustering) {
            // The short form's one row is the partition's last.
            std::cmp::Ordering::Less if single_row => return Ok(None),
            std::cmp::Ordering::Less => {
                c.skip(body_len)?;
                prev = ck;
            }
            std::cmp::Ordering::Greater => return Ok(None),
            std::cmp::Ordering::Equal => {
                let body_start = c.position();
                let body_end = body_start
                    .checked_add(body_len)
                    .filter(|&e| e <= c.end)
                    .ok_or(DecodeError("row body runs past its partition"))?;
                let saved_end = c.end;
                c.end = body_end;
                let found = locate_cell(c, reader.base(), column)?;
                c.end = saved_end;
                if let Some(cell) = &found.1 {
                    if cell
                        .value_at
                        .checked_add(cell.value_len)
                        .is_none_or(|e| e > body_end)
                    {
                        return Err(DecodeError("cell value runs past its row").into());
                    }
                }
                return Ok(Some(found));
            }
        }
    }
}
