//! After a crash, opening a table removes what a flush or compaction left behind
//! before its commit point (temporary files, sstables the manifest does not list)
//! and keeps everything the manifest lists; a listed sstable that is missing stops
//! the open with an error naming it.

use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::types::Value;

#[test]
fn leftovers_are_removed_and_listed_sstables_kept() {
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
    let listed: Vec<_> = std::fs::read_dir(&table_dir)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    let sstable = listed
        .iter()
        .find(|n| n.to_string_lossy().ends_with("-Data.db"))
        .expect("one sstable")
        .clone();
    // Simulate a crash mid-flush and mid-compaction.
    std::fs::write(
        table_dir.join("strata-999-Data.db"),
        b"unlisted output of a crashed flush",
    )
    .unwrap();
    std::fs::write(table_dir.join("strata-1000-Data.db.tmp"), b"partial").unwrap();
    std::fs::write(table_dir.join("MANIFEST.tmp"), b"partial manifest").unwrap();
    {
        let db = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).unwrap();
        let t = db.table("ks", "t").unwrap();
        assert_eq!(t.stats().sstable_count, 1);
        for i in 0..100 {
            assert_eq!(
                t.select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
                    .unwrap()
                    .len(),
                1
            );
        }
        db.close().unwrap();
    }
    assert!(!table_dir.join("strata-999-Data.db").exists());
    assert!(!table_dir.join("strata-1000-Data.db.tmp").exists());
    assert!(!table_dir.join("MANIFEST.tmp").exists());
    assert!(table_dir.join(&sstable).exists());

    // A listed sstable that vanished is an error naming it, not silent data loss.
    std::fs::remove_file(table_dir.join(&sstable)).unwrap();
    let err = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).unwrap_err();
    assert!(
        err.to_string().contains(&*sstable.to_string_lossy()),
        "{err}"
    );
}
