//! 1,000 connections that open and say nothing (half of them after a
//! STARTUP): the server holds them all, within a bounded per-connection cost,
//! and answers an active client throughout. Closing them is noticed.

mod common;

use common::{eventually, Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn thousand_idle_connections() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut idle = Vec::with_capacity(1000);
    for i in 0..1000 {
        let mut c = Client::connect(server.addr, 4).await;
        if i % 2 == 0 {
            assert!(c.startup(&[]).await.is(Opcode::Ready));
        }
        idle.push(c);
    }
    eventually("1,000 connections open", || {
        server.stats.snapshot().connections_open == 1000
    })
    .await;
    let mut active = Client::connect(server.addr, 5).await;
    assert!(active.startup(&[]).await.is(Opcode::Ready));
    for _ in 0..50 {
        assert!(active
            .request(Opcode::Options, &[])
            .await
            .is(Opcode::Supported));
    }
    let s = server.stats.snapshot();
    assert_eq!(s.connections_open, 1001);
    assert_eq!(s.requests_in_flight, 0);
    assert_eq!(s.request_bytes_in_flight, 0);
    // Every idle connection is still usable.
    for c in idle.iter_mut().step_by(97) {
        if c.version == 4 {
            let f = c.request(Opcode::Options, &[]).await;
            assert!(f.is(Opcode::Supported));
        }
    }
    drop(idle);
    eventually("closed connections are forgotten", || {
        server.stats.snapshot().connections_open == 1
    })
    .await;
    server.stop().await;
}
