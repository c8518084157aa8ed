//! Fixtures of data directories written by older builds (sstable format
//! versions 2 to 5): the data they hold, the reads whose answers they
//! recorded, and the check that this build answers the same, before and
//! after `upgradesstables` rewrites them in the current format. One scenario
//! file per format version (`format2_sstables_still_read.rs` to
//! `format5_sstables_still_read.rs`) names its fixture and its version.
//!
//! A fixture is generated once, with the build of its version, by the
//! scenario's ignored `generate_fixture` test; running that with a newer build
//! would record that build's files, so do not.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::{ClusteringRange, Row};
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::sstable::FORMAT_VERSION;
use strata::table::Table;
use strata::types::Value;
use strata::upgrade::{upgrade_sstables, UpgradeOptions};

const CREATE: &str = "CREATE TABLE fx.ts (k int, t bigint, v text, s text static, \
     PRIMARY KEY (k, t)) WITH CLUSTERING ORDER BY (t DESC) AND \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";
const T0: i64 = 1_700_000_000_000_000;

/// Small partitions (keys from 100) written beside the four wide ones in the
/// version-3 fixture and later: a dense index of many entries per block, the
/// case a sparse index changes.
const SMALL_KEYS: std::ops::Range<i32> = 100..400;

/// A key-value table beside the clustered one, from the version-5 fixture
/// on: one-row partitions with an empty clustering, the rows version 6
/// writes in a shorter form (single cells of column 0, two cells, a cell of
/// column 1 alone, TTLs, a row deletion, a partition deletion).
const CREATE_KV: &str = "CREATE TABLE fx.kv (k int PRIMARY KEY, v text, w int) WITH \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";
const KV_KEYS: std::ops::Range<i32> = 0..200;

/// What a fixture holds.
#[derive(Clone, Copy)]
pub struct Fixture {
    pub dir: &'static str,
    pub version: u32,
    /// Whether it holds the small partitions of [`SMALL_KEYS`].
    pub small_partitions: bool,
    /// Whether it holds the key-value table `fx.kv` ([`CREATE_KV`]).
    pub kv_table: bool,
}

impl Fixture {
    fn path(&self) -> PathBuf {
        Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/data")
            .join(self.dir)
    }

    fn keys(&self) -> Vec<i32> {
        let small = if self.small_partitions {
            SMALL_KEYS
        } else {
            0..0
        };
        (0..4).chain(small).collect()
    }
}

fn options() -> DbOptions {
    let mut o = DbOptions::new(SimClock::new(T0 + 10_000_000));
    o.concurrent_compactors = 0;
    o.commitlog = None;
    o
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn render(row: &Row) -> String {
    let mut s = format!("{}|{}", hex(&row.clustering), row.liveness.timestamp_micros);
    for c in &row.cells {
        s.push_str(&format!(
            "|{}@{}={}",
            c.column,
            c.timestamp_micros,
            hex(&c.value)
        ));
    }
    s
}

/// The queries and what a read answers, one line each.
fn answers(t: &Table, keys: &[i32]) -> Vec<String> {
    let schema = t.schema();
    let mut out = Vec::new();
    for &k in keys {
        let key = schema.decorated_key(&[Value::Int(k)]).unwrap();
        let ranges: Vec<(String, ClusteringRange)> = vec![
            ("all".into(), ClusteringRange::ALL),
            (
                "1500..1000".into(),
                schema
                    .clustering_range(
                        (&[Value::BigInt(1500)], true),
                        (&[Value::BigInt(1000)], false),
                    )
                    .unwrap(),
            ),
            (
                "..150".into(),
                schema
                    .clustering_range((&[], true), (&[Value::BigInt(150)], true))
                    .unwrap(),
            ),
            (
                "2990..".into(),
                schema
                    .clustering_range((&[Value::BigInt(2990)], false), (&[], true))
                    .unwrap(),
            ),
        ];
        // Small partitions are read whole, once each (the fixture's text
        // stays small); the wide ones every way.
        let wide = k < SMALL_KEYS.start;
        for (name, range) in ranges.iter().filter(|(n, _)| wide || n == "all") {
            for reversed in [false, true].into_iter().filter(|&r| wide || !r) {
                for limit in [1usize, 10, 100_000]
                    .into_iter()
                    .filter(|&l| wide || l == 100_000)
                {
                    let r = t.read(&key, range, reversed, limit).unwrap();
                    // Rows as their count, first and last, and a CRC32C of all of
                    // them: the whole text would make a megabyte fixture.
                    let rows: Vec<String> = r.rows.iter().map(render).collect();
                    out.push(format!(
                        "k={k} {name} rev={reversed} limit={limit} found={} static={} \
                         rows={} first={} last={} crc={:08x}",
                        r.found,
                        r.static_row.as_ref().map_or("-".to_string(), render),
                        rows.len(),
                        rows.first().map_or("-", |s| s.as_str()),
                        rows.last().map_or("-", |s| s.as_str()),
                        crc32c::crc32c(rows.join(",").as_bytes())
                    ));
                }
            }
        }
    }
    out
}

/// The key-value table's answers: each key read whole.
fn kv_answers(t: &Table) -> Vec<String> {
    let schema = t.schema();
    KV_KEYS
        .map(|k| {
            let key = schema.decorated_key(&[Value::Int(k)]).unwrap();
            let r = t.read(&key, &ClusteringRange::ALL, false, 10).unwrap();
            let rows: Vec<String> = r.rows.iter().map(render).collect();
            format!("kv k={k} found={} rows={}", r.found, rows.join(","))
        })
        .collect()
}

/// The key-value table's data: in the first sstable every key, in the
/// second overwrites and deletions of some.
fn write_kv(t: &Arc<Table>, first: bool) {
    let schema = t.schema();
    let wo = |ts: i64, ttl: Option<u32>| WriteOptions {
        timestamp_micros: Some(ts),
        ttl_seconds: ttl,
    };
    for k in KV_KEYS {
        let v = || ("v", Value::Text(format!("value-{k}")));
        let w = || ("w", Value::Int(k * 7));
        let u = if first {
            let ttl = (k % 5 == 0).then_some(86_400);
            match k % 4 {
                0 | 1 => schema.insert(&[("k", Value::Int(k)), v()], &wo(T0 + 10, ttl), T0),
                2 => schema.insert(&[("k", Value::Int(k)), v(), w()], &wo(T0 + 10, ttl), T0),
                _ => schema.update(
                    &[("k", Value::Int(k))],
                    &[("w", Some(Value::Int(k)))],
                    &wo(T0 + 10, ttl),
                    T0,
                ),
            }
        } else {
            match k % 10 {
                1 => schema.insert(&[("k", Value::Int(k)), w()], &wo(T0 + 20, None), T0),
                4 => schema.delete_row(&[("k", Value::Int(k))], &wo(T0 + 20, None), T0),
                7 => schema.delete_partition(&[("k", Value::Int(k))], &wo(T0 + 20, None), T0),
                _ => continue,
            }
        };
        t.apply(&u.unwrap()).unwrap();
    }
}

fn write_data(t: &Arc<Table>, first: bool, small_partitions: bool) {
    let schema = t.schema();
    let wo = |ts: i64| WriteOptions {
        timestamp_micros: Some(ts),
        ttl_seconds: None,
    };
    // Row `ts` of partition `k`, written at `T0 + ts`.
    let row = |k: i32, ts: i64, v: String| {
        schema
            .insert(
                &[
                    ("k", Value::Int(k)),
                    ("t", Value::BigInt(ts)),
                    ("v", Value::Text(v)),
                ],
                &wo(T0 + ts),
                T0,
            )
            .unwrap()
    };
    if first {
        for k in 0..3 {
            let rows = if k == 0 { 3000 } else { 20 };
            let mut batch = None::<strata::data::PartitionUpdate>;
            for ts in 0..rows {
                let u = row(k, ts, format!("v{k}-{ts}"));
                match &mut batch {
                    None => batch = Some(u),
                    Some(b) => {
                        for r in u.rows {
                            b.add_row(r);
                        }
                    }
                }
            }
            t.apply(&batch.unwrap()).unwrap();
        }
        if small_partitions {
            for k in SMALL_KEYS {
                for ts in 0..(k % 3) as i64 + 1 {
                    t.apply(&row(k, ts, format!("small{k}-{ts}"))).unwrap();
                }
            }
        }
        let u = schema
            .insert(
                &[("k", Value::Int(0)), ("s", Value::Text("static".into()))],
                &wo(T0 + 1),
                T0,
            )
            .unwrap();
        t.apply(&u).unwrap();
    } else {
        // Newer sstable: a range tombstone over t in [100, 200], a row
        // deletion, overwrites, and rows of a new partition.
        let u = schema
            .delete_range(
                &[("k", Value::Int(0))],
                (&[Value::BigInt(200)], true),
                (&[Value::BigInt(100)], true),
                &wo(T0 + 5000),
                T0,
            )
            .unwrap();
        t.apply(&u).unwrap();
        let u = schema
            .delete_row(
                &[("k", Value::Int(0)), ("t", Value::BigInt(2995))],
                &wo(T0 + 5000),
                T0,
            )
            .unwrap();
        t.apply(&u).unwrap();
        for ts in [150i64, 1200, 2999] {
            let u = schema
                .insert(
                    &[
                        ("k", Value::Int(0)),
                        ("t", Value::BigInt(ts)),
                        ("v", Value::Text(format!("new-{ts}"))),
                    ],
                    &wo(T0 + 6000),
                    T0,
                )
                .unwrap();
            t.apply(&u).unwrap();
        }
        let u = schema
            .insert(
                &[
                    ("k", Value::Int(3)),
                    ("t", Value::BigInt(7)),
                    ("v", Value::Text("three".into())),
                ],
                &wo(T0 + 6000),
                T0,
            )
            .unwrap();
        t.apply(&u).unwrap();
    }
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        let target = to.join(e.file_name());
        if e.file_type().unwrap().is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).unwrap();
        }
    }
}

/// The format versions of `t`'s live sstables.
fn versions(t: &Table) -> Vec<u32> {
    t.view()
        .sstables()
        .iter()
        .map(|s| s.format_version())
        .collect()
}

/// Every answer `got` equals the recorded one, and there are as many.
fn same_answers(got: &[String], expected: &[&str], when: &str) {
    assert_eq!(got.len(), expected.len(), "{when}");
    for (g, e) in got.iter().zip(expected) {
        assert_eq!(g, e, "{when}");
    }
}

/// Writes `f`'s fixture: two sstables, flushed one after the other. Must run
/// with the build of `f.version` (the scenario says which commit).
pub fn generate(f: Fixture) {
    let dir = f.path();
    let _ = std::fs::remove_dir_all(&dir);
    let db_dir = dir.join("db");
    let db = Database::open(&db_dir, options()).unwrap();
    db.create_keyspace("fx").unwrap();
    let t = db.create_table_cql(CREATE).unwrap();
    write_data(&t, true, f.small_partitions);
    t.flush().unwrap();
    write_data(&t, false, f.small_partitions);
    t.flush().unwrap();
    assert_eq!(versions(&t), vec![f.version, f.version]);
    let mut expected = answers(&t, &f.keys());
    if f.kv_table {
        let kv = db.create_table_cql(CREATE_KV).unwrap();
        write_kv(&kv, true);
        kv.flush().unwrap();
        write_kv(&kv, false);
        kv.flush().unwrap();
        assert_eq!(versions(&kv), vec![f.version, f.version]);
        expected.extend(kv_answers(&kv));
    }
    db.close().unwrap();
    let _ = std::fs::remove_file(db_dir.join("LOCK"));
    std::fs::write(dir.join("expected.txt"), expected.join("\n") + "\n").unwrap();
}

/// Opens a copy of `f`'s fixture with this build and checks every recorded
/// answer, again after `upgradesstables` rewrote the files in the current
/// format, then with a new-format sstable flushed beside them.
pub fn check(f: Fixture) {
    let tmp = tempfile::tempdir().unwrap();
    copy_dir(&f.path().join("db"), tmp.path());
    let db = Database::open(tmp.path(), options()).unwrap();
    let t = db.table("fx", "ts").unwrap();
    assert_eq!(
        versions(&t),
        vec![f.version, f.version],
        "the fixture holds two version-{} sstables",
        f.version
    );
    let expected = std::fs::read_to_string(f.path().join("expected.txt")).unwrap();
    let expected: Vec<&str> = expected.lines().collect();
    let kv = f.kv_table.then(|| db.table("fx", "kv").unwrap());
    if let Some(kv) = &kv {
        assert_eq!(versions(kv), vec![f.version, f.version]);
    }
    let all_answers = || {
        let mut got = answers(&t, &f.keys());
        if let Some(kv) = &kv {
            got.extend(kv_answers(kv));
        }
        got
    };
    same_answers(&all_answers(), &expected, "as recorded");
    // `upgradesstables` rewrites both in the current format (with a
    // clustering coverage since version 5, one-row partitions in their short
    // form since version 6): the same answers.
    for table in std::iter::once(&t).chain(kv.as_ref()) {
        let report = upgrade_sstables(table, &UpgradeOptions::default(), &mut |_, _| {}).unwrap();
        assert_eq!(report.rewritten.len(), 2);
        assert_eq!(versions(table), vec![FORMAT_VERSION, FORMAT_VERSION]);
    }
    same_answers(&all_answers(), &expected, "after upgradesstables");
    // A flush after new writes mixes a new-format sstable into the same reads.
    write_data(&t, false, f.small_partitions);
    t.flush().unwrap();
    if let Some(kv) = &kv {
        // The same writes at the same timestamps: the same answers.
        write_kv(kv, false);
        kv.flush().unwrap();
    }
    assert_eq!(all_answers().len(), expected.len());
    if kv.is_some() {
        let kv_expected = &expected[expected.len() - KV_KEYS.len()..];
        same_answers(
            &all_answers()[expected.len() - KV_KEYS.len()..],
            kv_expected,
            "with a new-format sstable of the key-value table",
        );
    }
}
