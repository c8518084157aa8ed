//! Scenario: an operator deletes a table's `MANIFEST`, or copies in the
//! `MANIFEST` of the same-named table of another data directory, beside a
//! live writer or on a stopped directory.
//!
//! Beside the writer a deleted manifest is written again whole by the next
//! flush (it holds the writer's own live set). A foreign one is refused at the
//! next open: before, table ids being small sequential integers, the other
//! directory's `ks.t` had the same id and its manifest was taken as this
//! table's (listing files this directory does not have, quarantining its own).
//! Now the manifest names its table's UUID, the open refuses naming the
//! repair, and `strata manifest rebuild` (after moving the stranger aside)
//! gets every acknowledged row back, the rebuilt manifest replaying the log.

mod common;

use common::writer::{self, Answer, Writer};
use std::path::Path;
use strata::db::Database;
use strata::error::Error;

#[test]
fn child_entry() {
    writer::child_entry();
}

/// A stopped directory with the same table, written by another "cluster".
fn other_directory(root: &Path) -> std::path::PathBuf {
    let other = root.join("other");
    let mut w = Writer::start(&other);
    w.write_all(1000..1100);
    assert!(matches!(w.flush(), Answer::Done));
    assert!(matches!(w.quit(), Answer::Done));
    other
}

fn manifest(dir: &Path) -> std::path::PathBuf {
    common::table_dir(dir).join("MANIFEST")
}

/// Open refuses, naming the foreign manifest and the rebuild; moving it aside
/// and rebuilding brings back every acknowledged row.
fn assert_refused_then_rebuilt(dir: &Path, acked: &std::collections::BTreeSet<i32>) {
    let err = Database::open(dir, writer::options()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::NeedsRepair(_)), "{msg}");
    assert!(msg.contains("another data directory"), "{msg}");
    assert!(msg.contains("strata manifest rebuild ks.t"), "{msg}");
    std::fs::rename(manifest(dir), dir.join("MANIFEST.foreign")).unwrap();
    strata::repair::rebuild_manifest(dir, &writer::options(), "ks", "t").unwrap();
    let db = Database::open(dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, acked), Vec::<i32>::new());
    // Nothing of the other directory's table shows.
    assert_eq!(
        common::readable(&db.table("ks", "t").unwrap(), 1000..1100),
        0
    );
    db.close().unwrap();
}

#[test]
fn deleted_manifest_beside_a_writer_is_written_again_by_its_next_flush() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    std::fs::remove_file(manifest(&dir)).unwrap();
    w.write_all(200..400);
    assert!(matches!(w.flush(), Answer::Done));
    assert!(manifest(&dir).exists());
    w.write_all(400..500);
    let acked = w.kill();
    let db = Database::open(&dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}

#[test]
fn foreign_manifest_beside_a_writer_is_refused_at_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let other = other_directory(tmp.path());
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..300);
    std::fs::copy(manifest(&other), manifest(&dir)).unwrap();
    w.write_all(300..400);
    let acked = w.kill();
    assert_refused_then_rebuilt(&dir, &acked);
}

#[test]
fn foreign_manifest_on_a_stopped_directory_is_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let other = other_directory(tmp.path());
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..300);
    let acked = w.kill();
    std::fs::copy(manifest(&other), manifest(&dir)).unwrap();
    assert_refused_then_rebuilt(&dir, &acked);
}

#[test]
fn deleted_manifest_on_a_stopped_directory_is_refused_and_rebuilt() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..300);
    let acked = w.kill();
    std::fs::remove_file(manifest(&dir)).unwrap();
    let err = Database::open(&dir, writer::options()).unwrap_err();
    assert!(matches!(err, Error::NeedsRepair(_)), "{err}");
    assert!(err.to_string().contains("manifest rebuild"), "{err}");
    strata::repair::rebuild_manifest(&dir, &writer::options(), "ks", "t").unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}
