//! Files as partitions of fixed-size blocks: seed 002's CFS data model, shared
//! by `strata stress --workload blob` and `strata bench blobstore`.
//!
//! Owns: the table shape, file names, the bytes and checksum of every block,
//! the mutations that write a block and delete a file, and the check of a file
//! read back. Pure functions over a `Table` the caller opened; any thread (each
//! call is independent; a file written by two threads at once is the caller's
//! mistake, not detected here).
//!
//! Table (`KS.TABLE` chosen by the caller, e.g. `cfs.blocks`):
//!
//! ```text
//! CREATE TABLE cfs.blocks (file text, block int, data blob, crc int,
//!                          PRIMARY KEY (file, block))
//! ```
//!
//! One partition per file, one clustering row per block, as CFS stores a file
//! (its `sblocks` column family: a row per block). A block is immutable once
//! written; a file is deleted whole with one partition tombstone, the only
//! modification HDFS semantics allow besides writing a new file. Blocks are
//! written one mutation each: a block is the unit a CFS client streams, and one
//! mutation per block keeps every mutation under the commit log's limit (half a
//! segment, 16 MiB by default) whatever the file size.
//!
//! Invariants:
//! 1. Block `b` of file `f` holds `values::value_bytes(seed, f, b, 0, len)`:
//!    the reader recomputes what the writer wrote, nothing is remembered.
//! 2. Every block carries `crc` = CRC-32C of its `data`, computed by the writer
//!    from the bytes it sends. [`verify_file`] checks both: the stored CRC
//!    against the bytes read (damage between writer and reader) and the bytes
//!    against the recomputed content (a block of another file or seed). Either
//!    failing, or a block missing, makes the file fail.
//! 3. Every block is `block_size_bytes` long except the last, which holds the
//!    rest of the file: the blocks of a file add up to `file_size_bytes`.

use crate::values::value_bytes;
use serde::Serialize;
use std::sync::Arc;
use strata::data::PartitionUpdate;
use strata::schema::{TableSchema, WriteOptions};
use strata::table::Table;
use strata::types::Value;
use strata::{Error, Result};

/// Largest block: the commit log's default mutation limit (half of a 32 MiB
/// segment). Larger blocks would need a larger segment for every write path;
/// CFS's 64-128 MiB blocks are scaled down here with the files.
pub const MAX_BLOCK_SIZE_BYTES: u64 = 16 << 20;
/// Blocks per file at most: the clustering column is an `int`, and a file of
/// more blocks than this is a typo at this machine's scale.
pub const MAX_BLOCKS_PER_FILE: u64 = 1 << 20;

/// The size of every file and of its blocks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct FileShape {
    pub file_size_bytes: u64,
    pub block_size_bytes: u64,
}

impl FileShape {
    /// Bad shapes name their option (the same names in stress and bench).
    pub fn validate(&self) -> Result<()> {
        if !(1024..=MAX_BLOCK_SIZE_BYTES).contains(&self.block_size_bytes) {
            return Err(Error::InvalidInput(format!(
                "--block-size-kib must be between 1 and {} KiB",
                MAX_BLOCK_SIZE_BYTES >> 10
            )));
        }
        if self.file_size_bytes == 0 {
            return Err(Error::InvalidInput("file size must be positive".into()));
        }
        if self.blocks() as u64 > MAX_BLOCKS_PER_FILE {
            return Err(Error::InvalidInput(format!(
                "a file of {} bytes in blocks of {} bytes has more than {MAX_BLOCKS_PER_FILE} \
                 blocks: raise --block-size-kib or lower the file size",
                self.file_size_bytes, self.block_size_bytes
            )));
        }
        Ok(())
    }

    /// Blocks per file, the last one possibly short (invariant 3).
    pub fn blocks(&self) -> u32 {
        let n = self.file_size_bytes.div_ceil(self.block_size_bytes.max(1));
        u32::try_from(n).unwrap_or(u32::MAX)
    }

    /// Length of block `b`.
    pub fn block_len(&self, b: u32) -> usize {
        let start = b as u64 * self.block_size_bytes;
        self.file_size_bytes
            .saturating_sub(start)
            .min(self.block_size_bytes) as usize
    }
}

/// The `CREATE TABLE` of a block table named `qualified` (`ks.table`), with
/// `with` appended after `WITH` when given (compaction, gc grace, ...).
pub fn create_table_cql(qualified: &str, with: Option<&str>) -> String {
    let mut cql = format!(
        "CREATE TABLE {qualified} (file text, block int, data blob, crc int, \
         PRIMARY KEY (file, block))"
    );
    if let Some(w) = with {
        cql.push_str(" WITH ");
        cql.push_str(w);
    }
    cql
}

/// Whether an existing table has the block table's columns (a stress run
/// against a table of another shape is refused, not half-verified).
pub fn is_block_table(schema: &TableSchema) -> bool {
    ["file", "block", "data", "crc"]
        .iter()
        .all(|c| schema.column(c).is_ok())
}

/// File `f`'s name: zero-padded so names sort as numbers (TestDFSIO names its
/// files `test_io_N`; the names are reused by every run, which is the point).
pub fn file_name(f: u64) -> String {
    format!("test_io_{f:08}")
}

/// The bytes of block `b` of file `f` (invariant 1).
pub fn block_data(shape: &FileShape, seed: u64, f: u64, b: u32) -> Vec<u8> {
    value_bytes(seed, f, b, 0, shape.block_len(b))
}

/// CRC-32C as the `int` column stores it (the same 32 bits, signed).
pub fn crc_of(data: &[u8]) -> i32 {
    crc32c::crc32c(data) as i32
}

/// The mutation writing block `b` of file `f` (an INSERT: row marker, data, crc).
pub fn block_update(
    schema: &TableSchema,
    shape: &FileShape,
    seed: u64,
    f: u64,
    b: u32,
    now_micros: i64,
) -> Result<PartitionUpdate> {
    let data = block_data(shape, seed, f, b);
    let crc = crc_of(&data);
    schema.insert(
        &[
            ("file", Value::Text(file_name(f))),
            ("block", Value::Int(b as i32)),
            ("data", Value::Blob(data)),
            ("crc", Value::Int(crc)),
        ],
        &WriteOptions::default(),
        now_micros,
    )
}

/// Writes every block of file `f`, one mutation each, stamped by the table's
/// clock. Stops at the first refused block (the file is then partial; the
/// caller counts the operation as failed).
pub fn write_file(table: &Arc<Table>, shape: &FileShape, seed: u64, f: u64) -> Result<()> {
    let schema = table.schema();
    for b in 0..shape.blocks() {
        let update = block_update(&schema, shape, seed, f, b, table.clock().now_micros())?;
        table.apply(&update)?;
    }
    Ok(())
}

/// Deletes file `f` whole: one partition tombstone, as CFS deletes a file's
/// blocks (the shape the blob strategy's whole-sstable drops depend on).
pub fn delete_file(table: &Arc<Table>, f: u64) -> Result<()> {
    let update = table.schema().delete_partition(
        &[("file", Value::Text(file_name(f)))],
        &WriteOptions::default(),
        table.clock().now_micros(),
    )?;
    table.apply(&update)
}

/// What reading one file back found (invariant 2).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileCheck {
    pub blocks_ok: u32,
    /// Blocks not found.
    pub missing: u32,
    /// Blocks found whose stored CRC does not match their bytes, or whose bytes
    /// are not the ones written (wrong length or content).
    pub corrupt: u32,
    /// The first problem, for the report.
    pub first_problem: Option<String>,
}

impl FileCheck {
    /// `Ok` only if every block was found intact; otherwise an error naming the
    /// file, the counts and the first problem (the stress run's failed op).
    pub fn into_result(self, f: u64) -> Result<()> {
        if self.missing == 0 && self.corrupt == 0 {
            return Ok(());
        }
        Err(Error::InvalidInput(format!(
            "file {} failed verification: {} blocks missing, {} corrupt ({})",
            file_name(f),
            self.missing,
            self.corrupt,
            self.first_problem.as_deref().unwrap_or("")
        )))
    }

    fn problem(&mut self, what: String) {
        self.first_problem.get_or_insert(what);
    }
}

/// Reads file `f` back and checks every block (invariant 2). An error is a
/// failed read (I/O, corruption the engine detected); a block that is missing
/// or wrong is counted in the returned [`FileCheck`].
pub fn verify_file(table: &Table, shape: &FileShape, seed: u64, f: u64) -> Result<FileCheck> {
    let schema = table.schema();
    let key = [Value::Text(file_name(f))];
    // A page of blocks at a time: a file of any size is read back within
    // about VERIFY_PAGE_BYTES of blocks.
    let page = (VERIFY_PAGE_BYTES / shape.block_size_bytes.max(1)).clamp(1, 1024) as usize;
    let blocks = shape.blocks();
    let mut check = FileCheck::default();
    let mut next: u32 = 0;
    while next < blocks {
        let range = schema.clustering_range((&[Value::Int(next as i32)], true), (&[], true))?;
        let rows = table.select(&key, &range, false, page)?;
        // Every block up to the page's last row is settled by this page;
        // a short page is the file's end.
        let end = match rows.last().and_then(|r| block_of(r)) {
            Some(last) if rows.len() == page => (last.max(0) as u64 + 1).min(blocks as u64) as u32,
            _ => blocks,
        };
        // Rows come in clustering order, `block` ascending; walk both in step.
        let mut rows = rows.iter().peekable();
        for b in next..end {
            while rows
                .peek()
                .is_some_and(|r| block_of(r).is_none_or(|x| x < b as i64))
            {
                rows.next();
            }
            let Some(row) = rows.next_if(|r| block_of(r) == Some(b as i64)) else {
                check.missing += 1;
                check.problem(format!("block {b} missing"));
                continue;
            };
            check_block(&mut check, shape, seed, f, b, row);
        }
        next = end.max(next + 1);
    }
    Ok(check)
}

/// Bytes of blocks [`verify_file`] reads at a time.
const VERIFY_PAGE_BYTES: u64 = 16 << 20;

/// The block number of a row of the block table.
fn block_of(row: &[(String, Option<Value>)]) -> Option<i64> {
    row.iter().find_map(|(n, v)| match (n.as_str(), v) {
        ("block", Some(Value::Int(x))) => Some(*x as i64),
        _ => None,
    })
}

/// Checks block `b` of file `f`, read as `row` (invariant 2).
fn check_block(
    check: &mut FileCheck,
    shape: &FileShape,
    seed: u64,
    f: u64,
    b: u32,
    row: &[(String, Option<Value>)],
) {
    let data = row.iter().find_map(|(n, v)| match (n.as_str(), v) {
        ("data", Some(Value::Blob(d))) => Some(d),
        _ => None,
    });
    let crc = row.iter().find_map(|(n, v)| match (n.as_str(), v) {
        ("crc", Some(Value::Int(c))) => Some(*c),
        _ => None,
    });
    match (data, crc) {
        (Some(d), Some(c)) if crc_of(d) != c => {
            check.corrupt += 1;
            check.problem(format!(
                "block {b}: stored crc {:08x}, data's {:08x}",
                c as u32,
                crc_of(d) as u32
            ));
        }
        (Some(d), Some(_)) if *d != block_data(shape, seed, f, b) => {
            check.corrupt += 1;
            check.problem(format!(
                "block {b}: {} bytes with a valid crc, but not the bytes written",
                d.len()
            ));
        }
        (Some(_), Some(_)) => check.blocks_ok += 1,
        _ => {
            check.corrupt += 1;
            check.problem(format!("block {b}: data or crc is null"));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::clock::{Clock, SimClock};
    use strata::db::{Database, DbOptions};

    #[test]
    fn blocks_tile_the_file_with_a_short_last_block() {
        let s = FileShape {
            file_size_bytes: 10 * 1024 + 5,
            block_size_bytes: 1024,
        };
        assert_eq!(s.blocks(), 11);
        assert_eq!(s.block_len(0), 1024);
        assert_eq!(s.block_len(10), 5);
        let total: usize = (0..s.blocks()).map(|b| s.block_len(b)).sum();
        assert_eq!(total as u64, s.file_size_bytes);
        assert!(s.validate().is_ok());
        let small = FileShape {
            block_size_bytes: 100,
            ..s
        };
        assert!(small.validate().is_err(), "blocks under 1 KiB refused");
    }

    #[test]
    fn a_damaged_block_is_caught_by_its_checksum_and_a_deleted_file_is_missing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let clock = SimClock::fixed();
        let db = Database::open(dir.path(), DbOptions::new(clock.clone())).expect("open");
        let table = db
            .create_table_cql(&create_table_cql("cfs.blocks", None))
            .expect("table");
        let shape = FileShape {
            file_size_bytes: 5000,
            block_size_bytes: 1024,
        };
        write_file(&table, &shape, 7, 3).expect("write");
        let ok = verify_file(&table, &shape, 7, 3).expect("read");
        assert_eq!(ok.blocks_ok, 5);
        assert!(ok.clone().into_result(3).is_ok());
        // Another seed: right checksums, wrong bytes.
        let other = verify_file(&table, &shape, 8, 3).expect("read");
        assert_eq!(other.corrupt, 5, "{other:?}");
        // Block 2 overwritten with a stale crc: the stored checksum catches it.
        let schema = table.schema();
        clock.advance_micros(1);
        let mut bad = block_update(&schema, &shape, 7, 3, 2, clock.now_micros()).expect("update");
        for row in &mut bad.rows {
            // The data cell is the only one longer than a few bytes.
            for cell in row.cells.iter_mut().filter(|c| c.value.len() > 100) {
                cell.value[10] ^= 1;
            }
        }
        table.apply(&bad).expect("apply");
        let damaged = verify_file(&table, &shape, 7, 3).expect("read");
        assert_eq!((damaged.blocks_ok, damaged.corrupt), (4, 1), "{damaged:?}");
        assert!(damaged
            .first_problem
            .as_deref()
            .is_some_and(|p| p.contains("block 2: stored crc")));
        // The deletion must be newer than the rewrite to shadow it.
        clock.advance_seconds(1);
        delete_file(&table, 3).expect("delete");
        let gone = verify_file(&table, &shape, 7, 3).expect("read");
        assert_eq!(gone.missing, 5);
        let err = gone.into_result(3).expect_err("a deleted file fails");
        assert!(err.to_string().contains("5 blocks missing"), "{err}");
        drop(table);
        db.close().expect("close");
    }
}
