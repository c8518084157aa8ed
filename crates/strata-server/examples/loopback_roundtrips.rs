//! The server's request overhead on loopback: OPTIONS round trips (answered
//! by the connection itself) and a trivial QUERY (through the blocking pool
//! and the executor), one request at a time and pipelined over several
//! connections; and the same query called on the executor directly, so the
//! difference is the wire's cost.
//!
//! `cargo run --release -p strata-server --example loopback_roundtrips [N]`

use std::sync::Arc;
use std::time::{Duration, Instant};
use strata::clock::SystemClock;
use strata::db::{Database, DbOptions};
use strata::query::{Authenticator, Executor, NodeInfo, QueryParams, Session};
use strata_server::request::encode;
use strata_server::{Server, ServerConfig};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

const QUERY: &str = "SELECT release_version FROM system.local";

fn envelope(stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
    let mut out = vec![4, 0];
    out.extend_from_slice(&stream.to_be_bytes());
    out.push(opcode);
    out.extend_from_slice(&(body.len() as u32).to_be_bytes());
    out.extend_from_slice(body);
    out
}

async fn read_frame(s: &mut TcpStream) -> (u8, Vec<u8>) {
    let mut h = [0u8; 9];
    s.read_exact(&mut h).await.expect("header");
    let len = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).await.expect("body");
    (h[4], body)
}

async fn connect(addr: std::net::SocketAddr) -> TcpStream {
    let mut s = TcpStream::connect(addr).await.unwrap();
    s.set_nodelay(true).unwrap();
    let body = encode::startup(&[("CQL_VERSION", "3.0.0")]);
    s.write_all(&envelope(0, 1, &body)).await.unwrap();
    assert_eq!(read_frame(&mut s).await.0, 2, "READY");
    s
}

/// `n` requests one after the other on one connection: requests per second.
async fn sequential(addr: std::net::SocketAddr, opcode: u8, body: &[u8], n: usize) -> f64 {
    let mut s = connect(addr).await;
    let req = envelope(1, opcode, body);
    let start = Instant::now();
    for _ in 0..n {
        s.write_all(&req).await.unwrap();
        let (op, b) = read_frame(&mut s).await;
        assert!(
            op == 6 || op == 8 || op == 0, // SUPPORTED, RESULT, or the executor's ERROR
            "opcode {op}: {:?}",
            String::from_utf8_lossy(&b)
        );
    }
    n as f64 / start.elapsed().as_secs_f64()
}

/// `conns` connections, each keeping `depth` requests in flight, `n` in all.
async fn pipelined(
    addr: std::net::SocketAddr,
    opcode: u8,
    body: &[u8],
    n: usize,
    conns: usize,
    depth: usize,
) -> f64 {
    let start = Instant::now();
    let mut tasks = Vec::new();
    for _ in 0..conns {
        let body = body.to_vec();
        let per = n / conns;
        tasks.push(tokio::spawn(async move {
            let s = connect(addr).await;
            let (mut rd, mut wr) = s.into_split();
            let writer = tokio::spawn(async move {
                let mut batch = Vec::new();
                for i in 0..depth {
                    batch.extend_from_slice(&envelope(i as i16, opcode, &body));
                }
                // Keep `depth` in flight: a window of requests per round.
                for _ in 0..per / depth {
                    wr.write_all(&batch).await.unwrap();
                }
                wr
            });
            let mut h = [0u8; 9];
            for _ in 0..(per / depth) * depth {
                rd.read_exact(&mut h).await.unwrap();
                let len = u32::from_be_bytes([h[5], h[6], h[7], h[8]]) as usize;
                let mut b = vec![0u8; len];
                rd.read_exact(&mut b).await.unwrap();
            }
            drop(writer.await.unwrap());
        }));
    }
    for t in tasks {
        t.await.unwrap();
    }
    ((n / conns / depth) * depth * conns) as f64 / start.elapsed().as_secs_f64()
}

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(20_000);
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(dir.path(), DbOptions::new(SystemClock::new())).unwrap();
    let node = NodeInfo {
        listen_address: "127.0.0.1".parse().unwrap(),
        native_port: 0,
        cluster_name: "bench".into(),
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        release_version: strata::query::RELEASE_VERSION.into(),
        host_id: [1; 16],
    };
    let executor = Arc::new(Executor::new(Arc::new(db), node, Authenticator::AllowAll).unwrap());

    // The executor alone (skipped while it cannot run the query yet).
    let params = QueryParams::default();
    let mut session = Session::default();
    let runs_queries = executor.query(&mut session, QUERY, &params).is_ok();
    let start = Instant::now();
    for _ in 0..n {
        if !runs_queries {
            break;
        }
        let _ = executor.query(&mut session, QUERY, &params);
    }
    let direct = n as f64 / start.elapsed().as_secs_f64();

    let rt = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let config = ServerConfig {
            listen: "127.0.0.1:0".parse().unwrap(),
            ..ServerConfig::default()
        };
        let server = Server::bind(config, executor.clone()).await.unwrap();
        let addr = server.local_addr().unwrap();
        let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
        let run = tokio::spawn(server.run(
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(5),
        ));
        let q = encode::query(4, QUERY, &encode::one(), false);
        let options_seq = sequential(addr, 5, &[], n).await;
        let options_pipe = pipelined(addr, 5, &[], n * 5, 4, 32).await;
        println!("requests per second on loopback (n = {n}):");
        println!("  OPTIONS, 1 connection, 1 at once {options_seq:>10.0}");
        println!("  OPTIONS, 4 connections x 32      {options_pipe:>10.0}");
        if runs_queries {
            let query_seq = sequential(addr, 7, &q, n).await;
            let query_pipe = pipelined(addr, 7, &q, n * 2, 4, 32).await;
            println!("  executor.query direct            {direct:>10.0}");
            println!("  QUERY,   1 connection, 1 at once {query_seq:>10.0}");
            println!("  QUERY,   4 connections x 32      {query_pipe:>10.0}");
        } else {
            // The executor answers with an error without reading the disk:
            // what remains is the server's dispatch (decode, blocking pool,
            // encode, write).
            let query_seq = sequential(addr, 7, &q, n).await;
            let query_pipe = pipelined(addr, 7, &q, n * 2, 4, 32).await;
            println!(
                "  QUERY answered by the executor with an error (it cannot run `{QUERY}` yet):"
            );
            println!("  QUERY,   1 connection, 1 at once {query_seq:>10.0}");
            println!("  QUERY,   4 connections x 32      {query_pipe:>10.0}");
        }
        let _ = stop.send(());
        run.await.unwrap().unwrap();
    });
}
