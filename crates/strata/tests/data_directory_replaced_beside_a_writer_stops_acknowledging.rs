//! Scenario: while a writer owns the data directory, an operator deletes the
//! whole directory and creates it again (`rm -rf D; mkdir D`), or moves it away
//! and puts a copy in its place (`mv D D.old; cp -a D.old D`), and starts
//! another process on it.
//!
//! Both directories are then owned, each by one process, which the directory
//! lock allows: they are different directories. What must not happen is the
//! first writer acknowledging more writes: they would go to a deleted directory
//! (lost when the process ends), or to one nobody will open under its name.
//! Before, it acknowledged them all; now its next sync finds that its locked
//! directory is no longer the one its path names, and every later write is
//! refused with an error saying so. Nothing it acknowledged after the check is
//! missing from anything: it acknowledged nothing more.

mod common;

use common::writer::{self, Answer, Writer};
use strata::db::Database;

#[test]
fn child_entry() {
    writer::child_entry();
}

/// The writer's next write is refused with the ownership error, and so is
/// every later one.
fn assert_stops(w: &mut Writer, from: i32, what: &str) {
    let before = w.acked.len();
    match w.write(from..from + 50) {
        Answer::Refused(Some(k), msg) => {
            assert_eq!(k, from, "the first write after the {what} is refused");
            assert!(msg.contains("refuses every further write"), "{msg}");
            assert!(msg.contains(what), "{msg}");
        }
        other => panic!("a write after the {what} was not refused: {other:?}"),
    }
    assert_eq!(
        w.acked.len(),
        before,
        "nothing acknowledged after the {what}"
    );
    assert!(matches!(w.write(from + 50..from + 51), Answer::Refused(..)));
    assert!(matches!(w.flush(), Answer::Refused(..)));
}

#[test]
fn deleted_and_recreated_directory_beside_a_writer_stops_it_acknowledging() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start(&dir);
    w.write_all(0..200);
    std::fs::remove_dir_all(&dir).unwrap();
    std::fs::create_dir(&dir).unwrap();
    assert_stops(&mut w, 200, "was deleted");
    // The new, empty directory belongs to whoever opens it now.
    let db = Database::open(&dir, writer::options()).unwrap();
    assert!(db.tables().is_empty());
    db.close().unwrap();
}

#[test]
fn directory_moved_away_and_copied_back_beside_a_writer_stops_it_acknowledging() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let old = tmp.path().join("data.old");
    let mut w = Writer::start(&dir);
    w.write_all(0..200);
    std::fs::rename(&dir, &old).unwrap();
    copy_dir(&old, &dir);
    assert_stops(&mut w, 200, "replaced by another directory");
    let acked = w.kill();
    // The copy holds everything acknowledged before it was taken.
    let db = Database::open(&dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}

fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}
