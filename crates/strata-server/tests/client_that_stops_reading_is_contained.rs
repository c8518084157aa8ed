//! A client that pipelines requests and never reads the answers: its
//! connection holds at most max_requests_in_flight_per_connection requests
//! (answers not yet written), then the server stops reading it; the server's
//! memory for it is bounded by that, and another client is served all along.
//! When the client finally reads, every request is answered on its stream.

mod common;

use common::{eventually, Client, TestServer};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use strata_server::frame::Opcode;
use strata_server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

const LIMIT: usize = 8;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_that_stops_reading_is_contained() {
    let config = ServerConfig {
        max_requests_in_flight_per_connection: LIMIT,
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;

    // A small receive window so that the server's socket fills quickly.
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let stream = sock.connect(server.addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let startup = strata_server::request::encode::startup(&[("CQL_VERSION", "3.0.0")]);
    wr.write_all(&Client::envelope(4, 0, 0, Opcode::Startup as u8, &startup))
        .await
        .unwrap();

    // Pipeline OPTIONS until the server stops reading: the writes then
    // block, which the counter shows.
    let sent = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let (sent_w, stop_w) = (sent.clone(), stop.clone());
    let writer = tokio::spawn(async move {
        let mut stream = 1i16;
        while !stop_w.load(Ordering::SeqCst) {
            let env = Client::envelope(4, 0, stream, Opcode::Options as u8, &[]);
            if wr.write_all(&env).await.is_err() {
                break;
            }
            sent_w.fetch_add(1, Ordering::SeqCst);
            stream = if stream == i16::MAX { 1 } else { stream + 1 };
        }
        wr
    });
    eventually("the server stops reading the silent client", || {
        server.stats.snapshot().reads_paused > 0
    })
    .await;
    let s = server.stats.snapshot();
    assert!(s.requests_in_flight <= LIMIT as u64, "{s:?}");

    // Someone else is served, repeatedly, while that connection is stuck.
    let mut other = Client::connect(server.addr, 4).await;
    assert!(other.startup(&[]).await.is(Opcode::Ready));
    for _ in 0..20 {
        assert!(other
            .request(Opcode::Options, &[])
            .await
            .is(Opcode::Supported));
        assert!(server.stats.snapshot().requests_in_flight <= LIMIT as u64 + 1);
    }
    assert!(
        !writer.is_finished(),
        "the silent client's writes are blocked"
    );

    // Now stop sending and read everything: each request gets exactly one
    // answer, and the server closes after the client's end of stream.
    stop.store(true, Ordering::SeqCst);
    let reader = tokio::spawn(async move {
        let mut buf = vec![0u8; 1 << 16];
        let mut bytes = 0usize;
        loop {
            match rd.read(&mut buf).await {
                Ok(0) | Err(_) => break bytes,
                Ok(n) => bytes += n,
            }
        }
    });
    let mut wr = writer.await.unwrap();
    wr.shutdown().await.unwrap();
    let bytes = reader.await.unwrap();
    assert_eq!(server.stats.snapshot().requests_in_flight, 0);
    let supported_len = {
        let mut c = Client::connect(server.addr, 4).await;
        let f = c.request(Opcode::Options, &[]).await;
        9 + f.body.len()
    };
    // READY (9 bytes) and one SUPPORTED per OPTIONS sent.
    assert_eq!(bytes, 9 + sent.load(Ordering::SeqCst) * supported_len);
    server.stop().await;
}
