//! After a crash (or an operator's copy), opening a table moves sstables the
//! manifest does not list into the table's `quarantine/` folder instead of
//! deleting them, removes `*.tmp` files (never renamed, so never acknowledged),
//! keeps everything the manifest lists, and reports each move with the commands
//! that restore or purge it. Nothing unlisted is ever deleted at open.

use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::quarantine;
use strata::schema::WriteOptions;
use strata::tablestats::TableStats;
use strata::types::Value;

#[test]
fn unlisted_sstables_are_quarantined_not_deleted() {
    let dir = tempfile::tempdir().unwrap();
    let table_dir = dir.path().join("ks").join("t");
    {
        let db = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
            .unwrap();
        for i in 0..100 {
            t.insert(
                &[("k", Value::Int(i)), ("v", Value::Text(format!("v{i}")))],
                &WriteOptions::default(),
            )
            .unwrap();
        }
        db.close().unwrap();
    }
    let sstable = std::fs::read_dir(&table_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .find(|n| n.to_string_lossy().ends_with("-Data.db"))
        .expect("one sstable");
    // A crash mid-flush and mid-compaction, and an operator's copied-in file.
    let unlisted = b"unlisted output of a crashed flush, or an operator's copy".to_vec();
    std::fs::write(table_dir.join("strata-999-Data.db"), &unlisted).unwrap();
    std::fs::write(table_dir.join("strata-1000-Data.db.tmp"), b"partial").unwrap();
    std::fs::write(table_dir.join("MANIFEST.tmp"), b"partial manifest").unwrap();
    {
        let db = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).unwrap();
        let warning = db
            .warnings()
            .iter()
            .find(|w| w.contains("strata-999-Data.db"))
            .unwrap_or_else(|| panic!("no warning names the file: {:?}", db.warnings()));
        assert!(warning.contains("quarantine"), "{warning}");
        assert!(warning.contains("strata sstable import"), "{warning}");
        assert!(warning.contains("strata quarantine purge"), "{warning}");
        let t = db.table("ks", "t").unwrap();
        assert_eq!(TableStats::of(&t).sstable_count, 1);
        for i in 0..100 {
            let rows = t
                .select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
                .unwrap();
            assert_eq!(rows.len(), 1);
        }
        db.close().unwrap();
    }
    assert!(!table_dir.join("strata-999-Data.db").exists());
    assert!(!table_dir.join("strata-1000-Data.db.tmp").exists());
    assert!(!table_dir.join("MANIFEST.tmp").exists());
    assert!(table_dir.join(&sstable).exists());
    // The unlisted file is intact in the quarantine, byte for byte.
    let q = quarantine::list(&strata::fs::Fs::new(), &table_dir).unwrap();
    assert_eq!(q.len(), 1, "{q:?}");
    assert_eq!(std::fs::read(&q[0].path).unwrap(), unlisted);
    // A second open has nothing more to move, and the quarantine is left alone.
    let db = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).unwrap();
    assert!(db.warnings().is_empty(), "{:?}", db.warnings());
    db.close().unwrap();
    assert_eq!(
        quarantine::list(&strata::fs::Fs::new(), &table_dir)
            .unwrap()
            .len(),
        1
    );
}
