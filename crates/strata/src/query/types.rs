//! The types of result columns and bind variables as the protocol describes
//! them, and the digests that name prepared statements and result shapes.
//!
//! A stored column's type is a [`CqlType`]; the system tables a driver reads
//! also hold collections (`system_schema.tables.flags` is a `set<text>`,
//! `keyspaces.replication` a `frozen<map<text, text>>`), so a result column's
//! type is the recursive [`ColumnType`]. Pure values, any thread.
//!
//! Invariants:
//! 1. `ColumnType::to_cql` prints the type as Cassandra's `CQL3Type.toString`
//!    does (`frozen<map<text, text>>`, `list<int>`), the spelling
//!    `system_schema.columns.type` carries.
//! 2. Digests are stable across processes and versions of this build: prepared
//!    statement ids survive a server restart (a client re-preparing gets the
//!    same id), which the protocol's unprepared path relies on.

use crate::types::CqlType;

/// A result or bind type, as the native protocol can describe it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ColumnType {
    Native(CqlType),
    Counter,
    Duration,
    Time,
    List(Box<ColumnType>),
    Set(Box<ColumnType>),
    Map(Box<ColumnType>, Box<ColumnType>),
    Tuple(Vec<ColumnType>),
    Udt {
        keyspace: String,
        name: String,
        fields: Vec<(String, ColumnType)>,
    },
    /// Written to clients as a custom type (`org.apache.cassandra.db.marshal...`).
    Custom(String),
    /// `frozen<...>`: the same wire type as the inner one; kept so that
    /// `to_cql` prints what the schema says.
    Frozen(Box<ColumnType>),
    /// `vector<T, n>`: written to clients as Cassandra 5 does, a custom type
    /// naming `VectorType`.
    Vector(Box<ColumnType>, u32),
}

impl ColumnType {
    pub fn text() -> ColumnType {
        ColumnType::Native(CqlType::Text)
    }

    /// The protocol's description of a stored column type.
    pub fn of(t: &CqlType) -> ColumnType {
        let frozen = |inner: ColumnType, frozen: bool| {
            if frozen {
                ColumnType::Frozen(Box::new(inner))
            } else {
                inner
            }
        };
        match t {
            CqlType::Time => ColumnType::Time,
            CqlType::Duration => ColumnType::Duration,
            CqlType::Counter => ColumnType::Counter,
            CqlType::List { element, frozen: f } => {
                frozen(ColumnType::List(Box::new(ColumnType::of(element))), *f)
            }
            CqlType::Set { element, frozen: f } => {
                frozen(ColumnType::Set(Box::new(ColumnType::of(element))), *f)
            }
            CqlType::Map {
                key,
                value,
                frozen: f,
            } => frozen(
                ColumnType::Map(
                    Box::new(ColumnType::of(key)),
                    Box::new(ColumnType::of(value)),
                ),
                *f,
            ),
            CqlType::Tuple(items) => frozen(
                ColumnType::Tuple(items.iter().map(ColumnType::of).collect()),
                true,
            ),
            CqlType::Udt { def, frozen: f } => frozen(
                ColumnType::Udt {
                    keyspace: def.keyspace.clone(),
                    name: def.name.clone(),
                    fields: def
                        .fields
                        .iter()
                        .map(|(n, t)| (n.clone(), ColumnType::of(t)))
                        .collect(),
                },
                *f,
            ),
            CqlType::Vector { element, dimension } => {
                ColumnType::Vector(Box::new(ColumnType::of(element)), *dimension)
            }
            native => ColumnType::Native(native.clone()),
        }
    }

    /// The stored type this describes, when it describes one (every
    /// column's type; `None` for a custom type).
    pub fn stored_type(&self) -> Option<CqlType> {
        use std::sync::Arc;
        Some(match self {
            ColumnType::Native(t) => t.clone(),
            ColumnType::Counter => CqlType::Counter,
            ColumnType::Duration => CqlType::Duration,
            ColumnType::Time => CqlType::Time,
            ColumnType::Frozen(inner) => inner.stored_type()?.frozen(),
            ColumnType::List(e) => CqlType::List {
                element: Arc::new(e.stored_type()?),
                frozen: false,
            },
            ColumnType::Set(e) => CqlType::Set {
                element: Arc::new(e.stored_type()?),
                frozen: false,
            },
            ColumnType::Map(k, v) => CqlType::Map {
                key: Arc::new(k.stored_type()?),
                value: Arc::new(v.stored_type()?),
                frozen: false,
            },
            ColumnType::Tuple(items) => CqlType::Tuple(Arc::new(
                items
                    .iter()
                    .map(ColumnType::stored_type)
                    .collect::<Option<Vec<_>>>()?,
            )),
            ColumnType::Udt {
                keyspace,
                name,
                fields,
            } => CqlType::Udt {
                def: Arc::new(crate::types::UdtDef {
                    keyspace: keyspace.clone(),
                    name: name.clone(),
                    fields: fields
                        .iter()
                        .map(|(n, t)| Some((n.clone(), t.stored_type()?)))
                        .collect::<Option<Vec<_>>>()?,
                }),
                frozen: false,
            },
            ColumnType::Vector(e, n) => CqlType::Vector {
                element: Arc::new(e.stored_type()?),
                dimension: *n,
            },
            ColumnType::Custom(_) => return None,
        })
    }

    /// The wire type: `Frozen` unwrapped (the protocol has no frozen marker).
    pub fn unfrozen(&self) -> &ColumnType {
        match self {
            ColumnType::Frozen(inner) => inner.unfrozen(),
            other => other,
        }
    }

    /// The CQL spelling (invariant 1).
    pub fn to_cql(&self) -> String {
        match self {
            ColumnType::Native(t) => t.name().to_string(),
            ColumnType::Counter => "counter".to_string(),
            ColumnType::Duration => "duration".to_string(),
            ColumnType::Time => "time".to_string(),
            ColumnType::List(e) => format!("list<{}>", e.to_cql()),
            ColumnType::Set(e) => format!("set<{}>", e.to_cql()),
            ColumnType::Map(k, v) => format!("map<{}, {}>", k.to_cql(), v.to_cql()),
            ColumnType::Tuple(items) => format!(
                "tuple<{}>",
                items
                    .iter()
                    .map(ColumnType::to_cql)
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
            ColumnType::Udt { name, .. } => name.clone(),
            ColumnType::Vector(e, n) => format!("vector<{}, {n}>", e.to_cql()),
            ColumnType::Custom(class) => format!("'{class}'"),
            ColumnType::Frozen(inner) => format!("frozen<{}>", inner.to_cql()),
        }
    }
}

/// A 128-bit digest (Murmur3 x64_128 over length-prefixed parts): prepared
/// statement ids, result metadata ids, schema versions. Not cryptographic;
/// collisions need a deliberate effort, which a client could only use against
/// its own statements.
pub(crate) struct Digest {
    buf: Vec<u8>,
}

impl Digest {
    pub(crate) fn new() -> Digest {
        Digest { buf: Vec::new() }
    }

    pub(crate) fn str(&mut self, s: &str) {
        self.bytes(s.as_bytes());
    }

    pub(crate) fn bytes(&mut self, b: &[u8]) {
        self.buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
        self.buf.extend_from_slice(b);
    }

    pub(crate) fn finish(&self) -> [u8; 16] {
        let (h1, h2) = crate::token::murmur3_x64_128(&self.buf, 0);
        let mut out = [0u8; 16];
        out[..8].copy_from_slice(&h1.to_be_bytes());
        out[8..].copy_from_slice(&h2.to_be_bytes());
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_print_as_cassandra_spells_them() {
        let t = ColumnType::Frozen(Box::new(ColumnType::Map(
            Box::new(ColumnType::text()),
            Box::new(ColumnType::List(Box::new(ColumnType::Native(CqlType::Int)))),
        )));
        assert_eq!(t.to_cql(), "frozen<map<text, list<int>>>");
        assert_eq!(t.unfrozen().to_cql(), "map<text, list<int>>");
    }

    #[test]
    fn digests_depend_on_every_part_and_its_boundaries() {
        let d = |parts: &[&str]| {
            let mut h = Digest::new();
            for p in parts {
                h.str(p);
            }
            h.finish()
        };
        assert_eq!(d(&["ab", "c"]), d(&["ab", "c"]));
        assert_ne!(d(&["ab", "c"]), d(&["a", "bc"]));
        assert_ne!(d(&["ab"]), d(&["ab", ""]));
    }
}
