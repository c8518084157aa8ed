//! Scrub rewrites sstables one at a time and each copy replaces its input at
//! once, so under a `max_disk_bytes` quota that fits one more copy of the
//! largest sstable (but not of all of them) it completes: inputs are unlinked
//! as it goes, not when it ends. With a snapshot holding the inputs, it warns.

mod common;

use common::upgrade::*;
use strata::maintenance::{self, scrub, ScrubOptions};

#[test]
fn scrub_frees_each_input_as_it_goes() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    populate(&t);
    drop(t);
    db.close().expect("close");
    // Measured after a reopen: the commit log the writes left is gone by then.
    let (db, t) = open(dir.path(), Some(u64::MAX / 2));
    let used = t.disk_room().expect("room").quota.expect("quota").0;
    let largest = t
        .view()
        .sstables()
        .iter()
        .map(|s| s.file_size())
        .max()
        .unwrap_or(0);
    let total = live_bytes(&t);
    db.close().expect("close");
    let quota = used + largest + largest / 4;
    assert!(quota < used + total, "all copies at once would not fit");
    let (db, t) = open(dir.path(), Some(quota));
    eprintln!(
        "used {used} (reopened: {:?}), sstables {total}, largest {largest}, quota {quota}",
        t.disk_room().expect("room").quota
    );
    let report = scrub(&t, ScrubOptions::default()).expect("scrub fits one copy at a time");
    assert_eq!(report.sstables.len(), 3);
    assert!(
        report.snapshot.is_none() && report.warnings.is_empty(),
        "{report:#?}"
    );
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());

    maintenance::snapshot(&t, "held").expect("snapshot");
    let report = scrub(&t, ScrubOptions::default());
    // The snapshot keeps every input: the scrub warns first, and then runs out
    // of room once the copies no longer fit (refused cleanly, nothing lost).
    match report {
        Ok(r) => assert!(r.warnings.iter().any(|w| w.contains("snapshot")), "{r:#?}"),
        Err(e) => assert!(e.to_string().contains("max_disk_bytes"), "{e}"),
    }
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());
    db.close().expect("close");
}
