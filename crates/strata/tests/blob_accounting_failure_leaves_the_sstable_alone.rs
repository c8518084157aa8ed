//! A read error during the blob strategy's accounting must neither fail the
//! flush that triggered it nor let the strategy act on a guess: the damaged
//! sstable is left unaccounted (so never dropped or rewritten), the failure is
//! counted and shown by `tablestats`, and the other sstables keep exact
//! accounting (live_bytes invariant 3).

mod common;

use common::blob::*;
use std::io::{Read, Seek, SeekFrom, Write};

#[test]
fn blob_accounting_failure_leaves_the_sstable_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (clock, _db, t) = setup(dir.path(), "");
    write_file(&t, &clock, "a", 0..4, 1);
    write_file(&t, &clock, "b", 0..4, 1);
    t.flush().expect("flush S");
    write_file(&t, &clock, "c", 0..4, 1);
    t.flush().expect("flush O");
    let (s, o) = (ids(&t)[0], ids(&t)[1]);
    // Flip one byte of S's first index block on disk (readers fetch index
    // blocks on demand, so the open table sees the damage at its next read).
    let reader = t
        .view()
        .sstables()
        .iter()
        .find(|r| r.id() == s)
        .cloned()
        .expect("S live");
    let (offset, _len) = reader.index_block_ranges()[0];
    let mut f = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open(reader.path())
        .expect("open S");
    let mut byte = [0u8; 1];
    f.seek(SeekFrom::Start(offset + 2)).expect("seek");
    f.read_exact(&mut byte).expect("read");
    f.seek(SeekFrom::Start(offset + 2)).expect("seek");
    f.write_all(&[byte[0] ^ 0x40]).expect("flip");
    f.sync_all().expect("sync");
    drop(f);

    // Deleting both of S's files would make it wholly dead, if it could be read.
    delete_file(&t, &clock, "a");
    delete_file(&t, &clock, "b");
    t.flush()
        .expect("the flush succeeds despite the damaged neighbour");
    let live: std::collections::HashMap<u64, _> = t.live_bytes().into_iter().collect();
    assert_eq!(live[&s], None, "S is left unaccounted");
    assert!(live[&o].is_some(), "O keeps exact accounting");
    let stats = strata::tablestats::TableStats::of(&t)
        .blob
        .expect("blob figures");
    assert!(stats.accounting_failures >= 1);
    // S, and the tombstones' sstable: whether they still target something
    // needs S's partition headers, which cannot be read either.
    assert_eq!(stats.sstables_unaccounted, 2);
    let why = stats.last_accounting_error.expect("error kept");
    // The error names the damaged file and offset, whichever sstable's
    // accounting met it last.
    assert!(why.contains(&format!("strata-{s}-Data.db")), "{why}");
    assert!(why.contains("left unaccounted"), "{why}");
    // Nothing acts on S.
    let records = settle(&t);
    assert!(
        records.iter().all(|r| !r.inputs.contains(&s)),
        "{records:?}"
    );
    assert!(ids(&t).contains(&s));
    assert_eq!(read_file(&t, "c").len(), 4);
}
