//! A read judges TTLs at the clock's "now", but a read of a key no source
//! holds has nothing to judge: it must not read the clock at all (the wall
//! clock was 6% of such a read, and a Bloom filter answers most reads of a
//! missing key). A read of a present key reads it once, however many sources
//! hold the row.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use strata::clock::{Clock, SimClock};
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::types::Value;

/// A simulated clock that counts how often it is read.
#[derive(Debug)]
struct Counting {
    inner: Arc<SimClock>,
    reads: AtomicU64,
}

impl Clock for Counting {
    fn now_micros(&self) -> i64 {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.inner.now_micros()
    }
}

#[test]
fn a_read_of_a_missing_key_never_reads_the_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = Arc::new(Counting {
        inner: SimClock::new(1_700_000_000_000_000),
        reads: AtomicU64::new(0),
    });
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.kv (k int PRIMARY KEY, v text) \
             WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
        )
        .expect("create");
    let put = |k: i32, v: &str| {
        t.insert(
            &[("k", Value::Int(k)), ("v", Value::Text(v.into()))],
            &WriteOptions {
                timestamp_micros: None,
                ttl_seconds: Some(3600),
            },
        )
        .expect("insert");
    };
    // Key 1 in two sstables and the memtable; keys 2.. nowhere.
    put(1, "a");
    t.flush().expect("flush");
    put(1, "b");
    t.flush().expect("flush");
    put(1, "c");
    let schema = t.schema();
    let reads_for = |k: i32| {
        let key = schema.decorated_key(&[Value::Int(k)]).expect("key");
        let before = clock.reads.load(Ordering::Relaxed);
        let result = t
            .read(&key, &ClusteringRange::ALL, false, 10)
            .expect("read");
        (
            clock.reads.load(Ordering::Relaxed) - before,
            result.rows.len(),
        )
    };
    for k in 2..50 {
        assert_eq!(reads_for(k), (0, 0), "key {k}: missing, no clock read");
    }
    assert_eq!(
        reads_for(1),
        (1, 1),
        "present: one clock read, one live row"
    );
    db.close().expect("close");
}
