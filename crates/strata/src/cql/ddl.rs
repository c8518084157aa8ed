//! CQL data definition as the schema layer takes it: the `CREATE TABLE`
//! statement, read by the CQL parser (`cql::parser`, one grammar for every
//! caller) and narrowed to the types the engine stores; and the inverse for
//! names, which identifiers a printer must quote ([`cql_name`]). The `WITH`
//! settings live in `cql::settings` (re-exported here for `options`).
//!
//! Owns: [`parse_create_table`] returns what the statement says
//! ([`CreateTable`]); `schema` checks it against itself (columns defined once,
//! keys that exist, ...) and builds the `TableSchema`; `options` turns the
//! settings into validated `TableOptions`. Pure, any thread.
//!
//! Invariants:
//! 1. A syntax error in a statement is `Error::Cql` of kind `SyntaxError`
//!    carrying the byte offset ("CREATE TABLE: syntax error at byte 38: ...").
//! 2. Unquoted names fold to lower case and double-quoted ones keep theirs, as
//!    in CQL; both spellings are kept for messages about collisions.
//! 3. Column types are resolved by [`resolve_type`] with Cassandra's rules and
//!    messages (nested collections frozen, no counters inside collections, no
//!    durations as set elements or map keys, positive vector dimensions, user
//!    types looked up in the table's keyspace). A type the engine does not
//!    store yet (non-frozen collections and UDTs, counters, custom types) is
//!    refused with a one-line `InvalidInput` naming it, as are COMPACT STORAGE
//!    and a second PRIMARY KEY.

use super::ast;
use super::error::{CqlError, CqlErrorKind};
use super::parser::{is_reserved, parse_statement};
pub(crate) use super::settings::parse_settings;
pub use super::settings::Setting;
use crate::error::{Error, Result};
use std::sync::Arc;

use crate::types::{CqlType, UdtDef};

// ---------------------------------------------------------------------------
// CREATE TABLE
// ---------------------------------------------------------------------------

/// A name as CQL needs it written: bare if it reads back unchanged, else in double quotes.
pub fn cql_name(name: &str) -> String {
    let bare = name
        .chars()
        .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_')
        && name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && !is_reserved(name);
    if bare {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

/// Looks up a user-defined type by keyspace and name.
pub type UdtLookup<'a> = &'a dyn Fn(&str, &str) -> Option<Arc<UdtDef>>;

/// A lookup that knows no user-defined type.
pub fn no_udts(_: &str, _: &str) -> Option<Arc<UdtDef>> {
    None
}

/// Resolves a type expression as Cassandra's `CQL3Type.Raw.prepare` does,
/// with its messages: `frozen<...>` freezes everything inside it; elements of
/// collections, tuple components and vector elements must be frozen when they
/// are collections or UDTs (tuples and vectors freeze theirs); counters are
/// refused inside collections, durations as set elements and map keys;
/// vector dimensions are positive; user types are looked up in `keyspace`
/// unless qualified.
pub fn resolve_type(t: &ast::TypeExpr, keyspace: &str, udts: UdtLookup<'_>) -> Result<CqlType> {
    resolve(t, keyspace, udts, false, t)
}

fn resolve(
    t: &ast::TypeExpr,
    keyspace: &str,
    udts: UdtLookup<'_>,
    frozen: bool,
    whole: &ast::TypeExpr,
) -> Result<CqlType> {
    use ast::TypeExpr as T;
    let invalid = Error::InvalidInput;
    // An element of a collection: frozen if it is itself multi-cell, never a
    // counter, and no duration where `durations` names a place that refuses
    // them (set elements, map keys).
    let element = |e: &ast::TypeExpr, durations: Option<&str>| -> Result<CqlType> {
        let ty = resolve(e, keyspace, udts, frozen, whole)?;
        let refused = if ty.is_multi_cell() {
            let kind = if matches!(ty, CqlType::Udt { .. }) {
                "UDTs"
            } else {
                "collections"
            };
            Some(format!(
                "Non-frozen {kind} are not allowed inside collections"
            ))
        } else if ty == CqlType::Counter {
            Some("Counters are not allowed inside collections".to_string())
        } else {
            durations
                .filter(|_| ty.references_duration())
                .map(|place| format!("Durations are not allowed {place}"))
        };
        match refused {
            Some(why) => Err(invalid(format!("{why}: {}", whole.to_cql()))),
            None => Ok(ty),
        }
    };
    Ok(match t {
        T::Native(n) => CqlType::parse(n).map_err(|_| invalid(format!("Unknown type {n}")))?,
        T::Frozen(inner) => resolve(inner, keyspace, udts, true, whole)?.frozen(),
        T::List(e) => CqlType::List {
            element: Arc::new(element(e, None)?),
            frozen,
        },
        T::Set(e) => CqlType::Set {
            element: Arc::new(element(e, Some("inside sets"))?),
            frozen,
        },
        T::Map(k, v) => CqlType::Map {
            key: Arc::new(element(k, Some("as map keys"))?),
            value: Arc::new(element(v, None)?),
            frozen,
        },
        T::Tuple(items) => CqlType::Tuple(Arc::new(
            items
                .iter()
                .map(|i| resolve(i, keyspace, udts, true, whole).map(|t| t.frozen()))
                .collect::<Result<Vec<_>>>()?,
        )),
        T::Vector(e, n) => {
            if *n == 0 {
                return Err(invalid(format!(
                    "vectors may only have positive dimensions; given {n}"
                )));
            }
            CqlType::Vector {
                element: Arc::new(resolve(e, keyspace, udts, true, whole)?.frozen()),
                dimension: *n,
            }
        }
        T::Udt(q) => {
            let ks = q.keyspace.as_ref().map_or(keyspace, |k| k.text.as_str());
            let def = udts(ks, &q.name.text)
                .ok_or_else(|| invalid(format!("Unknown type {ks}.{}", q.name.text)))?;
            CqlType::Udt { def, frozen }
        }
        T::Custom(class) => return Err(invalid(format!("custom type '{class}' is not supported"))),
    })
}

/// A user-defined type's `CREATE TYPE`, laid out as Cassandra prints it
/// (with `IF NOT EXISTS` for a script that may meet the type already there).
pub fn create_type_cql(def: &crate::types::UdtDef, if_not_exists: bool) -> String {
    let fields: Vec<String> = def
        .fields
        .iter()
        .map(|(n, t)| format!("    {} {}", cql_name(n), t.name()))
        .collect();
    format!(
        "CREATE TYPE {}{}.{} (\n{}\n);",
        if if_not_exists { "IF NOT EXISTS " } else { "" },
        cql_name(&def.keyspace),
        cql_name(&def.name),
        fields.join(",\n")
    )
}

/// `defs` ordered so that each comes after the types its fields use (as
/// Cassandra orders them), otherwise in the order given.
pub fn types_in_creation_order(
    defs: Vec<std::sync::Arc<crate::types::UdtDef>>,
) -> Vec<std::sync::Arc<crate::types::UdtDef>> {
    let same = |a: &crate::types::UdtDef, b: &crate::types::UdtDef| {
        a.keyspace == b.keyspace && a.name == b.name
    };
    let mut out: Vec<std::sync::Arc<crate::types::UdtDef>> = Vec::new();
    let mut left = defs;
    while !left.is_empty() {
        let before = left.len();
        let pending = left.clone();
        left.retain(|def| {
            let ready = def.fields.iter().all(|(_, t)| {
                t.udts()
                    .iter()
                    .all(|u| out.iter().any(|o| same(o, u)) || !pending.iter().any(|p| same(p, u)))
            });
            if ready {
                out.push(def.clone());
            }
            !ready
        });
        if left.len() == before {
            // A cycle cannot be created; keep the rest rather than loop.
            out.append(&mut left);
        }
    }
    out
}

/// The column's type as the storage engine takes it (invariant 3).
fn column_type(
    column: &ast::ColumnDefinition,
    keyspace: &str,
    udts: UdtLookup<'_>,
) -> Result<CqlType> {
    let col = &column.name.text;
    let pos = column.name.pos;
    let ty = resolve_type(&column.ty, keyspace, udts).map_err(|e| {
        Error::InvalidInput(format!(
            "CREATE TABLE: column '{col}' at byte {pos}: {}",
            crate::error::strip_prefix(&e)
        ))
    })?;
    Ok(ty)
}

/// A name as written in `text` at its position (quotes included), for messages
/// about two spellings of one name.
fn spelling(text: &str, n: &ast::Name) -> String {
    if n.quoted {
        return format!("\"{}\"", n.text.replace('"', "\"\""));
    }
    let rest = text.get(n.pos..).unwrap_or("");
    let len = rest
        .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        .unwrap_or(rest.len());
    if len == 0 {
        n.text.clone()
    } else {
        rest[..len].to_string()
    }
}

/// What the statement says, before it is checked against itself.
/// Checking it against itself and building the schema is `schema`'s
/// (`TableSchema::from_cql`); positions are byte offsets for its messages.
pub(crate) struct CreateTable {
    pub if_not_exists: bool,
    pub keyspace: Option<String>,
    pub name: String,
    /// (name, type, static, inline PRIMARY KEY, position)
    pub columns: Vec<(String, CqlType, bool, bool, usize)>,
    /// Each column's name as written, in `columns` order.
    pub spellings: Vec<String>,
    pub partition_key: Vec<(String, usize)>,
    pub clustering: Vec<(String, usize)>,
    pub primary_key_clauses: usize,
    /// (clustering column, descending, position)
    pub order: Vec<(String, bool, usize)>,
    pub settings: Vec<Setting>,
}

/// Parses a CREATE TABLE statement with the CQL parser (one grammar for every
/// caller) and keeps what the schema layer takes (invariants 1 and 2): a syntax
/// error is `Error::Cql`; a type the engine does not store yet, COMPACT STORAGE
/// and a second PRIMARY KEY are `Error::InvalidInput`.
#[cfg(test)]
pub(crate) fn parse_create_table(text: &str) -> Result<CreateTable> {
    parse_create_table_with(text, None, &no_udts)
}

/// [`parse_create_table`] with user-defined types looked up by `udts`, in
/// the statement's keyspace or `default_keyspace`.
pub(crate) fn parse_create_table_with(
    text: &str,
    default_keyspace: Option<&str>,
    udts: UdtLookup<'_>,
) -> Result<CreateTable> {
    let parsed = parse_statement(text).map_err(|e| match e.kind {
        CqlErrorKind::SyntaxError => Error::Cql(e),
        _ => Error::InvalidInput(e.message),
    })?;
    let ast::Statement::CreateTable(ct) = parsed.statement else {
        return Err(Error::Cql(CqlError::syntax(
            "CREATE TABLE",
            0,
            &format!("expected CREATE TABLE, found {}", parsed.statement.kind()),
        )));
    };
    if ct.compact_storage {
        return Err(Error::InvalidInput(
            "CREATE TABLE: COMPACT STORAGE is not supported".to_string(),
        ));
    }
    let mut columns = Vec::with_capacity(ct.columns.len());
    let mut spellings = Vec::with_capacity(ct.columns.len());
    let mut partition_key: Vec<(String, usize)> = ct
        .partition_key
        .iter()
        .map(|n| (n.text.clone(), n.pos))
        .collect();
    let mut primary_key_clauses = usize::from(!ct.partition_key.is_empty());
    let keyspace = ct
        .table
        .keyspace
        .as_ref()
        .map(|k| k.text.clone())
        .or_else(|| default_keyspace.map(str::to_string))
        .unwrap_or_default();
    for c in &ct.columns {
        let ty = column_type(c, &keyspace, udts)?;
        if c.primary_key {
            primary_key_clauses += 1;
            partition_key.push((c.name.text.clone(), c.name.pos));
        }
        columns.push((
            c.name.text.clone(),
            ty,
            c.is_static,
            c.primary_key,
            c.name.pos,
        ));
        spellings.push(spelling(text, &c.name));
    }
    let ct = *ct;
    Ok(CreateTable {
        if_not_exists: ct.if_not_exists,
        keyspace: ct.table.keyspace.map(|k| k.text),
        name: ct.table.name.text,
        columns,
        spellings,
        partition_key,
        clustering: ct.clustering.into_iter().map(|n| (n.text, n.pos)).collect(),
        primary_key_clauses,
        order: ct
            .clustering_order
            .into_iter()
            .map(|o| (o.column.text, o.descending, o.column.pos))
            .collect(),
        settings: ct.settings,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_fold_unless_double_quoted_and_keep_their_spelling() {
        let ct = parse_create_table(
            "CREATE TABLE Ks.\"Tab\" (K int, \"V\" text, PRIMARY KEY ((K), \"V\")) WITH gc_grace_seconds = 5",
        )
        .unwrap();
        assert_eq!(
            (ct.keyspace.as_deref(), ct.name.as_str()),
            (Some("ks"), "Tab")
        );
        let names: Vec<&str> = ct.columns.iter().map(|c| c.0.as_str()).collect();
        assert_eq!(names, ["k", "V"]);
        assert_eq!(ct.spellings, ["K", "\"V\""]);
        assert_eq!(ct.partition_key, [("k".to_string(), 54)]);
        assert_eq!(ct.clustering, [("V".to_string(), 58)]);
        assert_eq!(ct.settings.len(), 1);
        assert_eq!(ct.settings[0].name, "gc_grace_seconds");
    }

    #[test]
    fn printed_names_read_back_as_the_same_name() {
        for (name, shown) in [
            ("v", "v"),
            ("V", "\"V\""),
            ("select", "\"select\""),
            ("a\"b", "\"a\"\"b\""),
            ("1x", "\"1x\""),
            ("true", "\"true\""),
            ("from", "\"from\""),
        ] {
            assert_eq!(cql_name(name), shown);
            let back = match parse_statement(&format!("USE {shown}")).unwrap().statement {
                ast::Statement::Use(n) => n.text,
                other => panic!("{other:?}"),
            };
            assert_eq!(back, name, "{shown}");
        }
    }
}
