//! The slice-read experiment behind `strata bench slice` (issue 11): how the
//! time of a 10-row slice depends on the size of the partition it is cut from.
//!
//! Owns: building one partition of `rows_per_partition` rows in a fresh
//! database, timing slice reads from it while it sits in the memtable and again
//! after it is flushed to one sstable, and the result rows. The CLI only parses
//! arguments and prints ([`SliceBenchReport`] is `Serialize`).
//!
//! The table is `CREATE TABLE bench.ts (k int, t bigint, v blob, PRIMARY KEY (k, t))
//! WITH CLUSTERING ORDER BY (t DESC)`: a time series whose newest rows come first
//! in clustering order, as time series are usually declared. Row `t` holds a
//! 32-byte value, so a million rows fit in memory. Rows are `t = 0..n`; "newest"
//! is `t = n-1` (the first row in clustering order).
//!
//! The four slices, each returning 10 rows and each needing a seek:
//! - newest / forward: no bounds, forward, limit 10 (`SELECT ... LIMIT 10`).
//! - newest / reverse: `t >= n-10`, reversed, limit 10 (the newest ten, oldest first):
//!   the read starts from the range's end bound.
//! - middle / forward: `t <= n/2`, forward, limit 10: starts from a start bound.
//! - middle / reverse: `t >= n/2`, reversed, limit 10: starts from an end bound.
//!
//! Contract:
//! 1. Each case checks that it got exactly the 10 expected rows, so a fast wrong
//!    answer cannot pass as a result.
//! 2. The memtable case asserts that the whole partition is in the memtable and
//!    no sstable exists (the flush threshold is set above the data); the sstable
//!    case asserts the memtable is empty and exactly one sstable holds the data.
//! 3. Time per read is the median over [`ROUNDS`] rounds of the mean time of
//!    a round's reads; a round of one case repeats reads until
//!    `min_millis_per_case / ROUNDS` have passed (at least
//!    [`MIN_READS_PER_CASE`] reads). Rounds visit every size in turn, so a
//!    burst of load from other processes on a shared machine hits all sizes
//!    alike instead of skewing the one measured at that moment (the
//!    requirement compares sizes). The database clock is simulated (no TTLs
//!    are involved); the timer is the monotonic clock.

use serde::Serialize;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::clock::SimClock;
use strata::data::{ClusteringBound, ClusteringRange, DecoratedKey, PartitionUpdate};
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;
use strata::{Error, Result};

/// Rows returned by every slice.
pub const SLICE_ROWS: usize = 10;
/// Reads per case at the least, however slow.
pub const MIN_READS_PER_CASE: u64 = 3;
/// Bytes of each row's value.
pub const VALUE_BYTES: usize = 32;
/// Rounds per case; see contract 3.
pub const ROUNDS: u64 = 5;
/// Rows per applied batch while loading (one mutation each).
const LOAD_BATCH_ROWS: usize = 1000;

/// What to run.
#[derive(Clone, Debug)]
pub struct SliceBenchOptions {
    /// Partition sizes, in rows.
    pub rows_per_partition: Vec<u64>,
    /// Keep reading one case until this much time has passed.
    pub min_millis_per_case: u64,
}

impl Default for SliceBenchOptions {
    fn default() -> Self {
        SliceBenchOptions {
            rows_per_partition: vec![1_000, 100_000, 1_000_000],
            min_millis_per_case: 300,
        }
    }
}

/// One measured case (the JSON row of `strata bench slice --json`).
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct SliceCase {
    pub rows_per_partition: u64,
    /// `memtable` or `sstable`.
    pub source: &'static str,
    /// `newest` or `middle`.
    pub position: &'static str,
    /// `forward` or `reverse`.
    pub direction: &'static str,
    pub micros_per_read: f64,
    pub reads: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct SliceBenchReport {
    pub cases: Vec<SliceCase>,
}

/// Fewest rows of a partition: two slices' worth, so "newest" and "middle" differ.
pub const MIN_ROWS_PER_PARTITION: u64 = 2 * SLICE_ROWS as u64;
/// Most rows of all sizes together: every size's partition is loaded into a
/// memtable and held there at once (the memtable case reads them all before
/// any is flushed), so this bounds the run's memory (a few GiB) and stays
/// below the table's 4 GiB flush threshold.
pub const MAX_TOTAL_ROWS: u64 = 10_000_000;
/// Longest time per case, milliseconds: ten minutes.
pub const MAX_MILLIS_PER_CASE: u64 = 600_000;

impl SliceBenchOptions {
    /// Refuses what cannot run, naming the option; [`run`] calls it first, and
    /// a caller calls it before creating anything on disk.
    pub fn validate(&self) -> Result<()> {
        if self.rows_per_partition.is_empty() {
            return Err(Error::InvalidInput("--rows: name at least one size".into()));
        }
        if let Some(n) = self
            .rows_per_partition
            .iter()
            .find(|&&n| !(MIN_ROWS_PER_PARTITION..=MAX_TOTAL_ROWS).contains(&n))
        {
            return Err(Error::InvalidInput(format!(
                "--rows {n} is not in {MIN_ROWS_PER_PARTITION}..={MAX_TOTAL_ROWS}"
            )));
        }
        let total = self
            .rows_per_partition
            .iter()
            .fold(0u64, |t, &n| t.saturating_add(n));
        if total > MAX_TOTAL_ROWS {
            return Err(Error::InvalidInput(format!(
                "--rows add up to {total} rows, more than {MAX_TOTAL_ROWS}: every size is held \
                 in memory at once"
            )));
        }
        if self.min_millis_per_case > MAX_MILLIS_PER_CASE {
            return Err(Error::InvalidInput(format!(
                "--min-millis {} is more than {MAX_MILLIS_PER_CASE}",
                self.min_millis_per_case
            )));
        }
        Ok(())
    }
}

/// Runs every size in a fresh database under `dir` (which must be empty or
/// absent; it is left in place for the caller to remove).
pub fn run(dir: &Path, opts: &SliceBenchOptions) -> Result<SliceBenchReport> {
    opts.validate()?;
    let mut runs = Vec::new();
    for (i, &n) in opts.rows_per_partition.iter().enumerate() {
        runs.push(open_and_load(&dir.join(format!("run-{i}-{n}")), n)?);
    }
    for (_, table, n) in &runs {
        let view = table.view();
        let in_memtable = view.memtables.iter().map(|m| m.cell_count()).sum::<u64>();
        if !view.sstables().is_empty() || in_memtable != *n {
            return Err(Error::InvalidInput(format!(
                "memtable case: expected {n} cells in the memtable and no sstable, found {in_memtable} and {} sstables",
                view.sstables().len()
            )));
        }
    }
    let mut report = SliceBenchReport::default();
    report.cases.extend(measure(&runs, "memtable", opts)?);
    for (_, table, _) in &runs {
        table.flush()?;
        let view = table.view();
        if view.sstables().len() != 1 || view.memtables.iter().any(|m| !m.is_empty()) {
            return Err(Error::InvalidInput(format!(
                "sstable case: expected one sstable and empty memtables, found {} sstables",
                view.sstables().len()
            )));
        }
    }
    report.cases.extend(measure(&runs, "sstable", opts)?);
    for (db, _, _) in runs {
        db.close()?;
    }
    Ok(report)
}

fn open_and_load(dir: &Path, n: u64) -> Result<(Database, Arc<Table>, u64)> {
    let mut db_opts = DbOptions::new(SimClock::new(1_700_000_000_000_000));
    // No commit log (nothing here is about durability) and no background
    // compaction (one sstable is flushed and must stay as it is).
    db_opts.commitlog = None;
    // Every slice is measured reading from the file (its bytes read are the
    // figure): no chunk cache in front.
    db_opts.chunk_cache_bytes = 0;
    db_opts.concurrent_compactors = 0;
    db_opts.purpose = "strata bench slice".to_string();
    let db = Database::open(dir, db_opts)?;
    db.create_keyspace("bench")?;
    // 4 GiB: far above a million 32-byte rows, so nothing flushes mid-load.
    let table = db.create_table_cql(
        "CREATE TABLE bench.ts (k int, t bigint, v blob, PRIMARY KEY (k, t)) \
         WITH CLUSTERING ORDER BY (t DESC) AND memtable_flush_threshold_mb = 4096",
    )?;
    load(&table, n)?;
    Ok((db, table, n))
}

fn load(table: &Arc<Table>, n: u64) -> Result<()> {
    let schema = table.schema();
    let value = Value::Blob(vec![0x5a; VALUE_BYTES]);
    let wo = WriteOptions::default();
    let mut t = 0u64;
    while t < n {
        let end = (t + LOAD_BATCH_ROWS as u64).min(n);
        let mut batch: Option<PartitionUpdate> = None;
        let mut rows = Vec::with_capacity(LOAD_BATCH_ROWS);
        for ts in t..end {
            let u = schema.insert(
                &[
                    ("k", Value::Int(1)),
                    ("t", Value::BigInt(ts as i64)),
                    ("v", value.clone()),
                ],
                &wo,
                1_700_000_000_000_000 + ts as i64,
            )?;
            rows.extend(u.rows.iter().cloned());
            if batch.is_none() {
                batch = Some(PartitionUpdate::new(u.key.clone()));
            }
        }
        if let Some(mut b) = batch {
            rows.sort_by(|a, b| a.clustering.cmp(&b.clustering));
            b.rows = rows;
            table.apply(&b)?;
        }
        t = end;
    }
    Ok(())
}

/// The clustering bytes of row `t`.
fn ck(table: &Table, t: u64) -> Result<Vec<u8>> {
    table.schema().encode_clustering(&[Value::BigInt(t as i64)])
}

/// One slice: (position, direction, range, reversed, t of its first and last row).
type Slice = (
    &'static str,
    &'static str,
    ClusteringRange,
    bool,
    (u64, u64),
);

fn slices(table: &Table, n: u64) -> Result<Vec<Slice>> {
    let mid = n / 2;
    let ten = SLICE_ROWS as u64;
    Ok(vec![
        (
            "newest",
            "forward",
            ClusteringRange::ALL,
            false,
            (n - 1, n - ten),
        ),
        (
            "newest",
            "reverse",
            ClusteringRange {
                start: ClusteringBound::UNBOUNDED,
                end: ClusteringBound::inclusive(ck(table, n - ten)?),
            },
            true,
            (n - ten, n - 1),
        ),
        (
            "middle",
            "forward",
            ClusteringRange {
                start: ClusteringBound::inclusive(ck(table, mid)?),
                end: ClusteringBound::UNBOUNDED,
            },
            false,
            (mid, mid - ten + 1),
        ),
        (
            "middle",
            "reverse",
            ClusteringRange {
                start: ClusteringBound::UNBOUNDED,
                end: ClusteringBound::inclusive(ck(table, mid)?),
            },
            true,
            (mid, mid + ten - 1),
        ),
    ])
}

/// One round of one case: reads until `budget` has passed; (reads, seconds).
fn round(
    table: &Table,
    n: u64,
    source: &str,
    slice: &Slice,
    budget: Duration,
) -> Result<(u64, f64)> {
    let (position, direction, range, reversed, (first, last)) = slice;
    let key: DecoratedKey = table.schema().decorated_key(&[Value::Int(1)])?;
    let expect = (Some(ck(table, *first)?), Some(ck(table, *last)?));
    let started = Instant::now();
    let mut reads = 0u64;
    while reads < MIN_READS_PER_CASE || started.elapsed() < budget {
        let r = table.read(&key, range, *reversed, SLICE_ROWS)?;
        let got = (
            r.rows.first().map(|r| r.clustering.clone()),
            r.rows.last().map(|r| r.clustering.clone()),
        );
        // Contract 1: a fast wrong answer is an error, not a result.
        if r.rows.len() != SLICE_ROWS || got != expect {
            return Err(Error::InvalidInput(format!(
                "{source} {position} {direction} of {n} rows returned {} rows, not rows {first}..{last}",
                r.rows.len()
            )));
        }
        reads += 1;
    }
    Ok((reads, started.elapsed().as_secs_f64()))
}

fn measure(
    runs: &[(Database, Arc<Table>, u64)],
    source: &'static str,
    opts: &SliceBenchOptions,
) -> Result<Vec<SliceCase>> {
    let budget = Duration::from_millis(opts.min_millis_per_case / ROUNDS);
    let plans: Vec<Vec<Slice>> = runs
        .iter()
        .map(|(_, t, n)| slices(t, *n))
        .collect::<Result<_>>()?;
    // samples[run][slice] = per-round micros per read; reads[run][slice].
    let mut samples = vec![vec![Vec::new(); 4]; runs.len()];
    let mut reads = vec![vec![0u64; 4]; runs.len()];
    for _ in 0..ROUNDS {
        for (r, (_, table, n)) in runs.iter().enumerate() {
            for (c, slice) in plans[r].iter().enumerate() {
                let (count, seconds) = round(table, *n, source, slice, budget)?;
                samples[r][c].push(seconds * 1e6 / count as f64);
                reads[r][c] += count;
            }
        }
    }
    let mut out = Vec::new();
    for (r, (_, _, n)) in runs.iter().enumerate() {
        for (c, (position, direction, ..)) in plans[r].iter().enumerate() {
            let s = &mut samples[r][c];
            s.sort_by(f64::total_cmp);
            let median = s[s.len() / 2];
            out.push(SliceCase {
                rows_per_partition: *n,
                source,
                position,
                direction,
                micros_per_read: (median * 100.0).round() / 100.0,
                reads: reads[r][c],
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn small_run_checks_its_answers() {
        let dir = tempfile::tempdir().unwrap();
        let report = run(
            dir.path(),
            &SliceBenchOptions {
                rows_per_partition: vec![50, 3000],
                min_millis_per_case: 1,
            },
        )
        .unwrap();
        assert_eq!(report.cases.len(), 16);
        assert!(report.cases.iter().all(|c| c.reads >= MIN_READS_PER_CASE));
        assert!(run(
            dir.path(),
            &SliceBenchOptions {
                rows_per_partition: vec![5],
                min_millis_per_case: 1
            }
        )
        .is_err());
    }
}
