//! The blob strategy assumes blocks are written once and deleted whole. Each
//! way of breaking that is detected, counted, and handled by merging the
//! sstables involved (as size-tiered compaction would), never by dropping
//! data a read could return, and never resurrecting deleted data:
//! 1. an overwrite of a live block;
//! 2. a partial update: one cell of a live block deleted;
//! 3. a file deleted and written again under the same name (not a violation:
//!    the old blocks are superseded, so they are dropped, not merged).

mod common;

use common::blob::*;
use std::sync::atomic::Ordering;
use strata::schema::WriteOptions;
use strata::types::Value;

#[test]
fn an_overwrite_of_a_live_block_is_merged_not_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), "");
    write_file(&t, &clock, "a", 0..4, 1);
    t.flush().expect("flush S1");
    write_file(&t, &clock, "a", 2..3, 2); // block 2 rewritten in place
    t.flush().expect("flush S2");
    let [s1, s2]: [u64; 2] = ids(&t).try_into().expect("two sstables");
    for (id, l) in t.live_bytes() {
        let l = l.expect("accounted");
        assert!(l.shares_live_rows, "sstable {id} shares block 2");
        assert_eq!(l.dead_partitions, 0, "nothing is deleted");
    }
    assert_eq!(
        t.metrics.blob_overwrites_detected.load(Ordering::Relaxed),
        2
    );
    // Reported where an operator looks.
    let stats = strata::tablestats::TableStats::of(&t)
        .blob
        .expect("blob figures");
    assert_eq!(
        (stats.sstables_sharing_live_rows, stats.overwrites_detected),
        (2, 2)
    );
    assert!(stats.to_owned().last_accounting_error.is_none());
    assert!(strata::tablestats::TableStats::of(&t)
        .to_text()
        .contains("Blob assumption violations (sharing live rows now, detected): 2, 2"));
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0].kind.as_str(), records[0].reason.as_str()),
        ("merge", "overwritten rows")
    );
    assert_eq!(records[0].inputs, vec![s1, s2]);
    let l = t.live_bytes();
    assert_eq!(l.len(), 1);
    assert!(!l[0].1.expect("accounted").shares_live_rows, "resolved");
    let blocks = read_file(&t, "a");
    assert_eq!(blocks.len(), 4);
    for (b, d) in blocks {
        assert_eq!(d, block("a", b, if b == 2 { 2 } else { 1 }), "block {b}");
    }
}

#[test]
fn a_partial_update_is_merged_and_the_deleted_cell_stays_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), "");
    write_file(&t, &clock, "a", 0..4, 1);
    t.flush().expect("flush S1");
    // DELETE data FROM files WHERE file = 'a' AND block = 1: a cell tombstone.
    clock.advance_micros(1);
    let u = t
        .schema()
        .delete_cells(
            &[("file", Value::Text("a".into())), ("block", Value::Int(1))],
            &["data"],
            &WriteOptions::default(),
            strata::clock::Clock::now_micros(clock.as_ref()),
        )
        .expect("delete cell");
    t.apply(&u).expect("apply");
    t.flush().expect("flush S2");
    assert!(t
        .live_bytes()
        .iter()
        .all(|(_, l)| l.is_some_and(|l| l.shares_live_rows)));
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].reason, "overwritten rows");
    let blocks = read_file(&t, "a");
    // Block 1 has no data left but its row marker keeps the row (an INSERT).
    let one = blocks.iter().find(|(b, _)| *b == 1);
    assert!(
        one.is_none() || one.is_some_and(|(_, d)| d.is_empty()),
        "{one:?}"
    );
    for (b, d) in blocks.iter().filter(|(b, _)| *b != 1) {
        assert_eq!(*d, block("a", *b, 1));
    }
}

#[test]
fn a_file_deleted_then_written_again_is_no_violation() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), "");
    write_file(&t, &clock, "a", 0..4, 1);
    t.flush().expect("flush S1");
    delete_file(&t, &clock, "a");
    t.flush().expect("flush T");
    write_file(&t, &clock, "a", 0..4, 2);
    t.flush().expect("flush S2");
    assert_eq!(
        t.metrics.blob_overwrites_detected.load(Ordering::Relaxed),
        0
    );
    let s1 = ids(&t)[0];
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0].kind.as_str(), records[0].inputs.clone()),
        ("drop", vec![s1])
    );
    let blocks = read_file(&t, "a");
    assert_eq!(blocks.len(), 4);
    for (b, d) in blocks {
        assert_eq!(d, block("a", b, 2));
    }
}
