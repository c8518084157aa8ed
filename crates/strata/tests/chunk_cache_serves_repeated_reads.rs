//! The decompressed-chunk cache: a second pass of the same reads is served
//! from memory (hits counted per table and per database, no bytes read from
//! the files) and returns exactly the same rows; compaction neither fills the
//! cache nor is served by it, and reads after a compaction (new sstables, new
//! cache keys) are right; the index blocks user reads built are pinned in
//! their readers within the cache's share and given back when the readers
//! go; a database opened with the cache disabled reads everything from the
//! files.

mod common;

use common::upgrade::{missing, options, sstable_of, CREATE};
use strata::db::Database;
use strata::fs::IoCause;

#[test]
fn chunk_cache_serves_repeated_reads() {
    let dir = tempfile::tempdir().expect("tempdir");
    let db = Database::open(dir.path(), options(None)).expect("open");
    let t = db.create_table_cql(CREATE).expect("create");
    sstable_of(&t, 0..2000);
    sstable_of(&t, 2000..4000);
    let cache = db.fs().chunk_cache().expect("on by default").clone();

    assert!(missing(&t, 0..4000).is_empty());
    let (io1, c1) = (t.io(), cache.stats());
    assert!(io1.chunk_cache_misses > 0 && c1.entries > 0, "{c1:?}");
    assert!(c1.pinned_bytes > 0, "index blocks pinned: {c1:?}");
    assert!(
        c1.pinned_bytes <= c1.capacity_bytes / strata::chunk_cache::PINNED_SHARE as u64,
        "{c1:?}"
    );
    let read1 = io1.read(IoCause::UserRead);

    // The same reads again: every chunk is cached (the data is far below the
    // default 128 MiB), so nothing is read from the files.
    assert!(missing(&t, 0..4000).is_empty());
    let (io2, c2) = (t.io(), cache.stats());
    assert_eq!(
        io2.read(IoCause::UserRead),
        read1,
        "second pass read the files"
    );
    assert_eq!(io2.chunk_cache_misses, io1.chunk_cache_misses);
    assert!(io2.chunk_cache_hits > io1.chunk_cache_hits);
    assert_eq!(
        c2.hits - c1.hits,
        io2.chunk_cache_hits - io1.chunk_cache_hits
    );

    // Compaction reads its inputs uncached and puts nothing in the cache.
    let limiter = db.compaction_limiter().clone();
    t.compact_major(&limiter).expect("compact");
    let c3 = cache.stats();
    assert_eq!(
        (c3.hits, c3.misses, c3.entries),
        (c2.hits, c2.misses, c2.entries)
    );
    // The compacted sstable is a new reader: its chunks are new keys.
    assert!(missing(&t, 0..4000).is_empty());
    assert!(t.io().chunk_cache_misses > io2.chunk_cache_misses);
    let text = strata::tablestats::TableStats::of(&t).to_text();
    assert!(text.contains("Chunk cache hits/misses"), "{text}");
    drop(t);
    db.close().expect("close");
    // Every reader is gone, and with them their pinned index blocks.
    assert_eq!(cache.stats().pinned_bytes, 0, "{:?}", cache.stats());

    // Disabled: every read reads the files.
    let mut o = options(None);
    o.chunk_cache_bytes = 0;
    let db = Database::open(dir.path(), o).expect("reopen");
    assert!(db.fs().chunk_cache().is_none());
    let t = db.table("ks", "t").expect("table");
    assert!(missing(&t, 0..100).is_empty());
    let before = t.io().read(IoCause::UserRead);
    assert!(missing(&t, 0..100).is_empty());
    assert!(t.io().read(IoCause::UserRead) > before);
    assert_eq!(t.io().chunk_cache_hits, 0);
}
