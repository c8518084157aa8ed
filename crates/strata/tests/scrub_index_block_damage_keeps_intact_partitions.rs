//! One flipped bit in an index block used to make scrub drop every partition the
//! block listed (217 in the report that found it), although their data chunks
//! were intact: scrub found partitions through the index. It now walks the data
//! stream chunk by chunk and uses the index only to cross-check and to
//! resynchronise after a damaged chunk, so a damaged index block costs nothing.

mod common;

use strata::fs::{IoCause, IoTag};
use strata::maintenance::{scrub, verify, ScrubOptions};
use strata::types::Value;

// Enough small partitions for several index blocks of the sparse index
// (format 4: one entry per ~2 KiB granule of partitions; format 9: entries
// without their token, so more of them per block).
const N: i32 = 100_000;

#[test]
fn a_damaged_index_block_loses_no_partition() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH compression = \
             {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4}",
        )
        .unwrap();
    common::write(&t, 0..N);
    t.flush().unwrap();
    let s = t.view().sstables()[0].clone();
    let blocks = s.index_block_ranges();
    assert!(blocks.len() >= 3, "{} index blocks", blocks.len());
    let (off, len) = blocks[blocks.len() / 2];
    let mut bytes = std::fs::read(s.path()).unwrap();
    bytes[(off + len / 2) as usize] ^= 0x08;
    std::fs::write(s.path(), &bytes).unwrap();

    // The damage is real: point reads of the block's partitions now fail.
    let schema = t.schema();
    let hidden = (0..N)
        .filter(|&k| {
            let key = schema.decorated_key(&[Value::Int(k)]).unwrap();
            s.read_partition(&key, IoTag::new(IoCause::UserRead))
                .is_err()
        })
        .count();
    eprintln!("{hidden} partitions behind the damaged index block");
    assert!(hidden > 10, "{hidden} partitions behind the damaged block");
    assert!(!verify(&t).is_clean());
    drop(s);

    let report = scrub(&t, ScrubOptions { snapshot: true }).unwrap();
    assert_eq!(report.partitions_dropped, 0, "{report:#?}");
    assert_eq!(report.partitions_kept, N as u64, "{report:#?}");
    let bad = &report.sstables[0].bad_regions;
    assert_eq!(bad.len(), 1, "{report:#?}");
    assert_eq!(bad[0].offset, off);
    assert!(bad[0].reason.contains("index block"), "{}", bad[0].reason);
    assert_eq!(common::readable(&t, 0..N), N as usize);
    assert!(verify(&t).is_clean());
    db.close().unwrap();
}
