//! Inspection commands open the data directory read-only: no lock, no commit-log
//! segment, no quarantine move, no flush, no compaction. Before, every open
//! created a commit-log segment, so `tablestats` and `verify` failed on a
//! read-only file system and disturbed a running owner. This test takes a
//! snapshot of every file (name, size, modification time, contents hash) around
//! read-only opens of a directory that has unflushed commit-log records and an
//! unlisted sstable, and requires it unchanged; writes are refused.

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use strata::db::Database;
use strata::error::Error;
use strata::tablestats::TableStats;
use strata::types::Value;

fn tree(dir: &Path, out: &mut BTreeMap<String, (u64, std::time::SystemTime, u32)>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let e = e.unwrap();
        let p = e.path();
        let m = e.metadata().unwrap();
        if m.is_dir() {
            out.insert(p.display().to_string(), (0, m.modified().unwrap(), 0));
            tree(&p, out);
        } else {
            let crc = crc32c::crc32c(&std::fs::read(&p).unwrap());
            out.insert(
                p.display().to_string(),
                (m.len(), m.modified().unwrap(), crc),
            );
        }
    }
}

#[test]
fn read_only_opens_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 300, 2);
    {
        // Unflushed records in the log (dropped without close), and a stray file.
        let db = common::open(dir.path());
        common::write(&db.table("ks", "t").unwrap(), 300..400);
        drop(db);
    }
    std::fs::write(
        common::table_dir(dir.path()).join("strata-77-Data.db"),
        b"stray",
    )
    .unwrap();
    let mut before = BTreeMap::new();
    tree(dir.path(), &mut before);

    let mut ro = common::options();
    ro.read_only = true;
    for _ in 0..2 {
        let db = Database::open(dir.path(), ro.clone()).unwrap();
        assert!(db.is_read_only());
        let w = db.warnings().join("\n");
        assert!(w.contains("not replayed"), "{w}");
        assert!(w.contains("strata-77-Data.db"), "{w}");
        let t = db.table("ks", "t").unwrap();
        // What is in sstables is readable; the unreplayed log is not shown.
        assert_eq!(common::readable(&t, 0..300), 300);
        assert!(strata::maintenance::verify(&t).is_clean());
        let _ = TableStats::of(&t);
        let err = t
            .insert(
                &[("k", Value::Int(1)), ("v", Value::Text("x".into()))],
                &Default::default(),
            )
            .unwrap_err();
        assert!(matches!(err, Error::ReadOnly(_)), "{err}");
        assert!(db.create_keyspace("other").is_err());
        db.close().unwrap();
    }
    let mut after = BTreeMap::new();
    tree(dir.path(), &mut after);
    assert_eq!(before, after, "a read-only open changed the directory");

    // The owner's next open still replays what the read-only opens left alone.
    let db = common::open(dir.path());
    assert_eq!(common::readable(&db.table("ks", "t").unwrap(), 0..400), 400);
    db.close().unwrap();
}
