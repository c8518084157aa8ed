//! One owner per data directory: an exclusive `flock` on the data directory
//! itself, with `<data_dir>/LOCK` describing the holder.
//!
//! Owns: the descriptor of the locked directory, the `LOCK` file and the
//! `flock`s held on both, and the check that this process still owns the
//! directory ([`DirLock::check`]).
//!
//! Why: a second process that opens a directory another process writes replays
//! the owner's commit log, flushes, and deletes segments the owner still appends
//! to; two writers allocate sstable ids from the same counter and treat each
//! other's files as strangers. The operator trial that found this lost 40-60% of
//! acknowledged rows. So a read-write open takes the lock or fails, naming the
//! holder; read-only opens (`DbOptions::read_only`) take no lock and write nothing.
//!
//! Why the directory and not only `LOCK`: a lock on a file is a lock on its
//! inode, and anyone can delete a file. An operator "cleaning a stale lock" with
//! `rm LOCK` while a writer ran let the next command create a new `LOCK`, lock
//! that inode and run beside the writer; after a kill -9, 3,454 of 4,018
//! acknowledged rows were gone. The directory's inode cannot be deleted while it
//! holds files, and deleting the whole directory leaves nothing to share, so
//! the `flock` on an `O_RDONLY | O_DIRECTORY` descriptor of the directory is the
//! lock (Linux allows `flock` on any open file, directories included). `LOCK` is
//! still written, and still locked, for two reasons: a refused process reads the
//! holder's description from it, and a build from before this lock, which locks
//! only `LOCK`, must be refused too.
//!
//! What an operator can still do to the owner, and what it does then
//! ([`DirLock::check`], run by the commit log before it acknowledges a sync and
//! by every manifest commit):
//! - deletes or replaces `LOCK`: harmless to ownership (the directory is locked);
//!   the owner writes its description into a new `LOCK` and locks it. If another
//!   process already holds that new file (an older build), ownership is lost.
//! - deletes the directory (`rm -rf`, perhaps re-creating it), or moves it away
//!   (perhaps copying it back): the owner's files are no longer the ones any
//!   later process opens under that name, so every write it acknowledged from
//!   then on would be lost or split from the copy. The owner notices (its locked
//!   directory has no name left, or the name is another directory) and refuses
//!   every later write and commit with `Error::Poisoned` naming what happened.
//!
//! Threads: a [`DirLock`] is owned by the `Database` that took it (shared as an
//! `Arc` with the check it hands out); dropping it releases the lock (closing the
//! descriptors releases the `flock`s, also when the process dies, so a SIGKILLed
//! owner never leaves a stale lock behind). `check` may run on any thread.
//!
//! Invariants:
//! 1. At most one process holds the lock of a directory at a time (`flock` with
//!    `LOCK_EX | LOCK_NB` on the directory; the kernel arbitrates).
//! 2. The description (pid, command, start time) is written only *after* both
//!    locks are held, so a refused process never overwrites the holder's.
//! 3. The engine never deletes `LOCK`.
//! 4. Once [`DirLock::check`] has failed it fails for good: a lost directory is
//!    never adopted again by the same open.
//!
//! These files are opened with `std::fs` rather than through `crate::fs::Fs`:
//! `flock` needs the raw descriptors, and the few bytes written are not data I/O
//! that any amplification figure counts (DESIGN.md §4 counts data bytes per cause).

use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::fs::{File, OpenOptions};
use std::io::{Read, Seek, SeekFrom, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};

pub const LOCK_FILE: &str = "LOCK";

/// The held lock of one data directory (released on drop).
#[derive(Debug)]
pub struct DirLock {
    dir: PathBuf,
    /// The data directory, open read-only: its `flock` is the lock (invariant 1).
    dir_file: File,
    /// `(device, inode)` of the directory when it was locked.
    dir_id: (u64, u64),
    /// The locked `LOCK` file (replaced when an operator deleted it).
    lock_file: Mutex<File>,
    path: PathBuf,
    /// What `LOCK` says (pid, start time, purpose).
    description: String,
    /// Why ownership was lost (invariant 4).
    lost: Mutex<Option<String>>,
}

/// The outcome of a non-blocking `flock`.
enum Flock {
    Held,
    Busy,
}

fn flock(file: &File, op: libc::c_int, path: &Path) -> Result<Flock> {
    // SAFETY: flock on a descriptor the caller owns; no memory is involved.
    let rc = unsafe { libc::flock(file.as_raw_fd(), op | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(Flock::Held);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        return Ok(Flock::Busy);
    }
    Err(Error::io(path, err))
}

fn unlock(file: &File) {
    // SAFETY: as in `flock`; releases a probe.
    unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_UN) };
}

/// What the holder wrote in `LOCK`, on one line.
/// The most of `LOCK` read: a description is a line; a larger file is not one.
const MAX_HOLDER_BYTES: u64 = 64 * 1024;

fn read_description(path: &Path) -> String {
    let mut text = String::new();
    // Never through a link, never a FIFO waited on, never more than a line's worth.
    let opened = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path);
    if let Ok(f) = opened {
        if f.metadata().is_ok_and(|m| m.is_file()) {
            let _ = f.take(MAX_HOLDER_BYTES).read_to_string(&mut text);
        }
    }
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

fn refused(dir: &Path) -> Error {
    let holder = read_description(&dir.join(LOCK_FILE));
    Error::Locked(format!(
        "{} is held by another process ({}); stop that process first, or use a \
         read-only command (tablestats, verify, listsnapshots, compactionstats, \
         compactionhistory, sstable metadata) which can run beside it",
        dir.display(),
        if holder.is_empty() {
            "its description in LOCK is not written yet, or was removed".to_string()
        } else {
            holder
        }
    ))
}

impl DirLock {
    /// Takes the directory's lock or fails with `Error::Locked` naming the
    /// holder. `purpose` (for example the command line) is recorded for the next
    /// process that is refused.
    pub fn acquire(dir: &Path, purpose: &str) -> Result<DirLock> {
        let dir_file = File::open(dir).map_err(|e| Error::io(dir, e))?;
        let meta = dir_file.metadata().map_err(|e| Error::io(dir, e))?;
        if !meta.is_dir() {
            return Err(Error::InvalidInput(format!(
                "{} is not a directory",
                dir.display()
            )));
        }
        if let Flock::Busy = flock(&dir_file, libc::LOCK_EX, dir)? {
            return Err(refused(dir));
        }
        let path = dir.join(LOCK_FILE);
        let lock_file = open_lock_file(&path)?;
        if let Flock::Busy = flock(&lock_file, libc::LOCK_EX, &path)? {
            // Only a build from before the directory lock holds `LOCK` alone.
            return Err(refused(dir));
        }
        let since = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs())
            .unwrap_or(0);
        let description = format!(
            "pid={} since_unix_seconds={since} purpose={}\n",
            std::process::id(),
            purpose.replace('\n', " ")
        );
        // Invariant 2: describe ourselves only once the locks are ours.
        describe(&lock_file, &path, &description)?;
        Ok(DirLock {
            dir: dir.to_path_buf(),
            dir_file,
            dir_id: (meta.dev(), meta.ino()),
            lock_file: Mutex::new(lock_file),
            path,
            description,
            lost: Mutex::new(None),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether this process still owns the directory it locked: `Ok` while the
    /// locked directory is still the one its path names. Otherwise (deleted,
    /// moved or replaced) `Error::Poisoned` saying so, now and at every later
    /// call (invariant 4). A deleted or replaced `LOCK` is written again and
    /// locked (ownership does not depend on it), unless another process holds
    /// the new one, which loses ownership too.
    pub fn check(&self) -> Result<()> {
        if let Some(why) = self.lost.lock().clone() {
            return Err(Error::Poisoned(why));
        }
        if let Some(why) = self.why_lost() {
            let why = format!(
                "{why} while this process owned it: a write acknowledged now would not be in \
                 the directory the next process opens under that name, so this process refuses \
                 every further write and commit; restart it on the data directory"
            );
            *self.lost.lock() = Some(why.clone());
            return Err(Error::Poisoned(why));
        }
        Ok(())
    }

    /// A check that can be handed to the commit log and the manifests. It
    /// holds the lock weakly: closing the database releases the directory even
    /// while a caller still holds one of its tables, and from then on the
    /// check fails (a handle that outlived its database owns nothing).
    pub fn owner_check(self: &std::sync::Arc<Self>) -> crate::fs::OwnerCheck {
        let me = std::sync::Arc::downgrade(self);
        let dir = self.dir.clone();
        crate::fs::OwnerCheck::new(move || match me.upgrade() {
            Some(lock) => lock.check(),
            None => Err(Error::Poisoned(format!(
                "the database of {} was closed, and with it this process's ownership of \
                 the directory: a table handle kept past the close writes nothing",
                dir.display()
            ))),
        })
    }

    fn why_lost(&self) -> Option<String> {
        let dir = self.dir.display();
        match self.dir_file.metadata() {
            Ok(m) if m.nlink() == 0 => return Some(format!("data directory {dir} was deleted")),
            Ok(_) => {}
            Err(e) => return Some(format!("data directory {dir} cannot be examined ({e})")),
        }
        match std::fs::metadata(&self.dir) {
            Ok(m) if (m.dev(), m.ino()) == self.dir_id => {}
            Ok(_) => {
                return Some(format!(
                    "data directory {dir} was replaced by another directory (moved away, or \
                     deleted and created again)"
                ))
            }
            Err(e) => return Some(format!("data directory {dir} is gone from its path ({e})")),
        }
        self.restore_lock_file().err()
    }

    /// Writes `LOCK` again if it was deleted or replaced (module docs).
    fn restore_lock_file(&self) -> std::result::Result<(), String> {
        let mut held = self.lock_file.lock();
        let same = match (held.metadata(), std::fs::metadata(&self.path)) {
            (Ok(ours), Ok(named)) => {
                ours.nlink() > 0 && (ours.dev(), ours.ino()) == (named.dev(), named.ino())
            }
            _ => false,
        };
        if same {
            return Ok(());
        }
        let fresh = open_lock_file(&self.path).map_err(|e| e.to_string())?;
        match flock(&fresh, libc::LOCK_EX, &self.path) {
            Ok(Flock::Held) => {}
            Ok(Flock::Busy) => {
                return Err(format!(
                    "{} was replaced by one another process holds ({})",
                    self.path.display(),
                    read_description(&self.path)
                ))
            }
            Err(e) => return Err(e.to_string()),
        }
        describe(&fresh, &self.path, &self.description).map_err(|e| e.to_string())?;
        *held = fresh;
        Ok(())
    }
}

fn open_lock_file(path: &Path) -> Result<File> {
    // Never written through a link, never a FIFO waited on (fs invariants 6
    // and 7): this is the one file written around `Fs`.
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) => crate::fs::link_refused(path),
            _ => Error::io(path, e),
        })?;
    if !file.metadata().map_err(|e| Error::io(path, e))?.is_file() {
        return Err(Error::InvalidInput(format!(
            "{} is not a regular file: remove it (the lock is taken on a new one)",
            path.display()
        )));
    }
    Ok(file)
}

fn describe(mut file: &File, path: &Path, text: &str) -> Result<()> {
    let written = (|| {
        file.set_len(0)?;
        file.seek(SeekFrom::Start(0))?;
        file.write_all(text.as_bytes())?;
        file.flush()
    })();
    written.map_err(|e| Error::io(path, e))
}

/// The description the current holder wrote, if the directory is locked by
/// another process now (`None` when free or when it cannot be told).
pub fn current_holder(dir: &Path) -> Option<String> {
    // Shared, non-blocking probes: each fails only while an exclusive holder
    // exists. The directory first; then `LOCK`, which an older build locks alone.
    let probe = |file: &File, path: &Path| match flock(file, libc::LOCK_SH, path) {
        Ok(Flock::Held) => {
            unlock(file);
            false
        }
        Ok(Flock::Busy) => true,
        Err(_) => false,
    };
    let held = File::open(dir).is_ok_and(|d| probe(&d, dir))
        || OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK)
            .open(dir.join(LOCK_FILE))
            .is_ok_and(|f| {
                f.metadata().is_ok_and(|m| m.is_file()) && probe(&f, &dir.join(LOCK_FILE))
            });
    held.then(|| read_description(&dir.join(LOCK_FILE)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    #[test]
    fn second_acquire_is_refused_naming_the_holder_and_released_on_drop() {
        let dir = tempfile::tempdir().unwrap();
        let first = DirLock::acquire(dir.path(), "first owner").unwrap();
        // flock locks belong to the open file description, so a second open in the
        // same process conflicts exactly as another process would.
        let err = DirLock::acquire(dir.path(), "second").unwrap_err();
        let msg = err.to_string();
        assert!(matches!(err, Error::Locked(_)), "{msg}");
        assert!(msg.contains("first owner"), "{msg}");
        assert!(
            msg.contains(&format!("pid={}", std::process::id())),
            "{msg}"
        );
        assert!(current_holder(dir.path()).is_some());
        drop(first);
        assert!(current_holder(dir.path()).is_none());
        let again = DirLock::acquire(dir.path(), "third").unwrap();
        assert!(again.path().ends_with(LOCK_FILE));
    }

    #[test]
    fn a_deleted_lock_file_neither_frees_the_directory_nor_loses_ownership() {
        let dir = tempfile::tempdir().unwrap();
        let owner = DirLock::acquire(dir.path(), "owner").unwrap();
        std::fs::remove_file(dir.path().join(LOCK_FILE)).unwrap();
        let err = DirLock::acquire(dir.path(), "second").unwrap_err();
        assert!(matches!(err, Error::Locked(_)), "{err}");
        assert!(current_holder(dir.path()).is_some());
        // The owner writes its description again and keeps the directory.
        owner.check().unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(text.contains("purpose=owner"), "{text}");
        // Replaced by another file: the same.
        std::fs::write(dir.path().join("other"), b"junk").unwrap();
        std::fs::rename(dir.path().join("other"), dir.path().join(LOCK_FILE)).unwrap();
        owner.check().unwrap();
        let text = std::fs::read_to_string(dir.path().join(LOCK_FILE)).unwrap();
        assert!(text.contains("purpose=owner"), "{text}");
        assert!(DirLock::acquire(dir.path(), "third").is_err());
    }

    #[test]
    fn a_lock_file_another_process_holds_is_refused_as_an_older_build_would_hold_it() {
        let dir = tempfile::tempdir().unwrap();
        // What a build that locks only LOCK holds.
        let f = open_lock_file(&dir.path().join(LOCK_FILE)).unwrap();
        assert!(matches!(
            flock(&f, libc::LOCK_EX, dir.path()).unwrap(),
            Flock::Held
        ));
        let err = DirLock::acquire(dir.path(), "new").unwrap_err();
        assert!(matches!(err, Error::Locked(_)), "{err}");
        assert!(current_holder(dir.path()).is_some());
    }

    #[test]
    fn a_deleted_or_moved_directory_loses_ownership_for_good() {
        let parent = tempfile::tempdir().unwrap();
        let dir = parent.path().join("data");
        std::fs::create_dir(&dir).unwrap();
        let owner = Arc::new(DirLock::acquire(&dir, "owner").unwrap());
        let check = owner.owner_check();
        check.check().unwrap();
        std::fs::rename(&dir, parent.path().join("moved")).unwrap();
        std::fs::create_dir(&dir).unwrap();
        let err = check.check().unwrap_err();
        assert!(matches!(err, Error::Poisoned(_)), "{err}");
        assert!(err.to_string().contains("replaced"), "{err}");
        // A new process may own the new directory; this one never again.
        let other = DirLock::acquire(&dir, "new owner").unwrap();
        assert!(check.check().is_err());
        drop(other);
        std::fs::remove_dir_all(&dir).unwrap();
        std::fs::rename(parent.path().join("moved"), &dir).unwrap();
        assert!(check.check().is_err(), "invariant 4");

        let gone = parent.path().join("gone");
        std::fs::create_dir(&gone).unwrap();
        let owner = DirLock::acquire(&gone, "owner").unwrap();
        std::fs::remove_file(gone.join(LOCK_FILE)).unwrap();
        std::fs::remove_dir(&gone).unwrap();
        let err = owner.check().unwrap_err();
        assert!(err.to_string().contains("was deleted"), "{err}");
    }

    #[test]
    fn a_check_handed_out_neither_keeps_the_lock_nor_passes_once_it_is_released() {
        let dir = tempfile::tempdir().unwrap();
        let owner = Arc::new(DirLock::acquire(dir.path(), "owner").unwrap());
        let check = owner.owner_check();
        check.check().unwrap();
        drop(owner);
        let next = DirLock::acquire(dir.path(), "next").unwrap();
        let err = check.check().unwrap_err();
        assert!(matches!(err, Error::Poisoned(_)), "{err}");
        assert!(err.to_string().contains("was closed"), "{err}");
        drop(next);
    }
}
