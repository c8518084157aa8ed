//! Seeded randomized test of value range reads against an in-memory copy:
//! random blocks (empty to ~600 KiB, some spanning many chunks) are written,
//! overwritten, deleted (row deletions, cell deletions) and flushed at random,
//! each write with a timestamp above every earlier one, so the oracle is simply
//! "the last write of each block" — written from that rule, not from the
//! engine. After every step a few random ranges of random blocks are compared
//! with the oracle's bytes, and at the end every range is compared again after
//! a major compaction. Seed: `STRATA_SEED` or a fixed default, printed.

mod common;

use common::large_values::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::BTreeMap;
use strata::schema::WriteOptions;

const IDS: u64 = 6;
const PARTS: i32 = 4;

#[test]
fn random_ranges_match_an_in_memory_copy() {
    let seed: u64 = std::env::var("STRATA_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x0001_a96e_0013);
    eprintln!("seed {seed}");
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    let t = db.create_table_cql(CREATE_BLOCKS).unwrap();
    let mut oracle: BTreeMap<(u64, i32), Vec<u8>> = BTreeMap::new();
    let mut ts: i64 = 1_000_000;
    let mut ranges_checked = 0;
    for step in 0..300 {
        let id = rng.gen_range(0..IDS);
        let part = rng.gen_range(0..PARTS);
        let name = format!("block-{id}").into_bytes();
        ts += 1;
        let w = WriteOptions {
            timestamp_micros: Some(ts),
            ttl_seconds: None,
        };
        match rng.gen_range(0..10) {
            0 => {
                t.delete_row(&key(&name, part), &w).unwrap();
                oracle.remove(&(id, part));
            }
            1 => {
                t.update(&key(&name, part), &[("data", None)], &w).unwrap();
                oracle.remove(&(id, part));
            }
            2 => t.flush().unwrap(),
            _ => {
                let len = match rng.gen_range(0..4) {
                    0 => rng.gen_range(0..100),
                    1 => rng.gen_range(0..40_000),
                    _ => rng.gen_range(0..600_000),
                };
                let data = block(rng.gen(), len);
                put(&t, &name, part, data.clone(), Some(ts));
                oracle.insert((id, part), data);
            }
        }
        for _ in 0..3 {
            check_random(&t, &oracle, &mut rng, step);
            ranges_checked += 1;
        }
    }
    t.flush().unwrap();
    t.compact_major(db.compaction_limiter())
        .unwrap_or_else(|e| panic!("compact: {e}"));
    assert_eq!(
        t.view().sstables().len(),
        1,
        "major compaction leaves one sstable"
    );
    for id in 0..IDS {
        for part in 0..PARTS {
            let name = format!("block-{id}").into_bytes();
            let want = oracle.get(&(id, part));
            let got = range(&t, &name, part, 0, u64::MAX);
            assert_eq!(
                got.map(|s| s.bytes).as_ref(),
                want,
                "block {id}/{part} after compaction"
            );
        }
    }
    eprintln!("{ranges_checked} random ranges checked");
}

fn check_random(
    t: &strata::table::Table,
    oracle: &BTreeMap<(u64, i32), Vec<u8>>,
    rng: &mut ChaCha8Rng,
    step: usize,
) {
    let id = rng.gen_range(0..IDS);
    let part = rng.gen_range(0..PARTS);
    let name = format!("block-{id}").into_bytes();
    let Some(v) = oracle.get(&(id, part)) else {
        assert!(
            range(t, &name, part, 0, 1).is_none(),
            "step {step}: block {id}/{part} should not exist"
        );
        return;
    };
    let len = v.len() as u64;
    let off = rng.gen_range(0..=len);
    let n = match rng.gen_range(0..3) {
        0 => rng.gen_range(0..64),
        1 => rng.gen_range(0..100_000),
        _ => u64::MAX,
    };
    let got = range(t, &name, part, off, n).expect("live block");
    let end = off.saturating_add(n).min(len) as usize;
    assert_eq!(got.value_len, len, "step {step}: length of {id}/{part}");
    assert!(
        got.bytes == v[off as usize..end],
        "step {step}: range {off}+{n} of block {id}/{part} ({len} bytes)"
    );
}
