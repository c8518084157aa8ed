//! The compaction executor: performs the I/O of a [`CompactionTask`] decided by a
//! strategy, for one table.
//!
//! A merge streams every input sstable in token order (each chunk read once),
//! reconciles equal partitions, purges by Cassandra's rules ([`super::purge`]), and
//! writes outputs cut by the task's [`OutputSplit`] through an
//! [`OutputSet`] (the one place that decides where an output ends, shared with
//! flush). The outputs replace the inputs
//! by one [`SSTableEdit`] ([`CompactionTask::edit`]) that the table applies
//! atomically (manifest commit + view swap); input files are deleted by the
//! reclaimer once the last reader drops them.
//!
//! The executor sees a table only through [`CompactionHost`] (the narrow
//! interface it defines), so it depends on no table code: the module graph runs
//! table -> compaction, never back.
//!
//! Threads: any compaction thread; the caller marks the task's inputs busy before
//! and clears them after (see `compaction::runtime::run_task`).
//!
//! Invariants:
//! 1. The live set changes only at the end, atomically: a crash or an error at any
//!    point leaves the inputs live and the partial outputs unlisted (deleted at the
//!    next open, manifest invariant 3).
//! 2. Nothing is purged that something outside the compaction could need
//!    (`max_purgeable_micros` per partition from overlapping sstables and memtables).
//! 3. Throughput is limited by bytes written (`compaction_throughput_mb_per_sec`),
//!    and cancellation is checked between partitions.

use super::merge::{MergeRules, PartitionMerge};
use super::purge::PurgeStats;
use super::{CompactionTask, OutputSplit};
use crate::data::DecoratedKey;
use crate::encoding::EncodingBase;
use crate::error::{Error, Result};
use crate::fs::IoTag;
use crate::read::{SSTableEdit, View};
use crate::split::{partitions_per_output, OutputFactory, OutputSet, SSTableOutputs};
use crate::sstable::bloom::KeyHash;
use crate::sstable::{PartitionHead, RowScanner, SSTableReader, SSTableWriter};
use parking_lot::Mutex;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a table exposes to the executor: its current view (memtables and the
/// version of its live sstables), applying an edit, writing an sstable, and the
/// few facts a purge needs. The executor depends on nothing else of a table.
pub trait CompactionHost: Send + Sync {
    /// `(keyspace, table)`, for records and `compactionstats`.
    fn qualified_name(&self) -> (String, String);
    /// The current memtables and version.
    fn view(&self) -> Arc<View>;
    /// The table clock's "now".
    fn now_seconds(&self) -> i64;
    fn gc_grace_seconds(&self) -> u32;
    /// Whether an unreadable sstable may hold `token` (purge nothing there).
    fn unreadable_covers(&self, token: i64) -> bool;
    /// The disk-space guard: refuses (and counts) when `estimate_bytes` more
    /// would not fit.
    fn check_disk_space(&self, estimate_bytes: u64) -> Result<()>;
    /// A writer for a new sstable of this table (fresh id, current schema).
    fn create_sstable(
        &self,
        level: u32,
        tag: IoTag,
        base: EncodingBase,
        expected_partitions: u64,
    ) -> Result<SSTableWriter>;
    /// Atomically applies `edit` (manifest, then view).
    fn apply_edit(&self, edit: &SSTableEdit) -> Result<()>;
}

/// Progress of a running task, for `compactionstats`.
#[derive(Debug, Default)]
pub struct TaskProgress {
    pub id: u64,
    pub description: String,
    pub bytes_total: AtomicU64,
    pub bytes_done: AtomicU64,
    pub cancel: AtomicBool,
}

/// A token bucket over bytes written: `compaction_throughput_mb_per_sec`
/// (Cassandra's name; RocksDB's `rate_limiter`). Shared by all compaction threads
/// of a database, as Cassandra's is.
#[derive(Debug)]
pub struct RateLimiter {
    bytes_per_sec: AtomicU64,
    state: Mutex<(Instant, f64)>,
}

impl RateLimiter {
    pub fn new(bytes_per_sec: u64) -> RateLimiter {
        RateLimiter {
            bytes_per_sec: AtomicU64::new(bytes_per_sec),
            state: Mutex::new((Instant::now(), 0.0)),
        }
    }

    pub fn set_rate(&self, bytes_per_sec: u64) {
        self.bytes_per_sec.store(bytes_per_sec, Ordering::Relaxed);
    }

    /// Bytes per second now (0: unlimited).
    pub fn rate(&self) -> u64 {
        self.bytes_per_sec.load(Ordering::Relaxed)
    }

    /// Accounts `bytes` and sleeps as long as the budget is overdrawn (0 = unlimited).
    pub fn acquire(&self, bytes: u64) {
        let rate = self.bytes_per_sec.load(Ordering::Relaxed);
        if rate == 0 || bytes == 0 {
            return;
        }
        let wait = {
            let mut s = self.state.lock();
            let now = Instant::now();
            // Refill, allowing at most one second of burst.
            let refill = now.duration_since(s.0).as_secs_f64() * rate as f64;
            s.1 = (s.1 + refill).min(rate as f64);
            s.0 = now;
            s.1 -= bytes as f64;
            if s.1 < 0.0 {
                Duration::from_secs_f64(-s.1 / rate as f64)
            } else {
                Duration::ZERO
            }
        };
        if !wait.is_zero() {
            std::thread::sleep(wait);
        }
    }
}

/// What one executed task did (one `compactionhistory` entry).
#[derive(Clone, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct CompactionRecord {
    /// Clock seconds when the task finished.
    pub finished_at_seconds: i64,
    pub keyspace: String,
    pub table: String,
    pub kind: String,
    pub reason: String,
    pub inputs: Vec<u64>,
    pub outputs: Vec<u64>,
    pub output_level: u32,
    pub bytes_in: u64,
    pub bytes_out: u64,
    pub partitions_in: u64,
    pub partitions_out: u64,
    pub tombstones_purged: u64,
    pub expired_cells_purged: u64,
    pub shadowed_cells_removed: u64,
    pub duration_ms: u64,
}

/// Executes `task` on the table behind `table`. The caller has marked its
/// inputs busy.
pub fn execute(
    table: &dyn CompactionHost,
    task: &CompactionTask,
    progress: &TaskProgress,
    limiter: &RateLimiter,
) -> Result<CompactionRecord> {
    let started = Instant::now();
    let (keyspace, name) = table.qualified_name();
    let mut record = CompactionRecord {
        keyspace,
        table: name,
        inputs: task.input_ids(),
        output_level: task.output_level().unwrap_or(0),
        ..CompactionRecord::default()
    };
    let view = table.view();
    match task {
        CompactionTask::Drop { ids } | CompactionTask::DropDead { ids } => {
            record.kind = "drop".into();
            record.reason = match task {
                CompactionTask::DropDead { .. } => "all data deleted".into(),
                _ => "fully expired".into(),
            };
            record.bytes_in = ids
                .iter()
                .filter_map(|id| view.version.get(*id))
                .map(|s| s.handle.file_size())
                .sum();
            table.apply_edit(&task.edit(Vec::new()))?;
        }
        CompactionTask::Move { id, to_level } => {
            record.kind = "move".into();
            record.reason = format!(
                "L{} -> L{to_level} without rewrite",
                view.version.level_of(*id).unwrap_or(0)
            );
            table.apply_edit(&task.edit(Vec::new()))?;
            record.outputs = vec![*id];
        }
        CompactionTask::Merge { .. } | CompactionTask::Rewrite { .. } => {
            // A rewrite is a one-input merge whose output is never split.
            let (kind, inputs, output_level, split, reason) = match task {
                CompactionTask::Merge {
                    inputs,
                    output_level,
                    split,
                    reason,
                } => (
                    "merge",
                    inputs.clone(),
                    *output_level,
                    split.clone(),
                    reason,
                ),
                CompactionTask::Rewrite {
                    id,
                    output_level,
                    reason,
                } => (
                    "rewrite",
                    vec![*id],
                    *output_level,
                    OutputSplit::None,
                    reason,
                ),
                _ => unreachable!("matched Merge or Rewrite above"),
            };
            record.kind = kind.into();
            record.reason = reason.label().to_string();
            tracing::info!(
                target: "strata::compaction",
                table = %format!("{}.{}", record.keyspace, record.table),
                kind = %kind,
                reason = %record.reason,
                inputs = ?inputs,
                level = output_level,
                "compacting {} sstable(s) into level {output_level}: {}",
                inputs.len(),
                record.reason
            );
            merge(
                table,
                &view,
                task,
                &inputs,
                output_level,
                split,
                progress,
                limiter,
                &mut record,
            )?;
        }
    }
    record.duration_ms = started.elapsed().as_millis() as u64;
    record.finished_at_seconds = table.now_seconds();
    Ok(record)
}

#[allow(clippy::too_many_arguments)]
fn merge(
    table: &dyn CompactionHost,
    view: &View,
    task: &CompactionTask,
    inputs: &[u64],
    output_level: u32,
    split: OutputSplit,
    progress: &TaskProgress,
    limiter: &RateLimiter,
    record: &mut CompactionRecord,
) -> Result<()> {
    let mut readers: Vec<(Arc<SSTableReader>, u32)> = Vec::with_capacity(inputs.len());
    for id in inputs {
        match view.version.get(*id) {
            Some(s) => readers.push((s.handle.clone(), s.level)),
            None => return Err(Error::NotFound(format!("sstable {id} is no longer live"))),
        }
    }
    let total_bytes: u64 = readers.iter().map(|(r, _)| r.file_size()).sum();
    record.bytes_in = total_bytes;
    progress.bytes_total.store(total_bytes, Ordering::Relaxed);
    table.check_disk_space(total_bytes)?;

    // Sources that may hold data of these partitions outside the compaction
    // (invariant 2): sstables overlapping the inputs' token hull, and memtables.
    let lo = readers
        .iter()
        .map(|(r, _)| r.first_key().token)
        .min()
        .unwrap_or(i64::MIN);
    let hi = readers
        .iter()
        .map(|(r, _)| r.last_key().token)
        .max()
        .unwrap_or(i64::MAX);
    let outside = OutsideSSTables::new(
        view.sstables()
            .iter()
            .filter(|s| {
                !inputs.contains(&s.id()) && s.first_key().token <= hi && s.last_key().token >= lo
            })
            .cloned()
            .collect(),
    );
    let memtables = view.memtables.clone();
    let max_purgeable = |key: &DecoratedKey| -> i64 {
        // An unreadable sstable that may hold this partition could hold anything
        // older: purge nothing a tombstone might still have to shadow there.
        if table.unreadable_covers(key.token) {
            return i64::MIN;
        }
        let mut m = outside.min_timestamp_holding(key);
        for mt in &memtables {
            if let Some(ts) = mt.min_timestamp() {
                if ts < m && mt.contains(key) {
                    m = ts;
                }
            }
        }
        m
    };

    let gc_before = table.now_seconds() - table.gc_grace_seconds() as i64;
    let base = readers.iter().fold(None::<EncodingBase>, |acc, (r, _)| {
        let b = r.stats().base;
        Some(match acc {
            None => b,
            Some(a) => EncodingBase {
                min_timestamp: a.min_timestamp.min(b.min_timestamp),
                min_local_deletion: a.min_local_deletion.min(b.min_local_deletion),
                min_ttl: a.min_ttl.min(b.min_ttl),
                row_ts_bytes: 0,
            },
        })
    });
    // Every input timestamp lies in [base, the inputs' latest]: that span
    // sets the width of the outputs' fixed-width row timestamps (a row
    // outside it would take a varint; none is).
    let max_timestamp = readers
        .iter()
        .map(|(r, _)| r.stats().max_timestamp_micros)
        .max();
    let base = match (base, max_timestamp) {
        (Some(b), Some(max)) => b.with_row_ts_span_to(max),
        _ => EncodingBase::ZERO,
    };
    let total_partitions: u64 = readers.iter().map(|(r, _)| r.stats().partition_count).sum();
    let total_uncompressed: u64 = readers
        .iter()
        .map(|(r, _)| r.stats().uncompressed_bytes)
        .sum::<u64>()
        .max(1);
    // Size each output's bloom filter for its share of the partitions.
    let per_output = partitions_per_output(&split, total_partitions, total_bytes);
    let _ = total_uncompressed;

    let mut scanners: Vec<RowScanner> = Vec::with_capacity(readers.len());
    for (r, level) in &readers {
        scanners.push(r.scan_rows(IoTag::compaction(*level as u8))?);
    }

    let factory = SSTableOutputs::new(|_bucket| {
        table.create_sstable(
            output_level,
            IoTag::compaction(output_level as u8),
            base,
            per_output,
        )
    });
    let mut set = OutputSet::new(split, factory)?;
    let mut purge_total = PurgeStats::default();
    let rules = |key: &DecoratedKey| -> Result<MergeRules> {
        // The garbage of a fragmented blob sstable is deleted by tombstones
        // held in other sstables: the merge removes what they supersede
        // (module docs of `live_bytes`; the tombstones stay where they are).
        let live_set = if task.shadows_with_live_set() {
            let rewritten = inputs.first().copied().unwrap_or(u64::MAX);
            Some(super::live_bytes::live_set_deletions(
                &view.version,
                rewritten,
                key,
            )?)
        } else {
            None
        };
        Ok(MergeRules {
            gc_before_seconds: gc_before,
            max_purgeable_micros: max_purgeable(key),
            live_set,
        })
    };
    let merged = merge_stream(
        &mut scanners,
        &mut set,
        rules,
        progress,
        limiter,
        record,
        &mut purge_total,
    );
    // Outputs already finished are unlisted garbage once the task fails.
    if let Err(e) = merged {
        for o in set.abort() {
            o.output.mark_obsolete();
        }
        return Err(e);
    }
    let outputs: Vec<Arc<SSTableReader>> = match set.finish() {
        Ok(finished) => finished.into_iter().map(|o| o.output).collect(),
        Err(failed) => {
            for o in failed.finished {
                o.output.mark_obsolete();
            }
            return Err(failed.error);
        }
    };
    let edit: SSTableEdit = task.edit(outputs.iter().map(|r| (r.id(), r.clone())).collect());
    if let Err(e) = table.apply_edit(&edit) {
        // After an uncertain manifest commit the outputs may be listed: keep them
        // (manifest invariant 5); otherwise they are unlisted garbage.
        if !matches!(e, Error::Poisoned(_)) {
            for o in &outputs {
                o.mark_obsolete();
            }
        }
        return Err(e);
    }
    record.outputs = outputs.iter().map(|r| r.id()).collect();
    record.bytes_out = outputs.iter().map(|r| r.file_size()).sum();
    record.tombstones_purged = purge_total.tombstones_purged;
    record.expired_cells_purged = purge_total.expired_cells_purged;
    record.shadowed_cells_removed = purge_total.shadowed_cells;
    progress.bytes_done.store(total_bytes, Ordering::Relaxed);
    Ok(())
}

/// Merges the inputs' partitions in token order into `set` (invariants 2
/// and 3): each partition the inputs share is merged a row at a time
/// ([`PartitionMerge`]: deletions and static row first, then the rows by
/// clustering, each reconciled, shadowed and purged alone) and written as it
/// comes, so neither a partition nor a large row is held whole (memory:
/// docs/compaction/blob.md, "Memory"). The throughput limit and cancellation
/// are applied after every row, so a partition of gigabytes is throttled and
/// stoppable like many small ones.
fn merge_stream(
    scanners: &mut [RowScanner],
    set: &mut OutputSet<impl OutputFactory>,
    rules: impl Fn(&DecoratedKey) -> Result<MergeRules>,
    progress: &TaskProgress,
    limiter: &RateLimiter,
    record: &mut CompactionRecord,
    purge_total: &mut PurgeStats,
) -> Result<()> {
    let mut heads: Vec<Option<PartitionHead>> = Vec::with_capacity(scanners.len());
    for s in scanners.iter_mut() {
        heads.push(s.next_partition()?);
    }
    let mut last_written = 0u64;
    let mut written = |set: &OutputSet<_>| -> Result<()> {
        if progress.cancel.load(Ordering::Relaxed) {
            return Err(Error::Cancelled);
        }
        let now = set.bytes_written();
        let delta = now.saturating_sub(last_written);
        limiter.acquire(delta);
        progress.bytes_done.fetch_add(delta, Ordering::Relaxed);
        last_written = now;
        Ok(())
    };
    let mut holders: Vec<usize> = Vec::with_capacity(scanners.len());
    while let Some(key) = heads.iter().flatten().map(|h| &h.key).min().cloned() {
        holders.clear();
        let mut parts = Vec::with_capacity(scanners.len());
        for (i, (head, scanner)) in heads.iter_mut().zip(scanners.iter_mut()).enumerate() {
            if let Some(h) = head.take_if(|h| h.key == key) {
                holders.push(i);
                parts.push((h, scanner));
            }
        }
        record.partitions_in += parts.len() as u64;
        let (mut merge, deletion, static_row) = PartitionMerge::new(parts, rules(&key)?)?;
        written(set)?;
        set.begin_partition(key, deletion, static_row)?;
        while let Some(row) = merge.next_row()? {
            set.append_row(row)?;
            written(set)?;
        }
        purge_total.add(&merge.stats());
        drop(merge);
        if set.end_partition()? {
            record.partitions_out += 1;
        }
        written(set)?;
        for &i in &holders {
            heads[i] = scanners[i].next_partition()?;
        }
    }
    Ok(())
}

/// The sstables outside a compaction that overlap its inputs, arranged so
/// that "which of them may hold this partition" costs O(runs x log n) rather
/// than a test of each: sorted into runs of token-disjoint sstables (greedy
/// interval partitioning, so a leveled set gives about one run per level plus
/// one per L0 sstable). Asked once per partition written, testing all of
/// them was most of a large leveled compaction's time at ~6,000 sstables
/// (BENCHMARKS.md, "Fixed levels across data sizes").
struct OutsideSSTables<S = Arc<SSTableReader>> {
    /// Each run sorted by first token, its sstables' token ranges disjoint.
    runs: Vec<Vec<S>>,
}

/// What [`OutsideSSTables`] needs of an sstable (a trait so that its tests
/// need no files).
trait PurgeSource {
    /// Inclusive token range.
    fn tokens(&self) -> (i64, i64);
    fn min_timestamp_micros(&self) -> i64;
    /// Key range and bloom filter; `hash` carries the key's hash between
    /// sstables.
    fn may_hold(&self, key: &DecoratedKey, hash: &mut Option<KeyHash>) -> bool;
}

impl PurgeSource for Arc<SSTableReader> {
    fn tokens(&self) -> (i64, i64) {
        (self.first_key().token, self.last_key().token)
    }
    fn min_timestamp_micros(&self) -> i64 {
        self.stats().min_timestamp_micros
    }
    fn may_hold(&self, key: &DecoratedKey, hash: &mut Option<KeyHash>) -> bool {
        self.may_contain_hashed(key, hash)
    }
}

impl<S: PurgeSource> OutsideSSTables<S> {
    fn new(mut sstables: Vec<S>) -> OutsideSSTables<S> {
        sstables.sort_by_key(|s| s.tokens());
        let mut runs: Vec<Vec<S>> = Vec::new();
        // (last token of the run, run): the run that ends first is the one to
        // extend, if it ends before the next sstable starts.
        let mut ends: BinaryHeap<Reverse<(i64, usize)>> = BinaryHeap::new();
        for s in sstables {
            let (first, last) = s.tokens();
            let run = match ends.peek() {
                Some(&Reverse((end, run))) if end < first => {
                    ends.pop();
                    run
                }
                _ => {
                    runs.push(Vec::new());
                    runs.len() - 1
                }
            };
            runs[run].push(s);
            ends.push(Reverse((last, run)));
        }
        OutsideSSTables { runs }
    }

    /// The oldest write (`min_timestamp_micros`) among the sstables that may
    /// hold `key`, `i64::MAX` if none: what a purge of that partition must not
    /// reach (invariant 2). At most one sstable per run can: the one that
    /// starts last at or before the key's token.
    fn min_timestamp_holding(&self, key: &DecoratedKey) -> i64 {
        let mut m = i64::MAX;
        let mut hash = None;
        for run in &self.runs {
            let i = run.partition_point(|s| s.tokens().0 <= key.token);
            let Some(s) = i.checked_sub(1).map(|i| &run[i]) else {
                continue;
            };
            if s.min_timestamp_micros() < m && s.may_hold(key, &mut hash) {
                m = s.min_timestamp_micros();
            }
        }
        m
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A fake sstable: a token range, an oldest write, and the tokens its
    /// bloom filter admits (every token in range when `None`).
    #[derive(Clone, Debug)]
    struct Fake {
        first: i64,
        last: i64,
        min_ts: i64,
        admits: Option<Vec<i64>>,
    }

    impl PurgeSource for Fake {
        fn tokens(&self) -> (i64, i64) {
            (self.first, self.last)
        }
        fn min_timestamp_micros(&self) -> i64 {
            self.min_ts
        }
        fn may_hold(&self, key: &DecoratedKey, _: &mut Option<KeyHash>) -> bool {
            (self.first..=self.last).contains(&key.token)
                && self.admits.as_ref().is_none_or(|a| a.contains(&key.token))
        }
    }

    /// Runs give what testing every sstable gives, on leveled-looking sets
    /// (disjoint levels, whole-ring L0 sstables, shared boundary tokens).
    #[test]
    fn outside_sstables_answer_as_a_scan_of_all() {
        use rand::{Rng, SeedableRng};
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(11);
        for round in 0..40 {
            let mut all: Vec<Fake> = Vec::new();
            for level in 0..4 {
                let mut t = -1_000i64;
                while t < 1_000 {
                    let width = rng.gen_range(0..[2_000, 300, 80, 20][level]);
                    all.push(Fake {
                        first: t,
                        last: t + width,
                        min_ts: rng.gen_range(0..1_000),
                        admits: rng
                            .gen_bool(0.5)
                            .then(|| (0..5).map(|_| rng.gen_range(t..=t + width)).collect()),
                    });
                    // Sometimes the next one starts on this one's last token.
                    t += width + rng.gen_range(0..3);
                }
            }
            let runs = OutsideSSTables::new(all.clone());
            for run in &runs.runs {
                assert!(
                    run.windows(2).all(|w| w[0].last < w[1].first),
                    "round {round}"
                );
            }
            assert!(runs.runs.len() < all.len() / 4, "round {round}: few runs");
            for token in -1_010..1_010 {
                let key = DecoratedKey {
                    token,
                    key: Arc::from(&[][..]),
                };
                let brute = all
                    .iter()
                    .filter(|s| s.may_hold(&key, &mut None))
                    .map(|s| s.min_ts)
                    .min()
                    .unwrap_or(i64::MAX);
                assert_eq!(
                    runs.min_timestamp_holding(&key),
                    brute,
                    "round {round} token {token}"
                );
            }
        }
    }

    #[test]
    fn rate_limiter_spaces_out_writes() {
        let l = RateLimiter::new(1_000_000);
        let t = Instant::now();
        // One second of burst is free, the next 0.2 s must be waited for.
        l.acquire(1_000_000);
        l.acquire(200_000);
        assert!(
            t.elapsed() >= Duration::from_millis(150),
            "{:?}",
            t.elapsed()
        );
        // Unlimited: nothing is owed, so nothing is slept for (asserted on
        // the budget, not on the clock, which a loaded machine stretches).
        let unlimited = RateLimiter::new(0);
        unlimited.acquire(u64::MAX);
        assert_eq!(unlimited.state.lock().1, 0.0);
    }
}
