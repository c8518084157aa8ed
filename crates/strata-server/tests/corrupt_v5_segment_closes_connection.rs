//! A v5 segment whose header or payload checksum does not match ends the
//! connection (after a protocol error), as Cassandra 4.0.1+ does: the byte
//! stream can no longer be trusted. Other connections go on.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::segment::encode_segment;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_v5_segment_closes_connection() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut bystander = Client::connect(server.addr, 4).await;
    assert!(bystander.startup(&[]).await.is(Opcode::Ready));

    // (byte to flip in a 6-byte-header segment, what breaks)
    for flip_at in [1usize, 4, 8] {
        let mut c = Client::connect(server.addr, 5).await;
        assert!(c.startup(&[]).await.is(Opcode::Ready));
        let env = Client::envelope(5, 0, 1, Opcode::Options as u8, &[]);
        let mut seg = Vec::new();
        encode_segment(&mut seg, &env, true, false);
        seg[flip_at] ^= 0x10;
        c.write_raw(&seg).await.unwrap();
        let f = c.recv().await.expect("a protocol error before the close");
        assert_eq!(f.error().0, 0x000A, "flip at {flip_at}");
        assert!(f.error().1.contains("CRC mismatch"), "{:?}", f.error());
        assert!(c.recv().await.is_none(), "closed after flip at {flip_at}");
    }
    assert!(bystander
        .request(Opcode::Options, &[])
        .await
        .is(Opcode::Supported));
    server.stop().await;
}
