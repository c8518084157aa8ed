//! Before STARTUP only OPTIONS and STARTUP are accepted; anything else is
//! answered with Cassandra's protocol error on its stream and the connection
//! stays usable. After STARTUP, a second STARTUP is refused the same way, and
//! a frame of another version gets "Invalid message version".

mod common;

use common::{Client, TestServer};
use strata_server::frame::Opcode;
use strata_server::request::encode;
use strata_server::ServerConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_before_startup_are_refused() {
    let server = TestServer::start(ServerConfig::default()).await;
    let mut c = Client::connect(server.addr, 4).await;
    let q = encode::query(4, "SELECT * FROM system.local", &encode::one(), false);
    let f = c.request(Opcode::Query, &q).await;
    assert_eq!(
        f.error(),
        (
            0x0A,
            "Unexpected message QUERY, expecting STARTUP or OPTIONS".to_string()
        )
    );
    let f = c
        .request(Opcode::Register, &encode::register(&["SCHEMA_CHANGE"]))
        .await;
    assert_eq!(
        f.error(),
        (
            0x0A,
            "Unexpected message REGISTER, expecting STARTUP or OPTIONS".to_string()
        )
    );
    // STARTUP without CQL_VERSION, with an unknown compression: refused,
    // the connection still waits for a good one.
    let f = c
        .request(Opcode::Startup, &encode::startup(&[("COMPRESSION", "lz4")]))
        .await;
    assert_eq!(
        f.error(),
        (
            0x0A,
            "Missing value CQL_VERSION in STARTUP message".to_string()
        )
    );
    let f = c
        .request(
            Opcode::Startup,
            &encode::startup(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "zstd")]),
        )
        .await;
    assert_eq!(
        f.error(),
        (0x0A, "Unknown compression algorithm: zstd".to_string())
    );
    assert!(c.startup(&[]).await.is(Opcode::Ready));
    let f = c
        .request(
            Opcode::Startup,
            &encode::startup(&[("CQL_VERSION", "3.0.0")]),
        )
        .await;
    assert_eq!(
        f.error(),
        (
            0x0A,
            "Unexpected message STARTUP, the connection is already initialized".to_string()
        )
    );
    // A v3 frame on this v4 connection.
    let env = Client::envelope(3, 0, 9, Opcode::Options as u8, &[]);
    c.write_raw(&env).await.unwrap();
    let f = c.recv().await.unwrap();
    assert_eq!((f.stream, f.version_byte), (9, 0x84));
    assert_eq!(
        f.error(),
        (
            0x0A,
            "Invalid message version. Got 3/v3 but previous messages on this connection had version 4/v4"
                .to_string()
        )
    );
    // A response opcode sent as a request, an unknown opcode.
    let env = Client::envelope(4, 0, 10, Opcode::Result as u8, &[]);
    c.write_raw(&env).await.unwrap();
    let f = c.recv().await.unwrap();
    assert_eq!(f.stream, 10);
    assert_eq!(
        f.error().1,
        "Wrong protocol direction (expected RESPONSE, got REQUEST) for opcode 8 (RESULT)"
    );
    let env = Client::envelope(4, 0, 11, 0x42, &[]);
    c.write_raw(&env).await.unwrap();
    let f = c.recv().await.unwrap();
    assert_eq!((f.stream, f.error().1.as_str()), (11, "Unknown opcode 66"));
    // Still serving.
    assert!(c.request(Opcode::Options, &[]).await.is(Opcode::Supported));
    server.stop().await;
}
