//! Seeded randomized round trip through Cassandra's sstable format: random
//! mutations of every kind (row markers with and without TTL, cells, cell
//! tombstones, expiring cells, row, range and partition deletions, collection
//! overwrites and element writes, static cells, timestamps out of order) go
//! into a table across several flushes; halfway, the table is exported as
//! Cassandra `nb` sstables (one compression per seed: LZ4, Zstd, none) and
//! imported into a second database, then again at the end: the second
//! copy's deletions must shadow the first copy's data there as they did
//! here (an export merges the table, so shadowed data is already gone from
//! it: only data on the other side shows a lost tombstone). Both must then
//! answer every read the same, at the copy, once every TTL has passed, and
//! after each side compacts.
//!
//! The source's own reads are the oracle here: `randomized_oracle` checks
//! them against a model. What this adds is that nothing is lost, changed or
//! resurrected on the way through Cassandra's bytes. (Cassandra itself reads
//! the same files in `strata-cli/tests/cassandra_export_loads_into_cassandra`.)
//!
//! More seeds: `STRATA_ROUNDTRIP_SEEDS=50 cargo test --release -p strata
//! --test cassandra_format_round_trip_randomized`.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use strata::cassandra::export::{export_table, ExportOptions};
use strata::cassandra::import::import_dir;
use strata::cassandra::nb::NbCompression;
use strata::clock::{Clock, SimClock};
use strata::data::{
    Cell, ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo,
    PartitionUpdate, RangeTombstone, Row,
};
use strata::db::{Database, DbOptions};
use strata::read::ScanPage;
use strata::table::Table;
use strata::types::{self, Value};

const CREATE: &str = "CREATE TABLE ks.t (pk int, ck text, n bigint, v text, s text static, \
     m map<text, int>, PRIMARY KEY (pk, ck))";

fn open(dir: &std::path::Path, clock: Arc<SimClock>) -> Database {
    let mut o = DbOptions::new(clock);
    o.concurrent_compactors = 0;
    Database::open(dir, o).expect("open")
}

fn ck(t: &Table, i: u32) -> Vec<u8> {
    t.schema()
        .encode_clustering(&[Value::Text(format!("c{i:02}"))])
        .unwrap()
}

fn mutate(t: &Arc<Table>, rng: &mut ChaCha8Rng, now_s: i64, base_ts: i64) {
    let schema = t.schema();
    let id = |name: &str| schema.column(name).unwrap().id.unwrap();
    let (n, v, s, m) = (id("n"), id("v"), id("s"), id("m"));
    let pk = rng.gen_range(0..16i32);
    let key = DecoratedKey::new(&types::serialize(&Value::Int(pk)));
    let mut u = PartitionUpdate::new(key);
    let ts = base_ts + rng.gen_range(-1_000_000i64..1_000_000);
    let ttl = if rng.gen_bool(0.3) {
        rng.gen_range(1u32..200)
    } else {
        0
    };
    let cell = |col, value: Vec<u8>| {
        if ttl > 0 {
            Cell::expiring(col, ts, ttl, now_s, value)
        } else {
            Cell::live(col, ts, value)
        }
    };
    match rng.gen_range(0..10) {
        0..=3 => {
            let mut row = Row::new(ck(t, rng.gen_range(0..20)));
            if rng.gen_bool(0.5) {
                row.liveness = if ttl > 0 {
                    LivenessInfo::expiring(ts, ttl, now_s)
                } else {
                    LivenessInfo::new(ts)
                };
            }
            if rng.gen_bool(0.7) {
                row.add_cell(cell(n, rng.gen::<i64>().to_be_bytes().to_vec()));
            }
            if rng.gen_bool(0.5) {
                let text = format!("v{}", rng.gen::<u16>());
                row.add_cell(cell(v, text.into_bytes()));
            } else if rng.gen_bool(0.3) {
                row.add_cell(Cell::tombstone(v, ts, now_s));
            }
            if rng.gen_bool(0.4) {
                // An overwrite of the map: its deletion at ts - 1, then entries.
                if rng.gen_bool(0.5) {
                    row.add_cell(Cell::complex_deletion(m, ts - 1, now_s));
                }
                for _ in 0..rng.gen_range(0..4) {
                    let k = types::element_path(&Value::Text(format!("k{}", rng.gen_range(0..6))));
                    let mut c = cell(m, rng.gen::<i32>().to_be_bytes().to_vec());
                    c.path = Some(k.into_boxed_slice());
                    row.add_cell(c);
                }
            }
            u.add_row(row);
        }
        4 => {
            let mut st = Row::new(Vec::new());
            st.add_cell(cell(s, format!("s{}", rng.gen::<u8>()).into_bytes()));
            u.static_row = Some(st);
        }
        5 => {
            let mut row = Row::new(ck(t, rng.gen_range(0..20)));
            row.deletion = DeletionTime::new(ts, now_s);
            u.add_row(row);
        }
        6 | 7 => {
            let a = rng.gen_range(0..20);
            let b = rng.gen_range(a..21);
            let start = if rng.gen_bool(0.1) {
                ClusteringBound::UNBOUNDED
            } else {
                ClusteringBound {
                    prefix: ck(t, a),
                    inclusive: rng.gen_bool(0.5),
                }
            };
            let end = if rng.gen_bool(0.1) {
                ClusteringBound::UNBOUNDED
            } else {
                ClusteringBound {
                    prefix: ck(t, b),
                    inclusive: rng.gen_bool(0.5),
                }
            };
            u.deletion.ranges.push(RangeTombstone {
                range: ClusteringRange { start, end },
                deletion: DeletionTime::new(ts, now_s),
            });
        }
        8 => {
            let mut row = Row::new(ck(t, rng.gen_range(0..20)));
            let k = types::element_path(&Value::Text(format!("k{}", rng.gen_range(0..6))));
            let mut c = Cell::tombstone(m, ts, now_s);
            c.path = Some(k.into_boxed_slice());
            row.add_cell(c);
            u.add_row(row);
        }
        _ => {
            if rng.gen_bool(0.3) {
                u.deletion.partition = Some(DeletionTime::new(ts - 500_000, now_s));
            } else {
                let mut row = Row::new(ck(t, rng.gen_range(0..20)));
                row.add_cell(cell(n, 7i64.to_be_bytes().to_vec()));
                u.add_row(row);
            }
        }
    }
    t.apply(&u).unwrap();
}

fn everything(t: &Table) -> ScanPage {
    let page = t.scan(None, usize::MAX).unwrap();
    assert!(page.next.is_none());
    page
}

fn same(a: &ScanPage, b: &ScanPage, what: &str) {
    assert_eq!(a.partitions.len(), b.partitions.len(), "{what}: partitions");
    for (x, y) in a.partitions.iter().zip(&b.partitions) {
        assert_eq!(x.key, y.key, "{what}");
        assert_eq!(
            x.static_row, y.static_row,
            "{what}: static row of {:?}",
            x.key
        );
        assert_eq!(x.rows, y.rows, "{what}: rows of {:?}", x.key);
    }
}

fn export(
    src: &Database,
    out: &std::path::Path,
    seed: u64,
) -> strata::cassandra::export::ExportSummary {
    let compression = match seed % 3 {
        0 => NbCompression::Lz4,
        1 => NbCompression::Zstd { level: 3 },
        _ => NbCompression::None,
    };
    export_table(
        src,
        "ks",
        "t",
        &ExportOptions {
            out: out.to_path_buf(),
            compression: Some(compression),
            max_sstable_bytes: if seed.is_multiple_of(2) {
                4096
            } else {
                1 << 30
            },
        },
        &mut |_, _| {},
    )
    .unwrap()
}

fn round_trip(seed: u64, ops: usize) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let start = 1_790_000_000_000_000i64;
    let clock = SimClock::new(start);
    let src_dir = tempfile::tempdir().unwrap();
    let dst_dir = tempfile::tempdir().unwrap();
    let first = tempfile::tempdir().unwrap();
    let second = tempfile::tempdir().unwrap();
    let src = open(src_dir.path(), clock.clone());
    let t = src.create_table_cql(CREATE).unwrap();
    let dst = open(dst_dir.path(), clock.clone());
    let t2 = dst.create_table_cql(CREATE).unwrap();
    for i in 0..ops {
        let now_s = clock.now_micros() / 1_000_000;
        mutate(&t, &mut rng, now_s, clock.now_micros());
        clock.advance_micros(rng.gen_range(0..20_000));
        if i % (ops / 4).max(1) == 0 {
            t.flush().unwrap();
        }
        if i == ops / 2 {
            // The first half goes across now: the second half's deletions
            // must shadow it on the other side as they do here.
            export(&src, first.path(), seed);
            import_dir(&t2, &first.path().join("ks").join("t"), &mut |_, _| {}).unwrap();
        }
    }
    let summary = export(&src, second.path(), seed);
    assert!(summary.partitions > 0);
    let imported = import_dir(&t2, &second.path().join("ks").join("t"), &mut |_, _| {}).unwrap();
    assert_eq!(imported.sstables.len(), summary.sstables.len());
    assert_eq!(imported.partitions, summary.partitions);
    let before = everything(&t);
    assert!(
        before
            .partitions
            .iter()
            .map(|p| p.rows.len())
            .sum::<usize>()
            > 0
    );
    same(
        &before,
        &everything(&t2),
        &format!("seed {seed}, at the copy"),
    );
    // Past every TTL: what expired is gone on both sides alike.
    clock.advance_seconds(300);
    same(
        &everything(&t),
        &everything(&t2),
        &format!("seed {seed}, past the TTLs"),
    );
    // And after each side compacts its own sstables.
    src.compact_until_idle(100).unwrap();
    dst.compact_until_idle(100).unwrap();
    same(
        &everything(&t),
        &everything(&t2),
        &format!("seed {seed}, compacted"),
    );
}

#[test]
fn cassandra_format_round_trip_keeps_every_read() {
    let seeds: u64 = std::env::var("STRATA_ROUNDTRIP_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(6);
    for seed in 0..seeds {
        round_trip(seed, 1_500);
    }
}
