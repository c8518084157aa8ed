//! The scylla driver's workload, shared by the tests that run it with
//! default settings and with authentication and TLS on: schema with
//! compaction and compression options, prepared writes with TTL and
//! timestamps, LWTs, deletes, slices in both orders, 10,000 rows paged, and a
//! server restart after which the session re-runs its prepared statements.
#![allow(dead_code)]

use super::common;

use std::collections::{BTreeSet, HashMap};
use std::ops::ControlFlow;
use std::time::{Duration, Instant};

use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;
use scylla::errors::{DbError, ExecutionError, RequestAttemptError};
use scylla::response::query_result::QueryResult;
use scylla::response::PagingState;
use scylla::statement::batch::{Batch, BatchType};
use scylla::statement::prepared::PreparedStatement;
use scylla::value::{CqlValue, Row};

/// Every row of a result, each as column name -> value.
fn named_rows(result: QueryResult) -> Vec<HashMap<String, Option<CqlValue>>> {
    let rows = result.into_rows_result().expect("a Rows result");
    let names: Vec<String> = rows
        .column_specs()
        .iter()
        .map(|s| s.name().to_string())
        .collect();
    rows.rows::<Row>()
        .expect("untyped rows")
        .map(|row| {
            names
                .iter()
                .cloned()
                .zip(row.expect("row").columns)
                .collect()
        })
        .collect()
}

/// The single row of an LWT answer: `[applied]` and the columns that came
/// back with it.
fn lwt(result: QueryResult) -> (bool, HashMap<String, Option<CqlValue>>) {
    let mut rows = named_rows(result);
    assert_eq!(rows.len(), 1, "an LWT answers one row: {rows:?}");
    let mut row = rows.remove(0);
    let applied = match row.remove("[applied]") {
        Some(Some(CqlValue::Boolean(b))) => b,
        other => panic!("[applied] missing or not a boolean: {other:?} in {row:?}"),
    };
    (applied, row)
}

fn text(v: &str) -> Option<CqlValue> {
    Some(CqlValue::Text(v.to_string()))
}

/// `(c, v)` of a partition of `events`, in the order read.
async fn events(session: &Session, cql: &str) -> Vec<(i32, String)> {
    session
        .query_unpaged(cql, ())
        .await
        .unwrap_or_else(|e| panic!("{cql}: {e}"))
        .into_rows_result()
        .expect("rows")
        .rows::<(i32, String)>()
        .expect("(int, text) rows")
        .map(|r| r.expect("row"))
        .collect()
}

/// All rows of `stmt` with `values`, read a page at a time through the
/// paging state. Every page but the last must be full (the last may be
/// empty: a server that filled a page exactly cannot yet know it was the
/// last, and Cassandra then answers one empty page).
async fn paged<T>(
    session: &Session,
    stmt: &PreparedStatement,
    values: impl scylla::serialize::row::SerializeRow + Clone,
) -> Vec<T>
where
    T: for<'f, 'm> scylla::deserialize::row::DeserializeRow<'f, 'm>,
{
    let page_size = usize::try_from(stmt.get_page_size()).expect("a page size");
    let mut out = Vec::new();
    let mut state = PagingState::start();
    loop {
        let (result, response) = session
            .execute_single_page(stmt, values.clone(), state)
            .await
            .expect("page");
        let rows = result.into_rows_result().expect("rows");
        let n = rows.rows_num();
        out.extend(
            rows.rows::<T>()
                .expect("typed rows")
                .map(|r| r.expect("row")),
        );
        match response.into_paging_control_flow() {
            ControlFlow::Break(()) => {
                assert!(
                    n <= page_size,
                    "a last page of {n} rows, page size {page_size}"
                );
                return out;
            }
            ControlFlow::Continue(next) => {
                assert_eq!(n, page_size, "a page with more to come is full");
                state = next;
            }
        }
    }
}

fn db_error(e: ExecutionError) -> DbError {
    match e {
        ExecutionError::LastAttemptError(RequestAttemptError::DbError(db, _)) => db,
        other => panic!("expected a server error, got {other}"),
    }
}

struct Prepared {
    insert: PreparedStatement,
    select_one: PreparedStatement,
    insert_if_not_exists: PreparedStatement,
    update_if: PreparedStatement,
    series_insert: PreparedStatement,
    series_scan: PreparedStatement,
    series_reverse: PreparedStatement,
}

async fn prepare(session: &Session) -> Prepared {
    let p = |cql: &'static str| async move {
        session
            .prepare(cql)
            .await
            .unwrap_or_else(|e| panic!("prepare {cql}: {e}"))
    };
    let mut series_scan = p("SELECT token(k), k, c, v FROM rs.series").await;
    // Not a divisor of 10,000, so pages end inside partitions.
    series_scan.set_page_size(777);
    let mut series_reverse = p("SELECT c FROM rs.series WHERE k = ? ORDER BY c DESC").await;
    series_reverse.set_page_size(100);
    Prepared {
        insert: p("INSERT INTO rs.events (k, c, v) VALUES (?, ?, ?) USING TTL ? AND TIMESTAMP ?")
            .await,
        select_one: p("SELECT v, writetime(v), ttl(v) FROM rs.events WHERE k = ? AND c = ?").await,
        insert_if_not_exists: p(
            "INSERT INTO rs.accounts (id, owner, balance) VALUES (?, ?, ?) IF NOT EXISTS",
        )
        .await,
        update_if: p("UPDATE rs.accounts SET balance = ? WHERE id = ? IF balance = ?").await,
        series_insert: p("INSERT INTO rs.series (k, c, v) VALUES (?, ?, ?)").await,
        series_scan,
        series_reverse,
    }
}

/// `(v, writetime(v), ttl(v))` of one `events` row, if there is one.
async fn select_one(
    session: &Session,
    p: &Prepared,
    k: i32,
    c: i32,
) -> Option<(String, i64, Option<i32>)> {
    session
        .execute_unpaged(&p.select_one, (k, c))
        .await
        .expect("select one")
        .into_rows_result()
        .expect("rows")
        .maybe_first_row::<(String, i64, Option<i32>)>()
        .expect("(text, bigint, int) row")
}

/// The whole of `series` through the paging state: 10,000 rows, every
/// partition whole and in clustering order, partitions in token order.
async fn check_series(session: &Session, p: &Prepared) {
    let rows = paged::<(i64, i32, i32, i64)>(session, &p.series_scan, ()).await;
    assert_eq!(rows.len(), 10_000, "rows paged through");
    let mut seen = BTreeSet::new();
    for pair in rows.windows(2) {
        let ((t0, k0, c0, _), (t1, k1, c1, _)) = (pair[0], pair[1]);
        if k0 == k1 {
            assert_eq!(c1, c0 + 1, "partition {k0} out of clustering order");
        } else {
            assert!(t0 < t1, "partitions out of token order: {k0}, {k1}");
            assert_eq!((c0, c1), (999, 0), "partition {k0} cut short");
        }
    }
    for (_, k, c, v) in rows {
        assert_eq!(v, i64::from(k) * 1000 + i64::from(c), "value of ({k}, {c})");
        assert!(seen.insert((k, c)), "({k}, {c}) paged twice");
    }

    let reverse = paged::<(i32,)>(session, &p.series_reverse, (3,)).await;
    let expected: Vec<(i32,)> = (0..1000).rev().map(|c| (c,)).collect();
    assert_eq!(reverse, expected, "partition 3 in reverse");
}

/// The whole workload against `strata serve --data-dir DIR EXTRA...`, each
/// session made by `builder` from the server's address (default settings,
/// or credentials and TLS), a restart of the server included.
pub async fn run(dir: &std::path::Path, extra: &[&str], builder: impl Fn(&str) -> SessionBuilder) {
    let mut args = vec!["--port", "0"];
    args.extend_from_slice(extra);
    let (server, addr) = common::serve(dir, &args);
    let session: Session = builder(&addr.to_string()).build().await.expect("connect");

    // Schema, with options Strata has; the driver's metadata must see it.
    for cql in [
        "CREATE KEYSPACE rs WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE rs.events (k int, c int, v text, PRIMARY KEY (k, c)) \
         WITH CLUSTERING ORDER BY (c DESC) \
         AND compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': '64'} \
         AND compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': '16'}",
        "CREATE TABLE rs.accounts (id text PRIMARY KEY, owner text, balance bigint) \
         WITH compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': '6'} \
         AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': '4'}",
        "CREATE TABLE rs.series (k int, c int, v bigint, PRIMARY KEY (k, c))",
    ] {
        session
            .query_unpaged(cql, ())
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    session.refresh_metadata().await.expect("metadata");
    let state = session.get_cluster_state();
    let ks = state.get_keyspace("rs").expect("keyspace rs in metadata");
    let events_meta = ks.tables.get("events").expect("events in metadata");
    assert_eq!(events_meta.partition_key, ["k"]);
    assert_eq!(events_meta.clustering_key, ["c"]);
    assert!(ks.tables.contains_key("accounts") && ks.tables.contains_key("series"));
    let options = named_rows(
        session
            .query_unpaged(
                "SELECT compaction, compression FROM system_schema.tables \
                 WHERE keyspace_name = 'rs' AND table_name = 'events'",
                (),
            )
            .await
            .expect("system_schema.tables"),
    );
    let option = |col: &str, key: &str| match options[0].get(col) {
        Some(Some(CqlValue::Map(entries))) => entries
            .iter()
            .find(|(k, _)| k.as_text().map(String::as_str) == Some(key))
            .and_then(|(_, v)| v.as_text().cloned()),
        other => panic!("{col}: {other:?}"),
    };
    assert!(
        option("compaction", "class").is_some_and(|c| c.ends_with("LeveledCompactionStrategy")),
        "{options:?}"
    );
    assert_eq!(
        option("compaction", "sstable_size_in_mb").as_deref(),
        Some("64")
    );
    assert!(
        option("compression", "class").is_some_and(|c| c.ends_with("ZstdCompressor")),
        "{options:?}"
    );
    assert_eq!(
        option("compression", "chunk_length_in_kb").as_deref(),
        Some("16")
    );

    let p = prepare(&session).await;

    // Writes with TTL (0: none) and explicit timestamps.
    for c in 0..20 {
        session
            .execute_unpaged(&p.insert, (1, c, format!("v{c}"), 0, 1000_i64))
            .await
            .expect("insert");
    }
    session
        .execute_unpaged(&p.insert, (2, 0, "expiring", 86_400, 2000_i64))
        .await
        .expect("insert with TTL");
    // An older timestamp loses to the cell already there; a newer one wins.
    session
        .execute_unpaged(&p.insert, (1, 3, "stale", 0, 999_i64))
        .await
        .expect("older write");
    session
        .execute_unpaged(&p.insert, (1, 4, "newer", 0, 1001_i64))
        .await
        .expect("newer write");
    assert_eq!(
        select_one(&session, &p, 1, 3).await,
        Some(("v3".into(), 1000, None))
    );
    assert_eq!(
        select_one(&session, &p, 1, 4).await,
        Some(("newer".into(), 1001, None))
    );
    let (v, writetime, ttl) = select_one(&session, &p, 2, 0).await.expect("TTL row");
    assert_eq!((v.as_str(), writetime), ("expiring", 2000));
    // The remaining TTL counts down with the clock: at most what was given.
    let ttl = ttl.expect("a TTL");
    assert!(
        (86_400 - 3600..=86_400).contains(&ttl),
        "ttl {ttl} right after a write with TTL 86400"
    );

    // Slices in both orders (the table is clustered DESC).
    let desc: Vec<(i32, String)> = (2..8).rev().map(|c| (c, value_of(c))).collect();
    assert_eq!(
        events(
            &session,
            "SELECT c, v FROM rs.events WHERE k = 1 AND c >= 2 AND c < 8"
        )
        .await,
        desc
    );
    let asc: Vec<(i32, String)> = (2..8).map(|c| (c, value_of(c))).collect();
    assert_eq!(
        events(
            &session,
            "SELECT c, v FROM rs.events WHERE k = 1 AND c >= 2 AND c < 8 ORDER BY c ASC"
        )
        .await,
        asc
    );
    assert_eq!(
        events(
            &session,
            "SELECT c, v FROM rs.events WHERE k = 1 AND c > 15 ORDER BY c ASC LIMIT 2"
        )
        .await,
        vec![(16, "v16".into()), (17, "v17".into())]
    );

    // Deletes: a row, a range (range tombstone), a partition.
    for cql in [
        "DELETE FROM rs.events WHERE k = 1 AND c = 5",
        "DELETE FROM rs.events WHERE k = 1 AND c > 10 AND c <= 15",
        "DELETE FROM rs.events WHERE k = 2",
    ] {
        session
            .query_unpaged(cql, ())
            .await
            .unwrap_or_else(|e| panic!("{cql}: {e}"));
    }
    let remaining: Vec<i32> = (0..20)
        .rev()
        .filter(|c| *c != 5 && !(11..=15).contains(c))
        .collect();
    let read: Vec<i32> = events(&session, "SELECT c, v FROM rs.events WHERE k = 1")
        .await
        .into_iter()
        .map(|(c, _)| c)
        .collect();
    assert_eq!(read, remaining, "after the row and range deletes");
    assert!(events(&session, "SELECT c, v FROM rs.events WHERE k = 2")
        .await
        .is_empty());

    // Lightweight transactions.
    let (applied, row) = lwt(session
        .execute_unpaged(&p.insert_if_not_exists, ("a1", "ann", 100_i64))
        .await
        .expect("IF NOT EXISTS"));
    assert!(applied && row.is_empty(), "{row:?}");
    let (applied, row) = lwt(session
        .execute_unpaged(&p.insert_if_not_exists, ("a1", "bob", 999_i64))
        .await
        .expect("IF NOT EXISTS again"));
    assert!(!applied);
    assert_eq!(row.get("owner"), Some(&text("ann")), "{row:?}");
    assert_eq!(row.get("balance"), Some(&Some(CqlValue::BigInt(100))));
    let (applied, _) = lwt(session
        .execute_unpaged(&p.update_if, (150_i64, "a1", 100_i64))
        .await
        .expect("IF balance = 100"));
    assert!(applied);
    let (applied, row) = lwt(session
        .execute_unpaged(&p.update_if, (175_i64, "a1", 100_i64))
        .await
        .expect("IF balance = 100 again"));
    assert!(!applied);
    assert_eq!(
        row.get("balance"),
        Some(&Some(CqlValue::BigInt(150))),
        "{row:?}"
    );
    let (applied, row) = lwt(session
        .query_unpaged(
            "DELETE FROM rs.accounts WHERE id = 'a1' IF owner = 'bob'",
            (),
        )
        .await
        .expect("DELETE IF"));
    assert!(!applied);
    assert_eq!(row.get("owner"), Some(&text("ann")), "{row:?}");
    let (applied, row) = lwt(session
        .query_unpaged(
            "UPDATE rs.accounts SET balance = 0 WHERE id = 'zz' IF EXISTS",
            (),
        )
        .await
        .expect("IF EXISTS"));
    assert!(!applied && row.is_empty(), "{row:?}");

    // 10,000 rows, written in unlogged batches of 100 prepared inserts.
    for k in 0..10 {
        for chunk in 0..10 {
            let mut batch = Batch::new(BatchType::Unlogged);
            let mut values = Vec::new();
            for c in chunk * 100..(chunk + 1) * 100 {
                batch.append_statement(p.series_insert.clone());
                values.push((k, c, i64::from(k) * 1000 + i64::from(c)));
            }
            session.batch(&batch, values).await.expect("batch");
        }
    }
    check_series(&session, &p).await;

    // Errors come back as the server's error codes.
    let e = session
        .query_unpaged("SELECT * FROM rs.no_such_table", ())
        .await
        .expect_err("unknown table");
    assert!(matches!(db_error(e), DbError::Invalid), "unknown table");
    let e = session
        .query_unpaged("SELEKT * FROM rs.events", ())
        .await
        .expect_err("syntax");
    assert!(matches!(db_error(e), DbError::SyntaxError));

    // Restart on the same data directory and port; the session reconnects.
    common::stop_server(server);
    let port = addr.port().to_string();
    let mut args = vec!["--port", port.as_str()];
    args.extend_from_slice(extra);
    let (server, again) = common::serve(dir, &args);
    assert_eq!(again, addr);
    let deadline = Instant::now() + Duration::from_secs(120);
    while let Err(e) = session
        .query_unpaged("SELECT release_version FROM system.local", ())
        .await
    {
        assert!(
            Instant::now() < deadline,
            "the session did not reconnect: {e}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Every prepared statement again: the new server answers Unprepared and
    // the driver prepares again, invisibly to the caller.
    assert_eq!(
        select_one(&session, &p, 1, 4).await,
        Some(("newer".into(), 1001, None)),
        "a write from before the restart"
    );
    session
        .execute_unpaged(&p.insert, (1, 30, "back", 0, 5000_i64))
        .await
        .expect("insert after restart");
    assert_eq!(
        select_one(&session, &p, 1, 30).await,
        Some(("back".into(), 5000, None))
    );
    let (applied, row) = lwt(session
        .execute_unpaged(&p.update_if, (200_i64, "a1", 150_i64))
        .await
        .expect("LWT after restart"));
    assert!(applied, "{row:?}");
    let (applied, row) = lwt(session
        .execute_unpaged(&p.insert_if_not_exists, ("a1", "cat", 1_i64))
        .await
        .expect("IF NOT EXISTS after restart"));
    assert!(!applied);
    assert_eq!(
        row.get("balance"),
        Some(&Some(CqlValue::BigInt(200))),
        "{row:?}"
    );
    let mut batch = Batch::new(BatchType::Unlogged);
    batch.append_statement(p.series_insert.clone());
    batch.append_statement(p.series_insert.clone());
    session
        .batch(&batch, ((3, 0, 3000_i64), (3, 1, 3001_i64)))
        .await
        .expect("prepared batch after restart");
    check_series(&session, &p).await;

    drop(session);
    common::stop_server(server);
}

fn value_of(c: i32) -> String {
    if c == 4 {
        "newer".into()
    } else {
        format!("v{c}")
    }
}
