//! `tablestats`: a table's figures as `nodetool tablestats` prints them, and the
//! pending/active compaction figures of `nodetool compactionstats`
//! ([`compaction_stats`]). Callers: the CLI, tests; any thread.
//!
//! JSON keys are nodetool's field names in snake_case with the unit as suffix
//! (issue 2); later issues add keys the same way. Figures are computed from one
//! view snapshot, so counts and sizes are mutually consistent.

use crate::fs::IoCause;
use crate::sstable::stats::Log2Histogram;
use crate::table::{Table, SSTABLES_PER_READ_BUCKETS};
use crate::table_compaction::ActiveCompaction;
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::sync::Arc;

#[derive(Clone, Debug, Serialize)]
pub struct TableStats {
    pub keyspace: String,
    pub table: String,
    pub sstable_count: usize,
    /// Listed sstables that could not be opened (missing, damaged tail, not this
    /// table's): out of the live set; reads that could need them fail.
    pub unreadable_sstable_count: usize,
    /// Files moved aside at open (`strata quarantine list`), and their bytes.
    pub quarantined_files: usize,
    pub quarantined_bytes: u64,
    pub space_used_live_bytes: u64,
    pub space_used_total_bytes: u64,
    /// Bytes held only by snapshots (files no live sstable shares).
    pub space_used_by_snapshots_total_bytes: u64,
    /// compressed / uncompressed over live sstables; -1.0 without sstables (as nodetool).
    pub sstable_compression_ratio: f64,
    /// Live sstables (and their bytes) written with other compression settings
    /// or an older format than the table's now: what `upgradesstables` rewrites.
    pub sstables_with_other_compression: usize,
    pub bytes_with_other_compression: u64,
    /// Compression dictionaries (`None` when the table has none and its class
    /// uses none).
    pub compression_dictionary: Option<crate::table_dictionary::DictionaryStats>,
    /// Sum over memtables and sstables: an upper bound when partitions overlap
    /// (Cassandra merges HyperLogLog sketches instead).
    pub number_of_partitions_estimate: u64,
    pub memtable_cell_count: u64,
    pub memtable_data_size_bytes: u64,
    /// Exact bytes held by the active memtable (data + structure).
    pub memtable_memory_bytes: u64,
    pub memtable_switch_count: u64,
    pub pending_flushes: usize,
    pub bloom_filter_false_positives: u64,
    pub bloom_filter_false_ratio: f64,
    /// This table's user reads of a chunk served from the chunk cache, and
    /// those that read and decompressed it.
    pub chunk_cache_hits: u64,
    pub chunk_cache_misses: u64,
    /// The database's chunk cache (`None` when disabled).
    pub chunk_cache: Option<crate::chunk_cache::ChunkCacheStats>,
    pub bloom_filter_space_used_bytes: u64,
    pub index_space_used_bytes: u64,
    pub local_read_count: u64,
    /// Mean, as nodetool prints it; NaN-free: 0 when there were no reads.
    pub local_read_latency_ms: f64,
    pub local_write_count: u64,
    pub local_write_latency_ms: f64,
    pub compacted_partition_minimum_bytes: u64,
    pub compacted_partition_maximum_bytes: u64,
    pub compacted_partition_mean_bytes: u64,
    pub bytes_flushed: u64,
    pub write_stall_seconds: f64,
    pub writes_refused: u64,
    /// Histogram of sstables read per partition read: index i = i sstables
    /// (the last bucket is "16 or more").
    pub sstables_per_read: Vec<u64>,
    pub sstables_in_each_level: Vec<usize>,
    pub sstable_bytes_in_each_level: Vec<u64>,
    pub droppable_tombstone_ratio: f64,
    /// Bytes written by compaction (as stored on disk).
    pub bytes_compacted_written: u64,
    /// Bytes read by compaction.
    pub bytes_compacted_read: u64,
    /// (flush bytes + compaction bytes written) / flush bytes: the
    /// leveling-multiplier experiment's `1 + promotion I/O`, from the
    /// file-layer counters of this process (since open).
    pub write_amplification: f64,
    /// Bytes flushed since the table was created (kept across restarts).
    pub bytes_flushed_since_creation: u64,
    /// Bytes compaction wrote since the table was created, from its
    /// compaction history.
    pub bytes_compacted_written_since_creation: u64,
    /// Bytes compaction read since the table was created, from its
    /// compaction history (sstables dropped whole are not read).
    pub bytes_compacted_read_since_creation: u64,
    /// Bytes written, by why each compaction was chosen (`major`, `tiered`, ...).
    pub bytes_compacted_by_reason: std::collections::BTreeMap<String, u64>,
    /// Write amplification since creation, from the two above.
    pub write_amplification_since_creation: f64,
    pub pending_compactions: usize,
    pub compactions_failed: u64,
    pub space_refusals: u64,
    /// Per-level compaction statistics (RocksDB's per-level table).
    pub levels: Vec<LevelStats>,
    /// The blob strategy's accounting (`None` under other strategies).
    pub blob: Option<BlobStats>,
}

/// What the blob strategy knows of a table (docs/compaction/blob.md): how much
/// of it is live, and whether its assumptions held.
#[derive(Clone, Debug, Serialize)]
pub struct BlobStats {
    /// Uncompressed data-stream bytes of the accounted sstables.
    pub data_bytes: u64,
    /// Of those, bytes superseded by deletions held in other sstables.
    pub dead_bytes: u64,
    /// `data_bytes / (data_bytes - dead_bytes)` over the table (1.0 when
    /// nothing is dead; infinite is printed as -1).
    pub fragmentation: f64,
    /// Largest per-sstable fragmentation (-1 for an sstable with nothing live).
    pub max_sstable_fragmentation: f64,
    pub sstables_wholly_dead: usize,
    /// Sstables sharing live rows with another now (assumption broken; they are
    /// merged, never dropped on accounting).
    pub sstables_sharing_live_rows: usize,
    /// Sstables newly found sharing live rows since the table was opened.
    pub overwrites_detected: u64,
    /// Sstables without accounting (not computed yet, or it failed).
    pub sstables_unaccounted: usize,
    pub accounting_failures: u64,
    pub last_accounting_error: Option<String>,
}

impl BlobStats {
    fn of(t: &Table, view: &crate::read::View) -> BlobStats {
        let mut b = BlobStats {
            data_bytes: 0,
            dead_bytes: 0,
            fragmentation: 1.0,
            max_sstable_fragmentation: 1.0,
            sstables_wholly_dead: 0,
            sstables_sharing_live_rows: 0,
            overwrites_detected: t.metrics.blob_overwrites_detected.load(Ordering::Relaxed),
            sstables_unaccounted: 0,
            accounting_failures: t
                .metrics
                .live_bytes_accounting_failures
                .load(Ordering::Relaxed),
            last_accounting_error: t.last_accounting_error.lock().clone(),
        };
        let frag = |data: u64, dead: u64| {
            if dead >= data && data > 0 {
                -1.0
            } else if data == 0 {
                1.0
            } else {
                data as f64 / (data - dead) as f64
            }
        };
        for s in view.version.iter() {
            let Some(l) = s.live else {
                b.sstables_unaccounted += 1;
                continue;
            };
            let st = s.handle.stats();
            b.data_bytes += st.uncompressed_bytes;
            b.dead_bytes += l.dead_bytes.min(st.uncompressed_bytes);
            if st.partition_count > 0 && l.dead_partitions >= st.partition_count {
                b.sstables_wholly_dead += 1;
            }
            if l.shares_live_rows {
                b.sstables_sharing_live_rows += 1;
            }
            let f = frag(st.uncompressed_bytes, l.dead_bytes);
            if f < 0.0 || (b.max_sstable_fragmentation >= 0.0 && f > b.max_sstable_fragmentation) {
                b.max_sstable_fragmentation = f;
            }
        }
        b.fragmentation = frag(b.data_bytes, b.dead_bytes);
        b
    }
}

/// One row of the per-level table.
#[derive(Clone, Debug, Serialize)]
pub struct LevelStats {
    pub level: usize,
    pub sstables: usize,
    pub bytes: u64,
    /// Strategy score (LCS: level bytes / target; 0 when the strategy has none).
    pub score: f64,
    /// Bytes compaction read from this level's sstables.
    pub read_bytes: u64,
    /// Bytes compaction wrote into this level.
    pub written_bytes: u64,
    /// written / bytes read from the level above (how much each promoted byte cost).
    pub write_amplification: f64,
    pub compactions: u64,
    pub compaction_seconds: f64,
}

fn mean_ms(total_nanos: u64, count: u64) -> f64 {
    if count == 0 {
        0.0
    } else {
        total_nanos as f64 / count as f64 / 1e6
    }
}

impl TableStats {
    /// Figures for `strata tablestats`.
    pub fn of(t: &Table) -> TableStats {
        let view = t.view();
        let schema = t.schema();
        // A listing error only hides the quarantine figures; stats still print.
        let quarantined = crate::quarantine::list(t.fs(), t.dir()).unwrap_or_default();
        let m = &t.metrics;
        let mut live = 0u64;
        let mut compressed = 0u64;
        let mut uncompressed = 0u64;
        let mut partitions = 0u64;
        let mut fp = 0u64;
        let mut tp = 0u64;
        let mut filter_bytes = 0u64;
        let mut index_bytes = 0u64;
        let mut sizes = Log2Histogram::default();
        let mut levels: Vec<usize> = Vec::new();
        let mut level_bytes: Vec<u64> = Vec::new();
        let gc_before = t.clock().now_seconds() - schema.options.gc_grace_seconds as i64;
        let mut droppable_weighted = 0.0;
        let mut candidates = 0u64;
        let target = t.target_compression();
        let (mut stale, mut stale_bytes) = (0usize, 0u64);
        for (s, level) in view.version.iter().map(|e| (&e.handle, e.level)) {
            let st = s.stats();
            live += s.file_size();
            if crate::upgrade::is_stale(s, &target) {
                stale += 1;
                stale_bytes += s.file_size();
            }
            compressed += st.compressed_bytes;
            uncompressed += st.uncompressed_bytes;
            partitions += st.partition_count;
            fp += s.bloom_false_positives();
            tp += s.bloom_true_positives();
            filter_bytes += s.filter_bytes();
            index_bytes += s.index_bytes();
            sizes.merge(&st.partition_size_bytes);
            let l = level as usize;
            if levels.len() <= l {
                levels.resize(l + 1, 0);
                level_bytes.resize(l + 1, 0);
            }
            levels[l] += 1;
            level_bytes[l] += s.file_size();
            droppable_weighted += st.estimate_droppable(gc_before) * st.tombstone_candidates as f64;
            candidates += st.tombstone_candidates;
        }
        let io = t.io();
        let scores = t.compaction_level_scores();
        let nlevels = levels.len().max(
            (0..crate::fs::MAX_TRACKED_LEVELS)
                .rev()
                .find(|&l| {
                    io.compaction_written_level_bytes[l] > 0
                        || io.compaction_read_level_bytes[l] > 0
                })
                .map_or(0, |l| l + 1),
        );
        let level_rows: Vec<LevelStats> = (0..nlevels)
            .map(|l| {
                let slot = l.min(crate::fs::MAX_TRACKED_LEVELS - 1);
                let written = io.compaction_written_level_bytes[slot];
                let from_above = if l == 0 {
                    0
                } else {
                    io.compaction_read_level_bytes[slot - 1]
                };
                LevelStats {
                    level: l,
                    sstables: levels.get(l).copied().unwrap_or(0),
                    bytes: level_bytes.get(l).copied().unwrap_or(0),
                    score: scores.get(l).copied().unwrap_or(0.0),
                    read_bytes: io.compaction_read_level_bytes[slot],
                    written_bytes: written,
                    write_amplification: if from_above == 0 {
                        0.0
                    } else {
                        written as f64 / from_above as f64
                    },
                    compactions: m.compactions_into_level[slot].load(Ordering::Relaxed),
                    compaction_seconds: m.compaction_micros_into_level[slot].load(Ordering::Relaxed)
                        as f64
                        / 1e6,
                }
            })
            .collect();
        let flushed = io.written(IoCause::Flush);
        let compacted = io.written(IoCause::Compaction);
        let lifetime = t.lifetime_counters();
        let mut by_reason = std::collections::BTreeMap::new();
        let mut read_ever = 0u64;
        for r in t.compaction_history() {
            *by_reason.entry(r.reason.clone()).or_insert(0u64) += r.bytes_out;
            if r.kind != "drop" {
                read_ever += r.bytes_in;
            }
        }
        let compacted_ever: u64 = by_reason.values().sum();
        let active = view.active();
        partitions += view
            .memtables
            .iter()
            .map(|m| m.partition_count())
            .sum::<u64>();
        let reads = m.read_count.load(Ordering::Relaxed);
        let writes = m.write_count.load(Ordering::Relaxed);
        TableStats {
            keyspace: schema.keyspace.clone(),
            table: schema.name.clone(),
            sstable_count: view.version.len(),
            unreadable_sstable_count: t.unreadable_sstables().len(),
            quarantined_files: quarantined.len(),
            quarantined_bytes: quarantined.iter().map(|f| f.size_bytes).sum(),
            space_used_live_bytes: live,
            space_used_by_snapshots_total_bytes: crate::maintenance::snapshots_true_size_bytes(t)
                .unwrap_or(0),
            space_used_total_bytes: t.disk_bytes_total().unwrap_or(live).max(live),
            sstable_compression_ratio: if uncompressed == 0 {
                -1.0
            } else {
                compressed as f64 / uncompressed as f64
            },
            sstables_with_other_compression: stale,
            bytes_with_other_compression: stale_bytes,
            compression_dictionary: t
                .dictionary_stats()
                .ok()
                .filter(|d| d.stored > 0 || schema.options.compression.class.uses_dictionary()),
            number_of_partitions_estimate: partitions,
            memtable_cell_count: active.cell_count(),
            memtable_data_size_bytes: active.data_bytes(),
            memtable_memory_bytes: active.memory_bytes(),
            memtable_switch_count: m.memtable_switch_count.load(Ordering::Relaxed),
            pending_flushes: view.pending_flushes(),
            bloom_filter_false_positives: fp,
            chunk_cache_hits: t.io().chunk_cache_hits,
            chunk_cache_misses: t.io().chunk_cache_misses,
            chunk_cache: t.fs().chunk_cache().map(|c| c.stats()),
            bloom_filter_false_ratio: if fp + tp == 0 {
                0.0
            } else {
                fp as f64 / (fp + tp) as f64
            },
            bloom_filter_space_used_bytes: filter_bytes,
            index_space_used_bytes: index_bytes,
            local_read_count: reads,
            local_read_latency_ms: mean_ms(
                m.read_latency_nanos_total.load(Ordering::Relaxed),
                reads,
            ),
            local_write_count: writes,
            local_write_latency_ms: mean_ms(
                m.write_latency_nanos_total.load(Ordering::Relaxed),
                writes,
            ),
            compacted_partition_minimum_bytes: sizes.min().unwrap_or(0),
            compacted_partition_maximum_bytes: sizes.max().unwrap_or(0),
            compacted_partition_mean_bytes: sizes.mean().round() as u64,
            bytes_flushed: t.io().written(IoCause::Flush),
            write_stall_seconds: m.write_stall_micros_total.load(Ordering::Relaxed) as f64 / 1e6,
            writes_refused: m.writes_refused.load(Ordering::Relaxed),
            sstables_per_read: (0..SSTABLES_PER_READ_BUCKETS)
                .map(|i| m.sstables_per_read[i].load(Ordering::Relaxed))
                .collect(),
            sstables_in_each_level: levels,
            sstable_bytes_in_each_level: level_bytes,
            droppable_tombstone_ratio: if candidates == 0 {
                0.0
            } else {
                droppable_weighted / candidates as f64
            },
            bytes_compacted_written: compacted,
            bytes_compacted_read: io.read(IoCause::Compaction),
            write_amplification: if flushed == 0 {
                0.0
            } else {
                (flushed + compacted) as f64 / flushed as f64
            },
            bytes_flushed_since_creation: lifetime.bytes_flushed,
            bytes_compacted_written_since_creation: compacted_ever,
            bytes_compacted_read_since_creation: read_ever,
            write_amplification_since_creation: if lifetime.bytes_flushed == 0 {
                0.0
            } else {
                (lifetime.bytes_flushed + compacted_ever) as f64 / lifetime.bytes_flushed as f64
            },
            bytes_compacted_by_reason: by_reason,
            pending_compactions: t.pending_compaction_tasks(),
            compactions_failed: m.compactions_failed.load(Ordering::Relaxed),
            space_refusals: m.space_refusals.load(Ordering::Relaxed),
            levels: level_rows,
            blob: t
                .compaction_strategy_tracks_live_bytes()
                .then(|| BlobStats::of(t, &view)),
        }
    }
}

impl TableStats {
    /// The human form, laid out like `nodetool tablestats`.
    pub fn to_text(&self) -> String {
        self.to_text_with(false)
    }

    /// As [`to_text`](Self::to_text); with `human`, sizes in KiB, MiB, GiB
    /// (nodetool's `-H`).
    pub fn to_text_with(&self, human: bool) -> String {
        let sz = |b: u64| if human { human_bytes(b) } else { b.to_string() };
        let mut s = String::new();
        let mut line = |k: &str, v: String| {
            s.push_str(&format!("\t\t{k}: {v}\n"));
        };
        line("Table", format!("{}.{}", self.keyspace, self.table));
        line("SSTable count", self.sstable_count.to_string());
        if self.unreadable_sstable_count > 0 {
            line(
                "Unreadable SSTables",
                self.unreadable_sstable_count.to_string(),
            );
        }
        if self.quarantined_files > 0 {
            line(
                "Quarantined files (bytes)",
                format!("{} ({})", self.quarantined_files, self.quarantined_bytes),
            );
        }
        line(
            "SSTables in each level",
            format!("{:?}", self.sstables_in_each_level),
        );
        line("Space used (live)", sz(self.space_used_live_bytes));
        line("Space used (total)", sz(self.space_used_total_bytes));
        line(
            "Space used by snapshots (total)",
            sz(self.space_used_by_snapshots_total_bytes),
        );
        line(
            "SSTable Compression Ratio",
            format!("{:.5}", self.sstable_compression_ratio),
        );
        if self.sstables_with_other_compression > 0 {
            line(
                "SSTables with other compression (bytes)",
                format!(
                    "{} ({}): strata upgradesstables rewrites them",
                    self.sstables_with_other_compression, self.bytes_with_other_compression
                ),
            );
        }
        if let Some(d) = &self.compression_dictionary {
            line(
                "Compression dictionary",
                match d.current_id {
                    Some(id) => format!(
                        "{id} ({} bytes, ratio {:.3} on its sample); {} stored ({} bytes)",
                        d.current_bytes,
                        d.current_sample_ratio.unwrap_or(1.0),
                        d.stored,
                        d.stored_bytes
                    ),
                    None => "none trained yet (written without one until enough data is flushed, or strata traincompressiondictionary)"
                        .to_string(),
                },
            );
            line(
                "SSTables by dictionary (current/older/none)",
                format!(
                    "{}/{}/{}",
                    d.sstables_with_current, d.sstables_with_older, d.sstables_without
                ),
            );
            if let Some(t) = &d.last_training {
                line("Last dictionary training", t.clone());
            }
            if let Some(e) = &d.last_error {
                line("Last dictionary training error", e.clone());
            }
        }
        line(
            "Number of partitions (estimate)",
            self.number_of_partitions_estimate.to_string(),
        );
        line("Memtable cell count", self.memtable_cell_count.to_string());
        line("Memtable data size", sz(self.memtable_data_size_bytes));
        line("Memtable memory used", sz(self.memtable_memory_bytes));
        line(
            "Memtable switch count",
            self.memtable_switch_count.to_string(),
        );
        line("Pending flushes", self.pending_flushes.to_string());
        line("Local read count", self.local_read_count.to_string());
        line(
            "Local read latency",
            format!("{:.3} ms", self.local_read_latency_ms),
        );
        line("Local write count", self.local_write_count.to_string());
        line(
            "Local write latency",
            format!("{:.3} ms", self.local_write_latency_ms),
        );
        if let Some(c) = &self.chunk_cache {
            let (h, m) = (self.chunk_cache_hits, self.chunk_cache_misses);
            line(
                "Chunk cache hits/misses (hit rate)",
                format!(
                    "{h}/{m} ({:.3}); database cache {} of {} bytes, {} entries, {:.3} hit rate, {} bytes of index blocks pinned beside it",
                    if h + m == 0 {
                        0.0
                    } else {
                        h as f64 / (h + m) as f64
                    },
                    c.size_bytes,
                    c.capacity_bytes,
                    c.entries,
                    c.hit_rate(),
                    c.pinned_bytes
                ),
            );
        }
        line(
            "Bloom filter false positives",
            self.bloom_filter_false_positives.to_string(),
        );
        line(
            "Bloom filter false ratio",
            format!("{:.5}", self.bloom_filter_false_ratio),
        );
        line(
            "Bloom filter space used",
            sz(self.bloom_filter_space_used_bytes),
        );
        line("Index space used", sz(self.index_space_used_bytes));
        line(
            "Compacted partition minimum bytes",
            sz(self.compacted_partition_minimum_bytes),
        );
        line(
            "Compacted partition maximum bytes",
            sz(self.compacted_partition_maximum_bytes),
        );
        line(
            "Compacted partition mean bytes",
            sz(self.compacted_partition_mean_bytes),
        );
        line("Bytes flushed (since open)", sz(self.bytes_flushed));
        line(
            "Write stall time",
            format!("{:.3} s", self.write_stall_seconds),
        );
        line(
            "Droppable tombstone ratio",
            format!("{:.5}", self.droppable_tombstone_ratio),
        );
        line("Writes refused", self.writes_refused.to_string());
        line(
            "Bytes compacted (read / written)",
            format!(
                "{} / {}",
                self.bytes_compacted_read, self.bytes_compacted_written
            ),
        );
        line(
            "Write amplification (since open)",
            format!("{:.3}", self.write_amplification),
        );
        line(
            "Bytes flushed / compacted (since creation)",
            format!(
                "{} / {}",
                sz(self.bytes_flushed_since_creation),
                sz(self.bytes_compacted_written_since_creation)
            ),
        );
        line(
            "Bytes compacted (read / written, since creation)",
            format!(
                "{} / {}",
                sz(self.bytes_compacted_read_since_creation),
                sz(self.bytes_compacted_written_since_creation)
            ),
        );
        line(
            "Write amplification (since creation)",
            format!("{:.3}", self.write_amplification_since_creation),
        );
        if !self.bytes_compacted_by_reason.is_empty() {
            let parts: Vec<String> = self
                .bytes_compacted_by_reason
                .iter()
                .map(|(why, b)| format!("{why} {}", sz(*b)))
                .collect();
            line(
                "Bytes compacted by cause (since creation)",
                parts.join(", "),
            );
        }
        line("Pending compactions", self.pending_compactions.to_string());
        line("Compactions failed", self.compactions_failed.to_string());
        line("Disk-space refusals", self.space_refusals.to_string());
        if let Some(b) = &self.blob {
            let f = |x: f64| {
                if x < 0.0 {
                    "nothing live".to_string()
                } else {
                    format!("{x:.3}")
                }
            };
            line(
                "Blob live bytes (data, dead)",
                format!(
                    "{} ({}, {})",
                    b.data_bytes - b.dead_bytes,
                    b.data_bytes,
                    b.dead_bytes
                ),
            );
            line("Blob fragmentation", f(b.fragmentation));
            line(
                "Blob max sstable fragmentation",
                f(b.max_sstable_fragmentation),
            );
            line(
                "Blob sstables wholly dead",
                b.sstables_wholly_dead.to_string(),
            );
            line(
                "Blob assumption violations (sharing live rows now, detected)",
                format!(
                    "{}, {}",
                    b.sstables_sharing_live_rows, b.overwrites_detected
                ),
            );
            line(
                "Blob sstables unaccounted (failures)",
                format!("{} ({})", b.sstables_unaccounted, b.accounting_failures),
            );
            if let Some(e) = &b.last_accounting_error {
                line("Blob last accounting error", e.clone());
            }
        }
        if !self.levels.is_empty() {
            s.push_str("\t\tLevel  Files      Size(MB)  Score  Read(MB)  Write(MB)  W-Amp  Comp(cnt)  Comp(sec)\n");
            for l in &self.levels {
                s.push_str(&format!(
                    "\t\t  L{:<3} {:>6} {:>12.2} {:>6.2} {:>9.2} {:>10.2} {:>6.2} {:>10} {:>10.2}\n",
                    l.level,
                    l.sstables,
                    l.bytes as f64 / 1048576.0,
                    l.score,
                    l.read_bytes as f64 / 1048576.0,
                    l.written_bytes as f64 / 1048576.0,
                    l.write_amplification,
                    l.compactions,
                    l.compaction_seconds
                ));
            }
        }
        s
    }
}

/// `nodetool compactionstats` figures over some tables.
#[derive(Clone, Debug, Serialize)]
pub struct CompactionStats {
    /// The strategies' own estimates of the tasks they still have.
    pub pending_tasks: usize,
    /// Estimate: each table's next task's input bytes times its pending tasks
    /// (what nodetool shows as the remaining bytes, to the same precision).
    pub pending_bytes: u64,
    /// Tasks running in this process.
    pub active: Vec<ActiveCompaction>,
}

/// Pending and active compactions of `tables`. Asks each strategy for its next
/// task without running it (deciders are pure: nothing changes).
pub fn compaction_stats(tables: &[Arc<Table>]) -> CompactionStats {
    let mut stats = CompactionStats {
        pending_tasks: 0,
        pending_bytes: 0,
        active: Vec::new(),
    };
    for t in tables {
        let pending = t.pending_compaction_tasks();
        stats.pending_tasks += pending;
        if pending > 0 {
            // Peeked: observing must not advance the strategy's state (LCS's
            // round robin, TWCS's highest window, the expiry check's clock).
            let infos = t.sstable_infos();
            if let Some(task) = t.peek_compaction_task() {
                let ids = task.input_ids();
                let bytes: u64 = infos
                    .iter()
                    .filter(|i| ids.contains(&i.id))
                    .map(|i| i.size_bytes)
                    .sum();
                stats.pending_bytes += bytes * pending as u64;
            }
        }
        stats.active.extend(t.active_compactions());
    }
    stats
}

/// One line of `tablehistograms` (nodetool's): a percentile, or `Min` /
/// `Max`, of each distribution; `None` where a distribution is empty.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct HistogramRow {
    pub percentile: String,
    pub read_latency_micros: Option<u64>,
    pub write_latency_micros: Option<u64>,
    pub sstables_per_read: Option<u64>,
    pub partition_size_bytes: Option<u64>,
    pub cell_count: Option<u64>,
}

/// `tablehistograms`: read and write latency since open, sstables per read
/// since open, and partition size and cell count over the live sstables, at
/// nodetool's percentiles. Latencies and sizes are bucket bounds, as
/// Cassandra's are (within 19% and a factor of 2 above the value).
pub fn histograms(t: &Table) -> Vec<HistogramRow> {
    use crate::latency;
    let m = &t.metrics;
    let reads = m.read_latency_micros.snapshot();
    let writes = m.write_latency_micros.snapshot();
    let per_read: Vec<u64> = (0..SSTABLES_PER_READ_BUCKETS)
        .map(|i| m.sstables_per_read[i].load(Ordering::Relaxed))
        .collect();
    let view = t.view();
    let mut sizes = Log2Histogram::default();
    let mut cells = Log2Histogram::default();
    for s in view.version.iter() {
        sizes.merge(&s.handle.stats().partition_size_bytes);
        cells.merge(&s.handle.stats().cells_per_partition);
    }
    let log2 = |h: &Log2Histogram, q: f64| (h.count() > 0).then(|| h.percentile(q));
    // Bucket i counts reads that touched i sstables (the last: that many or more).
    let index_percentile = |counts: &[u64], q: f64| -> Option<u64> {
        let n: u64 = counts.iter().sum();
        let target = ((q * n as f64).ceil() as u64).max(1);
        let mut seen = 0;
        counts.iter().enumerate().find_map(|(i, c)| {
            seen += c;
            (n > 0 && seen >= target).then_some(i as u64)
        })
    };
    let mut rows: Vec<HistogramRow> = [0.5, 0.75, 0.95, 0.98, 0.99]
        .iter()
        .map(|&q: &f64| HistogramRow {
            percentile: format!("{}%", (q * 100.0).round() as u32),
            read_latency_micros: latency::percentile(&reads, q),
            write_latency_micros: latency::percentile(&writes, q),
            sstables_per_read: index_percentile(&per_read, q),
            partition_size_bytes: log2(&sizes, q),
            cell_count: log2(&cells, q),
        })
        .collect();
    rows.push(HistogramRow {
        percentile: "Min".into(),
        read_latency_micros: latency::min(&reads),
        write_latency_micros: latency::min(&writes),
        sstables_per_read: per_read.iter().position(|&c| c > 0).map(|i| i as u64),
        partition_size_bytes: sizes.min(),
        cell_count: cells.min(),
    });
    rows.push(HistogramRow {
        percentile: "Max".into(),
        read_latency_micros: latency::percentile(&reads, 1.0),
        write_latency_micros: latency::percentile(&writes, 1.0),
        sstables_per_read: per_read.iter().rposition(|&c| c > 0).map(|i| i as u64),
        partition_size_bytes: sizes.max(),
        cell_count: cells.max(),
    });
    rows
}

/// Bytes as nodetool's `-H` prints them (binary units, two decimals).
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 5] = ["bytes", "KiB", "MiB", "GiB", "TiB"];
    let mut v = bytes as f64;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} bytes")
    } else {
        format!("{v:.2} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod compaction_stats_tests {
    use super::*;

    #[test]
    fn pending_work_is_estimated_without_running_it() {
        // No background compactor: what the strategy wants stays pending.
        let (_dir, db, t) = crate::db::testing::without_compactors();
        let idle = compaction_stats(std::slice::from_ref(&t));
        assert_eq!((idle.pending_tasks, idle.pending_bytes), (0, 0));
        crate::db::testing::flush_four_similar(&t);
        let total: u64 = t.sstable_infos().iter().map(|i| i.size_bytes).sum();
        let s = compaction_stats(std::slice::from_ref(&t));
        assert_eq!(s.pending_tasks, 1, "{s:?}");
        assert_eq!(s.pending_bytes, total, "the one task reads all four");
        assert!(s.active.is_empty());
        assert_eq!(t.sstable_infos().len(), 4, "estimating ran nothing");
        drop(t);
        db.close().unwrap();
    }
}
