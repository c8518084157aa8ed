//! Issue 10, item 3: the newest commit-log segment removed after a crash used to
//! lose its acknowledged writes with the open succeeding. The segment before it
//! ends with its seal, and a seal is written only once a successor exists, so the
//! open now refuses with `Error::Corruption` naming the missing file; with
//! `ignore_replay_errors` it goes on and reports it. The same crash without the
//! deletion opens cleanly with every row.

mod common_commitlog;
use common_commitlog::*;
use strata::db::Database;

#[test]
fn missing_newest_segment_is_corruption_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 0, 1000);
    let segs = segments(dir.path());
    assert!(segs.len() >= 4, "{} segments", segs.len());
    let (newest, path) = segs.last().unwrap().clone();
    std::fs::remove_file(&path).unwrap();
    let before: Vec<_> = std::fs::read_dir(log_dir(dir.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_open_names_missing(dir.path(), newest);
    let after: Vec<_> = std::fs::read_dir(log_dir(dir.path()))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(before, after, "a refused open changes nothing");
    assert_ignore_goes_on(dir.path(), newest);
}

#[test]
fn the_same_crash_without_a_deletion_opens_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 0, 1000);
    assert!(segments(dir.path()).len() >= 4);
    let db = Database::open(dir.path(), options(false)).expect("clean open");
    assert_eq!(readable(&db, 0..1000), 1000);
    assert!(db.replay_stats().missing_segments.is_empty());
    assert!(db.replay_stats().corruptions.is_empty());
    db.close().unwrap();
}
