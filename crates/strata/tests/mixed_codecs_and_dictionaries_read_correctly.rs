//! Seeded randomized: a table whose compression changes between flushes among
//! none, LZ4, Zstd, Zstd with a dictionary and LZ4 with a dictionary, with
//! dictionaries trained on demand and after flushes, retrained, compacted,
//! upgraded and reopened, reads every key exactly as an oracle (a map of the
//! last value written or the deletion) says, after every round. Sstables
//! written with an older dictionary must keep reading after retraining and
//! after a reopen (readers load the dictionary each sstable names).
//!
//! More rounds: `STRATA_DICT_SEEDS=20 cargo test --release -p strata --test
//! mixed_codecs_and_dictionaries_read_correctly`.

mod common;

use common::upgrade::{open, value};
use rand::{Rng, SeedableRng};
use std::collections::{BTreeMap, BTreeSet};
use strata::codec::Codec;
use strata::data::ClusteringRange;
use strata::schema::WriteOptions;
use strata::table_dictionary::TrainOptions;
use strata::types::Value;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};

const SETTINGS: &[&str] = &[
    "compression = {'enabled': 'false'}",
    "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 4}",
    "compression = {'class': 'ZstdCompressor', 'compression_level': 1}",
    "compression = {'class': 'ZstdWithDictsCompressor', 'compression_level': 3, 'training_max_dictionary_size': 8192}",
    "compression = {'class': 'LZ4WithDictsCompressor', 'chunk_length_in_kb': 8}",
    "compression = {'class': 'ZstdDictionaryCompressor', 'chunk_length_in_kb': 4}",
];

fn text(k: i32, version: u32) -> String {
    format!("{version}:{}", value(k))
}

fn check(
    t: &strata::table::Table,
    oracle: &BTreeMap<i32, Option<String>>,
    seed: u64,
    round: usize,
) {
    for (&k, want) in oracle {
        let rows = t
            .select(&[Value::Int(k)], &ClusteringRange::ALL, false, 1)
            .unwrap_or_else(|e| panic!("seed {seed} round {round}: key {k}: {e}"));
        let got = rows.first().and_then(|r| match &r[1].1 {
            Some(Value::Text(s)) => Some(s.clone()),
            _ => None,
        });
        assert_eq!(&got, want, "seed {seed} round {round}: key {k}");
    }
}

fn run(seed: u64) -> BTreeSet<String> {
    let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let (mut db, mut t) = open(dir.path(), None);
    let mut oracle: BTreeMap<i32, Option<String>> = BTreeMap::new();
    let mut codecs_seen = BTreeSet::new();
    let mut version = 0u32;
    for round in 0..24 {
        if rng.gen_bool(0.6) {
            let setting = SETTINGS[rng.gen_range(0..SETTINGS.len())];
            db.alter_table_options("ks", "t", setting).expect("alter");
        }
        // 300-900 rows of ~300 bytes: a flush of 90-270 KiB, past the
        // dictionary's minimum sample after a round or two.
        let base = rng.gen_range(0..3000);
        for k in base..base + rng.gen_range(300..900) {
            version += 1;
            // The clock is fixed: each write's own timestamp orders them.
            let w = WriteOptions {
                timestamp_micros: Some(1_000_000 + i64::from(version)),
                ttl_seconds: None,
            };
            if rng.gen_bool(0.05) {
                let now = strata::clock::Clock::now_micros(t.clock().as_ref());
                let update = t
                    .schema()
                    .delete_partition(&[("k", Value::Int(k))], &w, now)
                    .expect("delete");
                t.apply(&update).expect("apply delete");
                oracle.insert(k, None);
            } else {
                let v = text(k, version);
                t.insert(&[("k", Value::Int(k)), ("v", Value::Text(v.clone()))], &w)
                    .expect("insert");
                oracle.insert(k, Some(v));
            }
        }
        t.flush().expect("flush");
        match rng.gen_range(0..10) {
            0 | 1 => match t.train_compression_dictionary(&TrainOptions {
                max_dictionary_bytes: Some(rng.gen_range(2..16) * 1024),
                max_sample_bytes: None,
            }) {
                // Stored, or declined for gaining too little, and then said.
                Ok(r) => assert!(
                    r.dictionary_id.is_some()
                        || r.notes
                            .iter()
                            .any(|n| n.starts_with("not stored") || n.starts_with("kept")),
                    "{r:?}"
                ),
                // Only the first round may hold too little data to learn from.
                Err(e) => assert!(
                    round == 0 && e.to_string().contains("too little data"),
                    "seed {seed} round {round}: {e}"
                ),
            },
            2 => {
                let limiter = db.compaction_limiter().clone();
                t.compact_major(&limiter).expect("major compaction");
            }
            3 => {
                let all = rng.gen_bool(0.5);
                let opts = UpgradeOptions {
                    all,
                    ..UpgradeOptions::default()
                };
                upgrade_sstables(&t, &opts, &mut |_, _| {}).expect("upgradesstables");
            }
            4 => {
                db.close().expect("close");
                (db, t) = open(dir.path(), None);
            }
            _ => {}
        }
        for s in t.view().sstables().iter() {
            codecs_seen.insert(
                match s.stats().codec {
                    Codec::None => "none",
                    Codec::Lz4 => "lz4",
                    Codec::Zstd { .. } => "zstd",
                    Codec::ZstdDict { .. } => "zstd+dict",
                    Codec::Lz4Dict { .. } => "lz4+dict",
                }
                .to_string(),
            );
            if let Some(d) = s.stats().codec.dictionary() {
                codecs_seen.insert(format!("dictionary {d}"));
            }
        }
        check(&t, &oracle, seed, round);
    }
    db.close().expect("close");
    let (_db, t) = open(dir.path(), None);
    check(&t, &oracle, seed, 99);
    codecs_seen
}

#[test]
fn mixed_codecs_and_dictionaries_read_correctly() {
    let seeds = std::env::var("STRATA_DICT_SEEDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(3u64);
    let mut seen = BTreeSet::new();
    for seed in 0..seeds {
        seen.extend(run(0xd1c7_0000 + seed));
    }
    // The comparison means something only if the mix really happened: every
    // codec, and sstables on more than one dictionary at once.
    for c in ["none", "lz4", "zstd", "zstd+dict", "lz4+dict"] {
        assert!(seen.contains(c), "no sstable with {c}: {seen:?}");
    }
    eprintln!("seen: {seen:?}");
    let dictionaries = seen.iter().filter(|s| s.starts_with("dictionary")).count();
    assert!(dictionaries >= 2, "{seen:?}");
}
