//! The time series with a TTL (`timeseries`), issue 15 item 6: points written
//! continuously for several TTLs, each engine configured so that data past its
//! TTL leaves the disk whole, then reads of recent points.
//!
//! Owns: the workload's keys, its write and read loops and the figures only it
//! has (the live points at the end, the recent keys read). Runs in a child
//! process (`main.rs`), one engine on a fresh database, from one thread.
//!
//! # Design
//!
//! Waiting out a production TTL (days) is impossible in a benchmark, so time is
//! compressed: a TTL of `--ts-ttl-seconds` real seconds (default 8), one-second
//! time windows, and points written for `--ts-ttls` TTLs (default 4) of wall
//! clock, so that most of what is written has expired by the end and must have
//! left the disk.
//!
//! - Keys: 16 bytes, the series (big-endian u64, `--ts-series` of them, default
//!   1,000, written round-robin) then the point's time (big-endian microseconds
//!   since the epoch, the wall clock when the write is issued, made unique per
//!   series). Values: 100 bytes, half compressible, as the key-value workloads'.
//! - Strata: `bench.ts (series bigint, t bigint, value blob, PRIMARY KEY
//!   (series, t))`, a partition per series and a row per point, Cassandra's
//!   time-series shape; `TimeWindowCompactionStrategy` with one-minute windows,
//!   `default_time_to_live` and `gc_grace_seconds = 0`. The windows can be no
//!   shorter than a minute, so Strata runs on a clock 60 times faster than the
//!   wall clock (`engines::FastClock`; every "now" in Strata comes from its
//!   injected clock): a window is one real second and the TTL is 60 x
//!   `--ts-ttl-seconds` on that clock. An sstable is dropped whole once every
//!   cell in it has expired and no overlapping sstable holds older data (or
//!   the row-level check clears it), looked for every sixth of a window: a
//!   window's sstable goes when its newest point expires, so up to a window of
//!   expired points stays. Every sstable holds every series, so the
//!   partition's Bloom filter passes them all; a recent read of one point
//!   skips those whose clustering span (format 5's statistics) cannot hold
//!   its time, and so reads the flush that holds it.
//! - RocksDB: FIFO compaction with `ttl`: files stay in L0 and one is deleted
//!   once its newest key is older than the TTL (no size limit, no intra-L0
//!   compaction). Entries are not expired on read: a point stays readable until
//!   its file goes. A point read checks each L0 file's Bloom filter on the
//!   whole key.
//! - fjall: its FIFO strategy with `ttl_seconds`: a segment is dropped once its
//!   creation (its flush) is more than the TTL ago; beyond 20 overlapping
//!   segments in level 0 it merges some (and a merged segment's age restarts).
//! - Every engine: 16 MiB memtables (`engines::SERIES_MEMTABLE_BYTES` says why),
//!   log on without fsync, LZ4, one flush and one compaction thread.
//!
//! The engines do not expire data the same way: Strata per cell (exact, read
//! included) then per sstable; RocksDB and fjall per file only, RocksDB by the
//! file's newest key, fjall by the file's flush time (so up to a memtable's
//! span later). What the figures compare is what reaches the disk and stays.
//!
//! # Measures
//!
//! 1. Writes (`timeseries`): ops/s and latency over the write loop; then
//!    settle (flush, wait for compactions), and over the whole phase write
//!    amplification from the engines' counters and from `wchar`, log included,
//!    against the user bytes written (points x 116).
//! 2. Expiry: after settling, the bytes on disk by kind, and the entries in
//!    the live sstables (`Engine::table_entries`) against the live points, the
//!    points written less than a TTL before: `(entries - live) / live` is the
//!    expired data still on disk, in TTLs (0 when all of it is gone; about
//!    `--ts-ttls` - 1 if nothing were dropped).
//! 3. Recent reads (`timeseries-read`): point gets of keys drawn uniformly from
//!    the points written in the last half TTL of the write loop, at most
//!    `--keys / 10`, every one of which must be found with its 100-byte value.
//!    They stop half a TTL less a second after the write loop's end, when the
//!    oldest of those points still has a second to live (RocksDB keeps file
//!    times in whole seconds), so no engine may have dropped any of them; what
//!    settling took comes out of that time.
//!
//! Invariants:
//! 1. The key and value streams are the same for every engine given a seed,
//!    except the time in the key, which is the wall clock of the write.
//! 2. A recent read that misses, or returns another size, fails the run.

use crate::engines::{self, SeriesOptions};
use crate::{
    fill_value, new_histogram, quantile_us, Measure, Phase, Result, KEY_BYTES, VALUE_BYTES,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::time::{Duration, Instant};
use strata::clock::{Clock, SystemClock};

/// The resolution of the write-time histogram that finds the live points.
const TICK: Duration = Duration::from_millis(10);

#[derive(Clone, Copy, Debug)]
pub struct Config {
    pub ttl_seconds: u32,
    /// The write loop lasts `ttls` TTLs.
    pub ttls: u32,
    pub series: u64,
    /// At most this many recent reads.
    pub reads: u64,
    pub seed: u64,
}

impl Config {
    pub fn validate(&self) -> Result<()> {
        // The recent reads run from the end of settling until a second
        // before the oldest recent point expires, half a TTL after the writes
        // end; fjall's settling alone takes more than a second (it has no
        // "wait for compactions" and polls for a quiet second), so a TTL under
        // 6 s leaves it no time to read.
        if self.ttl_seconds < 6 || self.ttls < 2 || self.series == 0 {
            return Err(
                "--ts-ttl-seconds must be at least 6, --ts-ttls at least 2 and \
                 --ts-series at least 1"
                    .into(),
            );
        }
        Ok(())
    }
}

/// The key of point `t` (microseconds) of `series`.
fn point_key(series: u64, t_micros: i64) -> [u8; KEY_BYTES] {
    let mut k = [0u8; KEY_BYTES];
    k[..8].copy_from_slice(&series.to_be_bytes());
    k[8..].copy_from_slice(&t_micros.to_be_bytes());
    k
}

/// Runs the workload on a fresh database of `engine` in `dir`: the
/// `timeseries` (writes) and `timeseries-read` measures.
pub fn run(engine: &str, dir: &Path, c: &Config) -> Result<Vec<(String, Measure)>> {
    c.validate()?;
    let ttl = Duration::from_secs(u64::from(c.ttl_seconds));
    let write_for = ttl * c.ttls;
    let recent_from = write_for - ttl / 2;

    let phase = Phase::start(engine, None, dir)?;
    let mut db = engines::open_series(
        engine,
        dir,
        &SeriesOptions {
            ttl_seconds: c.ttl_seconds,
        },
    )?;
    let before = db.writes();
    let mut hist = new_histogram()?;
    let mut value = [0u8; VALUE_BYTES];
    let mut last_t = vec![i64::MIN; c.series as usize];
    // The points of the last half TTL, in write order from `recent_first`
    // (their series follow from the round-robin): the recent reads' keys.
    let mut recent: Vec<i64> = Vec::new();
    let mut recent_first = 0u64;
    // Points written per TICK since the start: the live points at any instant.
    let mut per_tick: Vec<u64> = Vec::new();
    let origin_micros = SystemClock::new().now_micros();
    let started = Instant::now();
    let mut i = 0u64;
    loop {
        let t0 = Instant::now();
        let elapsed = t0 - started;
        if elapsed >= write_for {
            break;
        }
        let series = i % c.series;
        let slot = &mut last_t[series as usize];
        let t = (origin_micros + elapsed.as_micros() as i64).max(slot.saturating_add(1));
        *slot = t;
        fill_value(&mut value, c.seed, i, 0);
        db.put(&point_key(series, t), &value)?;
        hist.saturating_record(t0.elapsed().as_nanos() as u64);
        if elapsed >= recent_from {
            if recent.is_empty() {
                recent_first = i;
            }
            recent.push(t);
        }
        let tick = (elapsed.as_nanos() / TICK.as_nanos()) as usize;
        if per_tick.len() <= tick {
            per_tick.resize(tick + 1, 0);
        }
        per_tick[tick] += 1;
        i += 1;
    }
    let seconds = started.elapsed().as_secs_f64();
    let settle_started = Instant::now();
    db.settle()?;
    let settle_seconds = settle_started.elapsed().as_secs_f64();
    let after = db.writes();
    let mut writes = Measure {
        ops: i,
        seconds,
        p50_us: quantile_us(&hist, 0.50),
        p99_us: quantile_us(&hist, 0.99),
        settle_seconds,
        engine_written: after.since(&before),
        ..Measure::default()
    };
    // Live: written less than a TTL before the disk is measured (the tick
    // straddling the cutoff counts whole: at most 10 ms of points).
    let cutoff = started.elapsed().saturating_sub(ttl);
    let first_live_tick = (cutoff.as_nanos() / TICK.as_nanos()) as usize;
    writes.live_ops = Some(per_tick.iter().skip(first_live_tick).sum());
    phase.finish(&*db, dir, &mut writes)?;

    // Recent reads, until a second before the oldest recent point expires.
    let deadline = started + recent_from + ttl - Duration::from_secs(1);
    let wanted = (c.reads as usize).min(recent.len());
    let phase = Phase::start(engine, Some(&*db), dir)?;
    let mut rng = ChaCha8Rng::seed_from_u64(c.seed);
    let mut hist = new_histogram()?;
    let mut done = 0u64;
    let read_started = Instant::now();
    while (done as usize) < wanted {
        if done.is_multiple_of(64) && Instant::now() >= deadline {
            break;
        }
        let j = rng.gen_range(0..recent.len());
        let series = (recent_first + j as u64) % c.series;
        let key = point_key(series, recent[j]);
        let t0 = Instant::now();
        let got = db.get(&key)?;
        hist.saturating_record(t0.elapsed().as_nanos() as u64);
        match got {
            Some(VALUE_BYTES) => done += 1,
            Some(n) => {
                return Err(format!(
                    "{engine}: point ({series}, {}) has a value of {n} bytes, not {VALUE_BYTES}",
                    recent[j]
                )
                .into())
            }
            None => {
                return Err(format!(
                    "{engine}: point ({series}, {}), written {:.1} s before the read (TTL {} s), \
                     not found",
                    recent[j],
                    (SystemClock::new().now_micros() - recent[j]) as f64 / 1e6,
                    c.ttl_seconds
                )
                .into())
            }
        }
    }
    if done == 0 {
        return Err(format!(
            "{engine}: settling took {settle_seconds:.1} s: no time was left to read recent \
             points before they expire (raise --ts-ttl-seconds)"
        )
        .into());
    }
    let mut reads = Measure {
        ops: done,
        seconds: read_started.elapsed().as_secs_f64(),
        p50_us: quantile_us(&hist, 0.50),
        p99_us: quantile_us(&hist, 0.99),
        found: done,
        ..Measure::default()
    };
    phase.finish(&*db, dir, &mut reads)?;
    db.close()?;
    std::fs::remove_dir_all(dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    Ok(vec![
        ("timeseries".to_string(), writes),
        ("timeseries-read".to_string(), reads),
    ])
}
