//! Test support: a server on an ephemeral loopback port over a temporary
//! database, and a small client that writes frames by hand (headers, v4
//! compression, v5 segments) so that tests see the bytes the server sends.
//!
//! Nothing here waits for a fixed time: reads wait for the bytes they need,
//! and [`eventually`] polls a condition the server guarantees, failing only
//! after a long deadline that no correct run approaches.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::query::{Authenticator, Executor, NodeInfo};
use strata_server::frame::{self, Compression, Opcode};
use strata_server::segment::{SegmentDecoder, SegmentWriter};
use strata_server::wire::Reader;
use strata_server::{Server, ServerConfig, StatsHandle};
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::oneshot;

pub struct TestServer {
    pub addr: SocketAddr,
    pub stats: StatsHandle,
    pub executor: Arc<Executor>,
    stop: Option<oneshot::Sender<()>>,
    done: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
    _dir: tempfile::TempDir,
}

pub fn node_info() -> NodeInfo {
    NodeInfo {
        listen_address: "127.0.0.1".parse().unwrap(),
        native_port: 9042,
        cluster_name: "Test Cluster".into(),
        data_center: "datacenter1".into(),
        rack: "rack1".into(),
        release_version: "5.0.9".into(),
        host_id: [7; 16],
    }
}

impl TestServer {
    pub async fn start(config: ServerConfig) -> TestServer {
        TestServer::start_with(config, Authenticator::AllowAll).await
    }

    pub async fn start_with(mut config: ServerConfig, auth: Authenticator) -> TestServer {
        let dir = tempfile::tempdir().expect("tempdir");
        let db = Database::open(dir.path(), DbOptions::new(SimClock::fixed())).expect("open");
        let executor = Arc::new(Executor::new(Arc::new(db), node_info(), auth).expect("executor"));
        config.listen = "127.0.0.1:0".parse().unwrap();
        let server = Server::bind(config, executor.clone()).await.expect("bind");
        let addr = server.local_addr().expect("addr");
        let stats = server.stats();
        let (stop, stopped) = oneshot::channel::<()>();
        let done = tokio::spawn(server.run(
            async {
                let _ = stopped.await;
            },
            Duration::from_secs(30),
        ));
        TestServer {
            addr,
            stats,
            executor,
            stop: Some(stop),
            done: Some(done),
            _dir: dir,
        }
    }

    pub fn server_state(&self) -> Arc<dyn strata::query::ServerState> {
        self.stats.server_state()
    }

    /// Stops the server and waits for it to drain.
    pub async fn stop(mut self) {
        if let Some(s) = self.stop.take() {
            let _ = s.send(());
        }
        if let Some(d) = self.done.take() {
            d.await.expect("join").expect("run");
        }
    }
}

/// Polls `cond` until it holds (a condition the server guarantees to reach),
/// yielding between polls; panics after a deadline far beyond any correct run.
pub async fn eventually(what: &str, mut cond: impl FnMut() -> bool) {
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while !cond() {
        assert!(
            tokio::time::Instant::now() < deadline,
            "never happened: {what}"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

/// A response as read off the wire.
#[derive(Clone, Debug)]
pub struct Frame {
    pub version_byte: u8,
    pub flags: u8,
    pub stream: i16,
    pub opcode: u8,
    pub body: Vec<u8>,
    /// The flags as they came off the wire (before decompression).
    pub wire_flags: u8,
}

impl Frame {
    pub fn version(&self) -> u8 {
        self.version_byte & 0x7F
    }

    pub fn is(&self, op: Opcode) -> bool {
        self.opcode == op as u8
    }

    /// `(code, message)` of an ERROR.
    pub fn error(&self) -> (u32, String) {
        assert!(self.is(Opcode::Error), "not an error: {self:?}");
        let mut r = Reader::new(&self.body);
        let code = r.int().unwrap() as u32;
        (code, r.string().unwrap().to_string())
    }

    pub fn result_kind(&self) -> i32 {
        assert!(
            self.is(Opcode::Result),
            "not a result: {:?}",
            self.error_or_kind()
        );
        Reader::new(&self.body).int().unwrap()
    }

    fn error_or_kind(&self) -> String {
        if self.is(Opcode::Error) {
            format!("{:?}", self.error())
        } else {
            format!("opcode {}", self.opcode)
        }
    }
}

pub trait Io: AsyncRead + AsyncWrite + Unpin + Send {}
impl<T: AsyncRead + AsyncWrite + Unpin + Send> Io for T {}

/// A client that writes frames by hand.
pub struct Client {
    io: Box<dyn Io>,
    pub version: u8,
    compression: Option<Compression>,
    /// v5 after STARTUP: `Some(compressed)`.
    segments: Option<bool>,
    raw: Vec<u8>,
    frames: Vec<u8>,
    next_stream: i16,
}

impl Client {
    pub async fn connect(addr: SocketAddr, version: u8) -> Client {
        let sock = TcpStream::connect(addr).await.expect("connect");
        sock.set_nodelay(true).unwrap();
        Client::over(Box::new(sock), version)
    }

    pub fn over(io: Box<dyn Io>, version: u8) -> Client {
        Client {
            io,
            version,
            compression: None,
            segments: None,
            raw: Vec::new(),
            frames: Vec::new(),
            next_stream: 0,
        }
    }

    /// A request envelope (request direction).
    pub fn envelope(version: u8, flags: u8, stream: i16, opcode: u8, body: &[u8]) -> Vec<u8> {
        let mut out = vec![version & 0x7F, flags];
        out.extend_from_slice(&stream.to_be_bytes());
        out.push(opcode);
        out.extend_from_slice(&(body.len() as u32).to_be_bytes());
        out.extend_from_slice(body);
        out
    }

    pub async fn write_raw(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.io.write_all(bytes).await?;
        self.io.flush().await
    }

    /// Sends one request on `stream`, compressed or framed as negotiated.
    pub async fn send(&mut self, stream: i16, opcode: Opcode, body: &[u8]) {
        self.send_flags(stream, 0, opcode, body).await
    }

    pub async fn send_flags(&mut self, stream: i16, mut flags: u8, opcode: Opcode, body: &[u8]) {
        let body: Vec<u8> = match self.compression {
            Some(c) if self.segments.is_none() && opcode != Opcode::Startup => {
                flags |= frame::flags::COMPRESSED;
                c.compress(body)
            }
            _ => body.to_vec(),
        };
        let env = Client::envelope(self.version, flags, stream, opcode as u8, &body);
        let bytes = match self.segments {
            Some(compressed) => {
                let mut w = SegmentWriter::new(compressed);
                let mut out = Vec::new();
                w.push(&env, &mut out);
                w.flush(&mut out);
                out
            }
            None => env,
        };
        self.write_raw(&bytes).await.expect("write");
    }

    async fn fill_raw(&mut self) -> bool {
        let mut chunk = [0u8; 64 << 10];
        match self.io.read(&mut chunk).await {
            Ok(0) | Err(_) => false,
            Ok(n) => {
                self.raw.extend_from_slice(&chunk[..n]);
                true
            }
        }
    }

    /// The next response, or `None` once the server closed the connection.
    pub async fn recv(&mut self) -> Option<Frame> {
        loop {
            if let Some(f) = self.take_frame() {
                return Some(f);
            }
            match self.segments {
                Some(compressed) => {
                    let dec = SegmentDecoder { compressed };
                    match dec.decode(&self.raw).expect("server segment") {
                        Some((seg, used)) => {
                            self.raw.drain(..used);
                            self.frames.extend_from_slice(&seg.payload);
                        }
                        None => {
                            if !self.fill_raw().await {
                                return None;
                            }
                        }
                    }
                }
                None => {
                    if !self.raw.is_empty() {
                        self.frames.append(&mut self.raw);
                        continue;
                    }
                    if !self.fill_raw().await {
                        return None;
                    }
                }
            }
        }
    }

    fn take_frame(&mut self) -> Option<Frame> {
        let b = &self.frames;
        if b.is_empty() {
            return None;
        }
        let version = b[0] & 0x7F;
        let header_len = if version >= 3 { 9 } else { 8 };
        if b.len() < header_len {
            return None;
        }
        let (stream, opcode, len_at) = if version >= 3 {
            (i16::from_be_bytes([b[2], b[3]]), b[4], 5)
        } else {
            (b[2] as i8 as i16, b[3], 4)
        };
        let len =
            u32::from_be_bytes([b[len_at], b[len_at + 1], b[len_at + 2], b[len_at + 3]]) as usize;
        if b.len() < header_len + len {
            return None;
        }
        let mut f = Frame {
            version_byte: b[0],
            flags: b[1],
            stream,
            opcode,
            body: b[header_len..header_len + len].to_vec(),
            wire_flags: b[1],
        };
        self.frames.drain(..header_len + len);
        if f.flags & frame::flags::COMPRESSED != 0 {
            let c = self
                .compression
                .expect("compressed frame without compression");
            f.body = c
                .decompress(&f.body, 256 << 20)
                .expect("server compression");
            f.flags &= !frame::flags::COMPRESSED;
        }
        Some(f)
    }

    /// Sends a request and waits for the response on its stream (events are
    /// skipped).
    pub async fn request(&mut self, opcode: Opcode, body: &[u8]) -> Frame {
        let stream = self.next_stream;
        self.next_stream = (self.next_stream + 1) % 1000;
        self.send(stream, opcode, body).await;
        loop {
            let f = self.recv().await.expect("server closed the connection");
            if f.stream == stream {
                return f;
            }
        }
    }

    /// OPTIONS, then STARTUP with `options` (CQL_VERSION added); switches to
    /// the negotiated compression and framing.
    pub async fn startup(&mut self, options: &[(&str, &str)]) -> Frame {
        let mut all = vec![("CQL_VERSION", "3.0.0")];
        all.extend_from_slice(options);
        let body = strata_server::request::encode::startup(&all);
        let compression =
            options
                .iter()
                .find(|(k, _)| *k == "COMPRESSION")
                .map(|(_, v)| match *v {
                    "lz4" => Compression::Lz4,
                    _ => Compression::Snappy,
                });
        if self.version < 5 {
            // The answer to STARTUP is already compressed.
            self.compression = compression;
        }
        let stream = self.next_stream;
        self.next_stream += 1;
        self.send(stream, Opcode::Startup, &body).await;
        let f = self.recv().await.expect("answer to STARTUP");
        if self.version >= 5 && !f.is(Opcode::Error) {
            self.segments = Some(compression.is_some());
        }
        f
    }

    pub async fn query(&mut self, text: &str) -> Frame {
        let body = strata_server::request::encode::query(
            self.version,
            text,
            &strata_server::request::encode::one(),
            false,
        );
        self.request(Opcode::Query, &body).await
    }
}
