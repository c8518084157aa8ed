//! Quarantine: where files that a table's manifest does not explain go, instead
//! of being deleted.
//!
//! Owns: `<table_dir>/quarantine/`, one folder per table.
//!
//! Why: "unlisted means garbage" was true of a crashed flush's output, and false
//! of an sstable an operator copied in to restore, or of every sstable of a table
//! whose manifest had been lost. The engine cannot tell these apart with
//! certainty, so it keeps them all out of the live set and out of the way, and
//! tells the operator, who restores (`strata sstable import`) or purges
//! (`strata quarantine purge`).
//!
//! Threads: called by `Table::open` (single-threaded, before the table serves
//! anything) and by the operator commands, which hold the data directory's lock.
//!
//! Invariants:
//! 1. A quarantined file is moved by `rename` within the table directory (the
//!    same file system, so it is atomic and copies nothing); both directories are
//!    fsynced before the move is reported, so a crash leaves the file in exactly
//!    one of the two places.
//! 2. Nothing under `quarantine/` is ever read, listed as live or deleted by the
//!    engine; only `purge` (an explicit operator command) deletes there.
//! 3. A name already taken in the quarantine gets a `.N` suffix: two files that
//!    were once `strata-7-Data.db` (two crashes at the same id) both survive.
//! 4. No link is followed: `quarantine/` must be a real directory (a link in
//!    its place is refused, so nothing is moved out of the data directory
//!    through it or purged from its target), and `purge` deletes regular files
//!    only, leaving anything else (a link, a directory) where it is, reported.

use crate::error::{Error, Result};
use crate::fs::{link_refused, EntryKind, Fs};
use serde::Serialize;
use std::path::{Path, PathBuf};

pub const QUARANTINE_DIR: &str = "quarantine";

/// One file in a table's quarantine.
#[derive(Clone, Debug, Serialize)]
pub struct QuarantinedFile {
    pub path: PathBuf,
    pub size_bytes: u64,
}

/// Moves `<table_dir>/<name>` into the quarantine (invariants 1 and 3) and returns
/// its new path.
pub fn quarantine_file(fs: &Fs, table_dir: &Path, name: &str) -> Result<PathBuf> {
    let qdir = quarantine_dir(fs, table_dir)?;
    fs.create_dir_all(&qdir)?;
    let mut target = qdir.join(name);
    let mut n = 1;
    while fs.entry_kind(&target)?.is_some() {
        target = qdir.join(format!("{name}.{n}"));
        n += 1;
    }
    fs.rename(&table_dir.join(name), &target)?;
    fs.sync_dir(&qdir)?;
    fs.sync_dir(table_dir)?;
    tracing::warn!(
        target: "strata::quarantine",
        file = %table_dir.join(name).display(),
        to = %target.display(),
        "moved {name} into quarantine"
    );
    Ok(target)
}

/// `<table_dir>/quarantine`, refused when it exists as anything but a
/// directory (invariant 4).
fn quarantine_dir(fs: &Fs, table_dir: &Path) -> Result<PathBuf> {
    let qdir = table_dir.join(QUARANTINE_DIR);
    match fs.entry_kind(&qdir)? {
        None | Some(EntryKind::Dir) => Ok(qdir),
        Some(EntryKind::Symlink) => Err(link_refused(&qdir)),
        Some(kind) => Err(Error::InvalidInput(format!(
            "{} is {}, not the quarantine directory",
            qdir.display(),
            kind.describe()
        ))),
    }
}

/// The regular files in a table's quarantine, by name, and the other
/// entries there (links, directories), which are not the engine's.
fn entries(fs: &Fs, table_dir: &Path) -> Result<(Vec<QuarantinedFile>, Vec<PathBuf>)> {
    let qdir = quarantine_dir(fs, table_dir)?;
    let (mut files, mut others) = (Vec::new(), Vec::new());
    for (name, kind) in fs.list_dir_kinds(&qdir)? {
        let path = qdir.join(&name);
        if kind != EntryKind::File {
            others.push(path);
            continue;
        }
        // A file purged between listing and sizing holds nothing.
        let size_bytes = fs.file_len(&path).unwrap_or(0);
        files.push(QuarantinedFile { path, size_bytes });
    }
    Ok((files, others))
}

/// The files in a table's quarantine, by name (regular files: a link or a
/// directory there is no quarantined file).
pub fn list(fs: &Fs, table_dir: &Path) -> Result<Vec<QuarantinedFile>> {
    entries(fs, table_dir).map(|(files, _)| files)
}

/// What [`purge`] did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Purged {
    pub deleted: Vec<QuarantinedFile>,
    /// Entries left in place: links and directories (invariant 4).
    pub kept: Vec<PathBuf>,
}

/// Deletes every regular file in a table's quarantine (the operator's
/// decision, invariant 2); anything else is kept and reported (invariant 4).
pub fn purge(fs: &Fs, table_dir: &Path) -> Result<Purged> {
    let (files, kept) = entries(fs, table_dir)?;
    for f in &files {
        fs.remove(&f.path)?;
    }
    if !files.is_empty() {
        fs.sync_dir(&table_dir.join(QUARANTINE_DIR))?;
    }
    Ok(Purged {
        deleted: files,
        kept,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quarantine_keeps_both_files_of_one_name_and_purge_empties_it() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        for body in [&b"first"[..], &b"second"[..]] {
            std::fs::write(dir.path().join("strata-7-Data.db"), body).unwrap();
            quarantine_file(&fs, dir.path(), "strata-7-Data.db").unwrap();
        }
        assert!(!dir.path().join("strata-7-Data.db").exists());
        let files = list(&fs, dir.path()).unwrap();
        let mut bodies: Vec<Vec<u8>> = files
            .iter()
            .map(|f| std::fs::read(&f.path).unwrap())
            .collect();
        bodies.sort();
        assert_eq!(bodies, vec![b"first".to_vec(), b"second".to_vec()]);
        assert_eq!(purge(&fs, dir.path()).unwrap().deleted.len(), 2);
        assert!(list(&fs, dir.path()).unwrap().is_empty());
    }

    /// Invariant 4: a link as the quarantine, or in it, carries nothing out of
    /// the data directory and nothing is purged through it.
    #[test]
    fn links_are_neither_followed_nor_purged() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        std::fs::write(outside.path().join("canary"), b"theirs").unwrap();
        let fs = Fs::new();
        fs.confine(dir.path());
        let q = dir.path().join(QUARANTINE_DIR);
        std::os::unix::fs::symlink(outside.path(), &q).unwrap();
        std::fs::write(dir.path().join("strata-7-Data.db"), b"unlisted").unwrap();
        assert!(quarantine_file(&fs, dir.path(), "strata-7-Data.db").is_err());
        assert!(purge(&fs, dir.path()).is_err());
        assert!(dir.path().join("strata-7-Data.db").exists());
        std::fs::remove_file(&q).unwrap();
        std::fs::create_dir(&q).unwrap();
        std::os::unix::fs::symlink(outside.path().join("canary"), q.join("strata-8-Data.db"))
            .unwrap();
        let purged = purge(&fs, dir.path()).unwrap();
        assert!(purged.deleted.is_empty());
        assert_eq!(purged.kept, vec![q.join("strata-8-Data.db")]);
        assert_eq!(
            std::fs::read(outside.path().join("canary")).unwrap(),
            b"theirs"
        );
    }
}
