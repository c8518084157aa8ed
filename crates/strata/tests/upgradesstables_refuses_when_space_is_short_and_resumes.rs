//! The seed's worry, "will it be possible to recompact the entire table with
//! the limited remaining space?", under a `max_disk_bytes` quota:
//! 1. with a snapshot holding every old file, rewriting frees nothing, so the
//!    run needs room for the whole new table: it is refused before writing,
//!    with a message that says how much is needed, how much there is, and
//!    that clearing the snapshot would make room;
//! 2. without it, the same run fits (peak = one sstable's output);
//! 3. a run that fails midway (a write error on its second output) leaves a
//!    consistent table, and the next run continues with what is left.

mod common;

use common::upgrade::*;
use strata::fs::Fault;
use strata::maintenance;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};

#[test]
fn refused_with_a_snapshot_then_fits_without_it() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    populate(&t);
    let used = live_bytes(&t);
    db.close().expect("close");
    // A quota leaving room for about half the table again.
    let quota = used + used / 2;
    let (db, t) = open(dir.path(), Some(quota));
    db.alter_table_options("ks", "t", ZSTD).expect("alter");
    maintenance::snapshot(&t, "keep").expect("snapshot");
    let ids: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    let err = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |_, _| {})
        .expect_err("refused: the snapshot keeps every old file");
    let msg = err.to_string();
    assert!(
        msg.contains("needs up to") && msg.contains("allows"),
        "{msg}"
    );
    assert!(
        msg.contains("clearsnapshot"),
        "says where room would come from: {msg}"
    );
    assert!(msg.contains("nothing was rewritten"), "{msg}");
    let now: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    assert_eq!(now, ids, "a refused run changes nothing");
    // The dry run says the same without failing, and warns about the snapshot.
    let dry = upgrade_sstables(
        &t,
        &UpgradeOptions {
            dry_run: true,
            ..UpgradeOptions::default()
        },
        &mut |_, _| {},
    )
    .expect("dry run");
    assert!(
        dry.warnings.iter().any(|w| w.contains("snapshot")),
        "{dry:#?}"
    );
    assert!(dry.peak_extra_bytes_estimate > dry.headroom_bytes.unwrap_or(u64::MAX));

    maintenance::clear_snapshot(&t, Some("keep")).expect("clearsnapshot");
    let run = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |_, _| {})
        .expect("fits without the snapshot");
    assert_eq!(run.rewritten.len(), 3);
    let largest = run
        .candidates
        .iter()
        .map(|c| c.file_bytes)
        .max()
        .unwrap_or(0);
    assert!(run.peak_extra_bytes_estimate <= 2 * largest);
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());
    db.close().expect("close");
}

#[test]
fn a_run_stopped_midway_leaves_a_consistent_table_and_the_next_one_finishes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let o = options(None);
    let fs = o.fs.clone();
    let db = strata::db::Database::open(dir.path(), o).expect("open");
    let t = db.create_table_cql(CREATE).expect("create");
    populate(&t);
    db.alter_table_options("ks", "t", ZSTD).expect("alter");
    // Outputs get the next ids in order: fail the second one's writes.
    let next = t
        .view()
        .sstables()
        .iter()
        .map(|s| s.id())
        .max()
        .unwrap_or(0)
        + 1;
    fs.faults().inject(
        &format!("strata-{}-Data", next + 1),
        Fault::WriteError,
        u64::MAX,
    );
    let err = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |_, _| {})
        .expect_err("the second rewrite fails");
    assert!(
        err.to_string().contains(&format!("strata-{}", next + 1)),
        "{err}"
    );
    fs.faults().clear();
    let stats = strata::tablestats::TableStats::of(&t);
    assert_eq!(
        stats.sstables_with_other_compression, 2,
        "one rewritten, two left"
    );
    assert_eq!(
        missing(&t, 0..10_000),
        Vec::<i32>::new(),
        "nothing lost midway"
    );
    let run = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |_, _| {})
        .expect("the next run continues");
    assert_eq!(run.candidates.len(), 2);
    assert_eq!(run.rewritten.len(), 2);
    assert_eq!(
        strata::tablestats::TableStats::of(&t).sstables_with_other_compression,
        0
    );
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());
    drop(t);
    db.close().expect("close");
    // And after a restart.
    let (db, t) = open(dir.path(), None);
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());
    db.close().expect("close");
}
