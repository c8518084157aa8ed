//! Crash test for `upgradesstables` (issue 14): a child process switches a
//! table between LZ4 and Zstd and runs `upgradesstables -a` over and over; the
//! parent kills it with SIGKILL at a random moment (mid-sample, mid-rewrite,
//! between an output's rename and its manifest commit, mid-ALTER), reopens the
//! data directory in-process and checks that
//!
//! 1. the database opens, and every live sstable verifies (every checksum);
//! 2. every key reads back with its exact value (nothing lost, nothing changed);
//! 3. at the end, an uninterrupted run finishes what the killed ones left:
//!    no live sstable keeps another setting than the table's.
//!
//! Protocol: the child is this test binary re-executed with
//! `STRATA_UPGRADE_CHILD=<dir>` and `upgrade_child_entry --exact`; it prints
//! `@READY` once the database is open, then loops until killed. Without the
//! variable `upgrade_child_entry` returns at once. Knobs: `STRATA_CRASH_KILLS`
//! (default 12), `STRATA_CRASH_SEED`.

mod common;

use common::upgrade::*;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::time::Duration;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};

const ENV_CHILD: &str = "STRATA_UPGRADE_CHILD";
const KEYS: i32 = 6_000;

fn env_u64(name: &str) -> Option<u64> {
    std::env::var(name).ok().and_then(|v| v.parse().ok())
}

/// The child's body: a no-op unless started by the parent below.
#[test]
fn upgrade_child_entry() {
    let Ok(dir) = std::env::var(ENV_CHILD) else {
        return;
    };
    let (db, t) = open(Path::new(&dir), None);
    println!("\n@READY");
    let settings = [ZSTD, "compression = {'class': 'LZ4Compressor'}"];
    for round in 0usize.. {
        let _ = db.alter_table_options("ks", "t", settings[round % 2]);
        let _ = upgrade_sstables(
            &t,
            &UpgradeOptions {
                all: round % 3 == 0,
                ..UpgradeOptions::default()
            },
            &mut |_, _| {},
        );
    }
}

#[test]
fn kill9_during_upgradesstables_loses_nothing_and_the_next_run_finishes() {
    let kills = env_u64("STRATA_CRASH_KILLS").unwrap_or(12);
    let seed = env_u64("STRATA_CRASH_SEED").unwrap_or(0x5EED_0014);
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("db");
    let initial: Vec<u64> = {
        let (db, t) = open(&dir, None);
        sstable_of(&t, 0..1000);
        sstable_of(&t, 1000..3000);
        sstable_of(&t, 3000..KEYS);
        let ids = t.view().sstables().iter().map(|s| s.id()).collect();
        drop(t);
        db.close().expect("close");
        ids
    };
    for kill in 1..=kills {
        let run_for = Duration::from_millis(rng.gen_range(1..=120));
        common::child::run_then_kill(
            "upgrade_child_entry",
            ENV_CHILD,
            &dir,
            run_for,
            &format!("kill {kill}"),
        );

        let (db, t) = open(&dir, None);
        let report = strata::maintenance::verify(&t);
        assert!(report.is_clean(), "kill {kill} (seed {seed}): {report:#?}");
        assert_eq!(
            missing(&t, 0..KEYS),
            Vec::<i32>::new(),
            "kill {kill} (seed {seed}): keys lost or changed"
        );
        drop(t);
        db.close().expect("close");
    }
    let (db, t) = open(&dir, None);
    let now: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    assert!(
        now.iter().all(|id| !initial.contains(id)),
        "the killed children rewrote every sstable at least once: {initial:?} -> {now:?}"
    );
    let run = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |_, _| {}).expect("final run");
    let stale = strata::tablestats::TableStats::of(&t).sstables_with_other_compression;
    assert_eq!(stale, 0, "{run:#?}");
    assert_eq!(missing(&t, 0..KEYS), Vec::<i32>::new());
    db.close().expect("close");
}
