//! A scan that hands rows over as it finds them (`Table::scan_rows`, borrowed
//! from the cached chunk when one sstable alone holds the partition) returns,
//! page after page, exactly the live rows that point reads of each partition
//! return: across a partition held by one sstable (the borrowing path), by
//! two sstables or an sstable and the memtable (merged), or by the memtable
//! alone; with cells expired by TTL, cells and rows deleted, and pages that
//! end inside a partition. Point reads are the independent reference: they
//! reconcile through the read path, not the scan's merge.

use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::{ClusteringRange, Row};
use strata::db::{Database, DbOptions};
use strata::read::PagingState;
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

fn put(t: &Arc<Table>, clock: &SimClock, k: i32, c: i32, v: &str, ttl: Option<u32>) {
    clock.advance_micros(1);
    let opts = WriteOptions {
        timestamp_micros: None,
        ttl_seconds: ttl,
    };
    t.insert(
        &[
            ("k", Value::Int(k)),
            ("c", Value::Int(c)),
            ("v", Value::Text(format!("{v}-{k}-{c}"))),
            ("w", Value::Text(format!("w{k}"))),
        ],
        &opts,
    )
    .expect("insert");
}

/// Every live row, partition by partition in token order, read one
/// partition at a time.
fn by_point_reads(t: &Table, keys: std::ops::Range<i32>) -> Vec<(Vec<u8>, Row)> {
    let schema = t.schema();
    let mut parts: Vec<_> = keys
        .map(|k| schema.decorated_key(&[Value::Int(k)]).expect("key"))
        .collect();
    parts.sort();
    let mut out = Vec::new();
    for key in parts {
        let result = t
            .read(&key, &ClusteringRange::ALL, false, usize::MAX)
            .expect("read");
        for row in result.rows {
            out.push((key.key.to_vec(), row));
        }
    }
    out
}

fn by_scan_rows(t: &Table, page_rows: usize) -> Vec<(Vec<u8>, Row)> {
    let mut out = Vec::new();
    let mut paging: Option<PagingState> = None;
    loop {
        let mut n = 0;
        let next = t
            .scan_rows(paging.as_ref(), page_rows, &mut |r| {
                assert!(!r.is_static, "the table has no static column");
                n += 1;
                out.push((r.key.to_vec(), r.to_row()));
            })
            .expect("scan");
        assert!(n <= page_rows, "a page of {n} rows exceeds {page_rows}");
        match next {
            Some(p) => {
                assert!(n > 0, "an empty page that is not the last");
                paging = Some(p);
            }
            None => return out,
        }
    }
}

#[test]
fn scan_rows_hand_over_what_point_reads_return() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::new(1_700_000_000_000_000);
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db
        .create_table_cql(
            "CREATE TABLE ks.t (k int, c int, v text, w text, PRIMARY KEY (k, c)) \
             WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
        )
        .expect("create");
    // First sstable: partitions 0..60 of 1 to 5 rows, every third row's
    // cells expiring after 10 seconds.
    for k in 0..60 {
        for c in 0..=(k % 5) {
            let ttl = (c % 3 == 2).then_some(10);
            put(&t, &clock, k, c, "a", ttl);
        }
    }
    t.flush().expect("flush");
    // Second sstable: 40..80 overwritten in part, with a cell deleted and a
    // row deleted in some partitions.
    for k in 40..80 {
        put(&t, &clock, k, 1, "b", None);
        if k % 4 == 0 {
            clock.advance_micros(1);
            t.update(
                &[("k", Value::Int(k)), ("c", Value::Int(0))],
                &[("v", None)],
                &WriteOptions::default(),
            )
            .expect("update");
        }
        if k % 7 == 0 {
            clock.advance_micros(1);
            t.delete_row(
                &[("k", Value::Int(k)), ("c", Value::Int(2))],
                &WriteOptions::default(),
            )
            .expect("delete");
        }
    }
    t.flush().expect("flush");
    // The memtable: 70..90.
    for k in 70..90 {
        put(&t, &clock, k, 3, "m", None);
    }
    clock.advance_seconds(20);

    let want = by_point_reads(&t, 0..90);
    assert!(want.len() > 150, "{} rows", want.len());
    assert!(
        want.iter().all(|(_, r)| !r.cells.is_empty()),
        "the expired rows are gone"
    );
    for page_rows in [1, 3, 7, 1000] {
        assert_eq!(by_scan_rows(&t, page_rows), want, "pages of {page_rows}");
    }
    // After a major compaction every partition is one sstable's: all of
    // them take the borrowing path.
    t.flush().expect("flush");
    t.compact_major(db.compaction_limiter()).expect("compact");
    assert_eq!(t.view().sstables().len(), 1, "one sstable after the major");
    for page_rows in [2, 1000] {
        assert_eq!(
            by_scan_rows(&t, page_rows),
            want,
            "compacted, pages of {page_rows}"
        );
    }
    db.close().expect("close");
}
