//! A client that asks for a large page (about 4 MiB of rows, no paging) and
//! reads it a few bytes at a time: its answer waits in its own connection's
//! writer while every other client is served, the server holds that one
//! answer (the connection has one request in flight), and the slow client
//! eventually receives all of it, intact.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::request::encode;
use strata_server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

const ROWS: usize = 2000;
const VALUE_BYTES: usize = 2000;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn slow_consumer_of_a_large_page() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut setup = Client::connect(server.addr, 4).await;
    assert!(setup.startup(&[]).await.is(Opcode::Ready));
    for q in [
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE ks.t (k int, c int, v text, PRIMARY KEY (k, c))",
    ] {
        let f = setup.query(q).await;
        assert!(f.is(Opcode::Result), "{q}: {:?}", f.error());
    }
    let value = "x".repeat(VALUE_BYTES);
    for c in 0..ROWS {
        let f = setup
            .query(&format!(
                "INSERT INTO ks.t (k, c, v) VALUES (1, {c}, '{value}')"
            ))
            .await;
        assert!(f.is(Opcode::Result), "{:?}", f.error());
    }

    // The slow client: a small receive window, one SELECT of everything.
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let mut slow = sock.connect(server.addr).await.unwrap();
    let startup = encode::startup(&[("CQL_VERSION", "3.0.0")]);
    slow.write_all(&Client::envelope(4, 0, 0, Opcode::Startup as u8, &startup))
        .await
        .unwrap();
    let mut ready = [0u8; 9];
    slow.read_exact(&mut ready).await.unwrap();
    assert_eq!(ready[4], Opcode::Ready as u8);
    let q = encode::query(4, "SELECT * FROM ks.t WHERE k = 1", &encode::one(), false);
    slow.write_all(&Client::envelope(4, 0, 1, Opcode::Query as u8, &q))
        .await
        .unwrap();
    // Read the header only; the 4 MiB body waits.
    let mut header = [0u8; 9];
    slow.read_exact(&mut header).await.unwrap();
    assert_eq!(header[4], Opcode::Result as u8);
    let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
    assert!(len > ROWS * VALUE_BYTES, "{len}");

    // Everyone else is served meanwhile; the slow connection holds one
    // request in flight, no more.
    let mut other = Client::connect(server.addr, 5).await;
    assert!(other.startup(&[]).await.is(Opcode::Ready));
    for i in 0..20 {
        let f = other
            .query(&format!("SELECT v FROM ks.t WHERE k = 1 AND c = {i}"))
            .await;
        assert_eq!(f.result_kind(), 2, "rows");
        assert!(server.stats.snapshot().requests_in_flight <= 2);
    }

    // The slow client reads the rest, a little at a time.
    let mut body = vec![0u8; len];
    let mut at = 0;
    while at < len {
        let end = (at + 1500).min(len);
        slow.read_exact(&mut body[at..end]).await.unwrap();
        at = end;
    }
    // Every value arrived whole: runs of exactly VALUE_BYTES 'x'.
    let mut runs = 0;
    let mut run = 0;
    for b in body.iter().chain(std::iter::once(&0u8)) {
        if *b == b'x' {
            run += 1;
        } else {
            if run == VALUE_BYTES {
                runs += 1;
            }
            run = 0;
        }
    }
    assert_eq!(runs, ROWS, "every row arrived intact");
    common::eventually("the answer written and released", || {
        server.stats.snapshot().requests_in_flight == 0
    })
    .await;
    server.stop().await;
}
