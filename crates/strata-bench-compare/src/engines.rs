//! The three engines behind one narrow interface, each configured to the common
//! ground of issue 15 item 6.
//!
//! Owns: each engine's open options, its settle procedure (flush, then wait for
//! compactions) and the reading of its own write counters. The driver
//! (`main.rs`) calls one engine at a time from one thread; each engine runs its
//! own background threads (flush, compaction), which are stopped by `close`.
//!
//! The common ground, and where it is only approximate:
//! 1. Log on, no fsync per write: Strata's commit log in periodic mode (10 s),
//!    RocksDB's WAL with `sync = false`, fjall's journal flushed to the OS
//!    after each write (`manual_journal_persist(false)`) with no fsync thread.
//! 2. LZ4 on every level; 16 KiB blocks (Strata's default chunk, set on the
//!    others); bloom filters of about 10 bits per key (Strata's fp 0.01 is
//!    9.6 bits; RocksDB 10 bits; fjall's default 10 bits).
//! 3. 64 MiB memtables, three of them at most (Strata: the active one plus
//!    `max_pending_flushes` 2; RocksDB `max_write_buffer_number` 3; fjall a
//!    192 MiB write-buffer budget).
//! 4. 128 MiB read cache (Strata's default chunk cache; RocksDB block cache;
//!    fjall's cache). RocksDB's and fjall's hold compressed-or-raw blocks and
//!    index/filter blocks; Strata's holds decompressed chunks only.
//! 5. Leveled compaction everywhere (Strata: `LeveledCompactionStrategy` with
//!    its defaults but for `l0_compaction_trigger` 4, RocksDB's default
//!    `level0_file_num_compaction_trigger`: L0 goes to L1 at four sstables
//!    instead of at one sstable's worth with merges within L0 until then; the
//!    engine `strata-cassandra-l0` is the same engine with Cassandra's rule,
//!    Strata's default), no compaction throughput limit, one flush and one
//!    compaction thread each (the machine has two cores and the driver uses one).
//!
//! The time series ([`open_series`]) keeps 1, 2 and 4 and the threads, with
//! 16 MiB memtables and each engine's compaction for data that expires: Strata
//! TWCS with a default TTL on a clock 60 times faster than the wall clock,
//! RocksDB FIFO with `ttl`, fjall FIFO with `ttl_seconds` (`timeseries.rs`).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::clock::Clock;

pub type BoxError = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, BoxError>;

/// Bytes an engine says it wrote, by cause, since it was opened. `None` where
/// the engine keeps no such counter (fjall keeps none).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct EngineWrites {
    pub log_bytes: Option<u64>,
    pub flush_bytes: Option<u64>,
    pub compaction_bytes: Option<u64>,
}

impl EngineWrites {
    /// What was written between `before` and these counters (`None` where
    /// the engine keeps no such counter).
    pub fn since(&self, before: &EngineWrites) -> EngineWrites {
        let delta = |a: Option<u64>, b: Option<u64>| Some(a?.saturating_sub(b?));
        EngineWrites {
            log_bytes: delta(self.log_bytes, before.log_bytes),
            flush_bytes: delta(self.flush_bytes, before.flush_bytes),
            compaction_bytes: delta(self.compaction_bytes, before.compaction_bytes),
        }
    }

    pub fn total(&self) -> Option<u64> {
        Some(self.log_bytes? + self.flush_bytes? + self.compaction_bytes?)
    }
}

/// The settled sstables' bytes by content, from the engine's own metadata
/// (`None` for engines that do not report it: fjall).
#[derive(Clone, Copy, Debug, Default, serde::Serialize, serde::Deserialize)]
pub struct TableBreakdown {
    /// Data blocks (Strata: chunks) as stored, compressed, checksums included.
    pub data_bytes: u64,
    /// The same data before compression, where the engine keeps it: RocksDB
    /// counts it while writing a table but does not persist it in the table's
    /// properties, so the aggregate it reports for live files is 0.
    pub uncompressed_data_bytes: Option<u64>,
    /// Index blocks (Strata: the partition index; RocksDB: the block index).
    pub index_bytes: u64,
    /// Bloom filters.
    pub filter_bytes: u64,
}

/// What a file in an engine's data directory holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FileKind {
    /// The write-ahead log: Strata's `commitlog/` segments, RocksDB's `*.log`
    /// WAL files, fjall's `journals/`.
    Log,
    /// Sorted tables: Strata's `strata-<id>-Data.db` (docs/FORMAT.md: one file
    /// per sstable, with its index and filter), RocksDB's `*.sst`, fjall's
    /// `partitions/<p>/segments/` (and `blobs/`, unused here).
    Table,
    /// Everything else: manifests, schema, options, RocksDB's text info `LOG`,
    /// lock and marker files, compression dictionaries.
    Other,
}

/// Classifies a file by its path relative to `engine`'s data directory, from
/// each engine's directory layout.
pub fn file_kind(engine: &str, relative: &Path) -> FileKind {
    let first = relative
        .components()
        .next()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .unwrap_or_default();
    let name = relative
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let under = |dir: &str| relative.components().any(|c| c.as_os_str() == dir);
    match engine {
        // An sstable is written as `.tmp` and renamed: a `.tmp` is one in the
        // making (a compaction's output), counted with the tables.
        "strata" | STRATA_CASSANDRA_L0 if first == "commitlog" => FileKind::Log,
        "strata" | STRATA_CASSANDRA_L0
            if name.ends_with("-Data.db") || name.ends_with("-Data.db.tmp") =>
        {
            FileKind::Table
        }
        // `LOG` (RocksDB's text info log) is not `*.log`: the extension is
        // compared case-sensitively on purpose.
        "rocksdb" if name.ends_with(".log") => FileKind::Log,
        "rocksdb" if name.ends_with(".sst") => FileKind::Table,
        "fjall" if first == "journals" => FileKind::Log,
        "fjall" if under("segments") || under("blobs") => FileKind::Table,
        _ => FileKind::Other,
    }
}

/// What one short scan read.
#[derive(Clone, Debug, Default)]
pub struct ScanResult {
    pub entries: usize,
    /// The sum of the values' lengths.
    pub value_bytes: usize,
    /// The last key read (for Strata: the partition key's bytes).
    pub last_key: Option<Vec<u8>>,
}

pub trait Engine {
    /// Writes one key-value pair (for Strata: one partition, one row, one cell).
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()>;
    /// The value's length if the key is found.
    fn get(&mut self, key: &[u8]) -> Result<Option<usize>>;
    /// Reads the (at most) `limit` entries that follow `start` in the engine's
    /// storage order, `start` itself excluded, through a new iterator (Strata:
    /// a new scan) each call: RocksDB and fjall in key order from a seek; Strata
    /// in token order, the partitions after `start`'s (token, key).
    fn scan(&mut self, start: &[u8], limit: usize) -> Result<ScanResult>;
    /// The token the engine orders keys by before their bytes (Strata's
    /// Murmur3 token of the partition key), `None` when keys are ordered by
    /// their bytes alone: what the driver needs to know which entries a scan
    /// must return.
    fn order_token(&self, key: &[u8]) -> Result<Option<i64>>;
    /// Flushes every memtable and waits until no compaction is pending or running.
    fn settle(&mut self) -> Result<()>;
    /// Settles, then compacts every sstable into the fewest the engine's
    /// layout allows (`--compact-before-reads`: reads in equal states).
    fn compact_all(&mut self) -> Result<()>;
    fn writes(&self) -> EngineWrites;
    /// The live sstables' bytes by content (after `settle`).
    fn tables(&self) -> Result<Option<TableBreakdown>>;
    /// Entries in the live sstables (after `settle`, with the memtables
    /// empty): Strata's rows (one per key or point), RocksDB's `# entries`,
    /// fjall's `approximate_len` (its segments' item counts plus the empty
    /// memtable). Stale versions and expired entries count until compaction
    /// or expiry removes them: in the time series, what is left of expired
    /// data.
    fn table_entries(&self) -> Result<u64>;
    /// Live sstables per level, L0 first, up to the deepest non-empty level
    /// (after `settle`); empty where the engine does not say (fjall). What a
    /// read may consult depends on it: every L0 sstable, one per deeper level.
    fn sstables_per_level(&self) -> Result<Vec<u64>> {
        Ok(Vec::new())
    }
    /// Data-block lookups in the read cache so far, `(hits, misses)`:
    /// Strata's chunk cache (data chunks, and index blocks beyond those its
    /// readers pin), RocksDB's `block.cache.data` tickers; `None` where the
    /// engine does not count them (fjall). Equal budgets can still hold
    /// different shares of the data: this says which share each held.
    fn cache_lookups(&self) -> Option<(u64, u64)> {
        None
    }
    fn close(self: Box<Self>) -> Result<()>;
}

pub const MEMTABLE_BYTES: u64 = 64 << 20;
pub const CACHE_BYTES: u64 = 128 << 20;
/// `--log-compression` (Strata's commit log only), set once by a child before
/// it opens its engine.
pub static LOG_COMPRESSION: std::sync::atomic::AtomicBool =
    std::sync::atomic::AtomicBool::new(false);

fn log_compression() -> bool {
    LOG_COMPRESSION.load(std::sync::atomic::Ordering::Relaxed)
}
pub const BLOCK_BYTES: u32 = 16 << 10;
/// Settling longer than this is reported as an error rather than waited out.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);

/// Strata with Cassandra's L0 rule (its default) instead of the harness's
/// `l0_compaction_trigger` 4: an engine of its own, so that both rules run in
/// one invocation (the key-value workloads only).
pub const STRATA_CASSANDRA_L0: &str = "strata-cassandra-l0";

pub fn open(name: &str, dir: &Path) -> Result<Box<dyn Engine>> {
    match name {
        "strata" => Ok(Box::new(StrataEngine::open(dir, None, 4)?)),
        STRATA_CASSANDRA_L0 => Ok(Box::new(StrataEngine::open(dir, None, 0)?)),
        "rocksdb" => Ok(Box::new(RocksEngine::open(dir, None)?)),
        "fjall" => Ok(Box::new(FjallEngine::open(dir, None)?)),
        other => Err(format!(
            "unknown engine '{other}' (strata, {STRATA_CASSANDRA_L0}, rocksdb, fjall)"
        )
        .into()),
    }
}

/// The time-series workload's configuration (`timeseries.rs` has the design).
#[derive(Clone, Copy, Debug)]
pub struct SeriesOptions {
    /// Real (wall-clock) seconds a point lives.
    pub ttl_seconds: u32,
}

/// Memtable size of the time-series databases, every engine. Smaller than the
/// key-value workloads' 64 MiB: at these write rates 64 MiB holds several
/// seconds of points, more than the one-second windows and a large share of
/// the few-second TTL, so each flush would stretch across windows and hold
/// expired data for seconds in every engine; 16 MiB keeps a flush to a
/// fraction of a window, as a production memtable is to an hour-long window.
pub const SERIES_MEMTABLE_BYTES: u64 = 16 << 20;

/// Strata's clock runs this many times faster than the wall clock in the
/// time series: TWCS windows are at least a minute (`compaction_window_unit`
/// is MINUTES, HOURS or DAYS), so a one-minute window on this clock is one
/// real second, and a TTL of `ttl_seconds` real seconds is `60 * ttl_seconds`
/// on it.
pub const SERIES_CLOCK_SPEEDUP: i64 = 60;

/// Opens a fresh database for the time series, keys (series, timestamp)
/// expiring after `o.ttl_seconds`: Strata with TWCS and a default TTL, RocksDB
/// with FIFO compaction and a TTL, fjall with its FIFO strategy and a TTL.
pub fn open_series(name: &str, dir: &Path, o: &SeriesOptions) -> Result<Box<dyn Engine>> {
    match name {
        // The L0 rule is LCS's; the time series is TWCS in both.
        "strata" | STRATA_CASSANDRA_L0 => Ok(Box::new(StrataEngine::open(dir, Some(o), 0)?)),
        "rocksdb" => Ok(Box::new(RocksEngine::open(dir, Some(o))?)),
        "fjall" => Ok(Box::new(FjallEngine::open(dir, Some(o))?)),
        other => Err(format!(
            "unknown engine '{other}' (strata, {STRATA_CASSANDRA_L0}, rocksdb, fjall)"
        )
        .into()),
    }
}

/// A clock `speedup` times faster than the wall clock from its creation:
/// Strata takes every "now" (TTL expiry, gc grace, write timestamps, TWCS
/// windows and expiry checks) from its injected clock (DESIGN.md §3), so on
/// this one its time-window machinery runs at the benchmark's pace. Monotonic,
/// as `Instant` is.
#[derive(Debug)]
struct FastClock {
    origin_micros: i64,
    origin: Instant,
    speedup: i64,
}

impl Clock for FastClock {
    fn now_micros(&self) -> i64 {
        self.origin_micros + self.origin.elapsed().as_micros() as i64 * self.speedup
    }
}

// ---------------------------------------------------------------- Strata

struct StrataEngine {
    db: strata::db::Database,
    table: Arc<strata::table::Table>,
    schema: Arc<strata::schema::TableSchema>,
    clock: Arc<dyn Clock>,
    write_opts: strata::schema::WriteOptions,
    /// The time-series shape: a key is (series, t), a partition per series
    /// with a row per t; otherwise a partition per key.
    series: bool,
}

impl StrataEngine {
    /// `l0_trigger`: the LCS `l0_compaction_trigger` of the key-value table
    /// (0: Cassandra's rule); the time series uses TWCS.
    fn open(dir: &Path, series: Option<&SeriesOptions>, l0_trigger: u32) -> Result<StrataEngine> {
        use strata::commitlog::{CommitLogOptions, SyncMode};
        let clock: Arc<dyn Clock> = match series {
            None => strata::clock::SystemClock::new(),
            Some(_) => Arc::new(FastClock {
                origin_micros: strata::clock::SystemClock::new().now_micros(),
                origin: Instant::now(),
                speedup: SERIES_CLOCK_SPEEDUP,
            }),
        };
        let mut o = strata::db::DbOptions::new(clock.clone());
        o.commitlog = Some(CommitLogOptions {
            sync: SyncMode::Periodic {
                period: Duration::from_secs(10),
            },
            compression: if log_compression() {
                strata::commitlog::LogCompression::Lz4
            } else {
                strata::commitlog::LogCompression::None
            },
            ..CommitLogOptions::default()
        });
        o.compaction_throughput_mb_per_sec = 0;
        o.concurrent_compactors = 1;
        o.chunk_cache_bytes = CACHE_BYTES as usize;
        o.purpose = "strata-bench-compare".to_string();
        let db = strata::db::Database::open(dir, o)?;
        db.create_keyspace("bench")?;
        let common = "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16} \
                      AND bloom_filter_fp_chance = 0.01";
        let table = db.create_table_cql(&match series {
            None => format!(
                "CREATE TABLE bench.kv (key blob PRIMARY KEY, value blob) \
                 WITH compaction = {{'class': 'LeveledCompactionStrategy', \
                 'l0_compaction_trigger': {l0_trigger}}} \
                 AND {common} AND memtable_flush_threshold_mb = {}",
                MEMTABLE_BYTES >> 20
            ),
            // A partition per series, a row per point: Cassandra's time-series
            // shape (and `strata bench timeseries`'s). One-minute windows on
            // the fast clock are one real second; expired sstables are looked
            // for every 10 s of that clock (a sixth of a window, as Cassandra's
            // default 10 minutes is to an hour-long window); gc grace 0, since
            // an expired cell is otherwise kept as a tombstone for
            // gc_grace_seconds before its sstable can be dropped (a TTL-only
            // table has nothing a tombstone must shadow). Drops stay
            // overlap-checked (unsafe_aggressive_sstable_expiration false, the
            // default).
            Some(s) => format!(
                "CREATE TABLE bench.ts (series bigint, t bigint, value blob, \
                 PRIMARY KEY (series, t)) \
                 WITH compaction = {{'class': 'TimeWindowCompactionStrategy', \
                 'compaction_window_unit': 'MINUTES', 'compaction_window_size': 1, \
                 'expired_sstable_check_frequency_seconds': 10}} \
                 AND {common} AND memtable_flush_threshold_mb = {} \
                 AND default_time_to_live = {} AND gc_grace_seconds = 0",
                SERIES_MEMTABLE_BYTES >> 20,
                i64::from(s.ttl_seconds) * SERIES_CLOCK_SPEEDUP
            ),
        })?;
        let schema = table.schema();
        Ok(StrataEngine {
            db,
            table,
            schema,
            clock,
            write_opts: strata::schema::WriteOptions::default(),
            series: series.is_some(),
        })
    }

    /// A time-series key: the series and the timestamp, both big-endian.
    fn split_series_key(key: &[u8]) -> Result<(i64, i64)> {
        let field = |b: &[u8]| -> Result<i64> {
            Ok(i64::from_be_bytes(
                b.try_into().map_err(|_| "a time-series key is 16 bytes")?,
            ))
        };
        if key.len() != 16 {
            return Err(format!("a time-series key is 16 bytes, got {}", key.len()).into());
        }
        Ok((field(&key[..8])?, field(&key[8..])?))
    }
}

impl Engine for StrataEngine {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        use strata::types::Value;
        let update = if self.series {
            let (series, t) = Self::split_series_key(key)?;
            let row = [
                ("series", Value::BigInt(series)),
                ("t", Value::BigInt(t)),
                ("value", Value::Blob(value.to_vec())),
            ];
            self.schema
                .insert(&row, &self.write_opts, self.clock.now_micros())?
        } else {
            let row = [
                ("key", Value::Blob(key.to_vec())),
                ("value", Value::Blob(value.to_vec())),
            ];
            self.schema
                .insert(&row, &self.write_opts, self.clock.now_micros())?
        };
        self.table.apply(&update)?;
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        use strata::data::ClusteringRange;
        use strata::types::Value;
        let (dk, range) = if self.series {
            // One row of the series' partition: the slice [t, t].
            let (series, t) = Self::split_series_key(key)?;
            let t = [Value::BigInt(t)];
            (
                self.schema.decorated_key(&[Value::BigInt(series)])?,
                self.schema
                    .clustering_range((&t[..], true), (&t[..], true))?,
            )
        } else {
            (
                self.schema.decorated_key(&[Value::Blob(key.to_vec())])?,
                ClusteringRange::ALL,
            )
        };
        let result = self.table.read(&dk, &range, false, 1)?;
        Ok(result
            .rows
            .first()
            .and_then(|row| row.cells.first())
            .map(|cell| cell.value.len()))
    }

    fn scan(&mut self, start: &[u8], limit: usize) -> Result<ScanResult> {
        use strata::read::PagingState;
        use strata::types::Value;
        if self.series {
            return Err("strata: the time-series table is not scanned".into());
        }
        // The public token-order scan, resumed after `start` as a client's
        // paging state would (`SELECT ... WHERE token(key) > token(?)`, with
        // the key breaking ties): a page of `limit` rows is `limit` partitions
        // here, each holding one row. Rows are visited as the scan finds them
        // (borrowed, as RocksDB's iterator hands out slices of its block),
        // the last key copied as the others copy theirs.
        let paging = PagingState {
            key: self.schema.decorated_key(&[Value::Blob(start.to_vec())])?,
            last_clustering: None,
        };
        let mut r = ScanResult::default();
        let mut last = Vec::with_capacity(start.len());
        self.table.scan_rows(Some(&paging), limit, &mut |row| {
            if row.is_static {
                return;
            }
            r.entries += 1;
            r.value_bytes += row.cells.first().map_or(0, |c| c.value.len());
            last.clear();
            last.extend_from_slice(row.key);
        })?;
        r.last_key = (r.entries > 0).then_some(last);
        Ok(r)
    }

    fn order_token(&self, key: &[u8]) -> Result<Option<i64>> {
        use strata::types::Value;
        let dk = self.schema.decorated_key(&[Value::Blob(key.to_vec())])?;
        Ok(Some(dk.token))
    }

    fn settle(&mut self) -> Result<()> {
        self.table.flush()?;
        if !self.db.wait_for_compactions(SETTLE_TIMEOUT) {
            return Err("strata: compactions still pending after the settle timeout".into());
        }
        Ok(())
    }

    fn compact_all(&mut self) -> Result<()> {
        self.settle()?;
        let limiter = self.db.compaction_limiter().clone();
        self.table.compact_major(&limiter)?;
        self.settle()
    }

    fn writes(&self) -> EngineWrites {
        use strata::fs::IoCause;
        let io = self.db.io();
        EngineWrites {
            log_bytes: Some(io.written(IoCause::CommitLog)),
            flush_bytes: Some(io.written(IoCause::Flush)),
            // Manifest and schema writes are counted with compaction: they are
            // the engine's own bookkeeping, as RocksDB's MANIFEST (which its
            // tickers do not count, a small difference either way).
            compaction_bytes: Some(
                io.written(IoCause::Compaction)
                    + io.written(IoCause::Recompression)
                    + io.written(IoCause::Metadata),
            ),
        }
    }

    fn tables(&self) -> Result<Option<TableBreakdown>> {
        let mut b = TableBreakdown::default();
        for s in self.table.view().sstables().iter() {
            b.data_bytes += s.stats().compressed_bytes;
            *b.uncompressed_data_bytes.get_or_insert(0) += s.stats().uncompressed_bytes;
            b.index_bytes += s.index_bytes();
            b.filter_bytes += s.filter_bytes();
        }
        Ok(Some(b))
    }

    fn table_entries(&self) -> Result<u64> {
        Ok(self
            .table
            .view()
            .sstables()
            .iter()
            .map(|s| s.stats().row_count)
            .sum())
    }

    fn sstables_per_level(&self) -> Result<Vec<u64>> {
        let view = self.table.view();
        let mut levels: Vec<u64> = (0..10)
            .map(|l| view.version.count_at_level(l) as u64)
            .collect();
        while levels.len() > 1 && levels.last() == Some(&0) {
            levels.pop();
        }
        Ok(levels)
    }

    fn cache_lookups(&self) -> Option<(u64, u64)> {
        let s = self.table.fs().chunk_cache()?.stats();
        Some((s.hits, s.misses))
    }

    fn close(self: Box<Self>) -> Result<()> {
        let StrataEngine { db, table, .. } = *self;
        drop(table);
        db.close()?;
        Ok(())
    }
}

// ---------------------------------------------------------------- RocksDB

struct RocksEngine {
    db: rocksdb::DB,
    opts: rocksdb::Options,
    write_opts: rocksdb::WriteOptions,
}

impl RocksEngine {
    fn open(dir: &Path, series: Option<&SeriesOptions>) -> Result<RocksEngine> {
        use rocksdb::{
            BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, FifoCompactOptions,
            Options,
        };
        let cache = Cache::new_lru_cache(CACHE_BYTES as usize);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_block_size(BLOCK_BYTES as usize);
        table.set_bloom_filter(10.0, false);
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compression_type(DBCompressionType::Lz4);
        o.set_bottommost_compression_type(DBCompressionType::Lz4);
        match series {
            None => {
                o.set_compaction_style(DBCompactionStyle::Level);
                o.set_write_buffer_size(MEMTABLE_BYTES as usize);
            }
            Some(s) => {
                // FIFO: every file stays in L0 and is deleted whole once its
                // newest key is older than `ttl` (RocksDB 11's picker estimates
                // a file's newest key time; older releases used its creation
                // time). No size limit (the default is 1 GiB, which would drop
                // data before its TTL) and no intra-L0 merging (the default).
                o.set_compaction_style(DBCompactionStyle::Fifo);
                let mut fifo = FifoCompactOptions::default();
                fifo.set_max_table_files_size(u64::MAX >> 1);
                o.set_fifo_compaction_options(&fifo);
                o.set_ttl(u64::from(s.ttl_seconds));
                o.set_write_buffer_size(SERIES_MEMTABLE_BYTES as usize);
            }
        }
        o.set_max_write_buffer_number(3);
        // One flush and one compaction thread, as the other two engines here.
        o.set_max_background_jobs(2);
        // No rate limiter is set: RocksDB's default is none.
        o.set_block_based_table_factory(&table);
        o.enable_statistics();
        let db = rocksdb::DB::open(&o, dir)?;
        let mut write_opts = rocksdb::WriteOptions::default();
        write_opts.set_sync(false);
        write_opts.disable_wal(false);
        Ok(RocksEngine {
            db,
            opts: o,
            write_opts,
        })
    }
}

impl RocksEngine {
    /// The first field of `rocksdb.aggregated-table-properties` (the sum over
    /// the live sstables) whose name starts with `prefix`.
    fn table_property(&self, prefix: &str) -> Result<u64> {
        let text = self
            .db
            .property_value(rocksdb::properties::AGGREGATED_TABLE_PROPERTIES)?
            .ok_or("rocksdb: no aggregated-table-properties")?;
        // `name=value; name=value; ...` (TableProperties::ToString); the index
        // entry's name carries its format, e.g. `index block size (user-key? 1,
        // delta-value? 1)`.
        for item in text.split(';') {
            if let Some((k, v)) = item.trim().rsplit_once('=') {
                if k.starts_with(prefix) {
                    return Ok(v.trim().parse()?);
                }
            }
        }
        Err(format!("rocksdb: no '{prefix}' in aggregated-table-properties: {text}").into())
    }
}

impl Engine for RocksEngine {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.db.put_opt(key, value, &self.write_opts)?;
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.db.get_pinned(key)?.map(|v| v.len()))
    }

    fn scan(&mut self, start: &[u8], limit: usize) -> Result<ScanResult> {
        let mut it = self.db.raw_iterator();
        it.seek(start);
        if it.key() == Some(start) {
            it.next();
        }
        let mut r = ScanResult::default();
        let mut last = Vec::with_capacity(start.len());
        while let (Some(k), Some(v)) = (it.key(), it.value()) {
            r.entries += 1;
            r.value_bytes += v.len();
            last.clear();
            last.extend_from_slice(k);
            if r.entries == limit {
                break; // not one step further than asked
            }
            it.next();
        }
        r.last_key = (r.entries > 0).then_some(last);
        it.status()?;
        Ok(r)
    }

    fn order_token(&self, _key: &[u8]) -> Result<Option<i64>> {
        Ok(None)
    }

    fn settle(&mut self) -> Result<()> {
        self.db.flush()?;
        let mut w = rocksdb::WaitForCompactOptions::default();
        w.set_flush(true);
        w.set_timeout(SETTLE_TIMEOUT.as_micros() as u64);
        self.db.wait_for_compact(&w)?;
        Ok(())
    }

    fn compact_all(&mut self) -> Result<()> {
        self.settle()?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        self.settle()
    }

    fn writes(&self) -> EngineWrites {
        use rocksdb::statistics::Ticker;
        EngineWrites {
            log_bytes: Some(self.opts.get_ticker_count(Ticker::WalFileBytes)),
            flush_bytes: Some(self.opts.get_ticker_count(Ticker::FlushWriteBytes)),
            compaction_bytes: Some(self.opts.get_ticker_count(Ticker::CompactWriteBytes)),
        }
    }

    fn tables(&self) -> Result<Option<TableBreakdown>> {
        Ok(Some(TableBreakdown {
            data_bytes: self.table_property("data block size")?,
            uncompressed_data_bytes: None,
            index_bytes: self.table_property("index block size")?,
            filter_bytes: self.table_property("filter block size")?,
        }))
    }

    fn table_entries(&self) -> Result<u64> {
        self.table_property("# entries")
    }

    fn sstables_per_level(&self) -> Result<Vec<u64>> {
        let mut levels = Vec::new();
        for l in 0..7 {
            let n = self
                .db
                .property_int_value(&format!("rocksdb.num-files-at-level{l}"))?
                .ok_or("rocksdb: no per-level file count")?;
            levels.push(n);
        }
        while levels.len() > 1 && levels.last() == Some(&0) {
            levels.pop();
        }
        Ok(levels)
    }

    fn cache_lookups(&self) -> Option<(u64, u64)> {
        use rocksdb::statistics::Ticker;
        Some((
            self.opts.get_ticker_count(Ticker::BlockCacheDataHit),
            self.opts.get_ticker_count(Ticker::BlockCacheDataMiss),
        ))
    }

    fn close(self: Box<Self>) -> Result<()> {
        // Dropping the DB joins its background threads.
        drop(self);
        Ok(())
    }
}

// ---------------------------------------------------------------- fjall

struct FjallEngine {
    keyspace: fjall::Keyspace,
    partition: fjall::PartitionHandle,
}

impl FjallEngine {
    fn open(dir: &Path, series: Option<&SeriesOptions>) -> Result<FjallEngine> {
        let memtable_bytes = match series {
            None => MEMTABLE_BYTES,
            Some(_) => SERIES_MEMTABLE_BYTES,
        };
        let keyspace = fjall::Config::new(dir)
            .cache_size(CACHE_BYTES)
            .max_write_buffer_size(3 * memtable_bytes)
            .flush_workers(1)
            .compaction_workers(1)
            .manual_journal_persist(false)
            .fsync_ms(None)
            .open()?;
        let mut options = fjall::PartitionCreateOptions::default()
            .compression(fjall::CompressionType::Lz4)
            .max_memtable_size(memtable_bytes as u32)
            .block_size(BLOCK_BYTES)
            .manual_journal_persist(false);
        if let Some(s) = series {
            // lsm-tree's FIFO: a segment is dropped once its creation time
            // (its flush) is more than `ttl_seconds` ago, the oldest dropped
            // first past a size limit (none here); when level 0 holds more
            // than 20 overlapping segments it merges the smallest run of
            // them (its "maintenance" step), and a merged segment's age
            // starts again at the merge.
            options = options.compaction_strategy(fjall::compaction::Strategy::Fifo(
                fjall::compaction::Fifo::new(u64::MAX, Some(u64::from(s.ttl_seconds))),
            ));
        }
        let partition = keyspace.open_partition("kv", options)?;
        Ok(FjallEngine {
            keyspace,
            partition,
        })
    }
}

impl Engine for FjallEngine {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.partition.insert(key, value)?;
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        Ok(self.partition.get(key)?.map(|v| v.len()))
    }

    fn scan(&mut self, start: &[u8], limit: usize) -> Result<ScanResult> {
        use std::ops::Bound;
        let mut r = ScanResult::default();
        let mut last = Vec::with_capacity(start.len());
        let range = (Bound::Excluded(start), Bound::Unbounded);
        for item in self.partition.range::<&[u8], _>(range).take(limit) {
            let (k, v) = item?;
            r.entries += 1;
            r.value_bytes += v.len();
            last.clear();
            last.extend_from_slice(&k);
        }
        r.last_key = (r.entries > 0).then_some(last);
        Ok(r)
    }

    fn order_token(&self, _key: &[u8]) -> Result<Option<i64>> {
        Ok(None)
    }

    fn settle(&mut self) -> Result<()> {
        self.partition.rotate_memtable_and_wait()?;
        // fjall has no "wait for compactions": a compaction is chosen after each
        // flush or compaction, so idle means no compaction running and the
        // segment count unchanged over several polls (one second).
        let deadline = Instant::now() + SETTLE_TIMEOUT;
        let mut quiet_polls = 0;
        let mut last_segments = self.partition.segment_count();
        while quiet_polls < 5 {
            if Instant::now() > deadline {
                return Err("fjall: compactions still running after the settle timeout".into());
            }
            std::thread::sleep(Duration::from_millis(200));
            let segments = self.partition.segment_count();
            if self.keyspace.active_compactions() == 0 && segments == last_segments {
                quiet_polls += 1;
            } else {
                quiet_polls = 0;
            }
            last_segments = segments;
        }
        Ok(())
    }

    fn compact_all(&mut self) -> Result<()> {
        Err("fjall: --compact-before-reads is not supported (fjall 2 has no whole-tree compaction call this harness uses)".into())
    }

    fn writes(&self) -> EngineWrites {
        EngineWrites::default()
    }

    fn tables(&self) -> Result<Option<TableBreakdown>> {
        Ok(None)
    }

    fn table_entries(&self) -> Result<u64> {
        Ok(self.partition.approximate_len() as u64)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.keyspace.persist(fjall::PersistMode::Buffer)?;
        drop(self);
        Ok(())
    }
}
