//! v4 body compression: after STARTUP with COMPRESSION lz4 or snappy, every
//! answer (the READY to STARTUP included, as Cassandra sends it) has the
//! compressed flag and decompresses, and compressed requests are read.
//! v5 refuses Snappy, as Cassandra does.

mod common;

use common::{Client, TestServer};
use strata_server::frame::{flags, Opcode};
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v4_frame_compression_lz4_and_snappy() {
    let server = TestServer::start(ServerConfig::default()).await;
    for name in ["lz4", "snappy"] {
        let mut c = Client::connect(server.addr, 4).await;
        let ready = c.startup(&[("COMPRESSION", name)]).await;
        assert!(ready.is(Opcode::Ready), "{name}");
        assert_eq!(
            ready.wire_flags & flags::COMPRESSED,
            flags::COMPRESSED,
            "{name}"
        );
        assert!(ready.body.is_empty());
        // The client compresses its requests from here on.
        for _ in 0..3 {
            let f = c.request(Opcode::Options, &[]).await;
            assert!(f.is(Opcode::Supported));
            assert_eq!(f.wire_flags & flags::COMPRESSED, flags::COMPRESSED);
            assert!(String::from_utf8_lossy(&f.body).contains("PROTOCOL_VERSIONS"));
        }
        // A compressed request that does not decompress is a protocol error.
        let env = Client::envelope(4, flags::COMPRESSED, 77, Opcode::Options as u8, &[0xFF; 8]);
        c.write_raw(&env).await.unwrap();
        let f = c.recv().await.unwrap();
        assert_eq!((f.stream, f.error().0), (77, 0x0A));
    }
    let mut v5 = Client::connect(server.addr, 5).await;
    let f = v5.startup(&[("COMPRESSION", "snappy")]).await;
    assert_eq!(
        f.error(),
        (
            0x0A,
            "Snappy compression is not supported in protocol V5".to_string()
        )
    );
    server.stop().await;
}
