//! Scenario: the system clock is set before 1970 (a dead RTC battery, a bad
//! NTP step) while the database writes.
//!
//! Before, the system clock mapped every time before the epoch to 0: every
//! write got timestamp 0, overwrites tied with the values they replaced (equal
//! timestamps: the greater value wins, not the newer), and 1,925 of 2,000
//! overwritten rows read back their old value, without a word. Now a clock
//! before 1970 reads negative, and every write (inserts, updates, deletions,
//! with or without an explicit timestamp, since deletion and expiry times come
//! from the clock too) is refused with an error naming the clock's reading;
//! nothing is written, and writes work again once the clock is right.

mod common;

use strata::clock::{Clock, SimClock};
use strata::db::{Database, DbOptions};
use strata::error::Error;
use strata::schema::WriteOptions;
use strata::types::Value;

/// 1969-12-31T00:00:00Z.
const BEFORE_1970: i64 = -86_400_000_000;

#[test]
fn a_clock_before_1970_refuses_every_write_and_writes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let clock = SimClock::new(BEFORE_1970);
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts.clone()).unwrap();
    let t = db.create_table_cql(common::CREATE).unwrap();
    let row = |k: i32, v: &str| [("k", Value::Int(k)), ("v", Value::Text(v.into()))];
    let explicit = WriteOptions {
        timestamp_micros: Some(1_700_000_000_000_000),
        ttl_seconds: None,
    };
    let refusals = [
        t.insert(&row(1, "a"), &WriteOptions::default()),
        t.insert(&row(1, "a"), &explicit),
        t.update(
            &[("k", Value::Int(1))],
            &[("v", None)],
            &WriteOptions::default(),
        ),
        t.delete_row(&[("k", Value::Int(1))], &WriteOptions::default()),
    ];
    for r in refusals {
        let err = r.unwrap_err();
        assert!(matches!(err, Error::Clock(_)), "{err}");
        assert!(err.to_string().contains("1969-12-31T00:00:00"), "{err}");
    }
    assert_eq!(
        t.metrics
            .write_count
            .load(std::sync::atomic::Ordering::Relaxed),
        0
    );
    assert_eq!(db.commitlog().unwrap().current_position().offset, {
        // The active segment's header only: no record was appended.
        strata::commitlog::format::header_bytes(strata::commitlog::format::SEGMENT_FORMAT_VERSION)
    });
    // Once the clock is right, writes go through and overwrites win by time.
    clock.set_micros(1_767_225_600_000_000);
    t.insert(&row(1, "old"), &WriteOptions::default()).unwrap();
    clock.advance_micros(1);
    t.insert(&row(1, "new"), &WriteOptions::default()).unwrap();
    assert!(clock.now_micros() > 0);
    let rows = t
        .select(
            &[Value::Int(1)],
            &strata::data::ClusteringRange::ALL,
            false,
            1,
        )
        .unwrap();
    assert_eq!(rows[0][1].1, Some(Value::Text("new".into())));
    db.close().unwrap();
}
