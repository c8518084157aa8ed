//! `strata serve` on an ephemeral port: it prints the address it bound,
//! answers CQL (OPTIONS), keeps a stable host id in the data directory,
//! reads strata.yaml from the data directory with cassandra.yaml key names,
//! and on SIGTERM stops, flushes and closes the database (the directory is
//! free for the next owner). A bad configuration key is refused before
//! anything is opened or written.

mod common;

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::process::Command;

/// One request envelope, its answer's opcode and body.
fn roundtrip(addr: SocketAddr, opcode: u8, body: &[u8]) -> (u8, Vec<u8>) {
    let mut s = TcpStream::connect(addr).unwrap();
    let mut env = vec![0x04, 0, 0, 1, opcode];
    env.extend_from_slice(&(body.len() as u32).to_be_bytes());
    env.extend_from_slice(body);
    s.write_all(&env).unwrap();
    let mut header = [0u8; 9];
    s.read_exact(&mut header).unwrap();
    assert_eq!(header[0], 0x84);
    assert_eq!(&header[2..4], &[0, 1], "stream id echoed");
    let len = u32::from_be_bytes([header[5], header[6], header[7], header[8]]) as usize;
    let mut body = vec![0u8; len];
    s.read_exact(&mut body).unwrap();
    (header[4], body)
}

#[test]
fn serve_answers_cql_and_stops_cleanly() {
    let dir = tempfile::tempdir().unwrap();
    let (child, addr) = common::serve(dir.path(), &["--port", "0"]);
    assert!(addr.ip().is_loopback(), "loopback by default");
    let (opcode, body) = roundtrip(addr, 0x05, &[]);
    assert_eq!(opcode, 0x06, "SUPPORTED");
    assert!(String::from_utf8_lossy(&body).contains("5/v5"));
    let host_id = std::fs::read_to_string(dir.path().join("host_id")).unwrap();
    let err = common::stop_server(child);
    assert!(err.contains("flushing and closing"), "{err}");

    // Configuration from the data directory: a tiny frame limit shows it
    // is applied; the host id is the same.
    std::fs::write(
        dir.path().join("strata.yaml"),
        "cluster_name: 'Served'\nnative_transport_port: 0\n\
         native_transport_max_frame_size: 1KiB\ncommitlog_sync: batch\n",
    )
    .unwrap();
    let (child, addr) = common::serve(dir.path(), &[]);
    let (opcode, body) = roundtrip(addr, 0x05, &vec![0u8; 2000]);
    assert_eq!(opcode, 0x00, "ERROR");
    assert!(
        String::from_utf8_lossy(&body)
            .contains("Request is too big: length 2009 exceeds maximum allowed length 1024."),
        "{}",
        String::from_utf8_lossy(&body)
    );
    assert_eq!(
        std::fs::read_to_string(dir.path().join("host_id")).unwrap(),
        host_id
    );
    common::stop_server(child);

    // A cassandra.yaml key Strata has no setting for: refused with why,
    // nothing opened or written.
    let fresh = tempfile::tempdir().unwrap();
    std::fs::write(fresh.path().join("strata.yaml"), "num_tokens: 16\n").unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["serve", "--data-dir"])
        .arg(fresh.path())
        .output()
        .unwrap();
    assert!(!out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("num_tokens: not a Strata setting"), "{err}");
    let names: Vec<_> = std::fs::read_dir(fresh.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names, vec![std::ffi::OsString::from("strata.yaml")]);
}
