//! One sstable whose tail is damaged (it cannot even be opened) used to make every
//! command fail, `verify` and `scrub` included. Now the database opens, reports it
//! (warning, tablestats, verify with file and offset), reads that could need it
//! fail naming the file, and everything else works: reads of keys outside its
//! token range, writes, flushes, another table.

mod common;

use std::sync::Arc;
use strata::error::Error;
use strata::table::Table;
use strata::tablestats::TableStats;
use strata::types::{self, Value};

/// Keys 0..900 ordered by token, so that three flushes of a third each give three
/// sstables with disjoint token ranges.
fn keys_by_token() -> Vec<i32> {
    let mut keys: Vec<i32> = (0..900).collect();
    keys.sort_by_key(|&k| strata::token::token_of(&types::serialize(&Value::Int(k))));
    keys
}

fn write_keys(t: &Arc<Table>, keys: &[i32]) {
    for &k in keys {
        common::write(t, k..k + 1);
    }
}

#[test]
fn one_damaged_sstable_does_not_take_the_database_down() {
    let dir = tempfile::tempdir().unwrap();
    let keys = keys_by_token();
    let thirds: Vec<&[i32]> = keys.chunks(300).collect();
    {
        let db = common::open(dir.path());
        let t = db.create_table_cql(common::CREATE).unwrap();
        let other = db
            .create_table_cql("CREATE TABLE ks.other (k int PRIMARY KEY, v text)")
            .unwrap();
        for third in &thirds {
            write_keys(&t, third);
            t.flush().unwrap();
        }
        common::write(&other, 0..50);
        db.close().unwrap();
    }
    let tdir = common::table_dir(dir.path());
    let files = common::sstables(&tdir);
    assert_eq!(files.len(), 3);
    // The middle sstable (by id = by flush = by token third): damage its footer.
    let damaged = &files[1];
    let mut bytes = std::fs::read(damaged).unwrap();
    let n = bytes.len();
    bytes[n - 20] ^= 0x5a;
    std::fs::write(damaged, &bytes).unwrap();

    let db = common::open(dir.path());
    let name = damaged.file_name().unwrap().to_string_lossy().into_owned();
    assert!(
        db.warnings().iter().any(|w| w.contains(&name)),
        "{:?}",
        db.warnings()
    );
    let t = db.table("ks", "t").unwrap();
    let stats = TableStats::of(&t);
    assert_eq!(stats.sstable_count, 2);
    assert_eq!(stats.unreadable_sstable_count, 1);
    let report = strata::maintenance::verify(&t);
    assert!(!report.is_clean());
    assert!(
        report
            .problems
            .iter()
            .any(|p| format!("{p:?}").contains(&name)),
        "{report:?}"
    );

    // Reads of the damaged third fail naming the file; the rest read back.
    for &k in thirds[1] {
        match common::read(&t, k) {
            Err(Error::Corruption { path, .. }) => assert_eq!(&path, damaged),
            other => panic!("key {k} of the damaged sstable: {other:?}"),
        }
    }
    for &k in thirds[0].iter().chain(thirds[2]) {
        assert!(common::read(&t, k).unwrap(), "key {k}");
    }
    // Writes and flushes go on; the other table is untouched.
    common::write(&t, 1000..1100);
    t.flush().unwrap();
    let other = db.table("ks", "other").unwrap();
    assert_eq!(common::readable(&other, 0..50), 50);
    db.close().unwrap();
    // Nothing was deleted: the damaged file is still there for salvage.
    assert!(damaged.exists());
}
