//! An envelope header claiming a 2 GiB body (or anything past
//! native_transport_max_frame_size) is answered at once with Cassandra's
//! "Request is too big" Invalid error on its stream; nothing is allocated
//! for it (no bytes reserved), the bytes that follow are skipped as they
//! arrive, and every other client is served meanwhile.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn frame_claiming_2gib_is_refused() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut c = Client::connect(server.addr, 4).await;
    assert!(c.startup(&[]).await.is(Opcode::Ready));
    let mut header = Client::envelope(4, 0, 42, Opcode::Query as u8, &[]);
    header[5..9].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    c.write_raw(&header).await.unwrap();
    // Part of the claimed body; the rest never comes.
    c.write_raw(&vec![0x55u8; 1 << 20]).await.unwrap();
    let f = c.recv().await.unwrap();
    assert_eq!(f.stream, 42);
    assert_eq!(
        f.error(),
        (
            0x2200,
            format!(
                "Request is too big: length {} exceeds maximum allowed length {}.",
                0x8000_0000u64 + 9,
                16 << 20
            )
        )
    );
    let s = server.stats.snapshot();
    assert_eq!(s.frames_too_big, 1);
    assert_eq!(s.request_bytes_in_flight, 0);

    // Others are served while that connection skips.
    let mut other = Client::connect(server.addr, 5).await;
    assert!(other.startup(&[]).await.is(Opcode::Ready));
    for _ in 0..10 {
        assert!(other
            .request(Opcode::Options, &[])
            .await
            .is(Opcode::Supported));
    }

    // The same in v5: a multi-segment envelope claiming 2 GiB.
    let mut header = Client::envelope(5, 0, 43, Opcode::Query as u8, &[]);
    header[5..9].copy_from_slice(&0x8000_0000u32.to_be_bytes());
    header.extend_from_slice(&[0u8; 1000]);
    let mut seg = Vec::new();
    strata_server::segment::encode_segment(&mut seg, &header, false, false);
    other.write_raw(&seg).await.unwrap();
    let f = other.recv().await.unwrap();
    assert_eq!((f.stream, f.error().0), (43, 0x2200));
    assert_eq!(server.stats.snapshot().request_bytes_in_flight, 0);
    server.stop().await;
}
