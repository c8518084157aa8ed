//! Issue 10, item 3: the oldest commit-log segment still needed (the first one
//! holding writes not yet flushed) removed after a crash used to lose those
//! writes silently: below it, segments are legitimately gone after their tables
//! flushed. Those are recorded in `commitlog/RETIRED` before they are deleted, so
//! a missing id above that record is corruption naming the file. A crash after
//! the record was written but before the deletion (the segments are still
//! there) opens cleanly.

mod common_commitlog;
use common_commitlog::*;
use strata::db::Database;

#[test]
fn missing_oldest_needed_segment_is_corruption_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 600, 1200);
    let segs = segments(dir.path());
    assert!(
        segs[0].0 > 1,
        "the flush retired the first segments: {segs:?}"
    );
    assert!(segs.len() >= 3, "{} segments", segs.len());
    let (oldest, path) = segs[0].clone();
    std::fs::remove_file(&path).unwrap();
    assert_open_names_missing(dir.path(), oldest);
    assert_ignore_goes_on(dir.path(), oldest);
}

#[test]
fn segments_deleted_after_flush_are_not_missing() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 600, 1200);
    assert!(segments(dir.path())[0].0 > 1);
    let db = Database::open(dir.path(), options(false)).expect("clean open");
    assert_eq!(readable(&db, 0..1200), 1200);
    assert!(db.replay_stats().corruptions.is_empty());
    db.close().unwrap();
}

#[test]
fn crash_right_after_retiring_segments_opens_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let keep = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), options(false)).unwrap();
        db.create_table_cql(CREATE).unwrap();
        write(&db, 0..600);
        let before = segments(dir.path());
        for (_, p) in &before {
            std::fs::copy(p, keep.path().join(p.file_name().unwrap())).unwrap();
        }
        db.table("ks", "t").unwrap().flush().unwrap();
        let after = segments(dir.path());
        assert!(after.len() < before.len(), "the flush retired segments");
        // The crash came after RETIRED named them, before they were unlinked:
        // put the retired ones back (their bytes were complete and fsynced).
        for (id, p) in &before {
            if !after.iter().any(|(a, _)| a == id) {
                std::fs::copy(keep.path().join(p.file_name().unwrap()), p).unwrap();
            }
        }
        write(&db, 600..900);
        drop(db);
    }
    let db = Database::open(dir.path(), options(false)).expect("clean open");
    assert_eq!(readable(&db, 0..900), 900);
    assert!(
        db.replay_stats().corruptions.is_empty(),
        "{:?}",
        db.replay_stats()
    );
    db.close().unwrap();
    // And the resurrected segments were deleted for good.
    let db = Database::open(dir.path(), options(false)).expect("clean open");
    assert_eq!(readable(&db, 0..900), 900);
    db.close().unwrap();
}
