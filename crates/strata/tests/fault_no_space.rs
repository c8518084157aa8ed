//! "No space left on device" (ENOSPC) on the commit log, on the manifest during a
//! flush, and during recovery. (ENOSPC on sstable data files during background
//! flushes, with writers refused once memory is full and resuming when space
//! returns, is `flush_failure_backpressure.rs`.)
//!
//! What docs/DURABILITY.md ("Faults") promises for the commit log, and this test
//! asserts: a failed commit-log write (ENOSPC included) fails the write that hit
//! it with the I/O error naming the segment, and *poisons* the log: every later
//! write is refused with `Error::Poisoned` giving the reason, **even after space
//! returns** (the log never retries); reads keep working; restarting the process
//! recovers every acknowledged write and accepts writes again. A flush, unlike the
//! commit log, is retried: ENOSPC on the manifest delays it, writers are refused
//! once memtables are full, and writing resumes by itself when space returns.

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::clock::SimClock;
use strata::commitlog::{CommitLogOptions, SyncMode};
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::fs::{Fault, IoCause, IoTag};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;
use strata::Error;

const ENOSPC: i32 = 28;

/// A scratch directory on tmpfs when available: these tests inject their faults,
/// so real fsyncs only add time (and flakiness on a busy disk).
fn scratch() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

fn options(sync: SyncMode, segment_size_bytes: u64) -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.commitlog = Some(CommitLogOptions {
        sync,
        segment_size_bytes,
        ignore_replay_errors: false,
        ..CommitLogOptions::default()
    });
    o
}

fn value_of(key: i32) -> String {
    format!("value-{key}-{}", "x".repeat(key.rem_euclid(50) as usize))
}

fn insert(t: &Arc<Table>, key: i32) -> Result<(), Error> {
    t.insert(
        &[("k", Value::Int(key)), ("v", Value::Text(value_of(key)))],
        &WriteOptions::default(),
    )
}

fn assert_readable(t: &Table, keys: impl IntoIterator<Item = i32>, what: &str) {
    for k in keys {
        let rows = t
            .select(&[Value::Int(k)], &ClusteringRange::ALL, false, 1)
            .unwrap_or_else(|e| panic!("{what}: key {k}: {e}"));
        assert_eq!(rows.len(), 1, "{what}: key {k} lost");
        assert_eq!(
            rows[0][1].1,
            Some(Value::Text(value_of(k))),
            "{what}: key {k} altered"
        );
    }
}

fn assert_enospc_on(e: &Error, file_name: impl Fn(&str) -> bool, what: &str) {
    match e {
        Error::Io { path, source } => {
            assert_eq!(source.raw_os_error(), Some(ENOSPC), "{what}: {e}");
            let name = path.file_name().unwrap().to_string_lossy();
            assert!(file_name(&name), "{what}: the error names {path:?}");
        }
        other => panic!("{what}: expected ENOSPC naming the file, got {other:?}"),
    }
}

fn assert_poisoned(e: &Error, because: &str, what: &str) {
    match e {
        Error::Poisoned(reason) => {
            assert!(
                reason.contains(because),
                "{what}: the reason says why: {reason}"
            );
            assert!(
                reason.to_lowercase().contains("no space left"),
                "{what}: the reason carries the OS error: {reason}"
            );
        }
        other => panic!("{what}: expected Error::Poisoned, got {other:?}"),
    }
}

/// Poisoned: refused before and after space returns; readable; then a crash and
/// a restart keep every acknowledged write and accept new ones.
fn poisoned_until_restart(
    dir: &Path,
    opts: impl Fn() -> DbOptions,
    db: Database,
    fs: &strata::fs::Fs,
    acked: std::ops::Range<i32>,
    because: &str,
    what: &str,
) {
    let t = db.table("ks", "t").unwrap();
    assert_poisoned(&insert(&t, -1).unwrap_err(), because, what);
    fs.faults().clear(); // space returns
    assert_poisoned(&insert(&t, -2).unwrap_err(), because, what);
    assert_readable(&t, acked.clone(), what);
    drop(t);
    drop(db); // crash

    let db = Database::open(dir, opts()).unwrap();
    let replay = db.replay_stats().clone();
    assert!(replay.corruptions.is_empty(), "{what}: {replay:?}");
    let t = db.table("ks", "t").unwrap();
    assert_readable(&t, acked, what);
    insert(&t, 1_000_000).expect("a restarted database accepts writes");
    drop(t);
    db.close().unwrap();
}

fn append_enospc(sync: SyncMode) {
    let what = format!("{sync:?}");
    let dir = scratch();
    let opts = || options(sync, CommitLogOptions::DEFAULT_SEGMENT_SIZE_BYTES);
    let o = opts();
    let fs = o.fs.clone();
    let db = Database::open(dir.path(), o).unwrap();
    let t = db
        .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        .unwrap();
    for k in 0..300 {
        insert(&t, k).unwrap();
    }
    fs.faults().inject("CommitLog", Fault::NoSpace, 1);
    let err = insert(&t, 300).unwrap_err();
    assert_enospc_on(&err, |n| n.starts_with("CommitLog-"), &what);
    drop(t);
    poisoned_until_restart(dir.path(), opts, db, &fs, 0..300, "write", &what);
}

#[test]
fn commitlog_append_enospc_fails_the_write_and_poisons_until_restart() {
    append_enospc(SyncMode::Batch);
    append_enospc(SyncMode::Periodic {
        period: SyncMode::DEFAULT_PERIOD,
    });
}

/// Inserts from `k` until the log rolls to a new segment; returns the next key.
fn insert_until_roll(db: &Database, t: &Arc<Table>, mut k: i32) -> i32 {
    let log = db.commitlog().unwrap();
    let active = log.stats().active_segment;
    while log.stats().active_segment == active {
        insert(t, k).unwrap();
        k += 1;
        assert!(k < 10_000, "the log never rolled");
    }
    k
}

#[test]
fn enospc_creating_the_next_segment_poisons_and_loses_nothing() {
    let dir = scratch();
    let opts = || options(SyncMode::Batch, 16 * 1024);
    let o = opts();
    let fs = o.fs.clone();
    let db = Database::open(dir.path(), o).unwrap();
    let t = db
        .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        .unwrap();
    // Just after a roll: the next segment is not made yet (it is made ahead
    // once the active one is half full).
    let mut k = insert_until_roll(&db, &t, 0);
    let log = db.commitlog().unwrap().clone();

    // The disk is full only while the next segment is made ahead: that
    // fails nothing (it is logged), and the roll makes the segment itself.
    let next = log.stats().active_segment + 1;
    fs.faults().inject(
        &strata::commitlog::segment_file_name(next),
        Fault::NoSpace,
        1,
    );
    k = insert_until_roll(&db, &t, k);
    assert_eq!(log.stats().active_segment, next);
    assert!(log.stats().poisoned.is_none());

    // Full both times: the write that needs the segment fails naming it.
    let next = next + 1;
    let next_name = strata::commitlog::segment_file_name(next);
    fs.faults().inject(&next_name, Fault::NoSpace, 2);
    let err = loop {
        match insert(&t, k) {
            Ok(()) => k += 1,
            Err(e) => break e,
        }
        assert!(k < 10_000, "the log never rolled");
    };
    assert_enospc_on(&err, |n| n == next_name, "roll");
    drop((t, log));
    poisoned_until_restart(dir.path(), opts, db, &fs, 0..k, "segment creation", "roll");
}

#[test]
fn enospc_on_the_manifest_delays_flushes_and_writes_resume_when_space_returns() {
    let dir = scratch();
    let opts = || {
        options(
            SyncMode::Batch,
            CommitLogOptions::DEFAULT_SEGMENT_SIZE_BYTES,
        )
    };
    let o = opts();
    let fs = o.fs.clone();
    let db = Database::open(dir.path(), o).unwrap();
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH memtable_flush_threshold_kb = 64",
        )
        .unwrap();
    fs.faults().inject("MANIFEST", Fault::NoSpace, u64::MAX);
    let mut k = 0;
    let refused = loop {
        match insert(&t, k) {
            Ok(()) => k += 1,
            Err(e) => break e,
        }
        assert!(k < 1_000_000, "writes were never refused");
    };
    match &refused {
        Error::Poisoned(reason) => {
            assert!(reason.contains("flush"), "{reason}");
            assert!(
                reason.contains("MANIFEST"),
                "the reason names the file: {reason}"
            );
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
    assert_eq!(
        t.view().sstables().len(),
        0,
        "no sstable became live without its manifest"
    );
    assert_readable(&t, 0..k, "full");

    fs.faults().clear();
    let deadline = Instant::now() + Duration::from_secs(20);
    while insert(&t, k).is_err() {
        assert!(Instant::now() < deadline, "writes did not resume");
        std::thread::sleep(Duration::from_millis(20));
    }
    k += 1;
    t.flush().unwrap();
    assert_eq!(t.view().pending_flushes(), 0);
    for s in t.view().sstables() {
        assert!(
            s.verify(IoTag::new(IoCause::UserRead)).is_empty(),
            "{}",
            s.path().display()
        );
    }
    assert_readable(&t, 0..k, "resumed");
    drop(t);
    db.close().unwrap();
    let db = Database::open(dir.path(), opts()).unwrap();
    assert_readable(&db.table("ks", "t").unwrap(), 0..k, "reopened");
    db.close().unwrap();
}

#[test]
fn enospc_during_recovery_fails_the_open_and_a_later_open_recovers_everything() {
    let dir = scratch();
    let opts = || options(SyncMode::Batch, 64 * 1024);
    {
        let db = Database::open(dir.path(), opts()).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
            .unwrap();
        for k in 0..2_000 {
            insert(&t, k).unwrap();
        }
        assert_eq!(t.view().sstables().len(), 0);
        // crash: everything is in the commit log only
    }
    // The disk is full at restart: recovery cannot flush what it replayed.
    let o = opts();
    o.fs.faults().inject("Data.db", Fault::NoSpace, u64::MAX);
    let err = Database::open(dir.path(), o).unwrap_err();
    assert_enospc_on(&err, |n| n.contains("Data.db"), "recovery");
    // Space returns: nothing was lost by the failed attempt.
    let db = Database::open(dir.path(), opts()).unwrap();
    assert!(
        db.replay_stats().records_replayed >= 2_000,
        "{:?}",
        db.replay_stats()
    );
    let t = db.table("ks", "t").unwrap();
    assert_readable(&t, 0..2_000, "recovered");
    drop(t);
    db.close().unwrap();
}
