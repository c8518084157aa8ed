//! Scenario: reads faster than a microsecond (a key no sstable holds, an
//! empty memtable) still add their time to the table's read latency total,
//! so `tablestats`' mean read latency is the reads' mean. The total once
//! summed whole microseconds per read, and each such read added 0.

mod common;

use std::time::Instant;
use strata::data::ClusteringRange;
use strata::types::Value;

#[test]
fn read_latency_counts_sub_microsecond_reads() {
    let dir = tempfile::tempdir().unwrap();
    let db = common::open(dir.path());
    db.create_keyspace("ks").unwrap();
    let t = db.create_table_cql(common::CREATE).unwrap();
    common::write(&t, 0..100);
    t.flush().unwrap();
    let schema = t.schema();
    let absent: Vec<_> = (1000..6000)
        .map(|k| schema.decorated_key(&[Value::Int(k)]).unwrap())
        .collect();
    let reads_before = t
        .metrics
        .read_count
        .load(std::sync::atomic::Ordering::Relaxed);
    let started = Instant::now();
    for key in &absent {
        let r = t.read(key, &ClusteringRange::ALL, false, 1).unwrap();
        assert!(r.rows.is_empty());
    }
    let wall = started.elapsed().as_nanos() as u64;
    let m = &t.metrics;
    assert_eq!(
        m.read_count.load(std::sync::atomic::Ordering::Relaxed) - reads_before,
        absent.len() as u64
    );
    let recorded = m
        .read_latency_nanos_total
        .load(std::sync::atomic::Ordering::Relaxed);
    // The loop is all reads, so their recorded time is most of its wall
    // time; rounded down to whole microseconds it would be a small part.
    assert!(
        recorded * 2 >= wall && recorded <= wall,
        "recorded {recorded} ns of reads in a loop of {wall} ns ({} reads)",
        absent.len()
    );
    db.close().unwrap();
}
