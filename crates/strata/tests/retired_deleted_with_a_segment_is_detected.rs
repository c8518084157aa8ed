//! Scenario: an operator deletes the commit log's `RETIRED` record together
//! with one segment of a crashed writer ("cleaning up old logs"), or
//! `RETIRED` alone, beside a live writer or on a stopped directory.
//!
//! Before, a log without `RETIRED` was taken as complete, so the next open
//! recorded the gap as retired and the segment's acknowledged rows were gone
//! without a word. Now a log whose segments are of a format that always has
//! `RETIRED` beside it knows the record was deleted, and judges every id not
//! on disk by the tables' flushed positions (their manifests survive the
//! log's deletions): an id some table had not flushed past is a lost segment,
//! refused naming the repair (`--ignore-replay-errors`); ids every table has
//! flushed past are gaps the log made itself, and the record is rebuilt.

mod common;

use common::writer::{self, Answer, Writer};
use std::path::{Path, PathBuf};
use strata::db::Database;
use strata::error::Error;

#[test]
fn child_entry() {
    writer::child_entry();
}

fn log(dir: &Path) -> PathBuf {
    dir.join("commitlog")
}

fn segments(dir: &Path) -> Vec<PathBuf> {
    strata::commitlog::list_segments(&strata::fs::Fs::new(), &log(dir))
        .unwrap()
        .into_iter()
        .map(|(_, p)| p)
        .collect()
}

/// A crashed writer whose log holds unflushed rows in several segments,
/// after a flush that retired older ones.
fn crashed_writer(dir: &Path) -> std::collections::BTreeSet<i32> {
    let mut w = Writer::start(dir);
    w.write_all(0..200);
    assert!(matches!(w.flush(), Answer::Done));
    w.write_all(200..500);
    w.kill()
}

#[test]
fn retired_and_an_unflushed_segment_deleted_after_a_crash_refuse_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let acked = crashed_writer(&dir);
    let segs = segments(&dir);
    assert!(segs.len() >= 3, "{segs:?}");
    std::fs::remove_file(log(&dir).join("RETIRED")).unwrap();
    // A middle segment: it holds unflushed acknowledged rows.
    std::fs::remove_file(&segs[segs.len() / 2]).unwrap();
    let before = common::tree_listing(&dir);
    let err = Database::open(&dir, writer::options()).unwrap_err();
    let msg = err.to_string();
    assert!(matches!(err, Error::Corruption { .. }), "{msg}");
    assert!(msg.contains("RETIRED is missing"), "{msg}");
    assert!(msg.contains("had not flushed past"), "{msg}");
    assert!(msg.contains("--ignore-replay-errors"), "{msg}");
    assert_eq!(
        common::tree_listing(&dir),
        before,
        "a refused open changes nothing"
    );
    // Going on is the operator's explicit choice, and reported.
    let db = Database::open(&dir, writer::options_ignoring_replay_errors()).unwrap();
    assert!(!db.replay_stats().missing_segments.is_empty());
    let lost = writer::lost(&db, &acked);
    assert!(
        !lost.is_empty() && lost.iter().all(|&k| k >= 200),
        "{lost:?}"
    );
    db.close().unwrap();
    // And the next open is clean: the gap is recorded as retired.
    let db = Database::open(&dir, writer::options()).unwrap();
    db.close().unwrap();
}

#[test]
fn retired_and_the_newest_segment_deleted_after_a_crash_refuse_the_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    crashed_writer(&dir);
    std::fs::remove_file(log(&dir).join("RETIRED")).unwrap();
    // The newest segment holding records (the log may also have made the
    // next one ahead of its roll: a header alone).
    let newest = segments(&dir)
        .into_iter()
        .rev()
        .find(|p| std::fs::metadata(p).unwrap().len() > strata::commitlog::format::HEADER_BYTES)
        .unwrap();
    std::fs::remove_file(newest).unwrap();
    let err = Database::open(&dir, writer::options()).unwrap_err();
    assert!(err.to_string().contains("missing"), "{err}");
}

#[test]
fn retired_alone_deleted_after_a_crash_is_rebuilt_and_nothing_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let acked = crashed_writer(&dir);
    std::fs::remove_file(log(&dir).join("RETIRED")).unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    let notes = db.replay_stats().corruptions.join("\n");
    assert!(notes.contains("RETIRED was missing; rebuilt"), "{notes}");
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
    assert!(log(&dir).join("RETIRED").exists());
}

#[test]
fn retired_deleted_beside_a_writer_is_written_again_and_nothing_is_lost() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    std::fs::remove_file(log(&dir).join("RETIRED")).unwrap();
    w.write_all(200..400);
    // A flush retires segments: the record is stored whole from memory again.
    assert!(matches!(w.flush(), Answer::Done));
    assert!(log(&dir).join("RETIRED").exists());
    w.write_all(400..500);
    let acked = w.kill();
    let db = Database::open(&dir, writer::options()).unwrap();
    assert_eq!(writer::lost(&db, &acked), Vec::<i32>::new());
    db.close().unwrap();
}

#[test]
fn retired_and_a_segment_deleted_beside_a_writer_refuse_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..500);
    let segs = segments(&dir);
    assert!(segs.len() >= 3, "{segs:?}");
    std::fs::remove_file(log(&dir).join("RETIRED")).unwrap();
    // An older, sealed segment the writer no longer appends to: it does not
    // notice, and its next open must.
    std::fs::remove_file(&segs[segs.len() / 2]).unwrap();
    w.kill();
    let err = Database::open(&dir, writer::options()).unwrap_err();
    assert!(err.to_string().contains("RETIRED is missing"), "{err}");
}
