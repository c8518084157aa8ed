//! The compaction simulator of issue 5: the real strategies
//! ([`crate::compaction::strategy_for`], the very code the engine runs) driven
//! over synthetic sstable metadata in simulated time, without file I/O, so the
//! seed's 88-hour, 300 GB experiment runs in seconds.
//!
//! What is simulated (details and their justification: `docs/compaction/model.md`):
//! - **Flushes** of `flush_bytes` arrive every `flush_bytes / ingest` seconds.
//!   Writes are uniform over the token space, so a flush spans the whole token
//!   range and holds the writes made since the previous flush.
//! - **Data** in an sstable is a histogram of bytes per write-time bucket
//!   ([`hist::Hist`]). A merge adds the inputs' histograms and drops the buckets
//!   whose newest write is purgeable (`write + ttl + gc_grace < now`); the live
//!   rest is split into outputs by the task's [`OutputSplit`]: by size, each
//!   covering a consecutive slice of the inputs' token hull proportional to its
//!   size and holding that share of every bucket (uniform tokens); or by time
//!   window, each holding the buckets of one window (flushes too, when the
//!   strategy cuts flushes by window). Token-shard splits are refused, not
//!   approximated.
//! - **Tasks** are applied as the executor applies them: the live set is a
//!   [`KeyedVersion`] (the engine's `Version` keyed by id, with the synthetic
//!   metadata as its handle: the same edits, refused by the same
//!   [`crate::version::check_edit`], each in O(k log n)), and a finished task
//!   becomes the edit [`CompactionTask::edit`] makes of it, as in the engine's
//!   executor and manifest. Inputs are marked `being_compacted` while a task
//!   runs; `Drop` removes sstables, `Move` changes a level, `Merge`/`Rewrite`
//!   replace inputs by outputs. Compaction takes zero time, or `input bytes /
//!   throughput` with a throughput limit and up to `concurrent_compactors`
//!   tasks at once. Decisions are asked with
//!   [`CompactionStrategy::next_task_in`] on a [`DecisionView`] kept up to
//!   date edit by edit, so none costs O(n) (LCS; other strategies decide on
//!   the view's slice as the engine does). One thread
//!   asks for decisions, as the engine's executor does.
//!
//! Invariants (checked while running when `check_invariants` is set; a violation
//! is an [`Error::InvalidInput`] naming the task, never a silently wrong figure):
//! 1. A task names only live sstables that are not being compacted, each once; an
//!    sstable id is never used again once consumed.
//! 2. Conservation: a merge writes at most the bytes it read (data only vanishes,
//!    by expiry).
//! 3. LCS: after every task, the sstables of each level >= 1 have pairwise
//!    disjoint token ranges.
//! 4. Determinism: no randomness and no wall clock in the simulation; the same
//!    config gives the same result, sample for sample (only
//!    `elapsed_wall_seconds` differs).
//! 5. The metadata handed to the strategies, kept between decisions rather
//!    than rebuilt for each, is exactly what rebuilding it from the version,
//!    the running tasks and the histograms would give.
//!
//! Call [`run`] from any thread; it owns all its state.

pub mod hist;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::sync::Arc;
use std::time::Instant;

use serde::Serialize;

use crate::compaction::lcs::{level_target_bytes, MAX_LEVEL};
use crate::compaction::view::DecisionView;
use crate::compaction::{
    common, strategy_for, CompactionStrategy, CompactionTask, OutputSplit, SSTableInfo,
    StrategyContext,
};
use crate::options::{CompactionClass, CompactionOptions, TableOptions};
use crate::version::{KeyedVersion, VersionEdit};
use crate::{Error, Result};
use hist::Hist;

/// Simulated epoch of time zero (2020-09-13): timestamps look like real ones.
pub const START_SECONDS: i64 = 1_600_000_000;
/// Most tasks at one simulated instant before the run is declared stuck (a
/// strategy that keeps proposing work without the state converging).
const MAX_TASKS_PER_INSTANT: usize = 1_000_000;
/// Bytes per partition, for the `partition_count` the tombstone estimate needs:
/// the seed's row (512 columns of UUID name + 64-byte value) is about 40 KB.
const PARTITION_BYTES: u64 = 40_000;

/// What to simulate.
#[derive(Clone, Debug)]
pub struct SimConfig {
    /// The table's compaction options (strategy class and sub-options).
    pub compaction: CompactionOptions,
    pub ingest_bytes_per_second: f64,
    pub flush_bytes: u64,
    /// TTL of every write; 0 = never expires.
    pub ttl_seconds: u64,
    pub gc_grace_seconds: u32,
    pub duration_seconds: u64,
    /// One [`SimSample`] per interval.
    pub sample_interval_seconds: u64,
    /// `None`: compaction takes zero simulated time (the seed ran unthrottled).
    /// `Some(rate)`: a task takes `input bytes / rate` seconds.
    pub compaction_throughput_bytes_per_second: Option<f64>,
    /// Tasks running at once when compaction takes time.
    pub concurrent_compactors: usize,
    /// Start of the steady-state window for [`SimResult::steady_write_amplification`];
    /// `None`: `ttl + gc_grace` (when the data has reached its steady size), or half
    /// the run without TTL, whichever is earlier.
    pub warmup_seconds: Option<u64>,
    /// Width of the write-time buckets; `None`: `max(60 s, ttl / 256)`.
    pub bucket_seconds: Option<u64>,
    pub check_invariants: bool,
}

impl SimConfig {
    /// A config with `compaction` given in CQL map syntax, e.g.
    /// `'class': 'LeveledCompactionStrategy', 'fanout_size': 4`, and the seed's
    /// workload: 1 MiB/s, 256 MiB flushes ([`crate::model::DEFAULT_FLUSH_BYTES`]),
    /// TTL 2 days, gc grace 60 s, 88 hours.
    pub fn with_compaction(cql_map: &str) -> Result<SimConfig> {
        let compaction = TableOptions::parse(&format!("compaction = {{{cql_map}}}"))?.compaction;
        Ok(SimConfig {
            compaction,
            ingest_bytes_per_second: 1024.0 * 1024.0,
            flush_bytes: crate::model::DEFAULT_FLUSH_BYTES as u64,
            ttl_seconds: 2 * 86_400,
            gc_grace_seconds: 60,
            duration_seconds: 88 * 3600,
            sample_interval_seconds: 3600,
            compaction_throughput_bytes_per_second: None,
            concurrent_compactors: 2,
            warmup_seconds: None,
            bucket_seconds: None,
            check_invariants: true,
        })
    }

    /// The seed's node `A` (fanout 10, 160 MiB), `B` (4, 160 MiB) or `C` (4, 1 GiB).
    pub fn seed_node(node: char) -> Result<SimConfig> {
        let (fanout, mib) = match node.to_ascii_uppercase() {
            'A' => (10, 160),
            'B' => (4, 160),
            'C' => (4, 1024),
            other => {
                return Err(Error::InvalidInput(format!(
                    "unknown node preset '{other}' (A, B or C)"
                )))
            }
        };
        SimConfig::with_compaction(&format!(
            "'class': 'LeveledCompactionStrategy', 'fanout_size': {fanout}, 'sstable_size_in_mb': {mib}"
        ))
    }

    fn validate(&self) -> Result<()> {
        let bad = |m: &str| Err(Error::InvalidInput(m.to_string()));
        if !(self.ingest_bytes_per_second.is_finite() && self.ingest_bytes_per_second > 0.0) {
            return bad("ingest rate must be positive");
        }
        if self.flush_bytes == 0 {
            return bad("flush size must be positive");
        }
        if self.sample_interval_seconds == 0 {
            return bad("sample interval must be positive");
        }
        if let Some(t) = self.compaction_throughput_bytes_per_second {
            if !(t.is_finite() && t > 0.0) {
                return bad("compaction throughput must be positive");
            }
        }
        if self.concurrent_compactors == 0 {
            return bad("concurrent compactors must be at least 1");
        }
        if self.bucket_seconds == Some(0) {
            return bad("bucket width must be positive");
        }
        Ok(())
    }
}

/// Sstables and bytes of one level.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LevelStat {
    pub level: u32,
    pub sstables: usize,
    pub bytes: u64,
}

/// One interval of the time series.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimSample {
    /// End of the interval, seconds since the start.
    pub time_seconds: u64,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    /// Compaction bytes written per output level (index = level).
    pub bytes_compacted_per_level: Vec<u64>,
    /// (flushed + compacted) / interval, in MB/s (10^6 bytes).
    pub io_rate_mb_s: f64,
    /// (flushed + compacted) / flushed over the interval.
    pub write_amplification: f64,
    pub data_bytes: u64,
    pub sstables: usize,
    pub levels: Vec<LevelStat>,
    /// LCS: `highest level - 1 + its fill` (as the refined model); `None` otherwise.
    pub fractional_levels: Option<f64>,
}

/// Bytes flowing into one level over the whole run: what the refined model's
/// per-level terms predict (docs/compaction/model.md).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct LevelFlow {
    pub level: u32,
    /// Bytes read from lower levels by merges writing into this level.
    pub promoted_bytes: u64,
    /// Bytes of this level's own sstables rewritten by those merges (overlap).
    pub overlapped_bytes: u64,
    /// Bytes moved into this level without rewriting (`Move`).
    pub moved_bytes: u64,
    pub written_bytes: u64,
    pub merges: u64,
    /// Mean density (bytes per token) of the sstables promoted into this level,
    /// relative to their source level's average density at that moment; only
    /// for levels 2 and up, 0 when none was measured. 1 means round robin meets
    /// a uniform level; the sawtooth argument of `docs/compaction/model.md`
    /// says 2.
    pub promoted_relative_density: f64,
    #[serde(skip)]
    density_samples: u64,
}

/// What the tasks did over the whole run.
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct TaskCounts {
    pub merges: u64,
    pub rewrites: u64,
    pub moves: u64,
    pub drops: u64,
    /// Bytes removed by `Drop` tasks (whole expired sstables).
    pub dropped_bytes: u64,
    /// Bytes that vanished inside merges (expired and purgeable).
    pub purged_bytes: u64,
    pub decisions: u64,
    /// Per output level (index = level), counted from `steady_from_seconds` on
    /// (the steady state the refined model describes).
    pub flows: Vec<LevelFlow>,
}

impl TaskCounts {
    fn flow(&mut self, level: u32) -> &mut LevelFlow {
        let l = level as usize;
        if self.flows.len() <= l {
            self.flows.extend((self.flows.len()..=l).map(|i| LevelFlow {
                level: i as u32,
                ..LevelFlow::default()
            }));
        }
        &mut self.flows[l]
    }
}

/// The outcome of [`run`].
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct SimResult {
    pub strategy: String,
    pub series: Vec<SimSample>,
    pub bytes_flushed: u64,
    pub bytes_compacted: u64,
    pub bytes_compacted_per_level: Vec<u64>,
    /// (flushed + compacted) / flushed over the whole run.
    pub write_amplification: f64,
    /// The same from `steady_from_seconds` to the end.
    pub steady_write_amplification: f64,
    /// `steady_write_amplification * ingest` in MB/s.
    pub steady_io_rate_mb_s: f64,
    pub steady_from_seconds: u64,
    /// Mean data size over the steady window.
    pub steady_data_bytes: f64,
    /// Mean fractional levels over the steady window (LCS).
    pub steady_levels: Option<f64>,
    pub final_levels: Vec<LevelStat>,
    pub final_fractional_levels: Option<f64>,
    pub final_data_bytes: u64,
    pub final_sstables: usize,
    pub max_sstables: usize,
    /// Sstables a point read consults, 99th percentile over the decision
    /// instants of the steady window, for the worst key: the most L0 sstables
    /// over one token plus one per non-empty level >= 1 (an upper bound: a
    /// sparse level may miss the key). Strategies without levels keep
    /// everything in level 0, counted the same way.
    pub sstables_per_read_p99: u32,
    /// Largest sstable ever written.
    pub max_sstable_bytes: u64,
    /// Most bytes on disk at once: live data plus, while a merge is being
    /// installed, its outputs beside its inputs.
    pub peak_space_bytes: u64,
    pub tasks: TaskCounts,
    pub elapsed_wall_seconds: f64,
}

/// A task in flight (compaction with a throughput limit).
struct Running {
    finish_seconds: f64,
    inputs: Vec<u64>,
    /// Installs the outputs in place of the inputs when the task finishes.
    edit: VersionEdit<Arc<SimFile>>,
    read: u64,
    written: u64,
    output_level: u32,
}

/// What the simulator holds for each live sstable (the handle of its
/// [`KeyedVersion`]): the synthetic metadata as created and the data histogram.
/// The metadata's `level`, `being_compacted` and `droppable_tombstone_ratio`
/// are not authoritative: the version's level and [`Sim::view`] are (as the
/// engine fills them from its version, its busy set and the clock).
#[derive(Debug)]
struct SimFile {
    info: SSTableInfo,
    hist: Hist,
}

struct Sim<'a> {
    cfg: &'a SimConfig,
    strategy: Box<dyn CompactionStrategy>,
    /// The live set, keyed by id: [`KeyedVersion`] takes the same edits as the
    /// engine's [`crate::version::Version`] with the same checks, each in
    /// O(k log n) (the vector's removals were a quarter of a 10 TB run).
    live: KeyedVersion<Arc<SimFile>>,
    /// The live set as the strategies see it, with the indexes a decision
    /// queries (per-level token order, level bytes, expiry and tombstone
    /// candidates), kept in step with `live` by [`Sim::apply`] rather than
    /// rebuilt per decision: a decision then costs O(log n) in the sstables
    /// it does not look at (rebuilding was 71% of a 10 TB run:
    /// docs/STATUS.md, "Simulator speed"). It holds the authoritative `level`
    /// (the version's), `being_compacted` (inputs of running tasks) and
    /// `droppable_tombstone_ratio` (as of the last refresh, a decision
    /// instant; sstables created since have their own, 0). Invariant 5
    /// (checked with `check_invariants`): it equals what the version and those
    /// two facts give, and its indexes equal a rebuild.
    view: DecisionView<'static>,
    /// When each sstable's droppable ratio next changes: `(cutoff, id)`, the
    /// cutoff as `f64::to_bits` (positive, so the bits order as the values),
    /// smallest first. An sstable's ratio is a step function of the purge
    /// cutoff, changing only when the cutoff passes the end of its oldest live
    /// bucket; refreshing only those due replaces a pass over every sstable at
    /// every instant (38% of the run). Entries of sstables no longer live are
    /// skipped when they come up.
    ratio_due: BinaryHeap<Reverse<(u64, u64)>>,
    /// The cutoff of the last ratio refresh and the sstables live then,
    /// ascending (kept for the check of invariant 5 only).
    refreshed: Option<(f64, Vec<u64>)>,
    running: Vec<Running>,
    next_id: u64,
    bucket_seconds: f64,
    /// Seconds since the start.
    now: f64,
    flushed: u64,
    compacted: u64,
    compacted_per_level: Vec<u64>,
    tasks: TaskCounts,
    max_sstables: usize,
    /// Decision instants of the steady window by sstables per read (index).
    reads: Vec<u64>,
    max_sstable_bytes: u64,
    peak_space_bytes: u64,
    /// Level flows are counted from here on.
    warmup: f64,
}

/// One merge input: its live bytes spread uniformly over `[lo, hi]`.
struct Piece {
    lo: i128,
    hi: i128,
    /// Bytes per token.
    density: f64,
    hist: Hist,
}

impl Piece {
    fn new(first_token: i64, last_token: i64, hist: Hist) -> Piece {
        let (lo, hi) = (first_token as i128, last_token as i128);
        Piece {
            lo,
            hi,
            density: hist.total() / (hi - lo + 1) as f64,
            hist,
        }
    }

    /// Share of this piece inside `[first, last]`.
    fn share(&self, first: i128, last: i128) -> f64 {
        let lo = self.lo.max(first);
        let hi = self.hi.min(last);
        if lo > hi {
            return 0.0;
        }
        (hi - lo + 1) as f64 / (self.hi - self.lo + 1) as f64
    }
}

/// The first token of outputs `1..n` (each output ends just before the next
/// one's first token): where the summed density of `pieces` has accumulated
/// `k * max_out` bytes, `k = 1..n`. Strictly increasing.
fn cut_positions(pieces: &[Piece], max_out: u64, n: u64) -> Vec<i128> {
    // Density changes at each piece's start and just after its end.
    let mut events: Vec<(i128, f64)> = Vec::with_capacity(pieces.len() * 2);
    for p in pieces {
        events.push((p.lo, p.density));
        events.push((p.hi + 1, -p.density));
    }
    events.sort_by_key(|e| e.0);
    // A cut past the last piece would start an output outside the token space.
    let cap = pieces.iter().map(|p| p.hi).max().unwrap_or(0);
    let mut cuts = Vec::with_capacity(n.saturating_sub(1) as usize);
    let mut density = 0.0f64;
    let mut acc = 0.0f64;
    let mut k = 1u64;
    for w in 0..events.len() {
        density += events[w].1;
        let Some(&(next, _)) = events.get(w + 1) else {
            break;
        };
        let here = events[w].0;
        if next <= here || density <= 0.0 {
            continue;
        }
        let bytes = density * (next - here) as f64;
        while k < n && acc + bytes >= (k * max_out) as f64 {
            let need = (k * max_out) as f64 - acc;
            let at = here + (need / density).ceil() as i128;
            let floor = cuts.last().map_or(here, |&c: &i128| c + 1);
            cuts.push(at.clamp(floor.max(here + 1), next.max(floor)).min(cap));
            k += 1;
        }
        acc += bytes;
    }
    cuts
}

/// The union of the pieces' ranges, as sorted disjoint `[lo, hi]` intervals.
fn support(pieces: &[Piece]) -> Vec<(i128, i128)> {
    let mut ranges: Vec<(i128, i128)> = pieces.iter().map(|p| (p.lo, p.hi)).collect();
    ranges.sort_unstable();
    let mut out: Vec<(i128, i128)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1 + 1 => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// `[first, last]` shrunk to the data inside it: an sstable's range runs from
/// its first to its last partition, not across the empty gap before it.
fn trim_to_support(support: &[(i128, i128)], first: i128, last: i128) -> (i128, i128) {
    let lo = support
        .iter()
        .find(|s| s.1 >= first)
        .map_or(first, |s| first.max(s.0));
    let hi = support
        .iter()
        .rev()
        .find(|s| s.0 <= last)
        .map_or(last, |s| last.min(s.1));
    if lo <= hi {
        (lo, hi)
    } else {
        (first, last)
    }
}

fn micros(relative_seconds: f64) -> i64 {
    ((START_SECONDS as f64 + relative_seconds) * 1e6) as i64
}

fn add_level(per_level: &mut Vec<u64>, level: u32, bytes: u64) {
    let l = level as usize;
    if per_level.len() <= l {
        per_level.resize(l + 1, 0);
    }
    per_level[l] += bytes;
}

impl<'a> Sim<'a> {
    fn ctx(&self, memtable_since: f64) -> StrategyContext {
        StrategyContext {
            now_seconds: START_SECONDS + self.now.floor() as i64,
            gc_grace_seconds: self.cfg.gc_grace_seconds,
            // The memtable holds every write since the last flush (continuous
            // ingest: never empty).
            memtable_min_timestamp_micros: Some(micros(memtable_since)),
        }
    }

    /// Newest write time (relative seconds) that is purgeable now.
    fn purge_before(&self) -> Option<f64> {
        (self.cfg.ttl_seconds > 0)
            .then_some(self.now - self.cfg.ttl_seconds as f64 - self.cfg.gc_grace_seconds as f64)
    }

    fn new_info(&mut self, level: u32, size: u64, tokens: (i64, i64), hist: &Hist) -> SSTableInfo {
        let id = self.next_id;
        self.next_id += 1;
        self.max_sstable_bytes = self.max_sstable_bytes.max(size);
        let (min_write, max_write) = hist.write_range();
        SSTableInfo {
            id,
            level,
            size_bytes: size,
            uncompressed_bytes: size,
            first_token: tokens.0,
            last_token: tokens.1,
            min_timestamp_micros: micros(min_write),
            max_timestamp_micros: micros(max_write),
            max_local_deletion_seconds: if self.cfg.ttl_seconds > 0 {
                START_SECONDS + max_write.ceil() as i64 + self.cfg.ttl_seconds as i64
            } else {
                i64::MAX
            },
            droppable_tombstone_ratio: 0.0,
            creation_time_seconds: START_SECONDS + self.now.floor() as i64,
            partition_count: (size / PARTITION_BYTES).max(2),
            being_compacted: false,
            expiry_verified: false,
            live: None,
        }
    }

    /// One flush; several sstables when the strategy cuts flushes by time
    /// window and the flush crosses a window boundary.
    fn flush(&mut self, from: f64, to: f64) -> Result<()> {
        let hist = Hist::uniform(from, to, self.cfg.flush_bytes as f64, self.bucket_seconds);
        self.flushed += self.cfg.flush_bytes;
        let parts = match self.strategy.flush_split() {
            OutputSplit::TimeWindow { window, .. } => {
                hist.split_by_window(window as f64 / 1e6, START_SECONDS as f64)
            }
            _ => vec![(0, hist)],
        };
        let mut edit = VersionEdit::new();
        let mut left = self.cfg.flush_bytes;
        for (k, (_, part)) in parts.iter().enumerate() {
            let size = if k + 1 == parts.len() {
                left
            } else {
                (part.total().round() as u64).min(left)
            };
            left -= size;
            let info = self.new_info(0, size, (i64::MIN, i64::MAX), part);
            edit = edit.add(
                info.id,
                0,
                Arc::new(SimFile {
                    info,
                    hist: part.clone(),
                }),
            );
        }
        self.apply(&edit)
    }

    /// Applies `edit` to the live set with the engine's checks (an id consumed
    /// twice or unknown is an error, never a wrong figure), then brings the
    /// strategies' view ([`Sim::view`]) along: O(k log n) for k sstables named.
    fn apply(&mut self, edit: &VersionEdit<Arc<SimFile>>) -> Result<()> {
        self.live
            .apply_in_place(edit)
            .map_err(|e| Error::InvalidInput(format!("simulator edit {edit:?}: {e}")))?;
        for id in &edit.removed {
            self.view.remove(*id);
        }
        for &(id, level) in &edit.moved {
            self.view.update(id, |s| s.level = level);
        }
        let ttl = self.purge_before().is_some();
        for a in &edit.added {
            self.view.insert(SSTableInfo {
                level: a.level,
                being_compacted: false,
                ..a.handle.info.clone()
            });
            // Its ratio is 0 until the next refresh recomputes it, which is
            // due once its oldest bucket is purgeable (a throttled task's
            // output may hold buckets that expired while it ran).
            let first_change = a.handle.hist.next_purge_cutoff(f64::NEG_INFINITY);
            if let Some(due) = first_change.filter(|_| ttl) {
                self.ratio_due.push(Reverse((due.to_bits(), a.id)));
            }
        }
        Ok(())
    }

    /// Marks the inputs of a task that has started; they stay marked until
    /// the task's edit removes them.
    fn mark_busy(&mut self, ids: &[u64]) {
        for id in ids {
            self.view.update(*id, |s| s.being_compacted = true);
        }
    }

    fn total_bytes(&self) -> u64 {
        self.view.total_bytes()
    }

    /// Expired-and-purgeable share of each sstable, as the engine estimates it
    /// from its stats (expired cells are tombstones droppable at `gc_before`);
    /// only the sstables whose share has changed since the last refresh are
    /// recomputed (`ratio_due`).
    fn refresh_droppable_ratios(&mut self) {
        let Some(cutoff) = self.purge_before() else {
            return;
        };
        if self.cfg.check_invariants {
            self.refreshed = Some((cutoff, self.live.iter().map(|e| e.id).collect()));
        }
        while let Some(&Reverse((due_bits, id))) = self.ratio_due.peek() {
            if f64::from_bits(due_bits) > cutoff {
                break;
            }
            self.ratio_due.pop();
            let Some(e) = self.live.get(id) else {
                continue;
            };
            let (ratio, due) = (
                e.handle.hist.share_purgeable(cutoff),
                e.handle.hist.next_purge_cutoff(cutoff),
            );
            self.view
                .update(id, |s| s.droppable_tombstone_ratio = ratio);
            if let Some(due) = due {
                self.ratio_due.push(Reverse((due.to_bits(), id)));
            }
        }
    }

    /// Invariant 5: the strategies' view is what the version, the running
    /// tasks and the histograms give, as it was rebuilt per decision before it
    /// was kept: each ratio is the share purgeable at the last refresh, or 0
    /// for sstables created since.
    fn check_infos(&self) -> Result<()> {
        let busy: HashSet<u64> = self
            .running
            .iter()
            .flat_map(|r| r.inputs.iter().copied())
            .collect();
        let mut level_bytes: Vec<u64> = Vec::new();
        let mut fresh: Vec<SSTableInfo> = self
            .live
            .iter()
            .map(|e| {
                add_level(&mut level_bytes, e.level, e.handle.info.size_bytes);
                SSTableInfo {
                    level: e.level,
                    being_compacted: busy.contains(&e.id),
                    droppable_tombstone_ratio: match &self.refreshed {
                        Some((cutoff, live)) if live.binary_search(&e.id).is_ok() => {
                            e.handle.hist.share_purgeable(*cutoff)
                        }
                        _ => e.handle.info.droppable_tombstone_ratio,
                    },
                    ..e.handle.info.clone()
                }
            })
            .collect();
        fresh.sort_unstable_by_key(|s| s.id);
        let mut kept: Vec<SSTableInfo> = self.view.sstables().to_vec();
        kept.sort_unstable_by_key(|s| s.id);
        if let Some((kept, fresh)) = kept.iter().zip(&fresh).find(|(k, f)| k != f) {
            return Err(Error::InvalidInput(format!(
                "simulator invariant 5: the strategies' view drifted from the live set at t = {} s: {kept:?} should be {fresh:?}",
                self.now
            )));
        }
        let kept_level_bytes: Vec<u64> =
            (0..level_bytes.len().max(self.view.level_slots() as usize))
                .map(|l| self.view.level_bytes(l as u32))
                .collect();
        level_bytes.resize(kept_level_bytes.len(), 0);
        if fresh.len() != kept.len() || level_bytes != kept_level_bytes {
            return Err(Error::InvalidInput(format!(
                "simulator invariant 5: the strategies' view or level sizes drifted from the live set at t = {} s",
                self.now
            )));
        }
        self.view.check().map_err(|e| {
            Error::InvalidInput(format!("simulator invariant 5 at t = {} s: {e}", self.now))
        })
    }

    fn check_task(&self, task: &CompactionTask) -> Result<()> {
        let ids = task.input_ids();
        let mut seen = HashSet::new();
        for id in &ids {
            let problem = if !seen.insert(*id) {
                Some("names an sstable twice")
            } else {
                // Ids are handed out ascending and never reused: one below
                // `next_id` that is not live was consumed.
                match self.view.get(*id) {
                    None if *id < self.next_id => Some("names an sstable already consumed"),
                    None => Some("names an unknown sstable"),
                    Some(s) if s.being_compacted => Some("names an sstable being compacted"),
                    Some(_) => None,
                }
            };
            if let Some(p) = problem {
                return Err(Error::InvalidInput(format!(
                    "simulator invariant 1: task {task:?} {p} ({id})"
                )));
            }
        }
        Ok(())
    }

    /// Merge or rewrite whose outputs are cut by time window (TWCS and DTCS
    /// segregation): the inputs' live histograms summed and cut at window
    /// boundaries ([`Hist::split_by_window`]), one output per window over the
    /// inputs' token hull (time-series tables write over the whole ring).
    /// `window` is in the engine's timestamp unit: microseconds.
    fn merge_outputs_by_window(
        &mut self,
        inputs: &[u64],
        output_level: u32,
        window: i64,
        max_bytes: u64,
    ) -> Result<(Vec<(SSTableInfo, Hist)>, u64)> {
        if max_bytes != u64::MAX {
            return Err(Error::InvalidInput(
                "the simulator does not model size roll-over inside a time window".into(),
            ));
        }
        let cutoff = self.purge_before();
        let mut hists = Vec::with_capacity(inputs.len());
        let mut read = 0u64;
        let (mut lo, mut hi) = (i64::MAX, i64::MIN);
        for id in inputs {
            let Some(e) = self.live.get(*id) else {
                continue;
            };
            let info = &e.handle.info;
            read += info.size_bytes;
            lo = lo.min(info.first_token);
            hi = hi.max(info.last_token);
            hists.push(match cutoff {
                Some(c) => e.handle.hist.without_purgeable(c),
                None => e.handle.hist.clone(),
            });
        }
        let merged = Hist::merge(&hists.iter().collect::<Vec<_>>());
        let live = (merged.total().round() as u64).min(read);
        let mut outputs = Vec::new();
        if live == 0 {
            return Ok((outputs, read));
        }
        let parts = merged.split_by_window(window as f64 / 1e6, START_SECONDS as f64);
        let mut left = live;
        for (k, (_, hist)) in parts.iter().enumerate() {
            // Rounded sizes that add up to exactly `live` (invariant 2).
            let size = if k + 1 == parts.len() {
                left
            } else {
                (hist.total().round() as u64).min(left)
            };
            left -= size;
            if size > 0 {
                let info = self.new_info(output_level, size, (lo, hi), hist);
                outputs.push((info, hist.clone()));
            }
        }
        Ok((outputs, read))
    }

    /// Merge or rewrite: the outputs (not yet installed) and the bytes read.
    ///
    /// Each input's live bytes (its histogram without the purgeable buckets) are
    /// spread uniformly over its own token range; the merge's density is the sum
    /// of those pieces, so it keeps the shape the inputs had: an L1 sstable's
    /// dense range inside the lighter next-level sstables it overlaps. Outputs are
    /// cut where that density has accumulated `max_output_bytes`, as the engine
    /// cuts at the partition that fills an output, and each holds the share of
    /// every input its range covers. Smearing the merged bytes evenly over the
    /// inputs' hull instead would flatten each level's density at every merge,
    /// and round robin would then never meet the dense-ahead, sparse-behind
    /// profile the real engine's levels have (docs/compaction/model.md).
    fn merge_outputs(
        &mut self,
        inputs: &[u64],
        output_level: u32,
        max_output_bytes: u64,
    ) -> (Vec<(SSTableInfo, Hist)>, u64) {
        let cutoff = self.purge_before();
        let mut pieces: Vec<Piece> = Vec::with_capacity(inputs.len());
        let mut read = 0u64;
        for id in inputs {
            let Some(e) = self.live.get(*id) else {
                continue;
            };
            let info = &e.handle.info;
            read += info.size_bytes;
            let hist = match cutoff {
                Some(c) => e.handle.hist.without_purgeable(c),
                None => e.handle.hist.clone(),
            };
            if hist.total() > 0.0 && info.first_token <= info.last_token {
                pieces.push(Piece::new(info.first_token, info.last_token, hist));
            }
        }
        let total: f64 = pieces.iter().map(|p| p.hist.total()).sum();
        let live = (total.round() as u64).min(read);
        if live == 0 {
            return (Vec::new(), read);
        }
        let max_out = max_output_bytes.max(1);
        let cuts = cut_positions(&pieces, max_out, live.div_ceil(max_out));
        // One output per cut plus the last, whatever float rounding did to the
        // cuts: ranges stay disjoint and sizes add up to `live`.
        let n = cuts.len() as u64 + 1;
        let support = support(&pieces);
        let mut outputs = Vec::with_capacity(n as usize);
        let mut start = support.first().map_or(0, |s| s.0);
        for j in 0..n {
            let end = match cuts.get(j as usize) {
                Some(&cut) => cut - 1,
                None => support.last().map_or(start, |s| s.1),
            };
            let (first, last) = trim_to_support(&support, start, end.max(start));
            start = end + 1;
            let size = if j + 1 == n {
                live - (n - 1) * max_out
            } else {
                max_out
            };
            let shares: Vec<(&Hist, f64)> = pieces
                .iter()
                .map(|p| (&p.hist, p.share(first, last)))
                .collect();
            let hist = Hist::merge_weighted(&shares);
            let info = self.new_info(output_level, size, (first as i64, last as i64), &hist);
            outputs.push((info, hist));
        }
        (outputs, read)
    }

    /// Installs a finished merge: inputs out, outputs in, bytes counted.
    fn install(&mut self, run: Running) -> Result<()> {
        // Outputs are on disk before the inputs go.
        self.peak_space_bytes = self
            .peak_space_bytes
            .max(self.total_bytes().saturating_add(run.written));
        self.apply(&run.edit)?;
        self.compacted += run.written;
        self.tasks.purged_bytes += run.read - run.written;
        add_level(&mut self.compacted_per_level, run.output_level, run.written);
        if self.cfg.check_invariants {
            self.check_levels_disjoint()?;
        }
        Ok(())
    }

    /// Starts `task` (and, without a throughput limit, completes it).
    fn start(&mut self, task: CompactionTask) -> Result<()> {
        if self.cfg.check_invariants {
            self.check_task(&task)?;
        }
        match task {
            CompactionTask::Drop { ref ids } | CompactionTask::DropDead { ref ids } => {
                self.tasks.dropped_bytes += ids
                    .iter()
                    .filter_map(|id| self.live.get(*id))
                    .map(|e| e.handle.info.size_bytes)
                    .sum::<u64>();
                self.apply(&task.edit(Vec::new()))?;
                self.tasks.drops += 1;
            }
            CompactionTask::Move { id, to_level } => {
                if let Some(e) = self.live.get(id) {
                    let bytes = e.handle.info.size_bytes;
                    if self.now > self.warmup {
                        self.tasks.flow(to_level).moved_bytes += bytes;
                    }
                }
                self.apply(&task.edit(Vec::new()))?;
                self.tasks.moves += 1;
                if self.cfg.check_invariants {
                    self.check_levels_disjoint()?;
                }
            }
            CompactionTask::Merge {
                ref inputs,
                output_level,
                ref split,
                ..
            } => {
                self.tasks.merges += 1;
                let split = split.clone();
                self.start_merge(&task, inputs.clone(), output_level, split)?;
            }
            CompactionTask::Rewrite {
                id, output_level, ..
            } => {
                self.tasks.rewrites += 1;
                self.start_merge(&task, vec![id], output_level, OutputSplit::None)?;
            }
        }
        Ok(())
    }

    fn start_merge(
        &mut self,
        task: &CompactionTask,
        inputs: Vec<u64>,
        output_level: u32,
        split: OutputSplit,
    ) -> Result<()> {
        let (mut promoted, mut overlapped) = (0u64, 0u64);
        // Tokens covered by the promoted inputs (levels >= 1 are disjoint).
        let mut promoted_tokens = 0f64;
        for id in &inputs {
            if let Some(e) = self.live.get(*id) {
                let info = &e.handle.info;
                if e.level == output_level {
                    overlapped += info.size_bytes;
                } else {
                    promoted += info.size_bytes;
                    promoted_tokens +=
                        (info.last_token as i128 - info.first_token as i128 + 1) as f64;
                }
            }
        }
        // Only measured where flows are counted.
        let relative_density =
            (self.now > self.warmup && output_level >= 2 && promoted_tokens > 0.0)
                .then(|| {
                    let source = self.view.level_bytes(output_level - 1);
                    // The ring has 2^64 tokens.
                    let average = source as f64 / 18_446_744_073_709_551_616.0;
                    (promoted as f64 / promoted_tokens) / average
                })
                .filter(|r| r.is_finite());
        let (outputs, read) = match split {
            OutputSplit::None | OutputSplit::Size { .. } => {
                self.merge_outputs(&inputs, output_level, split.max_bytes())
            }
            OutputSplit::TimeWindow { window, max_bytes } => {
                self.merge_outputs_by_window(&inputs, output_level, window, max_bytes)?
            }
            OutputSplit::Token { .. } => {
                return Err(Error::InvalidInput(
                    "the simulator does not model token-shard output splitting yet".into(),
                ))
            }
        };
        let written: u64 = outputs.iter().map(|(i, _)| i.size_bytes).sum();
        if written > read {
            return Err(Error::InvalidInput(format!(
                "simulator invariant 2: merge of {inputs:?} wrote {written} > read {read}"
            )));
        }
        if self.now > self.warmup {
            let flow = self.tasks.flow(output_level);
            flow.promoted_bytes += promoted;
            flow.overlapped_bytes += overlapped;
            flow.written_bytes += written;
            flow.merges += 1;
            if let Some(r) = relative_density {
                flow.density_samples += 1;
                flow.promoted_relative_density +=
                    (r - flow.promoted_relative_density) / flow.density_samples as f64;
            }
        }
        let finish = match self.cfg.compaction_throughput_bytes_per_second {
            None => self.now,
            Some(rate) => self.now + read as f64 / rate,
        };
        let edit = task.edit(
            outputs
                .into_iter()
                .map(|(info, hist)| (info.id, Arc::new(SimFile { info, hist })))
                .collect(),
        );
        let run = Running {
            finish_seconds: finish,
            inputs,
            edit,
            read,
            written,
            output_level,
        };
        if self.cfg.compaction_throughput_bytes_per_second.is_none() {
            self.install(run)
        } else {
            self.mark_busy(&run.inputs);
            self.running.push(run);
            Ok(())
        }
    }

    fn check_levels_disjoint(&self) -> Result<()> {
        if self.cfg.compaction.class() != CompactionClass::LeveledCompactionStrategy {
            return Ok(());
        }
        let mut by_level: Vec<(u32, i64, i64, u64)> = self
            .live
            .iter()
            .filter(|s| s.level >= 1)
            .map(|s| {
                (
                    s.level,
                    s.handle.info.first_token,
                    s.handle.info.last_token,
                    s.id,
                )
            })
            .collect();
        by_level.sort_unstable();
        for w in by_level.windows(2) {
            if w[0].0 == w[1].0 && w[1].1 <= w[0].2 {
                return Err(Error::InvalidInput(format!(
                    "simulator invariant 3: L{} sstables {} and {} overlap",
                    w[0].0, w[0].3, w[1].3
                )));
            }
        }
        Ok(())
    }

    /// Asks for tasks until the strategy has nothing more (or every compactor is
    /// busy).
    fn decide(&mut self, memtable_since: f64) -> Result<()> {
        self.refresh_droppable_ratios();
        let limit = if self.cfg.compaction_throughput_bytes_per_second.is_some() {
            self.cfg.concurrent_compactors
        } else {
            usize::MAX
        };
        let mut started = 0usize;
        while self.running.len() < limit {
            let ctx = self.ctx(memtable_since);
            self.tasks.decisions += 1;
            let decided = self.strategy.next_task_in(&self.view, &ctx);
            if self.cfg.check_invariants {
                // The answers the view remembers are the rule's (invariant 5).
                common::check_remembered_tombstone_rejections(
                    &self.view,
                    &ctx,
                    self.strategy.common_options(),
                )
                .map_err(|e| {
                    Error::InvalidInput(format!("simulator invariant 5 at t = {} s: {e}", self.now))
                })?;
            }
            let Some(task) = decided else {
                break;
            };
            self.start(task)?;
            if self.cfg.check_invariants {
                self.check_infos()?;
            }
            self.max_sstables = self.max_sstables.max(self.live.len());
            started += 1;
            if started > MAX_TASKS_PER_INSTANT {
                return Err(Error::InvalidInput(format!(
                    "simulated compaction did not settle at t = {} s",
                    self.now
                )));
            }
        }
        Ok(())
    }

    /// One decision instant's sstables per read (see
    /// [`SimResult::sstables_per_read_p99`]), counted in the steady window.
    fn count_read_fan_in(&mut self) {
        self.peak_space_bytes = self.peak_space_bytes.max(self.total_bytes());
        if self.now <= self.warmup {
            return;
        }
        let levels = (1..self.view.level_slots())
            .filter(|&l| self.view.level_len(l) > 0)
            .count();
        // L0: the most L0 sstables over any one token (merges within L0 are
        // cut by size into disjoint slices; flushes span the ring). L0 is small.
        let mut events: Vec<(i128, i32)> = self
            .view
            .level_sorted(0)
            .flat_map(|s| [(s.first_token as i128, 1), (s.last_token as i128 + 1, -1)])
            .collect();
        events.sort_unstable();
        let (mut depth, mut l0) = (0i32, 0i32);
        for (_, delta) in events {
            depth += delta;
            l0 = l0.max(depth);
        }
        let n = l0 as usize + levels;
        if self.reads.len() <= n {
            self.reads.resize(n + 1, 0);
        }
        self.reads[n] += 1;
    }

    /// The 99th percentile of [`Sim::reads`] (0 when nothing was counted).
    fn reads_p99(&self) -> u32 {
        let total: u64 = self.reads.iter().sum();
        let mut seen = 0u64;
        for (n, count) in self.reads.iter().enumerate() {
            seen += count;
            if seen * 100 >= total * 99 && total > 0 {
                return n as u32;
            }
        }
        0
    }

    fn fractional_levels(&self) -> Option<f64> {
        if self.cfg.compaction.class() != CompactionClass::LeveledCompactionStrategy {
            return None;
        }
        let lcs = self.cfg.compaction.lcs();
        let stats = self.level_stats();
        let top = stats.iter().rev().find(|l| l.level >= 1 && l.bytes > 0)?;
        // The strategy's own targets: `fanout^L * s`, or in fixed-levels mode
        // those that follow the top level's bytes.
        let top_level = if lcs.level_count > 0 {
            lcs.level_count
        } else {
            MAX_LEVEL
        };
        let target = level_target_bytes(&lcs, top.level, self.view.level_bytes(top_level));
        Some((top.level - 1) as f64 + top.bytes as f64 / target)
    }

    fn level_stats(&self) -> Vec<LevelStat> {
        let mut stats: Vec<LevelStat> = Vec::new();
        for e in self.live.iter() {
            let s = &e.handle.info;
            let l = e.level as usize;
            if stats.len() <= l {
                stats.extend((stats.len()..=l).map(|i| LevelStat {
                    level: i as u32,
                    ..LevelStat::default()
                }));
            }
            stats[l].sstables += 1;
            stats[l].bytes += s.size_bytes;
        }
        stats
    }
}

/// Runs the simulation (module docs). Errors: an invalid config, or a violated
/// invariant (a strategy bug).
pub fn run(cfg: &SimConfig) -> Result<SimResult> {
    cfg.validate()?;
    let wall = Instant::now();
    let warmup = cfg.warmup_seconds.unwrap_or_else(|| {
        let half = cfg.duration_seconds / 2;
        if cfg.ttl_seconds > 0 {
            (cfg.ttl_seconds + cfg.gc_grace_seconds as u64).min(half)
        } else {
            half
        }
    });
    let mut sim = Sim {
        cfg,
        strategy: strategy_for(&cfg.compaction),
        live: KeyedVersion::empty(),
        view: DecisionView::new(),
        ratio_due: BinaryHeap::new(),
        refreshed: None,
        running: Vec::new(),
        next_id: 1,
        bucket_seconds: cfg
            .bucket_seconds
            .unwrap_or_else(|| (cfg.ttl_seconds / 256).max(60)) as f64,
        now: 0.0,
        flushed: 0,
        compacted: 0,
        compacted_per_level: Vec::new(),
        tasks: TaskCounts::default(),
        max_sstables: 0,
        reads: Vec::new(),
        max_sstable_bytes: 0,
        peak_space_bytes: 0,
        warmup: warmup as f64,
    };
    let flush_period = cfg.flush_bytes as f64 / cfg.ingest_bytes_per_second;
    let duration = cfg.duration_seconds as f64;
    let interval = cfg.sample_interval_seconds as f64;
    let mut last_flush = 0.0;
    let mut next_flush = flush_period;
    let mut next_sample = interval;
    let mut series = Vec::new();
    let (mut sample_flushed, mut sample_compacted) = (0u64, 0u64);
    let mut sample_per_level: Vec<u64> = Vec::new();

    loop {
        let next_finish = sim
            .running
            .iter()
            .map(|r| r.finish_seconds)
            .fold(f64::INFINITY, f64::min);
        let next = next_flush.min(next_sample).min(next_finish);
        if next > duration {
            break;
        }
        sim.now = next;
        // Completions first: their outputs are visible to this instant's decision.
        if next_finish <= next {
            let mut i = 0;
            while i < sim.running.len() {
                if sim.running[i].finish_seconds <= next {
                    let run = sim.running.swap_remove(i);
                    sim.install(run)?;
                } else {
                    i += 1;
                }
            }
        }
        if next_flush <= next {
            sim.flush(last_flush, next_flush)?;
            last_flush = next_flush;
            next_flush += flush_period;
        }
        sim.decide(last_flush)?;
        sim.max_sstables = sim.max_sstables.max(sim.live.len());
        sim.count_read_fan_in();
        if next_sample <= next {
            let flushed = sim.flushed - sample_flushed;
            let compacted = sim.compacted - sample_compacted;
            let mut per_level = sim.compacted_per_level.clone();
            for (l, b) in per_level.iter_mut().enumerate() {
                *b -= sample_per_level.get(l).copied().unwrap_or(0);
            }
            series.push(SimSample {
                time_seconds: next.round() as u64,
                bytes_flushed: flushed,
                bytes_compacted: compacted,
                bytes_compacted_per_level: per_level,
                io_rate_mb_s: (flushed + compacted) as f64 / interval / 1e6,
                write_amplification: if flushed > 0 {
                    (flushed + compacted) as f64 / flushed as f64
                } else {
                    0.0
                },
                data_bytes: sim.total_bytes(),
                sstables: sim.live.len(),
                levels: sim.level_stats(),
                fractional_levels: sim.fractional_levels(),
            });
            sample_flushed = sim.flushed;
            sample_compacted = sim.compacted;
            sample_per_level = sim.compacted_per_level.clone();
            next_sample += interval;
        }
    }

    let steady: Vec<&SimSample> = series.iter().filter(|s| s.time_seconds > warmup).collect();
    let steady_flushed: u64 = steady.iter().map(|s| s.bytes_flushed).sum();
    let steady_compacted: u64 = steady.iter().map(|s| s.bytes_compacted).sum();
    let ratio = |flushed: u64, compacted: u64| {
        if flushed == 0 {
            0.0
        } else {
            (flushed + compacted) as f64 / flushed as f64
        }
    };
    let mean = |f: &dyn Fn(&SimSample) -> Option<f64>| {
        let v: Vec<f64> = steady.iter().filter_map(|s| f(s)).collect();
        (!v.is_empty()).then(|| v.iter().sum::<f64>() / v.len() as f64)
    };
    let steady_wa = ratio(steady_flushed, steady_compacted);
    Ok(SimResult {
        strategy: sim.strategy.name().to_string(),
        bytes_flushed: sim.flushed,
        bytes_compacted: sim.compacted,
        bytes_compacted_per_level: sim.compacted_per_level.clone(),
        write_amplification: ratio(sim.flushed, sim.compacted),
        steady_write_amplification: steady_wa,
        steady_io_rate_mb_s: steady_wa * cfg.ingest_bytes_per_second / 1e6,
        steady_from_seconds: warmup,
        steady_data_bytes: mean(&|s| Some(s.data_bytes as f64)).unwrap_or(0.0),
        steady_levels: mean(&|s| s.fractional_levels),
        final_levels: sim.level_stats(),
        final_fractional_levels: sim.fractional_levels(),
        final_data_bytes: sim.total_bytes(),
        final_sstables: sim.live.len(),
        max_sstables: sim.max_sstables,
        sstables_per_read_p99: sim.reads_p99(),
        max_sstable_bytes: sim.max_sstable_bytes,
        peak_space_bytes: sim.peak_space_bytes,
        tasks: sim.tasks.clone(),
        series,
        elapsed_wall_seconds: wall.elapsed().as_secs_f64(),
    })
}

#[cfg(test)]
mod tests;
