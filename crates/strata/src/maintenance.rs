//! Operator maintenance of a table's sstables: `verify`, `snapshot`,
//! `listsnapshots`, `clearsnapshot` and `scrub`, plus [`rewrite_sstable`], the
//! one-sstable rewrite that scrub, `upgradesstables` and recompression share.
//!
//! Glossary:
//! - **live sstable**: one listed in the table's manifest and present in its
//!   current `View`.
//! - **snapshot**: `<table_dir>/snapshots/<name>/` (Cassandra's layout): a hard
//!   link to every sstable that was live when it was taken, a `MANIFEST` in the
//!   table's own format listing exactly those sstables with their levels (so the
//!   directory can be copied back as a table directory), `schema.cql` (a
//!   `CREATE TYPE IF NOT EXISTS` for each user-defined type the table uses,
//!   nested ones first, then its `CREATE TABLE`, as Cassandra writes it) and `manifest.json` (file list and creation time,
//!   as Cassandra writes it).
//! - **bad region**: a run of partitions that cannot be read because a chunk or an
//!   index block failed its checksum or did not decode. Scrub drops it and resumes
//!   at the next readable partition.
//!
//! Threads: every function may be called from any thread while the table serves
//! reads, writes, flushes and compactions. Each works on one `View` snapshot,
//! whose `Arc`s keep the sstables it reads on disk until it is done.
//!
//! Invariants:
//! 1. The live set changes only through `Table::replace_sstables`: one durable
//!    manifest commit per rewritten sstable. A crash mid-rewrite leaves the old
//!    sstable live and the unfinished output unlisted (startup deletes it).
//! 2. A rewrite keeps the sstable's level and writes with the table's *current*
//!    compression and Bloom filter options; the encoding base (minimum timestamp,
//!    deletion time, TTL) is the input's, which bounds every partition it keeps.
//! 3. Scrub never writes a partition it could not verify: a partition is kept
//!    only if every chunk it spans passes its checksum, it decodes completely,
//!    it sorts after the partition kept before it, and an intact index entry at
//!    its offset (if any) agrees, so scrub cannot turn corruption into wrong data.
//! 4. Unless told otherwise, scrub snapshots (hard links) every live sstable
//!    before it changes anything, so the originals stay on disk until the
//!    operator clears the snapshot.
//! 5. A snapshot is published by renaming its fully written, fsynced directory
//!    (`<name>.tmp` -> `<name>`): a crash leaves a complete snapshot or a `.tmp`
//!    directory that listing ignores and `clear_snapshot(None)` removes. It never
//!    copies data; it costs disk only once the table stops using its files.
//! 6. Snapshot commands never follow a symbolic link: `snapshots/` itself must
//!    be a directory, a link among the snapshots is skipped by listing and by
//!    `clear_snapshot(None)` (and reported), refused by name, and a snapshot
//!    directory holding anything but files is left whole (`nodetool
//!    clearsnapshot --all` once deleted a link's target).
//!
//! Resynchronisation after a bad region (scrub) goes through the data stream,
//! not the index (`sstable::salvage`): scrub reads every chunk in order,
//! verifies it, and finds partition boundaries by their framing. A damaged index
//! block therefore loses nothing whose chunks are intact (it once cost 217
//! partitions); after a damaged chunk the walk resumes at the next partition an
//! intact index block lists (it never guesses a start). Scrub needs the sstable to open: damage to its tail (chunk table,
//! summary, filter, statistics, footer) sets it aside as unreadable at open, and
//! the offline [`scrub_file`] (`strata sstable scrub`) salvages such a file from
//! its identity header.

use crate::data::DecoratedKey;
use crate::error::{Error, Result};
use crate::fs::Fs;
use crate::fs::{link_refused, EntryKind, IoCause, IoTag};
use crate::manifest::{Manifest, SSTableEntry, MANIFEST_FILE};
use crate::sstable::salvage::{salvage_file, salvage_reader, FileSalvage, SalvageItem};
use crate::sstable::{parse_data_file_name, SSTableReader, SSTableWriter};
use crate::table::Table;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// Sub-directory of a table directory holding its snapshots (Cassandra's name).
pub const SNAPSHOTS_DIR: &str = "snapshots";
/// The Cassandra-style description written into every snapshot.
pub const SNAPSHOT_MANIFEST_JSON: &str = "manifest.json";
/// The table's `CREATE TABLE` statement, written into every snapshot.
pub const SNAPSHOT_SCHEMA_FILE: &str = "schema.cql";
const TMP_SUFFIX: &str = ".tmp";
/// The largest `manifest.json` or `schema.cql` of a snapshot read back: a
/// list of file names and one CREATE TABLE statement.
pub const MAX_SNAPSHOT_METADATA_BYTES: u64 = 64 << 20;

fn hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

fn level_tag(level: u32) -> IoTag {
    IoTag::compaction(u8::try_from(level).unwrap_or(u8::MAX))
}

// ---------------------------------------------------------------------------
// verify

/// One damaged chunk or block found by [`verify`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct VerifyProblem {
    pub sstable_id: u64,
    pub path: PathBuf,
    /// File offset of the damaged chunk or block; `None` for an I/O error.
    pub offset: Option<u64>,
    pub reason: String,
}

/// What [`verify`] found in one table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct VerifyReport {
    pub keyspace: String,
    pub table: String,
    pub sstables_checked: usize,
    /// Bytes of the sstable files checked.
    pub bytes_checked: u64,
    pub problems: Vec<VerifyProblem>,
}

impl VerifyReport {
    pub fn is_clean(&self) -> bool {
        self.problems.is_empty()
    }
}

fn problem_of(sstable_id: u64, fallback_path: &Path, e: Error) -> VerifyProblem {
    match e {
        Error::Corruption {
            path,
            offset,
            reason,
        } => VerifyProblem {
            sstable_id,
            path,
            offset: Some(offset),
            reason,
        },
        Error::Io { path, source } => VerifyProblem {
            sstable_id,
            path,
            offset: None,
            reason: format!("I/O error: {source}"),
        },
        other => VerifyProblem {
            sstable_id,
            path: fallback_path.to_path_buf(),
            offset: None,
            reason: other.to_string(),
        },
    }
}

/// Checks every checksum of every live sstable of `table` (every chunk, every
/// index block, then a decode of every partition), reporting each damaged chunk or
/// block with its file and offset. The tail blocks were checked when the sstable
/// was opened. Reads are counted as `IoCause::Metadata`.
pub fn verify(table: &Table) -> VerifyReport {
    let view = table.view();
    let schema = table.schema();
    let mut report = VerifyReport {
        keyspace: schema.keyspace.clone(),
        table: schema.name.clone(),
        ..VerifyReport::default()
    };
    for s in view.sstables() {
        report.sstables_checked += 1;
        report.bytes_checked += s.file_size();
        for e in s.verify(IoTag::new(IoCause::Metadata)) {
            report.problems.push(problem_of(s.id(), s.path(), e));
        }
    }
    // Listed sstables that could not even be opened are damage too.
    for u in table.unreadable_sstables() {
        report.problems.push(problem_of(u.id, &u.path, u.error()));
    }
    // The blob strategy's persisted accounting must be the accounting of the
    // files (only checked when every file verified: damage would be reported
    // twice). A mismatch is a problem: the strategy drops files on it.
    if report.problems.is_empty() {
        match table.verify_live_bytes() {
            Ok(wrong) => {
                for (id, stored, fresh) in wrong {
                    let path = view
                        .sstables()
                        .iter()
                        .find(|s| s.id() == id)
                        .map(|s| s.path().to_path_buf())
                        .unwrap_or_default();
                    report.problems.push(VerifyProblem {
                        sstable_id: id,
                        path,
                        offset: None,
                        reason: format!(
                            "blob accounting in the manifest {stored:?} differs from the files' {fresh:?}"
                        ),
                    });
                }
            }
            Err(e) => report.problems.push(problem_of(0, table.dir(), e)),
        }
    }
    report
}

// ---------------------------------------------------------------------------
// snapshots

/// One snapshot of one table, as `listsnapshots` prints it.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SnapshotInfo {
    pub name: String,
    pub keyspace: String,
    pub table: String,
    pub path: PathBuf,
    pub sstable_count: usize,
    /// Bytes of every file in the snapshot (nodetool's "Size on disk").
    pub size_on_disk_bytes: u64,
    /// Bytes held only by the snapshot: files that are not also a live file of the
    /// table (nodetool's "True size"; what clearing the snapshot would free, unless
    /// another snapshot shares them).
    pub true_size_bytes: u64,
    /// From the table's clock when taken; `None` if `manifest.json` is unreadable.
    pub created_at_micros: Option<i64>,
}

/// `manifest.json` of a snapshot.
#[derive(Clone, Debug, Serialize, Deserialize)]
struct SnapshotManifestJson {
    files: Vec<String>,
    created_at_micros: i64,
}

/// Rejects names that would escape `snapshots/` or collide with our temporaries.
fn check_snapshot_name(name: &str) -> Result<()> {
    let ok = !name.is_empty()
        && name.len() <= 200
        && name != "."
        && name != ".."
        && !name.ends_with(TMP_SUFFIX)
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'));
    if ok {
        Ok(())
    } else {
        Err(Error::InvalidInput(format!(
            "snapshot name '{name}': use 1..=200 characters of [A-Za-z0-9._-], not ending in {TMP_SUFFIX}"
        )))
    }
}

fn snapshots_dir(table: &Table) -> PathBuf {
    table.dir().join(SNAPSHOTS_DIR)
}

/// The table's `snapshots/` directory, refused when it is anything but a
/// directory (invariant 6: a link there would lead every snapshot command
/// outside the data directory). Absent is fine.
fn snapshots_root(table: &Table) -> Result<PathBuf> {
    let root = snapshots_dir(table);
    match table.fs().entry_kind(&root)? {
        None | Some(EntryKind::Dir) => Ok(root),
        Some(EntryKind::Symlink) => Err(link_refused(&root)),
        Some(kind) => Err(Error::InvalidInput(format!(
            "{} is {}, not a directory of snapshots",
            root.display(),
            kind.describe()
        ))),
    }
}

/// Takes snapshot `name` of `table`'s live sstables (invariant 5). Memtables are
/// not flushed: callers that want them in (`strata snapshot`, as `nodetool
/// snapshot`) flush first. Fails with `AlreadyExists` if the name is taken.
pub fn snapshot(table: &Table, name: &str) -> Result<SnapshotInfo> {
    check_snapshot_name(name)?;
    let fs = table.fs();
    let root = snapshots_root(table)?;
    let final_dir = root.join(name);
    match fs.entry_kind(&final_dir)? {
        None => {}
        Some(EntryKind::Symlink) => return Err(link_refused(&final_dir)),
        Some(_) => {
            let schema = table.schema();
            return Err(Error::AlreadyExists(format!(
                "snapshot '{name}' of {}",
                schema.qualified_name()
            )));
        }
    }
    let tmp_dir = root.join(format!("{name}{TMP_SUFFIX}"));
    remove_dir_contents(table, &tmp_dir)?;
    fs.create_dir_all(&tmp_dir)?;
    // The replay position first, then the view: every sstable the position
    // promises is in the view, so the snapshot's MANIFEST never claims more than
    // its files hold.
    let replay = table.flushed_position();
    let view = table.view();
    let mut files = Vec::with_capacity(view.version.len() + 3);
    let mut entries = Vec::with_capacity(view.version.len());
    for (s, level) in view.version.iter().map(|e| (&e.handle, e.level)) {
        let file_name = s
            .path()
            .file_name()
            .ok_or_else(|| Error::InvalidInput(format!("{} has no file name", s.path().display())))?
            .to_owned();
        fs.hard_link(s.path(), &tmp_dir.join(&file_name))?;
        files.push(file_name.to_string_lossy().into_owned());
        entries.push(SSTableEntry::for_reader(s, level));
    }
    // The dictionaries those sstables were compressed with, so a snapshot
    // restored or read elsewhere decodes on its own (dictionary invariant 4).
    let mut dictionaries: Vec<u32> = view
        .sstables()
        .iter()
        .filter_map(|s| s.stats().codec.dictionary())
        .collect();
    dictionaries.sort_unstable();
    dictionaries.dedup();
    for id in dictionaries {
        let name = crate::dictionary::file_name(id);
        fs.hard_link(&table.dir().join(&name), &tmp_dir.join(&name))?;
        files.push(name);
    }
    let schema = table.schema();
    let mut manifest = Manifest::open(fs, &tmp_dir)?;
    manifest.set_table_uuid(schema.table_uuid());
    manifest.commit(&entries, &[], replay)?;
    files.push(MANIFEST_FILE.to_string());
    let tag = IoTag::new(IoCause::Metadata);
    fs.write_atomic(
        &tmp_dir.join(SNAPSHOT_SCHEMA_FILE),
        format!(
            "{}{};\n",
            schema.types_cql(),
            schema.to_cql().trim_end().trim_end_matches(';')
        )
        .as_bytes(),
        tag,
    )?;
    files.push(SNAPSHOT_SCHEMA_FILE.to_string());
    let json = serde_json::to_vec_pretty(&SnapshotManifestJson {
        files,
        created_at_micros: table.clock().now_micros(),
    })
    .map_err(|e| Error::InvalidInput(format!("snapshot manifest.json: {e}")))?;
    fs.write_atomic(&tmp_dir.join(SNAPSHOT_MANIFEST_JSON), &json, tag)?;
    fs.sync_dir(&tmp_dir)?;
    fs.rename(&tmp_dir, &final_dir)?;
    fs.sync_dir(&root)?;
    snapshot_info(table, name)
}

/// The snapshots of `table`, by name (complete ones only; see invariant 5).
/// A link among them is no snapshot and is skipped (invariant 6).
pub fn list_snapshots(table: &Table) -> Result<Vec<SnapshotInfo>> {
    let root = snapshots_root(table)?;
    let mut out = Vec::new();
    for (name, kind) in table.fs().list_dir_kinds(&root)? {
        if name.ends_with(TMP_SUFFIX) || kind != EntryKind::Dir {
            continue;
        }
        out.push(snapshot_info(table, &name)?);
    }
    Ok(out)
}

fn snapshot_info(table: &Table, name: &str) -> Result<SnapshotInfo> {
    use std::os::unix::fs::MetadataExt;
    let dir = snapshots_dir(table).join(name);
    let schema = table.schema();
    let mut info = SnapshotInfo {
        name: name.to_string(),
        keyspace: schema.keyspace.clone(),
        table: schema.name.clone(),
        path: dir.clone(),
        sstable_count: 0,
        size_on_disk_bytes: 0,
        true_size_bytes: 0,
        created_at_micros: None,
    };
    for (file, kind) in table.fs().list_dir_kinds(&dir)? {
        // Only the snapshot's own files count: a link's target is not its.
        if kind != EntryKind::File {
            continue;
        }
        let path = dir.join(&file);
        let meta = table.fs().metadata(&path)?;
        info.size_on_disk_bytes += meta.len();
        let shared = parse_data_file_name(&file).is_some()
            && table
                .fs()
                .metadata(&table.dir().join(&file))
                .is_ok_and(|live| live.dev() == meta.dev() && live.ino() == meta.ino());
        if !shared {
            info.true_size_bytes += meta.len();
        }
        if parse_data_file_name(&file).is_some() {
            info.sstable_count += 1;
        }
        if file == SNAPSHOT_MANIFEST_JSON {
            info.created_at_micros = table
                .fs()
                .read_all(
                    &path,
                    MAX_SNAPSHOT_METADATA_BYTES,
                    IoTag::new(IoCause::Metadata),
                )
                .ok()
                .and_then(|b| serde_json::from_slice::<SnapshotManifestJson>(&b).ok())
                .map(|m| m.created_at_micros);
        }
    }
    Ok(info)
}

/// Live sstables of `table` whose files a snapshot also links (link count > 1):
/// rewriting them (scrub, upgradesstables) frees nothing until the snapshot is
/// cleared. `(count, bytes)`.
pub fn live_files_held_by_snapshots(table: &Table) -> Result<(usize, u64)> {
    use std::os::unix::fs::MetadataExt;
    let mut held = (0usize, 0u64);
    for s in table.view().sstables().iter() {
        if table.fs().metadata(s.path())?.nlink() > 1 {
            held.0 += 1;
            held.1 += s.file_size();
        }
    }
    Ok(held)
}

/// The warning scrub and upgradesstables print when a snapshot holds live files.
pub fn snapshot_space_warning(table: &Table) -> Result<Option<String>> {
    let (count, bytes) = live_files_held_by_snapshots(table)?;
    Ok((count > 0).then(|| {
        format!(
            "{count} live sstables ({bytes} bytes) are also held by a snapshot: rewriting \
             them frees nothing until the snapshot is cleared (strata clearsnapshot), so \
             the rewrite needs room for their new copies on top of the old ones"
        )
    }))
}

/// Bytes held only by `table`'s snapshots: tablestats' "Space used by snapshots
/// (total)", which Cassandra computes as the snapshots' true size.
pub fn snapshots_true_size_bytes(table: &Table) -> Result<u64> {
    Ok(list_snapshots(table)?
        .iter()
        .map(|s| s.true_size_bytes)
        .sum())
}

/// Removes every file of snapshot directory `dir`, then `dir` itself; absent
/// is fine. A snapshot holds only files the engine wrote or linked: anything
/// else in it (a link, a directory, a FIFO) is no snapshot's, and the whole
/// directory is left as it is, refused before anything is removed.
fn remove_dir_contents(table: &Table, dir: &Path) -> Result<()> {
    match table.fs().entry_kind(dir)? {
        None => return Ok(()),
        Some(EntryKind::Dir) => {}
        Some(EntryKind::Symlink) => return Err(link_refused(dir)),
        Some(kind) => {
            return Err(Error::InvalidInput(format!(
                "{} is {}, not a snapshot directory",
                dir.display(),
                kind.describe()
            )))
        }
    }
    let entries = table.fs().list_dir_kinds(dir)?;
    if let Some((name, kind)) = entries.iter().find(|(_, k)| *k != EntryKind::File) {
        return Err(Error::InvalidInput(format!(
            "{} holds {name}, {}: a snapshot holds only files, so it is left in place",
            dir.display(),
            kind.describe()
        )));
    }
    for (file, _) in entries {
        table.fs().remove(&dir.join(file))?;
    }
    table.fs().remove_dir(dir)
}

/// What [`clear_snapshot`] did.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ClearedSnapshots {
    /// Snapshots removed.
    pub cleared: Vec<String>,
    /// Entries of `snapshots/` left in place, with why (a link, or a
    /// directory holding something other than files).
    pub skipped: Vec<String>,
}

/// Deletes snapshot `name`, or every snapshot (and leftover `.tmp` directories)
/// when `name` is `None` (`nodetool clearsnapshot --all`). A missing `name` is
/// `NotFound`; a `name` that is a link is refused; with `None`, links and
/// directories holding anything but files are skipped and reported
/// (invariant 6: nothing is deleted through a link).
pub fn clear_snapshot(table: &Table, name: Option<&str>) -> Result<ClearedSnapshots> {
    let fs = table.fs();
    let root = snapshots_root(table)?;
    let mut report = ClearedSnapshots::default();
    let names: Vec<String> = match name {
        Some(n) => {
            check_snapshot_name(n)?;
            match fs.entry_kind(&root.join(n))? {
                Some(EntryKind::Dir) => vec![n.to_string()],
                Some(EntryKind::Symlink) => return Err(link_refused(&root.join(n))),
                _ => {
                    return Err(Error::NotFound(format!(
                        "snapshot '{n}' of {}",
                        table.schema().qualified_name()
                    )))
                }
            }
        }
        None => {
            let mut dirs = Vec::new();
            for (n, kind) in fs.list_dir_kinds(&root)? {
                match kind {
                    EntryKind::Dir => dirs.push(n),
                    EntryKind::Symlink => report.skipped.push(format!(
                        "{}: a symbolic link, not a snapshot (left in place)",
                        root.join(&n).display()
                    )),
                    // Files beside the snapshots are not snapshots either.
                    _ => {}
                }
            }
            dirs
        }
    };
    let mut removed_any = false;
    for n in names {
        match remove_dir_contents(table, &root.join(&n)) {
            Ok(()) => {
                removed_any = true;
                if !n.ends_with(TMP_SUFFIX) {
                    report.cleared.push(n);
                }
            }
            Err(Error::InvalidInput(why)) if name.is_none() => report.skipped.push(why),
            Err(e) => return Err(e),
        }
    }
    if removed_any {
        fs.sync_dir(&root)?;
    }
    Ok(report)
}

// ---------------------------------------------------------------------------
// rewrite and scrub

/// A region of an sstable that scrub could not read: a damaged chunk (its
/// partitions dropped) or a damaged index block (nothing dropped when the chunks
/// under it are intact).
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct BadRegion {
    pub path: PathBuf,
    /// File offset of the damaged chunk or index block.
    pub offset: u64,
    pub reason: String,
    /// The last partition read before the region (hex of the serialized key).
    pub after_key_hex: Option<String>,
    /// Token of the first partition kept after the region; `None` if nothing
    /// was readable after it.
    pub resumed_at_token: Option<i64>,
}

/// What happened to one sstable in [`scrub`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SSTableScrub {
    pub sstable_id: u64,
    pub path: PathBuf,
    pub level: u32,
    /// The replacement, if any partition was kept.
    pub new_sstable_id: Option<u64>,
    pub partitions_kept: u64,
    /// The statistics' partition count minus the partitions read.
    pub partitions_dropped: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub bad_regions: Vec<BadRegion>,
    /// Why this sstable was left as it was (e.g. compacted away meanwhile).
    pub skipped: Option<String>,
}

/// What [`scrub`] did to one table.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ScrubReport {
    pub keyspace: String,
    pub table: String,
    /// The snapshot of the originals, when asked for (`ScrubOptions::snapshot`).
    pub snapshot: Option<String>,
    /// Space warnings: live sstables an existing snapshot also holds, whose
    /// rewrite frees nothing (the space needed doubles for them).
    pub warnings: Vec<String>,
    pub sstables: Vec<SSTableScrub>,
    pub partitions_kept: u64,
    pub partitions_dropped: u64,
    pub bytes_in: u64,
    pub bytes_out: u64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ScrubOptions {
    /// Take a `pre-scrub-<millis>` snapshot of the originals first. Off by
    /// default (issue 14: a snapshot keeps every original alive, doubling the
    /// space a scrub needs); Cassandra snapshots unless `--no-snapshot`.
    /// Without it, the damaged originals are gone for good.
    pub snapshot: bool,
}

/// What to do on a checksum or decoding failure while rewriting.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OnCorruption {
    /// Stop: the rewrite fails and nothing changes (`upgradesstables`, recompression).
    Fail,
    /// Drop the unreadable partitions and resume after them (scrub).
    Salvage,
}

struct Rewritten {
    output: Option<Arc<SSTableReader>>,
    partitions_read: u64,
    partitions_kept: u64,
    bad: Vec<BadRegion>,
}

/// Copies the partitions of `reader` that `keep` accepts by key into
/// `writer` (created on the first one kept), in key order. Under
/// `OnCorruption::Fail` each partition is copied a row at a time
/// ([`RowScanner`]: a partition of gigabytes is never held whole) and the
/// first failure is returned; under `Salvage` the data stream is walked
/// chunk by chunk (`sstable::salvage`): every partition whose chunks are
/// intact is kept, even when the index block listing it is damaged, and each
/// damaged chunk or index block is reported as a bad region. Returns the
/// partitions read, those kept, and the bad regions.
fn copy_partitions(
    reader: &Arc<SSTableReader>,
    tag: IoTag,
    on_corruption: OnCorruption,
    keep: &mut dyn FnMut(&DecoratedKey) -> bool,
    writer: &mut SSTableWriter,
) -> Result<(u64, u64, Vec<BadRegion>)> {
    let mut kept = 0u64;
    if on_corruption == OnCorruption::Fail {
        let mut read = 0u64;
        let mut scan = reader.scan_rows(tag)?;
        while let Some(head) = scan.next_partition()? {
            read += 1;
            if !keep(&head.key) {
                continue;
            }
            writer.begin_partition(head.key, head.deletion, head.static_row)?;
            while let Some(row) = scan.next_row()? {
                writer.append_row(row)?;
            }
            kept += u64::from(writer.end_partition()?);
        }
        return Ok((read, kept, Vec::new()));
    }
    let mut bad: Vec<BadRegion> = Vec::new();
    let mut last_good: Option<DecoratedKey> = None;
    // Bad regions met since the last partition kept: their resume token is the
    // next partition's.
    let mut open_regions = 0usize;
    let counts = salvage_reader(reader, tag, &mut |item| match item {
        SalvageItem::Partition(p) => {
            for r in bad.iter_mut().rev().take(open_regions) {
                r.resumed_at_token = Some(p.key.token);
            }
            open_regions = 0;
            last_good = Some(p.key.clone());
            if keep(&p.key) {
                writer.append(&p)?;
                kept += 1;
            }
            Ok(())
        }
        SalvageItem::Damage {
            file_offset,
            reason,
        } => {
            bad.push(BadRegion {
                path: reader.path().to_path_buf(),
                offset: file_offset,
                reason,
                after_key_hex: last_good.as_ref().map(|k| hex(&k.key)),
                resumed_at_token: None,
            });
            open_regions += 1;
            Ok(())
        }
    })?;
    Ok((counts.partitions_recovered, kept, bad))
}

/// Writes the partitions of `reader` whose keys pass `keep` into a new
/// sstable of the same level (not yet live). `None` output when nothing was
/// kept. Under `Salvage` a sound file (nearly every file scrub rewrites) is
/// first copied a row at a time as under `Fail`; only when that meets
/// corruption is the copy thrown away and the file walked by salvage, which
/// holds each partition whole until all of it has decoded (salvage
/// invariant 1).
fn write_copy(
    table: &Table,
    reader: &Arc<SSTableReader>,
    level: u32,
    on_corruption: OnCorruption,
    keep: &mut dyn FnMut(&DecoratedKey) -> bool,
) -> Result<Rewritten> {
    if on_corruption == OnCorruption::Salvage {
        match write_copy_once(table, reader, level, OnCorruption::Fail, keep) {
            Err(Error::Corruption { .. }) => {}
            done => return done,
        }
    }
    write_copy_once(table, reader, level, on_corruption, keep)
}

fn write_copy_once(
    table: &Table,
    reader: &Arc<SSTableReader>,
    level: u32,
    on_corruption: OnCorruption,
    keep: &mut dyn FnMut(&DecoratedKey) -> bool,
) -> Result<Rewritten> {
    let tag = level_tag(level);
    let st = reader.stats();
    let id = table.allocate_sstable_id();
    // The file's own span sets the width of fixed-width row timestamps, so
    // a rewrite of an older file (upgradesstables) takes the compact form.
    let base = st.base.with_row_ts_span_to(st.max_timestamp_micros);
    let opts = table.writer_options(id, level, tag, base, st.partition_count);
    let mut writer = SSTableWriter::create(table.fs(), table.dir(), id, opts)?;
    // On any error the writer is dropped here, which removes its temporary file.
    let (partitions_read, kept, bad) =
        copy_partitions(reader, tag, on_corruption, keep, &mut writer)?;
    let output = if kept > 0 {
        Some(writer.finish()?)
    } else {
        writer.abort();
        None
    };
    Ok(Rewritten {
        output,
        partitions_read,
        partitions_kept: kept,
        bad,
    })
}

/// Makes `new` replace `old` (invariant 1). On failure the output is marked
/// obsolete so its file goes when the last reader drops.
fn install(
    table: &Table,
    old: &SSTableReader,
    new: Option<&Arc<SSTableReader>>,
    level: u32,
) -> Result<()> {
    let added: Vec<(Arc<SSTableReader>, u32)> =
        new.map(|r| (r.clone(), level)).into_iter().collect();
    table
        .replace_sstables(&[old.id()], &added)
        .inspect_err(|e| {
            // Keep the new file after an uncertain manifest commit (manifest
            // invariant 5); the next open removes it if it is not listed.
            if let (Some(r), false) = (new, matches!(e, Error::Poisoned(_))) {
                r.mark_obsolete();
            }
        })
}

/// The level of live sstable `id`, or `NotFound`.
fn live_level(table: &Table, id: u64) -> Result<u32> {
    let view = table.view();
    view.version.level_of(id).ok_or_else(|| {
        Error::NotFound(format!(
            "sstable {id} is not live in {}",
            table.dir().display()
        ))
    })
}

/// Rewrites live sstable `reader` alone, keeping the partitions whose keys `keep` accepts,
/// with the table's current compression options, at the same level; then swaps
/// it in atomically. Returns the replacement, or `None` if no partition was kept
/// (the sstable is then simply removed). Any corruption or I/O error fails the
/// rewrite and leaves the table unchanged. The core of `upgradesstables` and
/// recompression; scrub is the same with corruption salvaged.
pub fn rewrite_sstable(
    table: &Table,
    reader: &Arc<SSTableReader>,
    keep: impl FnMut(&DecoratedKey) -> bool,
) -> Result<Option<Arc<SSTableReader>>> {
    rewrite_sstable_within(table, reader, reader.file_size(), keep)
}

/// [`rewrite_sstable`], with the disk-space guard asked for `estimate_bytes`
/// (the output's expected size) instead of the input's: a recompression to a
/// tighter codec must not be refused for space its output will not take.
pub fn rewrite_sstable_within(
    table: &Table,
    reader: &Arc<SSTableReader>,
    estimate_bytes: u64,
    mut keep: impl FnMut(&DecoratedKey) -> bool,
) -> Result<Option<Arc<SSTableReader>>> {
    let level = live_level(table, reader.id())?;
    table.check_disk_space(estimate_bytes)?;
    let r = write_copy(table, reader, level, OnCorruption::Fail, &mut keep)?;
    install(table, reader, r.output.as_ref(), level)?;
    Ok(r.output)
}

/// Scrubs `table` (Cassandra's `nodetool scrub`): snapshots the live sstables
/// (only when asked), then rewrites each one alone, keeping every partition
/// that reads back intact (invariant 3), dropping and reporting unreadable runs.
/// Every sstable is rewritten, damaged or not, as Cassandra does.
pub fn scrub(table: &Table, opts: ScrubOptions) -> Result<ScrubReport> {
    let schema = table.schema();
    let mut report = ScrubReport {
        keyspace: schema.keyspace.clone(),
        table: schema.name.clone(),
        ..ScrubReport::default()
    };
    report.warnings.extend(snapshot_space_warning(table)?);
    if opts.snapshot {
        let name = format!("pre-scrub-{}", table.clock().now_micros().div_euclid(1000));
        snapshot(table, &name)?;
        report.snapshot = Some(name);
    }
    // No background compaction may replace an sstable while scrub rewrites it.
    let _pause = table.pause_compactions(std::time::Duration::from_secs(600))?;
    // The list of ids, not a view: a view keeps every reader (and so every
    // replaced file) alive until the scrub ends; fetched one at a time, each
    // input is unlinked as soon as its copy replaces it.
    let ids: Vec<u64> = table.view().version.iter().map(|e| e.id).collect();
    for id in ids {
        let found = {
            let view = table.view();
            view.version.get(id).map(|e| (e.handle.clone(), e.level))
        };
        let Some((owned, level)) = found else {
            continue; // compacted away before its turn (compactions are paused)
        };
        let reader = &owned;
        let mut entry = SSTableScrub {
            sstable_id: reader.id(),
            path: reader.path().to_path_buf(),
            level,
            new_sstable_id: None,
            partitions_kept: 0,
            partitions_dropped: 0,
            bytes_in: reader.file_size(),
            bytes_out: 0,
            bad_regions: Vec::new(),
            skipped: None,
        };
        if live_level(table, reader.id()).is_err() {
            entry.skipped = Some("no longer live (compacted meanwhile)".into());
            report.sstables.push(entry);
            continue;
        }
        table.check_disk_space(reader.file_size())?;
        let r = write_copy(table, reader, level, OnCorruption::Salvage, &mut |_| true)?;
        match install(table, reader, r.output.as_ref(), level) {
            Ok(()) => {}
            Err(Error::NotFound(why)) => {
                entry.skipped = Some(why);
                report.sstables.push(entry);
                continue;
            }
            Err(e) => return Err(e),
        }
        entry.new_sstable_id = r.output.as_ref().map(|o| o.id());
        entry.partitions_kept = r.partitions_kept;
        entry.partitions_dropped = reader
            .stats()
            .partition_count
            .saturating_sub(r.partitions_read);
        entry.bytes_out = r.output.as_ref().map_or(0, |o| o.file_size());
        entry.bad_regions = r.bad;
        report.partitions_kept += entry.partitions_kept;
        report.partitions_dropped += entry.partitions_dropped;
        report.bytes_in += entry.bytes_in;
        report.bytes_out += entry.bytes_out;
        report.sstables.push(entry);
        // The replaced input's last reader was ours: unlink it now.
        drop(owned);
        table.fs().reclaim_obsolete();
    }
    Ok(report)
}

// ---------------------------------------------------------------------------
// offline scrub of one file

/// One unusable region met by [`scrub_file`].
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DamagedRegion {
    pub offset: u64,
    pub reason: String,
}

/// What [`scrub_file`] did (`strata sstable scrub`).
#[derive(Clone, Debug, Serialize)]
pub struct FileScrubReport {
    pub input: PathBuf,
    /// The salvaged sstable; `None` when no partition was intact.
    pub output: Option<PathBuf>,
    pub generation: u64,
    pub salvage: FileSalvage,
    pub damaged_regions: Vec<DamagedRegion>,
}

/// Salvages the sstable file `input` without a table, manifest or database
/// (Cassandra's offline `sstablescrub`): every partition whose bytes are intact
/// is written to a new sstable `out_dir/strata-{generation}-Data.db` with the
/// input's identity (the new generation), codec, chunk length and encoding base.
/// Works when the tail is destroyed, for format version 2 (see
/// `sstable::salvage`). `generation` defaults to the input's own. The input is
/// only read; an existing output file is never overwritten. `now_seconds` is the
/// creation time recorded in the output (the caller's clock).
pub fn scrub_file(
    fs: &Fs,
    input: &Path,
    out_dir: &Path,
    generation: Option<u64>,
    now_seconds: i64,
) -> Result<FileScrubReport> {
    if !out_dir.is_dir() {
        return Err(Error::NotFound(format!(
            "output directory {} does not exist",
            out_dir.display()
        )));
    }
    if let Some(g) = generation {
        let out = crate::sstable::data_file_path(out_dir, g);
        if out.exists() {
            return Err(Error::AlreadyExists(format!(
                "{} exists; choose another output directory or generation",
                out.display()
            )));
        }
    }
    let tag = IoTag::new(IoCause::Recompression);
    // Pass 1 counts the intact partitions (to size the Bloom filter) and finds
    // the damage; pass 2 writes. Salvage is deterministic, so both see the same.
    let mut damaged_regions = Vec::new();
    let mut count = 0u64;
    let salvage = salvage_file(fs, input, tag, &mut |item| {
        match item {
            SalvageItem::Partition(_) => count += 1,
            SalvageItem::Damage {
                file_offset,
                reason,
            } => damaged_regions.push(DamagedRegion {
                offset: file_offset,
                reason,
            }),
        }
        Ok(())
    })?;
    let generation = match generation
        .or(salvage.identity.as_ref().map(|i| i.generation))
        .or_else(|| {
            input
                .file_name()
                .and_then(|n| parse_data_file_name(&n.to_string_lossy()))
        }) {
        Some(g) => g,
        None => {
            return Err(Error::InvalidInput(format!(
                "{} records no generation; pass one for the output",
                input.display()
            )))
        }
    };
    let out_path = crate::sstable::data_file_path(out_dir, generation);
    if out_path.exists() {
        return Err(Error::AlreadyExists(format!(
            "{} exists; choose another output directory or generation",
            out_path.display()
        )));
    }
    let mut report = FileScrubReport {
        input: input.to_path_buf(),
        output: None,
        generation,
        salvage,
        damaged_regions,
    };
    if count == 0 {
        return Ok(report);
    }
    let s = &report.salvage;
    // The salvaged copy goes to a directory of the operator's choosing, which
    // holds no dictionary: a dictionary codec is written as the same
    // compressor without one, so the copy reads on its own (and `sstable
    // import` re-encodes it with the table's settings anyway).
    let opts = crate::sstable::WriterOptions {
        compression: crate::sstable::CompressionParams {
            codec: s.codec.without_dictionary(),
            chunk_length_bytes: s.chunk_length_bytes,
            ..crate::sstable::CompressionParams::default()
        },
        expected_partitions: count,
        tag,
        base: s.base,
        creation_time_seconds: now_seconds,
        identity: s.identity.clone().map(|mut i| {
            i.generation = generation;
            i
        }),
        ..crate::sstable::WriterOptions::default()
    };
    let mut writer = SSTableWriter::create(fs, out_dir, generation, opts)?;
    salvage_file(fs, input, tag, &mut |item| match item {
        SalvageItem::Partition(p) => writer.append(&p),
        SalvageItem::Damage { .. } => Ok(()),
    })?;
    let out = writer.finish()?;
    report.output = Some(out.path().to_path_buf());
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::clock::SimClock;
    use crate::data::ClusteringRange;
    use crate::db::{Database, DbOptions};
    use crate::schema::WriteOptions;
    use crate::types::Value;
    use std::collections::BTreeSet;

    const PARTITIONS: i64 = 3000;

    fn open(dir: &Path) -> Database {
        let mut opts = DbOptions::new(SimClock::new(1_700_000_000_000_000));
        opts.commitlog = None;
        Database::open(dir, opts).expect("open")
    }

    /// One flushed sstable of `PARTITIONS` partitions in many 4 KiB chunks.
    fn table_with_one_sstable(db: &Database) -> Arc<Table> {
        let t = db
            .create_table_cql(
                "CREATE TABLE ks.t (k bigint PRIMARY KEY, v text) WITH compression = \
                 {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4}",
            )
            .expect("create");
        for i in 0..PARTITIONS {
            t.insert(
                &[
                    ("k", Value::BigInt(i)),
                    ("v", Value::Text(format!("value-{i}-{}", "x".repeat(40)))),
                ],
                &WriteOptions::default(),
            )
            .expect("insert");
        }
        t.flush().expect("flush");
        assert_eq!(t.view().sstables().len(), 1);
        t
    }

    fn flip(path: &Path, offset: u64) {
        let mut bytes = std::fs::read(path).expect("read");
        bytes[offset as usize] ^= 0x5a;
        std::fs::write(path, bytes).expect("write");
    }

    /// Keys whose point read fails on the damaged file: exactly what scrub may drop.
    fn unreadable(t: &Table) -> BTreeSet<i64> {
        let schema = t.schema();
        let s = t.view().sstables()[0].clone();
        (0..PARTITIONS)
            .filter(|&i| {
                let key = schema.decorated_key(&[Value::BigInt(i)]).expect("key");
                s.read_partition(&key, IoTag::new(IoCause::UserRead))
                    .is_err()
            })
            .collect()
    }

    fn present(t: &Table) -> BTreeSet<i64> {
        (0..PARTITIONS)
            .filter(|&i| {
                !t.select(&[Value::BigInt(i)], &ClusteringRange::ALL, false, 10)
                    .expect("select after scrub")
                    .is_empty()
            })
            .collect()
    }

    #[derive(Clone, Copy, PartialEq, Eq, Debug)]
    enum Damage {
        Chunk,
        IndexBlock,
    }

    /// Flips a byte at the first offset from `fraction` of the data region on
    /// whose damage verify reports as `kind` (a flip of the same byte undoes it).
    fn damage(t: &Table, fraction: f64, kind: Damage) -> u64 {
        let s = t.view().sstables()[0].clone();
        let region = s.stats().compressed_bytes + s.index_bytes();
        // Chunks and index blocks start after the identity header.
        let start = s.chunk_ranges()[0].0;
        let before: BTreeSet<Option<u64>> = verify(t).problems.iter().map(|p| p.offset).collect();
        let mut at = ((region as f64 * fraction) as u64).min(region - 1);
        loop {
            flip(s.path(), start + at);
            let hit = verify(t).problems.into_iter().any(|p| {
                let index = p.reason.starts_with("index block");
                !before.contains(&p.offset) && (kind == Damage::IndexBlock) == index
            });
            if hit {
                return start + at;
            }
            flip(s.path(), start + at);
            at = (at + 97) % region;
        }
    }

    /// Damages the sstable at `spots`, scrubs, and checks that scrub kept every
    /// partition a point read can still read, and with index-block damage more.
    fn scrub_after_damage(spots: &[(f64, Damage)]) {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = table_with_one_sstable(&db);
        let path = t.view().sstables()[0].path().to_path_buf();
        for &(fraction, kind) in spots {
            damage(&t, fraction, kind);
        }
        let bad = unreadable(&t);
        assert!(!bad.is_empty(), "the flips must damage something");
        let v = verify(&t);
        assert!(!v.is_clean());
        assert!(v
            .problems
            .iter()
            .all(|p| p.offset.is_some() && p.path == path));

        let report = scrub(&t, ScrubOptions { snapshot: true }).expect("scrub");
        let chunks_only = spots.iter().all(|(_, k)| *k == Damage::Chunk);
        let dropped = report.partitions_dropped;
        // Every partition a point read still finds is kept; a damaged index block
        // hides partitions from point reads that scrub still finds in the data
        // stream, so it may keep more than that, never less.
        if chunks_only {
            assert_eq!(dropped, bad.len() as u64, "{report:#?}");
        } else {
            assert!(
                dropped < bad.len() as u64,
                "{} unreadable, {report:#?}",
                bad.len()
            );
        }
        assert_eq!(report.partitions_kept, PARTITIONS as u64 - dropped);
        assert!(!report.sstables[0].bad_regions.is_empty());
        let readable: BTreeSet<i64> = (0..PARTITIONS).filter(|i| !bad.contains(i)).collect();
        let kept = present(&t);
        assert!(readable.is_subset(&kept));
        assert_eq!(kept.len() as u64, PARTITIONS as u64 - dropped);
        assert!(verify(&t).is_clean());
        let snaps = list_snapshots(&t).expect("list");
        assert_eq!(snaps.len(), 1);
        assert_eq!(Some(snaps[0].name.clone()), report.snapshot);
        assert_eq!(snaps[0].sstable_count, 1);
        assert!(
            snaps[0].true_size_bytes > 0,
            "the original is held only by the snapshot"
        );
    }

    #[test]
    fn scrub_drops_a_damaged_first_chunk_and_keeps_the_rest() {
        scrub_after_damage(&[(0.0, Damage::Chunk)]);
    }

    #[test]
    fn scrub_resyncs_after_a_damaged_chunk_in_the_middle() {
        scrub_after_damage(&[(0.5, Damage::Chunk)]);
    }

    #[test]
    fn scrub_survives_several_damaged_chunks_including_the_last() {
        scrub_after_damage(&[
            (0.2, Damage::Chunk),
            (0.21, Damage::Chunk),
            (0.6, Damage::Chunk),
            (0.999, Damage::Chunk),
        ]);
    }

    #[test]
    fn scrub_resyncs_after_a_damaged_index_block() {
        scrub_after_damage(&[(0.5, Damage::IndexBlock), (0.8, Damage::Chunk)]);
    }

    #[test]
    fn scrub_of_a_sound_table_keeps_everything_and_can_skip_the_snapshot() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = table_with_one_sstable(&db);
        let report = scrub(&t, ScrubOptions { snapshot: false }).expect("scrub");
        assert_eq!(report.partitions_kept, PARTITIONS as u64);
        assert_eq!(report.partitions_dropped, 0);
        assert!(report.snapshot.is_none());
        assert!(list_snapshots(&t).expect("list").is_empty());
        assert_eq!(present(&t).len(), PARTITIONS as usize);
        assert!(verify(&t).is_clean());
    }

    #[test]
    fn rewrite_filters_and_removes_an_sstable_left_empty() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = table_with_one_sstable(&db);
        let schema = t.schema();
        let even: BTreeSet<Vec<u8>> = (0..PARTITIONS)
            .step_by(2)
            .map(|i| {
                schema
                    .decorated_key(&[Value::BigInt(i)])
                    .expect("key")
                    .key
                    .to_vec()
            })
            .collect();
        let s = t.view().sstables()[0].clone();
        let out = rewrite_sstable(&t, &s, |k| even.contains(&k.key[..]))
            .expect("rewrite")
            .expect("some kept");
        assert_eq!(out.stats().partition_count, (PARTITIONS as u64).div_ceil(2));
        assert_eq!(present(&t).len(), ((PARTITIONS + 1) / 2) as usize);
        // The input is no longer live: a second rewrite of it is refused.
        assert!(matches!(
            rewrite_sstable(&t, &s, |_| true),
            Err(Error::NotFound(_))
        ));
        drop(s);
        assert!(rewrite_sstable(&t, &out, |_| false)
            .expect("rewrite")
            .is_none());
        assert!(t.view().sstables().is_empty());
    }

    #[test]
    fn snapshots_list_size_and_clear() {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = open(dir.path());
        let t = table_with_one_sstable(&db);
        let info = snapshot(&t, "first").expect("snapshot");
        assert_eq!(info.sstable_count, 1);
        assert!(info.size_on_disk_bytes > 0);
        // Shared with the live sstable: only the small metadata files are its own.
        let live = t.view().sstables()[0].file_size();
        assert!(info.true_size_bytes < live, "{info:?}");
        assert!(info.path.join(MANIFEST_FILE).exists());
        let cql = std::fs::read_to_string(info.path.join(SNAPSHOT_SCHEMA_FILE)).expect("cql");
        assert!(cql.starts_with("CREATE TABLE"), "{cql}");
        assert!(matches!(
            snapshot(&t, "first"),
            Err(Error::AlreadyExists(_))
        ));
        assert!(matches!(snapshot(&t, "../x"), Err(Error::InvalidInput(_))));
        // The snapshot's MANIFEST opens as a table manifest listing the sstable.
        let m = Manifest::open(t.fs(), &info.path).expect("manifest");
        assert_eq!(m.data().sstables.len(), 1);

        // Once the table drops the sstable, the snapshot holds its bytes alone.
        let s = t.view().sstables()[0].clone();
        rewrite_sstable(&t, &s, |_| false).expect("rewrite");
        drop(s);
        // Dropping the last reader only queued the file; the runtime unlinks it
        // (no compactor or flush thread runs here to do it).
        assert_eq!(t.fs().reclaim_obsolete(), 1);
        let size = snapshots_true_size_bytes(&t).expect("size");
        assert!(size >= live, "{size} < {live}");

        snapshot(&t, "second").expect("snapshot");
        assert_eq!(
            clear_snapshot(&t, Some("first")).expect("clear").cleared,
            vec!["first"]
        );
        assert!(matches!(
            clear_snapshot(&t, Some("first")),
            Err(Error::NotFound(_))
        ));
        assert_eq!(
            clear_snapshot(&t, None).expect("clear all").cleared,
            vec!["second"]
        );
        assert!(list_snapshots(&t).expect("list").is_empty());
    }

    /// Invariant 6: a link among the snapshots, or as a snapshot's temporary
    /// directory, never carries a deletion or a write outside the data
    /// directory (`clearsnapshot --all` once deleted the link's target).
    #[test]
    fn snapshot_commands_never_follow_a_link() {
        let dir = tempfile::tempdir().expect("tempdir");
        let outside = tempfile::tempdir().expect("outside");
        std::fs::write(outside.path().join("canary"), b"theirs").expect("canary");
        let db = open(&dir.path().join("db"));
        let t = table_with_one_sstable(&db);
        snapshot(&t, "real").expect("snapshot");
        let root = snapshots_dir(&t);
        std::os::unix::fs::symlink(outside.path(), root.join("evil")).expect("link");
        std::os::unix::fs::symlink(outside.path(), root.join("next.tmp")).expect("link");
        assert!(list_snapshots(&t)
            .expect("list")
            .iter()
            .all(|s| s.name == "real"));
        assert!(matches!(
            clear_snapshot(&t, Some("evil")),
            Err(Error::InvalidInput(_))
        ));
        assert!(matches!(snapshot(&t, "next"), Err(Error::InvalidInput(_))));
        let r = clear_snapshot(&t, None).expect("clear all");
        assert_eq!(r.cleared, vec!["real"]);
        assert_eq!(r.skipped.len(), 2, "{r:?}");
        assert_eq!(
            std::fs::read(outside.path().join("canary")).expect("canary"),
            b"theirs"
        );
        assert!(root.join("evil").symlink_metadata().is_ok());
        // `snapshots/` itself a link: every command refuses.
        std::fs::remove_dir_all(&root).expect("rm");
        std::os::unix::fs::symlink(outside.path(), &root).expect("link");
        assert!(snapshot(&t, "x").is_err());
        assert!(list_snapshots(&t).is_err());
        assert!(clear_snapshot(&t, None).is_err());
        assert_eq!(
            std::fs::read_dir(outside.path()).expect("ls").count(),
            1,
            "only the canary is outside"
        );
    }
}
