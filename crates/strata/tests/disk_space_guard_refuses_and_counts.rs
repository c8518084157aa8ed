//! The disk-space guard: with a data-directory limit (`max_disk_bytes`), a flush
//! whose output would not fit is refused before it starts, the refusal is counted,
//! writes are refused once memory fills, and everything resumes (nothing lost)
//! when the limit is raised — here by reopening with a larger limit.

use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::tablestats::TableStats;
use strata::types::Value;

fn options(limit: Option<u64>) -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.table.max_disk_bytes = limit;
    o.table.disk_reserve_bytes = 0;
    o
}

#[test]
fn flush_over_the_limit_is_refused_counted_and_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let mut acknowledged;
    {
        // Enough for the schema and commit log, not for a 64 KiB+ sstable.
        let db = Database::open(dir.path(), options(Some(40 * 1024 * 1024))).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v blob) WITH memtable_flush_threshold_kb = 256")
            .unwrap();
        // Use up the budget with flushed data first.
        let used_before = {
            for i in 0..1000 {
                t.insert(
                    &[("k", Value::Int(i)), ("v", Value::Blob(vec![1; 100]))],
                    &WriteOptions::default(),
                )
                .unwrap();
            }
            t.flush().unwrap();
            acknowledged = 1000;
            TableStats::of(&t).space_refusals
        };
        assert_eq!(used_before, 0);
        db.close().unwrap();
    }
    let used = dir_size(dir.path());
    {
        // Now a limit just above what is used: the next flushes cannot fit.
        let db = Database::open(dir.path(), options(Some(used + 16 * 1024))).unwrap();
        let t = db.table("ks", "t").unwrap();
        let mut refused = false;
        for i in 1000..200_000 {
            match t.insert(
                &[("k", Value::Int(i)), ("v", Value::Blob(vec![2; 100]))],
                &WriteOptions::default(),
            ) {
                Ok(()) => acknowledged = i + 1,
                Err(e) => {
                    assert!(
                        e.to_string().contains("max_disk_bytes"),
                        "the error says why: {e}"
                    );
                    refused = true;
                    break;
                }
            }
        }
        assert!(refused, "writes must be refused once flushes cannot fit");
        let stats = TableStats::of(&t);
        assert!(
            stats.space_refusals >= 1,
            "refusals are counted: {}",
            stats.space_refusals
        );
        assert!(
            dir_size(dir.path()) <= used + 16 * 1024 + 1024 * 1024,
            "the guard kept the directory near its limit"
        );
        // Dropped without close: the acknowledged writes are in the commit log.
    }
    let db = Database::open(dir.path(), options(None)).unwrap();
    let t = db.table("ks", "t").unwrap();
    for i in (0..acknowledged).step_by(997) {
        assert_eq!(
            t.select(&[Value::Int(i)], &ClusteringRange::ALL, false, 1)
                .unwrap()
                .len(),
            1,
            "row {i}"
        );
    }
    db.close().unwrap();
}

fn dir_size(p: &std::path::Path) -> u64 {
    std::fs::read_dir(p)
        .unwrap()
        .flatten()
        .map(|e| {
            if e.file_type().unwrap().is_dir() {
                dir_size(&e.path())
            } else {
                e.metadata().unwrap().len()
            }
        })
        .sum()
}
