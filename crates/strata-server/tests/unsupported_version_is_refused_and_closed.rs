//! A client offering a version the server does not speak gets ERROR 0x000A
//! with Cassandra's message (the Python driver looks for "unsupported
//! protocol version" in it to step down), on its stream id, in a header
//! carrying its own version when it is one drivers speak, and the connection
//! is closed. Every driver then retries with a lower version.

mod common;

use common::{Client, TestServer};
use strata_server::frame::{flags, Opcode};
use strata_server::ServerConfig;
use tokio::io::AsyncReadExt;

const MESSAGE_TAIL: &str = "; supported versions are (3/v3, 4/v4, 5/v5)";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unsupported_version_is_refused_and_closed() {
    let server = TestServer::start(ServerConfig::default()).await;
    // (version sent, version byte expected in the answer's header)
    for (sent, answered) in [
        (6u8, 0x86u8),
        (66, 0xC2),
        (65, 0xC1),
        (7, 0x85),
        (100, 0x85),
    ] {
        let mut c = Client::connect(server.addr, sent).await;
        let env = Client::envelope(sent, flags::USE_BETA, 3, Opcode::Options as u8, &[]);
        c.write_raw(&env).await.unwrap();
        let f = c.recv().await.expect("an answer before the close");
        assert_eq!(f.version_byte, answered, "v{sent}");
        assert_eq!(f.stream, 3);
        let (code, message) = f.error();
        assert_eq!(code, 0x000A);
        assert_eq!(
            message,
            format!("Invalid or unsupported protocol version ({sent}){MESSAGE_TAIL}")
        );
        assert!(message
            .to_lowercase()
            .contains("unsupported protocol version"));
        assert!(c.recv().await.is_none(), "v{sent}: connection closed");
    }

    // v1/v2 get the 8-byte header of their version.
    let mut sock = tokio::net::TcpStream::connect(server.addr).await.unwrap();
    use tokio::io::AsyncWriteExt;
    sock.write_all(&[0x02, 0, 5, Opcode::Options as u8, 0, 0, 0, 0])
        .await
        .unwrap();
    let mut all = Vec::new();
    sock.read_to_end(&mut all).await.unwrap();
    assert_eq!(&all[..4], &[0x82, 0, 5, Opcode::Error as u8]);
    let len = u32::from_be_bytes([all[4], all[5], all[6], all[7]]) as usize;
    assert_eq!(all.len(), 8 + len);
    assert_eq!(&all[8..12], &[0, 0, 0, 0x0A]);

    // The refused connections are gone and the server still serves.
    let mut c = Client::connect(server.addr, 4).await;
    assert!(c.startup(&[]).await.is(Opcode::Ready));
    common::eventually("refused connections closed", || {
        server.stats.snapshot().connections_open == 1
    })
    .await;
    assert_eq!(server.stats.snapshot().fatal_closes, 6);
    server.stop().await;
}
