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
//!    its defaults), no compaction throughput limit, one flush and one
//!    compaction thread each (the machine has two cores and the driver uses one).

use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
        "strata" if first == "commitlog" => FileKind::Log,
        "strata" if name.ends_with("-Data.db") || name.ends_with("-Data.db.tmp") => FileKind::Table,
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
    fn writes(&self) -> EngineWrites;
    /// The live sstables' bytes by content (after `settle`).
    fn tables(&self) -> Result<Option<TableBreakdown>>;
    fn close(self: Box<Self>) -> Result<()>;
}

pub const MEMTABLE_BYTES: u64 = 64 << 20;
pub const CACHE_BYTES: u64 = 128 << 20;
pub const BLOCK_BYTES: u32 = 16 << 10;
/// Settling longer than this is reported as an error rather than waited out.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(3600);

pub fn open(name: &str, dir: &Path) -> Result<Box<dyn Engine>> {
    match name {
        "strata" => Ok(Box::new(StrataEngine::open(dir)?)),
        "rocksdb" => Ok(Box::new(RocksEngine::open(dir)?)),
        "fjall" => Ok(Box::new(FjallEngine::open(dir)?)),
        other => Err(format!("unknown engine '{other}' (strata, rocksdb, fjall)").into()),
    }
}

// ---------------------------------------------------------------- Strata

struct StrataEngine {
    db: strata::db::Database,
    table: Arc<strata::table::Table>,
    schema: Arc<strata::schema::TableSchema>,
    clock: Arc<dyn strata::clock::Clock>,
    write_opts: strata::schema::WriteOptions,
}

impl StrataEngine {
    fn open(dir: &Path) -> Result<StrataEngine> {
        use strata::commitlog::{CommitLogOptions, SyncMode};
        let clock: Arc<dyn strata::clock::Clock> = strata::clock::SystemClock::new();
        let mut o = strata::db::DbOptions::new(clock.clone());
        o.commitlog = Some(CommitLogOptions {
            sync: SyncMode::Periodic {
                period: Duration::from_secs(10),
            },
            ..CommitLogOptions::default()
        });
        o.compaction_throughput_mb_per_sec = 0;
        o.concurrent_compactors = 1;
        o.chunk_cache_bytes = CACHE_BYTES as usize;
        o.purpose = "strata-bench-compare".to_string();
        let db = strata::db::Database::open(dir, o)?;
        db.create_keyspace("bench")?;
        let table = db.create_table_cql(&format!(
            "CREATE TABLE bench.kv (key blob PRIMARY KEY, value blob) \
             WITH compaction = {{'class': 'LeveledCompactionStrategy'}} \
             AND compression = {{'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}} \
             AND bloom_filter_fp_chance = 0.01 \
             AND memtable_flush_threshold_mb = {}",
            MEMTABLE_BYTES >> 20
        ))?;
        let schema = table.schema();
        Ok(StrataEngine {
            db,
            table,
            schema,
            clock,
            write_opts: strata::schema::WriteOptions::default(),
        })
    }
}

impl Engine for StrataEngine {
    fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        use strata::types::Value;
        let row = [
            ("key", Value::Blob(key.to_vec())),
            ("value", Value::Blob(value.to_vec())),
        ];
        let update = self
            .schema
            .insert(&row, &self.write_opts, self.clock.now_micros())?;
        self.table.apply(&update)?;
        Ok(())
    }

    fn get(&mut self, key: &[u8]) -> Result<Option<usize>> {
        use strata::data::ClusteringRange;
        use strata::types::Value;
        let dk = self.schema.decorated_key(&[Value::Blob(key.to_vec())])?;
        let result = self.table.read(&dk, &ClusteringRange::ALL, false, 1)?;
        Ok(result
            .rows
            .first()
            .and_then(|row| row.cells.first())
            .map(|cell| cell.value.len()))
    }

    fn scan(&mut self, start: &[u8], limit: usize) -> Result<ScanResult> {
        use strata::read::PagingState;
        use strata::types::Value;
        // The public token-order scan, resumed after `start` as a client's
        // paging state would (`SELECT ... WHERE token(key) > token(?)`, with
        // the key breaking ties): a page of `limit` rows is `limit` partitions
        // here, each holding one row.
        let paging = PagingState {
            key: self.schema.decorated_key(&[Value::Blob(start.to_vec())])?,
            last_clustering: None,
        };
        let page = self.table.scan(Some(&paging), limit)?;
        let mut r = ScanResult::default();
        for p in &page.partitions {
            for row in &p.rows {
                r.entries += 1;
                r.value_bytes += row.cells.first().map_or(0, |c| c.value.len());
            }
        }
        r.last_key = page.partitions.last().map(|p| p.key.key.to_vec());
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
    fn open(dir: &Path) -> Result<RocksEngine> {
        use rocksdb::{BlockBasedOptions, Cache, DBCompactionStyle, DBCompressionType, Options};
        let cache = Cache::new_lru_cache(CACHE_BYTES as usize);
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_block_size(BLOCK_BYTES as usize);
        table.set_bloom_filter(10.0, false);
        let mut o = Options::default();
        o.create_if_missing(true);
        o.set_compaction_style(DBCompactionStyle::Level);
        o.set_compression_type(DBCompressionType::Lz4);
        o.set_bottommost_compression_type(DBCompressionType::Lz4);
        o.set_write_buffer_size(MEMTABLE_BYTES as usize);
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

    fn writes(&self) -> EngineWrites {
        use rocksdb::statistics::Ticker;
        EngineWrites {
            log_bytes: Some(self.opts.get_ticker_count(Ticker::WalFileBytes)),
            flush_bytes: Some(self.opts.get_ticker_count(Ticker::FlushWriteBytes)),
            compaction_bytes: Some(self.opts.get_ticker_count(Ticker::CompactWriteBytes)),
        }
    }

    fn tables(&self) -> Result<Option<TableBreakdown>> {
        let text = self
            .db
            .property_value(rocksdb::properties::AGGREGATED_TABLE_PROPERTIES)?
            .ok_or("rocksdb: no aggregated-table-properties")?;
        // `name=value; name=value; ...` (TableProperties::ToString); the index
        // entry's name carries its format, e.g. `index block size (user-key? 1,
        // delta-value? 1)`.
        let field = |prefix: &str| -> Result<u64> {
            for item in text.split(';') {
                if let Some((k, v)) = item.trim().rsplit_once('=') {
                    if k.starts_with(prefix) {
                        return Ok(v.trim().parse()?);
                    }
                }
            }
            Err(format!("rocksdb: no '{prefix}' in aggregated-table-properties: {text}").into())
        };
        Ok(Some(TableBreakdown {
            data_bytes: field("data block size")?,
            uncompressed_data_bytes: None,
            index_bytes: field("index block size")?,
            filter_bytes: field("filter block size")?,
        }))
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
    fn open(dir: &Path) -> Result<FjallEngine> {
        let keyspace = fjall::Config::new(dir)
            .cache_size(CACHE_BYTES)
            .max_write_buffer_size(3 * MEMTABLE_BYTES)
            .flush_workers(1)
            .compaction_workers(1)
            .manual_journal_persist(false)
            .fsync_ms(None)
            .open()?;
        let partition = keyspace.open_partition(
            "kv",
            fjall::PartitionCreateOptions::default()
                .compression(fjall::CompressionType::Lz4)
                .max_memtable_size(MEMTABLE_BYTES as u32)
                .block_size(BLOCK_BYTES)
                .manual_journal_persist(false),
        )?;
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

    fn writes(&self) -> EngineWrites {
        EngineWrites::default()
    }

    fn tables(&self) -> Result<Option<TableBreakdown>> {
        Ok(None)
    }

    fn close(self: Box<Self>) -> Result<()> {
        self.keyspace.persist(fjall::PersistMode::Buffer)?;
        drop(self);
        Ok(())
    }
}
