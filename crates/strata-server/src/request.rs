//! Request bodies (section 4.1 of the spec) decoded into typed requests.
//!
//! Owns the layout of every request a client may send in v3, v4 and v5: the
//! query parameters and their flags, BATCH items, v5's PREPARE flags, the
//! custom payload a request may carry. Pure functions, any thread.
//!
//! Invariants:
//! 1. Decoding reads only the body it is given, through [`Reader`] (bounded
//!    lengths, no panic); any byte layout either decodes or is a
//!    [`WireError`] the connection answers as a protocol error.
//! 2. Version differences follow the spec and Cassandra's codecs: v5's query
//!    flags are an `[int]` (a `[byte]` before), "not set" values exist from
//!    v4, v5 adds the keyspace and "now in seconds" fields and PREPARE flags.
//! 3. Trailing bytes after a message are ignored, as Cassandra ignores them
//!    (the spec reserves them for extensions).

use crate::frame::{flags, Opcode};
use crate::wire::{Reader, WireError, WireResult};
use strata::cql::ast::BatchKind;
use strata::query::{BoundValue, QueryParams, Values};

/// Query flags (section 4.1.4).
pub mod query_flags {
    pub const VALUES: u32 = 0x01;
    pub const SKIP_METADATA: u32 = 0x02;
    pub const PAGE_SIZE: u32 = 0x04;
    pub const PAGING_STATE: u32 = 0x08;
    pub const SERIAL_CONSISTENCY: u32 = 0x10;
    pub const DEFAULT_TIMESTAMP: u32 = 0x20;
    pub const NAMES_FOR_VALUES: u32 = 0x40;
    /// v5.
    pub const KEYSPACE: u32 = 0x80;
    /// v5.
    pub const NOW_IN_SECONDS: u32 = 0x100;
}

/// The event types a connection may REGISTER for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventType {
    TopologyChange,
    StatusChange,
    SchemaChange,
}

impl EventType {
    pub fn parse(s: &str) -> Option<EventType> {
        match s {
            "TOPOLOGY_CHANGE" => Some(EventType::TopologyChange),
            "STATUS_CHANGE" => Some(EventType::StatusChange),
            "SCHEMA_CHANGE" => Some(EventType::SchemaChange),
            _ => None,
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryRequest {
    pub text: String,
    pub params: QueryParams,
    pub skip_metadata: bool,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ExecuteRequest {
    pub id: Vec<u8>,
    /// v5: the result metadata id the client holds.
    pub result_metadata_id: Option<Vec<u8>>,
    pub params: QueryParams,
    pub skip_metadata: bool,
}

/// A BATCH item before prepared ids are looked up.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RawBatchItem {
    Query { text: String, values: Values },
    Prepared { id: Vec<u8>, values: Values },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BatchRequest {
    pub kind: BatchKind,
    pub items: Vec<RawBatchItem>,
    pub params: QueryParams,
}

/// A decoded request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Request {
    /// Options with their keys upper-cased, as Cassandra reads them.
    Startup(Vec<(String, String)>),
    Options,
    Query(QueryRequest),
    Prepare {
        text: String,
        /// v5: the keyspace to prepare in.
        keyspace: Option<String>,
    },
    Execute(ExecuteRequest),
    Batch(BatchRequest),
    Register(Vec<EventType>),
    /// The SASL token (`None`: a null `[bytes]`).
    AuthResponse(Option<Vec<u8>>),
}

/// Decodes the body of a request with `opcode`, sent with header `frame_flags`
/// on a connection speaking `version`.
pub fn decode(version: u8, frame_flags: u8, opcode: Opcode, body: &[u8]) -> WireResult<Request> {
    let mut r = Reader::new(body);
    // A custom payload comes first in QUERY, PREPARE, EXECUTE and BATCH
    // (v4+); the default query handler ignores it, and so does Strata.
    let takes_payload = matches!(
        opcode,
        Opcode::Query | Opcode::Prepare | Opcode::Execute | Opcode::Batch
    );
    if version >= 4 && frame_flags & flags::CUSTOM_PAYLOAD != 0 && takes_payload {
        r.skip_bytes_map()?;
    }
    match opcode {
        Opcode::Startup => {
            let options = r
                .string_map()?
                .into_iter()
                .map(|(k, v)| (k.to_uppercase(), v))
                .collect();
            Ok(Request::Startup(options))
        }
        Opcode::Options => Ok(Request::Options),
        Opcode::Query => {
            let text = r.long_string()?.to_string();
            let (params, skip_metadata) = query_params(&mut r, version)?;
            Ok(Request::Query(QueryRequest {
                text,
                params,
                skip_metadata,
            }))
        }
        Opcode::Prepare => {
            let text = r.long_string()?.to_string();
            let mut keyspace = None;
            if version >= 5 {
                let f = r.int()? as u32;
                if f & 0x01 != 0 {
                    keyspace = Some(r.string()?.to_string());
                }
            }
            Ok(Request::Prepare { text, keyspace })
        }
        Opcode::Execute => {
            let id = r.short_bytes()?.to_vec();
            let result_metadata_id = if version >= 5 {
                Some(r.short_bytes()?.to_vec())
            } else {
                None
            };
            let (params, skip_metadata) = query_params(&mut r, version)?;
            Ok(Request::Execute(ExecuteRequest {
                id,
                result_metadata_id,
                params,
                skip_metadata,
            }))
        }
        Opcode::Batch => batch(&mut r, version).map(Request::Batch),
        Opcode::Register => {
            let names = r.string_list()?;
            let mut types = Vec::with_capacity(names.len());
            for n in names {
                match EventType::parse(&n) {
                    Some(t) => types.push(t),
                    None => {
                        return Err(WireError(format!("Invalid value '{n}' for Type")));
                    }
                }
            }
            Ok(Request::Register(types))
        }
        Opcode::AuthResponse => Ok(Request::AuthResponse(r.bytes()?.map(<[u8]>::to_vec))),
        other => Err(WireError(format!(
            "Wrong protocol direction (expected REQUEST, got RESPONSE) for opcode {} ({})",
            other as u8,
            other.name()
        ))),
    }
}

fn values(r: &mut Reader<'_>, version: u8, named: bool) -> WireResult<Values> {
    let n = r.short()? as usize;
    // Each value takes at least its 4-byte length (and a name 2 more).
    let cap = n.min(r.remaining() / 4);
    if named {
        let mut v = Vec::with_capacity(cap);
        for _ in 0..n {
            let name = r.string()?.to_string();
            v.push((name, r.value(version)?));
        }
        Ok(Values::Named(v))
    } else {
        let mut v: Vec<BoundValue> = Vec::with_capacity(cap);
        for _ in 0..n {
            v.push(r.value(version)?);
        }
        Ok(Values::Positional(v))
    }
}

fn timestamp(r: &mut Reader<'_>) -> WireResult<i64> {
    let ts = r.long()?;
    if ts == i64::MIN {
        return Err(WireError(format!(
            "Out of bound timestamp, must be in [{}, {}] (got {ts})",
            i64::MIN + 1,
            i64::MAX
        )));
    }
    Ok(ts)
}

/// `<consistency><flags>[...]` of QUERY and EXECUTE; also whether the client
/// asked to skip the result metadata.
fn query_params(r: &mut Reader<'_>, version: u8) -> WireResult<(QueryParams, bool)> {
    use query_flags::*;
    let consistency = r.consistency()?;
    let f = if version >= 5 {
        r.int()? as u32
    } else {
        r.byte()? as u32
    };
    let mut p = QueryParams {
        consistency,
        ..QueryParams::default()
    };
    if f & VALUES != 0 {
        p.values = values(r, version, f & NAMES_FOR_VALUES != 0)?;
    }
    if f & PAGE_SIZE != 0 {
        let n = r.int()?;
        p.page_size = (n > 0).then_some(n as u32);
    }
    if f & PAGING_STATE != 0 {
        p.paging_state = r.bytes()?.map(<[u8]>::to_vec);
    }
    if f & SERIAL_CONSISTENCY != 0 {
        p.serial_consistency = Some(r.consistency()?);
    }
    if f & DEFAULT_TIMESTAMP != 0 {
        p.timestamp_micros = Some(timestamp(r)?);
    }
    if version >= 5 {
        if f & KEYSPACE != 0 {
            p.keyspace = Some(r.string()?.to_string());
        }
        if f & NOW_IN_SECONDS != 0 {
            p.now_seconds = Some(r.int()?);
        }
    }
    Ok((p, f & SKIP_METADATA != 0))
}

fn batch(r: &mut Reader<'_>, version: u8) -> WireResult<BatchRequest> {
    use query_flags::*;
    let kind = match r.byte()? {
        0 => BatchKind::Logged,
        1 => BatchKind::Unlogged,
        2 => BatchKind::Counter,
        t => return Err(WireError(format!("Invalid BATCH message type {t}"))),
    };
    let n = r.short()? as usize;
    // An item takes at least 1 + 2 + 2 bytes.
    let mut items = Vec::with_capacity(n.min(r.remaining() / 5));
    for _ in 0..n {
        let item = match r.byte()? {
            0 => {
                let text = r.long_string()?.to_string();
                RawBatchItem::Query {
                    text,
                    values: values(r, version, false)?,
                }
            }
            1 => {
                let id = r.short_bytes()?.to_vec();
                RawBatchItem::Prepared {
                    id,
                    values: values(r, version, false)?,
                }
            }
            k => {
                return Err(WireError(format!(
                    "Invalid query kind in BATCH messages. Must be 0 or 1 but got {k}"
                )))
            }
        };
        items.push(item);
    }
    let consistency = r.consistency()?;
    let f = if version >= 5 {
        r.int()? as u32
    } else {
        r.byte()? as u32
    };
    // The names flag comes after the values it would name: the spec says it
    // cannot work (CASSANDRA-10246), and Cassandra refuses it.
    if f & NAMES_FOR_VALUES != 0 {
        return Err(WireError::new(
            "Named values are not supported in BATCH messages",
        ));
    }
    let mut params = QueryParams {
        consistency,
        ..QueryParams::default()
    };
    if f & SERIAL_CONSISTENCY != 0 {
        params.serial_consistency = Some(r.consistency()?);
    }
    if f & DEFAULT_TIMESTAMP != 0 {
        params.timestamp_micros = Some(timestamp(r)?);
    }
    if version >= 5 {
        if f & KEYSPACE != 0 {
            params.keyspace = Some(r.string()?.to_string());
        }
        if f & NOW_IN_SECONDS != 0 {
            params.now_seconds = Some(r.int()?);
        }
    }
    Ok(BatchRequest {
        kind,
        items,
        params,
    })
}

/// Encoders of requests: the test client's half, kept beside the decoder so
/// that each layout is written once and checked by round trips.
pub mod encode {
    use super::*;
    use crate::wire::Writer;
    use strata::query::Consistency;

    pub fn values(out: &mut Vec<u8>, v: &Values) {
        match v {
            Values::None => out.put_short(0),
            Values::Positional(vs) => {
                out.put_short(vs.len() as u16);
                for b in vs {
                    bound(out, b);
                }
            }
            Values::Named(vs) => {
                out.put_short(vs.len() as u16);
                for (n, b) in vs {
                    out.put_string(n);
                    bound(out, b);
                }
            }
        }
    }

    fn bound(out: &mut Vec<u8>, b: &BoundValue) {
        match b {
            BoundValue::Value(v) => out.put_bytes(Some(v)),
            BoundValue::Null => out.put_int(-1),
            BoundValue::Unset => out.put_int(-2),
        }
    }

    /// `<consistency><flags>...` for QUERY and EXECUTE.
    pub fn query_params(out: &mut Vec<u8>, version: u8, p: &QueryParams, skip_metadata: bool) {
        use query_flags::*;
        let mut f = 0u32;
        if !matches!(p.values, Values::None) {
            f |= VALUES;
        }
        if matches!(p.values, Values::Named(_)) {
            f |= NAMES_FOR_VALUES;
        }
        if skip_metadata {
            f |= SKIP_METADATA;
        }
        if p.page_size.is_some() {
            f |= PAGE_SIZE;
        }
        if p.paging_state.is_some() {
            f |= PAGING_STATE;
        }
        if p.serial_consistency.is_some() {
            f |= SERIAL_CONSISTENCY;
        }
        if p.timestamp_micros.is_some() {
            f |= DEFAULT_TIMESTAMP;
        }
        if version >= 5 && p.keyspace.is_some() {
            f |= KEYSPACE;
        }
        if version >= 5 && p.now_seconds.is_some() {
            f |= NOW_IN_SECONDS;
        }
        out.put_short(p.consistency.code());
        if version >= 5 {
            out.put_int(f as i32);
        } else {
            out.put_byte(f as u8);
        }
        if f & VALUES != 0 {
            values(out, &p.values);
        }
        if let Some(n) = p.page_size {
            out.put_int(n as i32);
        }
        if let Some(s) = &p.paging_state {
            out.put_bytes(Some(s));
        }
        if let Some(c) = p.serial_consistency {
            out.put_short(c.code());
        }
        if let Some(t) = p.timestamp_micros {
            out.put_long(t);
        }
        if version >= 5 {
            if let Some(k) = &p.keyspace {
                out.put_string(k);
            }
            if let Some(n) = p.now_seconds {
                out.put_int(n);
            }
        }
    }

    pub fn query(version: u8, text: &str, p: &QueryParams, skip_metadata: bool) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_long_string(text);
        query_params(&mut out, version, p, skip_metadata);
        out
    }

    pub fn execute(
        version: u8,
        id: &[u8],
        result_metadata_id: Option<&[u8]>,
        p: &QueryParams,
        skip_metadata: bool,
    ) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_short_bytes(id);
        if version >= 5 {
            out.put_short_bytes(result_metadata_id.unwrap_or(&[]));
        }
        query_params(&mut out, version, p, skip_metadata);
        out
    }

    pub fn prepare(version: u8, text: &str, keyspace: Option<&str>) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_long_string(text);
        if version >= 5 {
            out.put_int(keyspace.is_some() as i32);
            if let Some(k) = keyspace {
                out.put_string(k);
            }
        }
        out
    }

    pub fn batch(version: u8, b: &BatchRequest) -> Vec<u8> {
        use query_flags::*;
        let mut out = Vec::new();
        out.put_byte(match b.kind {
            BatchKind::Logged => 0,
            BatchKind::Unlogged => 1,
            BatchKind::Counter => 2,
        });
        out.put_short(b.items.len() as u16);
        for item in &b.items {
            match item {
                RawBatchItem::Query { text, values: v } => {
                    out.put_byte(0);
                    out.put_long_string(text);
                    values(&mut out, v);
                }
                RawBatchItem::Prepared { id, values: v } => {
                    out.put_byte(1);
                    out.put_short_bytes(id);
                    values(&mut out, v);
                }
            }
        }
        let p = &b.params;
        out.put_short(p.consistency.code());
        let mut f = 0u32;
        if p.serial_consistency.is_some() {
            f |= SERIAL_CONSISTENCY;
        }
        if p.timestamp_micros.is_some() {
            f |= DEFAULT_TIMESTAMP;
        }
        if version >= 5 && p.keyspace.is_some() {
            f |= KEYSPACE;
        }
        if version >= 5 && p.now_seconds.is_some() {
            f |= NOW_IN_SECONDS;
        }
        if version >= 5 {
            out.put_int(f as i32);
        } else {
            out.put_byte(f as u8);
        }
        if let Some(c) = p.serial_consistency {
            out.put_short(c.code());
        }
        if let Some(t) = p.timestamp_micros {
            out.put_long(t);
        }
        if version >= 5 {
            if let Some(k) = &p.keyspace {
                out.put_string(k);
            }
            if let Some(n) = p.now_seconds {
                out.put_int(n);
            }
        }
        out
    }

    pub fn startup(options: &[(&str, &str)]) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_short(options.len() as u16);
        for (k, v) in options {
            out.put_string(k);
            out.put_string(v);
        }
        out
    }

    pub fn register(types: &[&str]) -> Vec<u8> {
        let mut out = Vec::new();
        let owned: Vec<String> = types.iter().map(|s| s.to_string()).collect();
        out.put_string_list(&owned);
        out
    }

    pub fn auth_response(token: Option<&[u8]>) -> Vec<u8> {
        let mut out = Vec::new();
        out.put_bytes(token);
        out
    }

    /// The default `QueryParams` at consistency ONE.
    pub fn one() -> QueryParams {
        QueryParams {
            consistency: Consistency::One,
            ..QueryParams::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use strata::query::Consistency;

    fn full_params() -> QueryParams {
        QueryParams {
            consistency: Consistency::LocalQuorum,
            values: Values::Positional(vec![
                BoundValue::Value(vec![0, 0, 0, 7]),
                BoundValue::Null,
                BoundValue::Unset,
            ]),
            page_size: Some(100),
            paging_state: Some(vec![1, 2, 3]),
            serial_consistency: Some(Consistency::LocalSerial),
            timestamp_micros: Some(1_700_000_000_000_000),
            keyspace: None,
            now_seconds: None,
        }
    }

    #[test]
    fn query_round_trips_in_every_version() {
        for version in [3u8, 4, 5] {
            let mut p = full_params();
            if version == 3 {
                p.values = Values::Positional(vec![BoundValue::Null]);
            }
            if version == 5 {
                p.keyspace = Some("ks".into());
                p.now_seconds = Some(1234);
            }
            let body = encode::query(version, "SELECT 1", &p, true);
            let r = decode(version, 0, Opcode::Query, &body).unwrap();
            assert_eq!(
                r,
                Request::Query(QueryRequest {
                    text: "SELECT 1".into(),
                    params: p,
                    skip_metadata: true
                }),
                "v{version}"
            );
        }
    }

    #[test]
    fn named_values_and_custom_payload() {
        let p = QueryParams {
            values: Values::Named(vec![("k".into(), BoundValue::Value(vec![1]))]),
            ..encode::one()
        };
        let mut body = Vec::new();
        // A custom payload with one entry, skipped.
        {
            use crate::wire::Writer;
            body.put_short(1);
            body.put_string("key");
            body.put_bytes(Some(b"v"));
        }
        body.extend(encode::query(4, "SELECT :k", &p, false));
        let r = decode(4, flags::CUSTOM_PAYLOAD, Opcode::Query, &body).unwrap();
        match r {
            Request::Query(q) => assert_eq!(q.params, p),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn execute_prepare_batch_round_trip() {
        let p = full_params();
        let body = encode::execute(5, &[9; 16], Some(&[8; 16]), &p, false);
        assert_eq!(
            decode(5, 0, Opcode::Execute, &body).unwrap(),
            Request::Execute(ExecuteRequest {
                id: vec![9; 16],
                result_metadata_id: Some(vec![8; 16]),
                params: p.clone(),
                skip_metadata: false,
            })
        );
        let body = encode::prepare(5, "SELECT x FROM t", Some("ks"));
        assert_eq!(
            decode(5, 0, Opcode::Prepare, &body).unwrap(),
            Request::Prepare {
                text: "SELECT x FROM t".into(),
                keyspace: Some("ks".into())
            }
        );
        let b = BatchRequest {
            kind: BatchKind::Unlogged,
            items: vec![
                RawBatchItem::Query {
                    text: "INSERT ...".into(),
                    values: Values::Positional(vec![BoundValue::Null]),
                },
                RawBatchItem::Prepared {
                    id: vec![1; 16],
                    values: Values::Positional(vec![]),
                },
            ],
            params: QueryParams {
                timestamp_micros: Some(5),
                serial_consistency: Some(Consistency::Serial),
                ..encode::one()
            },
        };
        for version in [4u8, 5] {
            let body = encode::batch(version, &b);
            assert_eq!(
                decode(version, 0, Opcode::Batch, &body).unwrap(),
                Request::Batch(b.clone())
            );
        }
    }

    #[test]
    fn bad_layouts_are_errors() {
        assert!(decode(4, 0, Opcode::Register, &encode::register(&["NOPE"])).is_err());
        assert_eq!(
            decode(
                4,
                0,
                Opcode::Register,
                &encode::register(&["SCHEMA_CHANGE"])
            )
            .unwrap(),
            Request::Register(vec![EventType::SchemaChange])
        );
        // Batch type 3, query kind 2, names flag.
        assert!(decode(4, 0, Opcode::Batch, &[3, 0, 0]).is_err());
        assert!(decode(4, 0, Opcode::Batch, &[0, 0, 1, 2]).is_err());
        assert!(decode(4, 0, Opcode::Batch, &[0, 0, 0, 0, 1, 0x40]).is_err());
        // Unknown consistency, truncated timestamp, i64::MIN timestamp.
        let mut body = encode::query(4, "x", &encode::one(), false);
        let cl_at = body.len() - 3;
        body[cl_at] = 0x7F;
        assert!(decode(4, 0, Opcode::Query, &body).is_err());
        let p = QueryParams {
            timestamp_micros: Some(i64::MIN),
            ..encode::one()
        };
        assert!(decode(4, 0, Opcode::Query, &encode::query(4, "x", &p, false)).is_err());
        assert!(decode(4, 0, Opcode::Result, &[]).is_err());
        // Startup keys are upper-cased.
        assert_eq!(
            decode(
                4,
                0,
                Opcode::Startup,
                &encode::startup(&[("cql_version", "3.0.0")])
            )
            .unwrap(),
            Request::Startup(vec![("CQL_VERSION".into(), "3.0.0".into())])
        );
    }
}
