//! Scenario: an operator deletes the whole `commitlog/` directory of a stopped
//! data directory (after a crash, or after a clean shutdown), `RETIRED` and
//! every segment with it.
//!
//! Before, the next open found an empty log and went on: the acknowledged
//! writes that were only in the log were gone without a word. The log's own
//! records went with it, but the tables' manifests did not: a table that
//! flushed up to a position in segment N means the log reached N, and the log
//! never deletes its newest segment. So the open now refuses, naming what is
//! missing and the repair; with `--ignore-replay-errors` it goes on, reports
//! it, and starts the log after every recorded position. A table that never
//! flushed records its creation position, so this holds for it too.

mod common;

use common::writer::{self, Answer, Writer};
use strata::db::Database;
use strata::error::Error;

#[test]
fn child_entry() {
    writer::child_entry();
}

fn assert_refused(dir: &std::path::Path) {
    let before = common::tree_listing(dir);
    let err = Database::open(dir, writer::options()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Corruption { .. }), "{msg}");
    assert!(msg.contains("whole commit-log directory"), "{msg}");
    assert!(msg.contains("--ignore-replay-errors"), "{msg}");
    assert_eq!(
        common::tree_listing(dir),
        before,
        "a refused open changes nothing"
    );
    // Read-only opens report the same loss.
    let mut ro = writer::options();
    ro.read_only = true;
    let db = Database::open(dir, ro).unwrap();
    let problem = db
        .commitlog_problem()
        .expect("the loss is reported")
        .to_string();
    assert!(problem.contains("missing"), "{problem}");
    db.close().unwrap();
}

#[test]
fn deleted_log_of_a_crashed_writer_refuses_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..300);
    let acked = w.kill();
    std::fs::remove_dir_all(dir.join("commitlog")).unwrap();
    assert_refused(&dir);
    let db = Database::open(&dir, writer::options_ignoring_replay_errors()).unwrap();
    assert!(!db.replay_stats().missing_segments.is_empty());
    let lost = writer::lost(&db, &acked);
    assert_eq!(
        lost,
        (200..300).collect::<Vec<_>>(),
        "exactly the unflushed rows"
    );
    db.close().unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    db.close().unwrap();
}

#[test]
fn deleted_log_of_a_table_that_never_flushed_refuses_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start(&dir);
    w.write_all(0..100);
    w.kill();
    std::fs::remove_dir_all(dir.join("commitlog")).unwrap();
    assert_refused(&dir);
}

#[test]
fn deleted_log_after_a_clean_shutdown_is_refused_too() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start(&dir);
    w.write_all(0..100);
    assert!(matches!(w.quit(), Answer::Done));
    std::fs::remove_dir_all(dir.join("commitlog")).unwrap();
    // Nothing was lost here, but nothing outside the log can tell this from
    // the crash above: the message says so, and the operator decides.
    assert_refused(&dir);
    let db = Database::open(&dir, writer::options_ignoring_replay_errors()).unwrap();
    assert_eq!(common::readable(&db.table("ks", "t").unwrap(), 0..100), 100);
    db.close().unwrap();
}
