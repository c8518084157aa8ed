//! Seed 001's open worry as an experiment (issue 14 part 5): "will it be
//! possible to recompact the entire table with the limited remaining space?"
//! A table written with LZ4 fills 60% of a `max_disk_bytes` quota, is switched
//! to Zstd, and `upgradesstables -a` rewrites it under the quota; the same run
//! with a snapshot present is refused up front with its estimate.
//!
//! Owns: the protocol and its figures ([`Recompression`]). The data comes from
//! the caller (`fill`), so `bench compression` runs it on its directory-listing
//! dataset; [`run`] creates and removes its own database under `dir`. One
//! caller thread, plus one sampling thread that polls disk usage while the
//! upgrade runs.
//!
//! Protocol, exactly:
//! 1. A fresh database with `max_disk_bytes = quota` (reserve 0: the quota is
//!    the constraint studied) and no commit log (its active segment, up to
//!    32 MiB, would be most of a small quota; the question is about sstables),
//!    one table under LZ4 with background compaction disabled, so the sstables
//!    are the flushes and nothing else writes.
//! 2. `fill` writes batches until the data directory holds at least 60% of the
//!    quota (each batch flushed; usage is the guard's own figure).
//! 3. ALTER to Zstd level 3. A dry run gives `dry_run_estimate_bytes` (the
//!    table's sstable bytes after the run, estimated from sampled chunks).
//! 4. A snapshot is taken and a real run attempted: `refused_with_snapshot`
//!    and its `refusal_message`. The snapshot is cleared.
//! 5. The real run (`-a`, one job) while a thread samples the data
//!    directory's usage every 2 ms: `peak_extra_bytes` = highest sample minus
//!    the usage before the run. `final_bytes` = sstable bytes after it;
//!    `final_ratio` = tablestats' compression ratio after it.
//!
//! Invariants:
//! 1. Byte figures come from the engine (the guard's usage, file sizes,
//!    tablestats), never from the estimate being judged.
//! 2. The database directory is removed when the run ends, failed or not.

use serde::Serialize;
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use strata::clock::SystemClock;
use strata::db::{Database, DbOptions};
use strata::table::Table;
use strata::tablestats::TableStats;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};
use strata::{Error, Result};

/// The experiment's figures (JSON `"recompression"` of `bench compression`).
#[derive(Clone, Debug, Serialize)]
pub struct Recompression {
    pub quota_bytes: u64,
    /// Data directory usage once filled (at least 60% of the quota).
    pub filled_bytes: u64,
    /// Sstable bytes under LZ4 before the run.
    pub lz4_bytes: u64,
    pub largest_sstable_bytes: u64,
    pub peak_extra_bytes: u64,
    pub dry_run_estimate_bytes: u64,
    pub final_bytes: u64,
    pub final_ratio: f64,
    pub refused_with_snapshot: bool,
    pub refusal_message: Option<String>,
    pub sstables_rewritten: usize,
}

/// Writes the next batch of rows into the table (the caller's dataset);
/// called until the quota is filled to the target. `batch` counts from 0.
pub type Fill<'a> = dyn FnMut(&Arc<Table>, u64) -> Result<()> + 'a;

/// Runs the experiment in a fresh database under `dir` (module docs).
pub fn run(
    dir: &Path,
    quota_bytes: u64,
    create_cql: &str,
    fill: &mut Fill<'_>,
) -> Result<Recompression> {
    if quota_bytes < 1 << 20 {
        return Err(Error::InvalidInput(format!(
            "--recompression-quota-mb: {quota_bytes} bytes is below 1 MiB"
        )));
    }
    let db_dir = dir.join("recompression");
    let result = run_in(&db_dir, quota_bytes, create_cql, fill);
    let _ = std::fs::remove_dir_all(&db_dir);
    result
}

fn run_in(dir: &Path, quota: u64, create_cql: &str, fill: &mut Fill<'_>) -> Result<Recompression> {
    let mut opts = DbOptions::new(SystemClock::new());
    opts.table.max_disk_bytes = Some(quota);
    opts.table.disk_reserve_bytes = 0;
    opts.concurrent_compactors = 0;
    // No commit log: the question is about sstables, and the log's active
    // segment (up to 32 MiB) would be most of a small quota.
    opts.commitlog = None;
    opts.purpose = "strata bench compression (recompression)".into();
    let db = Database::open(dir, opts)?;
    let t = db.create_table_cql(create_cql)?;
    let (ks, name) = (t.schema().keyspace.clone(), t.schema().name.clone());
    let used = |t: &Table| -> Result<u64> { Ok(t.disk_room()?.quota.map_or(0, |(used, _)| used)) };
    let target = quota / 10 * 6;
    let mut batch = 0u64;
    while used(&t)? < target {
        fill(&t, batch)?;
        t.flush()?;
        batch += 1;
        if batch > 100_000 {
            return Err(Error::InvalidInput(
                "the fill never reached 60% of the quota".into(),
            ));
        }
    }
    let filled_bytes = used(&t)?;
    let sizes: Vec<u64> = t.view().sstables().iter().map(|s| s.file_size()).collect();
    let lz4_bytes: u64 = sizes.iter().sum();
    let largest = sizes.iter().copied().max().unwrap_or(0);
    db.alter_table_options(
        &ks,
        &name,
        "compression = {'class': 'ZstdCompressor', 'compression_level': 3}",
    )?;
    let all = UpgradeOptions {
        all: true,
        jobs: 1,
        ..UpgradeOptions::default()
    };
    let dry = upgrade_sstables(
        &t,
        &UpgradeOptions {
            dry_run: true,
            ..all.clone()
        },
        &mut |_, _| {},
    )?;
    strata::maintenance::snapshot(&t, "before-recompression")?;
    let refusal = match upgrade_sstables(&t, &all, &mut |_, _| {}) {
        Ok(_) => None,
        Err(e) => Some(e.to_string()),
    };
    strata::maintenance::clear_snapshot(&t, Some("before-recompression"))?;
    // A refused run wrote nothing; had it not been refused it would have
    // rewritten everything already, and the figures below would say so.
    let before = used(&t)?;
    let peak = Arc::new(AtomicU64::new(before));
    let stop = Arc::new(AtomicBool::new(false));
    let report = std::thread::scope(|scope| {
        let (peak2, stop2, t2) = (peak.clone(), stop.clone(), t.clone());
        scope.spawn(move || {
            while !stop2.load(Ordering::Relaxed) {
                if let Ok(Some((u, _))) = t2.disk_room().map(|r| r.quota) {
                    peak2.fetch_max(u, Ordering::Relaxed);
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        });
        let r = upgrade_sstables(&t, &all, &mut |_, _| {});
        stop.store(true, Ordering::Relaxed);
        r
    })?;
    let final_bytes = t.view().sstables().iter().map(|s| s.file_size()).sum();
    let out = Recompression {
        quota_bytes: quota,
        filled_bytes,
        lz4_bytes,
        largest_sstable_bytes: largest,
        peak_extra_bytes: peak.load(Ordering::Relaxed).saturating_sub(before),
        dry_run_estimate_bytes: dry.estimated_bytes_after,
        final_bytes,
        final_ratio: TableStats::of(&t).sstable_compression_ratio,
        refused_with_snapshot: refusal.is_some(),
        refusal_message: refusal,
        sstables_rewritten: report.rewritten.len(),
    };
    drop(t);
    db.close()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::schema::WriteOptions;
    use strata::types::Value;

    #[test]
    fn lz4_to_zstd_fits_at_sixty_percent_and_the_snapshot_run_is_refused() {
        let dir = tempfile::tempdir().expect("tempdir");
        let create = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH \
             compression = {'class': 'LZ4Compressor'} AND \
             compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";
        let mut fill = |t: &Arc<Table>, batch: u64| -> Result<()> {
            for i in 0..2000u64 {
                let k = (batch * 2000 + i) as i32;
                // Forty hashed letters per row keep zstd's gain over LZ4 that of
                // a mixed table: on the repeated text alone zstd 3 shrinks
                // LZ4's files to 64% (since format 4 dropped the dense,
                // uncompressed index), and at 60% of the quota the snapshot
                // and the new files then both fit: no refusal to test.
                let mut x = (k as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
                let noise: String = (0..40)
                    .map(|_| {
                        x ^= x << 13;
                        x ^= x >> 7;
                        x ^= x << 17;
                        char::from(
                            b"abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_"
                                [(x % 64) as usize],
                        )
                    })
                    .collect();
                let v = format!(
                    "entry {k} of a directory listing README.md src/lib.rs 0644 {} ",
                    k % 97
                );
                let v = v.repeat(3) + &noise;
                t.insert(
                    &[("k", Value::Int(k)), ("v", Value::Text(v))],
                    &WriteOptions::default(),
                )?;
            }
            Ok(())
        };
        let r = run(dir.path(), 4 << 20, create, &mut fill).expect("experiment");
        assert!(r.filled_bytes >= r.quota_bytes / 10 * 6, "{r:?}");
        assert!(r.refused_with_snapshot, "{r:?}");
        assert!(
            r.refusal_message
                .as_deref()
                .is_some_and(|m| m.contains("clearsnapshot")),
            "{r:?}"
        );
        assert!(r.sstables_rewritten > 0);
        assert!(r.final_bytes < r.lz4_bytes, "{r:?}");
        assert!(r.peak_extra_bytes <= 2 * r.largest_sstable_bytes, "{r:?}");
        let error =
            (r.dry_run_estimate_bytes as f64 - r.final_bytes as f64).abs() / r.final_bytes as f64;
        assert!(error < 0.10, "{r:?}");
        assert!(!dir.path().join("recompression").exists(), "cleaned up");
    }
}
