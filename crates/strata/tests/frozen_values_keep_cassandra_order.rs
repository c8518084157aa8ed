//! Scenario: seeded random writes and deletes of rows whose clustering key is
//! a frozen list (descending) and a tuple with nulls, and whose values are a
//! nested frozen map and a frozen UDT, through the CQL executor, with
//! flushes, major compactions and crash-reopens (a drop without close, so the
//! commit log replays) in between. After every step each partition is read
//! back and compared with a model: a map ordered by a comparator written here
//! from Cassandra's rules (`ListType`, `TupleType`, `MapType`: element by
//! element, a prefix first, a null component before any value), independent
//! of the engine's byte-comparable encoding. Values come from small domains
//! so that prefixes, equal elements and nulls meet often.
//!
//! More seeds: `STRATA_FROZEN_SEEDS=50 cargo test --release -p strata --test
//! frozen_values_keep_cassandra_order`.

mod common;

use std::cmp::Ordering;

use common::golden::executor;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use strata::query::{Executor, QueryParams, QueryResult, Session};
use strata::types::{self, Value};

/// One row of the model: clustering (list, tuple) and the two values.
#[derive(Clone, Debug, PartialEq)]
struct ModelRow {
    c: Vec<i32>,
    t: (Option<i32>, Option<String>),
    v: Vec<(String, Vec<i32>)>,
    u: (Option<i32>, Option<String>),
}

/// Cassandra's order of a `frozen<list<int>>`: element by element, then
/// the shorter first.
fn cmp_list(a: &[i32], b: &[i32]) -> Ordering {
    for (x, y) in a.iter().zip(b) {
        match x.cmp(y) {
            Ordering::Equal => {}
            o => return o,
        }
    }
    a.len().cmp(&b.len())
}

/// Cassandra's order of a component of a tuple: null before any value.
fn cmp_opt<T: Ord>(a: &Option<T>, b: &Option<T>) -> Ordering {
    match (a, b) {
        (None, None) => Ordering::Equal,
        (None, Some(_)) => Ordering::Less,
        (Some(_), None) => Ordering::Greater,
        (Some(x), Some(y)) => x.cmp(y),
    }
}

/// The table's clustering order: `c` descending, then `t` ascending (text
/// compares as its UTF-8 bytes, which `String`'s order is).
fn cmp_clustering(a: &ModelRow, b: &ModelRow) -> Ordering {
    cmp_list(&b.c, &a.c)
        .then_with(|| cmp_opt(&a.t.0, &b.t.0))
        .then_with(|| cmp_opt(&a.t.1, &b.t.1))
}

fn literal_list(xs: &[i32]) -> String {
    let items: Vec<String> = xs.iter().map(i32::to_string).collect();
    format!("[{}]", items.join(", "))
}

fn literal_text(s: &Option<String>) -> String {
    s.as_ref().map_or("null".to_string(), |s| format!("'{s}'"))
}

fn literal_int(x: &Option<i32>) -> String {
    x.map_or("null".to_string(), |x| x.to_string())
}

fn random_row(rng: &mut ChaCha8Rng) -> ModelRow {
    let small = |rng: &mut ChaCha8Rng| rng.gen_range(-2..3);
    let text = |rng: &mut ChaCha8Rng| -> Option<String> {
        match rng.gen_range(0..4) {
            0 => None,
            1 => Some(String::new()),
            2 => Some("a".to_string()),
            _ => Some("B".to_string()),
        }
    };
    let c: Vec<i32> = (0..rng.gen_range(0..4)).map(|_| small(rng)).collect();
    let t = (rng.gen_bool(0.8).then(|| small(rng)), text(rng));
    let mut v: Vec<(String, Vec<i32>)> = Vec::new();
    for _ in 0..rng.gen_range(0..3) {
        let key = ["x", "y", "z"][rng.gen_range(0..3)].to_string();
        let mut set: Vec<i32> = (0..rng.gen_range(0..3)).map(|_| small(rng)).collect();
        set.sort_unstable();
        set.dedup();
        v.retain(|(k, _)| *k != key);
        v.push((key, set));
    }
    v.sort();
    let u = (rng.gen_bool(0.7).then(|| small(rng)), text(rng));
    ModelRow { c, t, v, u }
}

fn run(exec: &Executor, session: &mut Session, cql: &str) -> QueryResult {
    exec.query(session, cql, &QueryParams::default())
        .unwrap_or_else(|e| panic!("{cql}: {}", e.message))
        .result
}

/// The rows of partition `k` as the executor returns them.
fn read(exec: &Executor, session: &mut Session, k: i32) -> Vec<ModelRow> {
    let QueryResult::Rows(rows) = run(
        exec,
        session,
        &format!("SELECT c, t, v, u FROM ks.t WHERE k = {k}"),
    ) else {
        panic!("not rows");
    };
    let schema = exec
        .database()
        .catalog()
        .table("ks", "t")
        .expect("table")
        .clone();
    let ty = |name: &str| schema.column(name).expect("column").ty.clone();
    rows.rows
        .iter()
        .map(|r| {
            let val = |i: usize, name: &str| -> Value {
                types::deserialize(&ty(name), r[i].as_ref().expect("non-null")).expect("decode")
            };
            let ints = |v: &Value| -> Vec<i32> {
                match v {
                    Value::List(items) | Value::Set(items) => items
                        .iter()
                        .map(|x| match x {
                            Value::Int(i) => *i,
                            other => panic!("{other:?}"),
                        })
                        .collect(),
                    other => panic!("{other:?}"),
                }
            };
            let pair = |parts: Vec<Option<Value>>| -> (Option<i32>, Option<String>) {
                let int = match &parts[0] {
                    Some(Value::Int(i)) => Some(*i),
                    _ => None,
                };
                let text = match &parts[1] {
                    Some(Value::Text(s)) => Some(s.clone()),
                    _ => None,
                };
                (int, text)
            };
            let Value::Tuple(t) = val(1, "t") else {
                panic!("tuple")
            };
            let Value::Map(m) = val(2, "v") else {
                panic!("map")
            };
            let Value::Udt(u) = val(3, "u") else {
                panic!("udt")
            };
            ModelRow {
                c: ints(&val(0, "c")),
                t: pair(t),
                v: m.iter()
                    .map(|(k, v)| {
                        let Value::Text(k) = k else { panic!("key") };
                        (k.clone(), ints(v))
                    })
                    .collect(),
                u: pair(u.into_iter().map(|(_, v)| v).collect()),
            }
        })
        .collect()
}

fn one_seed(seed: u64) {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let dir = tempfile::tempdir().expect("tempdir");
    let mut exec = Some(executor(dir.path()));
    let mut session = Session::default();
    for ddl in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TYPE ks.pt (x int, y text)",
        "CREATE TABLE ks.t (k int, c frozen<list<int>>, t tuple<int, text>, \
         v frozen<map<text, frozen<set<int>>>>, u frozen<pt>, PRIMARY KEY (k, c, t)) \
         WITH CLUSTERING ORDER BY (c DESC, t ASC)",
    ] {
        run(exec.as_ref().expect("executor"), &mut session, ddl);
    }
    let mut model: Vec<Vec<ModelRow>> = vec![Vec::new(); 3];
    for step in 0..300 {
        let e = exec.as_ref().expect("executor");
        let k = rng.gen_range(0..3usize);
        let row = random_row(&mut rng);
        let key = format!(
            "k = {k} AND c = {} AND t = ({}, {})",
            literal_list(&row.c),
            literal_int(&row.t.0),
            literal_text(&row.t.1)
        );
        let part = &mut model[k];
        let at = part
            .iter()
            .position(|r| cmp_clustering(r, &row) == Ordering::Equal);
        match rng.gen_range(0..10) {
            0..=6 => {
                let v: Vec<String> = row
                    .v
                    .iter()
                    .map(|(k, s)| {
                        let items: Vec<String> = s.iter().map(i32::to_string).collect();
                        format!("'{k}': {{{}}}", items.join(", "))
                    })
                    .collect();
                run(
                    e,
                    &mut session,
                    &format!(
                        "INSERT INTO ks.t (k, c, t, v, u) VALUES ({k}, {}, ({}, {}), {{{}}}, {{x: {}, y: {}}})",
                        literal_list(&row.c),
                        literal_int(&row.t.0),
                        literal_text(&row.t.1),
                        v.join(", "),
                        literal_int(&row.u.0),
                        literal_text(&row.u.1)
                    ),
                );
                match at {
                    Some(i) => part[i] = row,
                    None => part.push(row),
                }
            }
            7 => {
                run(e, &mut session, &format!("DELETE FROM ks.t WHERE {key}"));
                if let Some(i) = at {
                    part.remove(i);
                }
            }
            8 => match rng.gen_range(0..3) {
                0 => e.database().flush_all().expect("flush"),
                1 => {
                    let db = e.database();
                    let limiter = db.compaction_limiter().clone();
                    for t in db.tables() {
                        t.compact_major(&limiter).expect("compaction");
                    }
                }
                _ => {
                    // A crash: the database is dropped without a close
                    // (before the next open, which needs its directory).
                    drop(exec.take());
                    exec = Some(executor(dir.path()));
                }
            },
            _ => {}
        }
        let e = exec.as_ref().expect("executor");
        for (k, part) in model.iter_mut().enumerate() {
            part.sort_by(cmp_clustering);
            let got = read(e, &mut session, k as i32);
            assert_eq!(&got, part, "seed {seed} step {step} partition {k}");
        }
    }
}

#[test]
fn frozen_clustering_values_keep_cassandra_order_through_flush_compaction_and_replay() {
    let seeds: u64 = std::env::var("STRATA_FROZEN_SEEDS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(3);
    for seed in 0..seeds {
        one_seed(seed);
    }
}
