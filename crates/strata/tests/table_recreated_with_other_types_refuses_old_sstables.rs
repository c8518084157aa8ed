//! A table created again with other column types must never read the old
//! table's sstables as its own: the bytes would decode as the wrong types. Since
//! format version 2 every sstable records its column signature, and both ways
//! the old files can reach the new table are refused with a reason naming the
//! first column that differs: `sstable import` (which checks columns, not table
//! ids) and a file copied over a listed sstable, even when table id and
//! generation happen to match (a fresh data directory numbers from the start).
//! Since format version 10 the copied file is refused first for its table UUID
//! (it was written for another table of that name); the columns are what
//! `sstable import`, which adopts other tables' files on purpose, still checks.

mod common;

use strata::types::Value;

#[test]
fn old_sstables_with_other_column_types_are_refused() {
    let old = tempfile::tempdir().unwrap();
    common::populated(old.path(), 100, 1);
    let old_files = common::sstables(&common::table_dir(old.path()));
    assert_eq!(old_files.len(), 1);

    let fresh = tempfile::tempdir().unwrap();
    let db = common::open(fresh.path());
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k int PRIMARY KEY, v int) WITH \
             compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
        )
        .unwrap();
    // Import checks the columns and refuses, changing nothing.
    let err = strata::repair::import_sstables(&t, &old_files).unwrap_err();
    let msg = err.to_string();
    assert!(
        msg.contains("column v is text in the file, int in the schema"),
        "{msg}"
    );
    assert!(t.view().sstables().is_empty());

    // The new table's own sstable, then the old file copied over it.
    for k in 0..10 {
        t.insert(
            &[("k", Value::Int(k)), ("v", Value::Int(k))],
            &Default::default(),
        )
        .unwrap();
    }
    t.flush().unwrap();
    let new_files = common::sstables(&common::table_dir(fresh.path()));
    assert_eq!(new_files.len(), 1);
    drop(t);
    db.close().unwrap();
    std::fs::copy(&old_files[0], &new_files[0]).unwrap();
    let db = common::open(fresh.path());
    let t = db.table("ks", "t").unwrap();
    let unreadable = t.unreadable_sstables();
    assert_eq!(unreadable.len(), 1, "{:?}", db.warnings());
    let ours = t.schema().table_uuid().expect("a new table has a UUID");
    assert!(
        unreadable[0]
            .reason
            .contains(&format!("this table's UUID is {ours}")),
        "{}",
        unreadable[0].reason
    );
    // Reads that could need the file fail instead of decoding text as int.
    assert!(t
        .select(
            &[Value::Int(3)],
            &strata::data::ClusteringRange::ALL,
            false,
            1
        )
        .is_err());
    assert!(!strata::maintenance::verify(&t).is_clean());
    drop(t);
    db.close().unwrap();
}
