//! Protocol v5: the answer to STARTUP is a plain envelope; from then on both
//! directions use checksummed segments (LZ4-compressed when negotiated).
//! Several envelopes share one self-contained segment and are answered on
//! their own streams; an envelope larger than a segment arrives across
//! segments that are not self-contained and is answered whole.

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::request::encode;
use strata_server::segment::{self, SegmentWriter};
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn v5_segments_after_startup() {
    let server = TestServer::start(ServerConfig::default()).await;
    for compressed in [false, true] {
        let mut c = Client::connect(server.addr, 5).await;
        let opts: &[(&str, &str)] = if compressed {
            &[("COMPRESSION", "lz4")]
        } else {
            &[]
        };
        let ready = c.startup(opts).await;
        assert!(ready.is(Opcode::Ready));
        assert_eq!(ready.version_byte, 0x85);

        // Three OPTIONS in one self-contained segment.
        let mut w = SegmentWriter::new(compressed);
        let mut bytes = Vec::new();
        for stream in [5i16, 6, 7] {
            w.push(
                &Client::envelope(5, 0, stream, Opcode::Options as u8, &[]),
                &mut bytes,
            );
        }
        w.flush(&mut bytes);
        c.write_raw(&bytes).await.unwrap();
        let mut streams = Vec::new();
        for _ in 0..3 {
            let f = c.recv().await.unwrap();
            assert!(f.is(Opcode::Supported));
            streams.push(f.stream);
        }
        streams.sort();
        assert_eq!(streams, [5, 6, 7]);

        // A QUERY of 300 KiB: three segments, not self-contained.
        let text = format!("SELECT * FROM t WHERE k = '{}'", "x".repeat(300 << 10));
        let body = encode::query(5, &text, &encode::one(), false);
        assert!(body.len() > 2 * segment::MAX_PAYLOAD);
        let f = c.request(Opcode::Query, &body).await;
        // Answered (the executor's verdict on the statement is not what
        // this test is about): one answer on the request's stream.
        assert!(f.is(Opcode::Result) || f.is(Opcode::Error));
        assert_eq!(f.version_byte, 0x85);
        assert!(c.request(Opcode::Options, &[]).await.is(Opcode::Supported));
    }
    server.stop().await;
}
