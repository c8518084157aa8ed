//! Compaction commands: `compact`, `garbagecollect`, `compactionstats`,
//! `compactionhistory` (nodetool's names and figures; `--format` everywhere).

use crate::bounds::range;
use crate::remote::{open_admin_db as open_db, open_admin_db_read_only as open_db_read_only};
use crate::select_tables;
use clap::Args;
use std::path::Path;
use strata::compaction::executor::CompactionRecord;
use strata::Result;

#[derive(Args, Debug)]
pub struct CompactArgs {
    /// `keyspace` or `keyspace.table`; all tables when absent.
    pub target: Option<String>,
    /// Merge exactly these sstable ids (nodetool `compact --user-defined`).
    #[arg(long, value_delimiter = ',', value_parser = range(1u64, u64::MAX,
        "sstable ids start at 1"))]
    pub user_defined: Vec<u64>,
    /// Output level for --user-defined, 0 to 8.
    #[arg(long, default_value_t = 0, value_parser = range(0u32, strata::compaction::lcs::MAX_LEVEL,
        "LCS has levels 0 to 8"))]
    pub level: u32,
    #[command(flatten)]
    pub out: crate::format::OutputArgs,
    /// Sizes in KiB, MiB, GiB instead of bytes (nodetool's -H).
    #[arg(short = 'H', long = "human-readable")]
    pub human: bool,
}

#[derive(Args, Debug)]
pub struct TargetJsonArgs {
    pub target: Option<String>,
    #[command(flatten)]
    pub out: crate::format::OutputArgs,
    /// Sizes in KiB, MiB, GiB instead of bytes (nodetool's -H).
    #[arg(short = 'H', long = "human-readable")]
    pub human: bool,
}

/// Bytes as a number, or human-readable with `-H`.
fn size(bytes: u64, human: bool) -> String {
    if human {
        crate::admin::human_bytes(bytes)
    } else {
        bytes.to_string()
    }
}

fn print_records(
    records: &[CompactionRecord],
    out: crate::format::OutputArgs,
    human: bool,
) -> Result<()> {
    if !out.is_table() {
        // The record as stored, with its time also as ISO-8601 UTC.
        let mut list = Vec::with_capacity(records.len());
        for r in records {
            let mut v = serde_json::to_value(r)
                .map_err(|e| strata::Error::InvalidInput(format!("JSON: {e}")))?;
            if let Some(o) = v.as_object_mut() {
                o.insert(
                    "finished_at".into(),
                    strata::types::iso8601_seconds(r.finished_at_seconds).into(),
                );
            }
            list.push(v);
        }
        out.print_report(&list)?;
        return Ok(());
    }
    outln!(
        "{:<20} {:<24} {:<9} {:<18} {:>12} {:>12} {:>10} {:>10} {:>9}",
        "finished_at",
        "table",
        "kind",
        "reason",
        "bytes_in",
        "bytes_out",
        "parts_in",
        "parts_out",
        "purged"
    );
    for r in records {
        outln!(
            "{:<20} {:<24} {:<9} {:<18} {:>12} {:>12} {:>10} {:>10} {:>9}",
            strata::types::iso8601_seconds(r.finished_at_seconds),
            format!("{}.{}", r.keyspace, r.table),
            r.kind,
            r.reason,
            size(r.bytes_in, human),
            size(r.bytes_out, human),
            r.partitions_in,
            r.partitions_out,
            r.tombstones_purged + r.expired_cells_purged
        );
    }
    Ok(())
}

/// `strata compact`: major (or user-defined) compaction, synchronously.
pub fn compact(dir: &Path, args: CompactArgs) -> Result<()> {
    let db = open_db(dir)?;
    let limiter = db.compaction_limiter().clone();
    let mut records = Vec::new();
    for t in select_tables(&db, args.target.as_deref())? {
        if args.user_defined.is_empty() {
            records.extend(t.compact_major(&limiter)?);
        } else {
            records.push(t.compact_user_defined(&args.user_defined, args.level, &limiter)?);
        }
    }
    print_records(&records, args.out, args.human)?;
    db.close()
}

/// `strata garbagecollect`: single-sstable rewrites that purge what the rules allow.
pub fn garbage_collect(dir: &Path, args: TargetJsonArgs) -> Result<()> {
    let db = open_db(dir)?;
    let limiter = db.compaction_limiter().clone();
    let mut records = Vec::new();
    for t in select_tables(&db, args.target.as_deref())? {
        records.extend(t.garbage_collect(&limiter)?);
    }
    print_records(&records, args.out, args.human)?;
    db.close()
}

/// `strata compactionstats`: pending tasks (strategy estimate), an estimate of the
/// bytes they would read, and the tasks running in this process
/// (`strata::tablestats::compaction_stats`).
pub fn compaction_stats(dir: &Path, args: TargetJsonArgs) -> Result<()> {
    let db = open_db_read_only(dir)?;
    let stats = strata::tablestats::compaction_stats(&select_tables(&db, args.target.as_deref())?);
    if !args.out.print_report(&stats)? {
        outln!("pending tasks: {}", stats.pending_tasks);
        outln!(
            "pending bytes (estimate): {}",
            size(stats.pending_bytes, args.human)
        );
        outln!(
            "{:<6} {:<24} {:>14} {:>14} {:>8}  description",
            "id",
            "table",
            "done",
            "total",
            "%"
        );
        for a in &stats.active {
            let pct = if a.bytes_total == 0 {
                100.0
            } else {
                a.bytes_done as f64 * 100.0 / a.bytes_total as f64
            };
            outln!(
                "{:<6} {:<24} {:>14} {:>14} {:>7.1}%  {}",
                a.id,
                format!("{}.{}", a.keyspace, a.table),
                size(a.bytes_done, args.human),
                size(a.bytes_total, args.human),
                pct,
                a.description
            );
        }
    }
    db.close()
}

/// `strata compactionhistory`: every recorded compaction, oldest first.
pub fn compaction_history(dir: &Path, args: TargetJsonArgs) -> Result<()> {
    let db = open_db_read_only(dir)?;
    let mut records = Vec::new();
    for t in select_tables(&db, args.target.as_deref())? {
        records.extend(t.compaction_history());
    }
    records.sort_by_key(|r| r.finished_at_seconds);
    print_records(&records, args.out, args.human)?;
    db.close()
}
