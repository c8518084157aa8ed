//! A read-only open (what `verify` and `tablestats` use) does not replay the commit
//! log, so it cannot refuse a missing segment the way a read-write open does; it
//! reports it instead (`Database::commitlog_problem`, and `strata verify` exits
//! non-zero), and writes nothing. Beside a live owner it stays silent: the owner's
//! own open checked the log, and a log in motion only looks damaged (issue 10,
//! item 3).

mod common_commitlog;
use common_commitlog::*;
use strata::db::Database;

fn read_only() -> strata::db::DbOptions {
    let mut o = options(false);
    o.read_only = true;
    o
}

#[test]
fn read_only_open_names_a_missing_segment_and_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 0, 1000);
    // A healthy log: no problem reported.
    let db = Database::open(dir.path(), read_only()).unwrap();
    assert_eq!(db.commitlog_problem(), None, "{:?}", db.warnings());
    db.close().unwrap();

    let segs = segments(dir.path());
    assert!(segs.len() >= 4, "{} segments", segs.len());
    let (middle, path) = segs[segs.len() / 2].clone();
    std::fs::remove_file(&path).unwrap();
    let before = segments(dir.path());
    let db = Database::open(dir.path(), read_only()).unwrap();
    let problem = db.commitlog_problem().expect("missing segment reported");
    let name = strata::commitlog::segment_file_name(middle);
    assert!(problem.contains(&name), "{problem}");
    assert!(db.warnings().iter().any(|w| w.contains(&name)));
    db.close().unwrap();
    assert_eq!(
        segments(dir.path()),
        before,
        "a read-only open changed the log"
    );
    // The owner's open still refuses it.
    assert_open_names_missing(dir.path(), middle);
}
