//! A compression dictionary is part of the data: without it the sstables that
//! name it cannot be decoded. This test checks the three ways that can go
//! wrong, and that none of them loses or deletes anything:
//! - a training whose dictionary file fails to write stores nothing, and the
//!   table keeps writing without a dictionary;
//! - a damaged dictionary makes exactly the sstables that name it unreadable at
//!   the next open, with the dictionary's path in the note; the files stay, and
//!   every other sstable still reads;
//! - putting the dictionary back makes everything read again.

mod common;

use common::upgrade::{missing, open, sstable_of};
use strata::codec::Codec;
use strata::dictionary;
use strata::fs::Fault;
use strata::table_dictionary::TrainOptions;

const DICT: &str = "compression = {'class': 'ZstdWithDictsCompressor', 'compression_level': 3}";

#[test]
fn damaged_dictionary_sets_its_sstables_aside() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    // One LZ4 sstable, then the dictionary class: the first flush under it has
    // no dictionary yet and trains one from the live data afterwards.
    sstable_of(&t, 0..1000);
    db.alter_table_options("ks", "t", DICT).expect("alter");

    // A failed dictionary write stores nothing and the flush still succeeds.
    db.fs()
        .faults()
        .inject("CompressionDictionary", Fault::WriteError, 1);
    sstable_of(&t, 1000..2000);
    db.fs().faults().clear();
    let table_dir = t.dir().to_path_buf();
    assert!(dictionary::list(db.fs(), &table_dir)
        .expect("list")
        .is_empty());
    let stats = t.dictionary_stats().expect("stats");
    assert!(
        stats
            .last_error
            .as_deref()
            .is_some_and(|e| e.contains("CompressionDictionary")),
        "{stats:?}"
    );
    assert_eq!(
        t.view()
            .sstables()
            .iter()
            .max_by_key(|s| s.id())
            .map(|s| s.stats().codec),
        Some(Codec::Zstd { level: 3 }),
        "written without a dictionary while there is none"
    );

    // The next flush trains it; later sstables use it.
    sstable_of(&t, 2000..3000);
    let d = t.compression_dictionary().expect("trained after the flush");
    sstable_of(&t, 3000..4000);
    let dict_ids: Vec<Option<u32>> = t
        .view()
        .sstables()
        .iter()
        .map(|s| s.stats().codec.dictionary())
        .collect();
    assert_eq!(
        dict_ids.iter().filter(|&&id| id == Some(d.id())).count(),
        1,
        "{dict_ids:?}"
    );
    // Retrained on demand: sstables on the first dictionary keep reading.
    let r = t
        .train_compression_dictionary(&TrainOptions::default())
        .expect("train");
    assert_eq!(r.dictionary_id, Some(d.id() + 1));
    sstable_of(&t, 4000..5000);
    assert!(missing(&t, 0..5000).is_empty());
    let files_before: Vec<_> = std::fs::read_dir(&table_dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    drop(d);
    drop(t);
    db.close().expect("close");

    // Damage the first dictionary: one byte.
    let path = table_dir.join(dictionary::file_name(1));
    let good = std::fs::read(&path).expect("read dictionary");
    let mut bad = good.clone();
    bad[60] ^= 0x40;
    std::fs::write(&path, &bad).expect("damage");
    let (db, t) = open(dir.path(), None);
    let unreadable = t.unreadable_sstables();
    assert_eq!(unreadable.len(), 1, "exactly the sstable on dictionary 1");
    let note = t.open_notes().join("\n");
    assert!(
        note.contains("CompressionDictionary-1.db") && note.contains("checksum mismatch"),
        "{note}"
    );
    // A read that could need that sstable fails, naming the dictionary; none
    // returns a wrong or missing row. (Keys are spread over the whole token
    // range, so most reads could need it.)
    let mut failed = 0;
    for k in (0..5000).step_by(25) {
        match t.select(
            &[strata::types::Value::Int(k)],
            &strata::data::ClusteringRange::ALL,
            false,
            1,
        ) {
            Ok(rows) => assert_eq!(
                rows.first().map(|r| r[1].1.clone()),
                Some(Some(strata::types::Value::Text(common::upgrade::value(k)))),
                "key {k}"
            ),
            Err(e) => {
                let e = e.to_string();
                assert!(e.contains("CompressionDictionary-1.db"), "{e}");
                failed += 1;
            }
        }
    }
    assert!(
        failed >= 40,
        "reads of the sstable's keys (3000..4000) must fail: {failed}"
    );
    drop(t);
    db.close().expect("close");
    let files_after: Vec<_> = std::fs::read_dir(&table_dir)
        .expect("ls")
        .map(|e| e.expect("entry").file_name())
        .collect();
    for f in &files_before {
        assert!(files_after.contains(f), "{f:?} was removed");
    }

    // Restored, everything reads.
    std::fs::write(&path, &good).expect("restore");
    let (_db, t) = open(dir.path(), None);
    assert!(t.unreadable_sstables().is_empty());
    assert!(missing(&t, 0..5000).is_empty());
}
