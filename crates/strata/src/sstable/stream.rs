//! [`RowScanner`]: an sstable read a partition header and then a row at a
//! time, in token order, for compaction and the other whole-file rewrites
//! (upgradesstables, import). A large partition is never held whole: its
//! header is read, then each row entry is framed and its body decoded from a
//! window of the chunks it spans, and the chunks before it are let go.
//!
//! Which partitions stream: those with an index entry of their own (every
//! partition over the sparse index's granule size) longer than the
//! scanner's threshold ([`STREAM_PARTITIONS_OVER_BYTES`] by default). The
//! others, small, are decoded whole as [`PartitionScanner`] decodes them and
//! handed out row by row from the decoded partition: the same rows in the
//! same order, so a caller cannot tell the two apart (test
//! `streamed_rows_equal_whole_partitions`).
//!
//! Who calls: one thread owns a `RowScanner` (a compaction's input, a
//! rewrite's source).
//!
//! Invariants:
//! 1. The rows of a partition come in strictly increasing clustering order,
//!    and a streamed partition is checked as a whole decode checks it: its
//!    header names the index entry's key, its row entries, row index and end
//!    marker tile the entry's bytes exactly. Anything else is
//!    `Error::Corruption` naming the file and the offset of the chunk
//!    involved; nothing on any file content panics.
//! 2. Memory, per scanner: a partition of at most the threshold decoded
//!    whole (twice the threshold: its bytes and its rows), or, streaming,
//!    one window spanning the current row entry (its encoded bytes and the
//!    chunks under their ends: at most a row plus two chunks) and the row
//!    decoded from it. Nothing grows with the partition, and the window
//!    shrinks back to two chunks when a streamed partition ends.

use super::format::IndexEntry;
use super::partition::{
    decode_header, decode_row_body, MARKER_END, MARKER_ROW, MARKER_ROW_INDEX, MAX_FRAMED_LENGTH,
};
use super::reader::{PartitionScanner, SSTableReader};
use crate::data::{DecoratedKey, PartitionDeletion, Row};
use crate::encoding::{DecodeError, Reader};
use crate::error::Result;
use crate::fs::IoTag;
use std::sync::Arc;

/// Partitions longer than this (with an index entry of their own) are
/// streamed by [`SSTableReader::scan_rows`]: below it, a whole decode is
/// faster per row and costs at most twice this in memory.
pub const STREAM_PARTITIONS_OVER_BYTES: u64 = 256 << 10;

/// A row entry's framing (marker, shared prefix length, suffix, body length)
/// is at most this long: clusterings are short (CQL keys, at most 64 KiB a
/// component), so more is corruption, not a row.
const MAX_ROW_FRAMING_BYTES: u64 = 1 << 20;

/// What a scanner stands on after [`RowScanner::next_partition`]: the key,
/// deletions and static row of a partition whose rows follow.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PartitionHead {
    pub key: DecoratedKey,
    pub deletion: PartitionDeletion,
    pub static_row: Option<Row>,
}

/// Sequential reader of an sstable's partitions, each as its head and then
/// its rows (module docs). After an error it yields nothing more.
#[derive(Debug)]
pub struct RowScanner {
    scanner: PartitionScanner,
    rows: Rows,
    done: bool,
}

/// The rows of the current partition.
#[derive(Debug)]
enum Rows {
    None,
    Whole(std::vec::IntoIter<Row>),
    Streamed(Streamed),
}

/// Where a streamed partition's reading is.
#[derive(Debug)]
struct Streamed {
    /// Data-stream offset of the next unread byte, and of the partition's end.
    pos: u64,
    end: u64,
    /// The short form: its one body follows (`Some(Some(n))`: of the length
    /// the header held; `Some(None)`: its length precedes it).
    short: Option<Option<u64>>,
    prev: Vec<u8>,
    rows_seen: bool,
    finished: bool,
}

impl SSTableReader {
    /// Every partition in token order as its head and rows ([`RowScanner`]),
    /// those over [`STREAM_PARTITIONS_OVER_BYTES`] streamed.
    pub fn scan_rows(self: &Arc<Self>, tag: IoTag) -> Result<RowScanner> {
        self.scan_rows_over(tag, STREAM_PARTITIONS_OVER_BYTES)
    }

    /// [`scan_rows`](Self::scan_rows) streaming every partition with an
    /// index entry of its own longer than `bytes` (0: all of them; tests
    /// use it to drive the streaming path through small files).
    pub fn scan_rows_over(self: &Arc<Self>, tag: IoTag, bytes: u64) -> Result<RowScanner> {
        Ok(RowScanner {
            scanner: self.scan(None, tag)?.stream_partitions_over(bytes),
            rows: Rows::None,
            done: false,
        })
    }
}

impl RowScanner {
    /// Moves to the next partition; `None` at the end. The rows of the
    /// partition before, if not all read, are passed over.
    pub fn next_partition(&mut self) -> Result<Option<PartitionHead>> {
        if matches!(self.rows, Rows::Streamed(_)) {
            self.scanner.shrink_window();
        }
        self.rows = Rows::None;
        if self.done {
            return Ok(None);
        }
        let r = self.advance();
        if !matches!(r, Ok(Some(_))) {
            self.done = true;
        }
        r
    }

    /// The next row of the current partition, in clustering order; `None`
    /// after its last.
    pub fn next_row(&mut self) -> Result<Option<Row>> {
        let r = match &mut self.rows {
            Rows::None => return Ok(None),
            Rows::Whole(rows) => return Ok(rows.next()),
            Rows::Streamed(s) => next_streamed_row(&mut self.scanner, s),
        };
        if r.is_err() {
            self.rows = Rows::None;
            self.done = true;
        }
        r
    }

    fn advance(&mut self) -> Result<Option<PartitionHead>> {
        if !self.scanner.advance()? {
            return Ok(None);
        }
        if let Some(e) = self.scanner.take_streamed() {
            return self.open_streamed(e).map(Some);
        }
        let p = self.scanner.decode_current()?;
        self.rows = Rows::Whole(p.rows.into_iter());
        Ok(Some(PartitionHead {
            key: p.key,
            deletion: p.deletion,
            static_row: p.static_row,
        }))
    }

    /// Reads the header of the partition of entry `e` and readies its rows.
    fn open_streamed(&mut self, e: IndexEntry) -> Result<PartitionHead> {
        let reader = Arc::clone(self.scanner.reader());
        let (offset, length) = (e.offset, e.length);
        let end = offset
            .checked_add(length)
            .filter(|&end| end <= reader.uncompressed_bytes())
            .ok_or_else(|| {
                reader.corrupt_data(
                    offset,
                    format!("index points past the data stream: {offset}+{length}"),
                )
            })?;
        // The header's length: the row index records it; without one the
        // header is decoded from a prefix doubled until it fits (it is a few
        // bytes unless the static row is large).
        let known = e.row_index.map(|loc| loc.rows_offset);
        let mut want = known.unwrap_or_else(|| reader.chunk_length()).min(length);
        let (header, header_len) = loop {
            let bytes = self.scanner.window(offset, want)?;
            let mut r = Reader::new(bytes);
            match decode_header(&mut r, &e.key, reader.base(), reader.header_order()) {
                Ok(h) => break (h, r.position() as u64),
                Err(d) if known.is_some() || want >= length || want >= MAX_FRAMED_LENGTH => {
                    return Err(reader.corrupt_data(offset, format!("partition header: {}", d.0)))
                }
                Err(_) => want = want.saturating_mul(2).min(length),
            }
        };
        if known.is_some_and(|k| k != header_len) {
            return Err(reader.corrupt_data(
                offset,
                "partition header ends elsewhere than its row index says",
            ));
        }
        if header.single_row && e.row_index.is_some() {
            return Err(reader.corrupt_data(
                offset,
                "a one-row partition in the short form has a row index",
            ));
        }
        self.rows = Rows::Streamed(Streamed {
            pos: offset + header_len,
            end,
            short: header
                .single_row
                .then_some(header.body_len.map(|n| n as u64)),
            prev: Vec::new(),
            rows_seen: false,
            finished: false,
        });
        Ok(PartitionHead {
            key: e.key,
            deletion: header.deletion,
            static_row: header.static_row,
        })
    }
}

/// The next row of streamed partition `s` (module invariants 1 and 2).
fn next_streamed_row(scanner: &mut PartitionScanner, s: &mut Streamed) -> Result<Option<Row>> {
    if s.finished {
        return Ok(None);
    }
    let reader = Arc::clone(scanner.reader());
    let corrupt = |at: u64, why: &str| reader.corrupt_data(at, format!("partition: {why}"));
    if let Some(short) = s.short {
        let (body_start, body_len) = match short {
            Some(n) => (s.pos, n),
            None => {
                let (len, n) = read_framing(scanner, s.pos, s.end, |r| r.varint())?
                    .map_err(|d| corrupt(s.pos, d.0))?;
                (s.pos + n, len)
            }
        };
        if body_start.checked_add(body_len) != Some(s.end) {
            return Err(corrupt(
                body_start,
                "the only row's body does not end the partition",
            ));
        }
        let bytes = scanner.window(body_start, body_len)?;
        let row = decode_row_body(bytes, Vec::new(), reader.base())
            .map_err(|d| corrupt(body_start, d.0))?;
        s.finished = true;
        return Ok(Some(row));
    }
    if s.pos >= s.end {
        return Err(corrupt(s.pos, "rows run to the end without an end marker"));
    }
    let marker = scanner.window(s.pos, 1)?[0];
    match marker {
        MARKER_END => {
            if s.pos + 1 != s.end {
                return Err(corrupt(s.pos, "bytes after the end-of-partition marker"));
            }
            s.finished = true;
            Ok(None)
        }
        MARKER_ROW_INDEX => {
            // Derived from the rows (sstable invariant 7): passed over unread.
            if s.end - s.pos < 6 {
                return Err(corrupt(s.pos, "row index framing cut short"));
            }
            let len = scanner.window(s.pos + 1, 4)?;
            let len = u32::from_le_bytes([len[0], len[1], len[2], len[3]]) as u64;
            let at = s.pos + 5 + len;
            if at.checked_add(1) != Some(s.end) || scanner.window(at, 1)?[0] != MARKER_END {
                return Err(corrupt(
                    s.pos,
                    "row index not followed by the end of its partition",
                ));
            }
            s.finished = true;
            Ok(None)
        }
        MARKER_ROW => {
            let mut clustering = Vec::new();
            let prev = &s.prev;
            let ((shared_ok, body_len), n) = read_framing(scanner, s.pos + 1, s.end, |r| {
                let shared = r.varint_usize()?;
                let suffix = r.bytes()?;
                let body_len = r.varint()?;
                let ok = shared <= prev.len();
                if ok {
                    clustering.extend_from_slice(&prev[..shared]);
                    clustering.extend_from_slice(suffix);
                }
                Ok((ok, body_len))
            })?
            .map_err(|d| corrupt(s.pos, d.0))?;
            if !shared_ok {
                return Err(corrupt(
                    s.pos,
                    "shared clustering prefix longer than the previous clustering",
                ));
            }
            if s.rows_seen && clustering <= s.prev {
                return Err(corrupt(s.pos, "rows out of clustering order"));
            }
            let body_start = s.pos + 1 + n;
            let body_end = body_start
                .checked_add(body_len)
                .filter(|&e| e < s.end)
                .ok_or_else(|| corrupt(body_start, "row body runs past its partition"))?;
            let bytes = scanner.window(body_start, body_len)?;
            s.prev.clear();
            s.prev.extend_from_slice(&clustering);
            let row = decode_row_body(bytes, clustering, reader.base())
                .map_err(|d| corrupt(body_start, d.0))?;
            s.pos = body_end;
            s.rows_seen = true;
            Ok(Some(row))
        }
        _ => Err(corrupt(s.pos, "unknown row marker")),
    }
}

/// Parses `f`'s fields from the data stream at `at` (before `end`) through
/// a window grown until they fit: `Ok((what f returned, bytes it read))`.
/// A failure once the window reaches `end` or [`MAX_ROW_FRAMING_BYTES`] is
/// the framing's fault (the inner `Err`), not the window's; reading the
/// window can fail on its own (the outer `Err`: I/O, a damaged chunk).
fn read_framing<T>(
    scanner: &mut PartitionScanner,
    at: u64,
    end: u64,
    mut f: impl FnMut(&mut Reader<'_>) -> std::result::Result<T, DecodeError>,
) -> Result<std::result::Result<(T, u64), DecodeError>> {
    let room = end.saturating_sub(at);
    let mut want = room.min(64);
    loop {
        let bytes = scanner.window(at, want)?;
        let mut r = Reader::new(bytes);
        match f(&mut r) {
            Ok(v) => return Ok(Ok((v, r.position() as u64))),
            Err(d) if want >= room || want >= MAX_ROW_FRAMING_BYTES => return Ok(Err(d)),
            Err(_) => want = want.saturating_mul(2).min(room),
        }
    }
}
