//! The blob strategy's accounting is committed with each edit in the manifest,
//! so after a restart every sstable carries the same figures, and they equal
//! the accounting recomputed from the files (live_bytes invariant 2). An
//! sstable that lost its accounting (a manifest from before the strategy, or
//! an ALTER to it) is accounted at the next decision.

mod common;

use common::blob::*;

#[test]
fn blob_live_bytes_survive_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let before = {
        let (clock, _db, t) = setup(dir.path(), ", 'max_sstable_fragmentation': 1000");
        for f in 0..6 {
            write_file(&t, &clock, &format!("f{f}"), 0..3, 1);
        }
        t.flush().expect("flush");
        write_file(&t, &clock, "g", 0..3, 1);
        t.flush().expect("flush");
        for f in 0..3 {
            delete_file(&t, &clock, &format!("f{f}"));
        }
        t.flush().expect("flush");
        let live = t.live_bytes();
        assert!(live.iter().all(|(_, l)| l.is_some()), "{live:?}");
        assert!(
            live.iter()
                .any(|(_, l)| l.is_some_and(|l| l.dead_bytes > 0)),
            "half of the first sstable is dead: {live:?}"
        );
        live
    };
    let clock = strata::clock::SimClock::fixed();
    let db = open(dir.path(), &clock);
    let t = db.table("ks", "files").expect("table");
    assert_eq!(t.live_bytes(), before, "persisted across the restart");
    let fresh: Vec<_> = t
        .recompute_live_bytes()
        .expect("recompute")
        .into_iter()
        .map(|(id, l)| (id, Some(l)))
        .collect();
    assert_eq!(fresh, before, "and equal to a recomputation from the files");

    // Switching away clears the figures at the next edit (no stale accounting
    // survives edits it does not follow); switching back recomputes them.
    db.alter_table_options(
        "ks",
        "files",
        "compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
    )
    .expect("alter");
    write_file(&t, &clock, "h", 0..1, 1);
    t.flush().expect("flush");
    assert!(t.live_bytes().iter().all(|(_, l)| l.is_none()));
    db.alter_table_options(
        "ks",
        "files",
        "compaction = {'class': 'BlobCompactionStrategy', 'max_sstable_fragmentation': 1000}",
    )
    .expect("alter");
    settle(&t);
    let recomputed = t.live_bytes();
    assert!(recomputed.iter().all(|(_, l)| l.is_some()));
    let fresh: Vec<_> = t
        .recompute_live_bytes()
        .expect("recompute")
        .into_iter()
        .map(|(id, l)| (id, Some(l)))
        .collect();
    assert_eq!(recomputed, fresh);
}
