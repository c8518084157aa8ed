//! The commit log's mutation limit is `max_mutation_size`, not half a segment:
//! with default settings (32 MiB segments) 16 MiB and 64 MiB blocks are
//! accepted, logged in segments grown to hold them, and replayed after a crash
//! (the database dropped without close, batch sync); past the configured
//! limit a mutation is refused with one clear line naming the option, and
//! nothing is written: no row, no commit-log byte.

mod common;

use common::large_values::*;
use strata::commitlog::{CommitLogOptions, SyncMode};
use strata::fs::IoCause;

fn options(max_mutation_size_bytes: u64) -> strata::db::DbOptions {
    let mut o = common::options();
    o.commitlog = Some(CommitLogOptions {
        sync: SyncMode::Batch,
        max_mutation_size_bytes,
        ..CommitLogOptions::default()
    });
    o
}

#[test]
fn blocks_up_to_the_limit_are_logged_and_replayed_and_larger_ones_refused() {
    let dir = tempfile::tempdir().unwrap();
    let default_limit = CommitLogOptions::default().max_mutation_size_bytes;
    assert!(default_limit >= 64 * MIB as u64 + 1024);
    let (a, b) = (block(16, 16 * MIB), block(64, 64 * MIB));
    {
        let db = strata::db::Database::open(dir.path(), options(default_limit)).unwrap();
        // A memtable that holds both blocks, so that neither is flushed
        // before the crash and both come back from the commit log only.
        let cql = CREATE_BLOCKS.replace("WITH ", "WITH memtable_flush_threshold_mb = 512 AND ");
        let t = db.create_table_cql(&cql).unwrap();
        put(&t, b"a", 0, a.clone(), None);
        put(&t, b"b", 0, b.clone(), None);
        put(&t, b"small", 0, block(3, 100), None);
        // Crash: drop without close; nothing was flushed.
    }
    {
        let db = strata::db::Database::open(dir.path(), options(default_limit)).unwrap();
        assert_eq!(
            db.replay_stats().records_replayed,
            3,
            "{:?}",
            db.replay_stats()
        );
        let t = db.table("ks", "blocks").unwrap();
        assert!(
            whole(&t, b"a", 0).as_deref() == Some(&a[..]),
            "16 MiB block replayed"
        );
        assert!(
            whole(&t, b"b", 0).as_deref() == Some(&b[..]),
            "64 MiB block replayed"
        );
        db.close().unwrap();
    }

    // A limit of 1 MiB: a 2 MiB block is refused, and nothing is written.
    let db = strata::db::Database::open(dir.path(), options(MIB as u64)).unwrap();
    let t = db.table("ks", "blocks").unwrap();
    let logged = db.fs().counters().snapshot().written(IoCause::CommitLog);
    let mut row = key(b"too-big", 0);
    row.push(("data", strata::types::Value::Blob(block(5, 2 * MIB))));
    let err = t
        .insert(&row, &strata::schema::WriteOptions::default())
        .unwrap_err();
    let msg = err.to_string();
    assert!(
        matches!(err, strata::Error::InvalidInput(_))
            && msg.contains("max_mutation_size")
            && !msg.contains('\n'),
        "{msg}"
    );
    assert_eq!(
        db.fs().counters().snapshot().written(IoCause::CommitLog),
        logged,
        "nothing reached the commit log"
    );
    assert!(
        whole(&t, b"too-big", 0).is_none(),
        "nothing reached the memtable"
    );
    // Just under the limit is accepted.
    put(&t, b"fits", 0, block(6, MIB - 4096), None);
    assert!(range(&t, b"fits", 0, 0, 1).is_some());
}
