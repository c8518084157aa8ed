//! Scenario: wide partitions (thousands of rows, so every flushed copy has a
//! row index) are written in rounds with range tombstones, row deletions,
//! partition deletions, cell-only updates, TTLs and out-of-order timestamps
//! interleaved, flushed into several sstables with the newest round left in
//! the memtable. After every round, random slices (prefix and full bounds,
//! inclusive and exclusive, both directions, several limits) read through the
//! table, which seeks through row indexes and merges lazily, must equal a brute
//! force over the whole partition: every source decoded whole
//! (`Memtable::read`, `SSTableReader::read_partition`), merged, shadowed and
//! expired (`read::merge_partition`, `read::live_rows`), then filtered by the
//! range, reversed and cut at the limit. A paged scan (pages resume inside
//! the wide partitions, as slices) must return the same rows. Seeded.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use strata::clock::{Clock, SimClock};
use strata::data::{ClusteringRange, DecoratedKey, PartitionUpdate, Row};
use strata::db::{Database, DbOptions};
use strata::fs::{IoCause, IoTag};
use strata::read::{live_rows, merge_partition};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const CREATE: &str = "CREATE TABLE ks.w (k int, c1 int, c2 int, v blob, PRIMARY KEY (k, c1, c2)) \
     WITH CLUSTERING ORDER BY (c1 ASC, c2 DESC) AND \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";
const PARTITIONS: i32 = 3;
const C1: i32 = 40;
const C2: i32 = 150;

/// The brute force: whole partitions from every source, merged.
fn brute_force(
    t: &Table,
    key: &DecoratedKey,
    range: &ClusteringRange,
    reversed: bool,
    limit: usize,
    now_seconds: i64,
) -> (Option<Row>, Vec<Row>) {
    let view = t.view();
    let mut acc = PartitionUpdate::new(key.clone());
    for m in &view.memtables {
        if let Some(p) = m.read(key, &ClusteringRange::ALL) {
            merge_partition(&mut acc, p);
        }
    }
    for s in view.sstables().iter() {
        if let Some(p) = s
            .read_partition(key, IoTag::new(IoCause::UserRead))
            .expect("read")
        {
            merge_partition(&mut acc, p);
        }
    }
    let (static_row, rows) = live_rows(&acc, now_seconds);
    let mut rows: Vec<Row> = rows
        .into_iter()
        .filter(|r| range.contains(&r.clustering))
        .collect();
    if reversed {
        rows.reverse();
    }
    rows.truncate(limit);
    (static_row, rows)
}

fn prefix(rng: &mut ChaCha8Rng) -> Vec<Value> {
    match rng.gen_range(0..6) {
        0 => vec![],
        1 | 2 => vec![Value::Int(rng.gen_range(-1..=C1))],
        _ => vec![
            Value::Int(rng.gen_range(0..C1)),
            Value::Int(rng.gen_range(-1..=C2)),
        ],
    }
}

fn random_range(rng: &mut ChaCha8Rng, t: &Table) -> Option<ClusteringRange> {
    let (a, b) = (prefix(rng), prefix(rng));
    t.schema()
        .clustering_range((&a, rng.gen()), (&b, rng.gen()))
        .ok()
}

fn write_round(rng: &mut ChaCha8Rng, t: &Arc<Table>, clock: &SimClock, round: u32) {
    let schema = t.schema();
    let now = || clock.now_micros();
    for k in 0..PARTITIONS {
        let pk = || ("k", Value::Int(k));
        // Rows in batches, so rounds take milliseconds, not seconds.
        let mut batch: Option<PartitionUpdate> = None;
        for _ in 0..rng.gen_range(1500..4000) {
            clock.advance_micros(1);
            let ttl = rng.gen_ratio(1, 20).then(|| rng.gen_range(1..30));
            // One write in ten carries an older timestamp, so a newer source
            // can hold data an older source's tombstone shadows.
            let ts = if rng.gen_ratio(1, 10) {
                now() - rng.gen_range(0..5_000_000)
            } else {
                now()
            };
            let wo = WriteOptions {
                timestamp_micros: Some(ts),
                ttl_seconds: ttl,
            };
            let ck = [
                ("c1", Value::Int(rng.gen_range(0..C1))),
                ("c2", Value::Int(rng.gen_range(0..C2))),
            ];
            let value = Value::Blob(vec![round as u8; rng.gen_range(0..40)]);
            let u = if rng.gen_ratio(1, 6) {
                schema
                    .update(
                        &[pk(), ck[0].clone(), ck[1].clone()],
                        &[("v", Some(value))],
                        &wo,
                        now(),
                    )
                    .expect("update")
            } else {
                schema
                    .insert(
                        &[pk(), ck[0].clone(), ck[1].clone(), ("v", value)],
                        &wo,
                        now(),
                    )
                    .expect("insert")
            };
            match &mut batch {
                None => batch = Some(u),
                Some(b) => {
                    for r in u.rows {
                        b.add_row(r);
                    }
                }
            }
        }
        if let Some(b) = batch {
            t.apply(&b).expect("apply");
        }
        for _ in 0..rng.gen_range(0..6) {
            clock.advance_micros(1);
            let wo = WriteOptions {
                timestamp_micros: Some(now() - rng.gen_range(0..2_000_000)),
                ttl_seconds: None,
            };
            let (a, b) = (prefix(rng), prefix(rng));
            if let Ok(u) =
                schema.delete_range(&[pk()], (&a, rng.gen()), (&b, rng.gen()), &wo, now())
            {
                t.apply(&u).expect("range delete");
            }
            let u = schema
                .delete_row(
                    &[
                        pk(),
                        ("c1", Value::Int(rng.gen_range(0..C1))),
                        ("c2", Value::Int(rng.gen_range(0..C2))),
                    ],
                    &wo,
                    now(),
                )
                .expect("delete row");
            t.apply(&u).expect("apply");
        }
        if rng.gen_ratio(1, 8) {
            // A partition deletion a little in the past: some rows of this
            // round survive it, older rounds' do not.
            let wo = WriteOptions {
                timestamp_micros: Some(now() - rng.gen_range(0..1000)),
                ttl_seconds: None,
            };
            let u = schema
                .delete_partition(&[pk()], &wo, now())
                .expect("delete");
            t.apply(&u).expect("apply");
        }
    }
}

#[test]
fn slices_match_a_filter_of_the_whole_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let clock = SimClock::new(1_700_000_000_000_000);
    let mut opts = DbOptions::new(clock.clone());
    opts.concurrent_compactors = 0;
    opts.commitlog = None;
    let db = Database::open(dir.path(), opts).expect("open");
    db.create_keyspace("ks").expect("keyspace");
    let t = db.create_table_cql(CREATE).expect("table");
    let mut rng = ChaCha8Rng::seed_from_u64(1101);
    let mut compared_rows = 0usize;
    let mut indexed = 0usize;
    for round in 0..5u32 {
        write_round(&mut rng, &t, &clock, round);
        if round < 4 {
            t.flush().expect("flush");
        }
        clock.advance_seconds(rng.gen_range(0..10));
        let now_seconds = clock.now_seconds();
        let view = t.view();
        assert_eq!(
            view.sstables().len(),
            round.min(4) as usize + usize::from(round < 4)
        );
        for s in view.sstables().iter() {
            assert_eq!(s.format_version(), strata::sstable::FORMAT_VERSION);
        }
        for k in 0..PARTITIONS {
            let key = t.schema().decorated_key(&[Value::Int(k)]).expect("key");
            for s in view.sstables().iter() {
                if let Some(sl) = s
                    .slice(
                        &key,
                        &ClusteringRange::ALL,
                        false,
                        IoTag::new(IoCause::UserRead),
                    )
                    .expect("slice")
                {
                    let mut sl = sl;
                    sl.next_row().expect("row");
                    indexed += usize::from(sl.blocks_read() > 0);
                }
            }
            for _ in 0..150 {
                let Some(range) = (if rng.gen_ratio(1, 10) {
                    Some(ClusteringRange::ALL)
                } else {
                    random_range(&mut rng, &t)
                }) else {
                    continue;
                };
                let reversed = rng.gen();
                let limit = [0usize, 1, 10, 57, 1000, usize::MAX][rng.gen_range(0..6)];
                let got = t.read(&key, &range, reversed, limit).expect("read");
                let (static_row, want) =
                    brute_force(&t, &key, &range, reversed, limit, now_seconds);
                assert_eq!(
                    got.rows, want,
                    "round {round} k {k} {range:?} reversed={reversed} limit={limit}"
                );
                assert_eq!(got.static_row, static_row);
                compared_rows += want.len();
            }
        }
        // A paged scan: every page after the first resumes inside a partition.
        let page_rows = rng.gen_range(1..700);
        let mut scanned: Vec<(DecoratedKey, Row)> = Vec::new();
        let mut paging = None;
        loop {
            let page = t.scan(paging.as_ref(), page_rows).expect("scan");
            for p in page.partitions {
                scanned.extend(p.rows.into_iter().map(|r| (p.key.clone(), r)));
            }
            match page.next {
                Some(next) => paging = Some(next),
                None => break,
            }
        }
        let mut keys: Vec<DecoratedKey> = (0..PARTITIONS)
            .map(|k| t.schema().decorated_key(&[Value::Int(k)]).expect("key"))
            .collect();
        keys.sort();
        let mut want = Vec::new();
        for key in keys {
            let (_, rows) = brute_force(
                &t,
                &key,
                &ClusteringRange::ALL,
                false,
                usize::MAX,
                now_seconds,
            );
            want.extend(rows.into_iter().map(|r| (key.clone(), r)));
        }
        assert_eq!(
            scanned.len(),
            want.len(),
            "round {round} pages of {page_rows}"
        );
        assert!(
            scanned == want,
            "round {round}: scan differs, pages of {page_rows}"
        );
    }
    assert!(compared_rows > 50_000, "{compared_rows} rows compared");
    assert!(
        indexed >= 10,
        "{indexed} sstable partitions read through a row index"
    );
    db.close().expect("close");
}
