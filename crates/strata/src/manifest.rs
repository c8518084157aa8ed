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
//! Layout (text, so an operator can read it): line 1 `strata-manifest v1 crc32c=<hex>`,
//! then the JSON body the checksum covers.

use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoTag};
use crate::version::{EditError, LiveBytes, LiveSSTable, Version, VersionEdit};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

pub const MANIFEST_FILE: &str = "MANIFEST";
/// The largest MANIFEST read: a few hundred bytes per live sstable, so a
/// million sstables fit; a larger file is refused as corrupt before it is
/// read.
pub const MAX_MANIFEST_BYTES: u64 = 256 << 20;
const HEADER_PREFIX: &str = "strata-manifest v1 crc32c=";

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
    /// The blob strategy's accounting of this sstable (`compaction::live_bytes`),
    /// committed with the edit it reflects; absent when not accounted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub live: Option<LiveBytes>,
}

impl SSTableEntry {
    /// An entry without a recorded token range (tests, and manifests rebuilt from
    /// files whose range is read at open anyway).
    pub fn new(id: u64, level: u32) -> SSTableEntry {
        SSTableEntry {
            id,
            level,
            first_token: None,
            last_token: None,
            live: None,
        }
    }

    /// The entry of an open sstable at `level`, with its token range.
    pub fn for_reader(reader: &crate::sstable::SSTableReader, level: u32) -> SSTableEntry {
        SSTableEntry {
            id: reader.id(),
            level,
            first_token: Some(reader.first_key().token),
            last_token: Some(reader.last_key().token),
            live: None,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ManifestData {
    pub next_sstable_id: u64,
    pub sstables: Vec<SSTableEntry>,
    /// Commit-log position up to which this table's data is flushed (replay starts
    /// after it). `None` until the first flush.
    pub replay_position: Option<ReplayPosition>,
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
            }
        };
        Ok(Manifest {
            dir: dir.to_path_buf(),
            fs: fs.clone(),
            data,
            poisoned: None,
            read_only: false,
        })
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
            edit = edit.add(a.id, a.level, tokens_of(a));
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
        edit: &VersionEdit<ManifestTokens>,
        replay: Option<ReplayPosition>,
    ) -> Result<()> {
        let listed = Version::from_sstables(self.data.sstables.iter().map(|e| LiveSSTable {
            id: e.id,
            level: e.level,
            handle: tokens_of(e),
            live: e.live,
        }))
        .map_err(EditError::into_error)?;
        let version = listed.apply(edit).map_err(EditError::into_error)?;
        let mut next = self.data.clone();
        next.sstables = version
            .iter()
            .map(|s| SSTableEntry {
                id: s.id,
                level: s.level,
                first_token: s.handle.0,
                last_token: s.handle.1,
                live: s.live,
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

/// What the manifest records of an sstable besides its id and level: its token
/// range (`None` in manifests older than the field).
pub type ManifestTokens = (Option<i64>, Option<i64>);

fn tokens_of(e: &SSTableEntry) -> ManifestTokens {
    (e.first_token, e.last_token)
}

impl Manifest {
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
        let edit = VersionEdit::new()
            .remove(1)
            .add(3, 1, (Some(-5), Some(5)))
            .move_to(2, 2);
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
