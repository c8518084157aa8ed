//! A flush copies the memtable's encoded rows into the sstable as they are
//! when the memtable's own encoding base bounds everything it holds, and
//! decodes and re-encodes them against the data's minimums when a write went
//! in with an older timestamp (issue 15). Either way every row, static row,
//! TTL and deletion reads back after the flush exactly as it read from the
//! memtable before it, and the sstable's base is a lower bound of its data
//! (what the offline salvage relies on). Row timestamps take the fixed width
//! of the data's span, copied rows included.

mod common;

use std::sync::Arc;
use strata::data::ClusteringRange;
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const PARTITIONS: i32 = 120;

#[derive(Clone, Copy, Debug, PartialEq)]
enum Timestamps {
    /// The wall clock's, as the writes go in.
    Now,
    /// The wall clock's, and one write far in the past.
    OneOld,
    /// Client timestamps spread over 5 s ahead of the clock: a span that
    /// takes a 4-byte varint and 3 fixed bytes.
    SpreadAhead,
}

fn write(t: &Arc<Table>, timestamps: Timestamps) {
    let ahead = t.clock().now_micros() + 1_000_000;
    for p in 0..PARTITIONS {
        // One-row partitions (lone rows in the memtable) and wide ones (trees).
        for c in 0..(1 + (p % 7) * (p % 11) * 3) {
            let mut row = vec![
                ("p", Value::Int(p)),
                ("c", Value::Int(c)),
                ("v", Value::Text(format!("v-{p}-{c}"))),
            ];
            if c == 0 && p % 5 == 0 {
                row.push(("s", Value::Text(format!("static-{p}"))));
            }
            let opts = WriteOptions {
                ttl_seconds: (c % 4 == 1).then_some(86_400 + c as u32),
                timestamp_micros: (timestamps == Timestamps::SpreadAhead)
                    .then_some(ahead + i64::from(p) * 40_000 + i64::from(c)),
            };
            t.insert(&row, &opts).unwrap();
        }
        if p % 3 == 0 {
            let key = [("p", Value::Int(p)), ("c", Value::Int(1))];
            t.delete_row(&key, &WriteOptions::default()).unwrap();
        }
    }
    // Overwrites: the memtable reconciles them into new rows.
    for p in (0..PARTITIONS).step_by(4) {
        let row = [
            ("p", Value::Int(p)),
            ("c", Value::Int(0)),
            ("v", Value::Text(format!("again-{p}"))),
        ];
        t.insert(&row, &WriteOptions::default()).unwrap();
    }
    if timestamps == Timestamps::OneOld {
        let row = [
            ("p", Value::Int(PARTITIONS + 1)),
            ("c", Value::Int(0)),
            ("v", Value::Text("from the past".into())),
        ];
        let opts = WriteOptions {
            ttl_seconds: None,
            timestamp_micros: Some(1_000_000),
        };
        t.insert(&row, &opts).unwrap();
    }
}

fn read_all(t: &Table) -> Vec<Vec<strata::table::TypedRow>> {
    (0..PARTITIONS + 2)
        .map(|p| {
            t.select(&[Value::Int(p)], &ClusteringRange::ALL, false, usize::MAX)
                .unwrap()
        })
        .collect()
}

#[test]
fn flushed_rows_read_back_as_the_memtable_held_them() {
    for timestamps in [Timestamps::Now, Timestamps::OneOld, Timestamps::SpreadAhead] {
        let with_old_timestamp = timestamps == Timestamps::OneOld;
        let dir = tempfile::tempdir().unwrap();
        let db = common::open(dir.path());
        let t = db
            .create_table_cql(
                "CREATE TABLE ks.t (p int, c int, s text STATIC, v text, PRIMARY KEY (p, c)) \
                 WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
            )
            .unwrap();
        write(&t, timestamps);
        let before = read_all(&t);
        assert!(before.iter().map(Vec::len).sum::<usize>() > 1000);
        t.flush().unwrap();
        let view = t.view();
        let sstables: Vec<_> = view.sstables().into_iter().collect();
        assert_eq!(sstables.len(), 1);
        let stats = sstables[0].stats();
        let base = stats.base;
        assert!(base.min_timestamp <= stats.min_timestamp_micros);
        assert!(base.min_local_deletion <= stats.min_local_deletion_seconds);
        assert!(base.min_ttl <= stats.min_ttl_seconds);
        assert_eq!(
            base.row_ts_bytes,
            base.with_row_ts_span_to(stats.max_timestamp_micros)
                .row_ts_bytes,
            "the width of the data's span ({timestamps:?})"
        );
        if timestamps == Timestamps::SpreadAhead {
            assert_eq!(base.row_ts_bytes, 3, "{base:?} {stats:?}");
        }
        if with_old_timestamp {
            // Decoded: the base is the data's own minimums.
            assert_eq!(base.min_timestamp, 1_000_000);
            assert_eq!(base.min_ttl, stats.min_ttl_seconds);
        } else {
            // Copied: the memtable's base, whose TTL minimum is 0.
            assert_eq!(base.min_ttl, 0);
            assert!(stats.min_ttl_seconds > 0);
        }
        drop(view);
        assert_eq!(read_all(&t), before, "{timestamps:?}");
        // And after a restart, from the sstable alone.
        drop(t);
        drop(db);
        let db = common::open(dir.path());
        let t = db.table("ks", "t").unwrap();
        assert_eq!(read_all(&t), before, "{timestamps:?}");
    }
}
