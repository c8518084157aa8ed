//! Seed 003's time-series test in simulated time (`strata stress timeseries`,
//! `strata bench timeseries`): write-only ingest with a default TTL, then 10%
//! "most recent N" reads added, then cold reads added; the same input under
//! DTCS, TWCS, STCS and LCS, and the out-of-order variant (a fraction of writes
//! carrying old timestamps) with and without time-window segregation.
//!
//! Owns: the table shape, the generator, the simulated-time loop and its
//! measurements. The caller opens nothing; [`run`] creates a database in the
//! directory it is given (which must be empty), [`run_bench`] one per run.
//!
//! The loop: the database runs on a [`SimClock`] with no commit log and no
//! background compactors. Each write advances simulated time by
//! `1 / rows_per_second`; at every `flush_seconds` the memtable is flushed and
//! compaction runs on the same thread until the strategy has nothing to do
//! (`Table::compact_until_idle`), so every run of the same configuration does
//! exactly the same I/O. Wall time is only measured: the operation rate of an
//! interval is its operations over the wall time it took, compaction included,
//! which is what makes the seed's mirror image (operation rate against
//! compaction load) visible on one thread.
//!
//! Table: `ts.events (series int, t bigint, v blob, PRIMARY KEY (series, t))
//! WITH CLUSTERING ORDER BY (t DESC)` with `default_time_to_live`. Row `t` is
//! the event time in microseconds and every write carries it as its timestamp
//! (`USING TIMESTAMP`), as a collector replaying events would; a late write
//! (repair, hints) is an event from up to `late_max_age_seconds` ago, with that
//! old timestamp, and its TTL counts from its arrival.
//!
//! Invariants:
//! 1. Deterministic: the series, late writes and reads come from one ChaCha8
//!    stream seeded by `seed`; only wall-clock figures differ between runs.
//! 2. Every figure in bytes comes from the engine's own I/O counters, live set
//!    and compaction history, never from an estimate (except `live_bytes`, the
//!    flush bytes of the last TTL, named as such).
//! 3. A read is checked: a "most recent N" read returns rows in descending
//!    event time, none older than the TTL allows.

use crate::charts::{draw_line_chart, draw_line_chart_with, ChartExtras, LineChart, RightAxis};
use hdrhistogram::Histogram;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::{BTreeMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use strata::clock::{Clock, SimClock};
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::fs::IoCause;
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;
use strata::{Error, Result};

const DAY: f64 = 86_400.0;
/// Compaction tasks one flush may set off before the run is declared stuck (a
/// strategy that never settles is a bug to report, not to wait out).
const MAX_TASKS_PER_FLUSH: usize = 10_000;
/// Simulated start: 2026-01-05, after `SimClock::fixed()`.
const START_MICROS: i64 = 1_767_571_200_000_000;

/// One run's shape (`strata stress timeseries` options, one to one).
#[derive(Clone, Debug, Serialize)]
pub struct TimeseriesConfig {
    /// A label for the run (the strategy, in `bench timeseries`).
    pub label: String,
    /// The `compaction = {...}` map body, e.g. `'class': 'TimeWindowCompactionStrategy'`.
    pub compaction: String,
    /// Partitions (one per series).
    pub series: u32,
    /// Simulated ingest rate, rows per second over all series.
    pub rows_per_second: f64,
    pub value_size: usize,
    pub ttl_seconds: u32,
    pub gc_grace_seconds: u32,
    /// Write-only phase, then reads of recent data added, then cold reads added.
    pub write_days: f64,
    pub recent_read_days: f64,
    pub cold_read_days: f64,
    /// Share of operations that are "most recent N" reads once that phase starts.
    pub recent_read_fraction: f64,
    /// Share of operations that are cold reads once that phase starts.
    pub cold_read_fraction: f64,
    /// Rows a read returns at most (the N of "most recent N").
    pub read_rows: usize,
    /// Share of writes that are late, with old timestamps.
    pub late_fraction: f64,
    /// Late writes are events from 1 hour to this far in the past.
    pub late_max_age_seconds: u64,
    /// Simulated seconds between flushes (compaction runs after each).
    pub flush_seconds: u64,
    /// Simulated seconds per sample of the time series.
    pub sample_seconds: u64,
    pub seed: u64,
}

impl Default for TimeseriesConfig {
    fn default() -> Self {
        TimeseriesConfig {
            label: "TWCS".into(),
            compaction: twcs_options(),
            series: 100,
            rows_per_second: 0.5,
            value_size: 64,
            ttl_seconds: 4 * 86_400,
            gc_grace_seconds: 3_600,
            write_days: 14.0,
            recent_read_days: 3.0,
            cold_read_days: 3.0,
            recent_read_fraction: 0.10,
            cold_read_fraction: 0.01,
            read_rows: 10,
            late_fraction: 0.0,
            late_max_age_seconds: 2 * 86_400,
            flush_seconds: 3_600,
            sample_seconds: 6 * 3_600,
            seed: 3,
        }
    }
}

/// TWCS for the default scale: 6-hour windows, 16 per TTL of 4 days.
pub fn twcs_options() -> String {
    "'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', \
     'compaction_window_size': 6"
        .into()
}

/// DTCS as in the seed's test: `max_sstable_age_days` 1, windows from an hour
/// (one flush) to a day.
pub fn dtcs_options() -> String {
    "'class': 'DateTieredCompactionStrategy', 'base_time_seconds': 3600, \
     'max_window_size_seconds': 86400, 'max_sstable_age_days': 1"
        .into()
}

pub fn stcs_options() -> String {
    "'class': 'SizeTieredCompactionStrategy'".into()
}

/// LCS with sstables of 1 MiB: a few flushes' worth at the default scale.
pub fn lcs_options() -> String {
    "'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 1, 'fanout_size': 10".into()
}

impl TimeseriesConfig {
    /// Bounds checked before any work (module invariant: bad input names the option).
    pub fn validate(&self) -> Result<()> {
        let bad = |what: &str| Err(Error::InvalidInput(what.to_string()));
        if !(1..=1_000_000).contains(&self.series) {
            return bad("--series must be between 1 and 1000000");
        }
        if !(self.rows_per_second > 0.0 && self.rows_per_second <= 1e6) {
            return bad("--rows-per-second must be in (0, 1000000]");
        }
        if self.value_size > 1 << 20 {
            return bad("--value-size must be at most 1 MiB");
        }
        if self.ttl_seconds == 0 {
            return bad("--ttl must be positive: the workload is about expiry");
        }
        for (v, name) in [
            (self.write_days, "--write-days"),
            (self.recent_read_days, "--recent-read-days"),
            (self.cold_read_days, "--cold-read-days"),
        ] {
            if !(0.0..=3650.0).contains(&v) {
                return bad(&format!("{name} must be between 0 and 3650"));
            }
        }
        for (v, name) in [
            (self.recent_read_fraction, "--recent-read-fraction"),
            (self.cold_read_fraction, "--cold-read-fraction"),
            (self.late_fraction, "--late-fraction"),
        ] {
            if !(0.0..=0.9).contains(&v) {
                return bad(&format!("{name} must be between 0 and 0.9"));
            }
        }
        if self.recent_read_fraction + self.cold_read_fraction > 0.9 {
            return bad("read fractions must leave at least 10% writes");
        }
        if !(1..=10_000).contains(&self.read_rows) {
            return bad("--read-rows must be between 1 and 10000");
        }
        if self.late_max_age_seconds < 3_600 {
            return bad("--late-max-age must be at least an hour");
        }
        if self.flush_seconds == 0 || self.sample_seconds < self.flush_seconds {
            return bad("--flush-seconds must be positive and at most --sample-seconds");
        }
        let writes = self.rows_per_second * self.total_days() * DAY;
        if writes > 200_000_000.0 {
            return bad("the run would write more than 200 million rows: lower the rate or days");
        }
        Ok(())
    }

    pub fn total_days(&self) -> f64 {
        self.write_days + self.recent_read_days + self.cold_read_days
    }
}

/// Percentiles of one interval, microseconds.
#[derive(Clone, Debug, Default, Serialize)]
pub struct Percentiles {
    pub p50: f64,
    pub p75: f64,
    pub p90: f64,
    pub p99: f64,
}

impl Percentiles {
    fn of(h: &Histogram<u64>) -> Percentiles {
        if h.is_empty() {
            return Percentiles::default();
        }
        Percentiles {
            p50: h.value_at_quantile(0.50) as f64,
            p75: h.value_at_quantile(0.75) as f64,
            p90: h.value_at_quantile(0.90) as f64,
            p99: h.value_at_quantile(0.99) as f64,
        }
    }
}

/// One interval of the run.
#[derive(Clone, Debug, Serialize)]
pub struct Sample {
    /// Simulated days since the start, at the end of the interval.
    pub day: f64,
    pub writes: u64,
    pub reads: u64,
    /// Operations per wall second, compaction time included.
    pub ops_per_wall_second: f64,
    pub flush_bytes: u64,
    pub compaction_bytes_written: u64,
    /// Flush bytes of the last TTL: the data that has not expired yet.
    pub live_bytes: u64,
    pub disk_bytes: u64,
    pub sstables: usize,
    pub write_latency_us: Percentiles,
    pub read_latency_us: Percentiles,
    pub sstables_per_read_p99: u64,
    /// Bytes of fully expired sstables still on disk past their drop time plus
    /// one check interval ([`RunResult::bytes_held_past_expiry`]).
    pub expired_bytes_held: u64,
    /// The strategy's estimated pending compactions once compaction is idle
    /// (`compactionstats`' figure): 0 when it counts only what it would do.
    pub pending_compactions: usize,
    /// TWCS runs: live sstables per closed window (a window older than the
    /// newest one holding data), the average over closed windows; `None` for
    /// other strategies or before a window has closed.
    pub sstables_per_closed_window: Option<f64>,
    /// TWCS runs: the most sstables any closed window holds.
    pub max_sstables_in_a_closed_window: usize,
}

/// One run's outcome.
#[derive(Clone, Debug, Serialize)]
pub struct RunResult {
    pub label: String,
    pub compaction: String,
    pub rows_written: u64,
    pub late_rows_written: u64,
    pub reads: u64,
    pub flush_bytes: u64,
    pub compaction_bytes_written: u64,
    /// (flush + compaction bytes written) / flush bytes.
    pub write_amplification: f64,
    pub compaction_bytes_per_ingested_byte_first_quarter: f64,
    pub compaction_bytes_per_ingested_byte_last_quarter: f64,
    /// Bytes of the sstables dropped whole by expiry (compaction history).
    pub bytes_dropped_by_expiry: u64,
    pub bytes_rewritten_by_compaction: u64,
    pub peak_disk_bytes: u64,
    pub final_disk_bytes: u64,
    pub read_latency_ms_p99: f64,
    pub sstables_per_read_p99: u64,
    /// "Most recent N" reads: sstables touched (p99) and latency (p50, ms) in
    /// the first and the last day of reads: the seed's flat read latency.
    pub recent_read_sstables_p99_first_day: u64,
    pub recent_read_sstables_p99_last_day: u64,
    pub recent_read_latency_ms_p50_first_day: f64,
    pub recent_read_latency_ms_p50_last_day: f64,
    /// Largest amount of fully expired data on disk at a sample, counted once it
    /// is one check interval (and one flush interval, when compaction runs)
    /// past the moment it could have been dropped.
    pub bytes_held_past_expiry: u64,
    /// Distinct sstables ever counted in `bytes_held_past_expiry`.
    pub expired_sstables_blocked: usize,
    /// The largest [`Sample::pending_compactions`] of the run.
    pub pending_compactions_max: usize,
    /// TWCS runs: [`Sample::sstables_per_closed_window`] averaged over the
    /// samples of the write phase's second half (steady state); `None` for
    /// other strategies.
    pub sstables_per_closed_window: Option<f64>,
    /// TWCS runs: the largest [`Sample::max_sstables_in_a_closed_window`].
    pub max_sstables_in_a_closed_window: usize,
    pub wall_seconds: f64,
    pub samples: Vec<Sample>,
}

fn hist() -> Result<Histogram<u64>> {
    Histogram::new_with_bounds(1, 60_000_000, 2)
        .map_err(|e| Error::InvalidInput(format!("histogram: {e}")))
}

fn record(h: &mut Histogram<u64>, v: u64) {
    // Saturates at the bound rather than failing a run over one outlier.
    h.saturating_record(v.max(1));
}

fn create(db: &Database, cfg: &TimeseriesConfig) -> Result<Arc<Table>> {
    db.create_table_cql(&format!(
        "CREATE TABLE ts.events (series int, t bigint, v blob, PRIMARY KEY (series, t)) \
         WITH CLUSTERING ORDER BY (t DESC) AND default_time_to_live = {} \
         AND gc_grace_seconds = {} AND compaction = {{{}}} \
         AND compression = {{'class': 'LZ4Compressor'}} AND memtable_flush_threshold_mb = 4096",
        cfg.ttl_seconds, cfg.gc_grace_seconds, cfg.compaction
    ))
}

/// How often the run's strategy looks for fully expired sstables, from its
/// parsed options: TWCS and DTCS every `expired_sstable_check_frequency_seconds`,
/// the others at every decision (0).
fn check_interval_seconds(compaction: &str) -> Result<i64> {
    use strata::options::{CompactionClass, TableOptions};
    let options = TableOptions::parse(&format!("compaction = {{{compaction}}}"))?.compaction;
    Ok(match options.class() {
        CompactionClass::TimeWindowCompactionStrategy => {
            options.twcs().expired_sstable_check_frequency_seconds as i64
        }
        CompactionClass::DateTieredCompactionStrategy => {
            options.dtcs().expired_sstable_check_frequency_seconds as i64
        }
        _ => 0,
    })
}

/// The window length of a TWCS run in its timestamp units (microseconds
/// here), `None` for other strategies: what the per-window figures group by.
fn twcs_window_micros(compaction: &str) -> Result<Option<i64>> {
    use strata::options::{CompactionClass, TableOptions};
    let options = TableOptions::parse(&format!("compaction = {{{compaction}}}"))?.compaction;
    Ok(match options.class() {
        CompactionClass::TimeWindowCompactionStrategy => {
            Some((options.twcs().window_seconds() as i64).saturating_mul(1_000_000))
        }
        _ => None,
    })
}

/// Sstables per closed window (TWCS): windows by each sstable's newest write,
/// the newest window is the current one. Returns (average, most) over the
/// closed windows, `None` when none has closed.
fn closed_window_counts(maxima_micros: &[i64], window_micros: i64) -> Option<(f64, usize)> {
    let mut per: BTreeMap<i64, usize> = BTreeMap::new();
    for &t in maxima_micros {
        *per.entry(t.div_euclid(window_micros.max(1))).or_default() += 1;
    }
    let newest = *per.keys().next_back()?;
    let closed: Vec<usize> = per
        .iter()
        .filter(|(&w, _)| w < newest)
        .map(|(_, &n)| n)
        .collect();
    if closed.is_empty() {
        return None;
    }
    let most = closed.iter().copied().max().unwrap_or(0);
    Some((
        closed.iter().sum::<usize>() as f64 / closed.len() as f64,
        most,
    ))
}

/// Runs one configuration in `dir` (empty or absent). `progress` gets the
/// simulated day after each sample.
pub fn run(cfg: &TimeseriesConfig, dir: &Path, progress: &mut dyn FnMut(f64)) -> Result<RunResult> {
    cfg.validate()?;
    let started = Instant::now();
    let clock = SimClock::new(START_MICROS);
    let mut opts = DbOptions::new(clock.clone());
    // The figures documented for this bench predate the chunk cache; reads
    // here are measured from the files.
    opts.chunk_cache_bytes = 0;
    opts.commitlog = None;
    opts.concurrent_compactors = 0;
    opts.compaction_throughput_mb_per_sec = 0;
    let db = Database::open(dir, opts)?;
    let table = create(&db, cfg)?;
    let schema = table.schema();
    let limiter = db.compaction_limiter().clone();
    let mut rng = ChaCha8Rng::seed_from_u64(cfg.seed);
    let value = vec![0x5au8; cfg.value_size];

    let step_micros = 1e6 / cfg.rows_per_second;
    let end_micros = START_MICROS + (cfg.total_days() * DAY * 1e6) as i64;
    let write_end = START_MICROS + (cfg.write_days * DAY * 1e6) as i64;
    let recent_start = write_end;
    let cold_start = write_end + (cfg.recent_read_days * DAY * 1e6) as i64;
    let quarter = (write_end - START_MICROS) / 4;
    let hold_slack_seconds = check_interval_seconds(&cfg.compaction)? + cfg.flush_seconds as i64;
    let window_micros = twcs_window_micros(&cfg.compaction)?;
    let steady_start = START_MICROS + (write_end - START_MICROS) / 2;
    let mut steady_windows: Vec<f64> = Vec::new();
    let (mut pending_max, mut window_max) = (0usize, 0usize);

    let mut sim = START_MICROS as f64;
    let mut next_flush = START_MICROS + cfg.flush_seconds as i64 * 1_000_000;
    let mut next_sample = START_MICROS + cfg.sample_seconds as i64 * 1_000_000;
    let mut last_io = (0u64, 0u64);
    let mut flushes_in_ttl: VecDeque<(i64, u64)> = VecDeque::new();
    let mut interval = Interval::new()?;
    let mut all_reads = hist()?;
    let mut all_sstables = hist()?;
    let mut recent_days: BTreeMap<i64, (Histogram<u64>, Histogram<u64>)> = BTreeMap::new();
    let mut quarters = [(0u64, 0u64); 4];
    let mut samples = Vec::new();
    let (mut rows, mut late_rows, mut reads) = (0u64, 0u64, 0u64);
    let (mut peak_disk, mut held_peak) = (0u64, 0u64);
    let mut held_ids: HashSet<u64> = HashSet::new();

    while (sim as i64) < end_micros {
        let now = sim as i64;
        clock.set_micros(now);
        let roll: f64 = rng.gen();
        let recent = now >= recent_start && roll < cfg.recent_read_fraction;
        let cold = now >= cold_start
            && !recent
            && roll < cfg.recent_read_fraction + cfg.cold_read_fraction;
        let series = rng.gen_range(0..cfg.series) as i32;
        let key = schema.decorated_key(&[Value::Int(series)])?;
        if recent || cold {
            let range = if recent {
                ClusteringRange::ALL
            } else {
                // A slice from a random point of the retained data, backwards.
                let back = rng.gen_range(0..cfg.ttl_seconds as i64) * 1_000_000;
                schema.clustering_range((&[Value::BigInt(now - back)], true), (&[], true))?
            };
            let t0 = Instant::now();
            let r = table.read(&key, &range, false, cfg.read_rows)?;
            let us = t0.elapsed().as_micros() as u64;
            check_read(
                &schema,
                &r.rows,
                now,
                cfg.ttl_seconds,
                cfg.late_max_age_seconds,
            )?;
            record(&mut interval.reads, us);
            record(&mut all_reads, us);
            record(&mut interval.sstables, r.sstables_read as u64);
            record(&mut all_sstables, r.sstables_read as u64);
            if recent {
                let day = (now - recent_start) / (DAY as i64 * 1_000_000);
                let (lat, sst) = match recent_days.entry(day) {
                    std::collections::btree_map::Entry::Occupied(e) => e.into_mut(),
                    std::collections::btree_map::Entry::Vacant(v) => v.insert((hist()?, hist()?)),
                };
                record(lat, us);
                record(sst, r.sstables_read as u64);
            }
            reads += 1;
            interval.reads_n += 1;
            continue;
        }
        let late = cfg.late_fraction > 0.0 && rng.gen_bool(cfg.late_fraction);
        let event = if late {
            // Microsecond ages: a late event is a distinct row. (Whole seconds
            // put late events on the writes' 2-second grid, so some re-wrote an
            // existing row with an equal timestamp, which the expired original
            // rightly keeps shadowed: not the case this run measures.)
            let age = rng.gen_range(3_600_000_000..=cfg.late_max_age_seconds as i64 * 1_000_000);
            late_rows += 1;
            now - age
        } else {
            now
        };
        let t0 = Instant::now();
        table.insert(
            &[
                ("series", Value::Int(series)),
                ("t", Value::BigInt(event)),
                ("v", Value::Blob(value.clone())),
            ],
            &WriteOptions {
                timestamp_micros: Some(event),
                ttl_seconds: None,
            },
        )?;
        record(&mut interval.writes, t0.elapsed().as_micros() as u64);
        rows += 1;
        interval.writes_n += 1;
        sim += step_micros;

        if now >= next_flush {
            next_flush += cfg.flush_seconds as i64 * 1_000_000;
            let before = table.io().written(IoCause::Flush);
            table.flush()?;
            flushes_in_ttl.push_back((now, table.io().written(IoCause::Flush) - before));
            table.compact_until_idle(&limiter, MAX_TASKS_PER_FLUSH)?;
        }
        if now >= next_sample {
            next_sample += cfg.sample_seconds as i64 * 1_000_000;
            let (f, c) = (
                table.io().written(IoCause::Flush),
                table.io().written(IoCause::Compaction),
            );
            let (df, dc) = (f - last_io.0, c - last_io.1);
            last_io = (f, c);
            if now < write_end {
                let q = (((now - START_MICROS) / quarter.max(1)) as usize).min(3);
                quarters[q].0 += df;
                quarters[q].1 += dc;
            }
            while flushes_in_ttl
                .front()
                .is_some_and(|(t, _)| *t < now - cfg.ttl_seconds as i64 * 1_000_000)
            {
                flushes_in_ttl.pop_front();
            }
            let view = table.view();
            let now_s = clock.now_seconds();
            let mut disk = 0u64;
            let mut held = 0u64;
            for s in view.sstables().iter() {
                disk += s.file_size();
                let droppable_at = s
                    .stats()
                    .max_local_deletion_seconds
                    .saturating_add(cfg.gc_grace_seconds as i64);
                if droppable_at.saturating_add(hold_slack_seconds) < now_s {
                    held += s.file_size();
                    held_ids.insert(s.id());
                }
            }
            peak_disk = peak_disk.max(disk);
            held_peak = held_peak.max(held);
            let pending = table.pending_compaction_tasks();
            pending_max = pending_max.max(pending);
            let windows = window_micros.and_then(|w| {
                let maxima: Vec<i64> = view
                    .sstables()
                    .iter()
                    .map(|s| s.stats().max_timestamp_micros)
                    .collect();
                closed_window_counts(&maxima, w)
            });
            if let Some((mean, most)) = windows {
                window_max = window_max.max(most);
                if now >= steady_start && now < write_end {
                    steady_windows.push(mean);
                }
            }
            let wall = interval.started.elapsed().as_secs_f64().max(1e-9);
            samples.push(Sample {
                day: (now - START_MICROS) as f64 / (DAY * 1e6),
                writes: interval.writes_n,
                reads: interval.reads_n,
                ops_per_wall_second: (interval.writes_n + interval.reads_n) as f64 / wall,
                flush_bytes: df,
                compaction_bytes_written: dc,
                live_bytes: flushes_in_ttl.iter().map(|(_, b)| b).sum(),
                disk_bytes: disk,
                sstables: view.sstables().len(),
                write_latency_us: Percentiles::of(&interval.writes),
                read_latency_us: Percentiles::of(&interval.reads),
                sstables_per_read_p99: if interval.sstables.is_empty() {
                    0
                } else {
                    interval.sstables.value_at_quantile(0.99)
                },
                expired_bytes_held: held,
                pending_compactions: pending,
                sstables_per_closed_window: windows.map(|(mean, _)| mean),
                max_sstables_in_a_closed_window: windows.map_or(0, |(_, most)| most),
            });
            interval = Interval::new()?;
            progress((now - START_MICROS) as f64 / (DAY * 1e6));
        }
    }
    let flush_bytes = table.io().written(IoCause::Flush);
    let compaction_bytes = table.io().written(IoCause::Compaction);
    let dropped: u64 = table
        .compaction_history()
        .iter()
        .filter(|r| r.kind == "drop")
        .map(|r| r.bytes_in)
        .sum();
    let final_disk: u64 = table.view().sstables().iter().map(|s| s.file_size()).sum();
    let ratio = |(f, c): (u64, u64)| if f == 0 { 0.0 } else { c as f64 / f as f64 };
    let first_day = recent_days.values().next();
    let last_day = recent_days.values().next_back();
    let p99 = |h: Option<&(Histogram<u64>, Histogram<u64>)>| {
        h.map_or(0, |(_, s)| s.value_at_quantile(0.99))
    };
    let p50_ms = |h: Option<&(Histogram<u64>, Histogram<u64>)>| {
        h.map_or(0.0, |(l, _)| l.value_at_quantile(0.5) as f64 / 1000.0)
    };
    let result = RunResult {
        label: cfg.label.clone(),
        compaction: cfg.compaction.clone(),
        rows_written: rows,
        late_rows_written: late_rows,
        reads,
        flush_bytes,
        compaction_bytes_written: compaction_bytes,
        write_amplification: if flush_bytes == 0 {
            0.0
        } else {
            (flush_bytes + compaction_bytes) as f64 / flush_bytes as f64
        },
        compaction_bytes_per_ingested_byte_first_quarter: ratio(quarters[0]),
        compaction_bytes_per_ingested_byte_last_quarter: ratio(quarters[3]),
        bytes_dropped_by_expiry: dropped,
        bytes_rewritten_by_compaction: compaction_bytes,
        peak_disk_bytes: peak_disk.max(final_disk),
        final_disk_bytes: final_disk,
        read_latency_ms_p99: if all_reads.is_empty() {
            0.0
        } else {
            all_reads.value_at_quantile(0.99) as f64 / 1000.0
        },
        sstables_per_read_p99: if all_sstables.is_empty() {
            0
        } else {
            all_sstables.value_at_quantile(0.99)
        },
        recent_read_sstables_p99_first_day: p99(first_day),
        recent_read_sstables_p99_last_day: p99(last_day),
        recent_read_latency_ms_p50_first_day: p50_ms(first_day),
        recent_read_latency_ms_p50_last_day: p50_ms(last_day),
        bytes_held_past_expiry: held_peak,
        expired_sstables_blocked: held_ids.len(),
        pending_compactions_max: pending_max,
        sstables_per_closed_window: window_micros.and(
            (!steady_windows.is_empty())
                .then(|| steady_windows.iter().sum::<f64>() / steady_windows.len() as f64),
        ),
        max_sstables_in_a_closed_window: window_max,
        wall_seconds: started.elapsed().as_secs_f64(),
        samples,
    };
    drop(table);
    db.close()?;
    Ok(result)
}

/// Invariant 3: rows newest first and none past the TTL (a late write may be
/// as old as its maximum age but still within its own TTL from arrival).
fn check_read(
    schema: &strata::schema::TableSchema,
    rows: &[strata::data::Row],
    now_micros: i64,
    ttl_seconds: u32,
    late_max_age_seconds: u64,
) -> Result<()> {
    let oldest = now_micros - (ttl_seconds as i64 + late_max_age_seconds as i64) * 1_000_000;
    let mut prev = i64::MAX;
    for r in rows {
        let Some(Value::BigInt(t)) = schema.decode_clustering(&r.clustering)?.into_iter().next()
        else {
            return Err(Error::InvalidInput(
                "timeseries read: a row without its event time".into(),
            ));
        };
        if t >= prev || t < oldest {
            return Err(Error::InvalidInput(format!(
                "timeseries read: event time {t} out of order or expired (previous {prev}, oldest allowed {oldest})"
            )));
        }
        prev = t;
    }
    Ok(())
}

struct Interval {
    started: Instant,
    writes: Histogram<u64>,
    reads: Histogram<u64>,
    sstables: Histogram<u64>,
    writes_n: u64,
    reads_n: u64,
}

impl Interval {
    fn new() -> Result<Interval> {
        Ok(Interval {
            started: Instant::now(),
            writes: hist()?,
            reads: hist()?,
            sstables: hist()?,
            writes_n: 0,
            reads_n: 0,
        })
    }
}

/// `strata bench timeseries`: the four strategies on identical input, then the
/// out-of-order runs.
#[derive(Clone, Debug)]
pub struct BenchConfig {
    /// The shape shared by every run (its `label`, `compaction` and
    /// `late_fraction` are set per run).
    pub base: TimeseriesConfig,
    /// Late-write share of the out-of-order runs (the 1%).
    pub late_fraction: f64,
    /// Where the runs' data directories go (each removed after its run).
    pub work_dir: PathBuf,
    /// Strategies to run, from `DTCS`, `TWCS`, `STCS`, `LCS`.
    pub strategies: Vec<String>,
    /// Also run the out-of-order pair (TWCS with late writes, segregation on and off).
    pub out_of_order: bool,
    /// With the out-of-order pair, also the two mixed runs (segregation on
    /// with the row-level expiry check off, and the reverse), which tell what
    /// each mechanism does alone.
    pub mechanisms: bool,
}

#[derive(Clone, Debug, Serialize)]
pub struct OutOfOrder {
    pub segregation_on: RunResult,
    pub segregation_off: RunResult,
    /// Segregation on, row-level expiry check off (`mechanisms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segregation_only: Option<RunResult>,
    /// Segregation off, row-level expiry check on (`mechanisms`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub row_level_check_only: Option<RunResult>,
}

#[derive(Clone, Debug, Serialize)]
pub struct BenchReport {
    pub config: TimeseriesConfig,
    pub strategies: BTreeMap<String, RunResult>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out_of_order: Option<OutOfOrder>,
}

impl BenchConfig {
    /// Refuses what cannot run, naming the option, before anything is created
    /// (crate invariant 3); [`run_bench`] calls it first.
    pub fn validate(&self) -> Result<()> {
        TimeseriesConfig {
            late_fraction: self.late_fraction,
            ..self.base.clone()
        }
        .validate()?;
        self.runs().map(|_| ())
    }

    /// `(label, compaction options)` of each strategy named.
    fn runs(&self) -> Result<Vec<(String, String)>> {
        self.strategies
            .iter()
            .map(|name| {
                let options = match name.to_ascii_uppercase().as_str() {
                    "DTCS" => dtcs_options(),
                    "TWCS" => twcs_options(),
                    "STCS" => stcs_options(),
                    "LCS" => lcs_options(),
                    other => {
                        return Err(Error::InvalidInput(format!(
                            "--strategies: unknown strategy '{other}' (DTCS, TWCS, STCS, LCS)"
                        )))
                    }
                };
                Ok((name.to_ascii_uppercase(), options))
            })
            .collect()
    }
}

pub fn run_bench(cfg: &BenchConfig, progress: &mut dyn FnMut(&str, f64)) -> Result<BenchReport> {
    cfg.validate()?;
    let mut strategies = BTreeMap::new();
    let runs = cfg.runs()?;
    let mut one = |label: &str, compaction: String, late: f64| -> Result<RunResult> {
        let c = TimeseriesConfig {
            label: label.to_string(),
            compaction,
            late_fraction: late,
            ..cfg.base.clone()
        };
        let dir = cfg
            .work_dir
            .join(format!("timeseries-{}", label.replace(' ', "_")));
        if dir.exists() {
            return Err(Error::InvalidInput(format!(
                "{} exists: bench timeseries needs fresh directories",
                dir.display()
            )));
        }
        let r = run(&c, &dir, &mut |day| progress(label, day));
        // The data is of no use once measured; a failed removal only leaves files.
        let _ = std::fs::remove_dir_all(&dir);
        r
    };
    for (label, options) in runs {
        let r = one(&label, options, 0.0)?;
        strategies.insert(label, r);
    }
    let out_of_order = if cfg.out_of_order {
        let on = one(
            "TWCS late writes, segregation on",
            twcs_options(),
            cfg.late_fraction,
        )?;
        // "Off" is Cassandra's behaviour: one output per flush and merge, and
        // the overlap rule alone deciding drops.
        let off = one(
            "TWCS late writes, segregation off",
            format!(
                "{}, 'split_output_by_window': 'false', 'row_level_expiry_check': 'false'",
                twcs_options()
            ),
            cfg.late_fraction,
        )?;
        let (segregation_only, row_level_check_only) = if cfg.mechanisms {
            (
                Some(one(
                    "TWCS late, segregation only",
                    format!("{}, 'row_level_expiry_check': 'false'", twcs_options()),
                    cfg.late_fraction,
                )?),
                Some(one(
                    "TWCS late, row-level check only",
                    format!("{}, 'split_output_by_window': 'false'", twcs_options()),
                    cfg.late_fraction,
                )?),
            )
        } else {
            (None, None)
        };
        Some(OutOfOrder {
            segregation_on: on,
            segregation_off: off,
            segregation_only,
            row_level_check_only,
        })
    } else {
        None
    };
    Ok(BenchReport {
        config: cfg.base.clone(),
        strategies,
        out_of_order,
    })
}

impl BenchReport {
    /// Every run: the strategies, then the out-of-order pair if run.
    pub fn runs(&self) -> Vec<&RunResult> {
        let mut v: Vec<&RunResult> = self.strategies.values().collect();
        if let Some(o) = &self.out_of_order {
            v.push(&o.segregation_on);
            v.push(&o.segregation_off);
            v.extend(o.segregation_only.iter());
            v.extend(o.row_level_check_only.iter());
        }
        v
    }

    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self).map_err(|e| Error::InvalidInput(format!("json: {e}")))
    }

    /// The summary table, one row per run.
    pub fn text(&self) -> String {
        let mut out = String::from(
            "run                                  WA    compaction/ingest  dropped MB  rewritten MB  peak disk MB  final MB  read p99 ms  sst/read p99  held MB  blocked\n",
        );
        out.push_str("                                        1st q   last q\n");
        let mb = |b: u64| b as f64 / 1e6;
        let mut line = |r: &RunResult| {
            out.push_str(&format!(
                "{:<34} {:>5.2} {:>7.3} {:>8.3} {:>11.1} {:>13.1} {:>13.1} {:>9.1} {:>12.3} {:>13} {:>8.1} {:>8}\n",
                r.label,
                r.write_amplification,
                r.compaction_bytes_per_ingested_byte_first_quarter,
                r.compaction_bytes_per_ingested_byte_last_quarter,
                mb(r.bytes_dropped_by_expiry),
                mb(r.bytes_rewritten_by_compaction),
                mb(r.peak_disk_bytes),
                mb(r.final_disk_bytes),
                r.read_latency_ms_p99,
                r.sstables_per_read_p99,
                mb(r.bytes_held_past_expiry),
                r.expired_sstables_blocked,
            ));
        };
        for r in self.runs() {
            line(r);
        }
        out.push_str(
            "\nrun                                  pending max  sst/closed window  most in one\n",
        );
        for r in self.runs() {
            let per = r
                .sstables_per_closed_window
                .map_or("-".to_string(), |m| format!("{m:.2}"));
            out.push_str(&format!(
                "{:<34} {:>12} {:>18} {:>12}\n",
                r.label, r.pending_compactions_max, per, r.max_sstables_in_a_closed_window
            ));
        }
        out
    }

    /// The charts (SVG) into `dir`: per strategy the seed's mirror image and the
    /// latency percentiles split p75-and-below / p90-and-above; across
    /// strategies disk used, sstable count and sstables per read.
    pub fn write_charts(&self, dir: &Path) -> Result<Vec<PathBuf>> {
        std::fs::create_dir_all(dir).map_err(|e| Error::io(dir, e))?;
        let mut written = Vec::new();
        let days = self.config.total_days();
        let runs = self.runs();
        let file = |name: &str| dir.join(format!("timeseries_{name}.svg"));
        let max_of = |f: &dyn Fn(&Sample) -> f64| {
            runs.iter()
                .flat_map(|r| r.samples.iter().map(f))
                .fold(0.0f64, f64::max)
                .max(1e-9)
                * 1.1
        };
        for r in self.strategies.values() {
            let name = r.label.to_ascii_lowercase();
            let ops_max = r
                .samples
                .iter()
                .map(|s| s.ops_per_wall_second)
                .fold(0.0, f64::max);
            let comp_max = r
                .samples
                .iter()
                .map(|s| s.compaction_bytes_written as f64 / 1e3)
                .fold(0.0, f64::max);
            let path = file(&format!("{name}_ops_and_compaction"));
            // Two units, two axes: operations per wall second on the left,
            // compaction's kilobytes per interval on the right, so neither
            // line is flattened by the other's scale.
            draw_line_chart_with(
                LineChart {
                    path: path.clone(),
                    width: 900,
                    caption: format!(
                        "{}: operation rate and compaction load (the published study's mirror image)",
                        r.label
                    ),
                    x: 0.0..days,
                    y: 0.0..(ops_max * 1.1).max(1.0),
                    x_desc: "simulated day",
                    y_desc: "operations per wall second",
                    x_label: None,
                    series: vec![(
                        "operations per wall second".into(),
                        r.samples
                            .iter()
                            .map(|s| (s.day, s.ops_per_wall_second))
                            .collect(),
                    )],
                },
                ChartExtras {
                    right: Some(RightAxis {
                        y: 0.0..(comp_max * 1.1).max(1.0),
                        y_desc: "compaction KB written per interval".into(),
                        series: vec![(
                            "compaction KB written per interval".into(),
                            r.samples
                                .iter()
                                .map(|s| (s.day, s.compaction_bytes_written as f64 / 1e3))
                                .collect(),
                        )],
                    }),
                    ..ChartExtras::default()
                },
            )?;
            written.push(path);
            for (part, pcts) in [
                ("p75_and_below", ["p50", "p75"]),
                ("p90_and_above", ["p90", "p99"]),
            ] {
                let pick = |p: &Percentiles, which: &str| match which {
                    "p50" => p.p50,
                    "p75" => p.p75,
                    "p90" => p.p90,
                    _ => p.p99,
                };
                let mut series = Vec::new();
                let mut y_max = 1.0f64;
                for which in pcts {
                    for (kind, f) in [("write", true), ("read", false)] {
                        let pts: Vec<(f64, f64)> = r
                            .samples
                            .iter()
                            .filter(|s| f || s.reads > 0)
                            .map(|s| {
                                let p = if f {
                                    &s.write_latency_us
                                } else {
                                    &s.read_latency_us
                                };
                                (s.day, pick(p, which))
                            })
                            .collect();
                        y_max = pts.iter().map(|p| p.1).fold(y_max, f64::max);
                        series.push((format!("{kind} {which}"), pts));
                    }
                }
                let path = file(&format!("{name}_latency_{part}"));
                draw_line_chart(LineChart {
                    path: path.clone(),
                    width: 900,
                    caption: format!(
                        "{}: latency percentiles ({})",
                        r.label,
                        part.replace('_', " ")
                    ),
                    x: 0.0..days,
                    y: 0.0..y_max * 1.1,
                    x_desc: "simulated day",
                    y_desc: "microseconds",
                    x_label: None,
                    series,
                })?;
                written.push(path);
            }
        }
        let across = |name: &str,
                      caption: &str,
                      y_desc: &str,
                      f: &dyn Fn(&Sample) -> f64|
         -> Result<PathBuf> {
            let path = file(name);
            draw_line_chart(LineChart {
                path: path.clone(),
                width: 900,
                caption: caption.to_string(),
                x: 0.0..days,
                y: 0.0..max_of(f),
                x_desc: "simulated day",
                y_desc,
                x_label: None,
                series: runs
                    .iter()
                    .map(|r| {
                        (
                            r.label.clone(),
                            r.samples.iter().map(|s| (s.day, f(s))).collect(),
                        )
                    })
                    .collect(),
            })?;
            Ok(path)
        };
        written.push(across("disk_used", "Disk used", "MB", &|s| {
            s.disk_bytes as f64 / 1e6
        })?);
        written.push(across(
            "live_data",
            "Live data (flush bytes of the last TTL)",
            "MB",
            &|s| s.live_bytes as f64 / 1e6,
        )?);
        written.push(across("sstable_count", "SSTables", "sstables", &|s| {
            s.sstables as f64
        })?);
        written.push(across(
            "sstables_per_read",
            "SSTables touched per read (p99)",
            "sstables",
            &|s| s.sstables_per_read_p99 as f64,
        )?);
        written.push(across(
            "expired_held",
            "Expired data held past its drop time",
            "MB",
            &|s| s.expired_bytes_held as f64 / 1e6,
        )?);
        Ok(written)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> TimeseriesConfig {
        TimeseriesConfig {
            series: 10,
            rows_per_second: 0.05,
            ttl_seconds: 86_400,
            write_days: 3.0,
            recent_read_days: 0.5,
            cold_read_days: 0.5,
            ..TimeseriesConfig::default()
        }
    }

    #[test]
    fn closed_windows_are_those_older_than_the_newest() {
        let w = 10;
        // Windows 0 (two sstables), 1 (one), 3 (newest, three): closed are 0 and 1.
        let maxima = [1, 9, 15, 31, 35, 39];
        assert_eq!(closed_window_counts(&maxima, w), Some((1.5, 2)));
        // Only the current window: nothing closed yet.
        assert_eq!(closed_window_counts(&[31, 35], w), None);
        assert_eq!(closed_window_counts(&[], w), None);
    }

    #[test]
    fn bad_configurations_are_refused_naming_the_option() {
        let cases: Vec<(TimeseriesConfig, &str)> = vec![
            (
                TimeseriesConfig {
                    series: 0,
                    ..small()
                },
                "--series",
            ),
            (
                TimeseriesConfig {
                    rows_per_second: 0.0,
                    ..small()
                },
                "--rows-per-second",
            ),
            (
                TimeseriesConfig {
                    ttl_seconds: 0,
                    ..small()
                },
                "--ttl",
            ),
            (
                TimeseriesConfig {
                    late_fraction: 0.95,
                    ..small()
                },
                "--late-fraction",
            ),
            (
                TimeseriesConfig {
                    recent_read_fraction: 0.5,
                    cold_read_fraction: 0.45,
                    ..small()
                },
                "read fractions",
            ),
            (
                TimeseriesConfig {
                    flush_seconds: 0,
                    ..small()
                },
                "--flush-seconds",
            ),
            (
                TimeseriesConfig {
                    rows_per_second: 1e6,
                    write_days: 3650.0,
                    ..small()
                },
                "200 million",
            ),
        ];
        for (c, needle) in cases {
            let e = c
                .validate()
                .err()
                .unwrap_or_else(|| panic!("{needle} accepted"));
            assert!(e.to_string().contains(needle), "{e}");
        }
        assert!(small().validate().is_ok());
    }

    #[test]
    fn twcs_run_drops_expired_windows_and_disk_stops_growing() {
        let dir = tempfile::tempdir().expect("tempdir");
        let r = run(&small(), &dir.path().join("db"), &mut |_| {}).expect("run");
        assert!(r.rows_written > 10_000, "{}", r.rows_written);
        assert!(r.reads > 0);
        assert!(
            r.bytes_dropped_by_expiry > 0,
            "expired windows dropped whole"
        );
        // After the first TTL (day 1) plus gc grace, disk use levels off: the
        // last day's peak is within a window or two of the second day's.
        let disk_at = |day: f64| {
            r.samples
                .iter()
                .filter(|s| s.day > day - 0.5 && s.day <= day)
                .map(|s| s.disk_bytes)
                .max()
                .unwrap_or(0)
        };
        assert!(
            disk_at(4.0) as f64 <= disk_at(2.0) as f64 * 1.5,
            "{} vs {}",
            disk_at(4.0),
            disk_at(2.0)
        );
        assert_eq!(
            r.bytes_held_past_expiry, 0,
            "nothing blocks expiry without late writes"
        );
    }

    #[test]
    fn expiry_check_interval_is_read_from_the_options() {
        let interval = |c: &str| check_interval_seconds(c).expect("valid options");
        assert_eq!(interval(&twcs_options()), 600);
        assert_eq!(
            interval(&format!(
                "{}, 'expired_sstable_check_frequency_seconds': '60'",
                twcs_options()
            )),
            60
        );
        assert_eq!(
            interval(
                "'class': 'DateTieredCompactionStrategy', 'expired_sstable_check_frequency_seconds': 7"
            ),
            7
        );
        assert_eq!(interval(&stcs_options()), 0, "STCS looks at every decision");
        assert!(check_interval_seconds("'class': 'NoSuchStrategy'").is_err());
    }
}
