//! `strata export --format cassandra`: a table's data as Cassandra `nb`
//! sstables that `nodetool import` and `sstableloader` load, with the CQL
//! that creates the table on the Cassandra side.
//!
//! Contract:
//! 1. What is exported is the table's data at the start: the memtable is
//!    flushed first, then the live sstables are merged in token order (no
//!    purge, so every tombstone and expired cell goes across and keeps
//!    shadowing what it shadows in Cassandra's older sstables).
//! 2. Output: `OUT/<keyspace>/<table>/nb-<n>-big-*` (the layout
//!    `sstableloader` reads keyspace and table from) and `schema.cql` beside
//!    them (as in a Cassandra snapshot). The directory is built under a
//!    hidden name in `OUT/<keyspace>/` and renamed into place once complete,
//!    so a failed or killed export never leaves a partial table directory
//!    that a loader could pick up; on an error the hidden directory is
//!    removed. An existing, non-empty table directory is refused: nothing in
//!    it is touched.
//! 3. Memory: one partition's range tombstones, one row per input sstable
//!    and one chunk; a partition of any size streams (module `nb`).
//! 4. Files are cut at partition boundaries once their uncompressed data
//!    passes `max_sstable_bytes`.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;

use crate::cassandra::nb::{Header, NbCompression, NbOptions, NbSummary, NbWriter};
use crate::compaction::merge::{MergeRules, PartitionMerge};
use crate::data::NO_DELETION_TIME;
use crate::db::Database;
use crate::error::{Error, Result};
use crate::fs::IoTag;
use crate::options::{CompactionClass, CompressorClass};
use crate::schema::TableSchema;
use crate::sstable::{PartitionHead, RowScanner};
use crate::table::Table;

/// How to export.
#[derive(Clone, Debug)]
pub struct ExportOptions {
    /// The directory that receives `<keyspace>/<table>/`.
    pub out: PathBuf,
    /// `None`: the table's own codec (LZ4 for dictionary LZ4, Zstd at its
    /// level for dictionary Zstd: Cassandra has no dictionaries).
    pub compression: Option<NbCompression>,
    /// Cut a new sstable once one holds this much uncompressed data.
    pub max_sstable_bytes: u64,
}

/// What an export wrote.
#[derive(Clone, Debug, serde::Serialize)]
pub struct ExportSummary {
    pub keyspace: String,
    pub table: String,
    pub directory: PathBuf,
    pub schema_file: PathBuf,
    pub compression: String,
    pub sstables: Vec<NbSummary>,
    pub partitions: u64,
    pub rows: u64,
    pub cells: u64,
    pub tombstones: u64,
    pub range_tombstone_markers: u64,
    pub uncompressed_bytes: u64,
    pub bytes: u64,
    pub seconds: f64,
    /// Table options Cassandra has no equivalent for, left out of schema.cql.
    pub options_not_carried: Vec<String>,
}

/// Progress: input partitions read so far and in all (a partition held
/// by several sstables counts once per sstable).
pub type Progress<'a> = &'a mut dyn FnMut(u64, u64);

/// Exports `keyspace.table` of `db` (module docs).
pub fn export_table(
    db: &Database,
    keyspace: &str,
    table_name: &str,
    opts: &ExportOptions,
    progress: Progress<'_>,
) -> Result<ExportSummary> {
    let started = Instant::now();
    let table = db.table(keyspace, table_name)?;
    let schema = table.schema();
    if opts.max_sstable_bytes == 0 {
        return Err(Error::InvalidInput(
            "the sstable size limit must be above 0".into(),
        ));
    }
    let ks_dir = opts.out.join(keyspace);
    let final_dir = ks_dir.join(table_name);
    if let Ok(mut entries) = std::fs::read_dir(&final_dir) {
        if entries.next().is_some() {
            return Err(Error::InvalidInput(format!(
                "{} already holds files: export into an empty directory",
                final_dir.display()
            )));
        }
    }
    if !table.is_read_only() {
        table.flush()?;
    }
    std::fs::create_dir_all(&ks_dir).map_err(|e| Error::io(&ks_dir, e))?;
    let staging = ks_dir.join(format!(".{table_name}.export-{}", std::process::id()));
    if staging.exists() {
        return Err(Error::InvalidInput(format!(
            "{} exists: another export of this table is running or was killed; remove it",
            staging.display()
        )));
    }
    std::fs::create_dir(&staging).map_err(|e| Error::io(&staging, e))?;
    let result = write_all(db, &table, &schema, opts, &staging, progress);
    let (sstables, compression, not_carried) = match result {
        Ok(r) => r,
        Err(e) => {
            let _ = std::fs::remove_dir_all(&staging);
            return Err(e);
        }
    };
    if final_dir.exists() {
        // Empty (checked above): rename(2) replaces an empty directory.
        std::fs::remove_dir(&final_dir).map_err(|e| Error::io(&final_dir, e))?;
    }
    std::fs::rename(&staging, &final_dir).map_err(|e| Error::io(&final_dir, e))?;
    db.fs().sync_dir(&ks_dir)?;
    let sum = |f: fn(&NbSummary) -> u64| sstables.iter().map(f).sum::<u64>();
    Ok(ExportSummary {
        keyspace: keyspace.to_string(),
        table: table_name.to_string(),
        schema_file: final_dir.join("schema.cql"),
        directory: final_dir,
        compression,
        partitions: sum(|s| s.partitions),
        rows: sum(|s| s.rows),
        cells: sum(|s| s.cells),
        tombstones: sum(|s| s.tombstones),
        range_tombstone_markers: sum(|s| s.range_tombstone_markers),
        uncompressed_bytes: sum(|s| s.uncompressed_bytes),
        bytes: sum(|s| s.data_bytes),
        sstables,
        seconds: started.elapsed().as_secs_f64(),
        options_not_carried: not_carried,
    })
}

type Written = (Vec<NbSummary>, String, Vec<String>);

fn write_all(
    db: &Database,
    table: &Arc<Table>,
    schema: &TableSchema,
    opts: &ExportOptions,
    dir: &Path,
    progress: Progress<'_>,
) -> Result<Written> {
    let compression = match opts.compression {
        Some(c) => c,
        None => match schema.options.compression.class {
            CompressorClass::None => NbCompression::None,
            CompressorClass::Lz4 | CompressorClass::Lz4WithDicts => NbCompression::Lz4,
            CompressorClass::Zstd | CompressorClass::ZstdWithDicts => NbCompression::Zstd {
                level: schema.options.compression.compression_level,
            },
        },
    };
    let chunk_length = schema.options.compression.chunk_length_in_kb as usize * 1024;
    let (schema_cql, not_carried) = cassandra_schema(db, schema, compression, chunk_length)?;
    let schema_path = dir.join("schema.cql");
    std::fs::write(&schema_path, schema_cql).map_err(|e| Error::io(&schema_path, e))?;

    let view = table.view();
    let readers: Vec<_> = view.version.iter().map(|l| l.handle.clone()).collect();
    let now = table.clock().now_seconds();
    let mut nb = NbOptions {
        compression,
        chunk_length,
        bloom_filter_fp_chance: schema.options.bloom_filter_fp_chance,
        min_timestamp_micros: i64::MAX,
        min_local_deletion_seconds: NO_DELETION_TIME,
        min_ttl_seconds: u32::MAX,
        now_seconds: now,
    };
    for r in &readers {
        let s = r.stats();
        nb.min_timestamp_micros = nb.min_timestamp_micros.min(s.min_timestamp_micros);
        nb.min_local_deletion_seconds = nb
            .min_local_deletion_seconds
            .min(s.min_local_deletion_seconds);
        nb.min_ttl_seconds = nb.min_ttl_seconds.min(s.min_ttl_seconds);
    }
    if nb.min_timestamp_micros == i64::MAX {
        nb.min_timestamp_micros = 0;
    }
    if nb.min_ttl_seconds == u32::MAX {
        nb.min_ttl_seconds = 0;
    }
    let header = Header::new(schema, &nb)?;
    let total: u64 = readers.iter().map(|r| r.stats().partition_count).sum();
    let mut scanners: Vec<RowScanner> = readers
        .iter()
        .map(|r| r.scan_rows(IoTag::compaction(0)))
        .collect::<Result<_>>()?;
    let mut heads: Vec<Option<PartitionHead>> = Vec::with_capacity(scanners.len());
    for s in scanners.iter_mut() {
        heads.push(s.next_partition()?);
    }
    let rules = MergeRules {
        gc_before_seconds: i64::MIN,
        max_purgeable_micros: i64::MIN,
        live_set: None,
    };
    let mut done = Vec::new();
    let mut generation = 1u64;
    let mut writer: Option<NbWriter> = None;
    let mut read_so_far = 0u64;
    let mut holders = Vec::new();
    while let Some(key) = heads.iter().flatten().map(|h| &h.key).min().cloned() {
        holders.clear();
        let mut parts = Vec::new();
        for (i, (head, scanner)) in heads.iter_mut().zip(scanners.iter_mut()).enumerate() {
            if let Some(h) = head.take_if(|h| h.key == key) {
                holders.push(i);
                parts.push((h, scanner));
            }
        }
        let (mut merge, deletion, static_row) = PartitionMerge::new(parts, rules.clone())?;
        if writer.is_none() {
            writer = Some(NbWriter::create(
                dir,
                generation,
                header.clone(),
                nb.clone(),
            )?);
            generation += 1;
        }
        let w = writer.as_mut().expect("created above");
        w.begin_partition(&key, &deletion, static_row.as_ref())?;
        while let Some(row) = merge.next_row()? {
            w.append_row(&row)?;
        }
        drop(merge);
        w.end_partition()?;
        if w.uncompressed_bytes() >= opts.max_sstable_bytes {
            if let Some(w) = writer.take() {
                done.push(w.finish()?);
            }
        }
        for &i in &holders {
            heads[i] = scanners[i].next_partition()?;
        }
        read_so_far += holders.len() as u64;
        progress(read_so_far.min(total), total);
    }
    if let Some(w) = writer.take() {
        done.push(w.finish()?);
    }
    progress(total, total);
    db.fs().sync_dir(dir)?;
    Ok((done, compression_name(compression), not_carried))
}

fn compression_name(c: NbCompression) -> String {
    match c {
        NbCompression::None => "none".into(),
        NbCompression::Lz4 => "LZ4Compressor".into(),
        NbCompression::Zstd { level } => format!("ZstdCompressor (level {level})"),
    }
}

/// Compaction sub-options Cassandra 5.0 knows, per class.
fn cassandra_compaction_option(class: CompactionClass, key: &str) -> bool {
    const COMMON: &[&str] = &[
        "enabled",
        "min_threshold",
        "max_threshold",
        "tombstone_threshold",
        "tombstone_compaction_interval",
        "unchecked_tombstone_compaction",
        "only_purge_repaired_tombstones",
        "log_all",
        "provide_overlapping_tombstones",
    ];
    let specific: &[&str] = match class {
        CompactionClass::SizeTieredCompactionStrategy => {
            &["bucket_low", "bucket_high", "min_sstable_size"]
        }
        CompactionClass::LeveledCompactionStrategy => &[
            "sstable_size_in_mb",
            "fanout_size",
            "single_sstable_uplevel",
        ],
        CompactionClass::TimeWindowCompactionStrategy => &[
            "compaction_window_unit",
            "compaction_window_size",
            "timestamp_resolution",
            "expired_sstable_check_frequency_seconds",
            "unsafe_aggressive_sstable_expiration",
        ],
        _ => &[],
    };
    COMMON.contains(&key) || specific.contains(&key)
}

/// The CQL that creates the table in Cassandra 5.0, and the options that
/// had to be left out (each named with why).
fn cassandra_schema(
    db: &Database,
    schema: &TableSchema,
    compression: NbCompression,
    chunk_length: usize,
) -> Result<(String, Vec<String>)> {
    let catalog = db.catalog();
    let ks = catalog.keyspace(&schema.keyspace)?;
    let mut not_carried = Vec::new();
    let mut out = String::new();
    let replication: Vec<String> = ks
        .replication
        .iter()
        .map(|(k, v)| {
            format!(
                "{}: {}",
                crate::cql::lexer::quote(k),
                crate::cql::lexer::quote(v)
            )
        })
        .collect();
    out.push_str(&format!(
        "CREATE KEYSPACE IF NOT EXISTS {} WITH replication = {{{}}} AND durable_writes = {};\n\n",
        crate::cql::ddl::cql_name(&schema.keyspace),
        replication.join(", "),
        ks.durable_writes
    ));
    out.push_str(&schema.types_cql());
    let create = schema.to_cql();
    // Keep the column list and key; replace Strata's options with Cassandra's.
    let head = match create.find(") WITH ") {
        Some(i) => &create[..i + 1],
        None => create.trim_end_matches(';'),
    };
    out.push_str(&head.replacen("CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1));
    let mut with: Vec<String> = Vec::new();
    if schema.clustering_columns().next().is_some() {
        let order: Vec<String> = schema
            .clustering_columns()
            .map(|c| {
                format!(
                    "{} {}",
                    crate::cql::ddl::cql_name(&c.name),
                    if c.descending { "DESC" } else { "ASC" }
                )
            })
            .collect();
        with.push(format!("CLUSTERING ORDER BY ({})", order.join(", ")));
    }
    let comp = &schema.options.compaction;
    let class = match comp.class() {
        CompactionClass::DateTieredCompactionStrategy => {
            not_carried.push(
                "compaction DateTieredCompactionStrategy: removed in Cassandra 5.0; \
                 TimeWindowCompactionStrategy with its defaults instead"
                    .into(),
            );
            CompactionClass::TimeWindowCompactionStrategy
        }
        CompactionClass::BlobCompactionStrategy => {
            not_carried.push(
                "compaction BlobCompactionStrategy: Cassandra has none; \
                 SizeTieredCompactionStrategy instead"
                    .into(),
            );
            CompactionClass::SizeTieredCompactionStrategy
        }
        c => c,
    };
    let mut compaction = format!("{{'class': '{}'", class.name());
    if class == comp.class() {
        for (k, v) in comp.options() {
            if cassandra_compaction_option(class, k) {
                compaction.push_str(&format!(
                    ", {}: {}",
                    crate::cql::lexer::quote(k),
                    crate::cql::lexer::quote(v)
                ));
            } else {
                not_carried.push(format!("compaction option {k}: Strata only"));
            }
        }
    }
    compaction.push('}');
    with.push(format!("compaction = {compaction}"));
    with.push(format!(
        "compression = {}",
        compression.cql_option(chunk_length)
    ));
    let o = &schema.options;
    with.push(format!(
        "default_time_to_live = {}",
        o.default_time_to_live_seconds
    ));
    with.push(format!("gc_grace_seconds = {}", o.gc_grace_seconds));
    with.push(format!(
        "bloom_filter_fp_chance = {}",
        o.bloom_filter_fp_chance
    ));
    if !o.comment.is_empty() {
        with.push(format!(
            "comment = {}",
            crate::cql::lexer::quote(&o.comment)
        ));
    }
    if o.memtable_flush_period_in_ms > 0 {
        with.push(format!(
            "memtable_flush_period_in_ms = {}",
            o.memtable_flush_period_in_ms
        ));
    }
    if matches!(
        o.compression.class,
        CompressorClass::Lz4WithDicts | CompressorClass::ZstdWithDicts
    ) {
        not_carried.push(
            "compression dictionaries: Cassandra 5.0 has none; the data is compressed without one"
                .into(),
        );
    }
    out.push_str(" WITH ");
    out.push_str(&with.join("\n    AND "));
    out.push_str(";\n");
    Ok((out, not_carried))
}
