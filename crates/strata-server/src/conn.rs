//! One client connection: the reader task that decodes frames and dispatches
//! requests, the writer task that encodes and writes answers, and the request
//! tasks between them.
//!
//! ```text
//! socket --> reader --(inline: OPTIONS, STARTUP, REGISTER, AUTH_RESPONSE,
//!              |       single-partition prepared SELECT, and writes too
//!              |       with inline statements: invariant 4)------------------+
//!              |                                                             |
//!              +--spawn--> request task --blocking pool--> Executor          v
//!                              |                                  mpsc queue --> writer --> socket
//!                              +------------------------------------^   (and events, stream -1)
//! ```
//!
//! Lifecycle: the handshake (OPTIONS, STARTUP, then AUTH_RESPONSE when the
//! executor asks for passwords) runs in the reader, one message at a time, as
//! Cassandra's `ServerConnection` stages allow; QUERY, PREPARE, EXECUTE and
//! BATCH run concurrently, answered as they complete, but for invariant 4's
//! short statements. A v5 connection switches both directions to segments
//! right after the STARTUP answer.
//!
//! Invariants (the crate's 1-3, here made concrete):
//! 1. The reader decodes the next request only once it holds an in-flight
//!    permit and a byte reservation for it; both travel with the request to
//!    the writer and are dropped after its answer is written. A full queue or
//!    a blocked socket therefore stops this connection's reads, nothing else.
//! 2. The reader allocates a body only after its size passed the frame limit
//!    and its bytes were reserved; a refused body is skipped as it arrives,
//!    never buffered.
//! 3. A fatal protocol error (unsupported version, broken v5 checksum) is
//!    answered, written, and the connection closed; every other error is an
//!    ERROR on the request's stream and the connection goes on, as in
//!    Cassandra, where most protocol exceptions are wrapped and not fatal.
//! 4. Only statements that cannot wait long run in the reader, one after
//!    another: EXECUTEs of single-partition prepared SELECTs, and of any
//!    single-partition prepared statement when statements run inline
//!    (`ServerConfig::inline_statements`, the periodic commit log: no write
//!    waits for an fsync). Everything else (a read of many partitions, a batch,
//!    any QUERY, a write under batch or group sync) is a task of its own,
//!    so it never holds up the connection's other requests.

use crate::frame::{self, flags, Compression, Opcode, HEADER_LEN};
use crate::limits::{ConnectionSlot, Reservation};
use crate::request::{self, EventType, RawBatchItem, Request};
use crate::response::{self, ErrorContext, MetadataMode};
use crate::segment::{Segment, SegmentDecoder, SegmentWriter};
use crate::tls::{self, Stream};
use crate::{version_name, ClientEntry, ClientMeta, Event, Shared, CURRENT_VERSION};
use bytes::{Buf, BytesMut};
use std::borrow::Cow;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Instant;
use strata::cql::CqlErrorKind;
use strata::query::{
    BatchItem, Consistency, Executor, Prepared, QueryError, QueryParams, QueryResult, Response,
    Session,
};
use tokio::io::{AsyncReadExt, AsyncWriteExt, ReadHalf, WriteHalf};
use tokio::net::TcpStream;
use tokio::sync::{broadcast, mpsc, OwnedSemaphorePermit, Semaphore};

/// Answers queued for the writer before request tasks wait (each holds its
/// permit, so the queue adds no unbounded memory).
const OUTBOUND_QUEUE: usize = 256;
/// Bytes the writer gathers before one write.
const WRITE_BATCH_BYTES: usize = 256 << 10;
/// A read buffer above this is dropped once empty, so that one large request
/// does not keep its buffer for the connection's life.
const KEEP_READ_BUFFER_BYTES: usize = 64 << 10;
const READ_CHUNK_BYTES: usize = 8 << 10;

const OVERLOADED_MESSAGE: &str =
    "Server is in overloaded state. Cannot accept more requests at this point";

/// What the reader hands the writer, in order.
pub(crate) enum Outbound {
    Frame {
        version: u8,
        flags: u8,
        stream: i16,
        opcode: Opcode,
        body: Vec<u8>,
        hold: Option<Hold>,
    },
    /// v3/v4: compress every body from here on.
    Compression(Compression),
    /// v5: write segments from here on.
    Segments {
        compressed: bool,
    },
    Subscribe {
        version: u8,
        types: Vec<EventType>,
    },
    /// Write what is queued, then close.
    Close,
}

/// A request's claim on the connection's and the server's room (invariant 1).
pub(crate) struct Hold {
    _permit: OwnedSemaphorePermit,
    _bytes: Reservation,
    shared: Arc<Shared>,
}

impl Drop for Hold {
    fn drop(&mut self) {
        self.shared
            .stats
            .requests_in_flight
            .fetch_sub(1, Ordering::Relaxed);
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Stage {
    /// Before STARTUP.
    Established,
    Authenticating,
    Ready,
}

impl Stage {
    fn name(self) -> &'static str {
        match self {
            Stage::Established => "established",
            Stage::Authenticating => "authenticating",
            Stage::Ready => "ready",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Framing {
    Envelopes,
    Segments { compressed: bool },
}

/// A v5 envelope arriving over several segments.
enum Large {
    Collect {
        header: frame::Header,
        bytes: Vec<u8>,
        total: usize,
        hold: Hold,
    },
    /// Refused (too big, or overloaded): its remaining bytes are skipped.
    Discard { remaining: usize },
}

enum Flow {
    Continue,
    Close,
}

/// Milliseconds since the connection opened at the last read or write.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn touch(&self) {
        self.last_ms
            .store(self.start.elapsed().as_millis() as u64, Ordering::Relaxed);
    }
    fn idle_ms(&self) -> u64 {
        (self.start.elapsed().as_millis() as u64)
            .saturating_sub(self.last_ms.load(Ordering::Relaxed))
    }
}

/// Serves one accepted socket to its end.
pub(crate) async fn serve(
    shared: Arc<Shared>,
    sock: TcpStream,
    peer: SocketAddr,
    slot: ConnectionSlot,
) {
    let _ = sock.set_nodelay(true);
    let mut shutdown = shared.shutdown.clone();
    let stream = match &shared.tls {
        None => Stream::Plain(sock),
        Some(acceptor) => {
            let optional = shared.config.tls.as_ref().is_some_and(|t| t.optional);
            let handshake = async {
                match tls::wants_tls(&sock, optional).await {
                    Ok(Some(true)) => match acceptor.accept(sock).await {
                        Ok(s) => Some(Stream::Tls(Box::new(s))),
                        Err(_) => {
                            shared
                                .stats
                                .tls_handshake_failures
                                .fetch_add(1, Ordering::Relaxed);
                            None
                        }
                    },
                    Ok(Some(false)) => Some(Stream::Plain(sock)),
                    _ => None,
                }
            };
            tokio::select! {
                s = handshake => match s { Some(s) => s, None => return },
                _ = shutdown.changed() => return,
            }
        }
    };
    let id = shared.next_client_id.fetch_add(1, Ordering::Relaxed);
    let client = Arc::new(ClientEntry {
        peer,
        request_count: AtomicU64::new(0),
        protocol_version: AtomicU8::new(0),
        ssl: stream.tls_info(),
        authenticated: AtomicBool::new(false),
        meta: parking_lot::Mutex::new(ClientMeta {
            stage: Stage::Established.name(),
            ..ClientMeta::default()
        }),
    });
    shared.clients.lock().insert(id, client.clone());

    let (mut rd, wr) = tokio::io::split(stream);
    let (tx, rx) = mpsc::channel(OUTBOUND_QUEUE);
    let activity = Arc::new(Activity {
        start: Instant::now(),
        last_ms: AtomicU64::new(0),
    });
    let writer = tokio::spawn(writer(wr, rx, shared.clone(), activity.clone()));
    let max_in_flight = shared.config.max_requests_in_flight_per_connection;
    let mut conn = Conn {
        shared: shared.clone(),
        peer,
        client,
        tx,
        session: Arc::new(parking_lot::Mutex::new(Session::default())),
        version: None,
        stage: Stage::Established,
        compression: None,
        framing: Framing::Envelopes,
        throw_on_overload: false,
        permits: Arc::new(Semaphore::new(max_in_flight)),
        max_in_flight,
        conn_bytes: Arc::new(AtomicU64::new(0)),
        large: None,
        shutdown,
        activity,
    };
    conn.read_loop(&mut rd).await;
    drop(conn);
    let _ = writer.await;
    shared.clients.lock().remove(&id);
    drop(slot);
}

struct Conn {
    shared: Arc<Shared>,
    peer: SocketAddr,
    client: Arc<ClientEntry>,
    tx: mpsc::Sender<Outbound>,
    session: Arc<parking_lot::Mutex<Session>>,
    /// Set by STARTUP; every later frame must carry it.
    version: Option<u8>,
    stage: Stage,
    compression: Option<Compression>,
    framing: Framing,
    throw_on_overload: bool,
    permits: Arc<Semaphore>,
    max_in_flight: usize,
    /// Request bytes this connection has in flight (Cassandra's
    /// `channelPayloadBytesInFlight`).
    conn_bytes: Arc<AtomicU64>,
    large: Option<Large>,
    shutdown: tokio::sync::watch::Receiver<bool>,
    activity: Arc<Activity>,
}

/// Why reading stopped.
enum Fill {
    Ready,
    Stop,
}

impl Conn {
    async fn read_loop(&mut self, rd: &mut ReadHalf<Stream>) {
        let mut buf = BytesMut::new();
        loop {
            let flow = match self.framing {
                Framing::Envelopes => self.envelope_step(rd, &mut buf).await,
                Framing::Segments { compressed } => {
                    self.segment_step(rd, &mut buf, compressed).await
                }
            };
            if let Flow::Close = flow {
                break;
            }
            if buf.is_empty() && buf.capacity() > KEEP_READ_BUFFER_BYTES {
                buf = BytesMut::new();
            }
        }
        if *self.shutdown.borrow() {
            // Drain: answers to what was read are written before closing.
            let _ = self.permits.acquire_many(self.max_in_flight as u32).await;
            let _ = self.tx.send(Outbound::Close).await;
        }
    }

    /// Reads until `buf` holds `need` bytes; `Stop` on end of stream, error,
    /// idle timeout or shutdown.
    async fn fill(&mut self, rd: &mut ReadHalf<Stream>, buf: &mut BytesMut, need: usize) -> Fill {
        while buf.len() < need {
            if *self.shutdown.borrow() {
                return Fill::Stop;
            }
            buf.reserve((need - buf.len()).clamp(READ_CHUNK_BYTES.min(need), 1 << 20));
            let idle = self.shared.config.idle_timeout;
            let read = async {
                match idle {
                    None => rd.read_buf(buf).await.ok(),
                    Some(d) => loop {
                        match tokio::time::timeout(d, rd.read_buf(&mut *buf)).await {
                            Ok(r) => break r.ok(),
                            // Idle only when the writer was idle too.
                            Err(_) if self.activity.idle_ms() >= d.as_millis() as u64 => {
                                break None
                            }
                            Err(_) => continue,
                        }
                    },
                }
            };
            let mut shutdown = self.shutdown.clone();
            let n = tokio::select! {
                n = read => n,
                _ = shutdown.changed() => None,
            };
            match n {
                Some(n) if n > 0 => self.activity.touch(),
                _ => return Fill::Stop,
            }
        }
        Fill::Ready
    }

    /// Skips `n` bytes of the stream, buffered or still to come (invariant 2).
    async fn discard(&mut self, rd: &mut ReadHalf<Stream>, buf: &mut BytesMut, mut n: u64) -> Flow {
        loop {
            let here = (buf.len() as u64).min(n);
            buf.advance(here as usize);
            n -= here;
            if n == 0 {
                return Flow::Continue;
            }
            if let Fill::Stop = self.fill(rd, buf, 1).await {
                return Flow::Close;
            }
        }
    }

    async fn send(&self, o: Outbound) -> bool {
        self.tx.send(o).await.is_ok()
    }

    fn error_context(&self, consistency: Consistency) -> ErrorContext {
        ErrorContext {
            consistency,
            node: self.shared.executor.node().listen_address,
        }
    }

    async fn reply_error(
        &self,
        version: u8,
        stream: i16,
        e: QueryError,
        hold: Option<Hold>,
    ) -> Flow {
        if e.kind == CqlErrorKind::ProtocolError {
            self.shared
                .stats
                .protocol_errors
                .fetch_add(1, Ordering::Relaxed);
        }
        let body = response::error(&e, version, self.error_context(Consistency::One));
        let sent = self
            .send(Outbound::Frame {
                version,
                flags: 0,
                stream,
                opcode: Opcode::Error,
                body,
                hold,
            })
            .await;
        if sent {
            Flow::Continue
        } else {
            Flow::Close
        }
    }

    /// Answers a protocol error that ends the connection (invariant 3).
    async fn fatal(&self, version: u8, stream: i16, message: String) -> Flow {
        self.shared
            .stats
            .fatal_closes
            .fetch_add(1, Ordering::Relaxed);
        let _ = self
            .reply_error(
                version,
                stream,
                QueryError::new(CqlErrorKind::ProtocolError, message),
                None,
            )
            .await;
        let _ = self.send(Outbound::Close).await;
        Flow::Close
    }

    /// Whether frames of `version` are accepted (Cassandra's
    /// `ProtocolVersion.decode`): the refusal's text and the version its
    /// header carries otherwise.
    fn check_version(&self, version: u8) -> Result<(), (String, u8)> {
        if crate::SUPPORTED_VERSIONS.contains(&version) {
            if !self.shared.config.allow_older_protocols && version < CURRENT_VERSION {
                return Err((
                    format!(
                        "Rejecting Protocol Version {} < {}.",
                        version_name(version),
                        version_name(CURRENT_VERSION)
                    ),
                    version,
                ));
            }
            return Ok(());
        }
        let supported: Vec<String> = crate::SUPPORTED_VERSIONS
            .iter()
            .filter(|v| self.shared.config.allow_older_protocols || **v >= CURRENT_VERSION)
            .map(|v| version_name(*v))
            .collect();
        let message = format!(
            "Invalid or unsupported protocol version ({version}); supported versions are ({})",
            supported.join(", ")
        );
        // The refusal carries the client's own version when it is one a
        // driver speaks (v1/v2 in their short header, v6, DSE's 65 and 66),
        // so the driver can read it and step down; an unknown version gets
        // the highest this server speaks, as Cassandra answers it.
        let reply = match version {
            1 | 2 | 6 | 65 | 66 => version,
            _ => CURRENT_VERSION,
        };
        Err((message, reply))
    }

    async fn envelope_step(&mut self, rd: &mut ReadHalf<Stream>, buf: &mut BytesMut) -> Flow {
        if let Fill::Stop = self.fill(rd, buf, 1).await {
            return Flow::Close;
        }
        let version = buf[0] & frame::VERSION_MASK;
        if let Err((message, reply)) = self.check_version(version) {
            // The stream id, when the client sent that much, so that its
            // pending request gets the answer (Cassandra answers on stream 0).
            let _ = self.fill(rd, buf, 4).await;
            let stream = match (buf.len() >= 4, version >= 3) {
                (true, true) => i16::from_be_bytes([buf[2], buf[3]]),
                (true, false) => buf[2] as i8 as i16,
                _ => 0,
            };
            return self.fatal(reply, stream, message).await;
        }
        if let Fill::Stop = self.fill(rd, buf, HEADER_LEN).await {
            return Flow::Close;
        }
        let Some(h) = frame::parse_header(buf) else {
            return Flow::Close;
        };
        let total = HEADER_LEN as u64 + h.body_len as u64;
        let reply_version = self.version.unwrap_or(h.version());
        if total > self.shared.config.max_frame_size_bytes as u64 {
            self.shared
                .stats
                .frames_too_big
                .fetch_add(1, Ordering::Relaxed);
            if let Flow::Close = self.too_big(reply_version, h.stream, total).await {
                return Flow::Close;
            }
            return self.discard(rd, buf, total).await;
        }
        let Some(hold) = self.admit(reply_version, h.stream, h.body_len as u64).await else {
            return self.discard(rd, buf, total).await;
        };
        if let Fill::Stop = self.fill(rd, buf, total as usize).await {
            return Flow::Close;
        }
        let frame = buf.split_to(total as usize);
        self.handle(h, &frame[HEADER_LEN..], hold).await
    }

    async fn too_big(&self, version: u8, stream: i16, total: u64) -> Flow {
        let e = QueryError::invalid(format!(
            "Request is too big: length {total} exceeds maximum allowed length {}.",
            self.shared.config.max_frame_size_bytes
        ));
        self.reply_error(version, stream, e, None).await
    }

    /// Takes an in-flight permit and reserves `bytes` for a request, waiting
    /// for room (backpressure) or, with THROW_ON_OVERLOAD, answering
    /// Overloaded and returning `None`.
    async fn admit(&mut self, version: u8, stream: i16, bytes: u64) -> Option<Hold> {
        let permit = match self.permits.clone().try_acquire_owned() {
            Ok(p) => p,
            Err(_) if self.throw_on_overload => {
                self.overloaded(version, stream).await;
                return None;
            }
            Err(_) => {
                self.shared
                    .stats
                    .reads_paused
                    .fetch_add(1, Ordering::Relaxed);
                self.permits.clone().acquire_owned().await.ok()?
            }
        };
        let limits = self.shared.limits.clone();
        let ip = self.peer.ip();
        let reservation = match limits.try_reserve(ip, bytes, &self.conn_bytes) {
            Some(r) => r,
            None if self.throw_on_overload => {
                self.overloaded(version, stream).await;
                return None;
            }
            None => {
                // Cassandra's backpressure: stop reading until this
                // connection's own requests are answered or usage falls
                // below the limits; then take the bytes even if over.
                self.shared
                    .stats
                    .reads_paused
                    .fetch_add(1, Ordering::Relaxed);
                loop {
                    let released = limits.released.notified();
                    tokio::pin!(released);
                    released.as_mut().enable();
                    if self.conn_bytes.load(Ordering::Acquire) == 0 || limits.below_limits(ip) {
                        break;
                    }
                    released.await;
                }
                limits.force_reserve(ip, bytes, &self.conn_bytes)
            }
        };
        self.shared
            .stats
            .requests_in_flight
            .fetch_add(1, Ordering::Relaxed);
        Some(Hold {
            _permit: permit,
            _bytes: reservation,
            shared: self.shared.clone(),
        })
    }

    async fn overloaded(&self, version: u8, stream: i16) {
        self.shared.stats.overloaded.fetch_add(1, Ordering::Relaxed);
        let e = QueryError::new(CqlErrorKind::Overloaded, OVERLOADED_MESSAGE);
        let _ = self.reply_error(version, stream, e, None).await;
    }

    async fn segment_step(
        &mut self,
        rd: &mut ReadHalf<Stream>,
        buf: &mut BytesMut,
        compressed: bool,
    ) -> Flow {
        let dec = SegmentDecoder { compressed };
        let len = loop {
            match dec.segment_len(buf) {
                Ok(Some(n)) => break n,
                Ok(None) => {
                    let need = buf.len() + 1;
                    if let Fill::Stop = self.fill(rd, buf, need).await {
                        return Flow::Close;
                    }
                }
                Err(e) => return self.fatal(5, 0, e.to_string()).await,
            }
        };
        if let Fill::Stop = self.fill(rd, buf, len).await {
            return Flow::Close;
        }
        let segment = match dec.decode(&buf[..len]) {
            Ok(Some((s, _))) => s,
            Ok(None) => return Flow::Close,
            Err(e) => return self.fatal(5, 0, e.to_string()).await,
        };
        buf.advance(len);
        self.on_segment(segment).await
    }

    async fn on_segment(&mut self, seg: Segment) -> Flow {
        match self.large.take() {
            None if seg.self_contained => self.contained_envelopes(&seg.payload).await,
            None => self.first_of_large(seg.payload).await,
            Some(_) if seg.self_contained => {
                self.fatal(
                    5,
                    0,
                    "Self-contained frame received while a multi-frame message was incomplete"
                        .into(),
                )
                .await
            }
            Some(Large::Discard { remaining }) => {
                if seg.payload.len() > remaining {
                    return self
                        .fatal(
                            5,
                            0,
                            "Multi-frame message longer than its header said".into(),
                        )
                        .await;
                }
                let remaining = remaining - seg.payload.len();
                if remaining > 0 {
                    self.large = Some(Large::Discard { remaining });
                }
                Flow::Continue
            }
            Some(Large::Collect {
                header,
                mut bytes,
                total,
                hold,
            }) => {
                if bytes.len() + seg.payload.len() > total {
                    return self
                        .fatal(
                            5,
                            0,
                            "Multi-frame message longer than its header said".into(),
                        )
                        .await;
                }
                bytes.extend_from_slice(&seg.payload);
                if bytes.len() < total {
                    self.large = Some(Large::Collect {
                        header,
                        bytes,
                        total,
                        hold,
                    });
                    return Flow::Continue;
                }
                self.handle(header, &bytes[HEADER_LEN..], hold).await
            }
        }
    }

    /// The envelopes of one self-contained segment.
    async fn contained_envelopes(&mut self, payload: &[u8]) -> Flow {
        let mut at = 0;
        while at < payload.len() {
            let rest = &payload[at..];
            let Some(h) = frame::parse_header(rest) else {
                return self
                    .fatal(
                        5,
                        0,
                        "Self-contained frame holds a truncated envelope header".into(),
                    )
                    .await;
            };
            let total = HEADER_LEN + h.body_len as usize;
            if total > rest.len() {
                return self
                    .fatal(
                        h.version(),
                        h.stream,
                        "Self-contained frame holds a truncated envelope".into(),
                    )
                    .await;
            }
            at += total;
            let version = self.version.unwrap_or(CURRENT_VERSION);
            if total > self.shared.config.max_frame_size_bytes {
                self.shared
                    .stats
                    .frames_too_big
                    .fetch_add(1, Ordering::Relaxed);
                if let Flow::Close = self.too_big(version, h.stream, total as u64).await {
                    return Flow::Close;
                }
                continue;
            }
            let Some(hold) = self.admit(version, h.stream, h.body_len as u64).await else {
                continue;
            };
            if let Flow::Close = self.handle(h, &rest[HEADER_LEN..total], hold).await {
                return Flow::Close;
            }
        }
        Flow::Continue
    }

    async fn first_of_large(&mut self, payload: Vec<u8>) -> Flow {
        let Some(h) = frame::parse_header(&payload) else {
            return self
                .fatal(
                    5,
                    0,
                    "First frame of a multi-frame message holds no envelope header".into(),
                )
                .await;
        };
        let total = HEADER_LEN + h.body_len as usize;
        if payload.len() > total {
            return self
                .fatal(
                    5,
                    h.stream,
                    "Multi-frame message longer than its header said".into(),
                )
                .await;
        }
        let version = self.version.unwrap_or(CURRENT_VERSION);
        if total > self.shared.config.max_frame_size_bytes {
            self.shared
                .stats
                .frames_too_big
                .fetch_add(1, Ordering::Relaxed);
            let remaining = total - payload.len();
            if remaining > 0 {
                self.large = Some(Large::Discard { remaining });
            }
            return self.too_big(version, h.stream, total as u64).await;
        }
        let Some(hold) = self.admit(version, h.stream, h.body_len as u64).await else {
            let remaining = total - payload.len();
            if remaining > 0 {
                self.large = Some(Large::Discard { remaining });
            }
            return Flow::Continue;
        };
        if payload.len() == total {
            return self.handle(h, &payload[HEADER_LEN..], hold).await;
        }
        let mut bytes = Vec::with_capacity(total);
        bytes.extend_from_slice(&payload);
        self.large = Some(Large::Collect {
            header: h,
            bytes,
            total,
            hold,
        });
        Flow::Continue
    }

    /// Validates and dispatches one envelope whose body is all here.
    async fn handle(&mut self, h: frame::Header, body: &[u8], hold: Hold) -> Flow {
        let version = h.version();
        let stream = h.stream;
        let reply_version = self.version.unwrap_or(version);
        let protocol = |m: String| QueryError::new(CqlErrorKind::ProtocolError, m);
        let opcode = match Opcode::from_byte(h.opcode) {
            None => {
                let e = protocol(format!("Unknown opcode {}", h.opcode));
                return self.reply_error(reply_version, stream, e, Some(hold)).await;
            }
            Some(op) if h.is_response() || !op.is_request() => {
                let (expected, got) = if op.is_request() {
                    ("REQUEST", "RESPONSE")
                } else {
                    ("RESPONSE", "REQUEST")
                };
                let e = protocol(format!(
                    "Wrong protocol direction (expected {expected}, got {got}) for opcode {} ({})",
                    h.opcode,
                    op.name()
                ));
                return self.reply_error(reply_version, stream, e, Some(hold)).await;
            }
            Some(op) => op,
        };
        if let Some(v) = self.version {
            if v != version {
                let e = protocol(format!(
                    "Invalid message version. Got {} but previous messages on this connection had version {}",
                    version_name(version),
                    version_name(v)
                ));
                return self.reply_error(v, stream, e, Some(hold)).await;
            }
        } else if !crate::SUPPORTED_VERSIONS.contains(&version) {
            let e = protocol(format!(
                "Invalid or unsupported protocol version ({version})"
            ));
            return self
                .reply_error(CURRENT_VERSION, stream, e, Some(hold))
                .await;
        }
        let body: Cow<'_, [u8]> = match (
            version < 5 && h.flags & flags::COMPRESSED != 0,
            self.compression,
        ) {
            (true, Some(c)) => match c.decompress(body, self.shared.config.max_frame_size_bytes) {
                Ok(b) => Cow::Owned(b),
                Err(e) => {
                    return self
                        .reply_error(reply_version, stream, protocol(e.0), Some(hold))
                        .await
                }
            },
            _ => Cow::Borrowed(body),
        };
        let request = match request::decode(version, h.flags, opcode, &body) {
            Ok(r) => r,
            Err(e) => {
                return self
                    .reply_error(reply_version, stream, protocol(e.0), Some(hold))
                    .await
            }
        };
        if let Err(m) = self.check_stage(opcode) {
            return self
                .reply_error(reply_version, stream, protocol(m), Some(hold))
                .await;
        }
        self.client.request_count.fetch_add(1, Ordering::Relaxed);
        self.shared.stats.requests.fetch_add(1, Ordering::Relaxed);
        let tracing = h.flags & flags::TRACING != 0;
        match request {
            Request::Options => {
                let body = response::supported(&self.shared.supported);
                self.frame(version, stream, Opcode::Supported, body, hold)
                    .await
            }
            Request::Startup(options) => self.startup(version, stream, options, hold).await,
            Request::Register(types) => {
                let ok = self
                    .send(Outbound::Subscribe {
                        version: reply_version,
                        types,
                    })
                    .await;
                if !ok {
                    return Flow::Close;
                }
                self.frame(reply_version, stream, Opcode::Ready, Vec::new(), hold)
                    .await
            }
            Request::AuthResponse(token) => {
                self.auth_response(reply_version, stream, token, hold).await
            }
            statement => {
                let in_reader = self.runs_in_reader(&statement);
                let task = StatementTask {
                    prepared: in_reader.clone(),
                    shared: self.shared.clone(),
                    tx: self.tx.clone(),
                    session: self.session.clone(),
                    client: self.client.clone(),
                    version: reply_version,
                    stream,
                    tracing,
                    inline: in_reader.is_some() || self.shared.config.inline_statements,
                };
                if in_reader.is_some() {
                    self.shared
                        .stats
                        .requests_in_reader
                        .fetch_add(1, Ordering::Relaxed);
                    task.run(statement, hold).await;
                } else {
                    tokio::spawn(task.run(statement, hold));
                }
                Flow::Continue
            }
        }
    }

    /// Whether a request runs in this reader rather than as a task of its
    /// own (invariant 4): an EXECUTE of a prepared statement that names one
    /// partition (every partition key column bound by `= ?`, the statements
    /// drivers route by token) and cannot wait for an fsync: a SELECT, or
    /// any such statement when statements run inline (no write waits for an
    /// fsync). It takes microseconds, less than handing it to another task
    /// costs in wake-ups: measured on two cores, the hand-off was most of the
    /// request's latency at a fixed rate and halved the throughput at
    /// saturation (docs/server.md, "Threads").
    /// The statement it executes comes back, so the task does not look it up
    /// again.
    fn runs_in_reader(&self, request: &Request) -> Option<Arc<Prepared>> {
        let Request::Execute(e) = request else {
            return None;
        };
        self.shared.prepared.get(&e.id).filter(|p| {
            let select = !p.result.columns.is_empty();
            !p.pk_indexes.is_empty() && (select || self.shared.config.inline_statements)
        })
    }

    async fn frame(
        &self,
        version: u8,
        stream: i16,
        opcode: Opcode,
        body: Vec<u8>,
        hold: Hold,
    ) -> Flow {
        let sent = self
            .send(Outbound::Frame {
                version,
                flags: 0,
                stream,
                opcode,
                body,
                hold: Some(hold),
            })
            .await;
        if sent {
            Flow::Continue
        } else {
            Flow::Close
        }
    }

    /// Cassandra's `ServerConnection.validateNewMessage`.
    fn check_stage(&self, opcode: Opcode) -> Result<(), String> {
        match self.stage {
            Stage::Established if !matches!(opcode, Opcode::Startup | Opcode::Options) => {
                Err(format!(
                    "Unexpected message {}, expecting STARTUP or OPTIONS",
                    opcode.name()
                ))
            }
            Stage::Authenticating if opcode != Opcode::AuthResponse => Err(format!(
                "Unexpected message {}, expecting SASL_RESPONSE",
                opcode.name()
            )),
            Stage::Ready if opcode == Opcode::Startup => {
                Err("Unexpected message STARTUP, the connection is already initialized".into())
            }
            Stage::Ready if opcode == Opcode::AuthResponse => Err(
                "Unexpected message AUTH_RESPONSE, the connection is already authenticated".into(),
            ),
            _ => Ok(()),
        }
    }

    fn set_stage(&mut self, stage: Stage) {
        self.stage = stage;
        self.client.meta.lock().stage = stage.name();
    }

    async fn startup(
        &mut self,
        version: u8,
        stream: i16,
        options: Vec<(String, String)>,
        hold: Hold,
    ) -> Flow {
        let get = |k: &str| {
            options
                .iter()
                .find(|(n, _)| n == k)
                .map(|(_, v)| v.as_str())
        };
        let protocol = |m: String| QueryError::new(CqlErrorKind::ProtocolError, m);
        let Some(cql_version) = get("CQL_VERSION") else {
            let e = protocol("Missing value CQL_VERSION in STARTUP message".into());
            return self.reply_error(version, stream, e, Some(hold)).await;
        };
        if let Err(m) = check_cql_version(cql_version) {
            return self
                .reply_error(version, stream, protocol(m), Some(hold))
                .await;
        }
        let compression = match get("COMPRESSION").map(str::to_lowercase).as_deref() {
            None => None,
            Some("lz4") => Some(Compression::Lz4),
            Some("snappy") if version >= 5 => {
                let e = protocol("Snappy compression is not supported in protocol V5".into());
                return self.reply_error(version, stream, e, Some(hold)).await;
            }
            Some("snappy") => Some(Compression::Snappy),
            Some(other) => {
                let e = protocol(format!("Unknown compression algorithm: {other}"));
                return self.reply_error(version, stream, e, Some(hold)).await;
            }
        };
        self.throw_on_overload = get("THROW_ON_OVERLOAD") == Some("1");
        {
            let mut m = self.client.meta.lock();
            m.driver_name = get("DRIVER_NAME").map(str::to_string);
            m.driver_version = get("DRIVER_VERSION").map(str::to_string);
        }
        self.version = Some(version);
        self.client
            .protocol_version
            .store(version, Ordering::Relaxed);
        let (opcode, body, stage) = match self.shared.executor.authenticator() {
            strata::query::Authenticator::Password => (
                Opcode::Authenticate,
                response::authenticate(strata::query::Authenticator::Password.class_name()),
                Stage::Authenticating,
            ),
            strata::query::Authenticator::AllowAll => (Opcode::Ready, Vec::new(), Stage::Ready),
        };
        self.set_stage(stage);
        if version < 5 {
            // Cassandra compresses the answer to STARTUP already.
            self.compression = compression;
            if let Some(c) = compression {
                if !self.send(Outbound::Compression(c)).await {
                    return Flow::Close;
                }
            }
            return self.frame(version, stream, opcode, body, hold).await;
        }
        // v5: the answer goes unframed, everything after it in segments.
        if let Flow::Close = self.frame(version, stream, opcode, body, hold).await {
            return Flow::Close;
        }
        let compressed = compression.is_some();
        self.framing = Framing::Segments { compressed };
        if self.send(Outbound::Segments { compressed }).await {
            Flow::Continue
        } else {
            Flow::Close
        }
    }

    async fn auth_response(
        &mut self,
        version: u8,
        stream: i16,
        token: Option<Vec<u8>>,
        hold: Hold,
    ) -> Flow {
        let (user, password) = match decode_plain(token.as_deref().unwrap_or(&[])) {
            Ok(c) => c,
            Err(m) => {
                let e = QueryError::new(CqlErrorKind::BadCredentials, m);
                return self.reply_error(version, stream, e, Some(hold)).await;
            }
        };
        let executor = self.shared.executor.clone();
        let outcome = run(&self.shared, false, move || {
            executor.authenticate(&user, &password)
        })
        .await;
        match outcome {
            Ok(role) => {
                self.session.lock().user = Some(role.clone());
                self.client.meta.lock().username = Some(role);
                self.client.authenticated.store(true, Ordering::Relaxed);
                self.set_stage(Stage::Ready);
                self.frame(
                    version,
                    stream,
                    Opcode::AuthSuccess,
                    response::auth_token(None),
                    hold,
                )
                .await
            }
            Err(e) => self.reply_error(version, stream, e, Some(hold)).await,
        }
    }
}

/// STARTUP's CQL_VERSION: `major.minor.patch`, at least 3.0.0 (Cassandra
/// refuses below 2.99.0).
fn check_cql_version(v: &str) -> Result<(), String> {
    let parts: Vec<&str> = v
        .split(['-', '+'])
        .next()
        .unwrap_or("")
        .split('.')
        .collect();
    let nums: Option<Vec<u32>> = parts.iter().map(|p| p.parse().ok()).collect();
    match nums {
        Some(n) if (2..=3).contains(&n.len()) => {
            let (major, minor) = (n[0], n[1]);
            if (major, minor) < (2, 99) {
                return Err(format!(
                    "CQL version {v} is not supported by the binary protocol (supported version are >= 3.0.0)"
                ));
            }
            Ok(())
        }
        _ => Err(format!("Invalid version value: {v}")),
    }
}

/// SASL PLAIN (`[authzid] NUL authcid NUL passwd`), as Cassandra's
/// `PlainTextSaslAuthenticator.decodeCredentials` reads it: from the end.
pub(crate) fn decode_plain(token: &[u8]) -> Result<(String, String), String> {
    let mut fields: Vec<&[u8]> = Vec::with_capacity(3);
    let mut end = token.len();
    for i in (0..token.len()).rev() {
        if token[i] == 0 {
            if fields.len() == 2 {
                return Err(
                    "Credential format error: username or password is empty or contains NUL(\\0) character"
                        .into(),
                );
            }
            fields.push(&token[i + 1..end]);
            end = i;
        }
    }
    let password = fields.first().copied().unwrap_or(&[]);
    let user = fields.get(1).copied().unwrap_or(&[]);
    if password.is_empty() {
        return Err("Password must not be null".into());
    }
    if user.is_empty() {
        return Err("Authentication ID must not be null".into());
    }
    let s = |b: &[u8]| {
        String::from_utf8(b.to_vec()).map_err(|_| "Credentials are not valid UTF-8".to_string())
    };
    Ok((s(user)?, s(password)?))
}

/// Runs an executor call: on this thread when `inline` (the statement cannot
/// wait long: `ServerConfig::inline_statements`, or one running in the
/// reader, invariant 4), else on the blocking pool. Either way it holds one of
/// `native_transport_max_threads` slots, and a panic inside becomes a server
/// error for this request, never the server's end.
async fn run<T: Send + 'static>(
    shared: &Arc<Shared>,
    inline: bool,
    f: impl FnOnce() -> Result<T, QueryError> + Send + 'static,
) -> Result<T, QueryError> {
    let Ok(_slot) = shared.exec_slots.clone().acquire_owned().await else {
        return Err(QueryError::new(
            CqlErrorKind::ServerError,
            "server is shutting down",
        ));
    };
    let outcome = if inline {
        std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)).map_err(|_| ())
    } else {
        tokio::task::spawn_blocking(f).await.map_err(|_| ())
    };
    outcome.unwrap_or_else(|()| {
        Err(QueryError::new(
            CqlErrorKind::ServerError,
            "internal error while executing the statement",
        ))
    })
}

/// What a request ran, kept to name it in the slow-statement log.
enum Statement {
    Text(String),
    Prepared(Arc<Prepared>),
    Id(Vec<u8>),
    Batch(usize),
}

impl Statement {
    fn of(request: &Request, prepared: Option<&Arc<Prepared>>) -> Statement {
        match (request, prepared) {
            (Request::Query(q), _) => Statement::Text(q.text.clone()),
            (Request::Prepare { text, .. }, _) => Statement::Text(format!("PREPARE {text}")),
            (Request::Execute(_), Some(p)) => Statement::Prepared(p.clone()),
            (Request::Execute(e), None) => Statement::Id(e.id.clone()),
            (Request::Batch(b), _) => Statement::Batch(b.items.len()),
            _ => Statement::Batch(0),
        }
    }

    fn describe(self, cache: &crate::prepared::PreparedCache) -> String {
        match self {
            Statement::Text(t) => t,
            Statement::Prepared(p) => p.text.clone(),
            Statement::Id(id) => match cache.get(&id) {
                Some(p) => p.text.clone(),
                None => format!(
                    "prepared statement {}",
                    id.iter().map(|b| format!("{b:02x}")).collect::<String>()
                ),
            },
            Statement::Batch(n) => format!("BATCH of {n} statements"),
        }
    }
}

/// A QUERY, PREPARE, EXECUTE or BATCH, run concurrently with its
/// connection's other requests.
struct StatementTask {
    shared: Arc<Shared>,
    tx: mpsc::Sender<Outbound>,
    session: Arc<parking_lot::Mutex<Session>>,
    client: Arc<ClientEntry>,
    version: u8,
    stream: i16,
    tracing: bool,
    /// Run the executor on this thread (`run`'s `inline`).
    inline: bool,
    /// The EXECUTE's statement, when the reader already looked it up.
    prepared: Option<Arc<Prepared>>,
}

impl StatementTask {
    async fn run(self, request: Request, hold: Hold) {
        let consistency = match &request {
            Request::Query(q) => q.params.consistency,
            Request::Execute(e) => e.params.consistency,
            Request::Batch(b) => b.params.consistency,
            _ => Consistency::One,
        };
        let what = self
            .shared
            .slow
            .enabled()
            .then(|| Statement::of(&request, self.prepared.as_ref()));
        let started = std::time::Instant::now();
        let outcome = self.execute(request).await;
        if let Some(what) = what {
            let shared = &self.shared;
            shared
                .slow
                .record(started.elapsed(), || what.describe(&shared.prepared));
        }
        let (opcode, mut flags, body) = match outcome {
            Ok((body, warnings)) => {
                let mut prefix = Vec::new();
                let mut flags = 0;
                if self.tracing {
                    flags |= flags::TRACING;
                    prefix.extend_from_slice(&timeuuid());
                }
                if self.version >= 4 && !warnings.is_empty() {
                    flags |= flags::WARNING;
                    crate::wire::Writer::put_string_list(&mut prefix, &warnings);
                }
                let body = if prefix.is_empty() {
                    body
                } else {
                    prefix.extend_from_slice(&body);
                    prefix
                };
                (Opcode::Result, flags, body)
            }
            Err(e) => {
                let ctx = ErrorContext {
                    consistency,
                    node: self.shared.executor.node().listen_address,
                };
                (Opcode::Error, 0, response::error(&e, self.version, ctx))
            }
        };
        flags &= !flags::COMPRESSED;
        let _ = self
            .tx
            .send(Outbound::Frame {
                version: self.version,
                flags,
                stream: self.stream,
                opcode,
                body,
                hold: Some(hold),
            })
            .await;
    }

    /// The RESULT body and its warnings.
    async fn execute(&self, request: Request) -> Result<(Vec<u8>, Vec<String>), QueryError> {
        let executor = self.shared.executor.clone();
        let mut session = self.session.lock().clone();
        let version = self.version;
        match request {
            Request::Query(q) => {
                let skip = q.skip_metadata;
                let (response, session) = run(&self.shared, self.inline, move || {
                    let r = executor.query(&mut session, &q.text, &q.params)?;
                    Ok((r, session))
                })
                .await?;
                self.finish(
                    response,
                    session,
                    version,
                    MetadataMode {
                        skip,
                        client_id: None,
                    },
                )
            }
            Request::Prepare { text, keyspace } => {
                if keyspace.is_some() {
                    session.keyspace = keyspace;
                }
                let prepared = run(&self.shared, self.inline, move || {
                    executor.prepare(&session, &text)
                })
                .await?;
                let prepared = self.shared.prepared.insert(prepared)?;
                Ok((response::prepared(&prepared, version), Vec::new()))
            }
            Request::Execute(e) => {
                let found = self.prepared.clone();
                let Some(prepared) = found.or_else(|| self.shared.prepared.get(&e.id)) else {
                    return Err(Executor::unprepared(&e.id));
                };
                let params: QueryParams = e.params;
                let (response, session) = run(&self.shared, self.inline, move || {
                    let r = executor.execute(&mut session, &prepared, &params)?;
                    Ok((r, session))
                })
                .await?;
                let mode = MetadataMode {
                    skip: e.skip_metadata,
                    client_id: e.result_metadata_id.as_deref(),
                };
                self.finish(response, session, version, mode)
            }
            Request::Batch(b) => {
                let mut items = Vec::with_capacity(b.items.len());
                for item in b.items {
                    items.push(match item {
                        RawBatchItem::Query { text, values } => BatchItem::Query { text, values },
                        RawBatchItem::Prepared { id, values } => {
                            match self.shared.prepared.get(&id) {
                                Some(prepared) => BatchItem::Prepared { prepared, values },
                                None => return Err(Executor::unprepared(&id)),
                            }
                        }
                    });
                }
                let kind = b.kind;
                let params = b.params;
                let (response, session) = run(&self.shared, self.inline, move || {
                    let r = executor.batch(&mut session, kind, &items, &params)?;
                    Ok((r, session))
                })
                .await?;
                self.finish(response, session, version, MetadataMode::default())
            }
            _ => Err(QueryError::new(
                CqlErrorKind::ServerError,
                "not a statement",
            )),
        }
    }

    fn finish(
        &self,
        response: Response,
        session: Session,
        version: u8,
        mode: MetadataMode<'_>,
    ) -> Result<(Vec<u8>, Vec<String>), QueryError> {
        let body = match &response.result {
            QueryResult::Void => response::void(),
            QueryResult::Rows(rows) => response::rows(rows, version, mode),
            QueryResult::SetKeyspace(ks) => {
                // USE changes the connection's keyspace for what follows.
                let _ = &session;
                self.session.lock().keyspace = Some(ks.clone());
                self.client.meta.lock().keyspace = Some(ks.clone());
                response::set_keyspace(ks)
            }
            QueryResult::SchemaChange(change) => {
                let event = Event {
                    ty: EventType::SchemaChange,
                    body: response::schema_change_event(change),
                };
                // No receiver (nobody registered) is not an error.
                let _ = self.shared.events.send(Arc::new(event));
                response::schema_change(change)
            }
        };
        Ok((body, response.warnings))
    }
}

/// A version-1 (time-based) UUID, as Cassandra's tracing session ids are.
fn timeuuid() -> [u8; 16] {
    use std::collections::hash_map::RandomState;
    use std::hash::{BuildHasher, Hasher};
    static CLOCK: AtomicU64 = AtomicU64::new(0);
    let unix_100ns = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| (d.as_nanos() / 100) as u64);
    // Strictly increasing even within one 100 ns tick.
    let mut t = unix_100ns + 0x01B2_1DD2_1381_4000;
    let prev = CLOCK.fetch_max(t, Ordering::AcqRel);
    if prev >= t {
        t = CLOCK.fetch_add(1, Ordering::AcqRel) + 1;
    }
    let random = RandomState::new().build_hasher().finish();
    let mut u = [0u8; 16];
    u[0..4].copy_from_slice(&(t as u32).to_be_bytes());
    u[4..6].copy_from_slice(&((t >> 32) as u16).to_be_bytes());
    u[6..8].copy_from_slice(&((((t >> 48) as u16) & 0x0FFF) | 0x1000).to_be_bytes());
    u[8] = 0x80 | ((random >> 56) as u8 & 0x3F);
    u[9] = (random >> 48) as u8;
    u[10..16].copy_from_slice(&random.to_be_bytes()[2..8]);
    u[10] |= 0x01; // a random node id has the multicast bit set (RFC 4122 4.5)
    u
}

/// A REGISTERed connection's events: the broadcast it reads, the event types
/// it asked for, and its protocol version (the frames they go out in).
type Subscription = (broadcast::Receiver<Arc<Event>>, Vec<EventType>, u8);

/// The writer task: encodes what the queue holds, compresses (v4) or frames
/// (v5), writes, then releases the requests' holds (invariant 1).
async fn writer(
    mut wr: WriteHalf<Stream>,
    mut rx: mpsc::Receiver<Outbound>,
    shared: Arc<Shared>,
    activity: Arc<Activity>,
) {
    let mut st = WriterState {
        compression: None,
        segments: None,
        events: None,
        shared: shared.clone(),
    };
    let mut out: Vec<u8> = Vec::new();
    let mut holds: Vec<Hold> = Vec::new();
    loop {
        let first = tokio::select! {
            biased;
            item = rx.recv() => match item {
                Some(i) => i,
                None => break,
            },
            ev = next_event(&mut st.events, &shared) => match ev {
                Some((version, body)) => Outbound::Frame {
                    version,
                    flags: 0,
                    stream: -1,
                    opcode: Opcode::Event,
                    body,
                    hold: None,
                },
                None => continue,
            },
        };
        let mut close = st.apply(first, &mut out, &mut holds);
        while !close && out.len() < WRITE_BATCH_BYTES {
            match rx.try_recv() {
                Ok(i) => close = st.apply(i, &mut out, &mut holds),
                Err(_) => break,
            }
        }
        if let Some(s) = st.segments.as_mut() {
            s.flush(&mut out);
        }
        if !out.is_empty() {
            if wr.write_all(&out).await.is_err() {
                break;
            }
            activity.touch();
        }
        out.clear();
        holds.clear();
        if out.capacity() > 4 * WRITE_BATCH_BYTES {
            out = Vec::new();
        }
        if close {
            break;
        }
    }
    let _ = wr.shutdown().await;
}

struct WriterState {
    compression: Option<Compression>,
    segments: Option<SegmentWriter>,
    events: Option<Subscription>,
    shared: Arc<Shared>,
}

impl WriterState {
    /// Encodes one item into `out`; true when the connection is to close.
    fn apply(&mut self, o: Outbound, out: &mut Vec<u8>, holds: &mut Vec<Hold>) -> bool {
        match o {
            Outbound::Frame {
                version,
                flags: mut f,
                stream,
                opcode,
                body,
                hold,
            } => {
                let body = match self.compression {
                    Some(c) if version < 5 => {
                        f |= flags::COMPRESSED;
                        c.compress(&body)
                    }
                    _ => body,
                };
                match self.segments.as_mut() {
                    Some(s) => {
                        let env = frame::encode_envelope(version, f, stream, opcode, &body);
                        s.push(&env, out);
                    }
                    None => {
                        frame::write_response_header(out, version, f, stream, opcode, body.len());
                        out.extend_from_slice(&body);
                    }
                }
                if let Some(h) = hold {
                    holds.push(h);
                }
                false
            }
            Outbound::Compression(c) => {
                self.compression = Some(c);
                false
            }
            Outbound::Segments { compressed } => {
                self.segments = Some(SegmentWriter::new(compressed));
                false
            }
            Outbound::Subscribe { version, types } => {
                match self.events.as_mut() {
                    Some((_, t, _)) => {
                        for ty in types {
                            if !t.contains(&ty) {
                                t.push(ty);
                            }
                        }
                    }
                    None => self.events = Some((self.shared.events.subscribe(), types, version)),
                }
                false
            }
            Outbound::Close => true,
        }
    }
}

/// The next event this connection registered for; pending forever when it
/// registered for none.
async fn next_event(events: &mut Option<Subscription>, shared: &Shared) -> Option<(u8, Vec<u8>)> {
    let Some((rx, types, version)) = events.as_mut() else {
        return std::future::pending().await;
    };
    loop {
        match rx.recv().await {
            Ok(ev) if types.contains(&ev.ty) => return Some((*version, ev.body.clone())),
            Ok(_) => continue,
            Err(broadcast::error::RecvError::Lagged(n)) => {
                shared.stats.events_dropped.fetch_add(n, Ordering::Relaxed);
                continue;
            }
            Err(broadcast::error::RecvError::Closed) => {
                *events = None;
                return None;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sasl_plain_is_read_from_the_end() {
        assert_eq!(
            decode_plain(b"\0cassandra\0secret").unwrap(),
            ("cassandra".to_string(), "secret".to_string())
        );
        assert_eq!(
            decode_plain(b"authz\0user\0pw").unwrap(),
            ("user".to_string(), "pw".to_string())
        );
        assert!(decode_plain(b"").unwrap_err().contains("Password"));
        assert!(decode_plain(b"\0user\0").unwrap_err().contains("Password"));
        assert!(decode_plain(b"\0\0pw")
            .unwrap_err()
            .contains("Authentication ID"));
        assert!(decode_plain(b"a\0b\0c\0d").unwrap_err().contains("format"));
    }

    #[test]
    fn cql_versions() {
        assert!(check_cql_version("3.0.0").is_ok());
        assert!(check_cql_version("3.4.7").is_ok());
        assert!(check_cql_version("2.0.0")
            .unwrap_err()
            .contains("not supported"));
        assert!(check_cql_version("abc")
            .unwrap_err()
            .contains("Invalid version"));
    }

    #[test]
    fn timeuuids_are_version_1_and_increase() {
        let a = timeuuid();
        let b = timeuuid();
        assert_eq!(a[6] >> 4, 1);
        assert_eq!(a[8] & 0xC0, 0x80);
        let time = |u: &[u8; 16]| {
            let hi = (u16::from_be_bytes([u[6], u[7]]) & 0x0FFF) as u64;
            let mid = u16::from_be_bytes([u[4], u[5]]) as u64;
            let low = u32::from_be_bytes([u[0], u[1], u[2], u[3]]) as u64;
            (hi << 48) | (mid << 32) | low
        };
        assert!(time(&b) > time(&a));
    }
}
