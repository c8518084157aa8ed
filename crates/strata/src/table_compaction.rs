//! Compaction as seen from a table: which sstables are busy, the strategy built
//! from the current options, choosing and running tasks, major compaction,
//! `garbagecollect`, the disk-space guard, the L0 write stall and the history.
//!
//! Threads: `next_compaction_task` is called by one decision thread at a time
//! (the database's compaction manager holds a lock around it, compaction/mod.rs
//! contract); `run_compaction` runs on any compaction thread.
//!
//! Invariants:
//! 1. An sstable is in at most one running task: inputs are marked busy under the
//!    same lock that chose them, and unmarked only after the task ended.
//! 2. A changed compaction option takes effect at the next decision (the strategy
//!    is rebuilt when the options differ), with no restart.
//! 3. Every flush and every compaction passes the disk-space guard first; a
//!    refusal is counted and reported, never silently skipped.

use crate::compaction::executor::{execute, CompactionRecord, RateLimiter, TaskProgress};
use crate::compaction::{
    strategy_for, CompactionStrategy, CompactionTask, SSTableInfo, StrategyContext,
};
use crate::error::{Error, Result};
use crate::fs::{IoCause, IoTag};
use crate::options::CompactionOptions;
use crate::table::Table;
use parking_lot::Mutex;
use std::collections::HashSet;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

const HISTORY_FILE: &str = "compaction_history.jsonl";
/// In-memory history kept per table (the file keeps everything).
const HISTORY_IN_MEMORY: usize = 1000;

#[derive(Default)]
pub(crate) struct CompactionState {
    busy: Mutex<HashSet<u64>>,
    strategy: Mutex<Option<(CompactionOptions, Arc<dyn CompactionStrategy>)>>,
    active: Mutex<Vec<Arc<TaskProgress>>>,
    history: Mutex<Vec<CompactionRecord>>,
    next_task_id: AtomicU64,
    /// Manual operations (major compaction, garbagecollect) in progress: while
    /// non-zero the background manager proposes nothing for this table.
    paused: std::sync::atomic::AtomicUsize,
}

/// Pauses background compaction of a table while alive
/// ([`Table::pause_compactions`]).
pub struct PauseGuard<'a>(&'a CompactionState);

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        self.0.paused.fetch_sub(1, Ordering::AcqRel);
    }
}

impl std::fmt::Debug for CompactionState {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompactionState")
            .field("busy", &self.busy.lock().len())
            .finish()
    }
}

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

fn free_disk_bytes(path: &std::path::Path) -> Option<u64> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes()).ok()?;
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
    let rc = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
    (rc == 0).then(|| st.f_bavail as u64 * st.f_frsize as u64)
}

fn dir_bytes(path: &std::path::Path) -> u64 {
    let Ok(rd) = std::fs::read_dir(path) else {
        return 0;
    };
    rd.flatten()
        .map(|e| match e.file_type() {
            Ok(t) if t.is_dir() => dir_bytes(&e.path()),
            Ok(_) => e.metadata().map(|m| m.len()).unwrap_or(0),
            Err(_) => 0,
        })
        .sum()
}

impl Table {
    /// The strategy for the current options (rebuilt when they changed, invariant 2).
    pub fn strategy(&self) -> Arc<dyn CompactionStrategy> {
        let options = self.schema().options.compaction.clone();
        let mut slot = self.compaction.strategy.lock();
        match slot.as_ref() {
            Some((o, s)) if *o == options => s.clone(),
            _ => {
                let s: Arc<dyn CompactionStrategy> = Arc::from(strategy_for(&options));
                *slot = Some((options, s.clone()));
                s
            }
        }
    }

    /// What the strategies see: the live sstables as metadata.
    pub fn sstable_infos(&self) -> Vec<SSTableInfo> {
        let busy = self.compaction.busy.lock().clone();
        self.infos_with(&busy)
    }

    fn infos_with(&self, busy: &HashSet<u64>) -> Vec<SSTableInfo> {
        let view = self.view();
        let gc_before = self.clock().now_seconds() - self.schema().options.gc_grace_seconds as i64;
        view.sstables
            .iter()
            .zip(&view.levels)
            .map(|(s, &level)| {
                let st = s.stats();
                SSTableInfo {
                    id: s.id(),
                    level,
                    size_bytes: s.file_size(),
                    uncompressed_bytes: st.uncompressed_bytes,
                    first_token: st.first_key.token,
                    last_token: st.last_key.token,
                    min_timestamp_micros: st.min_timestamp_micros,
                    max_timestamp_micros: st.max_timestamp_micros,
                    max_local_deletion_seconds: st.max_local_deletion_seconds,
                    droppable_tombstone_ratio: st.estimate_droppable(gc_before),
                    creation_time_seconds: st.creation_time_seconds,
                    partition_count: st.partition_count,
                    being_compacted: busy.contains(&s.id()),
                }
            })
            .collect()
    }

    pub fn strategy_context(&self) -> StrategyContext {
        let view = self.view();
        StrategyContext {
            now_seconds: self.clock().now_seconds(),
            gc_grace_seconds: self.schema().options.gc_grace_seconds,
            memtable_min_timestamp_micros: view
                .memtables
                .iter()
                .filter_map(|m| m.min_timestamp())
                .min(),
        }
    }

    /// Chooses the next task and marks its inputs busy (invariant 1). Call from
    /// one decision thread at a time.
    pub fn next_compaction_task(&self) -> Option<CompactionTask> {
        let strategy = self.strategy();
        let ctx = self.strategy_context();
        // The pause check, the decision and the marking happen under the busy lock,
        // so a manual operation that pauses then sees no busy input cannot race a
        // task chosen just before the pause.
        let mut busy = self.compaction.busy.lock();
        if self.compaction.paused.load(Ordering::Acquire) > 0 {
            return None;
        }
        let task = strategy.next_task(&self.infos_with(&busy), &ctx)?;
        if matches!(task, CompactionTask::Drop { .. }) && !self.unreadable_sstables().is_empty() {
            // An unreadable sstable may hold data that the expired tombstones in
            // the dropped ones still shadow: dropping them now could resurrect it
            // once the file is restored. Wait until it is settled.
            return None;
        }
        let ids = task.input_ids();
        if ids.iter().any(|id| busy.contains(id)) {
            return None; // defensive: the strategy contract forbids this
        }
        busy.extend(ids);
        Some(task)
    }

    /// Pending tasks as the strategy estimates them (`compactionstats`).
    pub fn pending_compaction_tasks(&self) -> usize {
        self.strategy()
            .estimated_pending_tasks(&self.sstable_infos())
    }

    /// Runs a task whose inputs `next_compaction_task` (or a manual command) marked
    /// busy, records it in the history, and unmarks the inputs.
    pub fn run_compaction(
        self: &Arc<Self>,
        task: &CompactionTask,
        limiter: &RateLimiter,
    ) -> Result<CompactionRecord> {
        let progress = Arc::new(TaskProgress {
            id: self.compaction.next_task_id.fetch_add(1, Ordering::Relaxed) + 1,
            description: format!("{task:?}"),
            ..TaskProgress::default()
        });
        self.compaction.active.lock().push(progress.clone());
        let started = Instant::now();
        let result = execute(self, task, &progress, limiter);
        self.compaction
            .active
            .lock()
            .retain(|p| !Arc::ptr_eq(p, &progress));
        {
            let mut busy = self.compaction.busy.lock();
            for id in task.input_ids() {
                busy.remove(&id);
            }
        }
        // Writers stalled on L0 may proceed.
        {
            let _g = self.flushed_mutex.lock();
            self.flushed.notify_all();
        }
        match result {
            Ok(record) => {
                let level = (record.output_level as usize).min(crate::fs::MAX_TRACKED_LEVELS - 1);
                if record.kind == "merge" || record.kind == "rewrite" {
                    self.metrics.compactions_into_level[level].fetch_add(1, Ordering::Relaxed);
                    self.metrics.compaction_micros_into_level[level]
                        .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
                }
                self.append_history(&record);
                Ok(record)
            }
            Err(e) => {
                self.metrics
                    .compactions_failed
                    .fetch_add(1, Ordering::Relaxed);
                Err(e)
            }
        }
    }

    fn append_history(&self, record: &CompactionRecord) {
        let mut h = self.compaction.history.lock();
        h.push(record.clone());
        if h.len() > HISTORY_IN_MEMORY {
            let excess = h.len() - HISTORY_IN_MEMORY;
            h.drain(..excess);
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

    /// Every recorded compaction of this table, oldest first (from its history file).
    pub fn compaction_history(&self) -> Vec<CompactionRecord> {
        let path = self.dir().join(HISTORY_FILE);
        match self.fs().read_all(&path, IoTag::new(IoCause::Metadata)) {
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
            .active
            .lock()
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
        for p in self.compaction.active.lock().iter() {
            p.cancel.store(true, Ordering::Relaxed);
        }
    }

    /// Stops background selection for this table and waits (bounded) until its
    /// running tasks have finished, so a manual operation plans on a stable set.
    /// Pauses background compaction of this table (for scrub, recompression and
    /// other whole-table rewrites) until the guard drops; waits up to `timeout`
    /// for running tasks to finish.
    pub fn pause_compactions(&self, timeout: Duration) -> Result<PauseGuard<'_>> {
        self.pause_background(timeout)
    }

    fn pause_background(&self, timeout: Duration) -> Result<PauseGuard<'_>> {
        {
            let _busy = self.compaction.busy.lock();
            self.compaction.paused.fetch_add(1, Ordering::AcqRel);
        }
        let guard = PauseGuard(&self.compaction);
        let deadline = Instant::now() + timeout;
        while !self.compaction.busy.lock().is_empty() {
            if Instant::now() >= deadline {
                return Err(Error::InvalidInput(
                    "running compactions did not finish in time; try again".into(),
                ));
            }
            std::thread::sleep(Duration::from_millis(10));
        }
        Ok(guard)
    }

    fn run_manual(
        self: &Arc<Self>,
        task: &CompactionTask,
        limiter: &RateLimiter,
    ) -> Result<CompactionRecord> {
        self.compaction.busy.lock().extend(task.input_ids());
        self.run_compaction(task, limiter)
    }

    /// `strata compact` (nodetool compact): flushes, then runs the strategy's
    /// major compaction with background compaction of this table paused.
    pub fn compact_major(self: &Arc<Self>, limiter: &RateLimiter) -> Result<Vec<CompactionRecord>> {
        self.flush()?;
        let _pause = self.pause_background(Duration::from_secs(600))?;
        let strategy = self.strategy();
        let tasks = strategy.major_compaction(&self.sstable_infos(), &self.strategy_context());
        tasks
            .iter()
            .map(|task| self.run_manual(task, limiter))
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
        let _pause = self.pause_background(Duration::from_secs(600))?;
        let live: HashSet<u64> = self.view().sstables.iter().map(|s| s.id()).collect();
        if let Some(missing) = ids.iter().find(|id| !live.contains(id)) {
            return Err(Error::NotFound(format!("sstable {missing} is not live")));
        }
        let mut inputs = ids.to_vec();
        inputs.sort_unstable();
        inputs.dedup();
        let max_output_bytes = match self.schema().options.compaction.class() {
            crate::options::CompactionClass::LeveledCompactionStrategy => {
                self.schema().options.compaction.lcs().sstable_size_bytes()
            }
            _ => u64::MAX,
        };
        let task = CompactionTask::Merge {
            inputs,
            output_level,
            max_output_bytes,
            reason: crate::compaction::TaskReason::Major,
        };
        self.run_manual(&task, limiter)
    }

    /// `strata garbagecollect`: rewrites each sstable alone, dropping what the
    /// purge rules allow (shadowed data, tombstones and expired cells past gc grace
    /// with nothing older elsewhere), keeping its level.
    pub fn garbage_collect(
        self: &Arc<Self>,
        limiter: &RateLimiter,
    ) -> Result<Vec<CompactionRecord>> {
        let _pause = self.pause_background(Duration::from_secs(600))?;
        self.sstable_infos()
            .into_iter()
            .map(|info| {
                let task = CompactionTask::Rewrite {
                    id: info.id,
                    output_level: info.level,
                    reason: crate::compaction::TaskReason::Tombstone,
                };
                self.run_manual(&task, limiter)
            })
            .collect()
    }

    /// Invariant 3: refuses (and counts) when `estimate_bytes` more would not fit
    /// in free space minus the reserve, or past `max_disk_bytes`.
    pub fn check_disk_space(&self, estimate_bytes: u64) -> Result<()> {
        let root = self
            .dir()
            .parent()
            .and_then(|p| p.parent())
            .unwrap_or(self.dir());
        let reserve = self.runtime.disk_reserve_bytes;
        let refuse = |why: String| {
            self.metrics.space_refusals.fetch_add(1, Ordering::Relaxed);
            Err(Error::Io {
                path: self.dir().to_path_buf(),
                source: std::io::Error::new(std::io::ErrorKind::StorageFull, why),
            })
        };
        // A recovery flush turns commit-log bytes into sstable bytes and lets the
        // log go: refusing it under the quota would keep the database from ever
        // reopening under the quota that the log itself exceeds.
        let recovering = self.recovering.load(Ordering::Acquire);
        if let (Some(limit), false) = (self.runtime.max_disk_bytes, recovering) {
            let used = dir_bytes(root);
            if used.saturating_add(estimate_bytes) > limit {
                return refuse(format!(
                    "refusing to write ~{estimate_bytes} bytes: data directory holds {used} of max_disk_bytes {limit}"
                ));
            }
        }
        if let Some(free) = free_disk_bytes(self.dir()) {
            if free < estimate_bytes.saturating_add(reserve) {
                return refuse(format!(
                    "refusing to write ~{estimate_bytes} bytes: {free} bytes free, {reserve} kept in reserve"
                ));
            }
        }
        Ok(())
    }

    /// Write back-pressure on compaction debt: delay each write past the slowdown
    /// trigger, stop writes past the stop trigger until compaction catches up.
    /// Disabled while the strategy is disabled (`'enabled': 'false'`), since
    /// nothing would ever release the stall.
    pub(crate) fn wait_for_compaction_debt(&self) {
        // Cheap check first: this runs on every write.
        let l0 = |t: &Table| t.view.read().l0_count;
        let count = l0(self);
        if count < self.runtime.l0_slowdown_writes_trigger
            || !self.schema().options.compaction.common().enabled
        {
            return;
        }
        let started = Instant::now();
        if count < self.runtime.l0_stop_writes_trigger {
            std::thread::sleep(Duration::from_millis(1));
        } else {
            let mut guard = self.flushed_mutex.lock();
            while l0(self) >= self.runtime.l0_stop_writes_trigger {
                self.flushed.wait_for(&mut guard, Duration::from_millis(50));
            }
        }
        self.metrics
            .write_stall_micros_total
            .fetch_add(started.elapsed().as_micros() as u64, Ordering::Relaxed);
    }
}
