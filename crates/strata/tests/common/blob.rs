//! Helpers for the blob strategy's tests (issue 13): a file store of
//! `ks.files (file text, block int, data blob, PRIMARY KEY (file, block))`
//! whose block contents are a function of (file, block, version), on a
//! simulated clock the tests move, without background compactors (tests run
//! compaction with `settle`).
#![allow(dead_code)]

use std::path::Path;
use std::sync::Arc;
use strata::clock::{Clock, SimClock};
use strata::compaction::executor::CompactionRecord;
use strata::compaction::executor::RateLimiter;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

pub const BLOCK_BYTES: usize = 4096;

pub fn create(extra: &str) -> String {
    format!(
        "CREATE TABLE ks.files (file text, block int, data blob, PRIMARY KEY (file, block)) \
         WITH gc_grace_seconds = 3600 AND compaction = {{'class': 'BlobCompactionStrategy'{extra}}}"
    )
}

pub fn open(dir: &Path, clock: &Arc<SimClock>) -> Database {
    let mut o = DbOptions::new(clock.clone());
    o.concurrent_compactors = 0;
    Database::open(dir, o).expect("open")
}

/// A database with the blob table (created with `extra` compaction options).
pub fn setup(dir: &Path, extra: &str) -> (Arc<SimClock>, Database, Arc<Table>) {
    let clock = SimClock::fixed();
    let db = open(dir, &clock);
    db.create_table_cql(&create(extra)).expect("create");
    let t = db.table("ks", "files").expect("table");
    (clock, db, t)
}

pub fn block(file: &str, block: i32, version: u8) -> Vec<u8> {
    let mut v = vec![version; BLOCK_BYTES];
    let tag = format!("{file}/{block}/{version}");
    v[..tag.len()].copy_from_slice(tag.as_bytes());
    v
}

/// Writes `blocks` blocks of `file` at version `version`; the clock ticks one
/// microsecond per write so every write has its own timestamp.
pub fn write_file(
    t: &Arc<Table>,
    clock: &SimClock,
    file: &str,
    blocks: std::ops::Range<i32>,
    version: u8,
) {
    for b in blocks {
        clock.advance_micros(1);
        t.insert(
            &[
                ("file", Value::Text(file.into())),
                ("block", Value::Int(b)),
                ("data", Value::Blob(block(file, b, version))),
            ],
            &WriteOptions::default(),
        )
        .expect("write block");
    }
}

pub fn delete_file(t: &Arc<Table>, clock: &SimClock, file: &str) {
    clock.advance_micros(1);
    let u = t
        .schema()
        .delete_partition(
            &[("file", Value::Text(file.into()))],
            &WriteOptions::default(),
            clock.now_micros(),
        )
        .expect("delete");
    t.apply(&u).expect("apply delete");
}

/// The blocks of `file` as (block number, data), in order.
pub fn read_file(t: &Table, file: &str) -> Vec<(i32, Vec<u8>)> {
    t.select(
        &[Value::Text(file.into())],
        &ClusteringRange::ALL,
        false,
        usize::MAX,
    )
    .expect("read")
    .into_iter()
    .map(|row| {
        let b = match &row[1].1 {
            Some(Value::Int(b)) => *b,
            other => panic!("block column: {other:?}"),
        };
        // A row whose data cell was deleted reads back with no data.
        let d = match &row[2].1 {
            Some(Value::Blob(d)) => d.clone(),
            None => Vec::new(),
            other => panic!("data column: {other:?}"),
        };
        (b, d)
    })
    .collect()
}

/// Runs compaction until nothing is due; returns what ran.
pub fn settle(t: &Arc<Table>) -> Vec<CompactionRecord> {
    t.compact_until_idle(&RateLimiter::new(0), 1000)
        .expect("compaction settles")
}

/// Live sstable ids, ascending.
pub fn ids(t: &Table) -> Vec<u64> {
    t.view().sstables().iter().map(|s| s.id()).collect()
}
