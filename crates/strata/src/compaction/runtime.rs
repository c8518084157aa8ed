//! The compaction runtime: what a table exposes to compaction
//! ([`CompactionTable`], over the executor's [`CompactionHost`]), the per-table
//! bookkeeping ([`TableCompactions`]: busy inputs, the strategy for the current
//! options, running tasks, pauses), the one decision function ([`decide`]),
//! running a task ([`run_task`]), and the database-wide [`Scheduler`] that picks
//! which table's task runs next.
//!
//! Layers: this module and the executor know a table only through
//! [`CompactionTable`] and [`CompactionHost`]; `table_compaction.rs` implements
//! them for the table. Nothing here names the table or the database, so the
//! module graph reads one way: `db -> table -> compaction::runtime ->
//! compaction::executor -> compaction (strategies) -> read, sstable, version`
//! (docs/ARCHITECTURE.md, "Layers").
//!
//! Threads and locks:
//! - A table's *decision lock* is the mutex around its busy set
//!   ([`TableCompactions`]). Every call that may advance a strategy's state
//!   (`next_task`, `major_compaction`) and every observation of pending work
//!   happens while holding it, so decisions of one table are serialised and an
//!   observer never sees a half-made decision.
//! - The [`Scheduler`]'s lock serialises compactor threads choosing a table
//!   (round robin); it is taken before any table's decision lock, never after.
//! - [`run_task`] runs on any compaction thread (or a caller's thread for manual
//!   operations), without either lock.
//!
//! Invariants:
//! 1. An sstable is in at most one running task: inputs are marked busy under the
//!    decision lock that chose them, and unmarked only after the task ended.
//! 2. A changed compaction option takes effect at the next decision (the strategy
//!    is rebuilt when the options differ), with no restart.
//! 3. Observing pending work ([`pending_task`], [`Scheduler::has_pending`],
//!    `estimated_pending_tasks`) changes no strategy state: it uses
//!    [`CompactionStrategy::peek_task`], never `next_task`.
//! 4. No fully expired sstable is dropped while the table has an unreadable
//!    sstable: the dropped tombstones could shadow data in it.

use super::executor::{execute, CompactionHost, CompactionRecord, RateLimiter, TaskProgress};
use super::{strategy_for, CompactionStrategy, CompactionTask, SSTableInfo, StrategyContext};
use crate::error::{Error, Result};
use crate::memtable::Memtable;
use crate::options::CompactionOptions;
use crate::read::View;
use crate::sstable::SSTableReader;
use parking_lot::{Condvar, Mutex, MutexGuard};
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

/// What a table exposes to the compaction runtime: what the executor needs
/// ([`CompactionHost`]: the current version, applying an edit, writing an
/// sstable), plus what deciding needs (options, bookkeeping) and a hook for the
/// outcome.
pub trait CompactionTable: CompactionHost {
    /// The compaction options in force now (invariant 2).
    fn compaction_options(&self) -> CompactionOptions;
    /// Whether the table has any unreadable sstable (invariant 4).
    fn has_unreadable(&self) -> bool;
    /// The table's compaction bookkeeping.
    fn compactions(&self) -> &TableCompactions;
    /// Called once a task ended, its inputs released: metrics, history, and
    /// waking writers stalled on compaction debt.
    fn task_finished(&self, result: &Result<CompactionRecord>, elapsed: Duration);
    /// Unlinks obsolete sstable files no reader holds any more (fs.rs
    /// invariant 5), on the calling compaction thread.
    fn reclaim_obsolete(&self);
    /// Brings per-sstable state the strategy reads up to date before a
    /// background decision (the blob strategy's accounting of sstables that
    /// have none yet). Called without the decision lock held; failures are the
    /// host's to record. Default: nothing to do.
    fn prepare_decision(&self) {}
}

/// Per-table compaction bookkeeping, owned by the table (module docs).
#[derive(Default)]
pub struct TableCompactions {
    /// The decision lock, guarding the inputs of running tasks.
    busy: Mutex<HashSet<u64>>,
    strategy: Mutex<Option<(CompactionOptions, Arc<dyn CompactionStrategy>)>>,
    active: Mutex<Vec<Arc<TaskProgress>>>,
    next_task_id: AtomicU64,
    /// Manual operations (major compaction, garbagecollect, scrub) in progress:
    /// while non-zero, background decisions propose nothing for this table.
    paused: AtomicUsize,
    /// `nodetool disableautocompaction`: background decisions propose
    /// nothing until it is cleared. Runtime only, as in Cassandra (the
    /// table option `enabled` is the persistent switch); manual operations
    /// still run.
    pub auto_disabled: AtomicBool,
    /// Signalled whenever a task ends (pauses wait on it).
    ended: Condvar,
    /// The most recent records (the table's history file keeps everything).
    pub history: Mutex<Vec<CompactionRecord>>,
    /// Row-level expiry verdicts ([`verify_expired`]).
    pub expiry: ExpiryCache,
}

impl std::fmt::Debug for TableCompactions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("TableCompactions")
            .field("busy", &self.busy.lock().len())
            .field("paused", &self.paused.load(Ordering::Relaxed))
            .finish()
    }
}

/// Pauses background compaction of a table while alive ([`pause`]).
pub struct PauseGuard<'a>(&'a TableCompactions);

impl Drop for PauseGuard<'_> {
    fn drop(&mut self) {
        self.0.paused.fetch_sub(1, Ordering::AcqRel);
    }
}

impl TableCompactions {
    /// The strategy for `options` (rebuilt when they changed, invariant 2).
    pub fn strategy(&self, options: &CompactionOptions) -> Arc<dyn CompactionStrategy> {
        let mut slot = self.strategy.lock();
        match slot.as_ref() {
            Some((o, s)) if o == options => s.clone(),
            _ => {
                let s: Arc<dyn CompactionStrategy> = Arc::from(strategy_for(options));
                *slot = Some((options.clone(), s.clone()));
                s
            }
        }
    }

    /// Takes the decision lock (module docs).
    pub fn decision_lock(&self) -> MutexGuard<'_, HashSet<u64>> {
        self.busy.lock()
    }

    /// Running tasks, for `compactionstats`.
    pub fn active(&self) -> Vec<Arc<TaskProgress>> {
        self.active.lock().clone()
    }

    pub fn is_idle(&self) -> bool {
        self.busy.lock().is_empty() && self.active.lock().is_empty()
    }
}

/// What the strategies see of `view`: each live sstable's metadata, with its
/// level from the version and `being_compacted` from `busy`. `expiry_verified`
/// stays false: [`verify_expired`] sets it.
pub fn sstable_infos(view: &View, busy: &HashSet<u64>, gc_before: i64) -> Vec<SSTableInfo> {
    view.version
        .iter()
        .map(|s| {
            let st = s.handle.stats();
            SSTableInfo {
                id: s.id,
                level: s.level,
                size_bytes: s.handle.file_size(),
                uncompressed_bytes: st.uncompressed_bytes,
                first_token: st.first_key.token,
                last_token: st.last_key.token,
                min_timestamp_micros: st.min_timestamp_micros,
                max_timestamp_micros: st.max_timestamp_micros,
                max_local_deletion_seconds: st.max_local_deletion_seconds,
                droppable_tombstone_ratio: st.estimate_droppable(gc_before),
                creation_time_seconds: st.creation_time_seconds,
                partition_count: st.partition_count,
                being_compacted: busy.contains(&s.id),
                expiry_verified: false,
                live: s.live,
            }
        })
        .collect()
}

/// The sources Cassandra's overlap rule counts against fully expired
/// `candidate`: other live sstables overlapping its token range that hold live
/// data and a write at or below its newest, and memtables holding such a write.
/// Empty when the coarse rule lets it go.
pub fn coarse_blockers(
    view: &View,
    candidate: &Arc<SSTableReader>,
    gc_before: i64,
) -> (Vec<Arc<SSTableReader>>, Vec<Arc<Memtable>>) {
    let c = candidate.stats();
    let (lo, hi) = (c.first_key.token, c.last_key.token);
    let sstables = view
        .sstables()
        .into_iter()
        .filter(|o| {
            let st = o.stats();
            o.id() != candidate.id()
                && st.first_key.token <= hi
                && st.last_key.token >= lo
                && st.max_local_deletion_seconds >= gc_before
                && st.min_timestamp_micros <= c.max_timestamp_micros
        })
        .cloned()
        .collect();
    let memtables = view
        .memtables
        .iter()
        .filter(|m| {
            m.min_timestamp()
                .is_some_and(|t| t <= c.max_timestamp_micros)
        })
        .cloned()
        .collect();
    (sstables, memtables)
}

/// Cached row-level expiry checks ([`super::expiry`]) of one table: per
/// candidate, the fingerprint of its coarse blockers when it was checked and
/// whether it was unshadowed. A blocker set that changes (an sstable added or
/// removed, a memtable switched, or a memtable's oldest write moving back) is
/// checked again; otherwise the check is not repeated at every decision.
#[derive(Debug, Default)]
pub struct ExpiryCache {
    verdicts: Mutex<std::collections::HashMap<u64, (u64, bool)>>,
}

fn blockers_fingerprint(sstables: &[Arc<SSTableReader>], memtables: &[Arc<Memtable>]) -> u64 {
    use std::hash::{Hash, Hasher};
    let mut h = std::collections::hash_map::DefaultHasher::new();
    for s in sstables {
        s.id().hash(&mut h);
    }
    for m in memtables {
        (m.id(), m.min_timestamp()).hash(&mut h);
    }
    h.finish()
}

/// Sets `expiry_verified` on the fully expired, not busy sstables of `infos`
/// that Cassandra's rule blocks but the row-level check clears (the table's
/// decision lock is held by the caller). Verdicts are cached in `cache`.
pub fn verify_expired(view: &View, infos: &mut [SSTableInfo], gc_before: i64, cache: &ExpiryCache) {
    let mut verdicts = cache.verdicts.lock();
    verdicts.retain(|id, _| view.version.contains(*id));
    for info in infos.iter_mut() {
        if info.being_compacted || info.max_local_deletion_seconds >= gc_before {
            continue;
        }
        let Some(live) = view.version.get(info.id) else {
            continue;
        };
        let (sstables, memtables) = coarse_blockers(view, &live.handle, gc_before);
        if sstables.is_empty() && memtables.is_empty() {
            continue; // the coarse rule decides alone
        }
        let fingerprint = blockers_fingerprint(&sstables, &memtables);
        let unshadowed = match verdicts.get(&info.id) {
            Some(&(f, v)) if f == fingerprint => v,
            _ => {
                let v = super::expiry::check(
                    &live.handle,
                    &sstables,
                    &memtables,
                    super::expiry::DEFAULT_BLOCKER_BUDGET_BYTES,
                )
                .unshadowed();
                verdicts.insert(info.id, (fingerprint, v));
                v
            }
        };
        info.expiry_verified = unshadowed;
    }
}

/// The time-dependent inputs of a decision for `host` now.
pub fn strategy_context(host: &dyn CompactionTable, view: &View) -> StrategyContext {
    StrategyContext {
        now_seconds: host.now_seconds(),
        gc_grace_seconds: host.gc_grace_seconds(),
        memtable_min_timestamp_micros: view
            .memtables
            .iter()
            .filter_map(|m| m.min_timestamp())
            .min(),
    }
}

/// One consistent snapshot for a decision: strategy, infos and context, taken
/// while holding the decision lock `busy`.
fn decision_inputs(
    host: &dyn CompactionTable,
    busy: &HashSet<u64>,
) -> (
    Arc<dyn CompactionStrategy>,
    Vec<SSTableInfo>,
    StrategyContext,
) {
    let options = host.compaction_options();
    let strategy = host.compactions().strategy(&options);
    let view = host.view();
    let ctx = strategy_context(host, &view);
    let mut infos = sstable_infos(&view, busy, ctx.gc_before());
    if options.common().row_level_expiry_check {
        verify_expired(
            &view,
            &mut infos,
            ctx.gc_before(),
            &host.compactions().expiry,
        );
    }
    (strategy, infos, ctx)
}

/// The runtime's rule on top of any strategy's decision (invariant 4).
fn allowed(host: &dyn CompactionTable, task: &CompactionTask) -> bool {
    !(matches!(
        task,
        CompactionTask::Drop { .. } | CompactionTask::DropDead { .. }
    ) && host.has_unreadable())
}

/// The one decision function: chooses the next background task of `host` and
/// marks its inputs busy, all under the table's decision lock (invariant 1).
/// `None` while paused or when nothing is due.
pub fn decide(host: &dyn CompactionTable) -> Option<CompactionTask> {
    host.prepare_decision();
    let compactions = host.compactions();
    // The pause check, the decision and the marking happen under the decision
    // lock, so a manual operation that pauses then sees no busy input cannot race
    // a task chosen just before the pause.
    let mut busy = compactions.decision_lock();
    if compactions.paused.load(Ordering::Acquire) > 0
        || compactions.auto_disabled.load(Ordering::Acquire)
    {
        return None;
    }
    let (strategy, infos, ctx) = decision_inputs(host, &busy);
    let task = strategy.next_task(&infos, &ctx)?;
    if !allowed(host, &task) {
        return None;
    }
    let ids = task.input_ids();
    if ids.iter().any(|id| busy.contains(id)) {
        return None; // defensive: the strategy contract forbids this
    }
    busy.extend(ids);
    Some(task)
}

/// The task [`decide`] would choose now, changing nothing (invariant 3): no
/// input is marked, no strategy state advances.
pub fn pending_task(host: &dyn CompactionTable) -> Option<CompactionTask> {
    let compactions = host.compactions();
    let busy = compactions.decision_lock();
    if compactions.paused.load(Ordering::Acquire) > 0
        || compactions.auto_disabled.load(Ordering::Acquire)
    {
        return None;
    }
    let (strategy, infos, ctx) = decision_inputs(host, &busy);
    strategy
        .peek_task(&infos, &ctx)
        .filter(|t| allowed(host, t))
}

/// The strategy's estimate of pending tasks (`compactionstats`), under the
/// decision lock; changes no state.
pub fn estimated_pending_tasks(host: &dyn CompactionTable) -> usize {
    let busy = host.compactions().decision_lock();
    let (strategy, infos, ctx) = decision_inputs(host, &busy);
    strategy.estimated_pending_tasks(&infos, &ctx)
}

/// Per-level scores (`tablestats`), under the decision lock; changes no state.
pub fn level_scores(host: &dyn CompactionTable) -> Vec<f64> {
    let busy = host.compactions().decision_lock();
    let (strategy, infos, _) = decision_inputs(host, &busy);
    strategy.level_scores(&infos)
}

/// The tasks of a major compaction of `host` (the strategy's
/// `major_compaction`), decided under the decision lock. The caller pauses
/// background compaction first.
pub fn major_tasks(host: &dyn CompactionTable) -> Vec<CompactionTask> {
    let busy = host.compactions().decision_lock();
    let (strategy, infos, ctx) = decision_inputs(host, &busy);
    strategy.major_compaction(&infos, &ctx)
}

/// The live sstables as the strategies see them now (with `being_compacted`).
pub fn current_infos(host: &dyn CompactionTable) -> Vec<SSTableInfo> {
    let busy = host.compactions().decision_lock();
    let (_, infos, _) = decision_inputs(host, &busy);
    infos
}

/// Marks `task`'s inputs busy for a manual operation (the background is paused,
/// so nothing else is choosing), then runs it ([`run_task`]).
pub fn run_manual(
    host: &dyn CompactionTable,
    task: &CompactionTask,
    limiter: &RateLimiter,
) -> Result<CompactionRecord> {
    host.compactions().decision_lock().extend(task.input_ids());
    run_task(host, task, limiter)
}

/// Runs a task whose inputs [`decide`] (or [`run_manual`]) marked busy, unmarks
/// them when it ended, and reports the outcome to the host.
pub fn run_task(
    host: &dyn CompactionTable,
    task: &CompactionTask,
    limiter: &RateLimiter,
) -> Result<CompactionRecord> {
    let compactions = host.compactions();
    let progress = Arc::new(TaskProgress {
        id: compactions.next_task_id.fetch_add(1, Ordering::Relaxed) + 1,
        description: format!("{task:?}"),
        ..TaskProgress::default()
    });
    compactions.active.lock().push(progress.clone());
    let started = Instant::now();
    let result = execute(host, task, &progress, limiter);
    {
        let mut busy = compactions.decision_lock();
        for id in task.input_ids() {
            busy.remove(&id);
        }
        compactions.ended.notify_all();
    }
    // The inputs' readers went with the executor's view: unlink the files
    // whose last reference is gone, here on the compaction thread.
    host.reclaim_obsolete();
    host.task_finished(&result, started.elapsed());
    // Leaves `active` last: observers (`has_pending`, `wait_for_compactions`)
    // count the task as running until its inputs are unlinked and its history
    // record written. Cleared first, a waiter returned while the replaced files
    // were still on disk (bench blobstore measured 3 of 4 inputs of a merge,
    // 192 MiB, as on disk "once idle") and before the record existed.
    compactions
        .active
        .lock()
        .retain(|p| !Arc::ptr_eq(p, &progress));
    result
}

/// Stops background selection for `host` until the guard drops, and waits up to
/// `timeout` for its running tasks to finish, so a manual operation plans on a
/// stable set. An error when they did not finish in time (the pause is lifted).
pub fn pause(compactions: &TableCompactions, timeout: Duration) -> Result<PauseGuard<'_>> {
    let mut busy = compactions.busy.lock();
    compactions.paused.fetch_add(1, Ordering::AcqRel);
    let guard = PauseGuard(compactions);
    let deadline = Instant::now() + timeout;
    while !busy.is_empty() {
        if compactions
            .ended
            .wait_until(&mut busy, deadline)
            .timed_out()
            && !busy.is_empty()
        {
            return Err(Error::InvalidInput(
                "running compactions did not finish in time; try again".into(),
            ));
        }
    }
    Ok(guard)
}

/// Asks the running tasks of a table to stop (they abort between partitions).
pub fn cancel(compactions: &TableCompactions) {
    for p in compactions.active.lock().iter() {
        p.cancel.store(true, Ordering::Relaxed);
    }
}

/// The database-wide scheduler: which table's task runs next, for every
/// compactor thread (module docs, "Threads and locks").
#[derive(Debug, Default)]
pub struct Scheduler {
    /// Round-robin start over the tables; its mutex is the scheduler lock.
    next: Mutex<usize>,
}

impl Scheduler {
    pub fn new() -> Scheduler {
        Scheduler::default()
    }

    /// The next task of the next table that has one, round robin, its inputs
    /// marked busy; run it with [`run_task`].
    pub fn pick<H: CompactionTable>(&self, hosts: &[Arc<H>]) -> Option<(Arc<H>, CompactionTask)> {
        let mut next = self.next.lock();
        if hosts.is_empty() {
            return None;
        }
        let start = *next;
        *next = next.wrapping_add(1);
        (0..hosts.len()).find_map(|i| {
            let h = &hosts[(start + i) % hosts.len()];
            decide(h.as_ref()).map(|task| (h.clone(), task))
        })
    }

    /// Whether any table has a task chosen or running, or one that
    /// [`Scheduler::pick`] would choose; changes nothing (invariant 3).
    ///
    /// "Chosen" counts: a compactor thread marks a task's inputs busy in
    /// `pick` and registers it as active only in `run_task`, after the
    /// scheduler lock is released. Looking at `active` alone, a waiter in that
    /// window saw no running task and no pending one (its inputs were busy, so
    /// the strategy did not offer them again) and declared the table idle with
    /// a dead sstable about to be dropped (the flaky `bench blobstore` run).
    pub fn has_pending<H: CompactionTable>(&self, hosts: &[Arc<H>]) -> bool {
        let _serial = self.next.lock();
        hosts
            .iter()
            .any(|h| !h.compactions().is_idle() || pending_task(h.as_ref()).is_some())
    }

    /// Runs tasks on the calling thread until no table has one (for benchmarks
    /// and tools that run without background compactors). Returns the records;
    /// stops at the first failure, and with an error once `max_tasks` ran while
    /// work is still pending (a strategy that never settles), never leaving a
    /// chosen task unrun.
    pub fn run_until_idle<H: CompactionTable>(
        &self,
        hosts: &[Arc<H>],
        limiter: &RateLimiter,
        max_tasks: usize,
    ) -> Result<Vec<CompactionRecord>> {
        let mut records = Vec::new();
        loop {
            if records.len() >= max_tasks {
                if self.has_pending(hosts) {
                    return Err(Error::InvalidInput(format!(
                        "compaction did not settle after {max_tasks} tasks"
                    )));
                }
                return Ok(records);
            }
            let Some((host, task)) = self.pick(hosts) else {
                return Ok(records);
            };
            records.push(run_task(host.as_ref(), &task, limiter)?);
        }
    }
}

/// A wake-up signal with a generation counter, so a waiter never misses a notify
/// that happened between its check and its wait (compactor threads sleep on it;
/// tables notify it when their sstables change).
#[derive(Debug, Default)]
pub struct Signal {
    generation: Mutex<u64>,
    cond: Condvar,
}

impl Signal {
    pub fn notify(&self) {
        *self.generation.lock() += 1;
        self.cond.notify_all();
    }

    pub fn generation(&self) -> u64 {
        *self.generation.lock()
    }

    /// Waits until the generation moves past `seen` or `timeout` passes.
    pub fn wait_changed(&self, seen: u64, timeout: Duration) {
        let mut g = self.generation.lock();
        if *g == seen {
            self.cond.wait_for(&mut g, timeout);
        }
    }
}
