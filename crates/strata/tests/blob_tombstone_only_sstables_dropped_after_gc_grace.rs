//! Tombstones must not pile up under the blob strategy: once the sstables a
//! tombstone-only sstable deleted from are gone and gc grace has passed, it is
//! dropped too, even though an older sstable of unrelated live files overlaps
//! it (Cassandra's one-timestamp overlap rule alone would keep it for as long
//! as that old file lives). Before gc grace it stays.

mod common;

use common::blob::*;

#[test]
fn blob_tombstone_only_sstables_dropped_after_gc_grace() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), "");
    // Old files that live on: their sstable spans the ring, so it overlaps
    // everything later by token range.
    for f in 0..8 {
        write_file(&t, &clock, &format!("keep{f}"), 0..2, 1);
    }
    t.flush().expect("flush K");
    for f in 0..4 {
        write_file(&t, &clock, &format!("tmp{f}"), 0..4, 1);
    }
    t.flush().expect("flush D");
    for f in 0..4 {
        delete_file(&t, &clock, &format!("tmp{f}"));
    }
    t.flush().expect("flush T");
    let [k, d, tomb]: [u64; 3] = ids(&t).try_into().expect("three sstables");
    let range = |id: u64| {
        let v = t.view();
        let s = v
            .sstables()
            .iter()
            .find(|s| s.id() == id)
            .cloned()
            .expect("live");
        (s.first_key().token, s.last_key().token)
    };
    let ((k_lo, k_hi), (t_lo, t_hi)) = (range(k), range(tomb));
    assert!(
        k_lo <= t_hi && t_lo <= k_hi,
        "K overlaps T: the coarse rule blocks T"
    );

    // D goes at once (all deleted); T stays: gc grace (an hour) has not passed.
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(records[0].inputs, vec![d]);
    assert_eq!(ids(&t), vec![k, tomb]);
    let acc = t
        .live_bytes()
        .into_iter()
        .find(|(i, _)| *i == tomb)
        .and_then(|(_, l)| l)
        .expect("T accounted");
    assert!(acc.deletions_target_nothing, "its targets were dropped");

    clock.advance_seconds(3_599);
    assert!(settle(&t).is_empty(), "not before gc grace");
    clock.advance_seconds(2);
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    assert_eq!(
        (records[0].kind.as_str(), records[0].inputs.clone()),
        ("drop", vec![tomb])
    );
    assert_eq!(ids(&t), vec![k]);
    for f in 0..8 {
        assert_eq!(read_file(&t, &format!("keep{f}")).len(), 2);
    }
    for f in 0..4 {
        assert!(read_file(&t, &format!("tmp{f}")).is_empty());
    }
}

/// The opposite case: a tombstone whose target is still held (the target file
/// shares its sstable with a live file, so that sstable is not dropped) keeps
/// its sstable past gc grace: dropping it would bring the deleted file back.
#[test]
fn a_tombstone_whose_target_is_still_held_stays() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), ", 'max_sstable_fragmentation': 1000");
    write_file(&t, &clock, "gone", 0..4, 1);
    write_file(&t, &clock, "live", 0..4, 1);
    t.flush().expect("flush S");
    delete_file(&t, &clock, "gone");
    t.flush().expect("flush T");
    clock.advance_seconds(10_000);
    assert!(settle(&t).is_empty(), "T must stay while S holds 'gone'");
    assert!(read_file(&t, "gone").is_empty(), "no resurrection");
    assert_eq!(read_file(&t, "live").len(), 4);
}

/// A file deleted and written again lands, with its new blocks, in a flush that
/// also holds an older write (a late write with an old timestamp): by the
/// coarse rule that flush's oldest write pins the tombstones forever. The
/// row-level check sees the re-written blocks are newer than the deletion, so
/// the tombstones go once gc grace has passed, and the new file stays whole.
#[test]
fn a_rewritten_file_in_a_mixed_flush_does_not_pin_the_tombstones() {
    use strata::clock::Clock;
    use strata::schema::WriteOptions;
    use strata::types::Value;
    let dir = tempfile::tempdir().expect("tempdir");
    // Issue 12's row-level expiry check off: the blob accounting alone decides.
    let (clock, _db, t) = setup(dir.path(), ", 'row_level_expiry_check': false");
    write_file(&t, &clock, "x", 0..4, 1);
    t.flush().expect("flush S");
    delete_file(&t, &clock, "x");
    t.flush().expect("flush T");
    let tomb = *ids(&t).last().expect("T");
    write_file(&t, &clock, "x", 0..4, 2);
    // A late write whose timestamp is older than the deletion.
    t.insert(
        &[
            ("file", Value::Text("late".into())),
            ("block", Value::Int(0)),
            ("data", Value::Blob(block("late", 0, 1))),
        ],
        &WriteOptions {
            timestamp_micros: Some(clock.now_micros() - 60_000_000),
            ttl_seconds: None,
        },
    )
    .expect("late write");
    t.flush().expect("flush W");
    let w = *ids(&t).last().expect("W");
    let w_min = t
        .view()
        .sstables()
        .iter()
        .find(|s| s.id() == w)
        .map(|s| s.stats().min_timestamp_micros)
        .expect("W");
    let t_max = t
        .view()
        .sstables()
        .iter()
        .find(|s| s.id() == tomb)
        .map(|s| s.stats().max_timestamp_micros)
        .expect("T");
    assert!(
        w_min < t_max,
        "W's oldest write predates the deletion: the coarse rule pins T"
    );
    settle(&t); // S goes (superseded)
    clock.advance_seconds(3_601);
    let records = settle(&t);
    assert!(
        records
            .iter()
            .any(|r| r.kind == "drop" && r.inputs == vec![tomb]),
        "{records:?}"
    );
    assert_eq!(ids(&t), vec![w]);
    let blocks = read_file(&t, "x");
    assert_eq!(blocks.len(), 4);
    for (b, d) in blocks {
        assert_eq!(d, block("x", b, 2));
    }
    assert_eq!(read_file(&t, "late").len(), 1);
}
