//! A 64 MiB block is accepted with default settings (commit log included:
//! `max_mutation_size` defaults to 128 MiB, no longer half a segment), and once
//! flushed, a 1 MiB range read of it reads about 1 MiB from disk: the partition
//! index, the chunk holding the row's header, and the 16 KiB chunks under the
//! range — never the other 63 MiB (issue 13).

mod common;

use common::large_values::*;

#[test]
fn one_mib_of_a_64_mib_block_reads_about_one_mib() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let t = db.create_table_cql(CREATE_BLOCKS).unwrap();
    let value = block(64, 64 * MIB);
    put(&t, b"file-1", 0, value.clone(), None);
    // A small neighbour row in the same partition, before and after.
    put(&t, b"file-1", 1, block(1, 100), None);
    t.flush().unwrap();

    // Odd offsets: the range starts and ends inside chunks.
    for (off, len) in [
        (37 * MIB as u64 + 12_345, MIB as u64),
        (0, MIB as u64),
        (63 * MIB as u64 + 7, MIB as u64),
    ] {
        let before = user_read_bytes(&t);
        let got = range(&t, b"file-1", 0, off, len).expect("live block");
        let read = user_read_bytes(&t) - before;
        let end = (off + len).min(value.len() as u64) as usize;
        assert_eq!(got.value_len, value.len() as u64);
        assert!(got.bytes == value[off as usize..end], "range {off}+{len}");
        eprintln!(
            "range {off}+{len}: {} bytes returned, {read} bytes read from disk ({:.3} per byte)",
            got.bytes.len(),
            read as f64 / got.bytes.len() as f64
        );
        assert!(
            read < (got.bytes.len() as u64) * 13 / 10,
            "{read} bytes read from disk for a {}-byte range",
            got.bytes.len()
        );
    }
}
