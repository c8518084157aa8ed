//! Simulator tests: invariants on small runs, determinism, and the seed's
//! experiment at its own ratios (D/s, s/F, TTL/flush period) against the model.

use super::*;
use crate::model::{self, ModelInput, ModelStrategy};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;

/// A small LCS run: 64 KiB/s, 512 KiB flushes, 1 MiB sstables, TTL 30 min.
fn small(cql: &str) -> SimConfig {
    SimConfig {
        ingest_bytes_per_second: (64 * KIB) as f64,
        flush_bytes: 512 * KIB,
        ttl_seconds: 1800,
        gc_grace_seconds: 60,
        duration_seconds: 2 * 3600,
        sample_interval_seconds: 600,
        ..SimConfig::with_compaction(cql).unwrap()
    }
}

const LCS4: &str =
    "'class': 'LeveledCompactionStrategy', 'fanout_size': 4, 'sstable_size_in_mb': 1";

#[test]
fn small_lcs_run_keeps_invariants_and_conserves_bytes() {
    let r = run(&small(LCS4)).unwrap();
    // 2 h x 64 KiB/s / 512 KiB = 900 flushes.
    assert_eq!(r.bytes_flushed, 900 * 512 * KIB);
    // Every flushed byte is live, dropped whole, or purged inside a merge.
    assert_eq!(
        r.bytes_flushed,
        r.final_data_bytes + r.tasks.dropped_bytes + r.tasks.purged_bytes
    );
    assert!(
        r.tasks.purged_bytes + r.tasks.dropped_bytes > 0,
        "TTL expired nothing"
    );
    assert!(r.write_amplification > 1.0);
    assert_eq!(r.series.len(), 12);
    // Steady state: about ingest x (TTL + purge delay), 112.5 MiB live.
    let live = 64.0 * KIB as f64 * 1800.0;
    assert!(
        r.steady_data_bytes > live && r.steady_data_bytes < 1.5 * live,
        "{}",
        r.steady_data_bytes
    );
    // Compaction bytes per level add up.
    assert_eq!(
        r.bytes_compacted_per_level.iter().sum::<u64>(),
        r.bytes_compacted
    );
    let last = r.series.last().unwrap();
    assert_eq!(
        last.levels.iter().map(|l| l.bytes).sum::<u64>(),
        last.data_bytes
    );
}

#[test]
fn runs_are_deterministic() {
    let a = run(&small(LCS4)).unwrap();
    let b = run(&small(LCS4)).unwrap();
    assert_eq!(a.series, b.series);
    assert_eq!(a.tasks, b.tasks);
}

#[test]
fn throttled_concurrent_compaction_keeps_levels_disjoint() {
    let cfg = SimConfig {
        // Slow enough that tasks overlap flushes and each other.
        compaction_throughput_bytes_per_second: Some((256 * KIB) as f64),
        concurrent_compactors: 3,
        ..small(LCS4)
    };
    let r = run(&cfg).unwrap();
    // Inputs of tasks still running at the end are live; their purge is counted
    // when they complete.
    assert_eq!(
        r.bytes_flushed,
        r.final_data_bytes + r.tasks.dropped_bytes + r.tasks.purged_bytes
    );
    assert!(r.tasks.merges > 0);
}

#[test]
fn stcs_time_series_and_fixed_lcs_conserve_bytes() {
    for cql in [
        "'class': 'SizeTieredCompactionStrategy'",
        "'class': 'TimeWindowCompactionStrategy'",
        "'class': 'TimeWindowCompactionStrategy', 'split_output_by_window': 'false'",
        "'class': 'DateTieredCompactionStrategy'",
        "'class': 'LeveledCompactionStrategy', 'fanout_size': 10, 'sstable_size_in_mb': 1, 'level_count': 2",
    ] {
        let r = run(&small(cql)).unwrap();
        assert_eq!(
            r.bytes_flushed,
            r.final_data_bytes + r.tasks.dropped_bytes + r.tasks.purged_bytes,
            "{cql}"
        );
        assert!(r.write_amplification >= 1.0);
    }
}

#[test]
fn stcs_write_amplification_follows_whole_tiers() {
    // No TTL: 1024 flushes of 512 KiB = 512 MiB; T = 4: 5 whole tiers.
    let cfg = SimConfig {
        ttl_seconds: 0,
        duration_seconds: 1024 * 8,
        ..small("'class': 'SizeTieredCompactionStrategy', 'min_sstable_size': 0")
    };
    let r = run(&cfg).unwrap();
    let m = model::predict(
        &ModelInput {
            strategy: ModelStrategy::Stcs,
            data_bytes: Some(512.0 * MIB as f64),
            flush_bytes: (512 * KIB) as f64,
            ..ModelInput::default()
        },
        true,
    )
    .unwrap();
    assert_eq!(m.refined.write_amplification, 6.0);
    assert!(
        (r.write_amplification - 6.0).abs() < 1e-9,
        "{}",
        r.write_amplification
    );
}

#[test]
fn bad_config_is_an_error() {
    let bad = [
        SimConfig {
            flush_bytes: 0,
            ..small(LCS4)
        },
        SimConfig {
            ingest_bytes_per_second: 0.0,
            ..small(LCS4)
        },
        SimConfig {
            sample_interval_seconds: 0,
            ..small(LCS4)
        },
        SimConfig {
            concurrent_compactors: 0,
            ..small(LCS4)
        },
    ];
    for cfg in bad {
        assert!(matches!(run(&cfg), Err(Error::InvalidInput(_))));
    }
    assert!(SimConfig::seed_node('D').is_err());
}

/// The seed's experiment at 1/32 of its bytes (and the same time axis): every
/// ratio the strategy sees is the seed's (D/s, s/F, flushes per TTL), so the write
/// amplification is the full-scale one. A: fanout 10, 5 MiB; B: 4, 5 MiB; C: 4,
/// 32 MiB; 32 KiB/s, 8 MiB flushes (256 MiB scaled), TTL 2 d, gc 60 s, 88 h.
fn scaled_seed_node(node: char) -> SimConfig {
    let (fanout, mib) = match node {
        'A' => (10, 5),
        'B' => (4, 5),
        _ => (4, 32),
    };
    SimConfig {
        ingest_bytes_per_second: (32 * KIB) as f64,
        // The default 256 MiB flush, scaled.
        flush_bytes: (model::DEFAULT_FLUSH_BYTES / 32.0) as u64,
        check_invariants: false,
        ..SimConfig::with_compaction(&format!(
            "'class': 'LeveledCompactionStrategy', 'fanout_size': {fanout}, 'sstable_size_in_mb': {mib}"
        ))
        .unwrap()
    }
}

fn refined_for(cfg: &SimConfig) -> f64 {
    let lcs = cfg.compaction.lcs();
    model::predict(
        &ModelInput {
            strategy: ModelStrategy::Lcs,
            data_bytes: None,
            sstable_bytes: lcs.sstable_size_bytes() as f64,
            fanout: lcs.fanout_size,
            flush_bytes: cfg.flush_bytes as f64,
            ingest_bytes_per_second: Some(cfg.ingest_bytes_per_second),
            ttl_seconds: Some(cfg.ttl_seconds as f64),
            gc_grace_seconds: cfg.gc_grace_seconds as f64,
            ..ModelInput::default()
        },
        true,
    )
    .unwrap()
    .refined
    .write_amplification
}

#[test]
fn seed_experiment_ordering_and_refined_model() {
    let mut wa = Vec::new();
    for node in ['A', 'B', 'C'] {
        let cfg = scaled_seed_node(node);
        let r = run(&cfg).unwrap();
        let refined = refined_for(&cfg);
        let error = (r.steady_write_amplification - refined).abs() / refined;
        eprintln!(
            "node {node}: simulated WA {:.2} (whole run {:.2}), refined model {refined:.2} ({:+.1}%), levels {:?}, data {:.2} GiB scaled, wall {:.2} s",
            r.steady_write_amplification,
            r.write_amplification,
            100.0 * (r.steady_write_amplification - refined) / refined,
            r.steady_levels,
            r.steady_data_bytes / (1u64 << 30) as f64 * 32.0,
            r.elapsed_wall_seconds
        );
        assert!(
            error < 0.10,
            "node {node}: sim {} vs refined {refined}",
            r.steady_write_amplification
        );
        // Round robin promotes the dense part of a level: never a uniform level
        // (1.0, what smearing merges over their hull produced), and below the
        // continuous sawtooth's 2.0 at L1 (measured 1.41-1.50 at full scale).
        let l1 = r.tasks.flows[2].promoted_relative_density;
        assert!(
            (1.2..1.8).contains(&l1),
            "node {node}: L1 -> L2 density {l1}"
        );
        wa.push(r.steady_write_amplification);
    }
    assert!(wa[0] > wa[1] && wa[1] > wa[2], "{wa:?}");
    // The seed measured C 36% below A; the issue asks for at least 25%.
    assert!(wa[2] < 0.75 * wa[0], "{wa:?}");
}

/// A merge keeps the inputs' density shape: a dense narrow sstable inside a
/// sparse wide one gets narrow outputs where it lies, and each output holds the
/// share of each input that its range covers.
#[test]
fn merge_outputs_follow_the_inputs_density() {
    let width = 60.0;
    // Wide: 1000 bytes over [0, 9999]; dense: 1000 bytes over [4000, 4999].
    let wide = Piece::new(0, 9_999, Hist::uniform(0.0, 10.0, 1000.0, width));
    let dense = Piece::new(4_000, 4_999, Hist::uniform(10.0, 20.0, 1000.0, width));
    let pieces = [wide, dense];
    // 2000 bytes in 4 outputs of 500: cuts where 500, 1000, 1500 have accumulated.
    // [0, 4000) holds 400 bytes; inside [4000, 5000) density is 1.1 per token, so
    // 1500 is reached exactly at 5000.
    let cuts = cut_positions(&pieces, 500, 4);
    assert_eq!(cuts.len(), 3);
    let expect = [
        4_000 + (100.0f64 / 1.1).ceil() as i128,
        4_000 + (600.0f64 / 1.1).ceil() as i128,
        5_000,
    ];
    for (got, want) in cuts.iter().zip(expect) {
        assert!((got - want).abs() <= 1, "cuts {cuts:?}, want {expect:?}");
    }
    // The middle outputs are narrow (~455 tokens), the outer ones wide.
    assert!(cuts[1] - cuts[0] < 500 && cuts[2] - cuts[1] < 500);
    assert!(cuts[0] > 4_000 && 10_000 - cuts[2] == 5_000);
    // Shares of each piece over the outputs sum to 1.
    let bounds = [0, cuts[0], cuts[1], cuts[2], 10_000];
    for p in &pieces {
        let total: f64 = bounds.windows(2).map(|w| p.share(w[0], w[1] - 1)).sum();
        assert!((total - 1.0).abs() < 1e-12, "{total}");
    }
    // The first output holds none of the dense (newer) piece's writes... almost:
    // it ends one cut past 4000, a few tokens into the dense range.
    assert!(pieces[1].share(0, cuts[0] - 1) < 0.1);
}

/// Outputs never start or end inside a gap between inputs: an sstable's range
/// runs from its first partition to its last.
#[test]
fn merge_outputs_trim_gaps() {
    let h = |b| Hist::uniform(0.0, 1.0, b, 60.0);
    let pieces = [
        Piece::new(0, 99, h(100.0)),
        Piece::new(1_000, 1_099, h(100.0)),
    ];
    let s = support(&pieces);
    assert_eq!(s, vec![(0, 99), (1_000, 1_099)]);
    // One cut at 100 bytes: right after the first piece; the second output
    // starts where the data resumes.
    let cuts = cut_positions(&pieces, 100, 2);
    assert_eq!(cuts, vec![100]);
    assert_eq!(trim_to_support(&s, 0, cuts[0] - 1), (0, 99));
    assert_eq!(trim_to_support(&s, cuts[0], 1_099), (1_000, 1_099));
    // Overlapping ranges coalesce; a full-range flush does not overflow.
    let full = [
        Piece::new(i64::MIN, i64::MAX, h(10.0)),
        Piece::new(-5, 5, h(10.0)),
    ];
    assert_eq!(support(&full), vec![(i64::MIN as i128, i64::MAX as i128)]);
    for c in cut_positions(&full, 1, 20) {
        assert!(c <= i64::MAX as i128 && c > i64::MIN as i128);
    }
}

#[test]
fn fixed_levels_keep_n_levels_bounded_sstables_and_follow_the_model() {
    // 112.5 MiB live (64 KiB/s x 30 min TTL) in 256 KiB sstables: D / s ~ 450,
    // far past fanout^3 = 64, where the first fixed-levels design grew its
    // sstables and the normal mode grows a fifth level.
    let fixed = "'class': 'LeveledCompactionStrategy', 'fanout_size': 4, 'sstable_size_in_kb': 256, 'level_count': 3";
    let normal =
        "'class': 'LeveledCompactionStrategy', 'fanout_size': 4, 'sstable_size_in_kb': 256";
    let cfg = |cql: &str| SimConfig {
        duration_seconds: 3 * 3600,
        ..small(cql)
    };
    let r = run(&cfg(fixed)).unwrap();
    let levels = r.steady_levels.expect("LCS has levels");
    assert!(
        levels > 2.9 && levels <= 3.0 + 1e-9,
        "steady levels {levels}"
    );
    assert!(r
        .final_levels
        .iter()
        .all(|l| l.level <= 3 || l.sstables == 0));
    // Bounded by the larger of a flush (512 KiB, L0) and the sstable size
    // whatever the data: the first design grew them to 64 x.
    assert!(r.max_sstable_bytes <= 512 * KIB, "{}", r.max_sstable_bytes);
    assert!(
        r.sstables_per_read_p99 >= 3 && r.sstables_per_read_p99 <= 3 + 4,
        "{}",
        r.sstables_per_read_p99
    );
    // The normal mode at the same fanout needs more levels (and reads) for
    // this data: the cap is real.
    let n = run(&cfg(normal)).unwrap();
    assert!(
        n.steady_levels.expect("levels") > 3.5,
        "{:?}",
        n.steady_levels
    );
    // The refined model follows the design within 10%.
    let m = model::predict(
        &ModelInput {
            sstable_bytes: (256 * KIB) as f64,
            fanout: 4,
            level_count: 3,
            flush_bytes: (512 * KIB) as f64,
            ingest_bytes_per_second: Some((64 * KIB) as f64),
            ttl_seconds: Some(1800.0),
            gc_grace_seconds: 60.0,
            ..ModelInput::default()
        },
        true,
    )
    .unwrap()
    .refined;
    assert_model_within_a_tenth(&m, &r, "fixed levels");
    assert_eq!(m.levels, 3.0);
}

#[test]
fn l0_compaction_trigger_writes_less_than_cassandras_l0_and_follows_the_model() {
    // Sstables four flushes wide (2 MiB against 512 KiB flushes): Cassandra's
    // rule merges L0 as a pile at flushes 2 and 3 of each batch, the trigger
    // takes the four flushes into L1 unmerged.
    let lcs = "'class': 'LeveledCompactionStrategy', 'fanout_size': 4, 'sstable_size_in_kb': 2048";
    let cfg = |cql: &str| SimConfig {
        duration_seconds: 3 * 3600,
        ..small(cql)
    };
    let cassandra = run(&cfg(lcs)).unwrap();
    let trigger = run(&cfg(&format!("{lcs}, 'l0_compaction_trigger': 4"))).unwrap();
    assert!(
        trigger.steady_write_amplification < cassandra.steady_write_amplification - 0.5,
        "trigger {} against Cassandra's rule {}",
        trigger.steady_write_amplification,
        cassandra.steady_write_amplification
    );
    // Never merged within L0: at most the four of a batch (and a flush that
    // arrived while it was being promoted) wait there.
    assert!(
        trigger.sstables_per_read_p99 <= cassandra.sstables_per_read_p99 + 4,
        "{} against {}",
        trigger.sstables_per_read_p99,
        cassandra.sstables_per_read_p99
    );
    let input = |l0_compaction_trigger| ModelInput {
        sstable_bytes: (2 * MIB) as f64,
        fanout: 4,
        flush_bytes: (512 * KIB) as f64,
        ingest_bytes_per_second: Some((64 * KIB) as f64),
        ttl_seconds: Some(1800.0),
        gc_grace_seconds: 60.0,
        l0_compaction_trigger,
        ..ModelInput::default()
    };
    for (sim, trigger_option) in [(&trigger, 4), (&cassandra, 0)] {
        let m = model::predict(&input(trigger_option), true)
            .unwrap()
            .refined;
        assert_model_within_a_tenth(&m, sim, &format!("trigger {trigger_option}"));
    }
}

/// The refined model's write amplification within 10% of the simulator's
/// steady state (the bar docs/compaction/model.md holds the model to).
fn assert_model_within_a_tenth(m: &model::Prediction, sim: &SimResult, what: &str) {
    let ratio = m.write_amplification / sim.steady_write_amplification;
    assert!(
        (0.9..=1.1).contains(&ratio),
        "{what}: model {} against simulator {}",
        m.write_amplification,
        sim.steady_write_amplification
    );
}
