//! Scenario: `verify` beside a running `stress write` reported a live sstable
//! missing ("sstable 2 is unreadable ... No such file or directory") and
//! exited CORRUPT. The read-only open had read the manifest, then the owner's
//! compaction replaced sstable 2 and deleted its file before the open reached
//! it. Here an owner flushes and major-compacts in a loop while read-only
//! opens of the same directory run beside it: every one must see a whole live
//! set (no unreadable sstable) holding every key written before it began.

mod common;

use std::sync::atomic::{AtomicBool, AtomicI32, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::db::Database;

#[test]
fn read_only_opens_beside_compactions_never_miss_an_sstable() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 400, 4);
    let db = common::open(dir.path());
    let t = db.table("ks", "t").unwrap();
    let stop = Arc::new(AtomicBool::new(false));
    let written = Arc::new(AtomicI32::new(400));
    let owner = {
        let (stop, written, t) = (stop.clone(), written.clone(), t.clone());
        let limiter = db.compaction_limiter().clone();
        std::thread::spawn(move || {
            let mut rounds = 0u32;
            while !stop.load(Ordering::Relaxed) {
                let from = written.load(Ordering::SeqCst);
                common::write(&t, from..from + 10);
                t.flush().unwrap();
                written.store(from + 10, Ordering::SeqCst);
                t.compact_major(&limiter).unwrap();
                rounds += 1;
            }
            rounds
        })
    };
    let mut ro = common::options();
    ro.read_only = true;
    let started = Instant::now();
    let mut opens = 0;
    while started.elapsed() < Duration::from_secs(3) {
        let before = written.load(Ordering::SeqCst);
        let reader = Database::open(dir.path(), ro.clone()).unwrap();
        let rt = reader.table("ks", "t").unwrap();
        assert!(
            rt.unreadable_sstables().is_empty(),
            "open {opens}: {:?}",
            rt.open_notes()
        );
        // Keys are flushed before `written` moves past them: all of them read
        // (checked on every 16th open, so that opens come fast).
        if opens % 16 == 0 {
            assert_eq!(
                common::readable(&rt, 0..before),
                before as usize,
                "open {opens}"
            );
        }
        reader.close().unwrap();
        opens += 1;
    }
    stop.store(true, Ordering::Relaxed);
    let rounds = owner.join().unwrap();
    eprintln!("{opens} read-only opens beside {rounds} compactions");
    assert!(
        rounds >= 3,
        "only {rounds} compactions ran beside {opens} opens"
    );
    db.close().unwrap();
}
