//! An sstable whose tail (chunk table, summary, filter, statistics, footer) is
//! destroyed does not open, so neither reads nor the online scrub can use it.
//! The offline salvage (`strata sstable scrub FILE --out DIR`) finds the chunks
//! from the identity header on by their checksums, walks the self-delimiting
//! data stream, and writes every partition whose bytes are intact into a new
//! valid sstable, which `sstable import` adopts into a table. Here one chunk in
//! the middle is damaged as well, so the walk must also resynchronise without
//! the index.

mod common;

use strata::fs::{Fs, IoCause, IoTag};
use strata::sstable::SSTableReader;
use strata::types::Value;

const N: i32 = 3000;

#[test]
fn every_partition_with_intact_chunks_is_recovered_and_imported() {
    let dir = tempfile::tempdir().unwrap();
    let scratch = tempfile::tempdir().unwrap();
    let damaged = scratch.path().join("strata-1-Data.db");
    let fs = Fs::new();
    let readable: Vec<i32>;
    {
        let db = common::open(dir.path());
        let t = db
            .create_table_cql(
                "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH compression = \
                 {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4}",
            )
            .unwrap();
        db.create_table_cql("CREATE TABLE ks.restored (k int PRIMARY KEY, v text)")
            .unwrap();
        common::write(&t, 0..N);
        t.flush().unwrap();
        let files = common::sstables(&common::table_dir(dir.path()));
        assert_eq!(files.len(), 1);
        std::fs::copy(&files[0], &damaged).unwrap();

        // Damage one chunk in the middle; find out which partitions a reader of
        // the still-whole file can read: exactly those must come back.
        let r = SSTableReader::open(&fs, &damaged, 1, None).unwrap();
        assert_eq!(r.format_version(), strata::sstable::FORMAT_VERSION);
        let chunks = r.chunk_ranges();
        assert!(chunks.len() > 10, "{} chunks", chunks.len());
        let (off, len) = chunks[chunks.len() / 2];
        let tail_start = chunks
            .iter()
            .chain(r.index_block_ranges().iter())
            .map(|(o, l)| o + l)
            .max()
            .unwrap();
        let file_len = r.file_size();
        drop(r);
        let mut bytes = std::fs::read(&damaged).unwrap();
        bytes[(off + len / 2) as usize] ^= 0x40;
        std::fs::write(&damaged, &bytes).unwrap();
        let r = SSTableReader::open(&fs, &damaged, 1, None).unwrap();
        let schema = t.schema();
        readable = (0..N)
            .filter(|&k| {
                let key = schema.decorated_key(&[Value::Int(k)]).unwrap();
                r.read_partition(&key, IoTag::new(IoCause::UserRead))
                    .is_ok()
            })
            .collect();
        assert!(readable.len() < N as usize && readable.len() > N as usize / 2);
        drop(r);

        // Destroy the tail: cut the file in the middle of it.
        let cut = tail_start + (file_len - tail_start) / 2;
        bytes.truncate(cut as usize);
        std::fs::write(&damaged, &bytes).unwrap();
        assert!(SSTableReader::open(&fs, &damaged, 1, None).is_err());
        db.close().unwrap();
    }

    let out = scratch.path().join("out");
    std::fs::create_dir(&out).unwrap();
    let report = strata::maintenance::scrub_file(&fs, &damaged, &out, Some(77), 0).unwrap();
    assert!(!report.salvage.tail_intact, "{report:#?}");
    assert_eq!(report.generation, 77);
    let counts = &report.salvage.counts;
    assert!(counts.chunks_lost >= 1, "{report:#?}");
    assert!(counts.file_bytes_lost > 0, "{report:#?}");
    // Exactly the partitions a reader of the whole file could read: none lost
    // beyond the damaged chunk, none invented.
    assert_eq!(
        counts.partitions_recovered,
        readable.len() as u64,
        "{report:#?}"
    );
    eprintln!(
        "{} readable before the tail was cut; {report:#?}",
        readable.len()
    );
    let output = report.output.clone().expect("an output sstable");
    assert_eq!(output, out.join("strata-77-Data.db"));
    let o = SSTableReader::open(&fs, &output, 77, None).unwrap();
    assert_eq!(o.identity().unwrap().generation, 77);
    assert_eq!(o.identity().unwrap().qualified_name(), "ks.t");
    assert_eq!(o.stats().partition_count, counts.partitions_recovered);
    assert!(o.verify(IoTag::new(IoCause::UserRead)).is_empty());
    drop(o);
    // The salvage never overwrites.
    assert!(strata::maintenance::scrub_file(&fs, &damaged, &out, Some(77), 0).is_err());

    // Adopt the salvaged file into another table with the same columns.
    let db = common::open(dir.path());
    let restored = db.table("ks", "restored").unwrap();
    let imported = strata::repair::import_sstables(&restored, &[output]).unwrap();
    assert_eq!(imported.imported.len(), 1);
    for &k in &readable {
        assert!(common::read(&restored, k).unwrap(), "key {k} not recovered");
    }
    // Whatever else came back (partitions of the damaged chunk's neighbours are
    // not expected) has exactly its written content.
    let mut present = 0;
    for k in 0..N {
        let rows = restored
            .select(
                &[Value::Int(k)],
                &strata::data::ClusteringRange::ALL,
                false,
                1,
            )
            .unwrap();
        if !rows.is_empty() {
            assert!(
                common::read(&restored, k).unwrap(),
                "key {k} has wrong content"
            );
            present += 1;
        }
    }
    assert_eq!(present as u64, counts.partitions_recovered);
    db.close().unwrap();
}
