//! An sstable file replaced by a copy of another sstable (of the same table, or
//! of another table) used to pass `verify`: every checksum in it is right. Since
//! format version 2 an sstable records its own identity (table id, generation,
//! columns), and open checks it against the manifest and the schema: the swapped
//! file is set aside as unreadable with a reason naming both identities, `verify`
//! reports it, and reads that could need it fail instead of answering with
//! another sstable's data.

mod common;

#[test]
fn a_copy_of_another_sstable_under_a_listed_name_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = common::open(dir.path());
        let t = db.create_table_cql(common::CREATE).unwrap();
        let other = db
            .create_table_cql("CREATE TABLE ks.other (k int PRIMARY KEY, v text)")
            .unwrap();
        common::write(&t, 0..100);
        t.flush().unwrap();
        common::write(&t, 100..200);
        t.flush().unwrap();
        common::write(&other, 0..100);
        other.flush().unwrap();
        db.close().unwrap();
    }
    let tdir = common::table_dir(dir.path());
    let files = common::sstables(&tdir);
    assert_eq!(files.len(), 2);

    // Same table, another generation.
    std::fs::copy(&files[0], &files[1]).unwrap();
    let db = common::open(dir.path());
    let t = db.table("ks", "t").unwrap();
    let unreadable = t.unreadable_sstables();
    assert_eq!(unreadable.len(), 1, "{:?}", db.warnings());
    assert_eq!(&unreadable[0].path, &files[1]);
    assert!(
        unreadable[0].reason.contains("generation"),
        "{}",
        unreadable[0].reason
    );
    assert!(!strata::maintenance::verify(&t).is_clean());
    drop(t);
    db.close().unwrap();

    // Another table's sstable with the same columns.
    let other = common::sstables(&dir.path().join("ks").join("other"));
    std::fs::copy(&other[0], &files[1]).unwrap();
    let db = common::open(dir.path());
    let t = db.table("ks", "t").unwrap();
    let unreadable = t.unreadable_sstables();
    assert_eq!(unreadable.len(), 1);
    assert!(
        unreadable[0].reason.contains("ks.other"),
        "{}",
        unreadable[0].reason
    );
    drop(t);
    db.close().unwrap();
}
