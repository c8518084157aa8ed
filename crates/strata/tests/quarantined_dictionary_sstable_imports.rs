//! A dictionary-compressed sstable the open quarantined (here: a copy the
//! manifest does not list) is decoded with the table's dictionary, which stays
//! in the table directory when the sstable moves to `quarantine/`, so
//! `sstable import` adopts it and every row reads back.

mod common;

use common::upgrade::{missing, open, sstable_of};
use strata::codec::Codec;

#[test]
fn quarantined_dictionary_sstable_imports() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    db.alter_table_options(
        "ks",
        "t",
        "compression = {'class': 'ZstdWithDictsCompressor', 'chunk_length_in_kb': 4}",
    )
    .expect("alter");
    sstable_of(&t, 0..1000); // trains the dictionary after this flush
    sstable_of(&t, 1000..2000); // written with it
    let with_dict = t
        .view()
        .sstables()
        .iter()
        .find(|s| matches!(s.stats().codec, Codec::ZstdDict { .. }))
        .map(|s| s.path().to_path_buf())
        .expect("an sstable with the dictionary");
    let table_dir = t.dir().to_path_buf();
    drop(t);
    db.close().expect("close");
    // An unlisted copy: the next open moves it to quarantine/.
    std::fs::copy(&with_dict, table_dir.join("strata-999-Data.db")).expect("copy");
    let (_db, t) = open(dir.path(), None);
    let quarantined = table_dir.join("quarantine").join("strata-999-Data.db");
    assert!(quarantined.exists(), "{:?}", t.open_notes());
    let report = strata::repair::import_sstables(&t, &[quarantined]).expect("import");
    assert_eq!(report.imported.len(), 1);
    assert!(missing(&t, 0..2000).is_empty());
}
