//! Scenario: an operator "cleans a stale lock" by deleting `LOCK` (or replacing
//! it with another file) while a writer owns the data directory, then runs a
//! command that opens it read-write.
//!
//! Before, ownership was a `flock` on `LOCK`'s inode: the next command created
//! a new `LOCK`, locked that and ran beside the writer (replaying its log,
//! deleting its segments); after a kill -9, 3,454 of 4,018 acknowledged rows
//! were gone. Now the directory itself is locked: every read-write open is
//! refused naming the writer, the writer writes its description into a new
//! `LOCK` and keeps acknowledging, and after a kill -9 every acknowledged row
//! reads back. On a stopped directory a deleted `LOCK` is nothing: the next
//! open takes the directory and writes a new one.

mod common;

use common::writer::{self, Writer};
use strata::db::Database;
use strata::error::Error;

#[test]
fn child_entry() {
    writer::child_entry();
}

/// A read-write open of `dir` beside the writer: refused, naming it once it
/// has written its description again (`described`).
fn assert_refused(dir: &std::path::Path, w: &Writer, described: bool) {
    let err = Database::open(dir, writer::options()).unwrap_err();
    assert!(matches!(err, Error::Locked(_)), "{err}");
    let holder = strata::dirlock::current_holder(dir).expect("the writer holds the directory");
    if described {
        assert!(holder.contains(&format!("pid={}", w.pid())), "{holder}");
        assert!(
            err.to_string().contains(&format!("pid={}", w.pid())),
            "{err}"
        );
    }
}

#[test]
fn deleted_or_replaced_lock_beside_a_writer_lets_no_second_owner_in() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start(&dir);
    w.write_all(0..200);
    assert!(matches!(w.flush(), writer::Answer::Done));
    w.write_all(200..400);

    std::fs::remove_file(dir.join("LOCK")).unwrap();
    assert_refused(&dir, &w, false);
    // The writer keeps acknowledging (batch mode: each write's sync checks
    // that it still owns the directory) and writes its description again.
    w.write_all(400..600);
    let lock = std::fs::read_to_string(dir.join("LOCK")).unwrap();
    assert!(lock.contains(&format!("pid={}", w.pid())), "{lock}");

    // Replaced by an unrelated file: the same.
    std::fs::write(tmp.path().join("junk"), b"not a lock").unwrap();
    std::fs::rename(tmp.path().join("junk"), dir.join("LOCK")).unwrap();
    assert_refused(&dir, &w, false);
    w.write_all(600..800);
    assert_refused(&dir, &w, true);

    let acked = w.kill();
    assert_eq!(acked.len(), 800);
    let db = Database::open(&dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}

#[test]
fn deleted_lock_on_a_stopped_directory_is_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start(&dir);
    w.write_all(0..300);
    let acked = w.kill();
    std::fs::remove_file(dir.join("LOCK")).unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    assert!(dir.join("LOCK").exists());
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}
