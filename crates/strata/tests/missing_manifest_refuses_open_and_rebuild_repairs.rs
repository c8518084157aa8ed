//! A table directory whose MANIFEST is gone but whose sstables are present used
//! to open as an empty table and delete every sstable as an orphan. Now the open
//! is refused, naming the repair command, and nothing changes on disk;
//! `repair::rebuild_manifest` lists the sstables again from their own metadata
//! and every row reads back.

mod common;

use strata::error::Error;
use strata::repair;
use strata::tablestats::TableStats;

#[test]
fn missing_manifest_is_refused_and_rebuilt() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 600, 3);
    let tdir = common::table_dir(dir.path());
    let before = common::sstables(&tdir);
    assert_eq!(before.len(), 3);
    std::fs::remove_file(tdir.join("MANIFEST")).unwrap();

    for _ in 0..2 {
        let err = strata::db::Database::open(dir.path(), common::options()).unwrap_err();
        assert!(matches!(err, Error::NeedsRepair(_)), "{err}");
        let msg = err.to_string();
        assert!(msg.contains("strata manifest rebuild ks.t"), "{msg}");
        assert_eq!(
            common::sstables(&tdir),
            before,
            "open changed the directory"
        );
    }

    let report = repair::rebuild_manifest(dir.path(), &common::options(), "ks", "t").unwrap();
    assert_eq!(report.listed.len(), 3, "{report:?}");
    assert!(report.quarantined.is_empty(), "{report:?}");
    // A manifest that exists is not rebuilt over.
    assert!(repair::rebuild_manifest(dir.path(), &common::options(), "ks", "t").is_err());

    let db = common::open(dir.path());
    let t = db.table("ks", "t").unwrap();
    // The three rebuilt ones, plus whatever replaying the log again flushed.
    assert!(TableStats::of(&t).sstable_count >= 3);
    assert_eq!(common::readable(&t, 0..600), 600);
    db.close().unwrap();
}
