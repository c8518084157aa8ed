//! [`SSTableSlice`]: the rows of one partition of one sstable within a
//! clustering range, forward or reversed, produced lazily.
//!
//! Two shapes:
//! - **buffered**: the partition has no row index (it fits one row block, or
//!   the file is older than version 3). It is read and decoded whole, as before
//!   version 3, and the rows in the range handed out one by one.
//! - **indexed**: the partition header (deletions, static row) is read first;
//!   then the row index is descended from its root to the row block holding the
//!   range's start (forward) or end (reverse), and blocks are decoded one at a
//!   time as the caller pulls rows. Only the chunks under the header, the nodes
//!   on the path and the blocks reached are read and decompressed.
//!
//! Who calls: the read path (`read::read_partition`), one thread per slice.
//!
//! Invariants:
//! 1. Rows come out strictly increasing by clustering (forward) or strictly
//!    decreasing (reversed), and every row is inside the range.
//! 2. A block whose first and last rows differ from its index entry, a node
//!    that disagrees with its parent, or bytes that do not decode are an
//!    `Error::Corruption` naming the file offset of the chunk involved; no row
//!    of such a block is returned.
//! 3. Memory: the decoded rows of one block, the nodes on one root-to-leaf
//!    path, and at most [`CACHED_CHUNKS`] decompressed chunks.

use super::format::RowIndexLocation;
use super::partition::{decode_header, decode_row_body, read_row_entry, MARKER_ROW};
use super::reader::{HeldChunk, SSTableReader};
use super::row_index::{decode_node, seek_forward, seek_reverse, Entry, Node};
use crate::data::{ClusteringRange, DecoratedKey, PartitionDeletion, PartitionUpdate, Row};
use crate::encoding::Reader;
use crate::error::Result;
use crate::fs::IoTag;
use std::sync::Arc;

/// Decompressed chunks a slice keeps: the header's, the root's, a node's and a
/// block's are often different chunks, and the next block is usually in the
/// current one.
pub const CACHED_CHUNKS: usize = 4;

/// See the module docs.
#[derive(Debug)]
pub struct SSTableSlice {
    /// The partition's deletion and range tombstones (whole, whatever the range).
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
    rows: Rows,
}

#[derive(Debug)]
enum Rows {
    /// Remaining rows in reverse order of handing out (`pop` gives the next).
    Buffered(Vec<Row>),
    Indexed(Box<Indexed>),
}

/// One level of the cursor: a node and the current position in it.
#[derive(Debug)]
struct Level {
    node: Node,
    pos: usize,
}

/// The row block being handed out: its bytes, and the rows of the range in it
/// as (clustering, body extent), in reverse order of handing out. Bodies are
/// decoded only when handed out, so a "first 10 rows" read decodes 10 rows,
/// not the ~100 of a 4 KiB block.
#[derive(Debug, Default)]
struct Block {
    bytes: Span,
    rows: Vec<(Vec<u8>, usize, usize)>,
    /// Data-stream offset of the block, for errors.
    at: u64,
}

/// Bytes of the partition: a range of a chunk the chunk cache holds (no
/// copy), or copied out (bytes across chunks, or a chunk read for this slice
/// alone).
#[derive(Debug)]
enum Span {
    Shared(Arc<[u8]>, std::ops::Range<usize>),
    Owned(Vec<u8>),
}

impl Default for Span {
    fn default() -> Span {
        Span::Owned(Vec::new())
    }
}

impl Span {
    fn into_vec(self) -> Vec<u8> {
        match self {
            Span::Shared(chunk, range) => chunk[range].to_vec(),
            Span::Owned(bytes) => bytes,
        }
    }
}

impl std::ops::Deref for Span {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        match self {
            Span::Shared(chunk, range) => &chunk[range.clone()],
            Span::Owned(bytes) => bytes,
        }
    }
}

#[derive(Debug)]
struct Indexed {
    reader: Arc<SSTableReader>,
    tag: IoTag,
    /// The partition's offset and length in the data stream.
    offset: u64,
    length: u64,
    range: ClusteringRange,
    reversed: bool,
    /// Root first; the last level is a leaf (level 0) whose `pos` is the next
    /// block to read.
    path: Vec<Level>,
    block: Block,
    /// No block after the current `buf` can hold rows of the range.
    done: bool,
    /// Held, not copied, when the chunk cache has them (a 16 KiB copy per
    /// chunk was a fifth of a time-series point read: BENCHMARKS.md,
    /// "Clustering coverage").
    chunks: Vec<(usize, HeldChunk)>,
    blocks_read: usize,
}

impl SSTableSlice {
    /// A slice of an already decoded partition.
    pub(super) fn buffered(p: PartitionUpdate, range: &ClusteringRange, reversed: bool) -> Self {
        let mut rows: Vec<Row> = p
            .rows
            .into_iter()
            .filter(|r| range.contains(&r.clustering))
            .collect();
        if !reversed {
            rows.reverse();
        }
        SSTableSlice {
            deletion: p.deletion,
            static_row: p.static_row,
            rows: Rows::Buffered(rows),
        }
    }

    /// A slice through the row index at `loc` of the partition at
    /// `(offset, length)`.
    pub(super) fn indexed(
        reader: Arc<SSTableReader>,
        key: &DecoratedKey,
        (offset, length, loc): (u64, u64, RowIndexLocation),
        range: &ClusteringRange,
        reversed: bool,
        tag: IoTag,
    ) -> Result<Self> {
        if offset
            .checked_add(length)
            .is_none_or(|end| end > reader.uncompressed_bytes())
        {
            return Err(reader.corrupt_data(
                offset,
                format!("index points past the data stream: {offset}+{length}"),
            ));
        }
        let mut ix = Indexed {
            reader,
            tag,
            offset,
            length,
            range: range.clone(),
            reversed,
            path: Vec::new(),
            block: Block::default(),
            done: false,
            chunks: Vec::new(),
            blocks_read: 0,
        };
        let header = ix.bytes(0, loc.rows_offset)?;
        let mut r = Reader::new(&header);
        let header = decode_header(&mut r, key, ix.reader.base(), ix.reader.header_order())
            .map_err(|e| {
                ix.reader
                    .corrupt_data(offset, format!("partition header: {}", e.0))
            })?;
        let (deletion, static_row) = (header.deletion, header.static_row);
        if header.single_row {
            return Err(ix.reader.corrupt_data(
                offset,
                "a one-row partition in the short form has a row index",
            ));
        }
        if !r.is_empty() {
            return Err(ix
                .reader
                .corrupt_data(offset, "partition header shorter than its index entry says"));
        }
        // The root runs from its offset to the end marker, the partition's last byte.
        let root_width = length
            .checked_sub(1 + loc.root_offset)
            .filter(|&w| w > 0)
            .ok_or_else(|| {
                ix.reader
                    .corrupt_data(offset, "row index root outside its partition")
            })?;
        ix.seek(loc.root_offset, root_width)?;
        Ok(SSTableSlice {
            deletion,
            static_row,
            rows: Rows::Indexed(Box::new(ix)),
        })
    }

    /// The first and last clustering of the rows this slice can hand out,
    /// without reading a row block: an indexed slice answers from its row
    /// index's root, so for a slice over the whole partition these are the
    /// partition's bounds (the blob accounting's overwrite check uses them to
    /// skip partners whose rows lie elsewhere). `None` when there are none.
    pub fn clustering_bounds(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        match &self.rows {
            Rows::Buffered(rows) => {
                // Held in reverse order of handing out, in either direction.
                let (a, b) = (rows.first()?, rows.last()?);
                let (lo, hi) = if a.clustering <= b.clustering {
                    (a, b)
                } else {
                    (b, a)
                };
                Some((lo.clustering.clone(), hi.clustering.clone()))
            }
            Rows::Indexed(ix) => {
                let root = &ix.path.first()?.node;
                let last = root.len().checked_sub(1)?;
                let (lo, hi) = (root.first(0), root.last(last));
                // A slice narrower than the partition: clamp to its range.
                Some((lo.to_vec(), hi.to_vec()))
            }
        }
    }

    /// The next row of the range in the slice's direction.
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        match &mut self.rows {
            Rows::Buffered(rows) => Ok(rows.pop()),
            Rows::Indexed(ix) => ix.next_row(),
        }
    }

    /// Row blocks decoded so far (0 for a buffered slice): what a seek cost.
    pub fn blocks_read(&self) -> usize {
        match &self.rows {
            Rows::Buffered(_) => 0,
            Rows::Indexed(ix) => ix.blocks_read,
        }
    }
}

impl Indexed {
    /// Partition bytes `[from, from + len)`, through the chunk cache: shared
    /// with it when they lie in one cached chunk (a row block usually does).
    fn bytes(&mut self, from: u64, len: u64) -> Result<Span> {
        let r = Arc::clone(&self.reader);
        if from.checked_add(len).is_none_or(|end| end > self.length) {
            return Err(r.corrupt_data(
                self.offset,
                format!(
                    "row index points past its partition: {from}+{len} of {}",
                    self.length
                ),
            ));
        }
        let start = self.offset + from;
        let end = start + len;
        let cl = r.chunk_length();
        let mut out = Vec::new();
        let mut at = start;
        while at < end {
            let i = (at / cl) as usize;
            let chunk = match self.chunks.iter().position(|(c, _)| *c == i) {
                Some(k) => &self.chunks[k].1,
                None => {
                    let held = r.chunk_held(i, self.tag)?;
                    if self.chunks.len() >= CACHED_CHUNKS {
                        self.chunks.remove(0);
                    }
                    self.chunks.push((i, held));
                    &self.chunks[self.chunks.len() - 1].1
                }
            };
            let chunk_start = i as u64 * cl;
            let lo = (at - chunk_start) as usize;
            let hi = ((end - chunk_start) as usize).min(chunk.len());
            if lo >= hi {
                return Err(r.corrupt_data(at, "chunk shorter than the data stream says"));
            }
            if at == start && chunk_start + hi as u64 == end {
                if let HeldChunk::Cached(c) = chunk {
                    return Ok(Span::Shared(Arc::clone(c), lo..hi));
                }
            }
            out.reserve_exact((end - at) as usize);
            out.extend_from_slice(&chunk[lo..hi]);
            at = chunk_start + hi as u64;
        }
        Ok(Span::Owned(out))
    }

    fn node(&mut self, offset: u64, width: u64) -> Result<Node> {
        let bytes = self.bytes(offset, width)?.into_vec();
        decode_node(bytes).map_err(|e| {
            self.reader
                .corrupt_data(self.offset + offset, format!("row index node: {}", e.0))
        })
    }

    /// Checks invariant 2 of the row index for `child`, reached through
    /// `parent` (an entry of a node of level `child.level + 1`).
    fn check_child(&self, parent: &Entry, level: u8, child: &Node) -> Result<()> {
        if child.level + 1 != level
            || child.first(0) != parent.first.as_slice()
            || child.last(child.len() - 1) != parent.last.as_slice()
        {
            return Err(self.reader.corrupt_data(
                self.offset + parent.offset,
                "row index node disagrees with its parent",
            ));
        }
        Ok(())
    }

    /// Descends from the root to the first block that may hold the range's
    /// start (forward) or end (reverse); none found means the range misses.
    fn seek(&mut self, root_offset: u64, root_width: u64) -> Result<()> {
        let mut node = self.node(root_offset, root_width)?;
        loop {
            let pos = if self.reversed {
                seek_reverse(&node, &self.range)
            } else {
                seek_forward(&node, &self.range)
            };
            let Some(pos) = pos else {
                // Only the root can miss: a child covers exactly what its
                // parent's entry covers (check_child).
                self.done = true;
                return Ok(());
            };
            let level = node.level;
            let entry = node.entry(pos);
            self.path.push(Level { node, pos });
            if level == 0 {
                return Ok(());
            }
            node = self.node(entry.offset, entry.width)?;
            self.check_child(&entry, level, &node)?;
        }
    }

    /// Moves the cursor to the next block in the slice's direction; false at
    /// the end of the partition.
    fn advance(&mut self) -> Result<bool> {
        loop {
            let Some(top) = self.path.last_mut() else {
                return Ok(false);
            };
            if self.reversed {
                if top.pos > 0 {
                    top.pos -= 1;
                    break;
                }
            } else if top.pos + 1 < top.node.len() {
                top.pos += 1;
                break;
            }
            self.path.pop();
        }
        // Down to a leaf along the first (forward) or last (reverse) children.
        loop {
            let Some(top) = self.path.last() else {
                return Ok(false);
            };
            let level = top.node.level;
            if level == 0 {
                return Ok(true);
            }
            let entry = top.node.entry(top.pos);
            let node = self.node(entry.offset, entry.width)?;
            self.check_child(&entry, level, &node)?;
            let pos = if self.reversed { node.len() - 1 } else { 0 };
            self.path.push(Level { node, pos });
        }
    }

    fn next_row(&mut self) -> Result<Option<Row>> {
        loop {
            if let Some((ck, from, to)) = self.block.rows.pop() {
                let b = &self.block;
                let row =
                    decode_row_body(&b.bytes[from..to], ck, self.reader.base()).map_err(|e| {
                        self.reader
                            .corrupt_data(b.at, format!("row block: {}", e.0))
                    })?;
                return Ok(Some(row));
            }
            if self.done {
                return Ok(None);
            }
            self.read_block()?;
        }
    }

    /// Reads the block under the cursor, frames its rows (clusterings and body
    /// extents, bodies left encoded) and advances.
    fn read_block(&mut self) -> Result<()> {
        let Some(entry) = self
            .path
            .last()
            .filter(|l| l.pos < l.node.len())
            .map(|l| l.node.entry(l.pos))
        else {
            self.done = true;
            return Ok(());
        };
        // A block wholly past the range ends the slice.
        let past = if self.reversed {
            !self.range.start.admits_as_start(&entry.last)
        } else {
            !self.range.end.admits_as_end(&entry.first)
        };
        if past {
            self.done = true;
            return Ok(());
        }
        let bytes = self.bytes(entry.offset, entry.width)?;
        self.blocks_read += 1;
        let block_at = self.offset + entry.offset;
        let bad = |reason: String| {
            self.reader
                .corrupt_data(block_at, format!("row block: {reason}"))
        };
        let mut rows = Vec::new();
        let mut r = Reader::new(&bytes);
        // Two clustering buffers, swapped after each row: a clustering is
        // allocated only for the rows in the range.
        let (mut prev, mut ck) = (Vec::new(), Vec::new());
        let mut first = true;
        while !r.is_empty() {
            let marker = r.u8().map_err(|e| bad(e.0.to_string()))?;
            if marker != MARKER_ROW {
                return Err(bad(format!("row marker {marker} inside a row block")));
            }
            let body = read_row_entry(&mut r, &prev, &mut ck).map_err(|e| bad(e.0.to_string()))?;
            if first {
                if ck != entry.first {
                    return Err(bad("first row differs from its index entry".into()));
                }
                first = false;
            } else if ck <= prev {
                return Err(bad("rows out of clustering order".into()));
            }
            if self.range.contains(&ck) {
                let to = r.position();
                rows.push((ck.clone(), to - body.len(), to));
            }
            std::mem::swap(&mut prev, &mut ck);
        }
        if first || prev != entry.last {
            return Err(bad("last row differs from its index entry".into()));
        }
        if !self.reversed {
            rows.reverse();
        }
        self.block = Block {
            bytes,
            rows,
            at: block_at,
        };
        // Stop once this block reaches past the range; otherwise move on.
        let reaches_past = if self.reversed {
            !self.range.start.admits_as_start(&entry.first)
        } else {
            !self.range.end.admits_as_end(&entry.last)
        };
        if reaches_past || !self.advance()? {
            self.done = true;
        }
        Ok(())
    }
}
