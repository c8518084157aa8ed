//! Helpers shared by the data-directory safety tests (issue 10): a small table of
//! `k int PRIMARY KEY, v text` rows whose values are a function of the key, so a
//! test can check every row it wrote.
#![allow(dead_code)]

pub mod blob;
pub mod child;
pub mod golden;
pub mod large_values;
pub mod old_format;
pub mod upgrade;
pub mod writer;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

pub const CREATE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";

pub fn options() -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.concurrent_compactors = 0;
    o
}

pub fn open(dir: &Path) -> Database {
    Database::open(dir, options()).expect("open")
}

pub fn value(k: i32) -> String {
    format!("value-{k}-{}", "x".repeat((k % 7) as usize))
}

/// Inserts keys `range` into `t`.
pub fn write(t: &Arc<Table>, range: std::ops::Range<i32>) {
    for k in range {
        t.insert(
            &[("k", Value::Int(k)), ("v", Value::Text(value(k)))],
            &WriteOptions::default(),
        )
        .expect("insert");
    }
}

/// Whether key `k` reads back with its value (`Err` passes the read's error on).
pub fn read(t: &Table, k: i32) -> strata::Result<bool> {
    let rows = t.select(&[Value::Int(k)], &ClusteringRange::ALL, false, 1)?;
    Ok(rows.len() == 1 && rows[0][1].1 == Some(Value::Text(value(k))))
}

/// Keys of `range` that read back exactly.
pub fn readable(t: &Table, range: std::ops::Range<i32>) -> usize {
    range.filter(|&k| matches!(read(t, k), Ok(true))).count()
}

pub fn table_dir(data: &Path) -> PathBuf {
    data.join("ks").join("t")
}

/// The sstable files of a table directory, sorted.
pub fn sstables(table_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(table_dir)
        .expect("table dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-Data.db"))
        .collect();
    v.sort();
    v
}

/// A data directory with one table holding keys `0..n` in `flushes` sstables.
pub fn populated(dir: &Path, n: i32, flushes: i32) {
    let db = open(dir);
    let t = db.create_table_cql(CREATE).expect("create");
    let step = n / flushes;
    for f in 0..flushes {
        write(
            &t,
            f * step..if f + 1 == flushes { n } else { (f + 1) * step },
        );
        t.flush().expect("flush");
    }
    db.close().expect("close");
}

/// Every file under `dir` but `LOCK` (which every read-write open, refused or
/// not, writes its description into) with its size and CRC32C: equal before
/// and after means nothing was written, created or deleted.
pub fn tree_listing(dir: &Path) -> std::collections::BTreeMap<String, (u64, u32)> {
    fn walk(d: &Path, out: &mut std::collections::BTreeMap<String, (u64, u32)>) {
        let Ok(entries) = std::fs::read_dir(d) else {
            return;
        };
        for e in entries.flatten() {
            let p = e.path();
            if p.is_dir() {
                out.insert(format!("{}/", p.display()), (0, 0));
                walk(&p, out);
            } else if p.file_name().is_some_and(|n| n != "LOCK") {
                let bytes = std::fs::read(&p).unwrap_or_default();
                out.insert(
                    p.display().to_string(),
                    (bytes.len() as u64, crc32c::crc32c(&bytes)),
                );
            }
        }
    }
    let mut out = std::collections::BTreeMap::new();
    walk(dir, &mut out);
    out
}
