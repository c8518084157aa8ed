//! A blocking CQL client over protocol v4: what `strata cql HOST` uses to
//! talk to a running server (Strata's, or any that speaks v4, Cassandra's
//! included).
//!
//! It does what a shell needs and no more: STARTUP (no body compression),
//! SASL PLAIN for `PasswordAuthenticator`, optional TLS (rustls, the server
//! verified against a CA file and the host name), and QUERY with paging,
//! decoding ERROR and every RESULT kind into the executor's own values
//! ([`Response`], [`Rows`], [`ColumnType`]), so the shell formats a served
//! result with the same code as an embedded one.
//!
//! Contract:
//! 1. One request at a time on stream 0: a shell waits for each answer.
//! 2. Every length the server sends is bounded before it allocates: an
//!    envelope body by [`MAX_BODY`], everything inside it by the body
//!    ([`wire::Reader`]), type options by [`MAX_TYPE_DEPTH`].
//! 3. A server error comes back as [`ClientError::Server`] with its code and
//!    message; anything the client cannot read (a wrong opcode, a truncated
//!    body, a version refused) as [`ClientError::Protocol`], and the
//!    connection should then be dropped.

use crate::frame::{flags, parse_header, Opcode, DIRECTION_RESPONSE, HEADER_LEN, VERSION_MASK};
use crate::response::{kind, metadata_flags};
use crate::wire::{Reader, WireError, Writer};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, ServerName};
use std::io::{Read, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;
use strata::cql::CqlErrorKind;
use strata::query::{
    ColumnSpec, ColumnType, QueryResult, Response, Rows, RowsMetadata, SchemaChange,
    SchemaChangeKind, SchemaTarget,
};
use strata::types::CqlType;

/// The protocol version spoken: every server since Cassandra 2.2 has it.
pub const VERSION: u8 = 4;
/// The largest response body accepted (contract 2): a page of a shell's 100
/// rows of large blobs fits; a corrupt length does not reserve gigabytes.
pub const MAX_BODY: usize = 256 << 20;
/// Nesting of type options (a list of maps of tuples ...) past which a
/// response is refused rather than recursed into.
pub const MAX_TYPE_DEPTH: usize = 32;

/// How to reach a server.
#[derive(Clone, Debug)]
pub struct ClientOptions {
    pub host: String,
    pub port: u16,
    /// `PasswordAuthenticator` credentials, sent when the server asks.
    pub credentials: Option<(String, String)>,
    /// TLS, trusting the CA certificates of this PEM file.
    pub tls_ca: Option<PathBuf>,
    pub connect_timeout: Duration,
    pub request_timeout: Duration,
}

#[derive(Debug)]
pub enum ClientError {
    /// The server answered with ERROR.
    Server { kind: CqlErrorKind, message: String },
    /// The connection failed or the server's bytes were unreadable.
    Protocol(String),
}

impl std::fmt::Display for ClientError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ClientError::Server { kind, message } => {
                write!(f, "{} [{}] {message}", kind.code(), kind.spec_name())
            }
            ClientError::Protocol(m) => f.write_str(m),
        }
    }
}

impl From<WireError> for ClientError {
    fn from(e: WireError) -> ClientError {
        ClientError::Protocol(format!("unreadable response: {}", e.0))
    }
}

type Result<T> = std::result::Result<T, ClientError>;

trait Stream: Read + Write + Send {}
impl<T: Read + Write + Send> Stream for T {}

/// One connection, authenticated and ready for queries.
pub struct Client {
    stream: Box<dyn Stream>,
}

fn io_error(what: &str, e: std::io::Error) -> ClientError {
    let e = match e.kind() {
        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut => {
            "no answer within the request timeout".to_string()
        }
        _ => e.to_string(),
    };
    ClientError::Protocol(format!("{what}: {e}"))
}

impl Client {
    /// Connects, negotiates TLS if asked, sends STARTUP and authenticates.
    pub fn connect(opts: &ClientOptions) -> Result<Client> {
        let target = format!("{}:{}", opts.host, opts.port);
        let addrs: Vec<_> = (opts.host.as_str(), opts.port)
            .to_socket_addrs()
            .map_err(|e| ClientError::Protocol(format!("cannot resolve {target}: {e}")))?
            .collect();
        let mut last = None;
        let mut tcp = None;
        for a in &addrs {
            match TcpStream::connect_timeout(a, opts.connect_timeout) {
                Ok(s) => {
                    tcp = Some(s);
                    break;
                }
                Err(e) => last = Some(e),
            }
        }
        let tcp = match (tcp, last) {
            (Some(s), _) => s,
            (None, Some(e)) => return Err(io_error(&format!("cannot connect to {target}"), e)),
            (None, None) => {
                return Err(ClientError::Protocol(format!(
                    "cannot connect to {target}: the name has no address"
                )))
            }
        };
        let setup = |e| io_error(&format!("cannot connect to {target}"), e);
        tcp.set_read_timeout(Some(opts.request_timeout))
            .map_err(setup)?;
        tcp.set_write_timeout(Some(opts.request_timeout))
            .map_err(setup)?;
        tcp.set_nodelay(true).map_err(setup)?;
        let stream: Box<dyn Stream> = match &opts.tls_ca {
            None => Box::new(tcp),
            Some(ca) => Box::new(tls_stream(tcp, &opts.host, ca)?),
        };
        let mut client = Client { stream };
        client.startup(opts)?;
        Ok(client)
    }

    fn startup(&mut self, opts: &ClientOptions) -> Result<()> {
        let mut body = Vec::new();
        body.put_short(1);
        body.put_string("CQL_VERSION");
        body.put_string("3.0.0");
        let (op, body, _) = self.request(Opcode::Startup, &body)?;
        match op {
            Opcode::Ready => Ok(()),
            Opcode::Authenticate => {
                let class = Reader::new(&body).string()?.to_string();
                let Some((user, password)) = &opts.credentials else {
                    return Err(ClientError::Protocol(format!(
                        "the server requires authentication ({class}): give -u and -p"
                    )));
                };
                // SASL PLAIN: authorization id (empty), user, password.
                let mut token = vec![0u8];
                token.extend_from_slice(user.as_bytes());
                token.push(0);
                token.extend_from_slice(password.as_bytes());
                let mut body = Vec::new();
                body.put_bytes(Some(&token));
                match self.request(Opcode::AuthResponse, &body)?.0 {
                    Opcode::AuthSuccess => Ok(()),
                    other => Err(unexpected(other, "AUTH_RESPONSE")),
                }
            }
            other => Err(unexpected(other, "STARTUP")),
        }
    }

    /// Runs one statement at consistency ONE: one page of `page_size` rows
    /// (`None`: all), from `paging_state` if given.
    pub fn query(
        &mut self,
        text: &str,
        page_size: Option<u32>,
        paging_state: Option<&[u8]>,
    ) -> Result<Response> {
        let mut body = Vec::new();
        body.put_long_string(text);
        body.put_short(0x0001); // ONE
        let mut qflags = 0u8;
        if page_size.is_some() {
            qflags |= 0x04;
        }
        if paging_state.is_some() {
            qflags |= 0x08;
        }
        body.put_byte(qflags);
        if let Some(n) = page_size {
            body.put_int(i32::try_from(n).unwrap_or(i32::MAX));
        }
        if let Some(p) = paging_state {
            body.put_bytes(Some(p));
        }
        let (op, result, warnings) = self.request(Opcode::Query, &body)?;
        if op != Opcode::Result {
            return Err(unexpected(op, "QUERY"));
        }
        Ok(Response {
            result: decode_result(&result)?,
            warnings,
        })
    }

    /// Sends one request on stream 0 and reads its answer (contract 1); an
    /// ERROR becomes `ClientError::Server`. The answer's body comes back
    /// without the tracing id, warnings and custom payload in front of it;
    /// the warnings beside it.
    fn request(&mut self, op: Opcode, body: &[u8]) -> Result<(Opcode, Vec<u8>, Vec<String>)> {
        let mut frame = Vec::with_capacity(HEADER_LEN + body.len());
        frame.put_byte(VERSION);
        frame.put_byte(0);
        frame.put_short(0);
        frame.put_byte(op as u8);
        frame.put_int(i32::try_from(body.len()).map_err(|_| {
            ClientError::Protocol("the statement is larger than a frame can carry".to_string())
        })?);
        frame.extend_from_slice(body);
        self.stream
            .write_all(&frame)
            .and_then(|()| self.stream.flush())
            .map_err(|e| io_error("cannot send to the server", e))?;
        loop {
            let mut head = [0u8; HEADER_LEN];
            self.stream
                .read_exact(&mut head)
                .map_err(|e| io_error("the server closed the connection", e))?;
            let Some(h) = parse_header(&head) else {
                return Err(ClientError::Protocol("short header".to_string()));
            };
            let len = h.body_len as usize;
            if len > MAX_BODY {
                return Err(ClientError::Protocol(format!(
                    "the server sent a {len}-byte message, past the client's {MAX_BODY}"
                )));
            }
            let mut raw = vec![0u8; len];
            self.stream
                .read_exact(&mut raw)
                .map_err(|e| io_error("the server closed the connection", e))?;
            if h.version_byte & DIRECTION_RESPONSE == 0 {
                return Err(ClientError::Protocol(
                    "the server sent a request, not a response".to_string(),
                ));
            }
            let op = Opcode::from_byte(h.opcode).ok_or_else(|| {
                ClientError::Protocol(format!("unknown opcode 0x{:02X}", h.opcode))
            })?;
            // Events (stream -1) are never registered for; skip any anyway.
            if h.stream != 0 {
                continue;
            }
            let mut r = Reader::new(&raw);
            if h.flags & flags::COMPRESSED != 0 {
                return Err(ClientError::Protocol(
                    "the server compressed a body although none was negotiated".to_string(),
                ));
            }
            if h.flags & flags::TRACING != 0 {
                r.take(16, "the tracing id")?;
            }
            let warnings = if h.flags & flags::WARNING != 0 {
                r.string_list()?
            } else {
                Vec::new()
            };
            if h.flags & flags::CUSTOM_PAYLOAD != 0 {
                r.skip_bytes_map()?;
            }
            if op == Opcode::Error {
                let code = r.int()?;
                let message = r.string()?.to_string();
                let kind = CqlErrorKind::from_code(code as u32).ok_or_else(|| {
                    ClientError::Protocol(format!("unknown error code 0x{code:04X}: {message}"))
                })?;
                // A version refusal names the version in the message.
                if kind == CqlErrorKind::ProtocolError && h.version_byte & VERSION_MASK != VERSION {
                    return Err(ClientError::Protocol(format!(
                        "the server does not speak protocol v{VERSION}: {message}"
                    )));
                }
                return Err(ClientError::Server { kind, message });
            }
            let rest = r.take(r.remaining(), "the body")?;
            return Ok((op, rest.to_vec(), warnings));
        }
    }
}

fn unexpected(op: Opcode, after: &str) -> ClientError {
    ClientError::Protocol(format!("the server answered {after} with {}", op.name()))
}

fn tls_stream(
    tcp: TcpStream,
    host: &str,
    ca: &std::path::Path,
) -> Result<rustls::StreamOwned<rustls::ClientConnection, TcpStream>> {
    let bad = |m: String| ClientError::Protocol(m);
    let mut roots = rustls::RootCertStore::empty();
    let certs = CertificateDer::pem_file_iter(ca)
        .map_err(|e| bad(format!("cannot read the CA file {}: {e}", ca.display())))?;
    for c in certs {
        let c = c.map_err(|e| bad(format!("the CA file {}: {e}", ca.display())))?;
        roots
            .add(c)
            .map_err(|e| bad(format!("the CA file {}: {e}", ca.display())))?;
    }
    if roots.is_empty() {
        return Err(bad(format!(
            "the CA file {} holds no PEM certificate",
            ca.display()
        )));
    }
    let config = rustls::ClientConfig::builder_with_provider(Arc::new(
        rustls::crypto::ring::default_provider(),
    ))
    .with_safe_default_protocol_versions()
    .map_err(|e| bad(format!("TLS: {e}")))?
    .with_root_certificates(roots)
    .with_no_client_auth();
    let name = ServerName::try_from(host.to_string())
        .map_err(|e| bad(format!("TLS: {host} is not a host name: {e}")))?;
    let conn = rustls::ClientConnection::new(Arc::new(config), name)
        .map_err(|e| bad(format!("TLS: {e}")))?;
    Ok(rustls::StreamOwned::new(conn, tcp))
}

/// A RESULT body as the executor's value.
pub fn decode_result(body: &[u8]) -> Result<QueryResult> {
    let mut r = Reader::new(body);
    match r.int()? {
        kind::VOID => Ok(QueryResult::Void),
        kind::ROWS => Ok(QueryResult::Rows(decode_rows(&mut r)?)),
        kind::SET_KEYSPACE => Ok(QueryResult::SetKeyspace(r.string()?.to_string())),
        kind::SCHEMA_CHANGE => Ok(QueryResult::SchemaChange(decode_schema_change(&mut r)?)),
        other => Err(ClientError::Protocol(format!(
            "unexpected result kind 0x{other:04X} for a query"
        ))),
    }
}

fn decode_rows(r: &mut Reader<'_>) -> Result<Rows> {
    let mflags = r.int()?;
    let count = r.int()?;
    let count =
        usize::try_from(count).map_err(|_| WireError(format!("negative column count {count}")))?;
    let paging_state = if mflags & metadata_flags::HAS_MORE_PAGES != 0 {
        r.bytes()?.map(<[u8]>::to_vec)
    } else {
        None
    };
    if mflags & metadata_flags::NO_METADATA != 0 {
        return Err(
            WireError("rows without metadata, which the client never asks for".into()).into(),
        );
    }
    let global = if mflags & metadata_flags::GLOBAL_TABLES_SPEC != 0 {
        Some((r.string()?.to_string(), r.string()?.to_string()))
    } else {
        None
    };
    // Each column takes at least 4 bytes (name and type): bounds the vector.
    if count > r.remaining() / 4 {
        return Err(WireError(format!("{count} columns in a {}-byte body", r.remaining())).into());
    }
    let mut columns = Vec::with_capacity(count);
    for _ in 0..count {
        let (keyspace, table) = match &global {
            Some(g) => g.clone(),
            None => (r.string()?.to_string(), r.string()?.to_string()),
        };
        let name = r.string()?.to_string();
        let ty = decode_type(r, 0)?;
        columns.push(ColumnSpec {
            keyspace,
            table,
            name,
            ty,
        });
    }
    let n = r.int()?;
    let n = usize::try_from(n).map_err(|_| WireError(format!("negative row count {n}")))?;
    // Each value takes at least its 4-byte length.
    if count > 0 && n > r.remaining() / (4 * count) {
        return Err(WireError(format!("{n} rows in a {}-byte body", r.remaining())).into());
    }
    let mut rows = Vec::with_capacity(n);
    for _ in 0..n {
        let mut row = Vec::with_capacity(count);
        for _ in 0..count {
            row.push(r.bytes()?.map(<[u8]>::to_vec));
        }
        rows.push(row);
    }
    Ok(Rows {
        metadata: Arc::new(RowsMetadata { columns }),
        rows,
        paging_state,
    })
}

/// A type `[option]` (contract 2: nesting bounded).
fn decode_type(r: &mut Reader<'_>, depth: usize) -> Result<ColumnType> {
    if depth > MAX_TYPE_DEPTH {
        return Err(WireError(format!("types nested deeper than {MAX_TYPE_DEPTH}")).into());
    }
    let native = |t| Ok(ColumnType::Native(t));
    match r.short()? {
        0x0000 => Ok(custom_type(r.string()?)),
        0x0001 => native(CqlType::Ascii),
        0x0002 => native(CqlType::BigInt),
        0x0003 => native(CqlType::Blob),
        0x0004 => native(CqlType::Boolean),
        0x0005 => Ok(ColumnType::Counter),
        0x0006 => native(CqlType::Decimal),
        0x0007 => native(CqlType::Double),
        0x0008 => native(CqlType::Float),
        0x0009 => native(CqlType::Int),
        0x000B => native(CqlType::Timestamp),
        0x000C => native(CqlType::Uuid),
        0x000D => native(CqlType::Text),
        0x000E => native(CqlType::Varint),
        0x000F => native(CqlType::TimeUuid),
        0x0010 => native(CqlType::Inet),
        0x0011 => native(CqlType::Date),
        0x0012 => Ok(ColumnType::Time),
        0x0013 => native(CqlType::SmallInt),
        0x0014 => native(CqlType::TinyInt),
        0x0015 => Ok(ColumnType::Duration),
        0x0020 => Ok(ColumnType::List(Box::new(decode_type(r, depth + 1)?))),
        0x0021 => Ok(ColumnType::Map(
            Box::new(decode_type(r, depth + 1)?),
            Box::new(decode_type(r, depth + 1)?),
        )),
        0x0022 => Ok(ColumnType::Set(Box::new(decode_type(r, depth + 1)?))),
        0x0030 => {
            let keyspace = r.string()?.to_string();
            let name = r.string()?.to_string();
            let n = r.short()?;
            let mut fields = Vec::new();
            for _ in 0..n {
                let field = r.string()?.to_string();
                fields.push((field, decode_type(r, depth + 1)?));
            }
            Ok(ColumnType::Udt {
                keyspace,
                name,
                fields,
            })
        }
        0x0031 => {
            let n = r.short()?;
            let mut items = Vec::new();
            for _ in 0..n {
                items.push(decode_type(r, depth + 1)?);
            }
            Ok(ColumnType::Tuple(items))
        }
        other => Err(WireError(format!("unknown type option 0x{other:04X}")).into()),
    }
}

/// A custom type: the marshal classes older versions use for types with an
/// option id in v4/v5 are mapped back to those types.
fn custom_type(class: &str) -> ColumnType {
    let short = class.rsplit('.').next().unwrap_or(class);
    match short {
        "SimpleDateType" => ColumnType::Native(CqlType::Date),
        "ShortType" => ColumnType::Native(CqlType::SmallInt),
        "ByteType" => ColumnType::Native(CqlType::TinyInt),
        "TimeType" => ColumnType::Time,
        "DurationType" => ColumnType::Duration,
        _ => ColumnType::Custom(class.to_string()),
    }
}

fn decode_schema_change(r: &mut Reader<'_>) -> Result<SchemaChange> {
    let kind = match r.string()? {
        "CREATED" => SchemaChangeKind::Created,
        "UPDATED" => SchemaChangeKind::Updated,
        "DROPPED" => SchemaChangeKind::Dropped,
        other => return Err(WireError(format!("unknown schema change {other:?}")).into()),
    };
    let target = match r.string()? {
        "KEYSPACE" => SchemaTarget::Keyspace(r.string()?.to_string()),
        "TABLE" => SchemaTarget::Table {
            keyspace: r.string()?.to_string(),
            table: r.string()?.to_string(),
        },
        "TYPE" => SchemaTarget::Type {
            keyspace: r.string()?.to_string(),
            name: r.string()?.to_string(),
        },
        // Functions and aggregates (Cassandra's): the shell prints nothing
        // for any schema change, so the keyspace is what is kept.
        "FUNCTION" | "AGGREGATE" => SchemaTarget::Keyspace(r.string()?.to_string()),
        other => return Err(WireError(format!("unknown schema change target {other:?}")).into()),
    };
    Ok(SchemaChange { kind, target })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::response::tests::spec;
    use crate::response::{self, MetadataMode};

    /// What the server encodes, the client decodes to the same value, in
    /// every version the client might meet a custom type from.
    #[test]
    fn rows_round_trip_through_the_server_encoder() {
        let rows = Rows {
            metadata: Arc::new(RowsMetadata {
                columns: vec![
                    spec("k", ColumnType::text()),
                    spec("d", ColumnType::Native(CqlType::Date)),
                    spec("t", ColumnType::Time),
                    spec("du", ColumnType::Duration),
                    spec(
                        "m",
                        ColumnType::Map(
                            Box::new(ColumnType::Native(CqlType::Int)),
                            Box::new(ColumnType::List(Box::new(ColumnType::Tuple(vec![
                                ColumnType::Native(CqlType::Blob),
                                ColumnType::Counter,
                            ])))),
                        ),
                    ),
                    spec(
                        "u",
                        ColumnType::Udt {
                            keyspace: "ks".into(),
                            name: "addr".into(),
                            fields: vec![("street".into(), ColumnType::text())],
                        },
                    ),
                ],
            }),
            rows: vec![
                vec![Some(b"a".to_vec()), None, None, None, None, None],
                vec![Some(vec![]), Some(vec![1, 2, 3, 4]), None, None, None, None],
            ],
            paging_state: Some(vec![9, 9]),
        };
        for version in [3u8, 4, 5] {
            let body = response::rows(
                &rows,
                version,
                MetadataMode {
                    skip: false,
                    client_id: None,
                },
            );
            match decode_result(&body).expect("decodes") {
                QueryResult::Rows(back) => assert_eq!(back, rows, "v{version}"),
                other => panic!("{other:?}"),
            }
        }
    }

    #[test]
    fn schema_change_and_set_keyspace_round_trip() {
        let c = SchemaChange {
            kind: SchemaChangeKind::Dropped,
            target: SchemaTarget::Table {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        };
        assert_eq!(
            decode_result(&response::schema_change(&c)).expect("decodes"),
            QueryResult::SchemaChange(c)
        );
        assert_eq!(
            decode_result(&response::set_keyspace("ks")).expect("decodes"),
            QueryResult::SetKeyspace("ks".into())
        );
        assert_eq!(
            decode_result(&response::void()).expect("decodes"),
            QueryResult::Void
        );
    }

    #[test]
    fn claimed_counts_past_the_body_are_refused_before_allocating() {
        let mut body = Vec::new();
        body.put_int(kind::ROWS);
        body.put_int(metadata_flags::GLOBAL_TABLES_SPEC);
        body.put_int(i32::MAX);
        body.put_string("ks");
        body.put_string("t");
        assert!(decode_result(&body).is_err());

        let mut body = Vec::new();
        body.put_int(kind::ROWS);
        body.put_int(0);
        body.put_int(1);
        body.put_string("ks");
        body.put_string("t");
        body.put_string("c");
        body.put_short(0x0009);
        body.put_int(i32::MAX);
        assert!(decode_result(&body).is_err());
    }

    #[test]
    fn deeply_nested_types_are_refused() {
        let mut body = Vec::new();
        body.put_int(kind::ROWS);
        body.put_int(metadata_flags::GLOBAL_TABLES_SPEC);
        body.put_int(1);
        body.put_string("ks");
        body.put_string("t");
        body.put_string("c");
        for _ in 0..10_000 {
            body.put_short(0x0020);
        }
        body.put_short(0x0009);
        body.put_int(0);
        let e = decode_result(&body).expect_err("refused");
        assert!(e.to_string().contains("nested"), "{e}");
    }

    proptest::proptest! {
        /// No byte string panics the decoder (contract 2).
        #[test]
        fn arbitrary_result_bodies_never_panic(body in proptest::collection::vec(proptest::num::u8::ANY, 0..512)) {
            let _ = decode_result(&body);
        }

        /// Nor does a valid body with bytes changed.
        #[test]
        fn mutated_rows_bodies_never_panic(at in 0usize..200, byte in proptest::num::u8::ANY) {
            let rows = Rows {
                metadata: Arc::new(RowsMetadata {
                    columns: vec![spec("k", ColumnType::text()), spec("v", ColumnType::Set(Box::new(ColumnType::Native(CqlType::Int))))],
                }),
                rows: vec![vec![Some(b"key".to_vec()), Some(vec![0, 0, 0, 0])]],
                paging_state: Some(vec![1]),
            };
            let mut body = response::rows(&rows, 4, MetadataMode { skip: false, client_id: None });
            let i = at % body.len();
            body[i] = byte;
            let _ = decode_result(&body);
        }
    }
}
