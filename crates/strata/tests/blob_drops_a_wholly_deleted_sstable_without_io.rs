//! The blob strategy's central promise (seed 002): once every block in an
//! sstable is deleted, the sstable is dropped whole at zero I/O, while
//! sstables with live blocks are left alone however many there are.
//!
//! S1 holds files a and b, S2 file c, S3 file d's first half and S4 its second.
//! Deleting a and b (their tombstones flush into T) makes S1 wholly superseded:
//! it goes in a drop that writes nothing; S2..S4 stay, nothing is merged, and
//! every remaining file reads back exactly.

mod common;

use common::blob::*;
use strata::fs::IoCause;

#[test]
fn blob_drops_a_wholly_deleted_sstable_without_io() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), "");
    write_file(&t, &clock, "a", 0..8, 1);
    write_file(&t, &clock, "b", 0..8, 1);
    t.flush().expect("flush S1");
    write_file(&t, &clock, "c", 0..8, 1);
    t.flush().expect("flush S2");
    write_file(&t, &clock, "d", 0..4, 1);
    t.flush().expect("flush S3");
    write_file(&t, &clock, "d", 4..8, 1);
    t.flush().expect("flush S4");
    let before = ids(&t);
    assert_eq!(before.len(), 4);
    // Four flush-sized sstables and nothing deleted: nothing to do.
    assert!(
        settle(&t).is_empty(),
        "the blob strategy never merges for count"
    );

    delete_file(&t, &clock, "a");
    delete_file(&t, &clock, "b");
    t.flush().expect("flush T");
    let s1 = before[0];
    let live: std::collections::HashMap<u64, _> = t.live_bytes().into_iter().collect();
    let acc = live[&s1].expect("S1 accounted at the flush commit");
    assert_eq!(acc.dead_partitions, 2, "both partitions of S1 superseded");
    assert!(!acc.shares_live_rows);
    // d's halves are one file across two sstables, not an overwrite.
    for id in &before[1..] {
        let l = live[id].expect("accounted");
        assert_eq!(
            (l.dead_bytes, l.shares_live_rows),
            (0, false),
            "sstable {id}"
        );
    }

    let written_before = t.io().written_bytes[IoCause::Compaction as usize];
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0].kind.as_str(), records[0].reason.as_str()),
        ("drop", "all data deleted")
    );
    assert_eq!(records[0].inputs, vec![s1]);
    assert_eq!(records[0].bytes_out, 0);
    assert_eq!(
        t.io().written_bytes[IoCause::Compaction as usize],
        written_before,
        "a whole-sstable drop writes nothing"
    );
    let after = ids(&t);
    assert!(!after.contains(&s1));
    assert_eq!(after.len(), 4, "S2, S3, S4 and the tombstones remain");
    assert!(read_file(&t, "a").is_empty() && read_file(&t, "b").is_empty());
    for f in ["c", "d"] {
        let blocks = read_file(&t, f);
        assert_eq!(blocks.len(), 8, "file {f}");
        for (b, data) in blocks {
            assert_eq!(data, block(f, b, 1), "file {f} block {b}");
        }
    }
}
