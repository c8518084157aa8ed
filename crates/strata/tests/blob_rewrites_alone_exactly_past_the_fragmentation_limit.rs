//! Fragmentation (size over live bytes) is checked against
//! `max_sstable_fragmentation` strictly: an sstable exactly at the limit stays,
//! one just past it is rewritten alone, keeping its live blocks and shedding the
//! deleted ones (whose tombstones live in another sstable), and nothing else is
//! touched.

mod common;

use common::blob::*;

fn frag(t: &strata::table::Table, id: u64) -> f64 {
    let s = t
        .view()
        .sstables()
        .iter()
        .find(|s| s.id() == id)
        .cloned()
        .expect("live");
    let dead = t
        .live_bytes()
        .into_iter()
        .find(|(i, _)| *i == id)
        .and_then(|(_, l)| l)
        .expect("accounted")
        .dead_bytes;
    let u = s.stats().uncompressed_bytes;
    u as f64 / (u - dead) as f64
}

#[test]
fn blob_rewrites_alone_exactly_past_the_fragmentation_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    // No rewrites until the limit is set below.
    let (clock, db, t) = setup(dir.path(), ", 'max_sstable_fragmentation': 1000");
    for f in 0..10 {
        write_file(&t, &clock, &format!("f{f}"), 0..4, 1);
    }
    t.flush().expect("flush S");
    write_file(&t, &clock, "other", 0..4, 1);
    t.flush().expect("flush O");
    let s = ids(&t)[0];
    for f in 0..8 {
        delete_file(&t, &clock, &format!("f{f}"));
    }
    t.flush().expect("flush T");
    let f = frag(&t, s);
    assert!((4.5..5.5).contains(&f), "8 of 10 equal files deleted: {f}");

    // Exactly at the limit: left alone.
    db.alter_table_options(
        "ks",
        "files",
        &format!(
            "compaction = {{'class': 'BlobCompactionStrategy', 'max_sstable_fragmentation': {f}}}"
        ),
    )
    .expect("alter");
    assert!(
        settle(&t).is_empty(),
        "fragmentation == limit is not past it"
    );

    // Just past it (the next float below): rewritten, alone.
    let below = f64::from_bits(f.to_bits() - 1);
    db.alter_table_options(
        "ks",
        "files",
        &format!("compaction = {{'class': 'BlobCompactionStrategy', 'max_sstable_fragmentation': {below}}}"),
    )
    .expect("alter");
    let records = settle(&t);
    assert_eq!(records.len(), 1, "{records:?}");
    let r = &records[0];
    assert_eq!(
        (r.kind.as_str(), r.reason.as_str()),
        ("rewrite", "fragmentation")
    );
    assert_eq!(r.inputs, vec![s]);
    assert_eq!(r.partitions_out, 2, "only f8 and f9 are live");
    // Two of ten files remain (the sizes on disk are compressed, with fixed
    // overheads: about 0.3 of the input).
    assert!(
        r.bytes_out * 2 < r.bytes_in,
        "{} of {}",
        r.bytes_out,
        r.bytes_in
    );
    let out = r.outputs[0];
    let acc = t
        .live_bytes()
        .into_iter()
        .find(|(i, _)| *i == out)
        .and_then(|(_, l)| l)
        .expect("output accounted");
    assert_eq!(acc.dead_bytes, 0, "the rewrite kept nothing dead");
    for f in 0..10 {
        let name = format!("f{f}");
        let blocks = read_file(&t, &name);
        if f < 8 {
            assert!(blocks.is_empty(), "{name} stays deleted");
        } else {
            assert_eq!(blocks.len(), 4, "{name}");
            for (b, d) in blocks {
                assert_eq!(d, block(&name, b, 1));
            }
        }
    }
    assert_eq!(read_file(&t, "other").len(), 4);
}
