//! Compaction strategies as pure deciders (DESIGN.md §5, STYLE.md 3).
//!
//! A strategy looks at an immutable view of sstable *metadata* ([`SSTableInfo`])
//! and its options, and returns a [`CompactionTask`] or nothing. It never opens a
//! file and never reads a clock: "now" arrives in the [`StrategyContext`]. The same
//! code therefore runs in two places:
//!
//! - the engine: the runtime (`compaction/runtime.rs`) fills [`SSTableInfo`] from
//!   the table's version and each reader's statistics, marks the inputs of a task
//!   `being_compacted`, and the executor (`compaction/executor.rs`) performs the
//!   I/O and installs the result as the edit [`CompactionTask::edit`] makes;
//! - the simulator of issue 5, over synthetic metadata at terabyte scale, which
//!   installs results through the same [`CompactionTask::edit`] and
//!   [`crate::version::Version::apply`].
//!
//! Modules: [`common`] (fully expired sstables, single-sstable tombstone
//! compaction, the token-overlap index), [`view`] (the live set with the
//! indexes a leveled decision queries, kept up to date by the simulator), [`stcs`] (size-tiered), [`lcs`] (leveled,
//! with the tunable fanout and the fixed-levels mode of seed 000), [`twcs`]
//! (time windows), [`dtcs`] (date-tiered, seed 003) and [`blob`] (large
//! immutable blocks, seed 002, with its accounting in [`live_bytes`]). The algorithms, their
//! math and every option are in `docs/compaction/*.md`.
//!
//! Thread safety: strategies are `Send + Sync`. Callers may share one strategy
//! between threads, but [`CompactionStrategy::next_task`] must be called from one
//! thread at a time, with the inputs marked `being_compacted` before the next call;
//! otherwise two calls could hand out the same inputs. The engine's runtime does
//! this under each table's decision lock. LCS keeps a little state behind a mutex
//! (round-robin position per level, starvation counters, the fixed-levels sstable
//! size); it is advanced when a task is *proposed*, so a proposed task that is
//! never run only moves the round-robin pointer along. Observers use
//! [`CompactionStrategy::peek_task`], `estimated_pending_tasks` and `level_scores`,
//! which advance nothing.
//!
//! Invariants every strategy keeps (checked by the property test in `proptests`):
//! 1. A task never names an sstable that is `being_compacted`, nor one id twice,
//!    nor an id absent from the view.
//! 2. Decisions are deterministic: the same view, options, context and strategy
//!    state give the same task. Every tie is broken by sstable id.
//! 3. A decision costs O(n log n) in the number of sstables (sorting plus index
//!    queries), never a pairwise scan, so thousands of sstables decide in well
//!    under a millisecond.
//! 4. A [`CompactionTask::Drop`] names only sstables whose data is entirely
//!    purgeable under Cassandra's overlap rule ([`common::fully_expired`]), or
//!    (blob strategy) fully expired tombstones whose accounting says they target
//!    nothing; a [`CompactionTask::DropDead`] only sstables whose accounting says
//!    every partition is superseded by deletions held elsewhere
//!    ([`crate::version::LiveBytes`]). Dropping them cannot resurrect anything.
//! 5. LCS: a task writing into level `L >= 1` includes every sstable of level `L`
//!    that overlaps the token hull of its inputs, so level `L` stays free of
//!    overlaps; if one of those is `being_compacted`, no such task is proposed.

pub mod blob;
pub mod common;
pub mod dtcs;
pub mod executor;
pub mod expiry;
#[cfg(test)]
mod golden;
pub mod lcs;
pub mod live_bytes;
pub mod merge;
pub mod purge;
pub mod runtime;
pub mod stcs;
pub mod twcs;
pub mod verdicts;
pub mod view;

#[cfg(test)]
mod proptests;

use crate::options::{CommonCompactionOptions, CompactionClass, CompactionOptions};
use crate::version::{LiveBytes, VersionEdit};

pub use crate::split::OutputSplit;
pub use blob::BlobCompactionStrategy;
pub use common::{fully_expired, worth_dropping_tombstones};
pub use dtcs::DateTieredCompactionStrategy;
pub use lcs::LeveledCompactionStrategy;
pub use stcs::SizeTieredCompactionStrategy;
pub use twcs::TimeWindowCompactionStrategy;

/// What a strategy knows of an sstable: filled from `SSTableStats` by the engine,
/// or synthesized by the simulator.
#[derive(Clone, Debug, PartialEq)]
pub struct SSTableInfo {
    /// Unique within the table (the sstable generation); the tie-breaker of every
    /// decision.
    pub id: u64,
    /// LCS level (0 for flushes; STCS ignores it).
    pub level: u32,
    /// Size on disk (compressed, with checksums): what level targets, buckets and
    /// write amplification count.
    pub size_bytes: u64,
    pub uncompressed_bytes: u64,
    /// Murmur3 tokens of the first and last partition (inclusive).
    pub first_token: i64,
    pub last_token: i64,
    pub min_timestamp_micros: i64,
    pub max_timestamp_micros: i64,
    /// Latest local deletion time of any datum; `i64::MAX` if anything is live and
    /// non-expiring (sstable stats invariant 2).
    pub max_local_deletion_seconds: i64,
    /// Fraction of cells and deletions that are tombstones droppable at the
    /// context's `gc_before` (estimated by the engine from the stats histogram).
    pub droppable_tombstone_ratio: f64,
    pub creation_time_seconds: i64,
    pub partition_count: u64,
    /// Already an input of a running task: never proposed again (invariant 1).
    pub being_compacted: bool,
    /// Fully expired, and the engine checked row by row ([`expiry`]) that
    /// dropping it shadows nothing held elsewhere, although Cassandra's overlap
    /// rule (one minimum timestamp per overlapping sstable) would block it.
    /// Always false in the simulator (it has no rows to check).
    pub expiry_verified: bool,
    /// The blob strategy's accounting ([`live_bytes`]); `None` when not accounted
    /// (other strategies, the simulator, or not computed yet).
    pub live: Option<LiveBytes>,
}

impl SSTableInfo {
    /// Whether the token ranges intersect (both ends inclusive).
    pub fn overlaps(&self, other: &SSTableInfo) -> bool {
        self.first_token <= other.last_token && other.first_token <= self.last_token
    }
}

/// The time-dependent inputs of a decision.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StrategyContext {
    /// The engine clock's "now", seconds since the epoch.
    pub now_seconds: i64,
    /// The table's `gc_grace_seconds`.
    pub gc_grace_seconds: u32,
    /// Smallest write timestamp held by any memtable of the table (active or
    /// flushing), or `None` if they are all empty. A memtable may hold data for any
    /// token, so it bounds every fully-expired drop (Cassandra does the same).
    pub memtable_min_timestamp_micros: Option<i64>,
}

impl StrategyContext {
    /// Tombstones and expired cells whose local deletion time is before this are
    /// purgeable (`now - gc_grace_seconds`, as Cassandra's `gcBefore`).
    pub fn gc_before(&self) -> i64 {
        self.now_seconds
            .saturating_sub(self.gc_grace_seconds as i64)
    }
}

/// Why a task was proposed: shown by `compactionstats`/`compactionhistory` and used
/// by the file layer to attribute bytes per cause.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TaskReason {
    /// A size-tiered bucket (STCS).
    SizeTiered,
    /// LCS: a size-tiered bucket inside L0, because L0 holds more than 32 sstables.
    L0SizeTiered,
    /// LCS: promotion out of `from_level` (0 for L0 -> L1, or L0 -> L0 while L0
    /// holds less than one sstable's worth). From a level above the top one (after
    /// `level_count` was lowered) it folds the data down into the top level.
    Leveled { from_level: u32 },
    /// TWCS: the sstables of one time window (size-tiered in the newest window,
    /// all of them in older ones).
    TimeWindow,
    /// DTCS: the sstables of one window of the measuring stick.
    DateTiered,
    /// Single-sstable tombstone compaction (`tombstone_threshold`).
    Tombstone,
    /// Blob strategy: one sstable whose size over live bytes passed
    /// `max_sstable_fragmentation`, rewritten alone without what other live
    /// sstables' deletions supersede.
    Fragmentation,
    /// Blob strategy: sstables sharing live rows (an overwrite or partial update
    /// broke the strategy's assumption) merged so one version of each row remains.
    Overwrite,
    /// User-requested major compaction (`strata compact`).
    Major,
}

impl TaskReason {
    /// Short label for logs and tables.
    pub fn label(&self) -> String {
        match self {
            TaskReason::SizeTiered => "size-tiered".into(),
            TaskReason::L0SizeTiered => "L0 size-tiered".into(),
            TaskReason::Leveled { from_level } => format!("L{from_level} promotion"),
            TaskReason::TimeWindow => "time window".into(),
            TaskReason::DateTiered => "date-tiered window".into(),
            TaskReason::Tombstone => "tombstone".into(),
            TaskReason::Fragmentation => "fragmentation".into(),
            TaskReason::Overwrite => "overwritten rows".into(),
            TaskReason::Major => "major".into(),
        }
    }
}

/// What a strategy asks the executor to do.
#[derive(Clone, Debug, PartialEq)]
pub enum CompactionTask {
    /// Merge `inputs` (ids ascending), writing outputs into `output_level`, cut
    /// into sstables by `split` ([`OutputSplit`]: one output as STCS, by size as
    /// LCS, by token shard, or by the time window of each write as TWCS).
    Merge {
        inputs: Vec<u64>,
        output_level: u32,
        split: OutputSplit,
        reason: TaskReason,
    },
    /// Remove fully expired sstables (ids ascending) without reading them.
    Drop { ids: Vec<u64> },
    /// Remove sstables (ids ascending) whose every partition is superseded by
    /// deletions held in other live sstables, without reading them (blob
    /// strategy; invariant 4).
    DropDead { ids: Vec<u64> },
    /// Rewrite one sstable alone into `output_level` (tombstone compaction, the
    /// blob strategy's fragmentation rewrite; later recompression). With reason
    /// [`TaskReason::Fragmentation`] the executor also removes what other live
    /// sstables' deletions supersede ([`CompactionTask::shadows_with_live_set`]).
    Rewrite {
        id: u64,
        output_level: u32,
        reason: TaskReason,
    },
    /// Change an sstable's level without rewriting it (LCS's single-sstable
    /// uplevel: nothing in `to_level` overlaps it).
    Move { id: u64, to_level: u32 },
}

impl CompactionTask {
    /// Every sstable the task consumes (to mark `being_compacted`).
    pub fn input_ids(&self) -> Vec<u64> {
        match self {
            CompactionTask::Merge { inputs, .. } => inputs.clone(),
            CompactionTask::Drop { ids } | CompactionTask::DropDead { ids } => ids.clone(),
            CompactionTask::Rewrite { id, .. } | CompactionTask::Move { id, .. } => vec![*id],
        }
    }

    /// The change of the live set that installs this task once it has run:
    /// `outputs` (`(id, handle)`, written by the executor or synthesized by the
    /// simulator) at the task's output level, in place of its inputs; a `Move`
    /// only changes the level (its `outputs` are ignored: nothing is written).
    /// The one translation of a task into an edit, shared by the executor, the
    /// simulator and the property tests; [`crate::version::Version::apply`]
    /// checks it against the version.
    pub fn edit<H>(&self, outputs: Vec<(u64, H)>) -> VersionEdit<H> {
        let mut edit = VersionEdit::new();
        match self {
            CompactionTask::Move { id, to_level } => return edit.move_to(*id, *to_level),
            CompactionTask::Drop { ids } | CompactionTask::DropDead { ids } => {
                edit.removed = ids.clone()
            }
            CompactionTask::Merge {
                inputs,
                output_level,
                ..
            } => {
                edit.removed = inputs.clone();
                for (id, handle) in outputs {
                    edit = edit.add(id, *output_level, handle);
                }
            }
            CompactionTask::Rewrite {
                id, output_level, ..
            } => {
                edit.removed = vec![*id];
                for (out, handle) in outputs {
                    edit = edit.add(out, *output_level, handle);
                }
            }
        }
        edit
    }

    /// The level the outputs land in (`None` for a drop).
    pub fn output_level(&self) -> Option<u32> {
        match self {
            CompactionTask::Merge { output_level, .. }
            | CompactionTask::Rewrite { output_level, .. } => Some(*output_level),
            CompactionTask::Move { to_level, .. } => Some(*to_level),
            CompactionTask::Drop { .. } | CompactionTask::DropDead { .. } => None,
        }
    }

    /// Whether the executor removes, besides what the inputs' own deletions
    /// shadow, what deletions held in *other* live sstables supersede: the blob
    /// strategy's fragmentation rewrite, whose garbage is deleted by tombstones
    /// that live elsewhere. Safe for any rewrite (data a live tombstone shadows is
    /// invisible, and stays so once removed); limited to this one because it
    /// costs a lookup of every partition in the other sstables.
    pub fn shadows_with_live_set(&self) -> bool {
        matches!(
            self,
            CompactionTask::Rewrite {
                reason: TaskReason::Fragmentation,
                ..
            }
        )
    }
}

/// A compaction strategy: a pure decider over sstable metadata (module docs).
///
/// A strategy writes only what is its own (`own_task`, `major_merge`, its
/// preferences); the steps every strategy shares — drop fully expired sstables
/// first, a single-sstable tombstone compaction when nothing else is due, the
/// major compaction's drops, the `enabled` switch — are the provided methods,
/// written once in [`common`].
pub trait CompactionStrategy: Send + Sync {
    /// Cassandra's class name (Strata's for the blob strategy).
    fn name(&self) -> &'static str;

    /// The options every strategy has (`enabled`, tombstone settings, ...).
    fn common_options(&self) -> &CommonCompactionOptions;

    /// The strategy's own background task (merge, move), asked after the shared
    /// drop step found nothing; advances the strategy's state if it has any.
    /// `all` indexes `sstables` by token.
    fn own_task(
        &self,
        sstables: &[SSTableInfo],
        all: &common::OverlapIndex<'_>,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask>;

    /// What [`CompactionStrategy::own_task`] would return now, without advancing
    /// any state (observers: `compactionstats`, `wait_for_compactions`).
    fn peek_own_task(
        &self,
        sstables: &[SSTableInfo],
        all: &common::OverlapIndex<'_>,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask>;

    /// Order in which sstables worth a tombstone compaction are tried
    /// (`Less` = tried first).
    fn tombstone_preference(&self, a: &SSTableInfo, b: &SSTableInfo) -> std::cmp::Ordering;

    /// Whether single-sstable tombstone compactions run at all. Default true.
    /// Cassandra's TWCS and DTCS turn them off unless the table names a
    /// tombstone option (`disableTombstoneCompactions`).
    fn tombstone_compactions(&self) -> bool {
        true
    }

    /// The level a tombstone compaction of `sstable` writes into.
    /// Default level 0: every strategy without levels keeps its sstables there.
    fn tombstone_output_level(&self, _sstable: &SSTableInfo) -> u32 {
        0
    }

    /// The merge of a major compaction over `rest` (every sstable of `sstables`
    /// that the shared step does not drop), or `None` when `rest` is empty.
    fn major_merge(
        &self,
        sstables: &[SSTableInfo],
        rest: &[&SSTableInfo],
    ) -> Option<CompactionTask>;

    /// The fully expired sstables the shared step drops now (ids ascending).
    /// Default: [`common::droppable_expired`] at every decision. TWCS and DTCS
    /// look only every `expired_sstable_check_frequency_seconds` (and TWCS may be
    /// told to skip the overlap check); their record of the last look advances
    /// only when `decide` is [`common::Decide::Advance`].
    fn expired_to_drop(
        &self,
        sstables: &[SSTableInfo],
        all: &common::OverlapIndex<'_>,
        ctx: &StrategyContext,
        _decide: common::Decide,
    ) -> Vec<u64> {
        common::droppable_expired(sstables, all, ctx, self.common_options())
    }

    /// How a flush of this table cuts its output ([`OutputSplit`]): one sstable
    /// unless the strategy segregates data (TWCS: one sstable per time window).
    fn flush_split(&self) -> OutputSplit {
        OutputSplit::None
    }

    /// Whether many level-0 sstables mean compaction debt, so writes slow down
    /// past `l0_slowdown_writes_trigger` and stop past `l0_stop_writes_trigger`
    /// (RocksDB's level-0 stall). False for strategies whose healthy state holds
    /// many: TWCS and DTCS keep one or more sstables per time window, all at
    /// level 0.
    fn stalls_writes_on_level0(&self) -> bool {
        true
    }

    /// Whether the table keeps each sstable's [`LiveBytes`] up to date with every
    /// edit ([`live_bytes`]): true for the blob strategy only, since the
    /// accounting reads other sstables at every flush and compaction commit.
    fn tracks_live_bytes(&self) -> bool {
        false
    }

    /// Estimated number of tasks needed to catch up (`compactionstats`'
    /// `pending_tasks`), with Cassandra's formulas. Changes no state.
    fn estimated_pending_tasks(&self, sstables: &[SSTableInfo], ctx: &StrategyContext) -> usize;

    /// Per-level score (level bytes / level target), index = level; empty for
    /// strategies without levels. Changes no state.
    fn level_scores(&self, _sstables: &[SSTableInfo]) -> Vec<f64> {
        Vec::new()
    }

    /// The next background task, or `None` when nothing is worth doing (or the
    /// strategy's `enabled` option is false): [`common::next_task`]. Advances the
    /// strategy's state: call it only from the thread holding the table's
    /// decision lock (`compaction::runtime`).
    fn next_task(&self, sstables: &[SSTableInfo], ctx: &StrategyContext) -> Option<CompactionTask> {
        common::next_task(self, sstables, ctx, common::Decide::Advance)
    }

    /// [`CompactionStrategy::next_task`] over a [`view::DecisionView`] that the
    /// caller keeps up to date (the simulator), so the decision need not
    /// rebuild its indexes from the slice: the same task as `next_task` on
    /// `view.sstables()`. Default: exactly that call; LCS decides on the view.
    fn next_task_in(
        &self,
        view: &view::DecisionView<'_>,
        ctx: &StrategyContext,
    ) -> Option<CompactionTask> {
        self.next_task(view.sstables(), ctx)
    }

    /// The task [`CompactionStrategy::next_task`] would return now, changing no
    /// state: observing pending work must not move LCS's round robin.
    fn peek_task(&self, sstables: &[SSTableInfo], ctx: &StrategyContext) -> Option<CompactionTask> {
        common::next_task(self, sstables, ctx, common::Decide::Observe)
    }

    /// The tasks of a user-requested major compaction, in the order to run them
    /// ([`common::major_compaction`]). Runs even when `enabled` is false, as
    /// Cassandra's `nodetool compact`.
    fn major_compaction(
        &self,
        sstables: &[SSTableInfo],
        ctx: &StrategyContext,
    ) -> Vec<CompactionTask> {
        common::major_compaction(self, sstables, ctx)
    }
}

/// The strategy for a table's options. Total over [`CompactionClass`].
pub fn strategy_for(options: &CompactionOptions) -> Box<dyn CompactionStrategy> {
    match options.class() {
        CompactionClass::SizeTieredCompactionStrategy => {
            Box::new(SizeTieredCompactionStrategy::new(options))
        }
        CompactionClass::LeveledCompactionStrategy => {
            Box::new(LeveledCompactionStrategy::new(options))
        }
        CompactionClass::TimeWindowCompactionStrategy => {
            Box::new(TimeWindowCompactionStrategy::new(options))
        }
        CompactionClass::DateTieredCompactionStrategy => {
            Box::new(DateTieredCompactionStrategy::new(options))
        }
        CompactionClass::BlobCompactionStrategy => Box::new(BlobCompactionStrategy::new(options)),
    }
}

#[cfg(test)]
pub(crate) mod test_util {
    //! Builders for hand-made sstable sets (golden tests).
    use super::*;

    pub const MIB: u64 = 1024 * 1024;

    /// An sstable with live, non-expiring data over the whole token range.
    pub fn sst(id: u64, level: u32, size_bytes: u64) -> SSTableInfo {
        SSTableInfo {
            id,
            level,
            size_bytes,
            uncompressed_bytes: size_bytes * 2,
            first_token: i64::MIN,
            last_token: i64::MAX,
            min_timestamp_micros: id as i64 * 1000,
            max_timestamp_micros: id as i64 * 1000 + 999,
            max_local_deletion_seconds: i64::MAX,
            droppable_tombstone_ratio: 0.0,
            creation_time_seconds: 0,
            partition_count: 1000,
            being_compacted: false,
            expiry_verified: false,
            live: None,
        }
    }

    /// Same, with a token range.
    pub fn sst_range(id: u64, level: u32, size_bytes: u64, first: i64, last: i64) -> SSTableInfo {
        SSTableInfo {
            first_token: first,
            last_token: last,
            ..sst(id, level, size_bytes)
        }
    }

    pub fn ctx(now_seconds: i64) -> StrategyContext {
        StrategyContext {
            now_seconds,
            gc_grace_seconds: 0,
            memtable_min_timestamp_micros: None,
        }
    }

    pub fn opts(text: &str) -> CompactionOptions {
        crate::options::TableOptions::parse(&format!("compaction = {{{text}}}"))
            .expect("valid options")
            .compaction
    }
}

#[cfg(test)]
mod tests {
    use super::test_util::*;
    use super::*;

    #[test]
    fn strategy_for_is_total() {
        let cases = [
            (
                "'class': 'SizeTieredCompactionStrategy'",
                "SizeTieredCompactionStrategy",
            ),
            (
                "'class': 'LeveledCompactionStrategy'",
                "LeveledCompactionStrategy",
            ),
            (
                "'class': 'TimeWindowCompactionStrategy'",
                "TimeWindowCompactionStrategy",
            ),
            (
                "'class': 'DateTieredCompactionStrategy'",
                "DateTieredCompactionStrategy",
            ),
            (
                "'class': 'BlobCompactionStrategy'",
                "BlobCompactionStrategy",
            ),
            ("'class': 'CFSCompactionStrategy'", "BlobCompactionStrategy"),
        ];
        for (text, name) in cases {
            assert_eq!(strategy_for(&opts(text)).name(), name);
        }
    }

    #[test]
    fn gc_before_and_task_accessors() {
        let c = StrategyContext {
            now_seconds: 1000,
            gc_grace_seconds: 300,
            memtable_min_timestamp_micros: None,
        };
        assert_eq!(c.gc_before(), 700);
        let t = CompactionTask::Merge {
            inputs: vec![1, 2],
            output_level: 3,
            split: OutputSplit::Size { max_bytes: 10 },
            reason: TaskReason::Leveled { from_level: 2 },
        };
        assert_eq!((t.input_ids(), t.output_level()), (vec![1, 2], Some(3)));
        assert_eq!(CompactionTask::Drop { ids: vec![4] }.output_level(), None);
        assert_eq!(
            TaskReason::Leveled { from_level: 2 }.label(),
            "L2 promotion"
        );
        assert!(sst_range(1, 0, 1, 0, 10).overlaps(&sst_range(2, 0, 1, 10, 20)));
        assert!(!sst_range(1, 0, 1, 0, 9).overlaps(&sst_range(2, 0, 1, 10, 20)));
    }
}
