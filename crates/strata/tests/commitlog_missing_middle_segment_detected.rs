//! Issue 10, item 3: a commit-log segment removed from the middle of the log used
//! to lose its acknowledged writes silently. Segment ids are contiguous, and every
//! id the log deleted on purpose is recorded in `commitlog/RETIRED` first, so a
//! gap is corruption naming the missing file. Many open/close cycles and crashes,
//! with flushes retiring segments out of order, never raise a false alarm.

mod common_commitlog;
use common_commitlog::*;
use strata::db::Database;

#[test]
fn missing_middle_segment_is_corruption_naming_it() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 0, 1000);
    let segs = segments(dir.path());
    assert!(segs.len() >= 4, "{} segments", segs.len());
    let (middle, path) = segs[segs.len() / 2].clone();
    std::fs::remove_file(&path).unwrap();
    assert_open_names_missing(dir.path(), middle);
    assert_ignore_goes_on(dir.path(), middle);
}

#[test]
fn open_close_and_crash_cycles_never_report_a_missing_segment() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(dir.path(), options(false)).unwrap();
        db.create_table_cql(CREATE).unwrap();
        db.create_table_cql(&CREATE.replace("ks.t", "ks.u"))
            .unwrap();
        db.close().unwrap();
    }
    let mut written = 0;
    for cycle in 0..30 {
        let db = Database::open(dir.path(), options(false))
            .unwrap_or_else(|e| panic!("cycle {cycle}: {e}"));
        let stats = db.replay_stats();
        assert!(
            stats.missing_segments.is_empty() && stats.corruptions.is_empty(),
            "cycle {cycle}: {stats:?}"
        );
        assert_eq!(readable(&db, 0..written), written as usize, "cycle {cycle}");
        write(&db, written..written + 150);
        // A second table written rarely and flushed at other times keeps old
        // segments alive while newer ones are retired: deletions out of order.
        if cycle % 4 == 0 {
            let u = db.table("ks", "u").unwrap();
            u.insert(
                &[
                    ("k", strata::types::Value::Int(cycle)),
                    ("v", strata::types::Value::Text("u".into())),
                ],
                &strata::schema::WriteOptions::default(),
            )
            .unwrap();
        }
        if cycle % 3 == 1 {
            db.table("ks", "t").unwrap().flush().unwrap();
        }
        if cycle % 7 == 5 {
            db.table("ks", "u").unwrap().flush().unwrap();
        }
        written += 150;
        if cycle % 2 == 0 {
            db.close().unwrap();
        } else {
            drop(db); // crash: nothing flushed, the log keeps it
        }
    }
    let db = Database::open(dir.path(), options(false)).unwrap();
    assert_eq!(readable(&db, 0..written), written as usize);
    db.close().unwrap();
}
