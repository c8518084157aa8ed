//! Randomized checks of the strategy invariants (module docs of `compaction`):
//! on random sstable sets every proposed task names only existing, idle, distinct
//! sstables and valid levels; and a model executor that runs tasks concurrently and
//! completes them in random order never sees two overlapping sstables in a level
//! of 1 or more. Seeded (STYLE.md 8): a failure reproduces from the printed seed.
//!
//! The model's live set is the engine's [`Version`], changed by the edits
//! [`CompactionTask::edit`] makes (the executor's and the simulator's code).
//!
//! Also the decision-time measurement on 5,000 sstables (printed, not asserted:
//! run with `--nocapture`).

use std::collections::{HashMap, HashSet};
use std::time::Instant;

use proptest::prelude::*;
use proptest::test_runner::{Config, RngSeed};

use super::test_util::*;
use super::*;
use crate::version::{LiveBytes, LiveSSTable, Version, VersionEdit};

/// Raw material of one sstable; laid out into a valid set by [`layout`].
#[derive(Clone, Debug)]
struct Raw {
    level: u32,
    gap: i64,
    width: i64,
    size_mib: u64,
    min_ts: i64,
    ts_span: i64,
    expired_at: Option<i64>,
    ratio: f64,
    created: i64,
    partitions: u64,
    busy: bool,
}

fn raw() -> impl Strategy<Value = Raw> {
    (
        0u32..=5,
        0i64..2_000,
        0i64..5_000,
        1u64..300,
        0i64..1_000_000,
        0i64..100_000,
        prop_oneof![4 => Just(None), 1 => (0i64..300_000).prop_map(Some)],
        0.0f64..1.0,
        0i64..300_000,
        0u64..10_000,
        prop_oneof![6 => Just(false), 1 => Just(true)],
    )
        .prop_map(
            |(
                level,
                gap,
                width,
                size_mib,
                min_ts,
                ts_span,
                expired_at,
                ratio,
                created,
                partitions,
                busy,
            )| Raw {
                level,
                gap,
                width,
                size_mib,
                min_ts,
                ts_span,
                expired_at,
                ratio,
                created,
                partitions,
                busy,
            },
        )
}

/// Ids 1..; L0 ranges anywhere in [-50_000, 50_000]; levels >= 1 laid left to
/// right with gaps so they never overlap within a level.
fn layout(raws: &[Raw], with_busy: bool) -> Vec<SSTableInfo> {
    let mut cursor: HashMap<u32, i64> = HashMap::new();
    raws.iter()
        .enumerate()
        .map(|(i, r)| {
            let (first, last) = if r.level == 0 {
                let first = (r.gap * 53 + r.width * 7) % 100_000 - 50_000;
                (first, first + r.width)
            } else {
                let at = cursor.entry(r.level).or_insert(-60_000);
                let first = *at + 1 + r.gap;
                *at = first + r.width;
                (first, first + r.width)
            };
            SSTableInfo {
                id: i as u64 + 1,
                level: r.level,
                size_bytes: r.size_mib * MIB,
                uncompressed_bytes: r.size_mib * MIB * 2,
                first_token: first,
                last_token: last,
                min_timestamp_micros: r.min_ts,
                max_timestamp_micros: r.min_ts + r.ts_span,
                max_local_deletion_seconds: r.expired_at.unwrap_or(i64::MAX),
                droppable_tombstone_ratio: r.ratio,
                creation_time_seconds: r.created,
                partition_count: r.partitions,
                being_compacted: with_busy && r.busy,
                expiry_verified: false,
                // The blob strategy's accounting, varied from the other draws
                // (every other strategy ignores it): some unaccounted, some
                // wholly dead, fragmented to various degrees, some sharing rows.
                live: (r.gap % 5 != 0).then(|| LiveBytes {
                    dead_bytes: r.size_mib * MIB * 2 * (r.width as u64 % 5) / 4,
                    dead_partitions: if r.gap % 3 == 0 { r.partitions } else { 0 },
                    shares_live_rows: r.width % 7 == 0,
                    deletions_target_nothing: r.created % 2 == 0,
                }),
            }
        })
        .collect()
}

fn strategies() -> Vec<(Box<dyn CompactionStrategy>, u32)> {
    let texts = [
        ("'class': 'SizeTieredCompactionStrategy'", u32::MAX),
        ("'class': 'SizeTieredCompactionStrategy', 'min_threshold': 2, 'unchecked_tombstone_compaction': true", u32::MAX),
        ("'class': 'LeveledCompactionStrategy'", lcs::MAX_LEVEL),
        ("'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 4", lcs::MAX_LEVEL),
        ("'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 2, 'single_sstable_uplevel': false", lcs::MAX_LEVEL),
        ("'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'level_count': 3", 3),
        ("'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'level_count': 2, 'fanout_size': 3", 2),
        ("'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 300, 'l0_size_tiered': true", lcs::MAX_LEVEL),
        ("'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 4, 'l0_compaction_trigger': 3", lcs::MAX_LEVEL),
        ("'class': 'BlobCompactionStrategy'", u32::MAX),
        ("'class': 'BlobCompactionStrategy', 'max_sstable_fragmentation': 1.5", u32::MAX),
    ];
    texts
        .iter()
        .map(|(t, top)| (strategy_for(&opts(t)), *top))
        .collect()
}

fn is_lcs(s: &dyn CompactionStrategy) -> bool {
    s.name() == "LeveledCompactionStrategy"
}

/// Invariant 1 (and, for LCS, 5 and the level bounds) for one proposed task.
fn check_task(
    task: &CompactionTask,
    set: &[SSTableInfo],
    lcs_top: Option<u32>,
) -> Result<(), TestCaseError> {
    let by_id: HashMap<u64, &SSTableInfo> = set.iter().map(|s| (s.id, s)).collect();
    let ids = task.input_ids();
    prop_assert!(!ids.is_empty(), "empty task {task:?}");
    let unique: HashSet<u64> = ids.iter().copied().collect();
    prop_assert_eq!(unique.len(), ids.len(), "duplicate input in {:?}", task);
    for id in &ids {
        let s = by_id.get(id);
        prop_assert!(s.is_some(), "unknown id {} in {:?}", id, task);
        prop_assert!(
            !s.map(|s| s.being_compacted).unwrap_or(true),
            "busy input {} in {:?}",
            id,
            task
        );
    }
    if let CompactionTask::Merge { split, .. } = task {
        prop_assert!(split.validate().is_ok(), "invalid split in {:?}", task);
        prop_assert!(split.max_bytes() >= MIB);
    }
    // Invariant 4 for the blob strategy's whole-sstable drops.
    if let CompactionTask::DropDead { ids } = task {
        for id in ids {
            let s = by_id[id];
            prop_assert!(
                s.partition_count > 0
                    && s.live
                        .is_some_and(|l| l.dead_partitions == s.partition_count),
                "{task:?} drops {s:?}, which is not wholly superseded"
            );
        }
    }
    let Some(top) = lcs_top else {
        return Ok(());
    };
    match task {
        CompactionTask::Merge {
            inputs,
            output_level,
            ..
        } => {
            prop_assert!(*output_level <= top, "{task:?} above top {top}");
            if *output_level >= 1 {
                let hull =
                    common::token_hull(inputs.iter().map(|id| by_id[id])).expect("non-empty");
                for s in set.iter().filter(|s| s.level == *output_level) {
                    let overlaps = s.first_token <= hull.1 && s.last_token >= hull.0;
                    prop_assert!(
                        !overlaps || unique.contains(&s.id),
                        "{task:?} leaves overlapping L{output_level} sstable {s:?}"
                    );
                }
            }
        }
        CompactionTask::Move { id, to_level } => {
            prop_assert!(*to_level <= top && *to_level >= 1);
            let moved = by_id[id];
            for s in set.iter().filter(|s| s.level == *to_level) {
                prop_assert!(!moved.overlaps(s), "{task:?} onto overlapping {s:?}");
            }
        }
        CompactionTask::Rewrite {
            id, output_level, ..
        } => {
            prop_assert_eq!(*output_level, by_id[id].level);
        }
        CompactionTask::Drop { .. } | CompactionTask::DropDead { .. } => {}
    }
    Ok(())
}

/// Levels >= 1 of `set` have no two overlapping sstables.
fn check_levels(set: &[SSTableInfo]) -> Result<(), TestCaseError> {
    let mut by_level: HashMap<u32, Vec<&SSTableInfo>> = HashMap::new();
    for s in set.iter().filter(|s| s.level >= 1) {
        by_level.entry(s.level).or_default().push(s);
    }
    for (level, mut v) in by_level {
        v.sort_by_key(|s| (s.first_token, s.id));
        for w in v.windows(2) {
            prop_assert!(
                w[0].last_token < w[1].first_token,
                "L{level} overlap: {:?} and {:?}",
                w[0],
                w[1]
            );
        }
    }
    Ok(())
}

/// The model live set: a [`Version`] whose handle is the metadata (the version's
/// level is authoritative), plus the inputs of tasks in flight.
struct Model {
    live: Version<SSTableInfo>,
    busy: HashSet<u64>,
}

impl Model {
    fn new(set: Vec<SSTableInfo>) -> Model {
        let live = Version::from_sstables(set.into_iter().map(|s| LiveSSTable {
            id: s.id,
            level: s.level,
            handle: s,
            live: None,
        }))
        .expect("layout gives distinct ids");
        Model {
            live,
            busy: HashSet::new(),
        }
    }

    /// What the strategies see.
    fn infos(&self) -> Vec<SSTableInfo> {
        self.live
            .iter()
            .map(|e| SSTableInfo {
                level: e.level,
                being_compacted: self.busy.contains(&e.id),
                ..e.handle.clone()
            })
            .collect()
    }

    fn apply(&mut self, edit: &VersionEdit<SSTableInfo>) -> Result<(), TestCaseError> {
        match self.live.apply(edit) {
            Ok(next) => {
                self.live = next;
                Ok(())
            }
            Err(e) => Err(TestCaseError::fail(format!("edit {edit:?}: {e}"))),
        }
    }
}

/// What the executor would leave after `task`: outputs partition the inputs' token
/// hull (the widest range real outputs could cover) into pieces of at most
/// `max_output_bytes`. Installed as the executor installs them: the edit
/// [`CompactionTask::edit`] makes, applied by [`Version::apply`].
fn complete(
    task: &CompactionTask,
    model: &mut Model,
    next_id: &mut u64,
    now: i64,
) -> Result<(), TestCaseError> {
    let ids: HashSet<u64> = task.input_ids().into_iter().collect();
    let inputs: Vec<SSTableInfo> = model
        .infos()
        .into_iter()
        .filter(|s| ids.contains(&s.id))
        .collect();
    let mut outputs: Vec<(u64, SSTableInfo)> = Vec::new();
    let mut fresh = |level: u32, size: u64, first: i64, last: i64| {
        *next_id += 1;
        SSTableInfo {
            min_timestamp_micros: inputs
                .iter()
                .map(|s| s.min_timestamp_micros)
                .min()
                .unwrap_or(0),
            max_timestamp_micros: inputs
                .iter()
                .map(|s| s.max_timestamp_micros)
                .max()
                .unwrap_or(0),
            max_local_deletion_seconds: inputs
                .iter()
                .map(|s| s.max_local_deletion_seconds)
                .max()
                .unwrap_or(i64::MAX),
            creation_time_seconds: now,
            ..sst_range(*next_id, level, size.max(1), first, last)
        }
    };
    match task {
        CompactionTask::Drop { .. }
        | CompactionTask::DropDead { .. }
        | CompactionTask::Move { .. } => {}
        CompactionTask::Rewrite { output_level, .. } => {
            let s = &inputs[0];
            let out = fresh(*output_level, s.size_bytes, s.first_token, s.last_token);
            outputs.push((out.id, out));
        }
        CompactionTask::Merge {
            output_level,
            split,
            ..
        } => {
            let total: u64 = inputs.iter().map(|s| s.size_bytes).sum();
            let (a, b) = common::token_hull(&inputs).expect("non-empty");
            let width = (b - a) as u64 + 1;
            let pieces = total.div_ceil(split.max_bytes()).clamp(1, 8).min(width);
            let step = width / pieces;
            for k in 0..pieces {
                let first = a + (k * step) as i64;
                let last = if k + 1 == pieces {
                    b
                } else {
                    first + step as i64 - 1
                };
                let out = fresh(*output_level, total / pieces, first, last);
                outputs.push((out.id, out));
            }
        }
    }
    model.apply(&task.edit(outputs))?;
    for id in ids {
        model.busy.remove(&id);
    }
    Ok(())
}

fn seeded(cases: u32, seed: u64) -> Config {
    Config {
        cases,
        rng_seed: RngSeed::Fixed(seed),
        failure_persistence: None,
        ..Config::default()
    }
}

proptest! {
    #![proptest_config(seeded(256, 0x5eed_c0a1))]

    #[test]
    fn tasks_name_only_idle_distinct_existing_sstables(
        raws in proptest::collection::vec(raw(), 0..80),
        now in 0i64..400_000,
        grace in 0u32..100_000,
        mem in prop_oneof![Just(None), (0i64..1_000_000).prop_map(Some)],
    ) {
        let set = layout(&raws, true);
        let c = StrategyContext { now_seconds: now, gc_grace_seconds: grace, memtable_min_timestamp_micros: mem };
        for (s, top) in strategies() {
            let lcs_top = is_lcs(s.as_ref()).then_some(top);
            if let Some(task) = s.next_task(&set, &c) {
                check_task(&task, &set, lcs_top)?;
            }
            // Major: later tasks run after earlier drops.
            let mut remaining = set.clone();
            for task in s.major_compaction(&set, &c) {
                check_task(&task, &remaining, lcs_top)?;
                if let CompactionTask::Drop { ids } = &task {
                    remaining.retain(|s| !ids.contains(&s.id));
                }
            }
            let _ = s.estimated_pending_tasks(&set, &c);
            let scores = s.level_scores(&set);
            prop_assert!(scores.iter().all(|x| x.is_finite() && *x >= 0.0));
        }
    }
}

proptest! {
    #![proptest_config(seeded(96, 0x01e7_e1ed))]

    #[test]
    fn concurrent_tasks_in_any_completion_order_keep_levels_disjoint(
        raws in proptest::collection::vec(raw(), 0..60),
        choices in proptest::collection::vec(0u8..=255, 80),
        which in 0usize..9,
    ) {
        // Small sstable sizes keep every level over target (promotions all the
        // way up); larger ones leave the levels happy so L0 compactions run.
        let texts = [
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 2",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'level_count': 3",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'level_count': 2, 'single_sstable_uplevel': false",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 4, 'fanout_size': 3",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 300, 'fanout_size': 4",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 200, 'level_count': 3",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 300, 'fanout_size': 4, 'l0_size_tiered': true",
            "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 4, 'l0_compaction_trigger': 2",
        ];
        let strategy = lcs::LeveledCompactionStrategy::new(&opts(texts[which]));
        let top = strategy.top_level();
        let mut model = Model::new(layout(&raws, false));
        let mut next_id = model.live.len() as u64 + 1;
        let mut in_flight: Vec<CompactionTask> = Vec::new();
        let mut now = 0;
        check_levels(&model.infos())?;
        for (step, choice) in choices.into_iter().enumerate() {
            now += 1_000;
            // Flushes keep arriving while tasks run.
            if choice % 4 == 3 {
                next_id += 1;
                let first = (choice as i64 * 997 + step as i64 * 7919) % 120_000 - 60_000;
                let width = (choice as i64 % 7) * 1_500;
                let flush_bytes = (choice as u64 % 5 + 1) * strategy.effective_sstable_size(&model.infos()) / 3;
                let mut flush = sst_range(next_id, 0, flush_bytes, first, first + width);
                flush.min_timestamp_micros = now * 1_000_000;
                flush.max_timestamp_micros = now * 1_000_000 + 1;
                model.apply(&VersionEdit::new().add(flush.id, 0, flush))?;
                continue;
            }
            // Up to 3 tasks in flight; otherwise complete one chosen at random.
            if in_flight.len() < 3 && choice % 3 != 0 {
                let c = StrategyContext { now_seconds: now, gc_grace_seconds: 0, memtable_min_timestamp_micros: None };
                let set = model.infos();
                if let Some(task) = strategy.next_task(&set, &c) {
                    check_task(&task, &set, Some(top))?;
                    model.busy.extend(task.input_ids());
                    in_flight.push(task);
                    continue;
                }
            }
            if !in_flight.is_empty() {
                let task = in_flight.remove(choice as usize % in_flight.len());
                complete(&task, &mut model, &mut next_id, now)?;
                check_levels(&model.infos())?;
            }
        }
    }
}

/// A 5,000-sstable leveled layout: 30 flushes in L0, then L1..L4 with L3 just over
/// its target (so a promotion is chosen), a few fully expired sstables and some
/// tombstone-heavy ones.
fn big_leveled_set() -> Vec<SSTableInfo> {
    const S: u64 = 160 * MIB;
    let mut set = Vec::with_capacity(5_000);
    let mut id = 0;
    let mut push_level = |set: &mut Vec<SSTableInfo>, level: u32, count: u64| {
        let width = (u64::MAX / count) as i128;
        for k in 0..count {
            id += 1;
            let first = i64::MIN as i128 + k as i128 * width;
            let mut s = sst_range(id, level, S, first as i64, (first + width - 1) as i64);
            s.droppable_tombstone_ratio = if k % 97 == 0 { 0.5 } else { 0.01 };
            s.creation_time_seconds = 0;
            if k % 1_000 == 7 {
                s.max_local_deletion_seconds = 10;
                s.min_timestamp_micros = 5_000_000;
                s.max_timestamp_micros = 5_000_001;
            }
            set.push(s);
        }
    };
    push_level(&mut set, 1, 10);
    push_level(&mut set, 2, 100);
    push_level(&mut set, 3, 1_010);
    push_level(&mut set, 4, 3_850);
    for k in 0..30u64 {
        set.push(sst(10_000 + k, 0, 64 * MIB));
    }
    set
}

#[test]
fn decision_time_on_5000_sstables() {
    let lcs_set = big_leveled_set();
    assert_eq!(lcs_set.len(), 5_000);
    let mut stcs_set = lcs_set.clone();
    for (k, s) in stcs_set.iter_mut().enumerate() {
        // Sizes spread over 1 MiB .. ~64 GiB, so many buckets.
        s.size_bytes = MIB << (k % 17);
        s.size_bytes += (k as u64 * 7919) % MIB;
        s.level = 0;
    }
    let c = ctx(1_000_000);
    let cases: [(&str, &[SSTableInfo]); 4] = [
        ("'class': 'SizeTieredCompactionStrategy'", &stcs_set),
        ("'class': 'LeveledCompactionStrategy'", &lcs_set),
        (
            "'class': 'LeveledCompactionStrategy', 'fanout_size': 4",
            &lcs_set,
        ),
        (
            "'class': 'LeveledCompactionStrategy', 'level_count': 4",
            &lcs_set,
        ),
    ];
    for (text, set) in cases {
        let s = strategy_for(&opts(text));
        let rounds = 50;
        let start = Instant::now();
        let mut proposed = 0;
        for _ in 0..rounds {
            proposed += usize::from(s.next_task(set, &c).is_some());
        }
        let per_decision = start.elapsed() / rounds;
        assert_eq!(proposed, rounds as usize, "{text}: a task every time");
        println!(
            "decision time, {} sstables, {{{text}}}: {per_decision:?} per next_task \
             (first task: {:?})",
            set.len(),
            s.next_task(set, &c).map(|t| match t {
                CompactionTask::Merge {
                    inputs,
                    output_level,
                    reason,
                    ..
                } => format!(
                    "merge {} -> L{output_level} ({})",
                    inputs.len(),
                    reason.label()
                ),
                other => format!("{other:?}"),
            })
        );
    }
}
