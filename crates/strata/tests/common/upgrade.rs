//! Helpers for the `upgradesstables` tests (issue 14): a table of compressible
//! rows (text a codec can shrink: repeated words with a varying key), written
//! with LZ4 in sstables of different sizes, then switched to Zstd.
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

pub const CREATE: &str = "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH \
     compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16} AND \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";

pub const ZSTD: &str = "compression = {'class': 'ZstdCompressor', 'compression_level': 3}";

pub fn options(max_disk_bytes: Option<u64>) -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.concurrent_compactors = 0;
    o.table.max_disk_bytes = max_disk_bytes;
    // The quota is what these tests exercise, not the machine's free space.
    o.table.disk_reserve_bytes = 0;
    o
}

/// A value LZ4 and Zstd compress differently: words from a small vocabulary,
/// chosen by the key.
pub fn value(k: i32) -> String {
    const WORDS: [&str; 12] = [
        "directory",
        "entry",
        "README",
        ".md",
        "src",
        "lib.rs",
        "0755",
        "file",
        "target",
        "sha1_git",
        "Makefile",
        "LICENSE",
    ];
    let mut x = (k as u32).wrapping_mul(2_654_435_761);
    let mut s = String::with_capacity(300);
    while s.len() < 280 {
        x ^= x << 13;
        x ^= x >> 17;
        x ^= x << 5;
        s.push_str(WORDS[(x % 12) as usize]);
        s.push(if x & 16 == 0 { '/' } else { ' ' });
    }
    s
}

/// Opens (creating the table if needed) a database in `dir`.
pub fn open(dir: &Path, max_disk_bytes: Option<u64>) -> (Database, Arc<Table>) {
    let db = Database::open(dir, options(max_disk_bytes)).expect("open");
    let t = match db.table("ks", "t") {
        Ok(t) => t,
        Err(_) => db.create_table_cql(CREATE).expect("create"),
    };
    (db, t)
}

/// Writes keys `range` and flushes them into one sstable.
pub fn sstable_of(t: &Arc<Table>, range: std::ops::Range<i32>) {
    for k in range {
        t.insert(
            &[("k", Value::Int(k)), ("v", Value::Text(value(k)))],
            &WriteOptions::default(),
        )
        .expect("insert");
    }
    t.flush().expect("flush");
}

/// Three LZ4 sstables of 1000, 3000 and 6000 rows.
pub fn populate(t: &Arc<Table>) {
    sstable_of(t, 0..1000);
    sstable_of(t, 1000..4000);
    sstable_of(t, 4000..10000);
}

/// Keys of `range` that do not read back with their value.
pub fn missing(t: &Table, range: std::ops::Range<i32>) -> Vec<i32> {
    range
        .filter(|&k| {
            let rows = t
                .select(&[Value::Int(k)], &ClusteringRange::ALL, false, 1)
                .expect("read");
            !(rows.len() == 1 && rows[0][1].1 == Some(Value::Text(value(k))))
        })
        .collect()
}

pub fn live_bytes(t: &Table) -> u64 {
    t.view().sstables().iter().map(|s| s.file_size()).sum()
}
