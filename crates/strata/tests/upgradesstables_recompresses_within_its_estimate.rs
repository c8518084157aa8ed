//! `upgradesstables` after a switch from LZ4 to Zstd: the dry run writes
//! nothing and estimates the new size within 10% of the outcome; the run
//! rewrites exactly the sstables with the old codec, smallest first, each
//! replacing its input, and loses nothing; `tablestats` counts what is left to
//! rewrite; a second run has nothing to do, and `-a` rewrites everything again.

mod common;

use common::upgrade::*;
use strata::tablestats::TableStats;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};

#[test]
fn upgradesstables_recompresses_within_its_estimate() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (db, t) = open(dir.path(), None);
    populate(&t);
    let before = live_bytes(&t);
    assert_eq!(TableStats::of(&t).sstables_with_other_compression, 0);
    db.alter_table_options("ks", "t", ZSTD).expect("alter");
    let stats = TableStats::of(&t);
    assert_eq!(
        (
            stats.sstables_with_other_compression,
            stats.bytes_with_other_compression
        ),
        (3, before),
        "every sstable still has LZ4"
    );

    let ids_before: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    let dry = upgrade_sstables(
        &t,
        &UpgradeOptions {
            dry_run: true,
            estimate_all: true,
            ..UpgradeOptions::default()
        },
        &mut |_, _| {},
    )
    .expect("dry run");
    assert_eq!(dry.candidates.len(), 3);
    assert!(dry.rewritten.is_empty());
    assert_eq!(live_bytes(&t), before, "a dry run writes nothing");
    let sizes: Vec<u64> = dry.candidates.iter().map(|c| c.file_bytes).collect();
    assert!(
        sizes.windows(2).all(|w| w[0] <= w[1]),
        "smallest first: {sizes:?}"
    );
    // Zstd 3 beats LZ4 on this text, and the estimate of every setting says so.
    let by = |name: &str| {
        dry.setting_estimates
            .iter()
            .find(|e| e.setting.starts_with(name))
            .map(|e| e.ratio)
            .expect(name)
    };
    assert!(
        by("ZstdCompressor level 3") < by("LZ4Compressor"),
        "{dry:#?}"
    );
    assert!(by("none") > 0.99);

    let mut seen = Vec::new();
    let run = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |done, total| {
        seen.push((done, total))
    })
    .expect("run");
    assert_eq!(run.rewritten.len(), 3);
    assert_eq!(seen.last().map(|&(d, t)| d == t), Some(true), "{seen:?}");
    let after = live_bytes(&t);
    assert!(after < before, "zstd is smaller: {after} vs {before}");
    let error = (dry.estimated_bytes_after as f64 - after as f64).abs() / after as f64;
    assert!(
        error < 0.10,
        "dry-run estimate {} vs outcome {after} ({:.1}% off)",
        dry.estimated_bytes_after,
        error * 100.0
    );
    eprintln!(
        "LZ4 {before} -> Zstd 3 {after} bytes; estimated {} ({:.2}% off)",
        dry.estimated_bytes_after,
        error * 100.0
    );
    let ids_after: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    assert!(
        ids_after.iter().all(|id| !ids_before.contains(id)),
        "each input replaced"
    );
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());
    assert_eq!(TableStats::of(&t).sstables_with_other_compression, 0);

    // Nothing left to do; `-a` rewrites every sstable again.
    let again = upgrade_sstables(&t, &UpgradeOptions::default(), &mut |_, _| {}).expect("again");
    assert!(again.candidates.is_empty() && again.rewritten.is_empty());
    let all = upgrade_sstables(
        &t,
        &UpgradeOptions {
            all: true,
            jobs: 2,
            ..UpgradeOptions::default()
        },
        &mut |_, _| {},
    )
    .expect("-a");
    assert_eq!(all.rewritten.len(), 3);
    assert_eq!(missing(&t, 0..10_000), Vec::<i32>::new());
    db.close().expect("close");
}
