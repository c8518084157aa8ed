//! An offline salvage of a dictionary-compressed sstable (`strata sstable
//! scrub FILE --out DIR`) writes a copy that reads on its own in a directory
//! holding no dictionary (the same compressor, without one), and that copy
//! imports back into the table with every row.

mod common;

use common::upgrade::{missing, open, sstable_of};
use strata::codec::Codec;

#[test]
fn offline_scrub_of_a_dictionary_sstable_reads_on_its_own() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    db.alter_table_options(
        "ks",
        "t",
        "compression = {'class': 'LZ4WithDictsCompressor', 'chunk_length_in_kb': 4}",
    )
    .expect("alter");
    sstable_of(&t, 0..1000);
    sstable_of(&t, 1000..2000);
    let input = t
        .view()
        .sstables()
        .iter()
        .find(|s| matches!(s.stats().codec, Codec::Lz4Dict { .. }))
        .map(|s| (s.path().to_path_buf(), s.stats().partition_count))
        .expect("an sstable with the dictionary");
    let out_dir = dir.path().join("salvaged");
    std::fs::create_dir_all(&out_dir).expect("mkdir");
    let report =
        strata::maintenance::scrub_file(db.fs(), &input.0, &out_dir, Some(77), 0).expect("scrub");
    let out = report.output.expect("a salvaged copy");
    let fs = strata::fs::Fs::new();
    let r = strata::sstable::SSTableReader::open(&fs, &out, 77, None).expect("reads on its own");
    assert_eq!(r.stats().codec, Codec::Lz4, "written without a dictionary");
    let tag = strata::fs::IoTag::new(strata::fs::IoCause::Recompression);
    let n = r
        .scan(None, tag)
        .expect("scan")
        .filter(|p| p.is_ok())
        .count() as u64;
    assert_eq!(n, input.1);
    drop(r);
    let report = strata::repair::import_sstables(&t, &[out]).expect("import");
    assert_eq!(report.imported.len(), 1);
    assert!(missing(&t, 0..2000).is_empty());
}
