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

use crate::error::Result;
use crate::fs::Fs;
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
    let qdir = table_dir.join(QUARANTINE_DIR);
    fs.create_dir_all(&qdir)?;
    let mut target = qdir.join(name);
    let mut n = 1;
    while target.exists() {
        target = qdir.join(format!("{name}.{n}"));
        n += 1;
    }
    fs.rename(&table_dir.join(name), &target)?;
    fs.sync_dir(&qdir)?;
    fs.sync_dir(table_dir)?;
    Ok(target)
}

/// The files in a table's quarantine, by name.
pub fn list(fs: &Fs, table_dir: &Path) -> Result<Vec<QuarantinedFile>> {
    let qdir = table_dir.join(QUARANTINE_DIR);
    if !qdir.is_dir() {
        return Ok(Vec::new());
    }
    let mut out = Vec::new();
    for name in fs.list_dir(&qdir)? {
        let path = qdir.join(&name);
        // A file purged between listing and sizing holds nothing.
        let size_bytes = fs.file_len(&path).unwrap_or(0);
        out.push(QuarantinedFile { path, size_bytes });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(out)
}

/// Deletes every file in a table's quarantine (the operator's decision,
/// invariant 2). Returns what was removed.
pub fn purge(fs: &Fs, table_dir: &Path) -> Result<Vec<QuarantinedFile>> {
    let files = list(fs, table_dir)?;
    for f in &files {
        fs.remove(&f.path)?;
    }
    if !files.is_empty() {
        fs.sync_dir(&table_dir.join(QUARANTINE_DIR))?;
    }
    Ok(files)
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
        assert_eq!(purge(&fs, dir.path()).unwrap().len(), 2);
        assert!(list(&fs, dir.path()).unwrap().is_empty());
    }
}
