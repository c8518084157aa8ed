//! Deleted data never comes back: a row written, then deleted (row tombstone,
//! partition tombstone, cell tombstone and TTL expiry variants), spread over
//! overlapping sstables together with unrelated newer data; gc grace passes in
//! simulated time; then compactions run in every order that can happen (every
//! sequence of pairwise merges and single-sstable rewrites of the three
//! sstables). After each step the deleted data must stay deleted and the live
//! data must stay.

use std::sync::Arc;
use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

const CREATE: &str = "CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY ((k), c)) \
    WITH gc_grace_seconds = 60 AND compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";

#[derive(Clone, Copy, Debug)]
enum Deletion {
    Row,
    Partition,
    Cell,
    Ttl,
}

fn ids(t: &Table) -> Vec<u64> {
    let mut v: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
    v.sort_unstable();
    v
}

/// Builds: sstable 1 = the doomed row (+ a live neighbour); sstable 2 = the
/// deletion; sstable 3 = newer unrelated data in the same partition.
fn setup(kind: Deletion) -> (tempfile::TempDir, Arc<SimClock>, Database, Arc<Table>) {
    let dir = tempfile::tempdir().unwrap();
    let clock = SimClock::fixed();
    // No commit log: this test is about compaction, and fsyncs would dominate it.
    let mut opts = DbOptions::new(clock.clone());
    opts.commitlog = None;
    let db = Database::open(dir.path(), opts).unwrap();
    let t = db.create_table_cql(CREATE).unwrap();
    let w = WriteOptions::default();
    let ttl = WriteOptions {
        ttl_seconds: Some(10),
        ..WriteOptions::default()
    };
    let doomed_opts = if matches!(kind, Deletion::Ttl) {
        ttl
    } else {
        w
    };
    t.insert(
        &[
            ("k", Value::Int(1)),
            ("c", Value::Int(1)),
            ("v", Value::Text("doomed".into())),
        ],
        &doomed_opts,
    )
    .unwrap();
    t.insert(
        &[
            ("k", Value::Int(2)),
            ("c", Value::Int(1)),
            ("v", Value::Text("other partition".into())),
        ],
        &w,
    )
    .unwrap();
    t.flush().unwrap();
    clock.advance_seconds(1);
    let schema = t.schema();
    let now = clock_now(&clock);
    match kind {
        Deletion::Row => t
            .delete_row(&[("k", Value::Int(1)), ("c", Value::Int(1))], &w)
            .unwrap(),
        Deletion::Partition => t
            .apply(
                &schema
                    .delete_partition(&[("k", Value::Int(1))], &w, now)
                    .unwrap(),
            )
            .unwrap(),
        Deletion::Cell => t
            .update(
                &[("k", Value::Int(1)), ("c", Value::Int(1))],
                &[("v", None)],
                &w,
            )
            .unwrap(),
        Deletion::Ttl => {
            // The "deletion" is time: write something unrelated so sstable 2 exists.
            t.insert(
                &[
                    ("k", Value::Int(3)),
                    ("c", Value::Int(1)),
                    ("v", Value::Text("x".into())),
                ],
                &w,
            )
            .unwrap()
        }
    }
    t.flush().unwrap();
    clock.advance_seconds(1);
    t.insert(
        &[
            ("k", Value::Int(1)),
            ("c", Value::Int(2)),
            ("v", Value::Text("newer".into())),
        ],
        &w,
    )
    .unwrap();
    t.flush().unwrap();
    assert_eq!(ids(&t).len(), 3);
    // gc grace (60 s) and the TTL (10 s) pass.
    clock.advance_seconds(120);
    (dir, clock, db, t)
}

fn clock_now(clock: &SimClock) -> i64 {
    use strata::clock::Clock;
    clock.now_micros()
}

fn check(t: &Table, kind: Deletion, step: &str) {
    let rows = t
        .select(&[Value::Int(1)], &ClusteringRange::ALL, false, usize::MAX)
        .unwrap();
    let texts: Vec<String> = rows
        .iter()
        .flat_map(|r| {
            r.iter()
                .filter(|(n, _)| n == "v")
                .filter_map(|(_, v)| v.clone())
        })
        .map(|v| strata::types::format_value(&v))
        .collect();
    assert!(
        !texts.iter().any(|v| v.contains("doomed")),
        "{kind:?} {step}: deleted data came back: {texts:?}"
    );
    match kind {
        // A partition delete at t1 does not cover the newer row written at t2.
        Deletion::Row | Deletion::Partition | Deletion::Ttl => {
            assert_eq!(rows.len(), 1, "{kind:?} {step}: {rows:?}");
        }
        // A cell delete leaves the INSERTed row (marker) with a null.
        Deletion::Cell => assert_eq!(rows.len(), 2, "{kind:?} {step}: {rows:?}"),
    }
    assert_eq!(
        t.select(&[Value::Int(2)], &ClusteringRange::ALL, false, 9)
            .unwrap()
            .len(),
        1,
        "{step}"
    );
}

/// Every sequence of operations on the current sstables until one remains:
/// merge any pair, or rewrite any one alone.
fn explore(path: Vec<String>, plan: &mut Vec<Vec<String>>, remaining: usize) {
    if remaining == 1 || path.len() >= 2 {
        plan.push(path);
        return;
    }
    for a in 0..remaining {
        let mut p = path.clone();
        p.push(format!("rewrite {a}"));
        explore(p, plan, remaining);
        for b in (a + 1)..remaining {
            let mut p = path.clone();
            p.push(format!("merge {a} {b}"));
            explore(p, plan, remaining - 1);
        }
    }
}

#[test]
fn deleted_data_never_comes_back_in_any_compaction_order() {
    for kind in [
        Deletion::Row,
        Deletion::Partition,
        Deletion::Cell,
        Deletion::Ttl,
    ] {
        let mut plans = Vec::new();
        explore(Vec::new(), &mut plans, 3);
        for plan in plans {
            let (_dir, _clock, db, t) = setup(kind);
            let limiter = db.compaction_limiter().clone();
            check(&t, kind, "before compaction");
            for step in &plan {
                let live = ids(&t);
                let parts: Vec<usize> = step
                    .split(' ')
                    .skip(1)
                    .filter_map(|x| x.parse().ok())
                    .collect();
                let chosen: Vec<u64> = parts.iter().filter_map(|&i| live.get(i).copied()).collect();
                t.compact_user_defined(&chosen, 0, &limiter).unwrap();
                check(&t, kind, &format!("{plan:?} after {step}"));
            }
            // Finally everything together, and after a reopen.
            t.compact_major(&limiter).unwrap();
            check(&t, kind, &format!("{plan:?} after major compaction"));
            drop(t);
            db.close().unwrap();
        }
    }
}
