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
    let wrong = t.verify_live_bytes().expect("recompute");
    assert!(
        wrong.is_empty(),
        "and equal to a recomputation from the files: {wrong:?}"
    );

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
    let wrong = t.verify_live_bytes().expect("recompute");
    assert!(wrong.is_empty(), "{wrong:?}");
}

/// `strata verify` checks the persisted accounting against the files: a
/// manifest whose figures were tampered with (the strategy would drop files on
/// them) is reported, naming the sstable.
#[test]
fn verify_reports_accounting_that_does_not_match_the_files() {
    let dir = tempfile::tempdir().expect("tempdir");
    let s = {
        let (clock, db, t) = setup(dir.path(), ", 'max_sstable_fragmentation': 1000");
        write_file(&t, &clock, "a", 0..2, 1);
        write_file(&t, &clock, "b", 0..2, 1);
        t.flush().expect("flush");
        assert!(strata::maintenance::verify(&t).is_clean());
        let s = ids(&t)[0];
        drop(t);
        db.close().expect("close");
        s
    };
    // Claim every partition of S is dead: a lie that would drop live files.
    let path = dir.path().join("ks").join("files").join("MANIFEST");
    let text = std::fs::read_to_string(&path).expect("manifest");
    let (_, body) = text.split_once('\n').expect("header line");
    let mut json: serde_json::Value = serde_json::from_str(body).expect("json");
    json["sstables"][0]["live"]["dead_partitions"] = serde_json::json!(2);
    let body = serde_json::to_vec_pretty(&json).expect("render");
    let mut out = format!("strata-manifest v1 crc32c={:08x}\n", crc32c::crc32c(&body)).into_bytes();
    out.extend_from_slice(&body);
    std::fs::write(&path, out).expect("write manifest");

    let clock = strata::clock::SimClock::fixed();
    let db = open(dir.path(), &clock);
    let t = db.table("ks", "files").expect("table");
    let report = strata::maintenance::verify(&t);
    assert_eq!(report.problems.len(), 1, "{report:?}");
    assert_eq!(report.problems[0].sstable_id, s);
    assert!(
        report.problems[0].reason.contains("blob accounting"),
        "{report:?}"
    );
}
