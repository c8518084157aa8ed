//! `strata import --from-cassandra DIR ks.table`: the sstables of a Cassandra
//! snapshot (or any directory of Cassandra sstables) become Strata sstables
//! of the table, written directly, not through the memtable.
//!
//! Contract:
//! 1. All or nothing per directory: every sstable is opened, checked against
//!    the table (`reader` contract 2) and read whole (every chunk's CRC,
//!    every partition and row decoded) before anything is adopted; a file
//!    that cannot be represented refuses the import and nothing changes.
//! 2. Each Cassandra sstable becomes one Strata sstable at level 0, adopted
//!    with one manifest edit as `strata sstable import` adopts files; the
//!    source directory is only read.
//! 3. Reconciliation does the rest: rows that several snapshots (replicas)
//!    hold are merged by timestamp as any two versions are, so importing the
//!    snapshots of every replica of a token range is safe.
//! 4. A counter column's tombstone is stored at Strata's counter-tombstone
//!    timestamp (`data` invariant 6): deleted counters stay deleted, as in
//!    Cassandra.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::cassandra::reader::{SSTableName, SSTableSource};
use crate::data::{CellKind, Row, COUNTER_TOMBSTONE_TIMESTAMP};
use crate::encoding::EncodingBase;
use crate::error::{Error, Result};
use crate::fs::{IoCause, IoTag};
use crate::schema::TableSchema;
use crate::sstable::SSTableWriter;
use crate::table::Table;
use crate::types::CqlType;

/// One sstable imported.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ImportedSSTable {
    pub source: PathBuf,
    pub version: String,
    pub strata_id: u64,
    pub partitions: u64,
    pub rows: u64,
    pub cells: u64,
}

/// What an import did.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ImportSummary {
    pub keyspace: String,
    pub table: String,
    pub sstables: Vec<ImportedSSTable>,
    pub partitions: u64,
    pub rows: u64,
    pub cells: u64,
    pub tombstones: u64,
    pub bytes: u64,
    pub seconds: f64,
}

/// Progress: bytes of the sources' Data.db files read so far and in all.
/// Each file is read twice (contract 1), so the total counts it twice.
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Reports progress over sources of `total` stored bytes in all (both
/// passes), of which `before` precede the current source of `stored` bytes;
/// the position within it is scaled from its uncompressed offset.
struct Tracker<'p> {
    progress: Progress<'p>,
    total: u64,
    before: u64,
    stored: u64,
}

impl Tracker<'_> {
    fn report(&mut self, (read, length): (u64, u64)) {
        let within = if length == 0 {
            self.stored
        } else {
            (self.stored as u128 * read.min(length) as u128 / length as u128) as u64
        };
        (self.progress)(self.before + within, self.total);
    }
}

/// The Cassandra sstables (their Data.db names) in `dir`, sorted.
pub fn sstables_in(dir: &Path) -> Result<Vec<SSTableName>> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let e = e.map_err(|e| Error::io(dir, e))?;
        if let Some(name) = e.file_name().to_str().and_then(SSTableName::parse_data) {
            out.push(name);
        }
    }
    out.sort_by(|a, b| (&a.version, &a.id).cmp(&(&b.version, &b.id)));
    Ok(out)
}

/// Counts of one read of a source.
#[derive(Clone, Copy, Debug, Default)]
struct Counts {
    /// The base the source's deltas were taken against (lower bounds of
    /// its data), which the Strata sstable written from it takes too.
    base: Option<EncodingBase>,
    partitions: u64,
    rows: u64,
    cells: u64,
    tombstones: u64,
}

fn fix_counter_tombstones(schema: &TableSchema, row: &mut Row) {
    for c in row.cells.iter_mut() {
        if c.kind == CellKind::Tombstone && c.path.is_none() {
            if let Some(col) = schema.column_by_id(c.column) {
                if col.ty == CqlType::Counter {
                    c.timestamp_micros = COUNTER_TOMBSTONE_TIMESTAMP;
                }
            }
        }
    }
}

fn count_row(row: &Row, now: i64, n: &mut Counts) {
    n.rows += 1;
    n.cells += row.cells.len() as u64;
    n.tombstones += row.cells.iter().filter(|c| !c.is_live(now)).count() as u64;
    if !row.deletion.is_live() {
        n.tombstones += 1;
    }
}

/// Reads one source whole, handing each partition to `sink`.
fn each_partition(
    dir: &Path,
    name: &SSTableName,
    schema: &TableSchema,
    now: i64,
    tracker: &mut Tracker<'_>,
    mut sink: impl FnMut(
        crate::cassandra::reader::SourcePartition,
        &mut dyn FnMut() -> Result<Option<Row>>,
    ) -> Result<()>,
) -> Result<Counts> {
    let mut src = SSTableSource::open(dir, name.clone(), schema)?;
    let mut n = Counts {
        base: Some(EncodingBase {
            min_timestamp: src.header.min_timestamp,
            min_local_deletion: src.header.min_local_deletion,
            min_ttl: src.header.min_ttl.max(0) as u32,
            row_ts_bytes: 0,
        }),
        ..Counts::default()
    };
    let mut last: Option<crate::data::DecoratedKey> = None;
    while let Some(p) = src.next_partition()? {
        tracker.report(src.progress());
        if last.as_ref().is_some_and(|k| k >= &p.key) {
            return Err(Error::InvalidInput(format!(
                "{}: partitions out of token order at token {}",
                name.component(dir, "Data.db").display(),
                p.key.token
            )));
        }
        last = Some(p.key.clone());
        n.partitions += 1;
        n.tombstones += p.deletion.ranges.len() as u64 + u64::from(p.deletion.partition.is_some());
        let key = p.key.clone();
        let mut rows = || -> Result<Option<Row>> {
            match src.next_row(&key)? {
                Some(mut r) => {
                    fix_counter_tombstones(schema, &mut r);
                    count_row(&r, now, &mut n);
                    Ok(Some(r))
                }
                None => Ok(None),
            }
        };
        sink(p, &mut rows)?;
        while rows()?.is_some() {}
    }
    Ok(n)
}

/// Checks Data.db against its Digest.crc32 (the CRC32 of the whole file as
/// stored) when there is one: the only check of uncompressed data, whose
/// per-chunk CRCs Cassandra keeps apart in CRC.db.
fn verify_digest(dir: &Path, name: &SSTableName) -> Result<()> {
    use std::io::Read;
    let digest_path = name.component(dir, "Digest.crc32");
    let Ok(text) = std::fs::read_to_string(&digest_path) else {
        return Ok(());
    };
    let want: u32 = text.trim().parse().map_err(|_| {
        Error::InvalidInput(format!("{}: not a CRC32 in decimal", digest_path.display()))
    })?;
    let data = name.component(dir, "Data.db");
    let mut f = std::fs::File::open(&data).map_err(|e| Error::io(&data, e))?;
    let mut h = crc32fast::Hasher::new();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        let n = f.read(&mut buf).map_err(|e| Error::io(&data, e))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
    }
    if h.finalize() != want {
        return Err(Error::InvalidInput(format!(
            "{}: its CRC32 does not match {}: the file is damaged",
            data.display(),
            digest_path.display()
        )));
    }
    Ok(())
}

/// Imports every Cassandra sstable in `dir` into `table` (module docs).
pub fn import_dir(table: &Arc<Table>, dir: &Path, progress: Progress<'_>) -> Result<ImportSummary> {
    let names = sstables_in(dir)?;
    import_sstables(table, dir, names, progress)
}

/// Imports the sstables `names` of `dir` into `table` (module docs).
pub fn import_sstables(
    table: &Arc<Table>,
    dir: &Path,
    names: Vec<SSTableName>,
    progress: Progress<'_>,
) -> Result<ImportSummary> {
    let started = Instant::now();
    if table.is_read_only() {
        return Err(Error::ReadOnly(
            "import needs the data directory's owner".into(),
        ));
    }
    let schema = table.schema();
    if names.is_empty() {
        return Err(Error::InvalidInput(format!(
            "{}: no Cassandra sstables (files named like nb-1-big-Data.db)",
            dir.display()
        )));
    }
    let now = table.clock().now_seconds();
    let mut sizes = Vec::with_capacity(names.len());
    for name in &names {
        let data = name.component(dir, "Data.db");
        sizes.push(
            std::fs::metadata(&data)
                .map_err(|e| Error::io(&data, e))?
                .len(),
        );
    }
    let mut tracker = Tracker {
        progress,
        total: 2 * sizes.iter().sum::<u64>(),
        before: 0,
        stored: 0,
    };
    // Contract 1: read everything before adopting anything.
    let mut checked = Vec::new();
    for (name, &bytes) in names.iter().zip(&sizes) {
        verify_digest(dir, name)?;
        tracker.stored = bytes;
        let counts = each_partition(dir, name, &schema, now, &mut tracker, |_, _| Ok(()))?;
        tracker.before += bytes;
        checked.push((name.clone(), counts, bytes));
    }
    let tag = IoTag::new(IoCause::Recompression);
    let mut summary = ImportSummary {
        keyspace: schema.keyspace.clone(),
        table: schema.name.clone(),
        sstables: Vec::new(),
        partitions: 0,
        rows: 0,
        cells: 0,
        tombstones: 0,
        bytes: 0,
        seconds: 0.0,
    };
    for (name, counts, bytes) in checked {
        table.check_disk_space(bytes)?;
        let base = counts.base.unwrap_or(EncodingBase::ZERO);
        let id = table.allocate_sstable_id();
        let opts = table.writer_options(id, 0, tag, base, counts.partitions);
        let mut writer = SSTableWriter::create(table.fs(), table.dir(), id, opts)?;
        // On an error the writer is dropped, which removes its file.
        tracker.stored = bytes;
        each_partition(dir, &name, &schema, now, &mut tracker, |p, rows| {
            writer.begin_partition(p.key, p.deletion, p.static_row)?;
            while let Some(r) = rows()? {
                writer.append_row(r)?;
            }
            writer.end_partition()?;
            Ok(())
        })?;
        tracker.before += bytes;
        let new = writer.finish()?;
        if let Err(e) = table.replace_sstables(&[], &[(new.clone(), 0)]) {
            if !matches!(e, Error::Poisoned(_)) {
                new.mark_obsolete();
            }
            return Err(e);
        }
        summary.partitions += counts.partitions;
        summary.rows += counts.rows;
        summary.cells += counts.cells;
        summary.tombstones += counts.tombstones;
        summary.bytes += bytes;
        summary.sstables.push(ImportedSSTable {
            source: name.component(dir, "Data.db"),
            version: name.version.clone(),
            strata_id: id,
            partitions: counts.partitions,
            rows: counts.rows,
            cells: counts.cells,
        });
    }
    table.wake_compaction();
    summary.seconds = started.elapsed().as_secs_f64();
    Ok(summary)
}
