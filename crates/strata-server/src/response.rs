//! Response bodies (section 4.2 of the spec): ERROR with each code's fields,
//! SUPPORTED, AUTHENTICATE, RESULT of every kind with its metadata, EVENT.
//!
//! Owns the mapping of the executor's values ([`QueryError`], [`Response`],
//! [`Prepared`], [`ColumnType`]) onto bytes for a protocol version. Pure
//! functions, any thread.
//!
//! Invariants:
//! 1. Every `ColumnType` has an encoding in every version: types a version
//!    has no option id for (date, time, smallint, tinyint before v4; duration
//!    before v5) are written as the custom type naming Cassandra's marshal
//!    class, as Cassandra's `DataType` does, so a v3 client still reads them.
//! 2. Every error code is written with the extra fields its version defines;
//!    codes v3 lacks (read/write/function failure) are written as the v3 code
//!    Cassandra substitutes (`ErrorMessage.encode`).
//! 3. Result metadata is written with the global table spec when every column
//!    comes from one table, as Cassandra does; with `No_metadata` only when
//!    the client asked to skip it and (v5) holds the current metadata id;
//!    with `Metadata_changed` and the new id when it holds another (v5).

use crate::wire::Writer;
use std::net::IpAddr;
use strata::cql::CqlErrorKind;
use strata::query::{
    ColumnSpec, ColumnType, Consistency, ErrorDetail, Prepared, QueryError, Rows, RowsMetadata,
    SchemaChange, SchemaTarget,
};
use strata::types::CqlType;

/// Result kinds (section 4.2.5).
pub mod kind {
    pub const VOID: i32 = 0x0001;
    pub const ROWS: i32 = 0x0002;
    pub const SET_KEYSPACE: i32 = 0x0003;
    pub const PREPARED: i32 = 0x0004;
    pub const SCHEMA_CHANGE: i32 = 0x0005;
}

/// Rows metadata flags (section 4.2.5.2).
pub mod metadata_flags {
    pub const GLOBAL_TABLES_SPEC: i32 = 0x0001;
    pub const HAS_MORE_PAGES: i32 = 0x0002;
    pub const NO_METADATA: i32 = 0x0004;
    /// v5.
    pub const METADATA_CHANGED: i32 = 0x0008;
}

/// The context an error body needs beyond the error: the request's
/// consistency, and this node's address for v5's failure reason maps.
#[derive(Clone, Copy, Debug)]
pub struct ErrorContext {
    pub consistency: Consistency,
    pub node: IpAddr,
}

/// An ERROR body (invariant 2).
pub fn error(e: &QueryError, version: u8, ctx: ErrorContext) -> Vec<u8> {
    let mut kind = e.kind;
    if version < 4 {
        kind = match kind {
            CqlErrorKind::ReadFailure => CqlErrorKind::ReadTimeout,
            CqlErrorKind::WriteFailure => CqlErrorKind::WriteTimeout,
            CqlErrorKind::FunctionFailure => CqlErrorKind::Invalid,
            k => k,
        };
    }
    let mut out = Vec::with_capacity(16 + e.message.len());
    out.put_int(kind.code() as i32);
    out.put_string(&e.message);
    let cl = ctx.consistency.code();
    // The executor reports these kinds without replica counts: on one node,
    // one replica was required and none answered in time.
    let (received, block_for) = (0, 1);
    match kind {
        CqlErrorKind::Unavailable => {
            out.put_short(cl);
            out.put_int(1); // required
            out.put_int(0); // alive
        }
        CqlErrorKind::WriteTimeout => {
            out.put_short(cl);
            out.put_int(received);
            out.put_int(block_for);
            out.put_string("SIMPLE");
        }
        CqlErrorKind::ReadTimeout => {
            out.put_short(cl);
            out.put_int(received);
            out.put_int(block_for);
            out.put_byte(0); // data_present
        }
        CqlErrorKind::ReadFailure => {
            out.put_short(cl);
            out.put_int(received);
            out.put_int(block_for);
            failures(&mut out, version, ctx.node);
            out.put_byte(0);
        }
        CqlErrorKind::WriteFailure => {
            out.put_short(cl);
            out.put_int(received);
            out.put_int(block_for);
            failures(&mut out, version, ctx.node);
            out.put_string("SIMPLE");
        }
        CqlErrorKind::FunctionFailure => {
            out.put_string("");
            out.put_string("");
            out.put_string_list(&[]);
        }
        CqlErrorKind::AlreadyExists => {
            let (ks, table) = match &e.detail {
                ErrorDetail::AlreadyExists { keyspace, table } => {
                    (keyspace.as_str(), table.as_str())
                }
                _ => ("", ""),
            };
            out.put_string(ks);
            out.put_string(table);
        }
        CqlErrorKind::Unprepared => {
            let id: &[u8] = match &e.detail {
                ErrorDetail::Unprepared { id } => id,
                _ => &[],
            };
            out.put_short_bytes(id);
        }
        _ => {}
    }
    out
}

/// v5's `<reasonmap>` (one failure, this node, code 0x0000 UNKNOWN) or v4's
/// `<numfailures>`.
fn failures(out: &mut Vec<u8>, version: u8, node: IpAddr) {
    if version >= 5 {
        out.put_int(1);
        out.put_inetaddr(node);
        out.put_short(0);
    } else {
        out.put_int(1);
    }
}

/// A SUPPORTED body.
pub fn supported(entries: &[(String, Vec<String>)]) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_string_multimap(entries);
    out
}

/// An AUTHENTICATE body.
pub fn authenticate(class_name: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_string(class_name);
    out
}

/// An AUTH_SUCCESS or AUTH_CHALLENGE body.
pub fn auth_token(token: Option<&[u8]>) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_bytes(token);
    out
}

pub fn void() -> Vec<u8> {
    let mut out = Vec::with_capacity(4);
    out.put_int(kind::VOID);
    out
}

pub fn set_keyspace(keyspace: &str) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_int(kind::SET_KEYSPACE);
    out.put_string(keyspace);
    out
}

/// `<change_type><target><options>` of a schema change result or event.
fn schema_change_fields(out: &mut Vec<u8>, c: &SchemaChange) {
    out.put_string(c.kind.name());
    match &c.target {
        SchemaTarget::Keyspace(ks) => {
            out.put_string("KEYSPACE");
            out.put_string(ks);
        }
        SchemaTarget::Table { keyspace, table } => {
            out.put_string("TABLE");
            out.put_string(keyspace);
            out.put_string(table);
        }
        SchemaTarget::Type { keyspace, name } => {
            out.put_string("TYPE");
            out.put_string(keyspace);
            out.put_string(name);
        }
    }
}

pub fn schema_change(c: &SchemaChange) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_int(kind::SCHEMA_CHANGE);
    schema_change_fields(&mut out, c);
    out
}

/// An EVENT body for a schema change.
pub fn schema_change_event(c: &SchemaChange) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_string("SCHEMA_CHANGE");
    schema_change_fields(&mut out, c);
    out
}

/// Cassandra's full marshal type name (`AbstractType.toString`), as a
/// custom type carries it: `org.apache.cassandra.db.marshal.VectorType(
/// org.apache.cassandra.db.marshal.FloatType,3)`.
fn marshal_name(ty: &ColumnType) -> String {
    const P: &str = "org.apache.cassandra.db.marshal.";
    let list = |items: &[ColumnType]| items.iter().map(marshal_name).collect::<Vec<_>>().join(",");
    match ty.unfrozen() {
        ColumnType::Native(t) => {
            let n = match t {
                CqlType::Ascii => "AsciiType",
                CqlType::BigInt => "LongType",
                CqlType::Blob => "BytesType",
                CqlType::Boolean => "BooleanType",
                CqlType::Decimal => "DecimalType",
                CqlType::Double => "DoubleType",
                CqlType::Float => "FloatType",
                CqlType::Int => "Int32Type",
                CqlType::Timestamp => "TimestampType",
                CqlType::Uuid => "UUIDType",
                CqlType::Text => "UTF8Type",
                CqlType::Varint => "IntegerType",
                CqlType::TimeUuid => "TimeUUIDType",
                CqlType::Inet => "InetAddressType",
                CqlType::Date => "SimpleDateType",
                CqlType::SmallInt => "ShortType",
                CqlType::TinyInt => "ByteType",
                CqlType::Time => "TimeType",
                CqlType::Duration => "DurationType",
                CqlType::Counter => "CounterColumnType",
                other => return marshal_name(&ColumnType::of(other)),
            };
            format!("{P}{n}")
        }
        ColumnType::Counter => format!("{P}CounterColumnType"),
        ColumnType::Time => format!("{P}TimeType"),
        ColumnType::Duration => format!("{P}DurationType"),
        ColumnType::List(e) => format!("{P}ListType({})", marshal_name(e)),
        ColumnType::Set(e) => format!("{P}SetType({})", marshal_name(e)),
        ColumnType::Map(k, v) => format!("{P}MapType({},{})", marshal_name(k), marshal_name(v)),
        ColumnType::Tuple(items) => format!("{P}TupleType({})", list(items)),
        ColumnType::Udt {
            keyspace,
            name,
            fields,
        } => {
            let hex: String = name.bytes().map(|b| format!("{b:02x}")).collect();
            let parts: Vec<String> = fields
                .iter()
                .map(|(n, t)| {
                    let h: String = n.bytes().map(|b| format!("{b:02x}")).collect();
                    format!("{h}:{}", marshal_name(t))
                })
                .collect();
            format!("{P}UserType({keyspace},{hex},{})", parts.join(","))
        }
        ColumnType::Vector(e, n) => format!("{P}VectorType({},{n})", marshal_name(e)),
        ColumnType::Custom(class) => class.clone(),
        ColumnType::Frozen(inner) => marshal_name(inner),
    }
}

/// A type `[option]` (invariant 1).
pub fn column_type(out: &mut Vec<u8>, ty: &ColumnType, version: u8) {
    let ty = ty.unfrozen();
    // The option ids of the basic native types; `None` for the types with
    // an option of their own (time, duration, counter, composites).
    let native = |t: &CqlType| -> Option<u16> {
        Some(match t {
            CqlType::Ascii => 0x0001,
            CqlType::BigInt => 0x0002,
            CqlType::Blob => 0x0003,
            CqlType::Boolean => 0x0004,
            CqlType::Decimal => 0x0006,
            CqlType::Double => 0x0007,
            CqlType::Float => 0x0008,
            CqlType::Int => 0x0009,
            CqlType::Timestamp => 0x000B,
            CqlType::Uuid => 0x000C,
            CqlType::Text => 0x000D,
            CqlType::Varint => 0x000E,
            CqlType::TimeUuid => 0x000F,
            CqlType::Inet => 0x0010,
            CqlType::Date => 0x0011,
            CqlType::SmallInt => 0x0013,
            CqlType::TinyInt => 0x0014,
            _ => return None,
        })
    };
    match ty {
        ColumnType::Native(t @ (CqlType::Date | CqlType::SmallInt | CqlType::TinyInt))
            if version < 4 =>
        {
            out.put_short(0x0000);
            out.put_string(&marshal_name(&ColumnType::Native(t.clone())));
        }
        ColumnType::Native(t) => match native(t) {
            Some(id) => out.put_short(id),
            None => column_type(out, &ColumnType::of(t), version),
        },
        ColumnType::Counter => out.put_short(0x0005),
        ColumnType::Time if version < 4 => {
            out.put_short(0x0000);
            out.put_string(&marshal_name(ty));
        }
        ColumnType::Time => out.put_short(0x0012),
        ColumnType::Duration if version < 5 => {
            out.put_short(0x0000);
            out.put_string(&marshal_name(ty));
        }
        ColumnType::Duration => out.put_short(0x0015),
        ColumnType::List(e) => {
            out.put_short(0x0020);
            column_type(out, e, version);
        }
        ColumnType::Map(k, v) => {
            out.put_short(0x0021);
            column_type(out, k, version);
            column_type(out, v, version);
        }
        ColumnType::Set(e) => {
            out.put_short(0x0022);
            column_type(out, e, version);
        }
        ColumnType::Udt {
            keyspace,
            name,
            fields,
        } => {
            out.put_short(0x0030);
            out.put_string(keyspace);
            out.put_string(name);
            out.put_short(fields.len() as u16);
            for (n, t) in fields {
                out.put_string(n);
                column_type(out, t, version);
            }
        }
        ColumnType::Vector(..) => {
            out.put_short(0x0000);
            out.put_string(&marshal_name(ty));
        }
        ColumnType::Tuple(items) => {
            out.put_short(0x0031);
            out.put_short(items.len() as u16);
            for t in items {
                column_type(out, t, version);
            }
        }
        ColumnType::Custom(class) => {
            out.put_short(0x0000);
            out.put_string(class);
        }
        ColumnType::Frozen(inner) => column_type(out, inner, version),
    }
}

/// Whether every column comes from one table (and there is one).
fn global_spec(columns: &[ColumnSpec]) -> Option<(&str, &str)> {
    let first = columns.first()?;
    columns
        .iter()
        .all(|c| c.keyspace == first.keyspace && c.table == first.table)
        .then_some((first.keyspace.as_str(), first.table.as_str()))
}

/// `[<global_table_spec>]<col_spec_1>...<col_spec_n>` after the flags.
fn column_specs(out: &mut Vec<u8>, columns: &[ColumnSpec], global: bool, version: u8) {
    if global {
        if let Some(first) = columns.first() {
            out.put_string(&first.keyspace);
            out.put_string(&first.table);
        }
    }
    for c in columns {
        if !global {
            out.put_string(&c.keyspace);
            out.put_string(&c.table);
        }
        out.put_string(&c.name);
        column_type(out, &c.ty, version);
    }
}

/// How a Rows result's metadata is written (invariant 3).
#[derive(Clone, Copy, Debug, Default)]
pub struct MetadataMode<'a> {
    /// The client set Skip_metadata.
    pub skip: bool,
    /// v5 EXECUTE: the result metadata id the client holds.
    pub client_id: Option<&'a [u8]>,
}

fn rows_metadata(
    out: &mut Vec<u8>,
    m: &RowsMetadata,
    paging_state: Option<&[u8]>,
    version: u8,
    mode: MetadataMode<'_>,
) {
    let mut flags = 0;
    let global = global_spec(&m.columns).is_some();
    let mut new_id = None;
    if version >= 5 {
        if let Some(client_id) = mode.client_id {
            let id = m.id();
            if client_id != id {
                new_id = Some(id);
                flags |= metadata_flags::METADATA_CHANGED;
            }
        }
    }
    let no_metadata = mode.skip && new_id.is_none();
    if no_metadata {
        flags |= metadata_flags::NO_METADATA;
    } else if global {
        flags |= metadata_flags::GLOBAL_TABLES_SPEC;
    }
    if paging_state.is_some() {
        flags |= metadata_flags::HAS_MORE_PAGES;
    }
    out.put_int(flags);
    out.put_int(m.columns.len() as i32);
    if let Some(p) = paging_state {
        out.put_bytes(Some(p));
    }
    if let Some(id) = new_id {
        out.put_short_bytes(&id);
    }
    if !no_metadata {
        column_specs(out, &m.columns, global, version);
    }
}

/// A Rows result.
pub fn rows(r: &Rows, version: u8, mode: MetadataMode<'_>) -> Vec<u8> {
    let cells: usize = r
        .rows
        .iter()
        .map(|row| {
            row.iter()
                .map(|c| 4 + c.as_ref().map_or(0, Vec::len))
                .sum::<usize>()
        })
        .sum();
    let mut out = Vec::with_capacity(64 + cells);
    out.put_int(kind::ROWS);
    rows_metadata(
        &mut out,
        &r.metadata,
        r.paging_state.as_deref(),
        version,
        mode,
    );
    out.put_int(r.rows.len() as i32);
    for row in &r.rows {
        for cell in row {
            out.put_bytes(cell.as_deref());
        }
    }
    out
}

/// A Prepared result: id, (v5) result metadata id, bind metadata with the
/// partition-key indexes (v4+), result metadata.
pub fn prepared(p: &Prepared, version: u8) -> Vec<u8> {
    let mut out = Vec::new();
    out.put_int(kind::PREPARED);
    out.put_short_bytes(&p.id);
    if version >= 5 {
        out.put_short_bytes(&p.result.id());
    }
    let global = global_spec(&p.bind).is_some();
    out.put_int(if global {
        metadata_flags::GLOBAL_TABLES_SPEC
    } else {
        0
    });
    out.put_int(p.bind.len() as i32);
    if version >= 4 {
        out.put_int(p.pk_indexes.len() as i32);
        for i in &p.pk_indexes {
            out.put_short(*i);
        }
    }
    column_specs(&mut out, &p.bind, global, version);
    if p.result.columns.is_empty() {
        // Cassandra's ResultMetadata.EMPTY for statements without rows.
        out.put_int(metadata_flags::NO_METADATA);
        out.put_int(0);
    } else {
        rows_metadata(&mut out, &p.result, None, version, MetadataMode::default());
    }
    out
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::wire::Reader;
    use std::sync::Arc;
    use strata::query::SchemaChangeKind;

    /// A column of `ks.t` (also the client's tests').
    pub(crate) fn spec(name: &str, ty: ColumnType) -> ColumnSpec {
        ColumnSpec {
            keyspace: "ks".into(),
            table: "t".into(),
            name: name.into(),
            ty,
        }
    }

    #[test]
    fn type_options_per_version() {
        let enc = |ty: ColumnType, v: u8| {
            let mut out = Vec::new();
            column_type(&mut out, &ty, v);
            out
        };
        assert_eq!(enc(ColumnType::text(), 4), [0, 0x0D]);
        assert_eq!(enc(ColumnType::Native(CqlType::Date), 4), [0, 0x11]);
        let v3 = enc(ColumnType::Native(CqlType::Date), 3);
        assert_eq!(&v3[..2], [0, 0]);
        assert!(String::from_utf8_lossy(&v3).ends_with("SimpleDateType"));
        assert_eq!(enc(ColumnType::Duration, 5), [0, 0x15]);
        assert!(String::from_utf8_lossy(&enc(ColumnType::Duration, 4)).ends_with("DurationType"));
        let map = ColumnType::Frozen(Box::new(ColumnType::Map(
            Box::new(ColumnType::text()),
            Box::new(ColumnType::List(Box::new(ColumnType::Native(CqlType::Int)))),
        )));
        assert_eq!(enc(map, 4), [0, 0x21, 0, 0x0D, 0, 0x20, 0, 0x09]);
        let udt = ColumnType::Udt {
            keyspace: "k".into(),
            name: "u".into(),
            fields: vec![("a".into(), ColumnType::Counter)],
        };
        assert_eq!(
            enc(udt, 4),
            [0, 0x30, 0, 1, b'k', 0, 1, b'u', 0, 1, 0, 1, b'a', 0, 5]
        );
        let tuple = ColumnType::Tuple(vec![ColumnType::Time, ColumnType::Native(CqlType::Blob)]);
        assert_eq!(enc(tuple, 4), [0, 0x31, 0, 2, 0, 0x12, 0, 0x03]);
        let custom = enc(ColumnType::Custom("x.Y".into()), 4);
        assert_eq!(custom, [0, 0, 0, 3, b'x', b'.', b'Y']);
    }

    #[test]
    fn rows_metadata_flags() {
        let m = Arc::new(RowsMetadata {
            columns: vec![spec("a", ColumnType::text())],
        });
        let r = Rows {
            metadata: m.clone(),
            rows: vec![vec![Some(b"x".to_vec())], vec![None]],
            paging_state: Some(vec![7]),
        };
        let body = rows(&r, 4, MetadataMode::default());
        let mut rd = Reader::new(&body);
        assert_eq!(rd.int().unwrap(), kind::ROWS);
        assert_eq!(
            rd.int().unwrap(),
            metadata_flags::GLOBAL_TABLES_SPEC | metadata_flags::HAS_MORE_PAGES
        );
        assert_eq!(rd.int().unwrap(), 1);
        assert_eq!(rd.bytes().unwrap(), Some(&[7u8][..]));
        assert_eq!(rd.string().unwrap(), "ks");
        assert_eq!(rd.string().unwrap(), "t");
        assert_eq!(rd.string().unwrap(), "a");
        assert_eq!(rd.short().unwrap(), 0x0D);
        assert_eq!(rd.int().unwrap(), 2);
        assert_eq!(rd.bytes().unwrap(), Some(&b"x"[..]));
        assert_eq!(rd.bytes().unwrap(), None);
        assert!(rd.is_empty());

        // Skipped metadata: flags, count, paging state only.
        let body = rows(
            &r,
            4,
            MetadataMode {
                skip: true,
                client_id: None,
            },
        );
        let mut rd = Reader::new(&body);
        rd.int().unwrap();
        assert_eq!(
            rd.int().unwrap(),
            metadata_flags::NO_METADATA | metadata_flags::HAS_MORE_PAGES
        );
        rd.int().unwrap();
        rd.bytes().unwrap();
        assert_eq!(rd.int().unwrap(), 2);

        // v5, the client's id is stale: changed flag, new id, full metadata.
        let body = rows(
            &r,
            5,
            MetadataMode {
                skip: true,
                client_id: Some(&[0; 16]),
            },
        );
        let mut rd = Reader::new(&body);
        rd.int().unwrap();
        let f = rd.int().unwrap();
        assert_eq!(
            f,
            metadata_flags::METADATA_CHANGED
                | metadata_flags::GLOBAL_TABLES_SPEC
                | metadata_flags::HAS_MORE_PAGES
        );
        rd.int().unwrap();
        rd.bytes().unwrap();
        assert_eq!(rd.short_bytes().unwrap(), m.id());
        // v5, the client's id is current: no metadata.
        let id = m.id();
        let body = rows(
            &r,
            5,
            MetadataMode {
                skip: true,
                client_id: Some(&id),
            },
        );
        let mut rd = Reader::new(&body);
        rd.int().unwrap();
        assert_eq!(
            rd.int().unwrap(),
            metadata_flags::NO_METADATA | metadata_flags::HAS_MORE_PAGES
        );
    }

    #[test]
    fn errors_carry_their_fields() {
        let ctx = ErrorContext {
            consistency: Consistency::Quorum,
            node: "127.0.0.1".parse().unwrap(),
        };
        let e = QueryError::already_exists("ks", "t", "Table ks.t already exists");
        let body = error(&e, 4, ctx);
        let mut rd = Reader::new(&body);
        assert_eq!(rd.int().unwrap(), 0x2400);
        assert_eq!(rd.string().unwrap(), "Table ks.t already exists");
        assert_eq!(rd.string().unwrap(), "ks");
        assert_eq!(rd.string().unwrap(), "t");
        assert!(rd.is_empty());

        let e = strata::query::Executor::unprepared(&[1, 2, 3]);
        let body = error(&e, 4, ctx);
        let mut rd = Reader::new(&body);
        assert_eq!(rd.int().unwrap(), 0x2500);
        rd.string().unwrap();
        assert_eq!(rd.short_bytes().unwrap(), [1, 2, 3]);

        let e = QueryError::new(CqlErrorKind::ReadFailure, "boom");
        let v5 = error(&e, 5, ctx);
        let mut rd = Reader::new(&v5);
        assert_eq!(rd.int().unwrap(), 0x1300);
        rd.string().unwrap();
        assert_eq!(rd.short().unwrap(), 4);
        assert_eq!((rd.int().unwrap(), rd.int().unwrap()), (0, 1));
        assert_eq!(rd.int().unwrap(), 1); // one reason
        assert_eq!(rd.take(5, "inetaddr").unwrap(), [4, 127, 0, 0, 1]);
        assert_eq!(rd.short().unwrap(), 0);
        assert_eq!(rd.byte().unwrap(), 0);
        assert!(rd.is_empty());
        // v3 has no read failure: a read timeout instead.
        let v3 = error(&e, 3, ctx);
        assert_eq!(Reader::new(&v3).int().unwrap(), 0x1200);
    }

    #[test]
    fn schema_change_layouts() {
        let c = SchemaChange {
            kind: SchemaChangeKind::Created,
            target: SchemaTarget::Table {
                keyspace: "ks".into(),
                table: "t".into(),
            },
        };
        let body = schema_change_event(&c);
        let mut rd = Reader::new(&body);
        assert_eq!(rd.string().unwrap(), "SCHEMA_CHANGE");
        assert_eq!(rd.string().unwrap(), "CREATED");
        assert_eq!(rd.string().unwrap(), "TABLE");
        assert_eq!(rd.string().unwrap(), "ks");
        assert_eq!(rd.string().unwrap(), "t");
        assert!(rd.is_empty());
    }
}
