//! Where an experiment may write: a work directory of its own, and the report
//! files the operator named.
//!
//! Owns: [`WorkDir`], the fresh directory an experiment runs in (created by
//! the run and removed by it, never one that existed before), and
//! [`write_new_or_regular`], the one way an experiment writes a file the
//! operator named (`--json FILE`, the charts of `--charts DIR`).
//!
//! Why: `bench slice --dir D` once used `D` itself as its work directory and
//! removed it at the end, with everything the operator had in it, even when
//! its arguments were refused. A tool deletes only what it created; so an
//! experiment makes a new directory under the one it is given, refuses nothing
//! on the way but its own name clash, and removes only that.
//!
//! Threads: a `WorkDir` belongs to the run that created it; the functions are
//! free of shared state.
//!
//! Invariants:
//! 1. [`WorkDir::create`] makes a directory that did not exist (`mkdir`, not
//!    "create if missing"): a name already taken, by anything (a kept earlier
//!    run, a file, a symbolic link), is skipped for the next suffix, so the
//!    run never adopts, and so never removes, what it did not make.
//! 2. A `WorkDir` is removed when dropped (the run ended, failed or panicked)
//!    unless [`WorkDir::keep`] was called; removal does not follow symbolic
//!    links (`std::fs::remove_dir_all`), so a link the run met inside stays a
//!    link and its target is untouched.
//! 3. Callers validate their arguments before creating a `WorkDir`: refused
//!    arguments touch nothing on disk.
//! 4. [`write_new_or_regular`] never writes through a symbolic link or into a
//!    device, FIFO or socket: it opens with `O_NOFOLLOW` and refuses anything
//!    but a regular file.

use std::fs::OpenOptions;
use std::io::Write;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use strata::{Error, Result};

/// Name clashes tried before giving up (invariant 1); each needs a directory
/// of this process's name already present, so more means something is wrong.
const MAX_NAME_ATTEMPTS: u32 = 1000;

/// A fresh directory of one experiment run (module invariants 1-2).
#[derive(Debug)]
pub struct WorkDir {
    path: PathBuf,
    keep: bool,
}

impl WorkDir {
    /// Creates `strata-bench-<name>-<pid>` (or `...-<pid>-<n>` when that is
    /// taken) under `parent`, creating `parent` if it is missing (a missing
    /// parent is left behind at the end: only the work directory is the
    /// run's).
    pub fn create(parent: &Path, name: &str) -> Result<WorkDir> {
        std::fs::create_dir_all(parent).map_err(|e| Error::io(parent, e))?;
        let base = format!("strata-bench-{name}-{}", std::process::id());
        for n in 0..MAX_NAME_ATTEMPTS {
            let path = match n {
                0 => parent.join(&base),
                n => parent.join(format!("{base}-{n}")),
            };
            match std::fs::create_dir(&path) {
                Ok(()) => return Ok(WorkDir { path, keep: false }),
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(Error::io(&path, e)),
            }
        }
        Err(Error::InvalidInput(format!(
            "{} holds {MAX_NAME_ATTEMPTS} directories named {base}*: remove them or choose \
             another --dir",
            parent.display()
        )))
    }

    /// A work directory under `parent` when given, else under /dev/shm when
    /// present (the experiments that measure bytes and counts: tmpfs keeps
    /// fsyncs out of the way), else the system temp directory.
    pub fn create_in_memory_default(parent: Option<&Path>, name: &str) -> Result<WorkDir> {
        let default = if Path::new("/dev/shm").is_dir() {
            PathBuf::from("/dev/shm")
        } else {
            std::env::temp_dir()
        };
        WorkDir::create(parent.unwrap_or(&default), name)
    }

    /// A work directory under `parent` when given, else the system temp
    /// directory (the experiments whose figures are about disk I/O).
    pub fn create_on_disk_default(parent: Option<&Path>, name: &str) -> Result<WorkDir> {
        WorkDir::create(parent.unwrap_or(&std::env::temp_dir()), name)
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Leaves the directory in place when the run ends (`--keep`).
    pub fn keep(&mut self) {
        self.keep = true;
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        if !self.keep {
            // A failed removal only leaves the run's own files behind.
            let _ = std::fs::remove_dir_all(&self.path);
        }
    }
}

/// Writes `bytes` to `path`, creating it or replacing the contents of the
/// regular file there (module invariant 4): the report files (`--json`,
/// `--csv`) and charts the operator asked for.
pub fn write_new_or_regular(path: &Path, bytes: &[u8]) -> Result<()> {
    let refuse = |what: &str| {
        Error::InvalidInput(format!(
            "{} is {what}: reports are written only to a new or regular file, never \
             through a link or into a device",
            path.display()
        ))
    };
    let mut file = OpenOptions::new()
        .write(true)
        .create(true)
        // Truncate only once it is known to be a regular file.
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => refuse("a symbolic link"),
            Some(libc::ENXIO) => refuse("a FIFO or device"),
            _ => Error::io(path, e),
        })?;
    let meta = file.metadata().map_err(|e| Error::io(path, e))?;
    if !meta.is_file() {
        return Err(refuse("not a regular file"));
    }
    file.set_len(0).map_err(|e| Error::io(path, e))?;
    file.write_all(bytes).map_err(|e| Error::io(path, e))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_work_dir_is_new_and_removed_alone() {
        let parent = tempfile::tempdir().unwrap();
        std::fs::write(parent.path().join("precious"), b"keep me").unwrap();
        // A directory of this process's name, as a kept earlier run leaves it.
        let taken = parent
            .path()
            .join(format!("strata-bench-x-{}", std::process::id()));
        std::fs::create_dir(&taken).unwrap();
        std::fs::write(taken.join("data"), b"earlier run").unwrap();
        let w = WorkDir::create(parent.path(), "x").unwrap();
        assert_ne!(w.path(), taken);
        std::fs::write(w.path().join("scratch"), b"ours").unwrap();
        let ours = w.path().to_path_buf();
        drop(w);
        assert!(!ours.exists());
        assert_eq!(std::fs::read(taken.join("data")).unwrap(), b"earlier run");
        assert_eq!(
            std::fs::read(parent.path().join("precious")).unwrap(),
            b"keep me"
        );
        let mut kept = WorkDir::create(parent.path(), "x").unwrap();
        kept.keep();
        let path = kept.path().to_path_buf();
        drop(kept);
        assert!(path.is_dir());
    }

    #[test]
    fn reports_are_never_written_through_a_link_or_into_a_fifo() {
        let dir = tempfile::tempdir().unwrap();
        let outside = dir.path().join("outside");
        std::fs::write(&outside, b"not yours").unwrap();
        let link = dir.path().join("report.json");
        std::os::unix::fs::symlink(&outside, &link).unwrap();
        let e = write_new_or_regular(&link, b"{}").unwrap_err().to_string();
        assert!(e.contains("symbolic link"), "{e}");
        assert_eq!(std::fs::read(&outside).unwrap(), b"not yours");
        let fifo = dir.path().join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        // SAFETY: a valid NUL-terminated path.
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        let e = write_new_or_regular(&fifo, b"{}").unwrap_err().to_string();
        assert!(e.contains("FIFO"), "{e}");
        let plain = dir.path().join("plain.json");
        std::fs::write(&plain, b"a much longer old content").unwrap();
        write_new_or_regular(&plain, b"{}").unwrap();
        assert_eq!(std::fs::read(&plain).unwrap(), b"{}");
    }
}
