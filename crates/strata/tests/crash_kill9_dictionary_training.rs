//! Crash test for compression dictionaries (issue 14): a child process trains
//! dictionaries, switches the table between the two dictionary classes and
//! rewrites every sstable with `upgradesstables -a`, over and over; the parent
//! kills it with SIGKILL at a random moment (mid-training, mid-write of a
//! dictionary file, mid-rewrite), reopens the data directory in-process and
//! checks that
//!
//! 1. the database opens with no unreadable sstable (no sstable names a
//!    dictionary that is not on disk: dictionary invariant 1), and every live
//!    sstable verifies;
//! 2. every key reads back with its exact value;
//! 3. no temporary dictionary file survives the open, and at the end the
//!    children did write dictionaries and dictionary-compressed sstables.
//!
//! Protocol as `crash_kill9_upgradesstables.rs`: the child is this test binary
//! re-executed with `STRATA_DICT_CHILD=<dir>`; it prints `@READY` once open.
//! Knobs: `STRATA_CRASH_KILLS` (default 10), `STRATA_CRASH_SEED`.

mod common;

use common::upgrade::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::time::Duration;
use strata::table_dictionary::TrainOptions;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};

const ENV_CHILD: &str = "STRATA_DICT_CHILD";
const KEYS: i32 = 4_000;
const SETTINGS: [&str; 2] = [
    "compression = {'class': 'ZstdWithDictsCompressor', 'chunk_length_in_kb': 4}",
    "compression = {'class': 'LZ4WithDictsCompressor', 'chunk_length_in_kb': 4}",
];

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The child's body: a no-op unless started by the parent below.
#[test]
fn dictionary_child_entry() {
    let Ok(dir) = std::env::var(ENV_CHILD) else {
        return;
    };
    let (db, t) = open(Path::new(&dir), None);
    println!("\n@READY");
    for round in 0usize.. {
        let _ = db.alter_table_options("ks", "t", SETTINGS[round % 2]);
        let _ = t.train_compression_dictionary(&TrainOptions {
            max_dictionary_bytes: Some(4096 + 1024 * (round % 8)),
            max_sample_bytes: None,
        });
        let _ = upgrade_sstables(
            &t,
            &UpgradeOptions {
                all: true,
                ..UpgradeOptions::default()
            },
            &mut |_, _| {},
        );
    }
}

#[test]
fn kill9_during_dictionary_training_and_rewrites_loses_nothing() {
    let kills = env_u64("STRATA_CRASH_KILLS").unwrap_or(10);
    let seed = env_u64("STRATA_CRASH_SEED").unwrap_or(0x5EED_D1C7);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    {
        let (db, t) = open(&dir, None);
        sstable_of(&t, 0..1500);
        sstable_of(&t, 1500..KEYS);
        drop(t);
        db.close().expect("close");
    }
    for kill in 1..=kills {
        let run_for = Duration::from_millis(rng.gen_range(1..=400));
        common::child::run_then_kill(
            "dictionary_child_entry",
            ENV_CHILD,
            &dir,
            run_for,
            &format!("kill {kill}"),
        );

        let (db, t) = open(&dir, None);
        assert!(
            t.unreadable_sstables().is_empty(),
            "kill {kill} (seed {seed}): {:?}",
            t.open_notes()
        );
        let report = strata::maintenance::verify(&t);
        assert!(report.is_clean(), "kill {kill} (seed {seed}): {report:#?}");
        assert_eq!(
            missing(&t, 0..KEYS),
            Vec::<i32>::new(),
            "kill {kill} (seed {seed}): keys lost or changed"
        );
        let leftovers: Vec<String> = std::fs::read_dir(t.dir())
            .expect("ls")
            .filter_map(|e| e.ok().map(|e| e.file_name().to_string_lossy().into_owned()))
            // The notes file is kept on purpose (what training learned); any
            // other dictionary file but a finished `.db` is a leftover.
            .filter(|n| {
                n.starts_with("CompressionDictionary")
                    && !n.ends_with(".db")
                    && n != strata::dictionary::NOTES_FILE
            })
            .collect();
        assert!(leftovers.is_empty(), "kill {kill}: {leftovers:?}");
        drop(t);
        db.close().expect("close");
    }
    let (db, t) = open(&dir, None);
    let stats = t.dictionary_stats().expect("stats");
    assert!(
        stats.stored > 0,
        "the children trained no dictionary: {stats:?}"
    );
    let with_dict = t
        .view()
        .sstables()
        .iter()
        .filter(|s| s.stats().codec.dictionary().is_some())
        .count();
    assert!(
        with_dict > 0,
        "no dictionary-compressed sstable was written"
    );
    db.close().expect("close");
}
