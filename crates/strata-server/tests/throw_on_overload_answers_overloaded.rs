//! A client that sent THROW_ON_OVERLOAD=1 in STARTUP gets Overloaded (0x1001)
//! for requests past its connection's in-flight limit instead of
//! backpressure, each on its own stream, as Cassandra answers it; the
//! requests within the limit are answered normally.

mod common;

use common::{eventually, Client, TestServer};
use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use strata_server::frame::Opcode;
use strata_server::ServerConfig;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpSocket;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn throw_on_overload_answers_overloaded() {
    let config = ServerConfig {
        max_requests_in_flight_per_connection: 4,
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let sock = TcpSocket::new_v4().unwrap();
    sock.set_recv_buffer_size(4096).unwrap();
    let stream = sock.connect(server.addr).await.unwrap();
    let (mut rd, mut wr) = stream.into_split();
    let startup = strata_server::request::encode::startup(&[
        ("CQL_VERSION", "3.0.0"),
        ("THROW_ON_OVERLOAD", "1"),
    ]);
    wr.write_all(&Client::envelope(4, 0, 0, Opcode::Startup as u8, &startup))
        .await
        .unwrap();
    // Send without reading until the server has refused some.
    let stop = Arc::new(AtomicBool::new(false));
    let stop_w = stop.clone();
    let sender = tokio::spawn(async move {
        let mut n = 0u32;
        while !stop_w.load(Ordering::SeqCst) {
            let stream = 1 + (n % 30000) as i16;
            let env = Client::envelope(4, 0, stream, Opcode::Options as u8, &[]);
            if wr.write_all(&env).await.is_err() {
                break;
            }
            n += 1;
        }
        (n, wr)
    });
    eventually("requests past the limit answered Overloaded", || {
        server.stats.snapshot().overloaded > 0
    })
    .await;
    stop.store(true, Ordering::SeqCst);
    let reader = tokio::spawn(async move {
        let mut all = Vec::new();
        rd.read_to_end(&mut all).await.map(|_| all)
    });
    let (sent, mut wr) = sender.await.unwrap();
    wr.shutdown().await.unwrap();
    let all = reader.await.unwrap().unwrap();

    // Walk the answers: READY, then one answer per request.
    let mut at = 0;
    let mut kinds: HashMap<u8, u32> = HashMap::new();
    let mut answers = 0u32;
    while at < all.len() {
        let opcode = all[at + 4];
        let len = u32::from_be_bytes([all[at + 5], all[at + 6], all[at + 7], all[at + 8]]) as usize;
        if opcode == Opcode::Error as u8 {
            let code = u32::from_be_bytes([all[at + 9], all[at + 10], all[at + 11], all[at + 12]]);
            assert_eq!(code, 0x1001);
            let msg_len = u16::from_be_bytes([all[at + 13], all[at + 14]]) as usize;
            let msg = std::str::from_utf8(&all[at + 15..at + 15 + msg_len]).unwrap();
            assert_eq!(
                msg,
                "Server is in overloaded state. Cannot accept more requests at this point"
            );
        }
        *kinds.entry(opcode).or_default() += 1;
        answers += 1;
        at += 9 + len;
    }
    assert_eq!(answers, sent + 1, "one answer per request");
    assert_eq!(kinds[&(Opcode::Ready as u8)], 1);
    assert!(kinds[&(Opcode::Error as u8)] > 0);
    assert!(kinds[&(Opcode::Supported as u8)] >= 4);
    assert_eq!(
        server.stats.snapshot().reads_paused,
        0,
        "no backpressure asked for"
    );
    server.stop().await;
}
