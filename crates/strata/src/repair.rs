//! Operator repairs of a data directory that open refuses to guess about, and the
//! explicit adoption of sstables from elsewhere.
//!
//! Owns: [`rebuild_manifest`] (`strata manifest rebuild`), [`import_sstables`]
//! (`strata sstable import`, Cassandra's `nodetool import`).
//!
//! Why these are commands and not open-time behaviour: a missing manifest, or a
//! file nobody listed, has several possible stories (a crash, a restore, an
//! operator's mistake), and only the operator knows which. Open refuses or
//! quarantines and says which command settles it (docs/DURABILITY.md, "Nothing
//! deleted on doubt").
//!
//! Threads: [`rebuild_manifest`] runs without a `Database`, holding the data
//! directory's lock itself; [`import_sstables`] runs on an open table while it
//! serves reads and writes.
//!
//! Invariants:
//! 1. A rebuild lists only files that open, verify their identity against the
//!    schema, and do not overlap another sstable of the level they are put in
//!    (level > 0 files that overlap are put in level 0, which allows overlap);
//!    every other file goes to the quarantine, none is deleted.
//! 2. A rebuilt manifest has no replay position, so the next open replays the
//!    whole commit log into the table: replaying records whose data is already
//!    in sstables reconciles to the same data, so this can only add what was
//!    missing, never lose or resurrect anything.
//! 3. An import adopts a file only after every partition in it has been read and
//!    verified and its columns match the table's; it is copied into a new sstable
//!    of this table (its own identity, a fresh id) and listed in one manifest
//!    commit, so a crash leaves the table as it was or with the file adopted.

use crate::db::DbOptions;
use crate::dirlock::DirLock;
use crate::error::{Error, Result};
use crate::fs::{EntryKind, IoCause, IoTag};
use crate::manifest::{Manifest, SSTableEntry};
use crate::sstable::{parse_data_file_name, SSTableReader, SSTableWriter};
use crate::table::Table;
use serde::Serialize;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// What [`rebuild_manifest`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RebuildReport {
    pub table: String,
    /// `(id, level)` of every sstable listed in the new manifest.
    pub listed: Vec<(u64, u32)>,
    /// Sstables whose recorded level overlapped another at that level: listed in
    /// level 0 instead (invariant 1).
    pub moved_to_level_0: Vec<u64>,
    /// Files that could not be listed, with the reason; now in the quarantine.
    pub quarantined: Vec<(PathBuf, String)>,
}

/// Rebuilds the missing manifest of `keyspace.table` from the sstables' own
/// metadata (module invariants 1 and 2). Refuses when a manifest exists.
pub fn rebuild_manifest(
    data_dir: &Path,
    opts: &DbOptions,
    keyspace: &str,
    table: &str,
) -> Result<RebuildReport> {
    let _lock = DirLock::acquire(data_dir, &opts.purpose)?;
    let fs = &opts.fs;
    // Nothing below the data directory is changed through a link (fs
    // invariant 6), as by an open.
    fs.confine(data_dir);
    let catalog = crate::db::load_catalog(fs, data_dir)?;
    let schema = catalog.table(keyspace, table)?.clone();
    let dir = data_dir.join(keyspace).join(table);
    for d in [data_dir.join(keyspace), dir.clone()] {
        if fs.entry_kind(&d)? == Some(EntryKind::Symlink) {
            return Err(crate::fs::link_refused(&d));
        }
    }
    if Manifest::exists(&dir) {
        return Err(Error::InvalidInput(format!(
            "{} has a MANIFEST: there is nothing to rebuild (files it does not list are \
             quarantined at open and can be adopted with `strata sstable import`)",
            dir.display()
        )));
    }
    let mut report = RebuildReport {
        table: schema.qualified_name(),
        ..RebuildReport::default()
    };
    let mut found: Vec<(Arc<SSTableReader>, u32)> = Vec::new();
    for (name, kind) in fs.list_dir_kinds(&dir)? {
        let Some(id) = parse_data_file_name(&name) else {
            continue;
        };
        let path = dir.join(&name);
        // A table's sstables are files in its directory: a link (to a file
        // anywhere) is set aside with the rest that cannot be listed.
        let opened = if kind == EntryKind::Symlink {
            Err(Error::InvalidInput(format!(
                "{} is a symbolic link, not a file of this table",
                path.display()
            )))
        } else {
            SSTableReader::open(fs, &path, id, None)
                .and_then(|r| crate::table::check_identity(&schema, &r, Some(id)).map(|()| r))
        };
        match opened {
            Ok(r) => {
                let level = r.stats().level;
                found.push((r, level));
            }
            Err(e) => {
                let to = crate::quarantine::quarantine_file(fs, &dir, &name)?;
                report.quarantined.push((to, e.to_string()));
            }
        }
    }
    // Invariant 1: within a level above 0, key ranges must not overlap.
    found.sort_by(|(a, la), (b, lb)| la.cmp(lb).then_with(|| a.first_key().cmp(b.first_key())));
    let mut entries = Vec::with_capacity(found.len());
    let mut last_in_level: Option<(u32, crate::data::DecoratedKey)> = None;
    for (r, level) in &found {
        let mut level = *level;
        if level > 0 {
            let overlaps =
                matches!(&last_in_level, Some((l, last)) if *l == level && r.first_key() <= last);
            if overlaps {
                report.moved_to_level_0.push(r.id());
                level = 0;
            } else {
                last_in_level = Some((level, r.last_key().clone()));
            }
        }
        entries.push(SSTableEntry::for_reader(r, level));
    }
    entries.sort_by_key(|e| e.id);
    report.listed = entries.iter().map(|e| (e.id, e.level)).collect();
    let mut manifest = Manifest::open(fs, &dir)?;
    manifest.set_table_uuid(schema.table_uuid());
    manifest.commit(&entries, &[], None)?;
    Ok(report)
}

/// What [`import_sstables`] adopted.
#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportReport {
    pub table: String,
    /// `(source file, new sstable id, partitions)` per adopted file.
    pub imported: Vec<(PathBuf, u64, u64)>,
}

/// Adopts sstable files into `table` (module invariant 3). All files are checked
/// before any is adopted, so a refusal changes nothing. A file taken from the
/// table's own quarantine is removed from there once adopted; any other source
/// file is left where it is.
pub fn import_sstables(table: &Arc<Table>, paths: &[PathBuf]) -> Result<ImportReport> {
    if table.is_read_only() {
        return Err(Error::ReadOnly(
            "import needs the data directory's owner".into(),
        ));
    }
    let schema = table.schema();
    let fs = table.fs();
    let tag = IoTag::new(IoCause::Recompression);
    let mut checked = Vec::with_capacity(paths.len());
    for path in paths {
        let reader = SSTableReader::open(fs, path, source_id(path), None)?;
        crate::table::check_identity(&schema, &reader, None)?;
        // Read every partition before adopting anything: a damaged file is
        // refused whole (salvage it first with `strata sstable scrub`). Row
        // by row, so that a partition of gigabytes is not held whole.
        let mut partitions = 0u64;
        let mut scan = reader.scan_rows(tag)?;
        while scan.next_partition()?.is_some() {
            while scan.next_row()?.is_some() {}
            partitions += 1;
        }
        checked.push((path.clone(), reader, partitions));
    }
    let mut report = ImportReport {
        table: schema.qualified_name(),
        imported: Vec::new(),
    };
    for (path, reader, partitions) in checked {
        let st = reader.stats();
        table.check_disk_space(reader.file_size())?;
        let id = table.allocate_sstable_id();
        let opts = table.writer_options(id, 0, tag, st.base, st.partition_count);
        let mut writer = SSTableWriter::create(fs, table.dir(), id, opts)?;
        // On an error the writer is dropped, which removes its file.
        let mut scan = reader.scan_rows(tag)?;
        while let Some(head) = scan.next_partition()? {
            writer.begin_partition(head.key, head.deletion, head.static_row)?;
            while let Some(row) = scan.next_row()? {
                writer.append_row(row)?;
            }
            writer.end_partition()?;
        }
        let new = writer.finish()?;
        if let Err(e) = table.replace_sstables(&[], &[(new.clone(), 0)]) {
            if !matches!(e, Error::Poisoned(_)) {
                new.mark_obsolete();
            }
            return Err(e);
        }
        // Only a regular file in the quarantine is removed once adopted; a
        // link there keeps its place (and its target is never touched).
        let quarantine = table.dir().join(crate::quarantine::QUARANTINE_DIR);
        if path.parent() == Some(quarantine.as_path())
            && fs.entry_kind(&path)? == Some(EntryKind::File)
        {
            fs.remove(&path)?;
        }
        report.imported.push((path, id, partitions));
    }
    table.wake_compaction();
    Ok(report)
}

/// The id in a source file's name (`strata-7-Data.db`, or `strata-7-Data.db.2` as
/// the quarantine renames a second file of one name); 0 when it has none. Used in
/// messages only: the adopted copy gets a fresh id.
fn source_id(path: &Path) -> u64 {
    let name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let base = match name.rsplit_once('.') {
        Some((b, n)) if !n.is_empty() && n.bytes().all(|c| c.is_ascii_digit()) => b,
        _ => &name[..],
    };
    parse_data_file_name(base).unwrap_or(0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn source_ids_survive_quarantine_suffixes() {
        assert_eq!(source_id(Path::new("/x/strata-7-Data.db")), 7);
        assert_eq!(source_id(Path::new("/x/strata-7-Data.db.2")), 7);
        assert_eq!(source_id(Path::new("/x/other.bin")), 0);
    }
}
