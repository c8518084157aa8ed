//! The manifest: a table's durable list of live sstables.
//!
//! The set of live sstables changes atomically and survives a crash at any instant
//! (DESIGN.md §4). Every change — a flush adding one sstable, a compaction
//! replacing inputs by outputs, a level move — is a [`VersionEdit`], the same edit
//! the table applies to its in-memory version; [`Manifest::commit_edit`] applies it
//! to the listed entries with the same checked function ([`Version::apply`]), then
//! writes the whole manifest to a temporary file, fsyncs it, renames it over
//! `MANIFEST` and fsyncs the directory. The rename is the commit point.
//!
//! Invariants:
//! 1. An sstable file is listed only after it has been fsynced under its final name.
//! 2. An sstable is deleted only after a manifest that no longer lists it is durable
//!    (and after the last reader drops it; see `SSTableReader::mark_obsolete`).
//! 3. On open, `*.tmp` files (never renamed, so never listed) are deleted, and
//!    sstable files the manifest does not list are *moved* to the table's
//!    `quarantine/` folder and reported, never deleted: most are outputs of a
//!    flush or compaction that crashed before its commit point, but an operator's
//!    copied-in file looks the same, and deleting on doubt once lost every sstable
//!    of a table whose manifest had gone missing (a missing manifest with sstables
//!    present now refuses to open; `strata manifest rebuild` repairs it).
//! 5. A commit that fails before its rename changed nothing (the caller may delete
//!    the files it meant to add). One that fails after it (the directory fsync)
//!    is *uncertain*: the new manifest is in place but may not survive a crash.
//!    Then nothing may be deleted — neither the files it added nor those it
//!    removed — and the manifest refuses every later change with
//!    `Error::Poisoned` until the table is reopened (a failed fsync is never
//!    retried, DESIGN.md §7). The open after that sees one of the two versions,
//!    and every file either lists is still there.
//! 4. The manifest is small (tens of bytes per sstable), so rewriting it whole is
//!    cheaper than the complexity of an append-only log at the sstable counts an
//!    LSM keeps (hundreds to a few thousand).
//!
//! 6. Each entry records enough of its file (size, a digest of its tail, token
//!    bounds; [`SSTableFacts`]) that open refuses a substitute: a file put in
//!    its place (another directory's sstable of the same name, an older copy)
//!    is set aside as unreadable, never read as the listed one. The manifest
//!    also names its table's UUID, so a manifest of another data directory's
//!    table is refused.
//! 7. A commit is made only while this process still owns the data directory
//!    (`set_owner_check`, `dirlock`) and the table directory is still the one
//!    the manifest was opened in; otherwise it is refused and the manifest
//!    poisoned (invariant 5's rule): a commit into a deleted or replaced
//!    directory would let the commit log drop records no file any longer holds.
//!
//! Layout (text, so an operator can read it): line 1 `strata-manifest v2 crc32c=<hex>`
//! (`v1` before each entry's size and digest; still read), then the JSON body
//! the checksum covers.

use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoTag, OwnerCheck};
use crate::schema::TableUuid;
use crate::version::{EditError, LiveBytes, LiveSSTable, Version, VersionEdit};
use serde::{Deserialize, Serialize};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

pub const MANIFEST_FILE: &str = "MANIFEST";
/// The largest MANIFEST read: a few hundred bytes per live sstable, so a
/// million sstables fit; a larger file is refused as corrupt before it is
/// read.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
/// Format 2: entries record their file's size and digest, and the manifest its
/// table's UUID (docs/FORMAT.md, "Manifest").
const HEADER_PREFIX: &str = "strata-manifest v2 crc32c=";
/// Format 1, still read: no size, digest or table UUID.
const HEADER_PREFIX_V1: &str = "strata-manifest v1 crc32c=";

/// A position in the commit log: everything before it is in sstables.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ReplayPosition {
    pub segment: u64,
    pub offset: u64,
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SSTableEntry {
    pub id: u64,
    /// Compaction level (0 = freshly flushed). Kept here, not only in the sstable,
    /// so a level move needs no rewrite of the file.
    pub level: u32,
    /// Token range of the sstable's partitions, inclusive. Kept here so that an
    /// sstable whose file cannot be opened still tells which reads would need it
    /// (those fail; all others are served). Absent in manifests written before
    /// 2026-11-25: such an unreadable sstable is taken to cover every token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub first_token: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_token: Option<i64>,
    /// The file's size in bytes (format 2 on; invariant 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size_bytes: Option<u64>,
    /// CRC32C of the file's tail and footer (`SSTableReader::tail_crc32c`;
    /// format 2 on; invariant 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_crc32c: Option<u32>,
    /// The blob strategy's accounting of this sstable (`compaction::live_bytes`),
    /// committed with the edit it reflects; absent when not accounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveBytes>,
}

impl SSTableEntry {
    /// An entry recording nothing of its file (tests, and manifests rebuilt from
    /// files whose facts are read at open anyway).
    pub fn new(id: u64, level: u32) -> SSTableEntry {
        SSTableEntry {
            id,
            level,
            ..SSTableEntry::default()
        }
    }

    /// The entry of an open sstable at `level`, with its facts (invariant 6).
    pub fn for_reader(reader: &crate::sstable::SSTableReader, level: u32) -> SSTableEntry {
        let mut e = SSTableEntry::new(reader.id(), level);
        e.set_facts(SSTableFacts::of(reader));
        e
    }

    /// What this entry records of its file.
    pub fn facts(&self) -> SSTableFacts {
        SSTableFacts {
            first_token: self.first_token,
            last_token: self.last_token,
            size_bytes: self.size_bytes,
            tail_crc32c: self.tail_crc32c,
        }
    }

    fn set_facts(&mut self, f: SSTableFacts) {
        self.first_token = f.first_token;
        self.last_token = f.last_token;
        self.size_bytes = f.size_bytes;
        self.tail_crc32c = f.tail_crc32c;
    }
}

/// What the manifest records of an sstable besides its id and level
/// (invariant 6): its token range, which also tells which reads need it when
/// it cannot be opened, and its size and tail digest, which tell the listed
/// file from a substitute. `None` in manifests older than the field.
///
/// Why the tail's CRC32C for a digest: open reads the tail (chunk table,
/// summary, Bloom filter, statistics) and the footer anyway, so it costs no
/// I/O, where a hash of the whole file would read every byte at every open.
/// It still covers the file's content, not only its shape: the chunk table
/// holds every chunk's compressed length, the filter every key's hash, the
/// statistics the timestamps, counts and first and last keys. Two different
/// files agree on it, on the size and on both token bounds only by a 2^-32
/// chance on top of agreeing in all of those.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SSTableFacts {
    pub first_token: Option<i64>,
    pub last_token: Option<i64>,
    pub size_bytes: Option<u64>,
    pub tail_crc32c: Option<u32>,
}

impl SSTableFacts {
    /// Every fact of an open sstable.
    pub fn of(reader: &crate::sstable::SSTableReader) -> SSTableFacts {
        SSTableFacts {
            first_token: Some(reader.first_key().token),
            last_token: Some(reader.last_key().token),
            size_bytes: Some(reader.file_size()),
            tail_crc32c: Some(reader.tail_crc32c()),
        }
    }

    /// Whether size and digest are recorded (format-2 entries).
    pub fn is_complete(&self) -> bool {
        self.size_bytes.is_some() && self.tail_crc32c.is_some()
    }

    /// Why `reader` is not the file these facts describe, naming the first
    /// difference; `None` when every recorded fact matches.
    pub fn mismatch(&self, reader: &crate::sstable::SSTableReader) -> Option<String> {
        let found = SSTableFacts::of(reader);
        let differ = |what: &str, listed: Option<String>, found: Option<String>| {
            (listed.is_some() && listed != found).then(|| {
                format!(
                    "its {what} is {}, the manifest recorded {}",
                    found.unwrap_or_default(),
                    listed.unwrap_or_default()
                )
            })
        };
        let why = differ(
            "size",
            self.size_bytes.map(|b| format!("{b} bytes")),
            found.size_bytes.map(|b| format!("{b} bytes")),
        )
        .or_else(|| {
            differ(
                "first token",
                self.first_token.map(|t| t.to_string()),
                found.first_token.map(|t| t.to_string()),
            )
        })
        .or_else(|| {
            differ(
                "last token",
                self.last_token.map(|t| t.to_string()),
                found.last_token.map(|t| t.to_string()),
            )
        })
        .or_else(|| {
            differ(
                "tail digest",
                self.tail_crc32c.map(|c| format!("{c:08x}")),
                found.tail_crc32c.map(|c| format!("{c:08x}")),
            )
        })?;
        Some(format!(
            "not the file the manifest listed under this name ({why}): a file from \
             elsewhere (another data directory, an older copy) was put in its place"
        ))
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestData {
    pub next_sstable_id: u64,
    pub sstables: Vec<SSTableEntry>,
    /// Commit-log position up to which this table's data is flushed (replay starts
    /// after it). Set when the table is created (nothing of it is before), moved
    /// by each flush; `None` only in manifests of tables created before that
    /// and never flushed since.
    pub replay_position: Option<ReplayPosition>,
    /// The table's UUID (format 2 on; invariant 6).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub table_uuid: Option<TableUuid>,
}

/// The manifest of one table directory.
#[derive(Debug)]
pub struct Manifest {
    dir: PathBuf,
    fs: Fs,
    data: ManifestData,
    /// Set when a commit failed after its rename (invariant 5): every later change
    /// is refused until the table is reopened.
    poisoned: Option<String>,
    /// Opened by a read-only database: nothing may be written.
    read_only: bool,
    /// Invariant 7: this process still owns the data directory.
    owner: Option<OwnerCheck>,
    /// `(device, inode)` of the table directory at open (invariant 7).
    dir_id: Option<(u64, u64)>,
}

impl Manifest {
    /// Whether `dir` has a manifest file at all. A table directory without one
    /// but with sstables refuses to open (docs/DURABILITY.md, "Nothing deleted on
    /// doubt"): the table layer checks this before [`Manifest::open`].
    pub fn exists(dir: &Path) -> bool {
        dir.join(MANIFEST_FILE).exists()
    }

    /// Loads the manifest of `dir` (an empty one, in memory only, if absent; the
    /// first commit writes it).
    pub fn open(fs: &Fs, dir: &Path) -> Result<Manifest> {
        let path = dir.join(MANIFEST_FILE);
        let data = if path.exists() {
            let bytes = fs.read_all(&path, MAX_MANIFEST_BYTES, IoTag::new(IoCause::Metadata))?;
            parse(&path, &bytes)?
        } else {
            ManifestData {
                next_sstable_id: 1,
                sstables: Vec::new(),
                replay_position: None,
                table_uuid: None,
            }
        };
        let dir_id = std::fs::metadata(dir).ok().map(|m| (m.dev(), m.ino()));
        Ok(Manifest {
            dir: dir.to_path_buf(),
            fs: fs.clone(),
            data,
            poisoned: None,
            read_only: false,
            owner: None,
            dir_id,
        })
    }

    /// Makes every later commit first check that this process still owns the
    /// data directory (invariant 7).
    pub fn set_owner_check(&mut self, check: OwnerCheck) {
        self.owner = Some(check);
    }

    /// Names the table's UUID (invariant 6) if the manifest names none yet;
    /// written by the next commit.
    pub fn set_table_uuid(&mut self, uuid: Option<TableUuid>) {
        if self.data.table_uuid.is_none() {
            self.data.table_uuid = uuid;
        }
    }

    /// Records what a manifest older than format 2 lacks, in one commit, if
    /// anything is missing: the table's UUID, and the facts of listed sstables
    /// whose files open and check as this table's (`facts`, by id). Entries
    /// already recorded are left as they are.
    pub fn record_missing_facts(
        &mut self,
        table_uuid: Option<TableUuid>,
        facts: &[(u64, SSTableFacts)],
    ) -> Result<()> {
        let mut next = self.data.clone();
        if next.table_uuid.is_none() {
            next.table_uuid = table_uuid;
        }
        for e in &mut next.sstables {
            if e.facts().is_complete() {
                continue;
            }
            if let Some((_, f)) = facts.iter().find(|(id, _)| *id == e.id) {
                e.set_facts(*f);
            }
        }
        if next == self.data {
            return Ok(());
        }
        self.persist(next)
    }

    /// Refuses every later change with `Error::ReadOnly` (read-only opens).
    pub fn set_read_only(&mut self) {
        self.read_only = true;
    }

    pub fn data(&self) -> &ManifestData {
        &self.data
    }

    /// Reserves an sstable id (persisted with the next commit; a crash may skip ids,
    /// never reuse one that reached a manifest).
    pub fn allocate_id(&mut self) -> u64 {
        let id = self.data.next_sstable_id;
        self.data.next_sstable_id += 1;
        id
    }

    /// Atomically applies a change: `removed` ids leave, `added` entries join, and
    /// the replay position moves forward if given. Nothing changes in memory unless
    /// the new manifest is durable. (The entry-list form of [`Manifest::commit_edit`].)
    pub fn commit(
        &mut self,
        added: &[SSTableEntry],
        removed: &[u64],
        replay: Option<ReplayPosition>,
    ) -> Result<()> {
        let mut edit = VersionEdit::new();
        for a in added {
            edit = edit.add(a.id, a.level, a.facts());
        }
        edit.removed = removed.to_vec();
        self.commit_edit(&edit, replay)
    }

    /// Changes levels without rewriting files (LCS moving a lone sstable up).
    pub fn set_levels(&mut self, levels: &[(u64, u32)]) -> Result<()> {
        let edit = VersionEdit {
            moved: levels.to_vec(),
            ..VersionEdit::new()
        };
        self.commit_edit(&edit, None)
    }

    /// Persists one edit of the live set: the very edit the table applies to its
    /// in-memory version, applied here to the listed entries by the same
    /// function ([`Version::apply`], which checks it: a removed or moved id must be
    /// listed, an added one must not be). The whole manifest is then rewritten
    /// crash-safely (invariant 4: no on-disk format change).
    pub fn commit_edit(
        &mut self,
        edit: &VersionEdit<SSTableFacts>,
        replay: Option<ReplayPosition>,
    ) -> Result<()> {
        let listed = Version::from_sstables(self.data.sstables.iter().map(|e| LiveSSTable {
            id: e.id,
            level: e.level,
            handle: e.facts(),
            live: e.live,
        }))
        .map_err(EditError::into_error)?;
        let version = listed.apply(edit).map_err(EditError::into_error)?;
        let mut next = self.data.clone();
        next.sstables = version
            .iter()
            .map(|s| {
                let mut e = SSTableEntry::new(s.id, s.level);
                e.set_facts(s.handle);
                e.live = s.live;
                e
            })
            .collect();
        for a in &edit.added {
            next.next_sstable_id = next.next_sstable_id.max(a.id + 1);
        }
        if let Some(r) = replay {
            next.replay_position = Some(next.replay_position.map_or(r, |old| old.max(r)));
        }
        self.persist(next)
    }
}

impl Manifest {
    /// Invariant 7: `Err` (and the manifest poisoned) once this process no
    /// longer owns the data directory, or the table directory was replaced.
    /// The table also asks before it creates a file (a flush): a directory
    /// path may name another process's directory by then.
    pub fn check_owned(&mut self) -> Result<()> {
        if let Some(why) = &self.poisoned {
            return Err(Error::Poisoned(why.clone()));
        }
        let lost = match self.owner.as_ref().map(|o| o.check()) {
            Some(Err(Error::Poisoned(why))) => Some(why),
            Some(Err(e)) => Some(e.to_string()),
            _ => None,
        };
        let lost = lost.or_else(|| {
            let now = std::fs::metadata(&self.dir)
                .ok()
                .map(|m| (m.dev(), m.ino()));
            (self.dir_id.is_some() && now != self.dir_id).then(|| {
                format!(
                    "table directory {} was deleted or replaced while this process owned it: \
                     a commit there would let the commit log drop records no file holds any \
                     more, so this table refuses every further change; restart the process \
                     on the data directory",
                    self.dir.display()
                )
            })
        });
        match lost {
            None => Ok(()),
            Some(why) => {
                self.poisoned = Some(why.clone());
                Err(Error::Poisoned(why))
            }
        }
    }

    /// Writes `next` durably and adopts it (module docs, invariant 5).
    fn persist(&mut self, next: ManifestData) -> Result<()> {
        if let Some(why) = &self.poisoned {
            return Err(Error::Poisoned(why.clone()));
        }
        if self.read_only {
            return Err(Error::ReadOnly(format!(
                "the manifest of {} cannot change: the database was opened read-only",
                self.dir.display()
            )));
        }
        self.check_owned()?;
        let path = self.dir.join(MANIFEST_FILE);
        let tmp = crate::fs::tmp_path(&path);
        let bytes = render(&next)?;
        let written = (|| {
            let mut f = self.fs.create(&tmp, IoTag::new(IoCause::Metadata), None)?;
            f.write_all(&bytes)?;
            f.sync()?;
            self.fs.rename(&tmp, &path)
        })();
        if let Err(e) = written {
            // Not renamed: the manifest on disk is still the old one, nothing changed.
            let _ = self.fs.remove(&tmp);
            return Err(e);
        }
        if let Err(e) = self.fs.sync_dir(&self.dir) {
            let why = format!(
                "manifest {} was renamed into place but the directory fsync failed ({e}); whether the change \
                 survives a crash is unknown, so this table refuses further changes until it is reopened",
                path.display()
            );
            self.poisoned = Some(why.clone());
            return Err(Error::Poisoned(why));
        }
        self.data = next;
        Ok(())
    }
}

fn render(data: &ManifestData) -> Result<Vec<u8>> {
    let body = serde_json::to_vec_pretty(data)
        .map_err(|e| Error::InvalidInput(format!("manifest serialization failed: {e}")))?;
    let mut out = format!("{HEADER_PREFIX}{:08x}\n", crc32c::crc32c(&body)).into_bytes();
    out.extend_from_slice(&body);
    Ok(out)
}

fn parse(path: &Path, bytes: &[u8]) -> Result<ManifestData> {
    let nl = bytes
        .iter()
        .position(|&b| b == b'\n')
        .ok_or_else(|| Error::corruption(path, 0, "manifest has no header line"))?;
    let header = std::str::from_utf8(&bytes[..nl])
        .map_err(|_| Error::corruption(path, 0, "manifest header is not UTF-8"))?;
    let crc_hex = header
        .strip_prefix(HEADER_PREFIX)
        .or_else(|| header.strip_prefix(HEADER_PREFIX_V1))
        .ok_or_else(|| Error::corruption(path, 0, format!("unknown manifest header '{header}'")))?;
    let expected = u32::from_str_radix(crc_hex, 16)
        .map_err(|_| Error::corruption(path, 0, "bad manifest checksum field"))?;
    let body = &bytes[nl + 1..];
    let actual = crc32c::crc32c(body);
    if actual != expected {
        return Err(Error::corruption(
            path,
            (nl + 1) as u64,
            format!("manifest checksum mismatch: stored {expected:08x}, computed {actual:08x}"),
        ));
    }
    serde_json::from_slice(body)
        .map_err(|e| Error::corruption(path, (nl + 1) as u64, format!("manifest JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn commit_is_durable_and_reloads() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let mut m = Manifest::open(&fs, dir.path()).unwrap();
        let a = m.allocate_id();
        let b = m.allocate_id();
        m.commit(
            &[SSTableEntry::new(a, 0)],
            &[],
            Some(ReplayPosition {
                segment: 1,
                offset: 10,
            }),
        )
        .unwrap();
        m.commit(&[SSTableEntry::new(b, 1)], &[a], None).unwrap();
        let reloaded = Manifest::open(&fs, dir.path()).unwrap();
        assert_eq!(reloaded.data().sstables, vec![SSTableEntry::new(b, 1)]);
        assert_eq!(
            reloaded.data().replay_position,
            Some(ReplayPosition {
                segment: 1,
                offset: 10
            })
        );
        assert!(reloaded.data().next_sstable_id > b);
        assert!(!dir.path().join("MANIFEST.tmp").exists());
    }

    #[test]
    fn failed_commit_changes_nothing() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let mut m = Manifest::open(&fs, dir.path()).unwrap();
        m.commit(&[SSTableEntry::new(1, 0)], &[], None).unwrap();
        fs.faults().inject("MANIFEST", crate::fs::Fault::NoSpace, 1);
        assert!(m.commit(&[SSTableEntry::new(2, 0)], &[1], None).is_err());
        assert_eq!(m.data().sstables, vec![SSTableEntry::new(1, 0)]);
        let reloaded = Manifest::open(&fs, dir.path()).unwrap();
        assert_eq!(reloaded.data().sstables, vec![SSTableEntry::new(1, 0)]);
    }

    #[test]
    fn edits_are_checked_against_the_listed_sstables() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let mut m = Manifest::open(&fs, dir.path()).unwrap();
        m.commit(
            &[SSTableEntry::new(1, 0), SSTableEntry::new(2, 0)],
            &[],
            None,
        )
        .unwrap();
        let on_disk = || std::fs::read(dir.path().join(MANIFEST_FILE)).unwrap();
        let before = on_disk();
        // Removing or moving an unlisted sstable, or adding a listed one, is
        // refused before anything is written (the same check the table's
        // version makes: one function).
        assert!(matches!(m.commit(&[], &[9], None), Err(Error::NotFound(_))));
        assert!(matches!(m.set_levels(&[(9, 1)]), Err(Error::NotFound(_))));
        assert!(matches!(
            m.commit(&[SSTableEntry::new(2, 1)], &[], None),
            Err(Error::InvalidInput(_))
        ));
        assert_eq!(on_disk(), before);
        // A valid edit: remove, add and move in one commit.
        let facts = SSTableFacts {
            first_token: Some(-5),
            last_token: Some(5),
            size_bytes: Some(4096),
            tail_crc32c: Some(0xdead_beef),
        };
        let edit = VersionEdit::new().remove(1).add(3, 1, facts).move_to(2, 2);
        m.commit_edit(&edit, None).unwrap();
        let reloaded = Manifest::open(&fs, dir.path()).unwrap();
        assert_eq!(
            reloaded.data().sstables,
            vec![
                SSTableEntry::new(2, 2),
                SSTableEntry {
                    id: 3,
                    level: 1,
                    first_token: Some(-5),
                    last_token: Some(5),
                    size_bytes: Some(4096),
                    tail_crc32c: Some(0xdead_beef),
                    live: None,
                }
            ]
        );
        assert_eq!(reloaded.data().next_sstable_id, 4);
    }

    #[test]
    fn directory_fsync_failure_poisons_and_keeps_the_new_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let mut m = Manifest::open(&fs, dir.path()).unwrap();
        m.commit(&[SSTableEntry::new(1, 0)], &[], None).unwrap();
        // Let the manifest file's own fsync through, fail the directory's.
        let dir_name = dir.path().to_string_lossy().into_owned();
        fs.faults()
            .inject_after(&dir_name, crate::fs::Fault::SyncError, 1, 1);
        let err = m
            .commit(&[SSTableEntry::new(2, 0)], &[1], None)
            .unwrap_err();
        assert!(matches!(err, Error::Poisoned(_)), "{err}");
        // The rename happened: the disk has the new version, memory the old one.
        assert_eq!(
            Manifest::open(&fs, dir.path()).unwrap().data().sstables,
            vec![SSTableEntry::new(2, 0)]
        );
        assert_eq!(m.data().sstables, vec![SSTableEntry::new(1, 0)]);
        // Every later change is refused until reopen.
        let again = m.commit(&[SSTableEntry::new(3, 0)], &[], None).unwrap_err();
        assert!(matches!(again, Error::Poisoned(_)), "{again}");
        assert!(matches!(m.set_levels(&[(1, 1)]), Err(Error::Poisoned(_))));
    }

    #[test]
    fn bit_flip_is_detected() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let mut m = Manifest::open(&fs, dir.path()).unwrap();
        m.commit(&[SSTableEntry::new(7, 0)], &[], None).unwrap();
        let p = dir.path().join(MANIFEST_FILE);
        let mut bytes = std::fs::read(&p).unwrap();
        let i = bytes.len() - 5;
        bytes[i] ^= 0x04;
        std::fs::write(&p, bytes).unwrap();
        let err = Manifest::open(&fs, dir.path()).unwrap_err();
        assert!(matches!(err, Error::Corruption { .. }), "{err}");
    }
}
