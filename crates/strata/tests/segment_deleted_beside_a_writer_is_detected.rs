//! Scenario: while a writer owns the data directory, an operator deletes
//! commit-log segments: the one being written (the newest), or the whole
//! `commitlog/` directory.
//!
//! Before, the writer went on acknowledging writes into the deleted file, and
//! after a crash the next open replayed nothing of them, silently. Now the
//! writer's next sync finds its segment without a name and refuses that write
//! and every later one (nothing acknowledged after the deletion), and the next
//! open refuses too: the manifest's flushed position says the log reached a
//! segment that is gone, so it names the loss and the repair
//! (`--ignore-replay-errors`) instead of opening without it.

mod common;

use common::writer::{self, Answer, Writer};
use strata::db::Database;
use strata::error::Error;

#[test]
fn child_entry() {
    writer::child_entry();
}

/// The newest `CommitLog-*.log` of `dir`'s log.
fn newest_segment(dir: &std::path::Path) -> std::path::PathBuf {
    let log = dir.join("commitlog");
    strata::commitlog::list_segments(&strata::fs::Fs::new(), &log)
        .unwrap()
        .pop()
        .expect("a segment")
        .1
}

fn assert_refused_then_ignored(dir: &std::path::Path, acked: &std::collections::BTreeSet<i32>) {
    let err = Database::open(dir, writer::options()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Corruption { .. }), "{msg}");
    assert!(msg.contains("missing"), "{msg}");
    assert!(msg.contains("--ignore-replay-errors"), "{msg}");
    // The operator's choice to go on: reported, and what the flushes kept is there.
    let db = Database::open(dir, writer::options_ignoring_replay_errors()).unwrap();
    assert!(
        !db.replay_stats().missing_segments.is_empty(),
        "{:?}",
        db.replay_stats()
    );
    let t = db.table("ks", "t").unwrap();
    assert!(common::readable(&t, 0..200) == 200, "flushed rows are kept");
    assert!(writer::lost(&db, acked).len() < acked.len());
    db.close().unwrap();
}

#[test]
fn active_segment_deleted_beside_a_writer_stops_it_and_refuses_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..260);
    std::fs::remove_file(newest_segment(&dir)).unwrap();
    let before = w.acked.len();
    match w.write(260..300) {
        Answer::Refused(Some(260), msg) => {
            assert!(msg.contains("was deleted or replaced"), "{msg}");
        }
        other => panic!("a write after the deletion was not refused: {other:?}"),
    }
    assert_eq!(w.acked.len(), before);
    assert!(matches!(w.write(300..301), Answer::Refused(..)));
    let acked = w.kill();
    assert_refused_then_ignored(&dir, &acked);
}

#[test]
fn commitlog_directory_deleted_beside_a_writer_stops_it_and_refuses_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..260);
    std::fs::remove_dir_all(dir.join("commitlog")).unwrap();
    assert!(matches!(w.write(260..300), Answer::Refused(Some(260), _)));
    let acked = w.kill();
    assert_refused_then_ignored(&dir, &acked);
}
