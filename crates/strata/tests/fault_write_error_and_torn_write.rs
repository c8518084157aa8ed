//! Failed and torn writes, on the commit log and on the files a flush writes.
//!
//! Commit log (docs/DURABILITY.md, "Faults"): a failed or torn append fails the
//! write that hit it with the I/O error naming the segment, poisons the log (later
//! writes get `Error::Poisoned`), loses nothing acknowledged, and the torn tail it
//! leaves is cut at the next open (`ReplayStats::torn_tail_bytes`) without error.
//!
//! Flush (sstable data file, its fsync, and the manifest commit): the flush fails
//! with the I/O error naming the file; the memtable stays readable and queued; no
//! half-written sstable enters the live set; once the fault clears the flush
//! succeeds, no temporary or unlisted file is left behind, and every sstable
//! verifies. A crash while the fault is still armed loses nothing acknowledged:
//! the commit log replays it.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeSet;
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

fn options(sync: SyncMode) -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.commitlog = Some(CommitLogOptions {
        sync,
        segment_size_bytes: CommitLogOptions::DEFAULT_SEGMENT_SIZE_BYTES,
        ignore_replay_errors: false,
        ..CommitLogOptions::default()
    });
    // No background compaction: the directory listings below must not race a
    // compaction's temporary output.
    o.concurrent_compactors = 0;
    o
}

/// Incompressible, so that an sstable of a few hundred rows spans several of the
/// file layer's 256 KiB write buffers and a fault can hit mid-file.
fn value_of(key: i32) -> String {
    let mut rng = ChaCha8Rng::seed_from_u64(key as u64);
    (0..1000)
        .map(|_| rng.gen_range(b'a'..=b'z') as char)
        .collect()
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

fn assert_io_error_on(e: &Error, name_part: &str, what: &str) {
    match e {
        Error::Io { path, .. } => assert!(
            path.file_name()
                .unwrap()
                .to_string_lossy()
                .contains(name_part),
            "{what}: the error names {path:?}, expected a file containing {name_part:?}"
        ),
        other => panic!("{what}: expected an I/O error naming the file, got {other:?}"),
    }
}

// ---------------------------------------------------------------------------
// Commit log
// ---------------------------------------------------------------------------

fn commitlog_fault(sync: SyncMode, fault: Fault) {
    let what = format!("{sync:?} {fault:?}");
    let dir = scratch();
    let o = options(sync);
    let fs = o.fs.clone();
    let db = Database::open(dir.path(), o).unwrap();
    let t = db
        .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
        .unwrap();
    for k in 0..200 {
        insert(&t, k).unwrap();
    }
    fs.faults().inject("CommitLog", fault, 1);
    let err = insert(&t, 200).unwrap_err();
    assert_io_error_on(&err, "CommitLog-", &what);
    match insert(&t, 201).unwrap_err() {
        Error::Poisoned(reason) => assert!(reason.contains("write"), "{what}: {reason}"),
        other => panic!("{what}: expected Poisoned, got {other:?}"),
    }
    assert_readable(&t, 0..200, &what);
    drop(t);
    drop(db); // crash

    let db = Database::open(dir.path(), options(sync)).unwrap();
    let replay = db.replay_stats().clone();
    assert!(replay.corruptions.is_empty(), "{what}: {replay:?}");
    if fault == Fault::TornWrite {
        assert!(
            replay.torn_tail_bytes > 0,
            "{what}: the torn record is cut: {replay:?}"
        );
    } else {
        assert_eq!(
            replay.torn_tail_bytes, 0,
            "{what}: nothing was written: {replay:?}"
        );
    }
    let t = db.table("ks", "t").unwrap();
    assert_readable(&t, 0..200, &what);
    // Key 200 was not acknowledged: it may be missing, but never altered.
    let rows = t
        .select(&[Value::Int(200)], &ClusteringRange::ALL, false, 1)
        .unwrap();
    if let Some(row) = rows.first() {
        assert_eq!(row[1].1, Some(Value::Text(value_of(200))), "{what}");
    }
    insert(&t, 202).expect("the reopened database accepts writes");
    drop(t);
    db.close().unwrap();
    // The cut tail is gone for good: a second open finds nothing to cut or report.
    let db = Database::open(dir.path(), options(sync)).unwrap();
    assert_eq!(db.replay_stats().torn_tail_bytes, 0, "{what}");
    assert_readable(&db.table("ks", "t").unwrap(), (0..200).chain([202]), &what);
    db.close().unwrap();
}

#[test]
fn commitlog_write_error_fails_the_write_and_poisons() {
    commitlog_fault(SyncMode::Batch, Fault::WriteError);
    commitlog_fault(
        SyncMode::Periodic {
            period: SyncMode::DEFAULT_PERIOD,
        },
        Fault::WriteError,
    );
}

#[test]
fn commitlog_torn_write_is_cut_on_reopen() {
    commitlog_fault(SyncMode::Batch, Fault::TornWrite);
    commitlog_fault(
        SyncMode::Periodic {
            period: SyncMode::DEFAULT_PERIOD,
        },
        Fault::TornWrite,
    );
}

// ---------------------------------------------------------------------------
// Flush
// ---------------------------------------------------------------------------

/// Sstable and temporary files of the table directory that are not live sstables.
fn stray_files(t: &Table) -> Vec<String> {
    let live: BTreeSet<String> = t
        .view()
        .sstables()
        .iter()
        .map(|s| s.path().file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    let mut out: Vec<String> = std::fs::read_dir(t.dir())
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| (n.contains("Data.db") || n.ends_with(".tmp")) && !live.contains(n))
        .collect();
    out.sort();
    out
}

fn assert_all_sstables_verify(t: &Table, what: &str) {
    for s in t.view().sstables() {
        let problems = s.verify(IoTag::new(IoCause::UserRead));
        assert!(
            problems.is_empty(),
            "{what}: {}: {problems:?}",
            s.path().display()
        );
    }
}

fn wait_until(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(20);
    while !cond() {
        assert!(Instant::now() < deadline, "timed out: {what}");
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `fault` on files whose path contains `target` while a flush runs.
fn flush_fault(target: &str, fault: Fault) {
    let what = format!("{fault:?} on {target}");
    let dir = scratch();
    let o = options(SyncMode::Batch);
    let fs = o.fs.clone();
    let db = Database::open(dir.path(), o).unwrap();
    // Large memtable: flushes happen only when asked.
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH memtable_flush_threshold_mb = 64",
        )
        .unwrap();
    for k in 0..300 {
        insert(&t, k).unwrap();
    }
    t.flush().unwrap();
    let before: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    assert_eq!(before.len(), 1);
    for k in 300..900 {
        insert(&t, k).unwrap();
    }

    // Every attempt fails while the fault is armed (the background retry too).
    fs.faults().inject(target, fault, u64::MAX);
    let err = t.flush().unwrap_err();
    assert_io_error_on(&err, target, &what);
    let view = t.view();
    let live: Vec<u64> = view.sstables().iter().map(|s| s.id()).collect();
    assert_eq!(live, before, "{what}: a failed flush changed the live set");
    assert!(
        view.pending_flushes() >= 1,
        "{what}: the memtable waits for a retry"
    );
    drop(view);
    assert!(
        t.metrics
            .flush_failures
            .load(std::sync::atomic::Ordering::Relaxed)
            >= 1
    );
    assert_all_sstables_verify(&t, &what);
    assert_readable(&t, 0..900, &what);
    // Writes are still accepted (memory is not yet full).
    insert(&t, 900).unwrap();

    // The fault clears: the retried flush succeeds and leaves nothing behind.
    fs.faults().clear();
    t.flush().unwrap();
    wait_until(&what, || t.view().pending_flushes() == 0);
    assert!(t.view().sstables().len() >= 2, "{what}");
    assert_eq!(
        stray_files(&t),
        Vec::<String>::new(),
        "{what}: leftovers of the failed flushes"
    );
    assert_all_sstables_verify(&t, &what);
    assert_readable(&t, 0..901, &what);

    // Crash while a flush is failing: the commit log still has everything.
    for k in 901..1200 {
        insert(&t, k).unwrap();
    }
    fs.faults().inject(target, fault, u64::MAX);
    assert!(t.flush().is_err(), "{what}");
    drop(t);
    drop(db);
    let db = Database::open(dir.path(), options(SyncMode::Batch)).unwrap();
    let t = db.table("ks", "t").unwrap();
    assert_all_sstables_verify(&t, &what);
    assert_eq!(
        stray_files(&t),
        Vec::<String>::new(),
        "{what}: after restart"
    );
    assert_readable(&t, 0..1200, &what);
    drop(t);
    db.close().unwrap();
}

#[test]
fn sstable_write_error_fails_the_flush_and_a_retry_succeeds() {
    flush_fault("Data.db", Fault::WriteError);
}

#[test]
fn torn_sstable_write_leaves_no_half_sstable_live() {
    flush_fault("Data.db", Fault::TornWrite);
}

#[test]
fn sstable_fsync_error_fails_the_flush_and_a_retry_succeeds() {
    flush_fault("Data.db", Fault::SyncError);
}

#[test]
fn manifest_write_error_fails_the_flush_and_a_retry_succeeds() {
    flush_fault("MANIFEST", Fault::WriteError);
}

#[test]
fn torn_manifest_write_fails_the_flush_and_a_retry_succeeds() {
    flush_fault("MANIFEST", Fault::TornWrite);
}

// ---------------------------------------------------------------------------
// A manifest commit that fails after its rename
// ---------------------------------------------------------------------------

/// A manifest commit can fail *after* its rename (the directory fsync): the new
/// MANIFEST is then in place but may not survive a crash. The engine must then
/// delete nothing (manifest invariant 5: the commit poisons the manifest, and
/// neither the added nor the removed sstables are deleted), and an open that finds
/// a listed sstable missing must fail before deleting any "orphan": it may be the
/// only remaining copy. (Found by this test: compaction used to delete its outputs
/// after such a failure and the open deleted the unlisted inputs first.)
///
/// This test builds the on-disk state such a sequence could leave, with the public
/// `Manifest` API, and checks the open: it fails naming the missing file, and
/// deletes nothing. `manifest::tests::directory_fsync_failure_poisons_and_keeps_the_new_manifest`
/// covers the commit side with an injected directory-fsync failure.
#[test]
fn open_with_a_missing_listed_sstable_deletes_nothing() {
    use strata::manifest::{Manifest, SSTableEntry};
    let dir = scratch();
    let table_dir = dir.path().join("ks").join("t");
    let inputs: Vec<u64> = {
        let db = Database::open(dir.path(), options(SyncMode::Batch)).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
            .unwrap();
        for k in 0..200 {
            insert(&t, k).unwrap();
            if k % 100 == 99 {
                t.flush().unwrap();
            }
        }
        let ids = t.view().sstables().iter().map(|s| s.id()).collect();
        drop(t);
        db.close().unwrap();
        ids
    };
    assert_eq!(inputs.len(), 2);
    // The manifest a compaction of the two inputs renamed into place before its
    // directory fsync failed; its output was then deleted by the abort.
    let fs = strata::fs::Fs::new();
    let mut m = Manifest::open(&fs, &table_dir).unwrap();
    let output = m.allocate_id();
    m.commit(&[SSTableEntry::new(output, 0)], &inputs, None)
        .unwrap();

    // The open no longer fails: the missing output is set aside as unreadable
    // (reads that could need it fail naming it) and the unlisted inputs are
    // quarantined, never deleted.
    let db = Database::open(dir.path(), options(SyncMode::Batch)).unwrap();
    let t = db.table("ks", "t").unwrap();
    let missing = format!("strata-{output}-Data.db");
    assert_eq!(t.unreadable_sstables().len(), 1);
    let err = t
        .select(&[Value::Int(1)], &ClusteringRange::ALL, false, 1)
        .unwrap_err();
    assert!(err.to_string().contains(&missing), "{err}");
    drop(t);
    db.close().unwrap();
    let survivors = strata::quarantine::list(&fs, &table_dir).unwrap();
    assert_eq!(
        survivors.len(),
        inputs.len(),
        "the open deleted the only copies of the data: quarantine holds {survivors:?}"
    );
}
