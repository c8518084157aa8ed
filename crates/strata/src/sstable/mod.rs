//! SSTables: immutable sorted files of partitions, one file per sstable
//! (`strata-{id}-Data.db`), format version 5 (version 4, without the
//! statistics' clustering coverage, version 3, with a dense partition index
//! too, version 2, without row indexes either, and version 1, without the
//! identity header, are still read). The byte
//! layout is drawn in docs/FORMAT.md; this page states the contract.
//!
//! Glossary:
//! - **data stream**: the partitions, serialized back to back in `DecoratedKey`
//!   order (see [`partition`]); offsets in it are *uncompressed* offsets.
//! - **chunk**: the data stream is cut every `chunk_length_bytes` uncompressed
//!   bytes; each piece is compressed alone and stored as
//!   `[codec][payload][crc32c]` (see [`compression`]).
//! - **index block**: ~4 KiB of partition index entries (token, key, offset and
//!   length in the data stream), checksummed. Index blocks are written between
//!   chunks as they fill, so the writer never holds the index in memory.
//! - **granule** (version 4): the partitions one index entry covers, up to
//!   ~2 KiB of small ones starting in one chunk, or one large partition or
//!   one with a row index; a read finds a granule's other partitions by their
//!   framing (see [`format::IndexEntry`]).
//! - **summary**: the first key and position of every index block; loaded at open.
//! - **clustering coverage** (version 5): in the statistics, the smallest and
//!   largest row clustering and whether anything reaches beyond the rows; a
//!   read skips a file whose coverage misses its slice (see
//!   [`stats::ClusteringCoverage`]).
//! - **tail**: chunk offset table, summary, Bloom filter, statistics, footer.
//! - **identity header** (version 2): at offset 0, before chunk 0: table id,
//!   generation, names, column signature, chunk length, codec, encoding base
//!   (see [`identity`]); checked against the manifest and schema by the table.
//! - **row index** (version 3): inside a partition whose rows span more than one
//!   ~4 KiB row block, after its rows, a B-tree of (first clustering, last
//!   clustering, offset, width) entries; its root's location is in the
//!   partition's index entry (see [`row_index`]). A [`SSTableSlice`] seeks
//!   through it and reads only the blocks a slice reaches.
//! - **value location**: where one cell's value sits in the data stream, found
//!   without reading it, so a range of a large value reads only the chunks
//!   under the range (see `value.rs`, [`SSTableReader::locate_cell`]).
//! - **salvage**: reading partitions through the data stream's own framing when
//!   the index or the tail is damaged (see [`salvage`]).
//!
//! Who calls what: one thread owns an [`SSTableWriter`] (flush or compaction);
//! an [`SSTableReader`] is `Send + Sync` and shared as `Arc` by every reader and
//! compaction; a [`PartitionScanner`] or an [`SSTableSlice`] belongs to one thread.
//!
//! Invariants:
//! 1. Every byte of the file is covered by exactly one CRC32C: the identity
//!    header's, a chunk's, an index block's, a tail block's or the footer's. Open
//!    checks that the header, chunks and index blocks tile the region before the
//!    tail without gaps, so there are no
//!    unchecked bytes (and no padding), and any single flipped bit is detected.
//! 2. A checksum or decoding failure is an `Error::Corruption` naming the file and
//!    the file offset of the damaged chunk or block; a reader never returns data
//!    from a chunk whose checksum failed.
//! 3. Partitions are strictly increasing by `DecoratedKey` (checked by the writer
//!    on append and again by readers as they decode); rows within a partition
//!    strictly increase by clustering.
//! 4. Chunk boundaries are at fixed uncompressed offsets (`i * chunk_length`), so
//!    finding the chunks of an uncompressed range is arithmetic, not a search.
//! 5. A file under its final name is complete: the writer writes to
//!    `tmp_path(final)`, fsyncs, renames, fsyncs the directory.
//! 6. Format enums on disk (codec ids, filter hash id, row markers, flags) are
//!    never renumbered; an incompatible change bumps [`FORMAT_VERSION`].
//! 7. A row index lives inside its partition's bytes (so inside checksummed
//!    chunks: invariant 1 holds unchanged) and is derived from the rows: a
//!    whole-partition decode, a scan and salvage skip it, and `verify` checks
//!    that it leads to exactly the partition's rows in both directions.

pub mod bloom;
pub mod compression;
pub mod dump;
mod format;
pub mod identity;
pub mod partition;
mod reader;
pub mod row_index;
pub mod salvage;
mod slice;
pub mod stats;
mod stream;
mod value;
mod writer;

#[cfg(test)]
mod decoder_proptests;
#[cfg(test)]
mod tests;

pub use bloom::BloomFilter;
pub use compression::{Codec, CompressionParams};
pub use format::{
    FIRST_VERSION_WITH_ROW_INDEX, FOOTER_BYTES, FORMAT_VERSION, INDEX_BLOCK_TARGET_BYTES, MAGIC,
};
pub use identity::{ColumnRole, IdentityColumn, SSTableIdentity};
pub use partition::{EncodedPartition, EncodedRow};
pub use reader::{Admitted, PartitionScanner, RawPartition, SSTableReader};
pub use slice::SSTableSlice;
pub use stats::SSTableStats;
pub use stream::{PartitionHead, RowScanner, STREAM_PARTITIONS_OVER_BYTES};
pub use value::SSTableCell;
pub use writer::{SSTableWriter, WriterOptions};

use std::path::{Path, PathBuf};

/// File name of sstable `id`: `strata-{id}-Data.db`.
pub fn data_file_name(id: u64) -> String {
    format!("strata-{id}-Data.db")
}

/// Path of sstable `id` in `dir`.
pub fn data_file_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(data_file_name(id))
}

/// The id of an sstable file name, if it is one (`strata-{id}-Data.db`).
pub fn parse_data_file_name(name: &str) -> Option<u64> {
    name.strip_prefix("strata-")?
        .strip_suffix("-Data.db")?
        .parse()
        .ok()
}
