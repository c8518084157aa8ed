//! Compaction as seen from a table: the table's side of the compaction runtime
//! ([`CompactionHost`] and [`CompactionTable`] for [`Table`]), and the operator's commands on one table
//! (major compaction, user-defined compaction, `garbagecollect`, pausing,
//! `compactionstats`/`compactionhistory` figures).
//!
//! Decisions, busy inputs and pauses belong to `compaction::runtime`; this module
//! only forwards to it, so the dependency runs table -> runtime and never back.
//!
//! Threads: any. Decisions take the table's decision lock inside the runtime.
//!
//! Invariants:
//! 1. Every manual operation pauses background compaction of the table first,
//!    so it plans on a stable set (runtime invariant 1 then holds for it too).
//! 2. A task's outcome is recorded (metrics, history) exactly once, after its
//!    inputs were released.

use crate::compaction::executor::{CompactionHost, CompactionRecord, RateLimiter};
use crate::compaction::runtime::{self, CompactionTable, PauseGuard, TableCompactions};
use crate::compaction::{
    CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo, StrategyContext,
};
use crate::encoding::EncodingBase;
use crate::error::{Error, Result};
use crate::fs::{IoCause, IoTag};
use crate::options::CompactionOptions;
use crate::read::{SSTableEdit, View};
use crate::sstable::SSTableWriter;
use crate::table::Table;
use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

const HISTORY_FILE: &str = "compaction_history.jsonl";
/// In-memory history kept per table (the file keeps everything).
const HISTORY_IN_MEMORY: usize = 1000;

/// A running task, as `compactionstats` shows it.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ActiveCompaction {
    pub id: u64,
    pub keyspace: String,
    pub table: String,
    pub description: String,
    pub bytes_done: u64,
    pub bytes_total: u64,
}

impl CompactionHost for Table {
    fn qualified_name(&self) -> (String, String) {
        let schema = self.schema();
        (schema.keyspace.clone(), schema.name.clone())
    }

    fn view(&self) -> Arc<View> {
        Table::view(self)
    }

    fn now_seconds(&self) -> i64 {
        self.clock().now_seconds()
    }

    fn gc_grace_seconds(&self) -> u32 {
        self.schema().options.gc_grace_seconds
    }

    fn unreadable_covers(&self, token: i64) -> bool {
        self.unreadable_covering(Some(token)).is_some()
    }

    fn check_disk_space(&self, estimate_bytes: u64) -> Result<()> {
        Table::check_disk_space(self, estimate_bytes)
    }

    fn create_sstable(
        &self,
        level: u32,
        tag: IoTag,
        base: EncodingBase,
        expected_partitions: u64,
    ) -> Result<SSTableWriter> {
        self.check_owned()?;
        let id = self.allocate_sstable_id();
        let opts = self.writer_options(id, level, tag, base, expected_partitions);
        SSTableWriter::create(self.fs(), self.dir(), id, opts)
    }

    fn apply_edit(&self, edit: &SSTableEdit) -> Result<()> {
        Table::apply_edit(self, edit)
    }
}

impl CompactionTable for Table {
    /// The table's options, with `unsafe_aggressive_sstable_expiration` off
    /// unless the database allows it (`TableRuntimeOptions`).
    fn compaction_options(&self) -> CompactionOptions {
        let options = self.schema().options.compaction.clone();
        if options.asks_unsafe_aggressive_expiration()
            && !self.runtime.allow_unsafe_aggressive_sstable_expiration
        {
            return options.without_unsafe_aggressive_expiration();
        }
        options
    }

    fn has_unreadable(&self) -> bool {
        !self.unreadable_sstables().is_empty()
    }

    fn compactions(&self) -> &TableCompactions {
        &self.compaction
    }

    fn reclaim_obsolete(&self) {
        self.fs().reclaim_obsolete();
    }

    fn prepare_decision(&self) {
        if let Err(e) = self.ensure_live_bytes() {
            *self.last_accounting_error.lock() = Some(format!("accounting at decision: {e}"));
        }
    }

    fn task_finished(&self, result: &Result<CompactionRecord>, elapsed: Duration) {
        // Writers stalled on L0 may proceed.
        self.notify_flushed();
        match result {
            Ok(record) => {
                log_finished(record);
                let level = (record.output_level as usize).min(crate::fs::MAX_TRACKED_LEVELS - 1);
                if record.kind == "merge" || record.kind == "rewrite" {
                    self.metrics.compactions_into_level[level].fetch_add(1, Ordering::Relaxed);
                    self.metrics.compaction_micros_into_level[level]
                        .fetch_add(elapsed.as_micros() as u64, Ordering::Relaxed);
                }
                self.append_history(record);
            }
            // A task stopped on purpose (close, drain, `stop`) is not a
            // failure: Cassandra logs its interrupted compactions at info
            // too, and an operator reading `error` lines must find only
            // what needs them. Its inputs stay live, nothing is lost.
            Err(Error::Cancelled) => {
                tracing::info!(
                    target: "strata::compaction",
                    table = %self.schema().qualified_name(),
                    ms = elapsed.as_millis() as u64,
                    "compaction stopped before it finished; its inputs stay as they were"
                );
            }
            Err(e) => {
                tracing::error!(
                    target: "strata::compaction",
                    table = %self.schema().qualified_name(),
                    ms = elapsed.as_millis() as u64,
                    "compaction failed: {e}"
                );
                self.metrics
                    .compactions_failed
                    .fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// The line a finished task leaves in the log: what it read and wrote, how
/// long it took and why it was chosen; a drop of whole sstables says so.
fn log_finished(r: &CompactionRecord) {
    let table = format!("{}.{}", r.keyspace, r.table);
    if r.kind == "drop" {
        tracing::info!(
            target: "strata::compaction",
            table = %table,
            inputs = ?r.inputs,
            bytes = r.bytes_in,
            reason = %r.reason,
            "dropped {} sstable(s) whole, {} bytes: {}",
            r.inputs.len(),
            r.bytes_in,
            r.reason
        );
        return;
    }
    tracing::info!(
        target: "strata::compaction",
        table = %table,
        kind = %r.kind,
        reason = %r.reason,
        inputs = ?r.inputs,
        outputs = ?r.outputs,
        level = r.output_level,
        bytes_in = r.bytes_in,
        bytes_out = r.bytes_out,
        partitions_in = r.partitions_in,
        partitions_out = r.partitions_out,
        tombstones_purged = r.tombstones_purged,
        ms = r.duration_ms,
        "compacted {} sstable(s), {} bytes, into {} at level {}, {} bytes, in {} ms: {}",
        r.inputs.len(),
        r.bytes_in,
        r.outputs.len(),
        r.output_level,
        r.bytes_out,
        r.duration_ms,
        r.reason
    );
}

impl Table {
    /// The strategy for the current options (rebuilt when they changed).
    /// Whether the table's strategy keeps the blob accounting (`tablestats`).
    pub fn compaction_strategy_tracks_live_bytes(&self) -> bool {
        self.strategy().tracks_live_bytes()
    }

    pub fn strategy(&self) -> Arc<dyn CompactionStrategy> {
        self.compaction.strategy(&self.schema().options.compaction)
    }

    /// What the strategies see: the live sstables as metadata.
    pub fn sstable_infos(&self) -> Vec<SSTableInfo> {
        runtime::current_infos(self)
    }

    pub fn strategy_context(&self) -> StrategyContext {
        runtime::strategy_context(self, &self.view())
    }

    /// Chooses the next task and marks its inputs busy (runtime invariant 1),
    /// under the table's decision lock.
    pub fn next_compaction_task(&self) -> Option<CompactionTask> {
        runtime::decide(self)
    }

    /// The task the next decision would choose, changing nothing (for
    /// `compactionstats` and waiting for compactions to settle).
    pub fn peek_compaction_task(&self) -> Option<CompactionTask> {
        runtime::pending_task(self)
    }

    /// Pending tasks as the strategy estimates them (`compactionstats`).
    pub fn pending_compaction_tasks(&self) -> usize {
        runtime::estimated_pending_tasks(self)
    }

    /// Per-level scores of the strategy (`tablestats`); changes no state.
    pub fn compaction_level_scores(&self) -> Vec<f64> {
        runtime::level_scores(self)
    }

    /// Runs a task whose inputs `next_compaction_task` (or a manual command) marked
    /// busy, records it in the history, and unmarks the inputs.
    pub fn run_compaction(
        self: &Arc<Self>,
        task: &CompactionTask,
        limiter: &RateLimiter,
    ) -> Result<CompactionRecord> {
        runtime::run_task(self.as_ref(), task, limiter)
    }

    /// Runs this table's background tasks on the calling thread until none is
    /// due, at most `max_tasks` (an error if work is still pending then): the
    /// library entry point for tools and benchmarks that run without background
    /// compactors, instead of looping over `next_compaction_task` by hand.
    /// Decisions take the table's decision lock as the compactor threads do.
    pub fn compact_until_idle(
        self: &Arc<Self>,
        limiter: &RateLimiter,
        max_tasks: usize,
    ) -> Result<Vec<CompactionRecord>> {
        runtime::Scheduler::new().run_until_idle(std::slice::from_ref(self), limiter, max_tasks)
    }

    fn append_history(&self, record: &CompactionRecord) {
        {
            let mut h = self.compaction.history.lock();
            h.push(record.clone());
            if h.len() > HISTORY_IN_MEMORY {
                let excess = h.len() - HISTORY_IN_MEMORY;
                h.drain(..excess);
            }
        }
        if let Ok(mut line) = serde_json::to_vec(record) {
            line.push(b'\n');
            // History is for operators; failing to record it must not fail the
            // compaction that already committed.
            let _ = self.fs().append(
                &self.dir().join(HISTORY_FILE),
                &line,
                IoTag::new(IoCause::Metadata),
            );
        }
    }

    /// `strata sstable expiredblockers`: for each fully expired sstable still
    /// live (everything in it past its local deletion time plus gc grace), the
    /// sources Cassandra's overlap rule counts against it and what the row-level
    /// check ([`crate::compaction::expiry`]) found in each. A candidate with no
    /// blocker, or whose blockers all came out clear, goes at the strategy's next
    /// expiry check. It says what the table's own options make of them: with
    /// `row_level_expiry_check: false` every blocker blocks (nothing is read),
    /// and with TWCS's `unsafe_aggressive_sstable_expiration` in effect nothing
    /// does (the overlap rule is skipped). Changes nothing.
    pub fn expired_blockers(&self) -> Vec<crate::compaction::expiry::ExpiryCheck> {
        let view = self.view();
        let gc_before = self.strategy_context().gc_before();
        let options = CompactionTable::compaction_options(self);
        let row_level = options.common().row_level_expiry_check;
        let ignores_overlaps = options.asks_unsafe_aggressive_expiration();
        view.sstables()
            .iter()
            .filter(|s| s.stats().max_local_deletion_seconds < gc_before)
            .map(|c| {
                if ignores_overlaps {
                    return crate::compaction::expiry::coarse_only(c, &[], &[], "");
                }
                let (sstables, memtables) = runtime::coarse_blockers(&view, c, gc_before);
                if !row_level {
                    return crate::compaction::expiry::coarse_only(
                        c,
                        &sstables,
                        &memtables,
                        "holds a write older than the candidate's newest; the row-level \
                         check is off for this table (row_level_expiry_check: false), so \
                         Cassandra's overlap rule keeps the candidate",
                    );
                }
                crate::compaction::expiry::check(
                    c,
                    &sstables,
                    &memtables,
                    crate::compaction::expiry::DEFAULT_BLOCKER_BUDGET_BYTES,
                )
            })
            .collect()
    }

    /// Every recorded compaction of this table, oldest first (from its history file).
    pub fn compaction_history(&self) -> Vec<CompactionRecord> {
        let path = self.dir().join(HISTORY_FILE);
        // A history past this is read from memory (this process's records):
        // the file is an append-only log nothing ever trims.
        const MAX_HISTORY_BYTES: u64 = 64 << 20;
        match self
            .fs()
            .read_all(&path, MAX_HISTORY_BYTES, IoTag::new(IoCause::Metadata))
        {
            Ok(bytes) => bytes
                .split(|&b| b == b'\n')
                .filter_map(|l| serde_json::from_slice(l).ok())
                .collect(),
            Err(_) => self.compaction.history.lock().clone(),
        }
    }

    pub fn active_compactions(&self) -> Vec<ActiveCompaction> {
        let schema = self.schema();
        self.compaction
            .active()
            .iter()
            .map(|p| ActiveCompaction {
                id: p.id,
                keyspace: schema.keyspace.clone(),
                table: schema.name.clone(),
                description: p.description.clone(),
                bytes_done: p.bytes_done.load(Ordering::Relaxed),
                bytes_total: p.bytes_total.load(Ordering::Relaxed),
            })
            .collect()
    }

    /// Asks running tasks of this table to stop (they abort between partitions).
    pub fn cancel_compactions(&self) {
        runtime::cancel(&self.compaction);
    }

    /// `nodetool disable/enableautocompaction`: whether background compaction
    /// chooses tasks for this table (runtime only; manual operations run
    /// either way). Enabling wakes the compactors.
    pub fn set_auto_compaction(&self, enabled: bool) {
        self.compaction
            .auto_disabled
            .store(!enabled, std::sync::atomic::Ordering::Release);
        if enabled {
            if let Some(s) = self.compaction_signal.lock().as_ref() {
                s.notify();
            }
        }
    }

    pub fn auto_compaction_enabled(&self) -> bool {
        !self
            .compaction
            .auto_disabled
            .load(std::sync::atomic::Ordering::Acquire)
    }

    /// Pauses background compaction of this table (for scrub, recompression and
    /// other whole-table rewrites) until the guard drops; waits up to `timeout`
    /// for running tasks to finish, so a manual operation plans on a stable set.
    pub fn pause_compactions(&self, timeout: Duration) -> Result<PauseGuard<'_>> {
        runtime::pause(&self.compaction, timeout)
    }

    /// `strata compact` (nodetool compact): flushes, then runs the strategy's
    /// major compaction with background compaction of this table paused.
    pub fn compact_major(self: &Arc<Self>, limiter: &RateLimiter) -> Result<Vec<CompactionRecord>> {
        self.flush()?;
        let _pause = self.pause_compactions(Duration::from_secs(600))?;
        runtime::major_tasks(self.as_ref())
            .iter()
            .map(|task| runtime::run_manual(self.as_ref(), task, limiter))
            .collect()
    }

    /// User-defined compaction (nodetool `compact --user-defined`): merges exactly
    /// `ids` into `output_level`, outputs split at the strategy's sstable size for
    /// LCS (unsplit otherwise). Background compaction of the table is paused.
    pub fn compact_user_defined(
        self: &Arc<Self>,
        ids: &[u64],
        output_level: u32,
        limiter: &RateLimiter,
    ) -> Result<CompactionRecord> {
        let _pause = self.pause_compactions(Duration::from_secs(600))?;
        let view = self.view();
        if let Some(missing) = ids.iter().find(|id| !view.version.contains(**id)) {
            return Err(Error::NotFound(format!("sstable {missing} is not live")));
        }
        let mut inputs = ids.to_vec();
        inputs.sort_unstable();
        inputs.dedup();
        // Outputs cut as the strategy cuts its own merges: LCS by its sstable
        // size, TWCS and DTCS by time window (as they cut flushes), STCS not.
        let options = self.schema().options.compaction.clone();
        let split = match options.class() {
            crate::options::CompactionClass::LeveledCompactionStrategy => OutputSplit::Size {
                max_bytes: options.lcs().sstable_size_bytes(),
            },
            _ => self.strategy().flush_split(),
        };
        let task = CompactionTask::Merge {
            inputs,
            output_level,
            split,
            reason: crate::compaction::TaskReason::Major,
        };
        runtime::run_manual(self.as_ref(), &task, limiter)
    }

    /// `strata garbagecollect`: rewrites each sstable alone, dropping what the
    /// purge rules allow (shadowed data, tombstones and expired cells past gc grace
    /// with nothing older elsewhere), keeping its level.
    pub fn garbage_collect(
        self: &Arc<Self>,
        limiter: &RateLimiter,
    ) -> Result<Vec<CompactionRecord>> {
        let _pause = self.pause_compactions(Duration::from_secs(600))?;
        let ids: Vec<(u64, u32)> = self
            .view()
            .version
            .iter()
            .map(|s| (s.id, s.level))
            .collect();
        ids.into_iter()
            .map(|(id, level)| {
                let task = CompactionTask::Rewrite {
                    id,
                    output_level: level,
                    reason: crate::compaction::TaskReason::Tombstone,
                };
                runtime::run_manual(self.as_ref(), &task, limiter)
            })
            .collect()
    }

    /// Ids of sstables that are inputs of a running task.
    pub fn busy_sstables(&self) -> HashSet<u64> {
        self.compaction.decision_lock().clone()
    }
}
