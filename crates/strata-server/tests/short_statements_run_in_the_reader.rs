//! Which requests a connection runs in its reader (conn invariant 4):
//! EXECUTEs of single-partition prepared SELECTs always, single-partition
//! prepared writes only when statements run inline (the periodic commit
//! log); QUERY, multi-partition reads, batches and unprepared ids never.
//! Counted by the server's `requests_in_reader`, and every answer is the
//! right one either way.

mod common;

use common::{Client, TestServer};
use strata::query::{BoundValue, QueryParams, Values};
use strata_server::frame::Opcode;
use strata_server::request::encode;
use strata_server::wire::Reader;
use strata_server::ServerConfig;

fn params(values: Vec<BoundValue>) -> QueryParams {
    QueryParams {
        values: Values::Positional(values),
        ..encode::one()
    }
}

fn int(v: i32) -> BoundValue {
    BoundValue::Value(v.to_be_bytes().to_vec())
}

async fn prepare(c: &mut Client, text: &str) -> Vec<u8> {
    let f = c
        .request(Opcode::Prepare, &encode::prepare(4, text, None))
        .await;
    assert!(f.is(Opcode::Result), "{text}: {:?}", f.error());
    let mut r = Reader::new(&f.body);
    assert_eq!(r.int().unwrap(), 0x0004, "Prepared");
    r.short_bytes().unwrap().to_vec()
}

async fn execute(c: &mut Client, id: &[u8], values: Vec<BoundValue>) -> common::Frame {
    let f = c
        .request(
            Opcode::Execute,
            &encode::execute(4, id, None, &params(values), false),
        )
        .await;
    assert!(f.is(Opcode::Result), "{:?}", f.error());
    f
}

/// The rows count of a Rows result.
fn row_count(f: &common::Frame) -> i32 {
    let mut r = Reader::new(&f.body);
    assert_eq!(r.int().unwrap(), 0x0002, "Rows");
    let flags = r.int().unwrap();
    let columns = r.int().unwrap();
    if flags & 0x0001 != 0 {
        r.string().unwrap();
        r.string().unwrap();
    }
    for _ in 0..columns {
        if flags & 0x0001 == 0 {
            r.string().unwrap();
            r.string().unwrap();
        }
        r.string().unwrap();
        r.short().unwrap();
    }
    r.int().unwrap()
}

async fn scenario(inline_statements: bool) {
    let server = TestServer::start(ServerConfig {
        inline_statements,
        ..ServerConfig::default()
    })
    .await;
    let in_reader = || server.stats.snapshot().requests_in_reader;
    let mut c = Client::connect(server.addr, 4).await;
    assert!(c.startup(&[]).await.is(Opcode::Ready));
    for q in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int, c int, v int, PRIMARY KEY (k, c))",
    ] {
        assert!(c.query(q).await.is(Opcode::Result), "{q}");
    }
    let insert = prepare(&mut c, "INSERT INTO ks.t (k, c, v) VALUES (?, ?, ?)").await;
    let select = prepare(&mut c, "SELECT v FROM ks.t WHERE k = ?").await;
    let scan = prepare(&mut c, "SELECT v FROM ks.t WHERE c = ? ALLOW FILTERING").await;
    let many = prepare(&mut c, "SELECT v FROM ks.t WHERE k IN (?, ?)").await;
    assert_eq!(in_reader(), 0, "PREPARE and QUERY never");

    for i in 0..10 {
        execute(&mut c, &insert, vec![int(1), int(i), int(i)]).await;
    }
    let writes = if inline_statements { 10 } else { 0 };
    assert_eq!(in_reader(), writes, "single-partition writes");

    assert_eq!(row_count(&execute(&mut c, &select, vec![int(1)]).await), 10);
    assert_eq!(in_reader(), writes + 1, "a single-partition SELECT");

    assert_eq!(row_count(&execute(&mut c, &scan, vec![int(3)]).await), 1);
    assert_eq!(
        row_count(&execute(&mut c, &many, vec![int(1), int(2)]).await),
        10
    );
    assert!(c
        .query("SELECT v FROM ks.t WHERE k = 1")
        .await
        .is(Opcode::Result));
    let f = c
        .request(
            Opcode::Execute,
            &encode::execute(4, &[9; 16], None, &params(vec![]), false),
        )
        .await;
    assert_eq!(f.error().0, 0x2500, "an unknown id is answered Unprepared");
    assert_eq!(
        in_reader(),
        writes + 1,
        "scans, IN, QUERY, unknown ids never"
    );
    server.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn short_statements_run_in_the_reader() {
    scenario(false).await;
    scenario(true).await;
}
