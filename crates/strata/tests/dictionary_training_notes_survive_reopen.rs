//! `tablestats`' dictionary training figures (`trainings`, `last_training`)
//! are kept in the table directory and read back at open: a restart does not
//! reset them to "never trained".

mod common;

use common::upgrade::{open, sstable_of};
use strata::table_dictionary::TrainOptions;

#[test]
fn trainings_and_the_last_outcome_are_read_back_after_a_reopen() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    db.alter_table_options(
        "ks",
        "t",
        "compression = {'class': 'ZstdWithDictsCompressor', 'training_max_dictionary_size': 8192}",
    )
    .expect("alter");
    sstable_of(&t, 0..2000);
    let report = t
        .train_compression_dictionary(&TrainOptions::default())
        .expect("train");
    let before = t.dictionary_stats().expect("stats");
    assert!(before.trainings >= 1, "{before:?}");
    let last = before.last_training.clone().expect("a last training");
    assert!(last.contains("sample ratio"), "{last} (report: {report:?})");
    drop(t);
    db.close().expect("close");

    let (_db, t) = open(dir.path(), None);
    let after = t.dictionary_stats().expect("stats");
    assert_eq!(after.trainings, before.trainings);
    assert_eq!(after.last_training, before.last_training);
}
