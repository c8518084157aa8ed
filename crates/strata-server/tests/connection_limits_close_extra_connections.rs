//! native_transport_max_concurrent_connections(_per_ip): a connection past
//! the limit is closed at once without an answer, as Cassandra's
//! ConnectionLimitHandler does; when one closes, a new one is admitted.

mod common;

use common::{eventually, Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connection_limits_close_extra_connections() {
    let config = ServerConfig {
        max_connections_per_ip: Some(3),
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut kept = Vec::new();
    for _ in 0..3 {
        let mut c = Client::connect(server.addr, 4).await;
        assert!(c.startup(&[]).await.is(Opcode::Ready));
        kept.push(c);
    }
    let mut extra = Client::connect(server.addr, 4).await;
    // The server may have closed before this write lands: either way no
    // answer comes.
    let _ = extra
        .write_raw(&Client::envelope(4, 0, 0, Opcode::Options as u8, &[]))
        .await;
    assert!(extra.recv().await.is_none(), "closed without an answer");
    assert_eq!(server.stats.snapshot().connections_refused, 1);
    kept.pop();
    eventually("a slot is free again", || {
        server.stats.snapshot().connections_open == 2
    })
    .await;
    let mut again = Client::connect(server.addr, 4).await;
    assert!(again
        .request(Opcode::Options, &[])
        .await
        .is(Opcode::Supported));
    server.stop().await;
}
