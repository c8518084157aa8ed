//! Byte-level encodings shared by the memtable, sstables and (later) the commit
//! log: little-endian fixed-width helpers, LEB128 varints, zigzag, and the compact
//! **row codec**.
//!
//! The row codec is where space is won on small cells (the seeds' tables have
//! 60-byte partitions), so it follows Cassandra 3.0's storage ideas and goes a
//! little further:
//! - a **column-presence bitmap** instead of a column id per cell;
//! - timestamps as zigzag varint deltas: the row timestamp against the
//!   [`EncodingBase`] minimum (an sstable's min timestamp, a memtable's creation
//!   time), each cell's against the row timestamp, with a flag for "same as the row"
//!   (the common case: one INSERT writes every cell at one timestamp), and the same
//!   for TTL and expiry;
//! - varint lengths.
//!
//! Layout of an encoded row body (all integers LEB128 varints unless noted; the
//! format is versioned with the sstable format, see docs/FORMAT.md):
//! ```text
//! flags u8        bit0 marker, bit1 marker expiring, bit2 row deletion,
//!                 bit3 complex cells present, bit4 row timestamp present,
//!                 bit5 (sstable format 6, commit log 4) the only simple cell
//!                 is column 0 and no bitmap is written,
//!                 bit6 (sstable format 8, commit log 5) with bit5 and without
//!                 bit3: that cell is plain (flags 0), its flags byte and value
//!                 length are not written and its value is the rest of the
//!                 body (every body is stored with its length),
//!                 bit7 (sstable format 8) with bit4: the row timestamp is
//!                 fixed-width (below); bit6 without bit5 or with bit3, or bit7 without
//!                 bit4 or without a width in the base, is corruption
//! [row_ts]        zigzag(row_ts - base.min_timestamp)           if bit4, not bit7
//!                 row_ts - base.min_timestamp, base.row_ts_bytes bytes LE
//!                                                              if bit4 and bit7
//!                 row_ts = marker timestamp, else first cell's timestamp
//! [ttl, expiry]   ttl - base.min_ttl, zigzag(expiry - base.min_local_deletion)   if bit1
//! [del_ts, ldt]   zigzag(ts - base.min_timestamp), zigzag(ldt - base.min_local_deletion)  if bit2
//! bitmap_len, bitmap bytes   bit i set = simple column i has a cell; absent if bit5
//! simple cells, ascending column id, each:
//!   cflags u8     (absent if row bit6) bit0 tombstone, bit1 expiring, bit2 own timestamp,
//!                 bit3 own ttl/expiry (else: the marker's), bit4 empty value
//!   [zigzag(ts - row_ts)]                                        if bit2
//!   [ttl - base.min_ttl, zigzag(expiry - base.min_local_deletion)] if expiring && bit3
//!   [zigzag(ldt - base.min_local_deletion)]                       if tombstone
//!   [len, value bytes]                                            unless tombstone or bit4
//!                 (row bit6: the value bytes alone, to the end of the body)
//! [complex cells] count, then each: column, path len, path, cell as above   if bit3
//! ```
//!
//! Invariants:
//! 1. `decode_row(encode_row(r)) == r` for every row whose cells are sorted.
//! 2. Decoding never panics and never reads past its input: malformed bytes give
//!    [`DecodeError`], which callers turn into `Error::Corruption` with file and offset.

use crate::data::{
    Cell, CellKind, ColumnId, DeletionTime, LivenessInfo, Row, NO_DELETION_TIME, NO_TIMESTAMP,
};

/// Malformed encoded bytes; the caller knows the file and offset.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodeError(pub &'static str);

pub type DecodeResult<T> = std::result::Result<T, DecodeError>;

#[inline]
pub fn put_u16_le(out: &mut Vec<u8>, v: u16) {
    out.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_u32_le(out: &mut Vec<u8>, v: u32) {
    out.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_u64_le(out: &mut Vec<u8>, v: u64) {
    out.extend_from_slice(&v.to_le_bytes());
}
#[inline]
pub fn put_i64_le(out: &mut Vec<u8>, v: i64) {
    out.extend_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

#[inline]
pub fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

#[inline]
pub fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

#[inline]
pub fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    put_varint(out, zigzag(v));
}

pub fn varint_len(mut v: u64) -> usize {
    let mut n = 1;
    while v >= 0x80 {
        v >>= 7;
        n += 1;
    }
    n
}

/// Writes a varint length followed by the bytes.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// A cursor over encoded bytes; every read is bounds-checked (invariant 2).
#[derive(Debug, Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf, pos: 0 }
    }

    pub fn position(&self) -> usize {
        self.pos
    }

    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    pub fn is_empty(&self) -> bool {
        self.pos >= self.buf.len()
    }

    pub fn rest(&self) -> &'a [u8] {
        &self.buf[self.pos..]
    }

    #[inline]
    pub fn u8(&mut self) -> DecodeResult<u8> {
        let b = *self
            .buf
            .get(self.pos)
            .ok_or(DecodeError("truncated: expected a byte"))?;
        self.pos += 1;
        Ok(b)
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> DecodeResult<&'a [u8]> {
        let end = self
            .pos
            .checked_add(n)
            .ok_or(DecodeError("length overflow"))?;
        let s = self
            .buf
            .get(self.pos..end)
            .ok_or(DecodeError("truncated: length past end"))?;
        self.pos = end;
        Ok(s)
    }

    pub fn u16_le(&mut self) -> DecodeResult<u16> {
        let s = self.take(2)?;
        Ok(u16::from_le_bytes([s[0], s[1]]))
    }

    pub fn u32_le(&mut self) -> DecodeResult<u32> {
        let s = self.take(4)?;
        Ok(u32::from_le_bytes([s[0], s[1], s[2], s[3]]))
    }

    pub fn u64_le(&mut self) -> DecodeResult<u64> {
        let s = self.take(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(s);
        Ok(u64::from_le_bytes(a))
    }

    pub fn i64_le(&mut self) -> DecodeResult<i64> {
        Ok(self.u64_le()? as i64)
    }

    #[inline]
    pub fn varint(&mut self) -> DecodeResult<u64> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(DecodeError("varint overflows 64 bits"));
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(DecodeError("varint too long"));
            }
        }
    }

    #[inline]
    pub fn zigzag(&mut self) -> DecodeResult<i64> {
        Ok(unzigzag(self.varint()?))
    }

    pub fn varint_usize(&mut self) -> DecodeResult<usize> {
        usize::try_from(self.varint()?).map_err(|_| DecodeError("length does not fit in memory"))
    }

    pub fn bytes(&mut self) -> DecodeResult<&'a [u8]> {
        let n = self.varint_usize()?;
        self.take(n)
    }
}

/// The minimums that row deltas are taken against. An sstable records its own in
/// its header; a memtable uses its creation time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EncodingBase {
    pub min_timestamp: i64,
    pub min_local_deletion: i64,
    pub min_ttl: u32,
    /// Bytes of a fixed-width row timestamp (row flag bit7), 0 for none: the
    /// width of the sstable's timestamp span (sstable format 8). A random
    /// write order makes a row's delta as random as the span is wide, and a
    /// varint spends a bit per byte on its continuation: 23 bits of
    /// microseconds (8 s) take a 4-byte varint (zigzagged, 24 bits) and 3
    /// fixed bytes. The encoder takes the shorter per row (the memtable's
    /// steady encoding takes the width whenever it holds, and a flush
    /// re-encodes those timestamps to the shorter, `row_head_for_width`);
    /// files written before flushes did so hold copied varint rows beside
    /// fixed-width ones, and every reader takes both.
    pub row_ts_bytes: u8,
}

impl EncodingBase {
    pub const ZERO: EncodingBase = EncodingBase {
        min_timestamp: 0,
        min_local_deletion: 0,
        min_ttl: 0,
        row_ts_bytes: 0,
    };

    /// A base for data written around `now_micros`.
    pub fn around(now_micros: i64) -> EncodingBase {
        EncodingBase {
            min_timestamp: now_micros,
            min_local_deletion: now_micros.div_euclid(1_000_000),
            min_ttl: 0,
            row_ts_bytes: 0,
        }
    }

    /// This base with the row-timestamp width for data whose timestamps lie in
    /// `[min_timestamp, max_timestamp]`: the bytes that hold the span, or 0
    /// (none) when the span is negative or needs all eight.
    pub fn with_row_ts_span_to(self, max_timestamp: i64) -> EncodingBase {
        let span = max_timestamp.checked_sub(self.min_timestamp).unwrap_or(-1);
        let row_ts_bytes = match u64::try_from(span) {
            Ok(s) => ((64 - s.leading_zeros()).div_ceil(8)).max(1) as u8,
            Err(_) => 0,
        };
        EncodingBase {
            row_ts_bytes: if row_ts_bytes >= 8 { 0 } else { row_ts_bytes },
            ..self
        }
    }
}

const ROW_MARKER: u8 = 1;
const ROW_MARKER_EXPIRING: u8 = 2;
const ROW_DELETION: u8 = 4;
const ROW_COMPLEX: u8 = 8;
const ROW_HAS_TS: u8 = 16;
/// The row's simple cells are exactly one, of column 0, and the bitmap
/// (`01 01`) is left out: the row of a key-value table, whose one regular
/// column is column 0. Two bytes of the 16 that framed a 116-byte pair on
/// disk and in the chunk cache (issue 15; BENCHMARKS.md "One-row partitions
/// in short").
const ROW_SOLE_CELL0: u8 = 32;
/// With [`ROW_SOLE_CELL0`] and no complex cells: that cell is live, has the
/// row's timestamp, no TTL and a non-empty value (its flags byte would be 0);
/// the flags byte and the value's length are left out, and the value runs to
/// the end of the body. Every row body is stored with its length (a row
/// entry, the short form, a static row, a memtable row) and every decoder is
/// given exactly the body, so the length said it twice. Between two random
/// fields (the timestamp and the value) LZ4 cannot match these bytes, so each
/// cost a whole byte per key-value pair on disk (sstable format 8).
const ROW_PLAIN_SOLE_CELL: u8 = 64;
/// With [`ROW_HAS_TS`]: the row timestamp is `base.row_ts_bytes` bytes of
/// unsigned delta, not a varint ([`EncodingBase::row_ts_bytes`]).
const ROW_FIXED_TS: u8 = 128;
/// The bitmap [`ROW_SOLE_CELL0`] stands for.
const SOLE_CELL0_BITMAP: &[u8] = &[1];

const CELL_TOMBSTONE: u8 = 1;
const CELL_EXPIRING: u8 = 2;
const CELL_OWN_TS: u8 = 4;
const CELL_OWN_TTL: u8 = 8;
const CELL_EMPTY: u8 = 16;
/// A counter cell (`data.rs` invariant 6): live, its value a counter context.
/// Sstable format 11 and commit-log segment format 7 on.
const CELL_COUNTER: u8 = 32;

/// Local deletion times are stored relative to the base; "no deletion" is stored
/// as a delta that decodes back to i64::MAX without overflow tricks.
#[inline]
fn ldt_delta(ldt: i64, base: &EncodingBase) -> i64 {
    ldt.wrapping_sub(base.min_local_deletion)
}
#[inline]
fn ldt_from(delta: i64, base: &EncodingBase) -> i64 {
    delta.wrapping_add(base.min_local_deletion)
}

/// Values at least this long may be left out of an encoding and spliced in by
/// reference ([`encode_row_spliced`]): below it a copy costs less than the
/// bookkeeping, above it the copy is what a large-value write pays for.
pub const SPLICE_MIN_BYTES: usize = 64 * 1024;

/// Where a value left out of an encoded buffer belongs: its bytes come right
/// before `buf[at]` (after the varint length already written there).
pub type Splices<'a> = Vec<(usize, &'a [u8])>;

/// Encodes a row body (everything but the clustering) — see the module docs.
pub fn encode_row(row: &Row, base: &EncodingBase, out: &mut Vec<u8>) {
    encode_row_inner(row, base, out, None, false);
}

/// As [`encode_row`], but each value of [`SPLICE_MIN_BYTES`] or more is not
/// copied into `out`: its length is, and `(position in out, value)` is pushed
/// onto `splices`. The logical encoding is `out` with every splice inserted at
/// its position; it is byte-for-byte what [`encode_row`] produces. Lets the
/// commit log write a large value from the caller's buffer instead of a copy.
pub fn encode_row_spliced<'a>(
    row: &'a Row,
    base: &EncodingBase,
    out: &mut Vec<u8>,
    splices: &mut Splices<'a>,
) {
    encode_row_inner(row, base, out, Some(splices), false);
}

/// As [`encode_row_spliced`], but a row timestamp that fits
/// `base.row_ts_bytes` takes the fixed width even where a varint would be
/// shorter, so a row's size does not change as the clock moves on: the
/// memtable's rows. A row overwritten again and again (a counter, a hot row)
/// then needs the size of the row it replaces and reuses its bytes, where a
/// varint grew a byte at 64 µs and 8 ms of the memtable's age and stranded
/// every replaced row of the old size (BENCHMARKS.md, "Hot rows in less
/// memory"). Decoders read either form.
pub fn encode_row_spliced_steady<'a>(
    row: &'a Row,
    base: &EncodingBase,
    out: &mut Vec<u8>,
    splices: &mut Splices<'a>,
) {
    encode_row_inner(row, base, out, Some(splices), true);
}

/// [`encode_row_spliced_steady`] with every value in `out` (tests compare a
/// memtable's rows with it).
#[cfg(test)]
pub fn encode_row_steady(row: &Row, base: &EncodingBase, out: &mut Vec<u8>) {
    encode_row_inner(row, base, out, None, true);
}

fn encode_row_inner<'a>(
    row: &'a Row,
    base: &EncodingBase,
    out: &mut Vec<u8>,
    mut splices: Option<&mut Splices<'a>>,
    steady_ts: bool,
) {
    let marker = !row.liveness.is_empty();
    let row_ts = if marker {
        Some(row.liveness.timestamp_micros)
    } else {
        row.cells.first().map(|c| c.timestamp_micros)
    };
    let has_complex = row.cells.iter().any(|c| c.path.is_some());
    let mut flags = 0u8;
    if marker {
        flags |= ROW_MARKER;
        if row.liveness.is_expiring() {
            flags |= ROW_MARKER_EXPIRING;
        }
    }
    if !row.deletion.is_live() {
        flags |= ROW_DELETION;
    }
    if has_complex {
        flags |= ROW_COMPLEX;
    }
    if row_ts.is_some() {
        flags |= ROW_HAS_TS;
    }
    let row_ts = row_ts.unwrap_or(base.min_timestamp);
    let mut simple = row.cells.iter().filter(|c| c.path.is_none());
    let sole_cell0 = match (simple.next(), simple.next()) {
        (Some(c), None) if c.column == 0 => Some(c),
        _ => None,
    };
    let plain_sole_cell =
        !has_complex && sole_cell0.is_some_and(|c| cell_flags(c, row_ts, &row.liveness) == 0);
    if sole_cell0.is_some() {
        flags |= ROW_SOLE_CELL0;
    }
    if plain_sole_cell {
        flags |= ROW_PLAIN_SOLE_CELL;
    }
    let ts_delta = row_ts.wrapping_sub(base.min_timestamp);
    let fixed_ts = flags & ROW_HAS_TS != 0
        && if steady_ts {
            fits_width(ts_delta, base.row_ts_bytes)
        } else {
            fixed_width_fits(ts_delta, base.row_ts_bytes)
        };
    if fixed_ts {
        flags |= ROW_FIXED_TS;
    }
    out.push(flags);
    if fixed_ts {
        out.extend_from_slice(&(ts_delta as u64).to_le_bytes()[..base.row_ts_bytes as usize]);
    } else if flags & ROW_HAS_TS != 0 {
        put_zigzag(out, ts_delta);
    }
    if flags & ROW_MARKER_EXPIRING != 0 {
        put_varint(
            out,
            row.liveness.ttl_seconds.wrapping_sub(base.min_ttl) as u64,
        );
        put_zigzag(out, ldt_delta(row.liveness.local_expiry_seconds, base));
    }
    if flags & ROW_DELETION != 0 {
        put_zigzag(
            out,
            row.deletion
                .marked_for_delete_at_micros
                .wrapping_sub(base.min_timestamp),
        );
        put_zigzag(out, ldt_delta(row.deletion.local_deletion_seconds, base));
    }
    // Presence bitmap over simple columns.
    let max_simple = row
        .cells
        .iter()
        .filter(|c| c.path.is_none())
        .map(|c| c.column)
        .max();
    match max_simple {
        _ if sole_cell0.is_some() => {}
        None => put_varint(out, 0),
        Some(maxc) => {
            let nbytes = (maxc as usize) / 8 + 1;
            put_varint(out, nbytes as u64);
            let start = out.len();
            out.resize(start + nbytes, 0);
            for c in row.cells.iter().filter(|c| c.path.is_none()) {
                out[start + (c.column as usize) / 8] |= 1 << (c.column % 8);
            }
        }
    }
    for c in row.cells.iter().filter(|c| c.path.is_none()) {
        if plain_sole_cell {
            match splices.as_deref_mut() {
                Some(s) if c.value.len() >= SPLICE_MIN_BYTES => s.push((out.len(), &c.value)),
                _ => out.extend_from_slice(&c.value),
            }
            continue;
        }
        let f = cell_flags(c, row_ts, &row.liveness);
        out.push(f);
        encode_cell_after_flags(c, f, row_ts, base, out, splices.as_deref_mut());
    }
    if has_complex {
        let complex: Vec<&Cell> = row.cells.iter().filter(|c| c.path.is_some()).collect();
        put_varint(out, complex.len() as u64);
        for c in complex {
            put_varint(out, c.column as u64);
            put_bytes(out, c.path.as_deref().unwrap_or(&[]));
            let f = cell_flags(c, row_ts, &row.liveness);
            out.push(f);
            encode_cell_after_flags(c, f, row_ts, base, out, splices.as_deref_mut());
        }
    }
}

/// Whether `delta` (a row timestamp less the base's minimum) is written in
/// `width` fixed bytes: it fits, and they are fewer than its varint's.
#[inline]
fn fixed_width_fits(delta: i64, width: u8) -> bool {
    fits_width(delta, width) && usize::from(width) < varint_len(zigzag(delta))
}

/// Whether `width` fixed bytes hold `delta` at all.
fn fits_width(delta: i64, width: u8) -> bool {
    width != 0 && delta >= 0 && (width >= 8 || (delta as u64) >> (8 * u32::from(width)) == 0)
}

/// The head of a row body re-encoded for another row-timestamp width: for a
/// `body` encoded against `from`, writes into `head` the flags byte and row
/// timestamp that [`encode_row`] writes against `to` (whose timestamp,
/// deletion and TTL minimums must be `from`'s) and returns `(head length,
/// bytes of body they replace)`; the body's rest follows unchanged. `None`
/// when the body's own bytes are already those (no row timestamp, the same
/// form), or when they do not parse: those are copied as they are and found by
/// whoever decodes them.
///
/// Lets a flush copy the memtable's rows (a fixed width for the memtable's
/// life, [`encode_row_spliced_steady`]) into an sstable whose width fits the
/// span it holds: a random write order spends a 4-byte varint where 3 fixed
/// bytes hold 16 s (BENCHMARKS.md, "Flushed rows with a fixed-width
/// timestamp").
pub fn row_head_for_width(
    body: &[u8],
    from: &EncodingBase,
    to: &EncodingBase,
    head: &mut [u8; 11],
) -> Option<(usize, usize)> {
    let (&flags, _) = body.split_first()?;
    if flags & ROW_HAS_TS == 0 {
        return None;
    }
    let mut r = Reader::new(&body[1..]);
    let ts = read_row_ts(&mut r, flags, from).ok()?;
    let delta = ts.wrapping_sub(to.min_timestamp);
    let mut out = [0u8; 11];
    let len = if fixed_width_fits(delta, to.row_ts_bytes) {
        let width = usize::from(to.row_ts_bytes);
        out[0] = flags | ROW_FIXED_TS;
        out[1..1 + width].copy_from_slice(&(delta as u64).to_le_bytes()[..width]);
        1 + width
    } else {
        // On the stack: this runs for every row a flush copies.
        out[0] = flags & !ROW_FIXED_TS;
        let mut z = zigzag(delta);
        let mut n = 1;
        while z >= 0x80 {
            out[n] = z as u8 | 0x80;
            z >>= 7;
            n += 1;
        }
        out[n] = z as u8;
        n + 1
    };
    let replaced = 1 + r.position();
    if out[..len] == body[..replaced] {
        return None;
    }
    head.copy_from_slice(&out);
    Some((len, replaced))
}

/// A cell's flags byte (module docs).
fn cell_flags(c: &Cell, row_ts: i64, marker: &LivenessInfo) -> u8 {
    let mut f = 0u8;
    match c.kind {
        CellKind::Tombstone => f |= CELL_TOMBSTONE,
        CellKind::Expiring => {
            f |= CELL_EXPIRING;
            if !(marker.is_expiring()
                && marker.ttl_seconds == c.ttl_seconds
                && marker.local_expiry_seconds == c.local_deletion_seconds)
            {
                f |= CELL_OWN_TTL;
            }
        }
        CellKind::Live => {}
        CellKind::Counter => f |= CELL_COUNTER,
    }
    if c.timestamp_micros != row_ts {
        f |= CELL_OWN_TS;
    }
    if c.kind != CellKind::Tombstone && c.value.is_empty() {
        f |= CELL_EMPTY;
    }
    f
}

/// A cell after its flags byte `f` ([`cell_flags`]), which the caller wrote.
fn encode_cell_after_flags<'a>(
    c: &'a Cell,
    f: u8,
    row_ts: i64,
    base: &EncodingBase,
    out: &mut Vec<u8>,
    splices: Option<&mut Splices<'a>>,
) {
    if f & CELL_OWN_TS != 0 {
        put_zigzag(out, c.timestamp_micros.wrapping_sub(row_ts));
    }
    if f & CELL_EXPIRING != 0 && f & CELL_OWN_TTL != 0 {
        put_varint(out, c.ttl_seconds.wrapping_sub(base.min_ttl) as u64);
        put_zigzag(out, ldt_delta(c.local_deletion_seconds, base));
    }
    if f & CELL_TOMBSTONE != 0 {
        put_zigzag(out, ldt_delta(c.local_deletion_seconds, base));
    }
    if f & (CELL_TOMBSTONE | CELL_EMPTY) == 0 {
        match splices {
            Some(s) if c.value.len() >= SPLICE_MIN_BYTES => {
                put_varint(out, c.value.len() as u64);
                s.push((out.len(), &c.value));
            }
            _ => put_bytes(out, &c.value),
        }
    }
}

/// One cell of an encoded row as [`visit_row`] sees it: every field resolved
/// against the row and the base, the value and path borrowed from the input.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellView<'a> {
    pub column: ColumnId,
    pub path: Option<&'a [u8]>,
    pub timestamp_micros: i64,
    pub kind: CellKind,
    pub ttl_seconds: u32,
    pub local_deletion_seconds: i64,
    pub value: &'a [u8],
}

/// What [`visit_row`] hands over while it parses a row body: the row's marker
/// and deletion once, then each cell in encoded order (simple cells by column,
/// then complex cells as written).
pub trait RowVisitor<'a> {
    /// Called once, before any cell; `cells` is the number of simple cells.
    fn row(&mut self, liveness: &LivenessInfo, deletion: &DeletionTime, cells: usize);
    fn cell(&mut self, cell: CellView<'a>);
    /// Checked before each cell: `false` ends the walk there, successfully
    /// (a visitor that has its answer need not parse the rest).
    fn wants_more(&self) -> bool {
        true
    }
}

/// Parses a row body written by [`encode_row`] without building it: the one
/// parser behind [`decode_row`] and the flush's statistics over rows it copies
/// as they are (issue 15), so both read the format the same way.
pub fn visit_row<'a, V: RowVisitor<'a>>(
    r: &mut Reader<'a>,
    base: &EncodingBase,
    visitor: &mut V,
) -> DecodeResult<()> {
    let flags = r.u8()?;
    let row_ts = read_row_ts(r, flags, base)?;
    let mut liveness = LivenessInfo::EMPTY;
    if flags & ROW_MARKER != 0 {
        liveness = LivenessInfo::new(row_ts);
        if flags & ROW_MARKER_EXPIRING != 0 {
            liveness.ttl_seconds = (r.varint()? as u32).wrapping_add(base.min_ttl);
            liveness.local_expiry_seconds = ldt_from(r.zigzag()?, base);
        }
    } else if flags & ROW_MARKER_EXPIRING != 0 {
        return Err(DecodeError("expiring marker flag without marker"));
    }
    let mut deletion = DeletionTime::LIVE;
    if flags & ROW_DELETION != 0 {
        deletion.marked_for_delete_at_micros = r.zigzag()?.wrapping_add(base.min_timestamp);
        deletion.local_deletion_seconds = ldt_from(r.zigzag()?, base);
    }
    let bitmap = if flags & ROW_SOLE_CELL0 != 0 {
        SOLE_CELL0_BITMAP
    } else {
        let nbytes = r.varint_usize()?;
        r.take(nbytes)?
    };
    let ncells: usize = bitmap.iter().map(|b| b.count_ones() as usize).sum();
    visitor.row(&liveness, &deletion, ncells);
    for (byte_i, &byte) in bitmap.iter().enumerate() {
        let mut bits = byte;
        while bits != 0 {
            let bit = bits.trailing_zeros();
            bits &= bits - 1;
            let column = (byte_i as u32) * 8 + bit;
            if !visitor.wants_more() {
                return Ok(());
            }
            if flags & ROW_PLAIN_SOLE_CELL != 0 {
                let value = r.take(r.remaining())?;
                visitor.cell(CellView {
                    column,
                    path: None,
                    timestamp_micros: plain_cell_timestamp(row_ts)?,
                    kind: CellKind::Live,
                    ttl_seconds: 0,
                    local_deletion_seconds: NO_DELETION_TIME,
                    value,
                });
                continue;
            }
            let f = r.u8()?;
            visitor.cell(read_cell(r, f, column, None, row_ts, &liveness, base)?);
        }
    }
    if flags & ROW_COMPLEX != 0 {
        let n = r.varint_usize()?;
        for _ in 0..n {
            let column =
                u32::try_from(r.varint()?).map_err(|_| DecodeError("column id too large"))?;
            let path = r.bytes()?;
            if !visitor.wants_more() {
                return Ok(());
            }
            let f = r.u8()?;
            visitor.cell(read_cell(
                r,
                f,
                column,
                Some(path),
                row_ts,
                &liveness,
                base,
            )?);
        }
    }
    Ok(())
}

/// Decodes a row body written by [`encode_row`]; `clustering` is attached as is.
pub fn decode_row(
    r: &mut Reader<'_>,
    clustering: Vec<u8>,
    base: &EncodingBase,
) -> DecodeResult<Row> {
    struct Build {
        row: Row,
        complex: bool,
    }
    impl<'a> RowVisitor<'a> for Build {
        fn row(&mut self, liveness: &LivenessInfo, deletion: &DeletionTime, cells: usize) {
            self.row.liveness = *liveness;
            self.row.deletion = *deletion;
            self.row.cells.reserve_exact(cells);
        }
        fn cell(&mut self, c: CellView<'a>) {
            self.complex |= c.path.is_some();
            self.row.cells.push(c.to_cell());
        }
    }
    let mut build = Build {
        row: Row::new(clustering),
        complex: false,
    };
    visit_row(r, base, &mut build)?;
    if build.complex {
        build.row.cells.sort_by(|a, b| a.cmp_position(b));
    }
    Ok(build.row)
}

/// A row body parsed into views and cut to what a read returns under
/// `covering` (the partition's deletion over this row) at `now_seconds`, as
/// [`Row::into_live_view`] cuts a built row: the marker if it is live and not
/// shadowed, and the live cells no deletion shadows, in `(column, path)`
/// order, pushed onto `cells` (cleared first). `None` when nothing is left.
/// A scan hands rows on this way without building them (issue 15).
pub fn live_row_view<'a>(
    body: &'a [u8],
    base: &EncodingBase,
    covering: DeletionTime,
    now_seconds: i64,
    cells: &mut smallvec::SmallVec<[CellView<'a>; 4]>,
) -> DecodeResult<Option<LivenessInfo>> {
    struct Collect<'c, 'a> {
        liveness: LivenessInfo,
        deletion: DeletionTime,
        cells: &'c mut smallvec::SmallVec<[CellView<'a>; 4]>,
        complex: bool,
    }
    impl<'a> RowVisitor<'a> for Collect<'_, 'a> {
        fn row(&mut self, liveness: &LivenessInfo, deletion: &DeletionTime, _cells: usize) {
            self.liveness = *liveness;
            self.deletion = *deletion;
        }
        fn cell(&mut self, c: CellView<'a>) {
            self.complex |= c.path.is_some();
            self.cells.push(c);
        }
    }
    cells.clear();
    let mut collect = Collect {
        liveness: LivenessInfo::EMPTY,
        deletion: DeletionTime::LIVE,
        cells,
        complex: false,
    };
    let mut r = Reader::new(body);
    visit_row(&mut r, base, &mut collect)?;
    if !r.is_empty() {
        return Err(DecodeError("row body longer than its row"));
    }
    let deletion = covering.max(collect.deletion);
    let liveness = collect.liveness.live_under(deletion, now_seconds);
    if collect.complex {
        cells.sort_by(|a, b| a.column.cmp(&b.column).then_with(|| a.path.cmp(&b.path)));
    }
    let mut complex = crate::data::ComplexDeletions::default();
    cells.retain(|c| {
        !complex.shadows(c.column, c.path, c.kind, c.timestamp_micros)
            && c.kind.is_live(c.local_deletion_seconds, now_seconds)
            && !deletion.deletes(c.timestamp_micros)
    });
    if liveness.is_empty() && cells.is_empty() {
        return Ok(None);
    }
    Ok(Some(liveness))
}

impl<'a> CellView<'a> {
    /// A built cell seen as a view.
    pub fn of(c: &'a Cell) -> CellView<'a> {
        CellView {
            column: c.column,
            path: c.path.as_deref(),
            timestamp_micros: c.timestamp_micros,
            kind: c.kind,
            ttl_seconds: c.ttl_seconds,
            local_deletion_seconds: c.local_deletion_seconds,
            value: &c.value,
        }
    }

    /// The cell built from this view (its value and path copied).
    pub fn to_cell(&self) -> Cell {
        Cell {
            column: self.column,
            path: self.path.map(|p| p.to_vec().into_boxed_slice()),
            timestamp_micros: self.timestamp_micros,
            kind: self.kind,
            ttl_seconds: self.ttl_seconds,
            local_deletion_seconds: self.local_deletion_seconds,
            value: self.value.to_vec(),
        }
    }
}

/// Checks a row's flags byte and reads its timestamp (the base's minimum if
/// it has none): the start of [`visit_row`] and [`locate_cell`] alike.
fn read_row_ts<S: ByteSource>(
    src: &mut S,
    flags: u8,
    base: &EncodingBase,
) -> std::result::Result<i64, S::Error> {
    if flags & ROW_PLAIN_SOLE_CELL != 0 && (flags & ROW_SOLE_CELL0 == 0 || flags & ROW_COMPLEX != 0)
    {
        return Err(DecodeError("plain sole cell flag without a sole cell").into());
    }
    if flags & ROW_HAS_TS == 0 {
        if flags & ROW_FIXED_TS != 0 {
            return Err(DecodeError("fixed-width timestamp flag without a timestamp").into());
        }
        return Ok(base.min_timestamp);
    }
    if flags & ROW_FIXED_TS == 0 {
        return Ok(src.zigzag()?.wrapping_add(base.min_timestamp));
    }
    if base.row_ts_bytes == 0 || base.row_ts_bytes > 8 {
        return Err(DecodeError("fixed-width timestamp without a width in the base").into());
    }
    let mut delta = 0u64;
    for i in 0..u32::from(base.row_ts_bytes) {
        delta |= u64::from(src.u8()?) << (8 * i);
    }
    Ok((delta as i64).wrapping_add(base.min_timestamp))
}

/// The timestamp of a plain sole cell (the row's), checked as a cell's.
fn plain_cell_timestamp(row_ts: i64) -> DecodeResult<i64> {
    if row_ts == NO_TIMESTAMP {
        return Err(DecodeError("cell without timestamp"));
    }
    Ok(row_ts)
}

/// A cell after its flags byte `f`, which the caller read.
fn read_cell<'a>(
    r: &mut Reader<'a>,
    f: u8,
    column: u32,
    path: Option<&'a [u8]>,
    row_ts: i64,
    marker: &LivenessInfo,
    base: &EncodingBase,
) -> DecodeResult<CellView<'a>> {
    let timestamp_micros = if f & CELL_OWN_TS != 0 {
        r.zigzag()?.wrapping_add(row_ts)
    } else {
        row_ts
    };
    if timestamp_micros == NO_TIMESTAMP {
        return Err(DecodeError("cell without timestamp"));
    }
    let (kind, ttl_seconds, local_deletion_seconds) = if f & CELL_COUNTER != 0 {
        if f & (CELL_TOMBSTONE | CELL_EXPIRING) != 0 {
            return Err(DecodeError("counter cell with a deletion or a TTL"));
        }
        (CellKind::Counter, 0, NO_DELETION_TIME)
    } else if f & CELL_TOMBSTONE != 0 {
        if f & CELL_EXPIRING != 0 {
            return Err(DecodeError("cell both tombstone and expiring"));
        }
        (CellKind::Tombstone, 0, ldt_from(r.zigzag()?, base))
    } else if f & CELL_EXPIRING != 0 {
        if f & CELL_OWN_TTL != 0 {
            let ttl = (r.varint()? as u32).wrapping_add(base.min_ttl);
            (CellKind::Expiring, ttl, ldt_from(r.zigzag()?, base))
        } else {
            if !marker.is_expiring() {
                return Err(DecodeError("cell uses the row TTL but the row has none"));
            }
            (
                CellKind::Expiring,
                marker.ttl_seconds,
                marker.local_expiry_seconds,
            )
        }
    } else {
        (CellKind::Live, 0, NO_DELETION_TIME)
    };
    let value = if f & (CELL_TOMBSTONE | CELL_EMPTY) == 0 {
        r.bytes()?
    } else {
        &[]
    };
    Ok(CellView {
        column,
        path,
        timestamp_micros,
        kind,
        ttl_seconds,
        local_deletion_seconds,
        value,
    })
}

/// A forward-only source of encoded bytes that can skip without reading: a
/// slice ([`Reader`]), or an sstable's data stream, where skipping a 64 MiB
/// value costs no I/O. Lets [`locate_cell`] find a cell's value without
/// touching it.
pub trait ByteSource {
    type Error: From<DecodeError>;
    fn u8(&mut self) -> std::result::Result<u8, Self::Error>;
    fn skip(&mut self, n: u64) -> std::result::Result<(), Self::Error>;
    /// Bytes consumed so far (skipped ones included).
    fn position(&self) -> u64;
    /// Bytes left before the end of what the source was given (a row body's
    /// end, for a plain sole cell's value).
    fn remaining(&self) -> u64;

    fn varint(&mut self) -> std::result::Result<u64, Self::Error> {
        let mut v: u64 = 0;
        let mut shift = 0u32;
        loop {
            let b = self.u8()?;
            if shift == 63 && b > 1 {
                return Err(DecodeError("varint overflows 64 bits").into());
            }
            v |= ((b & 0x7f) as u64) << shift;
            if b & 0x80 == 0 {
                return Ok(v);
            }
            shift += 7;
            if shift > 63 {
                return Err(DecodeError("varint too long").into());
            }
        }
    }

    fn zigzag(&mut self) -> std::result::Result<i64, Self::Error> {
        Ok(unzigzag(self.varint()?))
    }

    /// `n` bytes into a new vector: only for short fields (clusterings,
    /// bitmaps), never values.
    fn take_vec(&mut self, n: u64) -> std::result::Result<Vec<u8>, Self::Error> {
        if n > MAX_SMALL_FIELD_BYTES {
            return Err(DecodeError("field longer than any key or bitmap").into());
        }
        (0..n).map(|_| self.u8()).collect()
    }
}

/// Clusterings are at most 64 KiB (CQL keys); a presence bitmap of 2^32
/// columns would be 512 MiB, but no schema has more than a few thousand.
const MAX_SMALL_FIELD_BYTES: u64 = 1 << 20;

impl ByteSource for Reader<'_> {
    type Error = DecodeError;
    fn u8(&mut self) -> DecodeResult<u8> {
        Reader::u8(self)
    }
    fn skip(&mut self, n: u64) -> DecodeResult<()> {
        let n = usize::try_from(n).map_err(|_| DecodeError("skip past the end"))?;
        self.take(n).map(|_| ())
    }
    fn position(&self) -> u64 {
        Reader::position(self) as u64
    }
    fn remaining(&self) -> u64 {
        Reader::remaining(self) as u64
    }
}

/// A simple cell found by [`locate_cell`], with where its value is instead of
/// the value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CellLocation {
    pub timestamp_micros: i64,
    pub kind: CellKind,
    pub ttl_seconds: u32,
    pub local_deletion_seconds: i64,
    /// [`ByteSource::position`] of the value's first byte (meaningless when
    /// `value_len` is 0).
    pub value_at: u64,
    pub value_len: u64,
}

impl CellLocation {
    /// The cell without its value, for reconciliation by timestamp and kind.
    pub fn to_cell(&self, column: ColumnId) -> Cell {
        Cell {
            column,
            path: None,
            timestamp_micros: self.timestamp_micros,
            kind: self.kind,
            ttl_seconds: self.ttl_seconds,
            local_deletion_seconds: self.local_deletion_seconds,
            value: Vec::new(),
        }
    }
}

/// Walks a row body written by [`encode_row`] up to simple column `column`,
/// skipping every other value unread, and returns the row's deletion and the
/// cell's location (`None` if the row has no cell of that column). Leaves the
/// source just after the cell's value length, so the value is neither read nor
/// skipped. Mirrors [`visit_row`]/`read_cell` field for field: a change to
/// the row codec changes both (the round-trip test below checks them against
/// each other).
pub fn locate_cell<S: ByteSource>(
    src: &mut S,
    base: &EncodingBase,
    column: ColumnId,
) -> std::result::Result<(DeletionTime, Option<CellLocation>), S::Error> {
    let flags = src.u8()?;
    let row_ts = read_row_ts(src, flags, base)?;
    let mut marker = LivenessInfo::EMPTY;
    if flags & ROW_MARKER != 0 {
        marker = LivenessInfo::new(row_ts);
        if flags & ROW_MARKER_EXPIRING != 0 {
            marker.ttl_seconds = (src.varint()? as u32).wrapping_add(base.min_ttl);
            marker.local_expiry_seconds = ldt_from(src.zigzag()?, base);
        }
    } else if flags & ROW_MARKER_EXPIRING != 0 {
        return Err(DecodeError("expiring marker flag without marker").into());
    }
    let mut deletion = DeletionTime::LIVE;
    if flags & ROW_DELETION != 0 {
        deletion.marked_for_delete_at_micros = src.zigzag()?.wrapping_add(base.min_timestamp);
        deletion.local_deletion_seconds = ldt_from(src.zigzag()?, base);
    }
    let read_bitmap;
    let bitmap = if flags & ROW_SOLE_CELL0 != 0 {
        SOLE_CELL0_BITMAP
    } else {
        let nbytes = src.varint()?;
        read_bitmap = src.take_vec(nbytes)?;
        &read_bitmap[..]
    };
    let wanted = (column as usize) / 8;
    if bitmap
        .get(wanted)
        .is_none_or(|b| b & (1 << (column % 8)) == 0)
    {
        return Ok((deletion, None));
    }
    for (byte_i, &byte) in bitmap.iter().enumerate() {
        let mut bits = byte;
        while bits != 0 {
            let bit = bits.trailing_zeros();
            bits &= bits - 1;
            let c = (byte_i as u32) * 8 + bit;
            if flags & ROW_PLAIN_SOLE_CELL != 0 {
                // The sole cell, column 0 (the bitmap test above passed).
                return Ok((
                    deletion,
                    Some(CellLocation {
                        timestamp_micros: plain_cell_timestamp(row_ts)?,
                        kind: CellKind::Live,
                        ttl_seconds: 0,
                        local_deletion_seconds: NO_DELETION_TIME,
                        value_at: src.position(),
                        value_len: src.remaining(),
                    }),
                ));
            }
            let f = src.u8()?;
            let ts = if f & CELL_OWN_TS != 0 {
                src.zigzag()?.wrapping_add(row_ts)
            } else {
                row_ts
            };
            if ts == NO_TIMESTAMP {
                return Err(DecodeError("cell without timestamp").into());
            }
            let (kind, ttl, ldt) = if f & CELL_COUNTER != 0 {
                if f & (CELL_TOMBSTONE | CELL_EXPIRING) != 0 {
                    return Err(DecodeError("counter cell with a deletion or a TTL").into());
                }
                (CellKind::Counter, 0, NO_DELETION_TIME)
            } else if f & CELL_TOMBSTONE != 0 {
                if f & CELL_EXPIRING != 0 {
                    return Err(DecodeError("cell both tombstone and expiring").into());
                }
                (CellKind::Tombstone, 0, ldt_from(src.zigzag()?, base))
            } else if f & CELL_EXPIRING != 0 {
                if f & CELL_OWN_TTL != 0 {
                    let ttl = (src.varint()? as u32).wrapping_add(base.min_ttl);
                    (CellKind::Expiring, ttl, ldt_from(src.zigzag()?, base))
                } else {
                    if !marker.is_expiring() {
                        return Err(
                            DecodeError("cell uses the row TTL but the row has none").into()
                        );
                    }
                    (
                        CellKind::Expiring,
                        marker.ttl_seconds,
                        marker.local_expiry_seconds,
                    )
                }
            } else {
                (CellKind::Live, 0, NO_DELETION_TIME)
            };
            let value_len = if f & (CELL_TOMBSTONE | CELL_EMPTY) == 0 {
                src.varint()?
            } else {
                0
            };
            if c == column {
                return Ok((
                    deletion,
                    Some(CellLocation {
                        timestamp_micros: ts,
                        kind,
                        ttl_seconds: ttl,
                        local_deletion_seconds: ldt,
                        value_at: src.position(),
                        value_len,
                    }),
                ));
            }
            src.skip(value_len)?;
        }
    }
    // The bitmap said the column is present.
    Err(DecodeError("cell missing from its row").into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn locate_cell_agrees_with_decode_row() {
        let base = EncodingBase::around(1_000_000_000);
        let mut row = Row::new(b"ck".to_vec());
        row.liveness = LivenessInfo::expiring(1_000_000_500, 60, 1000);
        row.deletion = DeletionTime::new(999_000_000, 900);
        row.add_cell(Cell::live(0, 1_000_000_500, vec![1; 300]));
        row.add_cell(Cell::tombstone(3, 1_000_000_400, 990));
        row.add_cell(Cell::expiring(9, 1_000_000_600, 30, 995, vec![7; 70_000]));
        row.add_cell(Cell::live(12, 1_000_000_500, Vec::new()));
        let mut out = Vec::new();
        encode_row(&row, &base, &mut out);
        let decoded = decode_row(&mut Reader::new(&out), b"ck".to_vec(), &base).unwrap();
        for col in 0..14u32 {
            let mut r = Reader::new(&out);
            let (del, loc) = locate_cell(&mut r, &base, col).unwrap();
            assert_eq!(del, decoded.deletion);
            let want = decoded.cells.iter().find(|c| c.column == col);
            match (loc, want) {
                (None, None) => {}
                (Some(l), Some(c)) => {
                    let mut meta = c.clone();
                    meta.value = Vec::new();
                    assert_eq!(l.to_cell(col), meta, "column {col}");
                    let at = l.value_at as usize;
                    assert_eq!(&out[at..at + l.value_len as usize], &c.value[..]);
                }
                other => panic!("column {col}: {other:?}"),
            }
        }
    }

    #[test]
    fn varint_round_trip_and_bounds() {
        for v in [0u64, 1, 127, 128, 300, u32::MAX as u64, u64::MAX] {
            let mut b = Vec::new();
            put_varint(&mut b, v);
            assert_eq!(b.len(), varint_len(v));
            assert_eq!(Reader::new(&b).varint().unwrap(), v);
        }
        for v in [0i64, -1, 1, i64::MIN, i64::MAX] {
            assert_eq!(unzigzag(zigzag(v)), v);
        }
        assert!(
            Reader::new(&[0x80, 0x80]).varint().is_err(),
            "truncated varint"
        );
        assert!(
            Reader::new(&[0xff; 11]).varint().is_err(),
            "overlong varint"
        );
        assert!(Reader::new(&[5, 1, 2]).bytes().is_err(), "length past end");
    }

    #[test]
    fn typical_insert_row_is_compact() {
        // cassandra-stress default shape: 5 columns of 34 bytes, one INSERT.
        let ts = 1_700_000_000_000_000;
        let mut row = Row::new(Vec::new());
        row.liveness = LivenessInfo::new(ts);
        for c in 0..5 {
            row.add_cell(Cell::live(c, ts, vec![7u8; 34]));
        }
        let base = EncodingBase::around(ts - 1_000_000);
        let mut out = Vec::new();
        encode_row(&row, &base, &mut out);
        // flags + ts delta (4) + bitmap (2) + 5 * (cflags + len) = 17 bytes of overhead.
        assert!(
            out.len() - 5 * 34 <= 18,
            "overhead {} bytes",
            out.len() - 170
        );
        let back = decode_row(&mut Reader::new(&out), Vec::new(), &base).unwrap();
        assert_eq!(back, row);
    }

    #[test]
    fn a_key_value_row_leaves_its_bitmap_out() {
        // One regular column, column 0: flags, timestamp delta and value; no
        // bitmap length or bitmap, and for a plain live cell at the row's
        // timestamp no cell flags or value length (the value ends the body).
        let ts = 1_700_000_000_000_000;
        let base = EncodingBase::around(ts - 1_000_000);
        let mut row = Row::new(Vec::new());
        row.liveness = LivenessInfo::new(ts);
        row.add_cell(Cell::live(0, ts, vec![7u8; 100]));
        let mut out = Vec::new();
        encode_row(&row, &base, &mut out);
        let ts_delta = varint_len(zigzag(ts - base.min_timestamp));
        assert_eq!(out.len(), 1 + ts_delta + 100);
        assert_eq!(out[0] & ROW_SOLE_CELL0, ROW_SOLE_CELL0);
        assert_eq!(out[0] & ROW_PLAIN_SOLE_CELL, ROW_PLAIN_SOLE_CELL);
        // A sole cell that is not plain (its own timestamp, a TTL, a
        // tombstone, an empty value) keeps its flags byte.
        for cell in [
            Cell::live(0, ts + 1, vec![7u8; 100]),
            Cell::expiring(0, ts, 60, 100, vec![7u8; 100]),
            Cell::tombstone(0, ts, 100),
            Cell::live(0, ts, Vec::new()),
        ] {
            let mut other = Row::new(Vec::new());
            other.liveness = LivenessInfo::new(ts);
            other.add_cell(cell.clone());
            let mut bytes = Vec::new();
            encode_row(&other, &base, &mut bytes);
            assert_eq!(bytes[0] & ROW_PLAIN_SOLE_CELL, 0, "{cell:?}");
            assert_eq!(
                decode_row(&mut Reader::new(&bytes), Vec::new(), &base).unwrap(),
                other
            );
        }
        assert_eq!(
            decode_row(&mut Reader::new(&out), Vec::new(), &base).unwrap(),
            row
        );
        let (_, loc) = locate_cell(&mut Reader::new(&out), &base, 0).unwrap();
        assert_eq!(
            loc.map(|l| (l.value_at, l.value_len)),
            Some(((1 + ts_delta) as u64, 100))
        );
        let (_, loc) = locate_cell(&mut Reader::new(&out), &base, 1).unwrap();
        assert!(loc.is_none());
        // Column 1 alone, or columns 0 and 1, keep their bitmap.
        for cols in [&[1u32][..], &[0, 1]] {
            let mut other = Row::new(Vec::new());
            for &c in cols {
                other.add_cell(Cell::live(c, ts, vec![7u8; 10]));
            }
            out.clear();
            encode_row(&other, &base, &mut out);
            assert_eq!(out[0] & ROW_SOLE_CELL0, 0, "{cols:?}");
            assert_eq!(
                decode_row(&mut Reader::new(&out), Vec::new(), &base).unwrap(),
                other
            );
        }
    }

    #[test]
    fn row_flags_that_contradict_the_row_are_corruption() {
        let base = EncodingBase::around(1_000_000_000);
        let bad_row = |cells: &[u32], bit: u8| {
            let mut row = Row::new(Vec::new());
            for &c in cells {
                row.add_cell(Cell::live(c, 1_000_000_000, vec![1, 2]));
            }
            let mut out = Vec::new();
            encode_row(&row, &base, &mut out);
            out[0] |= bit;
            out
        };
        // The plain-sole-cell flag on a row with a bitmap, and the
        // fixed-width timestamp flag where the base has no width.
        for (bad, why) in [
            (
                bad_row(&[1], ROW_PLAIN_SOLE_CELL),
                "plain sole cell flag without a sole cell",
            ),
            (
                bad_row(&[0], ROW_FIXED_TS),
                "fixed-width timestamp without a width in the base",
            ),
        ] {
            assert_eq!(
                decode_row(&mut Reader::new(&bad), Vec::new(), &base),
                Err(DecodeError(why))
            );
            assert!(locate_cell(&mut Reader::new(&bad), &base, 0).is_err());
        }
        // A fixed-width timestamp on a row without one.
        let mut bad = Vec::new();
        encode_row(&Row::new(Vec::new()), &base, &mut bad);
        bad[0] |= ROW_FIXED_TS;
        let wide = EncodingBase {
            row_ts_bytes: 3,
            ..base
        };
        assert_eq!(
            decode_row(&mut Reader::new(&bad), Vec::new(), &wide),
            Err(DecodeError(
                "fixed-width timestamp flag without a timestamp"
            ))
        );
    }

    #[test]
    fn row_timestamps_take_the_fixed_width_when_it_is_shorter() {
        let min = 1_700_000_000_000_000i64;
        // An 8-second span: 23 bits, 3 bytes fixed against a 4-byte varint.
        let base = EncodingBase::around(min).with_row_ts_span_to(min + 8_000_000);
        assert_eq!(base.row_ts_bytes, 3);
        assert_eq!(
            EncodingBase::around(min)
                .with_row_ts_span_to(min)
                .row_ts_bytes,
            1
        );
        assert_eq!(
            EncodingBase::around(min)
                .with_row_ts_span_to(min - 1)
                .row_ts_bytes,
            0
        );
        assert_eq!(
            EncodingBase::ZERO
                .with_row_ts_span_to(i64::MAX)
                .row_ts_bytes,
            0
        );
        let row_at = |ts: i64| {
            let mut row = Row::new(Vec::new());
            row.liveness = LivenessInfo::new(ts);
            row.add_cell(Cell::live(0, ts, vec![7u8; 10]));
            row
        };
        for (ts, fixed) in [
            (min + 7_999_999, true),
            // Varints no longer than the width stay varints.
            (min + 1_000, false),
            (min + (1 << 20) - 1, false),
            // Outside the span (before the minimum, beyond the width): varint.
            (min - 5, false),
            (min + (1 << 24), false),
        ] {
            let row = row_at(ts);
            let mut out = Vec::new();
            encode_row(&row, &base, &mut out);
            assert_eq!(out[0] & ROW_FIXED_TS != 0, fixed, "{}", ts - min);
            if fixed {
                assert_eq!(out.len(), 1 + 3 + 10);
            }
            assert_eq!(
                decode_row(&mut Reader::new(&out), Vec::new(), &base).unwrap(),
                row
            );
            let (_, loc) = locate_cell(&mut Reader::new(&out), &base, 0).unwrap();
            assert_eq!(loc.map(|l| l.timestamp_micros), Some(ts));
        }
    }

    fn arb_cell() -> impl Strategy<Value = Cell> {
        (
            0u32..20,
            proptest::option::of(proptest::collection::vec(any::<u8>(), 0..4)),
            prop_oneof![Just(1_000i64), -5i64..5_000, Just(i64::MAX - 1)],
            0u8..4,
            1u32..100_000,
            -10i64..1_000_000,
            proptest::collection::vec(any::<u8>(), 0..40),
        )
            .prop_map(|(column, path, ts, kind, ttl, ldt, value)| {
                let path = path.map(|p| p.into_boxed_slice());
                match kind {
                    3 => Cell::counter(
                        column,
                        ts,
                        crate::counter::pending([value.first().copied().unwrap_or(0); 16], ldt),
                    ),
                    0 => Cell {
                        path,
                        ..Cell::live(column, ts, value)
                    },
                    1 => Cell {
                        path,
                        ..Cell::expiring(column, ts, ttl, ldt, value)
                    },
                    _ => Cell {
                        path,
                        ..Cell::tombstone(column, ts, ldt)
                    },
                }
            })
    }

    fn arb_row() -> impl Strategy<Value = Row> {
        (
            prop_oneof![
                proptest::collection::vec(arb_cell(), 0..12),
                // A key-value row: one cell of column 0 (its bitmap left out
                // when the cell is simple).
                arb_cell().prop_map(|c| vec![Cell { column: 0, ..c }]),
            ],
            prop_oneof![Just(None), (0i64..5000).prop_map(Some)],
            prop_oneof![Just(0u32), 1u32..1000],
            prop_oneof![Just(None), (0i64..5000, 0i64..1_000_000).prop_map(Some)],
        )
            .prop_map(|(cells, marker, ttl, del)| {
                let mut row = Row::new(b"ck".to_vec());
                for c in cells {
                    row.add_cell(c);
                }
                if let Some(ts) = marker {
                    row.liveness = if ttl > 0 {
                        LivenessInfo::expiring(ts, ttl, 500)
                    } else {
                        LivenessInfo::new(ts)
                    };
                }
                if let Some((ts, ldt)) = del {
                    row.deletion = DeletionTime::new(ts, ldt);
                }
                row
            })
    }

    proptest! {
        #[test]
        fn row_round_trip(row in arb_row(), base_ts in -1000i64..1000, base_ldt in -100i64..100, base_ttl in 0u32..5, row_ts_bytes in 0u8..9) {
            let base = EncodingBase { min_timestamp: base_ts, min_local_deletion: base_ldt, min_ttl: base_ttl, row_ts_bytes };
            let mut out = Vec::new();
            encode_row(&row, &base, &mut out);
            let mut r = Reader::new(&out);
            let back = decode_row(&mut r, row.clustering.clone(), &base).unwrap();
            prop_assert!(r.is_empty());
            // The second parser reads every simple cell's fields alike.
            for c in back.cells.iter().filter(|c| c.path.is_none()) {
                let (del, loc) = locate_cell(&mut Reader::new(&out), &base, c.column).unwrap();
                prop_assert_eq!(del, back.deletion);
                let mut meta = c.clone();
                meta.value = Vec::new();
                prop_assert_eq!(loc.map(|l| l.to_cell(c.column)), Some(meta));
            }
            prop_assert_eq!(back, row);
        }

        /// A copied row given another width's timestamp is byte for byte
        /// the row `encode_row` writes under that width, whichever form
        /// (varint, canonical or steady fixed width) it was copied from.
        #[test]
        fn row_head_for_width_matches_the_encoder(row in arb_row(), base_ts in -1000i64..1000, from_width in 0u8..9, to_width in 0u8..9, steady: bool) {
            let from = EncodingBase { min_timestamp: base_ts, min_local_deletion: 0, min_ttl: 0, row_ts_bytes: from_width };
            let to = EncodingBase { row_ts_bytes: to_width, ..from };
            let (mut copied, mut direct) = (Vec::new(), Vec::new());
            if steady {
                encode_row_spliced_steady(&row, &from, &mut copied, &mut Vec::new());
            } else {
                encode_row(&row, &from, &mut copied);
            }
            encode_row(&row, &to, &mut direct);
            let mut head = [0u8; 11];
            let rebuilt = match row_head_for_width(&copied, &from, &to, &mut head) {
                Some((len, replaced)) => [&head[..len], &copied[replaced..]].concat(),
                None => copied.clone(),
            };
            prop_assert_eq!(&rebuilt, &direct);
            // The steady form is what it says: the width whenever it holds.
            if steady && from_width > 0 && !row.cells.is_empty() {
                let decoded = decode_row(&mut Reader::new(&copied), row.clustering.clone(), &from).unwrap();
                prop_assert_eq!(decoded, row);
            }
        }

        /// The scan's fast path (a row handed on as views) keeps exactly
        /// what a built row keeps under the same deletion at the same time.
        #[test]
        fn live_row_view_keeps_what_into_live_view_keeps(
            row in arb_row(),
            covering in prop_oneof![Just(None), (0i64..5000, 0i64..1_000_000).prop_map(Some)],
            now in prop_oneof![Just(0i64), 0i64..1_000_000, Just(i64::MAX - 1)],
        ) {
            let base = EncodingBase::around(1_000);
            let covering = covering.map_or(DeletionTime::LIVE, |(ts, ldt)| DeletionTime::new(ts, ldt));
            let mut out = Vec::new();
            encode_row(&row, &base, &mut out);
            let mut cells = smallvec::SmallVec::new();
            let view = live_row_view(&out, &base, covering, now, &mut cells).unwrap();
            let got = view.map(|liveness| Row {
                clustering: row.clustering.clone(),
                liveness,
                deletion: DeletionTime::LIVE,
                cells: cells.iter().map(CellView::to_cell).collect(),
            });
            prop_assert_eq!(got, row.into_live_view(covering, now));
        }

        #[test]
        fn live_row_view_of_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut cells = smallvec::SmallVec::new();
            let _ = live_row_view(&bytes, &EncodingBase::ZERO, DeletionTime::LIVE, 0, &mut cells);
        }

        #[test]
        fn decoding_garbage_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_row(&mut Reader::new(&bytes), Vec::new(), &EncodingBase::ZERO);
        }

        /// Any bytes: no panic, and a head it gives says the timestamp the
        /// body said, under the other width.
        #[test]
        fn row_head_for_width_of_garbage_keeps_the_timestamp(
            bytes in proptest::collection::vec(any::<u8>(), 0..24),
            from_width in 0u8..9,
            to_width in 0u8..9,
        ) {
            let from = EncodingBase { min_timestamp: 77, min_local_deletion: 0, min_ttl: 0, row_ts_bytes: from_width };
            let to = EncodingBase { row_ts_bytes: to_width, ..from };
            let mut head = [0u8; 11];
            if let Some((len, replaced)) = row_head_for_width(&bytes, &from, &to, &mut head) {
                prop_assert!(len <= head.len() && replaced <= bytes.len());
                let was = read_row_ts(&mut Reader::new(&bytes[1..]), bytes[0], &from).unwrap();
                let mut r = Reader::new(&head[1..len]);
                prop_assert_eq!(read_row_ts(&mut r, head[0], &to).unwrap(), was);
                prop_assert!(r.is_empty());
                prop_assert_eq!(head[0] & !ROW_FIXED_TS, bytes[0] & !ROW_FIXED_TS);
            }
        }
    }
}
