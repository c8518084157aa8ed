//! ALTER TABLE RENAME of primary-key columns, as Cassandra allows it: rows in
//! sstables written before the rename, in the memtable and in the commit log
//! (replayed after a crash) all read under the new names, before and after a
//! major compaction, and after renaming back. A rename of a regular column,
//! or to a name the table has, is refused with Cassandra's message and
//! changes nothing.

use std::collections::BTreeMap;
use std::sync::Arc;
use strata::clock::SystemClock;
use strata::db::{Database, DbOptions};
use strata::query::{Authenticator, Executor, NodeInfo, QueryParams, QueryResult, Session};
use strata::types;

fn open(dir: &std::path::Path) -> (Arc<Database>, Executor) {
    let mut opts = DbOptions::new(SystemClock::new());
    opts.concurrent_compactors = 0;
    let db = Arc::new(Database::open(dir, opts).expect("open"));
    let exec = Executor::new(
        db.clone(),
        NodeInfo {
            listen_address: std::net::IpAddr::from([127, 0, 0, 1]),
            native_port: 9042,
            cluster_name: "Test Cluster".into(),
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            release_version: strata::query::RELEASE_VERSION.into(),
            host_id: [7; 16],
        },
        Authenticator::AllowAll,
    )
    .expect("executor");
    (db, exec)
}

fn run(exec: &Executor, cql: &str) -> Result<QueryResult, String> {
    exec.query(&mut Session::default(), cql, &QueryParams::default())
        .map(|r| r.result)
        .map_err(|e| e.message)
}

/// Every row of `SELECT cols FROM ks.t` as text, keyed by the first two.
fn rows(exec: &Executor, select: &str) -> BTreeMap<(String, String), String> {
    let QueryResult::Rows(r) = run(exec, select).expect("select") else {
        panic!("not rows: {select}");
    };
    let text = |i: usize, v: &Option<Vec<u8>>| -> String {
        let strata::query::ColumnType::Native(t) = &r.metadata.columns[i].ty else {
            panic!("native columns only");
        };
        v.as_ref().map_or("null".into(), |b| {
            types::format_value(&types::deserialize(t, b).expect("value"))
        })
    };
    r.rows
        .iter()
        .map(|row| ((text(0, &row[0]), text(1, &row[1])), text(2, &row[2])))
        .collect()
}

fn insert(
    exec: &Executor,
    names: (&str, &str),
    keys: std::ops::Range<i32>,
    oracle: &mut BTreeMap<(String, String), String>,
) {
    for i in keys {
        let (k, c) = (i % 7, i);
        run(
            exec,
            &format!(
                "INSERT INTO ks.t ({}, {}, v) VALUES ({k}, {c}, 'v{i}')",
                names.0, names.1
            ),
        )
        .expect("insert");
        oracle.insert((k.to_string(), c.to_string()), format!("v{i}"));
    }
}

#[test]
fn renamed_key_columns_keep_every_row() {
    let dir = tempfile::tempdir().unwrap();
    let mut oracle = BTreeMap::new();
    {
        let (db, exec) = open(dir.path());
        run(&exec, "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}").unwrap();
        run(&exec, "CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c)) WITH CLUSTERING ORDER BY (c DESC)").unwrap();
        insert(&exec, ("k", "c"), 0..100, &mut oracle);
        db.table("ks", "t").unwrap().flush().unwrap();
        insert(&exec, ("k", "c"), 100..150, &mut oracle);

        // Refusals first: each leaves the table as it was.
        for (cql, message) in [
            ("ALTER TABLE ks.t RENAME v TO w", "Cannot rename non PRIMARY KEY column v"),
            ("ALTER TABLE ks.t RENAME k TO v", "Cannot rename column k to v in table 'ks.t'; another column with that name already exists"),
            ("ALTER TABLE ks.t RENAME k TO key AND nope TO x", "Column nope was not found in table ks.t"),
        ] {
            assert_eq!(run(&exec, cql).unwrap_err(), message, "{cql}");
        }
        assert_eq!(rows(&exec, "SELECT k, c, v FROM ks.t"), oracle);

        run(&exec, "ALTER TABLE ks.t RENAME k TO key AND c TO cc").unwrap();
        assert_eq!(
            run(&exec, "ALTER TABLE ks.t RENAME IF EXISTS nope TO x").unwrap(),
            QueryResult::Void
        );
        assert_eq!(rows(&exec, "SELECT key, cc, v FROM ks.t"), oracle);
        assert!(run(&exec, "SELECT k FROM ks.t").unwrap_err().contains("k"));
        insert(&exec, ("key", "cc"), 150..200, &mut oracle);
        // A slice on the renamed clustering column keeps its order.
        let QueryResult::Rows(slice) =
            run(&exec, "SELECT cc FROM ks.t WHERE key = 3 AND cc >= 150").unwrap()
        else {
            panic!("rows")
        };
        let got: Vec<i32> = slice
            .rows
            .iter()
            .map(|r| i32::from_be_bytes(r[0].as_deref().unwrap().try_into().unwrap()))
            .collect();
        let mut want: Vec<i32> = (150..200).filter(|i| i % 7 == 3).collect();
        want.reverse();
        assert_eq!(got, want);
        // Dropped without close (nothing flushed): the memtable's rows come
        // back from the commit log.
        drop(exec);
        drop(db);
    }
    let (db, exec) = open(dir.path());
    assert_eq!(rows(&exec, "SELECT key, cc, v FROM ks.t"), oracle);
    let t = db.table("ks", "t").unwrap();
    t.flush().unwrap();
    t.compact_major(db.compaction_limiter()).unwrap();
    assert_eq!(rows(&exec, "SELECT key, cc, v FROM ks.t"), oracle);
    run(&exec, "ALTER TABLE ks.t RENAME key TO k").unwrap();
    assert_eq!(rows(&exec, "SELECT k, cc, v FROM ks.t"), oracle);
    let QueryResult::Rows(cols) = run(
        &exec,
        "SELECT column_name, kind FROM system_schema.columns WHERE keyspace_name = 'ks' AND table_name = 't'",
    )
    .unwrap() else {
        panic!("rows")
    };
    let names: Vec<String> = cols
        .rows
        .iter()
        .map(|r| String::from_utf8(r[0].clone().unwrap()).unwrap())
        .collect();
    assert_eq!(names, ["cc", "k", "v"]);
}
