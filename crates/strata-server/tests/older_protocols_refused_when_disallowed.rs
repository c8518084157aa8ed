//! With `native_transport_allow_older_protocols: false`, v3 and v4 are
//! refused as Cassandra refuses them ("Rejecting Protocol Version ...") and
//! SUPPORTED lists v5 only.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn older_protocols_refused_when_disallowed() {
    let config = ServerConfig {
        allow_older_protocols: false,
        ..ServerConfig::default()
    };
    let server = TestServer::start(config).await;
    let mut c = Client::connect(server.addr, 4).await;
    c.send(0, Opcode::Options, &[]).await;
    let f = c.recv().await.unwrap();
    assert_eq!(f.version_byte, 0x84);
    assert_eq!(
        f.error(),
        (0x0A, "Rejecting Protocol Version 4/v4 < 5/v5.".to_string())
    );
    assert!(c.recv().await.is_none());

    let mut c = Client::connect(server.addr, 5).await;
    let f = c.request(Opcode::Options, &[]).await;
    assert!(f.is(Opcode::Supported));
    assert!(String::from_utf8_lossy(&f.body).contains("5/v5"));
    assert!(!String::from_utf8_lossy(&f.body).contains("4/v4"));
    server.stop().await;
}
