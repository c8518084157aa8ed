//! The row index of a large partition (format version 3): Cassandra's column
//! index (`column_index_size_in_kb`), made a small B-tree so that a seek reads
//! O(height) nodes of at most ~4 KiB instead of an index whose size grows with
//! the partition. docs/FORMAT.md draws the bytes and says why the sizes are what
//! they are.
//!
//! Glossary:
//! - **row block**: a run of consecutive rows of one partition of about
//!   [`ROW_BLOCK_BYTES`]; its first row is written without prefix compression,
//!   so decoding can start there.
//! - **entry**: `(first clustering, last clustering, offset, width)`; offsets are
//!   relative to the partition's start in the data stream. A level-0 entry
//!   describes a row block; a level-`k` entry describes a node of level `k - 1`.
//! - **node**: `[level u8][count varint]` then `count` entries, each
//!   `[first len varint][first][last len varint][last][offset varint][width varint]`;
//!   cut once it reaches [`NODE_TARGET_BYTES`]. The root is the single node of
//!   the top level and the last node written.
//!
//! Who calls what: the sstable writer builds the index of each partition it
//! writes with [`build`] (one thread); readers decode one node at a time with
//! [`decode_node`] and choose a child with [`seek_forward`] / [`seek_reverse`].
//!
//! Invariants (checked by [`decode_node`] on every node read, and by the writer
//! by construction):
//! 1. Within a node, entries are in clustering order and do not overlap:
//!    `first <= last < next.first`; their byte extents increase and do not
//!    overlap: `offset + width <= next.offset`.
//! 2. A node of level `k > 0` holds entries whose extents are nodes of level
//!    `k - 1`; the first and last clustering of an entry equal the first
//!    clustering of the child's first entry and the last clustering of the
//!    child's last entry (checked by the reader as it descends).
//! 3. A row index has at least two level-0 entries: a partition whose rows fit
//!    in one block has none (small partitions pay nothing in the data stream
//!    and one byte in the partition index).

use crate::data::ClusteringRange;
use crate::encoding::{put_bytes, put_varint, DecodeError, DecodeResult, Reader};

/// Target bytes of encoded rows per row block. 4 KiB is Cassandra's default
/// `column_index_size_in_kb` since 4.0 (CASSANDRA-15388 lowered it from 64 KiB
/// because smaller blocks read fewer bytes per slice); here a block is the unit
/// of row decoding while the 16 KiB chunk stays the unit of I/O, so a seek
/// decodes at most ~4 KiB of rows (about 100 rows of the bench's time series)
/// and a 1 GiB partition gets ~260k level-0 entries, in nodes of 4 KiB.
pub const ROW_BLOCK_BYTES: u64 = 4096;
/// A node is cut once its encoded entries reach this size: about 100 entries of
/// short clusterings, so a million-row partition needs a height-2 tree (root
/// plus one node per seek) and a node costs one chunk to read.
pub const NODE_TARGET_BYTES: usize = 4096;
/// Deepest tree a reader accepts (a fanout of 2 at worst would need 64 levels
/// for 2^64 blocks); anything deeper is damage.
pub const MAX_HEIGHT: u8 = 64;

/// One index entry; see the module docs.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub first: Vec<u8>,
    pub last: Vec<u8>,
    /// From the partition's start in the data stream.
    pub offset: u64,
    pub width: u64,
}

/// Where an entry's fields are in its node's bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct EntryAt {
    first: (usize, usize),
    last: (usize, usize),
    offset: u64,
    width: u64,
}

/// A decoded node: its bytes and where each entry's clusterings are in them,
/// so decoding allocates two vectors, not two per entry (a node of a
/// million-row partition holds ~100 entries; per-entry allocations were the
/// largest cost of a seek).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Node {
    pub level: u8,
    bytes: Vec<u8>,
    /// Never empty.
    entries: Vec<EntryAt>,
}

impl Node {
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Always false: a node has at least one entry.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }

    pub fn first(&self, i: usize) -> &[u8] {
        let (a, b) = self.entries[i].first;
        &self.bytes[a..b]
    }

    pub fn last(&self, i: usize) -> &[u8] {
        let (a, b) = self.entries[i].last;
        &self.bytes[a..b]
    }

    /// Entry `i` as an owned value.
    pub fn entry(&self, i: usize) -> Entry {
        Entry {
            first: self.first(i).to_vec(),
            last: self.last(i).to_vec(),
            offset: self.entries[i].offset,
            width: self.entries[i].width,
        }
    }
}

fn entry_bytes(e: &Entry) -> usize {
    // varint lengths counted generously; this only decides where nodes are cut.
    e.first.len() + e.last.len() + 2 * 3 + 2 * 10
}

fn encode_node(level: u8, entries: &[Entry], out: &mut Vec<u8>) {
    out.push(level);
    put_varint(out, entries.len() as u64);
    for e in entries {
        put_bytes(out, &e.first);
        put_bytes(out, &e.last);
        put_varint(out, e.offset);
        put_varint(out, e.width);
    }
}

/// Appends the nodes of the row index over `blocks` (level-0 entries in
/// clustering order, at least two) to `out`, children before parents, and
/// returns the root's offset. `out[0]` sits at partition offset `base`, so the
/// node entries can point at nodes by partition offset.
pub fn build(blocks: Vec<Entry>, base: u64, out: &mut Vec<u8>) -> u64 {
    debug_assert!(blocks.len() >= 2, "invariant 3");
    let mut level: u8 = 0;
    let mut entries = blocks;
    loop {
        let mut parents: Vec<Entry> = Vec::new();
        let mut start = 0;
        while start < entries.len() {
            let mut end = start;
            let mut size = 0;
            while end < entries.len() && (end == start || size < NODE_TARGET_BYTES) {
                size += entry_bytes(&entries[end]);
                end += 1;
            }
            let offset = base + out.len() as u64;
            encode_node(level, &entries[start..end], out);
            parents.push(Entry {
                first: entries[start].first.clone(),
                last: entries[end - 1].last.clone(),
                offset,
                width: base + out.len() as u64 - offset,
            });
            start = end;
        }
        if parents.len() == 1 {
            return parents[0].offset;
        }
        entries = parents;
        level += 1;
    }
}

/// Decodes one node, checking invariant 1; `bytes` must be exactly the node.
pub fn decode_node(bytes: Vec<u8>) -> DecodeResult<Node> {
    let mut r = Reader::new(&bytes);
    let level = r.u8()?;
    if level >= MAX_HEIGHT {
        return Err(DecodeError("row index node level out of range"));
    }
    let n = r.varint_usize()?;
    if n == 0 {
        return Err(DecodeError("empty row index node"));
    }
    let field = |r: &mut Reader<'_>| -> DecodeResult<(usize, usize)> {
        let len = r.varint_usize()?;
        let start = r.position();
        r.take(len)?;
        Ok((start, start + len))
    };
    let mut entries: Vec<EntryAt> = Vec::with_capacity(n.min(bytes.len()));
    for _ in 0..n {
        let first = field(&mut r)?;
        let last = field(&mut r)?;
        let offset = r.varint()?;
        let width = r.varint()?;
        let at = |(a, b): (usize, usize)| &bytes[a..b];
        if at(first) > at(last) || width == 0 {
            return Err(DecodeError(
                "row index entry with first after last or no width",
            ));
        }
        if let Some(prev) = entries.last() {
            if at(prev.last) >= at(first) || prev.offset.saturating_add(prev.width) > offset {
                return Err(DecodeError("row index entries out of order"));
            }
        }
        entries.push(EntryAt {
            first,
            last,
            offset,
            width,
        });
    }
    if !r.is_empty() {
        return Err(DecodeError("trailing bytes after row index node"));
    }
    Ok(Node {
        level,
        bytes,
        entries,
    })
}

/// The first entry that may hold rows at or after `range`'s start (forward
/// reads), or `None` when every entry ends before it. A start bound admits an
/// upward-closed set of clusterings, so the entries it rejects are a prefix.
pub fn seek_forward(node: &Node, range: &ClusteringRange) -> Option<usize> {
    let i = node
        .entries
        .partition_point(|e| !range.start.admits_as_start(&node.bytes[e.last.0..e.last.1]));
    (i < node.len()).then_some(i)
}

/// The last entry that may hold rows at or before `range`'s end (reverse
/// reads), or `None` when every entry starts after it.
pub fn seek_reverse(node: &Node, range: &ClusteringRange) -> Option<usize> {
    node.entries
        .partition_point(|e| range.end.admits_as_end(&node.bytes[e.first.0..e.first.1]))
        .checked_sub(1)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::ClusteringBound;

    fn entry(first: &[u8], last: &[u8], offset: u64) -> Entry {
        Entry {
            first: first.to_vec(),
            last: last.to_vec(),
            offset,
            width: 10,
        }
    }

    fn entries(node: &Node) -> Vec<Entry> {
        (0..node.len()).map(|i| node.entry(i)).collect()
    }

    fn range(start: ClusteringBound, end: ClusteringBound) -> ClusteringRange {
        ClusteringRange { start, end }
    }

    #[test]
    fn small_index_is_one_root_and_round_trips() {
        let blocks = vec![entry(b"a", b"c", 5), entry(b"d", b"f", 15)];
        let mut out = Vec::new();
        let root = build(blocks.clone(), 100, &mut out);
        assert_eq!(root, 100);
        let node = decode_node(out.clone()).unwrap();
        assert_eq!(node.level, 0);
        assert_eq!(entries(&node), blocks);
        assert!(decode_node(out[..out.len() - 1].to_vec()).is_err());
        let mut longer = out.clone();
        longer.push(0);
        assert!(decode_node(longer).is_err());
    }

    #[test]
    fn large_index_grows_levels_with_nodes_near_the_target() {
        let blocks: Vec<Entry> = (0..20_000u64)
            .map(|i| {
                let first = (2 * i).to_be_bytes().to_vec();
                let last = (2 * i + 1).to_be_bytes().to_vec();
                Entry {
                    first,
                    last,
                    offset: 10 + i * 4096,
                    width: 4096,
                }
            })
            .collect();
        let mut out = Vec::new();
        let base = 1000;
        let root_offset = build(blocks.clone(), base, &mut out);
        let root = decode_node(out[(root_offset - base) as usize..].to_vec()).unwrap();
        assert!(root.level >= 1, "20,000 blocks do not fit one node");
        // Walk every level down, checking invariant 2 and collecting leaves.
        let mut leaves = Vec::new();
        let mut stack = vec![root];
        while let Some(node) = stack.pop() {
            for e in entries(&node) {
                if node.level == 0 {
                    leaves.push(e.clone());
                    continue;
                }
                let from = (e.offset - base) as usize;
                let child = decode_node(out[from..from + e.width as usize].to_vec()).unwrap();
                assert_eq!(child.level, node.level - 1);
                assert_eq!(child.first(0), e.first);
                assert_eq!(child.last(child.len() - 1), e.last);
                assert!(e.width as usize <= NODE_TARGET_BYTES + 64, "{}", e.width);
                stack.push(child);
            }
        }
        // The stack visits subtrees out of order: restore clustering order.
        leaves.sort_by(|a, b| a.first.cmp(&b.first));
        assert_eq!(leaves, blocks);
    }

    #[test]
    fn decode_refuses_overlap_and_disorder() {
        let mut out = Vec::new();
        encode_node(0, &[entry(b"a", b"c", 5), entry(b"c", b"f", 15)], &mut out);
        assert!(decode_node(out.clone()).is_err(), "clusterings overlap");
        out.clear();
        encode_node(0, &[entry(b"a", b"c", 5), entry(b"d", b"f", 12)], &mut out);
        assert!(decode_node(out.clone()).is_err(), "extents overlap");
        out.clear();
        encode_node(0, &[entry(b"b", b"a", 5)], &mut out);
        assert!(decode_node(out.clone()).is_err(), "first after last");
        out.clear();
        encode_node(0, &[], &mut out);
        assert!(decode_node(out.clone()).is_err(), "empty");
        out.clear();
        encode_node(MAX_HEIGHT, &[entry(b"a", b"c", 5)], &mut out);
        assert!(decode_node(out.clone()).is_err(), "level too high");
    }

    #[test]
    fn seeks_at_block_edges_both_directions() {
        // Blocks [a1..a9], [b1..b9], [c1..c9].
        let mut out = Vec::new();
        encode_node(
            0,
            &[
                entry(b"a1", b"a9", 0),
                entry(b"b1", b"b9", 10),
                entry(b"c1", b"c9", 20),
            ],
            &mut out,
        );
        let e = decode_node(out).unwrap();
        let incl = |p: &[u8]| ClusteringBound::inclusive(p.to_vec());
        let excl = |p: &[u8]| ClusteringBound::exclusive(p.to_vec());
        let un = ClusteringBound::UNBOUNDED;
        // Starting exactly at a block's last row stays in that block; just
        // after it moves on.
        assert_eq!(seek_forward(&e, &range(incl(b"a9"), un.clone())), Some(0));
        assert_eq!(seek_forward(&e, &range(excl(b"a9"), un.clone())), Some(1));
        assert_eq!(seek_forward(&e, &range(incl(b"b0"), un.clone())), Some(1));
        assert_eq!(seek_forward(&e, &range(un.clone(), un.clone())), Some(0));
        assert_eq!(seek_forward(&e, &range(excl(b"c9"), un.clone())), None);
        // Prefix bounds: exclusive "b" skips every clustering starting with b.
        assert_eq!(seek_forward(&e, &range(excl(b"b"), un.clone())), Some(2));
        assert_eq!(seek_forward(&e, &range(incl(b"b"), un.clone())), Some(1));
        // Reverse: ending exactly at a block's first row stays in that block.
        assert_eq!(seek_reverse(&e, &range(un.clone(), incl(b"b1"))), Some(1));
        assert_eq!(seek_reverse(&e, &range(un.clone(), excl(b"b1"))), Some(0));
        assert_eq!(seek_reverse(&e, &range(un.clone(), un.clone())), Some(2));
        assert_eq!(seek_reverse(&e, &range(un.clone(), excl(b"a1"))), None);
        // Inclusive prefix end "b" admits every b..., so the b block is last.
        assert_eq!(seek_reverse(&e, &range(un.clone(), incl(b"b"))), Some(1));
        assert_eq!(seek_reverse(&e, &range(un.clone(), excl(b"b"))), Some(0));
    }
}
