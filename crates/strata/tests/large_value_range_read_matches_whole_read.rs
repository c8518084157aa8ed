//! A range read returns exactly the same slice of the value as the normal
//! (whole-row) read path, wherever the winning version lives and whatever
//! shadows it: memtable only, sstable only, a newer version in the memtable
//! over an sstable, a newer version in an sstable over an older one written
//! later to the memtable (explicit timestamps), a row / partition / range /
//! cell deletion over an sstable value, TTL expiry, equal timestamps (the
//! greater value wins), and a partition with a row index (many rows). Also
//! the edges: a range running past the end is short, an offset past the end is
//! `InvalidInput`, a missing row or column is `None`.

mod common;

use common::large_values::*;
use strata::schema::WriteOptions;
use strata::types::Value;

const SECOND: i64 = 1_000_000;

/// Ranges that start and end inside and at chunk boundaries (16 KiB chunks),
/// at both ends of the value.
fn ranges(len: u64) -> Vec<(u64, u64)> {
    let mut v = vec![
        (0, len),
        (0, 1),
        (0, 16 * 1024),
        (16 * 1024, 16 * 1024),
        (100, 70_000),
        (len / 3, 123_457),
        (len.saturating_sub(10), 100),
        (len, 10),
    ];
    v.retain(|&(o, _)| o <= len);
    v
}

fn check(t: &strata::table::Table, id: &[u8], part: i32, expect: Option<&[u8]>) {
    let got = whole(t, id, part);
    assert!(
        got.as_deref() == expect,
        "whole read of {part}: {:?} bytes, expected {:?}",
        got.as_ref().map(Vec::len),
        expect.map(<[u8]>::len)
    );
    let len = expect.map_or(1000, |v| v.len() as u64);
    assert_ranges_match_whole(t, id, part, &ranges(len));
}

#[test]
fn range_reads_equal_the_same_slice_of_a_whole_read() {
    let dir = tempfile::tempdir().unwrap();
    let clock = strata::clock::SimClock::fixed();
    let mut o = common::options();
    o.clock = clock.clone();
    let db = strata::db::Database::open(dir.path(), o).unwrap();
    let t = db.create_table_cql(CREATE_BLOCKS).unwrap();
    let now = strata::clock::Clock::now_micros(&*clock);
    let v = |seed: u64| block(seed, 3 * MIB + 1234);

    // Memtable only.
    put(&t, b"mem", 0, v(1), None);
    check(&t, b"mem", 0, Some(&v(1)));

    // Sstable only.
    put(&t, b"sst", 0, v(2), None);
    t.flush().unwrap();
    check(&t, b"sst", 0, Some(&v(2)));
    check(&t, b"mem", 0, Some(&v(1)));

    // Newer in the memtable over an sstable.
    put(&t, b"over", 0, v(3), Some(now - 10 * SECOND));
    t.flush().unwrap();
    put(&t, b"over", 0, v(4), Some(now - 5 * SECOND));
    check(&t, b"over", 0, Some(&v(4)));

    // Newer in an sstable over an older version written later to the memtable.
    put(&t, b"late", 0, v(5), Some(now - SECOND));
    t.flush().unwrap();
    put(&t, b"late", 0, v(6), Some(now - 20 * SECOND));
    check(&t, b"late", 0, Some(&v(5)));

    // Equal timestamps: the greater value wins (Cassandra), across sources.
    let (a, b) = (v(7), v(8));
    let greater = a.clone().max(b.clone());
    put(&t, b"tie", 0, a, Some(now - 3 * SECOND));
    t.flush().unwrap();
    put(&t, b"tie", 0, b, Some(now - 3 * SECOND));
    check(&t, b"tie", 0, Some(&greater));

    // Row deletion in the memtable over an sstable value.
    put(&t, b"rowdel", 0, v(9), Some(now - 10 * SECOND));
    put(&t, b"rowdel", 1, v(10), Some(now - 10 * SECOND));
    t.flush().unwrap();
    let w = |ts: i64| WriteOptions {
        timestamp_micros: Some(ts),
        ttl_seconds: None,
    };
    t.delete_row(&key(b"rowdel", 0), &w(now - 5 * SECOND))
        .unwrap();
    check(&t, b"rowdel", 0, None);
    check(&t, b"rowdel", 1, Some(&v(10)));
    // ... and a newer write after the deletion is visible again.
    put(&t, b"rowdel", 0, v(11), Some(now - 2 * SECOND));
    check(&t, b"rowdel", 0, Some(&v(11)));

    // Cell deletion (UPDATE ... SET data = null), flushed, over a flushed value.
    put(&t, b"celldel", 0, v(12), Some(now - 10 * SECOND));
    t.flush().unwrap();
    t.update(&key(b"celldel", 0), &[("data", None)], &w(now - 5 * SECOND))
        .unwrap();
    t.flush().unwrap();
    assert!(range(&t, b"celldel", 0, 0, 10).is_none());
    check(&t, b"celldel", 0, None);

    // Partition deletion and range deletion.
    let schema = t.schema();
    put(&t, b"pdel", 0, v(13), Some(now - 10 * SECOND));
    put(&t, b"rdel", 0, v(14), Some(now - 10 * SECOND));
    put(&t, b"rdel", 5, v(15), Some(now - 10 * SECOND));
    t.flush().unwrap();
    let pk = [("id", Value::Blob(b"pdel".to_vec()))];
    t.apply(
        &schema
            .delete_partition(&pk, &w(now - 5 * SECOND), now)
            .unwrap(),
    )
    .unwrap();
    let pk = [("id", Value::Blob(b"rdel".to_vec()))];
    t.apply(
        &schema
            .delete_range(
                &pk,
                (&[Value::Int(0)], true),
                (&[Value::Int(2)], true),
                &w(now - 5 * SECOND),
                now,
            )
            .unwrap(),
    )
    .unwrap();
    t.flush().unwrap();
    check(&t, b"pdel", 0, None);
    check(&t, b"rdel", 0, None);
    check(&t, b"rdel", 5, Some(&v(15)));

    // TTL: live before expiry, gone after (in the memtable and in an sstable).
    put_ttl(&t, b"ttl", 0, v(16), 60);
    put_ttl(&t, b"ttl", 1, v(17), 60);
    t.flush().unwrap();
    put_ttl(&t, b"ttl", 1, v(18), 60);
    check(&t, b"ttl", 0, Some(&v(16)));
    check(&t, b"ttl", 1, Some(&v(18).max(v(17))));
    clock.advance_seconds(61);
    check(&t, b"ttl", 0, None);
    check(&t, b"ttl", 1, None);

    // A wide partition (row index): many small rows around two large ones.
    let now = strata::clock::Clock::now_micros(&*clock);
    for part in 0..400 {
        put(&t, b"wide", part, block(1000 + part as u64, 300), None);
    }
    // Later timestamps: the fixed clock stamps every default write alike.
    put(&t, b"wide", 150, v(19), Some(now + SECOND));
    put(&t, b"wide", 399, v(20), Some(now + SECOND));
    t.flush().unwrap();
    check(&t, b"wide", 150, Some(&v(19)));
    check(&t, b"wide", 399, Some(&v(20)));
    check(&t, b"wide", 7, Some(&block(1007, 300)));
    check(&t, b"wide", 400, None);
    assert!(range(&t, b"wide", -1, 0, 1).is_none());

    // Edges: short read at the end, offset past the end refused, nothing
    // written is None.
    let s = range(&t, b"sst", 0, 3 * MIB as u64, 10_000).unwrap();
    assert!(s.bytes == v(2)[3 * MIB..], "short read at the end");
    let at_end = range(&t, b"sst", 0, v(2).len() as u64, 5).unwrap();
    assert!(at_end.bytes.is_empty());
    let err = t
        .read_value_range(
            &[Value::Blob(b"sst".to_vec())],
            &[Value::Int(0)],
            "data",
            v(2).len() as u64 + 1,
            1,
        )
        .unwrap_err();
    assert!(
        matches!(err, strata::Error::InvalidInput(ref m) if m.contains("past the end")),
        "{err}"
    );
    assert!(range(&t, b"nothing", 0, 0, 1).is_none());
    assert!(t
        .read_value_range(
            &[Value::Blob(b"sst".to_vec())],
            &[Value::Int(0)],
            "nope",
            0,
            1
        )
        .is_err());
    // The note column was never written: None, not an empty value.
    assert!(t
        .read_value_range(
            &[Value::Blob(b"sst".to_vec())],
            &[Value::Int(0)],
            "note",
            0,
            1
        )
        .unwrap()
        .is_none());
}
