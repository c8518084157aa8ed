//! Composite values: lists, sets, maps, tuples, user-defined types and
//! vectors, in each of the module's three forms (text, Cassandra's bytes, the
//! byte-comparable key encoding).
//!
//! Contract (the parent module's invariants, for composite values):
//! 1. Serialized bytes are Cassandra's (protocol v3+): a collection is an `i32`
//!    count then each element (map: key then value) as an `i32` length and its
//!    bytes; a tuple or UDT is each component as an `i32` length and bytes, `-1`
//!    for null, with trailing components allowed to be absent (read as null); a
//!    vector of fixed-size elements is the elements back to back, else each
//!    element with an unsigned-vint length (Cassandra 5's `VectorType`).
//! 2. Set and map values are normalised wherever they are built from input
//!    ([`deserialize`], literals): elements (keys) sorted in their type's order
//!    with duplicates removed (for maps the last entry of a key wins, as Java's
//!    `TreeMap.put` in Cassandra leaves it). Nulls inside a collection are
//!    refused, as Cassandra refuses them.
//! 3. Comparable encodings order as Cassandra's comparators do: lists, sets and
//!    maps element by element (a prefix first), tuples and UDTs component by
//!    component with null before any value and trailing nulls equal to absent
//!    components, vectors element by element. Each is prefix-free: elements are
//!    preceded by a marker byte (list, set, map: `0x01`; tuple: `0x01` null,
//!    `0x02` value) and a `0x00` ends the value.
//! 4. Every count and length read from bytes is checked against the bytes left
//!    before anything is allocated; nesting depth is the type's, so no input can
//!    recurse deeper than its schema.

use std::sync::Arc;

use super::{decode_comparable, encode_comparable, serialize_into, CqlType, UdtDef, Value};
use crate::error::{Error, Result};

/// A set element's or map key's ascending comparable encoding: how sets and
/// maps are ordered and deduplicated (and the cell path a non-frozen
/// collection's element will have, docs/STATUS.md).
pub fn element_path(element: &Value) -> Vec<u8> {
    let mut out = Vec::new();
    encode_comparable(element, false, &mut out);
    out
}

fn quote_name(name: &str) -> String {
    let plain = name.bytes().next().is_some_and(|b| b.is_ascii_lowercase())
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_');
    if plain {
        name.to_string()
    } else {
        format!("\"{}\"", name.replace('"', "\"\""))
    }
}

fn frozen_if(text: String, frozen: bool) -> String {
    if frozen {
        format!("frozen<{text}>")
    } else {
        text
    }
}

/// The CQL spelling of a composite type (see [`CqlType::name`]).
pub(super) fn type_name(t: &CqlType) -> String {
    let list = |items: &[CqlType]| {
        items
            .iter()
            .map(CqlType::name)
            .collect::<Vec<_>>()
            .join(", ")
    };
    match t {
        CqlType::List { element, frozen } => {
            frozen_if(format!("list<{}>", element.name()), *frozen)
        }
        CqlType::Set { element, frozen } => frozen_if(format!("set<{}>", element.name()), *frozen),
        CqlType::Map { key, value, frozen } => {
            frozen_if(format!("map<{}, {}>", key.name(), value.name()), *frozen)
        }
        CqlType::Tuple(items) => format!("frozen<tuple<{}>>", list(items)),
        CqlType::Udt { def, frozen } => frozen_if(quote_name(&def.name), *frozen),
        CqlType::Vector { element, dimension } => {
            format!("vector<{}, {dimension}>", element.name())
        }
        native => native.name(),
    }
}

/// Parses a type spelled as [`CqlType::name`] spells types without a UDT
/// (`frozen<map<text, int>>`, `vector<float, 3>`).
pub(super) fn parse_type_name(text: &str) -> Result<CqlType> {
    let mut p = TypeParser {
        text,
        rest: text,
        depth: 0,
    };
    let t = p.parse(false)?;
    if !p.rest.trim().is_empty() {
        return Err(p.error());
    }
    Ok(t)
}

struct TypeParser<'a> {
    text: &'a str,
    rest: &'a str,
    depth: usize,
}

impl<'a> TypeParser<'a> {
    fn error(&self) -> Error {
        Error::InvalidInput(format!("malformed type '{}'", self.text))
    }

    fn word(&mut self) -> &'a str {
        self.rest = self.rest.trim_start();
        let n = self
            .rest
            .bytes()
            .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
            .count();
        let (w, r) = self.rest.split_at(n);
        self.rest = r;
        w
    }

    fn eat(&mut self, c: char) -> Result<()> {
        self.rest = self.rest.trim_start();
        self.rest = self.rest.strip_prefix(c).ok_or_else(|| self.error())?;
        Ok(())
    }

    fn peek(&mut self, c: char) -> bool {
        self.rest = self.rest.trim_start();
        self.rest.starts_with(c)
    }

    fn parse(&mut self, frozen: bool) -> Result<CqlType> {
        self.depth += 1;
        if self.depth > 64 {
            return Err(self.error());
        }
        let name = self.word().to_ascii_lowercase();
        let t = match name.as_str() {
            "frozen" => {
                self.eat('<')?;
                let t = self.parse(true)?;
                self.eat('>')?;
                t.frozen()
            }
            "list" | "set" => {
                self.eat('<')?;
                let element = Arc::new(self.parse(true)?);
                self.eat('>')?;
                if name == "list" {
                    CqlType::List { element, frozen }
                } else {
                    CqlType::Set { element, frozen }
                }
            }
            "map" => {
                self.eat('<')?;
                let key = Arc::new(self.parse(true)?);
                self.eat(',')?;
                let value = Arc::new(self.parse(true)?);
                self.eat('>')?;
                CqlType::Map { key, value, frozen }
            }
            "tuple" => {
                self.eat('<')?;
                let mut items = vec![self.parse(true)?];
                while self.peek(',') {
                    self.eat(',')?;
                    items.push(self.parse(true)?);
                }
                self.eat('>')?;
                CqlType::Tuple(Arc::new(items))
            }
            "vector" => {
                self.eat('<')?;
                let element = Arc::new(self.parse(true)?);
                self.eat(',')?;
                let dimension = self.word().parse().map_err(|_| self.error())?;
                self.eat('>')?;
                CqlType::Vector { element, dimension }
            }
            native => CqlType::parse(native)?,
        };
        self.depth -= 1;
        Ok(t)
    }
}

/// Whether `v` can be stored as a `ty` (see [`Value::fits`]).
pub(super) fn fits(v: &Value, ty: &CqlType) -> bool {
    match (v, ty) {
        (Value::List(items), CqlType::List { element, .. })
        | (Value::Set(items), CqlType::Set { element, .. }) => {
            items.iter().all(|i| fits(i, element))
        }
        (Value::Vector(items), CqlType::Vector { element, dimension }) => {
            items.len() == *dimension as usize && items.iter().all(|i| fits(i, element))
        }
        (Value::Map(entries), CqlType::Map { key, value, .. }) => {
            entries.iter().all(|(k, v)| fits(k, key) && fits(v, value))
        }
        (Value::Tuple(items), CqlType::Tuple(types)) => {
            items.len() <= types.len()
                && items
                    .iter()
                    .zip(types.iter())
                    .all(|(i, t)| i.as_ref().is_none_or(|i| fits(i, t)))
        }
        (Value::Udt(fields), CqlType::Udt { def, .. }) => {
            fields.len() <= def.fields.len()
                && fields
                    .iter()
                    .zip(&def.fields)
                    .all(|((n, v), (name, t))| n == name && v.as_ref().is_none_or(|v| fits(v, t)))
        }
        (v, t) => v.native_type().as_ref() == Some(t),
    }
}

/// A value as it appears inside a composite literal: quoted where CQL needs
/// quotes (text, dates, times, addresses), bare otherwise.
fn text_of(v: &Value) -> String {
    match v {
        Value::Text(_)
        | Value::Ascii(_)
        | Value::Timestamp(_)
        | Value::Date(_)
        | Value::Time(_)
        | Value::Inet(_) => format!("'{}'", super::format_value(v).replace('\'', "''")),
        Value::Duration {
            months: 0,
            days: 0,
            nanos: 0,
        } => "0s".to_string(),
        other => super::format_value(other),
    }
}

fn null_or(v: Option<&Value>) -> String {
    v.map_or_else(|| "null".to_string(), text_of)
}

/// The components of a tuple or UDT value, in order (`None`: null).
fn components(v: &Value) -> Vec<Option<&Value>> {
    match v {
        Value::Tuple(items) => items.iter().map(Option::as_ref).collect(),
        Value::Udt(fields) => fields.iter().map(|(_, v)| v.as_ref()).collect(),
        _ => Vec::new(),
    }
}

/// The CQL literal of a composite value (`[1, 2]`, `{'a': 1}`, `(1, null)`,
/// `{street: 'x'}`).
pub(super) fn format(v: &Value) -> String {
    let (open, close, parts): (char, char, Vec<String>) = match v {
        Value::List(items) | Value::Vector(items) => {
            ('[', ']', items.iter().map(text_of).collect())
        }
        Value::Set(items) => ('{', '}', items.iter().map(text_of).collect()),
        Value::Map(entries) => (
            '{',
            '}',
            entries
                .iter()
                .map(|(k, v)| format!("{}: {}", text_of(k), text_of(v)))
                .collect(),
        ),
        Value::Tuple(_) => ('(', ')', components(v).into_iter().map(null_or).collect()),
        Value::Udt(fields) => (
            '{',
            '}',
            fields
                .iter()
                .map(|(name, v)| format!("{}: {}", quote_name(name), null_or(v.as_ref())))
                .collect(),
        ),
        other => return super::format_value(other),
    };
    format!("{open}{}{close}", parts.join(", "))
}

/// An `i32` length or count, as Cassandra writes it.
fn len_bytes(n: usize) -> [u8; 4] {
    (n.min(i32::MAX as usize) as i32).to_be_bytes()
}

/// Appends `v` with an `i32` length prefix.
fn put_element(v: &Value, out: &mut Vec<u8>) {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    serialize_into(v, out);
    let n = out.len() - at - 4;
    out[at..at + 4].copy_from_slice(&len_bytes(n));
}

/// Cassandra's serialization of a composite value (contract 1).
pub(super) fn serialize(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::List(items) | Value::Set(items) => {
            out.extend_from_slice(&len_bytes(items.len()));
            for e in items {
                put_element(e, out);
            }
        }
        Value::Map(entries) => {
            out.extend_from_slice(&len_bytes(entries.len()));
            for (k, v) in entries {
                put_element(k, out);
                put_element(v, out);
            }
        }
        Value::Tuple(_) | Value::Udt(_) => {
            for e in components(v) {
                match e {
                    Some(e) => put_element(e, out),
                    None => out.extend_from_slice(&(-1i32).to_be_bytes()),
                }
            }
        }
        Value::Vector(items) => {
            let fixed = items.first().and_then(|e| e.native_type()?.fixed_size());
            for e in items {
                if fixed.is_none() {
                    let bytes = super::serialize(e);
                    super::temporal::write_unsigned_vint(bytes.len() as u64, out);
                    out.extend_from_slice(&bytes);
                } else {
                    serialize_into(e, out);
                }
            }
        }
        // Natives are serialized by the parent module.
        _ => {}
    }
}

fn bad(ty: &CqlType, why: impl std::fmt::Display) -> Error {
    Error::InvalidInput(format!("invalid serialized {} value: {why}", ty.name()))
}

/// Reads an `i32` length or count from the front of `input`.
fn take_i32(ty: &CqlType, input: &mut &[u8]) -> Result<i32> {
    let Some((head, rest)) = input.split_first_chunk::<4>() else {
        return Err(bad(ty, "truncated"));
    };
    *input = rest;
    Ok(i32::from_be_bytes(*head))
}

/// Reads one length-prefixed element: `None` for null (`-1`).
fn take_element(ty: &CqlType, of: &CqlType, input: &mut &[u8]) -> Result<Option<Value>> {
    let n = take_i32(ty, input)?;
    if n < 0 {
        return Ok(None);
    }
    let n = n as usize;
    if n > input.len() {
        return Err(bad(
            ty,
            format_args!("an element claims {n} bytes, {} left", input.len()),
        ));
    }
    let (bytes, rest) = input.split_at(n);
    *input = rest;
    super::deserialize(of, bytes).map(Some)
}

/// Reads a count that must be non-negative and not more than the bytes left
/// allow (each element takes at least `min_bytes`).
fn take_count(ty: &CqlType, input: &mut &[u8], min_bytes: usize) -> Result<usize> {
    let n = take_i32(ty, input)?;
    if n < 0 || (n as usize).saturating_mul(min_bytes) > input.len() {
        return Err(bad(
            ty,
            format_args!("a count of {n} with {} bytes left", input.len()),
        ));
    }
    Ok(n as usize)
}

/// Reads a tuple's or UDT's components; trailing ones may be absent (null).
fn take_components<'t>(
    ty: &CqlType,
    types: impl Iterator<Item = &'t CqlType>,
    input: &mut &[u8],
) -> Result<Vec<Option<Value>>> {
    let mut out = Vec::new();
    for t in types {
        out.push(if input.is_empty() {
            None
        } else {
            take_element(ty, t, input)?
        });
    }
    Ok(out)
}

fn no_null(ty: &CqlType, v: Option<Value>) -> Result<Value> {
    v.ok_or_else(|| {
        Error::InvalidInput(format!(
            "null is not supported inside collections ({})",
            ty.name()
        ))
    })
}

/// Sorts set elements in their type's order and drops duplicates.
pub fn normalize_set(items: Vec<Value>) -> Vec<Value> {
    let mut keyed: Vec<(Vec<u8>, Value)> =
        items.into_iter().map(|v| (element_path(&v), v)).collect();
    keyed.sort_by(|a, b| a.0.cmp(&b.0));
    keyed.dedup_by(|a, b| a.0 == b.0);
    keyed.into_iter().map(|(_, v)| v).collect()
}

/// Sorts map entries by key; of entries with equal keys the last wins.
pub fn normalize_map(entries: Vec<(Value, Value)>) -> Vec<(Value, Value)> {
    let mut keyed: Vec<(Vec<u8>, usize, (Value, Value))> = entries
        .into_iter()
        .enumerate()
        .map(|(i, e)| (element_path(&e.0), i, e))
        .collect();
    // Later entries first within a key, so dedup (which keeps the first of a
    // run) keeps the last one written.
    keyed.sort_by(|a, b| a.0.cmp(&b.0).then(b.1.cmp(&a.1)));
    keyed.dedup_by(|a, b| a.0 == b.0);
    keyed.into_iter().map(|(_, _, e)| e).collect()
}

/// Decodes a composite type's serialized bytes (contract 1, 2, 4).
pub(super) fn deserialize(ty: &CqlType, bytes: &[u8]) -> Result<Value> {
    let mut input = bytes;
    let v = match ty {
        CqlType::List { element, .. } | CqlType::Set { element, .. } => {
            let n = take_count(ty, &mut input, 4)?;
            let mut items = Vec::with_capacity(n);
            for _ in 0..n {
                items.push(no_null(ty, take_element(ty, element, &mut input)?)?);
            }
            if matches!(ty, CqlType::Set { .. }) {
                Value::Set(normalize_set(items))
            } else {
                Value::List(items)
            }
        }
        CqlType::Map { key, value, .. } => {
            let n = take_count(ty, &mut input, 8)?;
            let mut entries = Vec::with_capacity(n);
            for _ in 0..n {
                let k = no_null(ty, take_element(ty, key, &mut input)?)?;
                let v = no_null(ty, take_element(ty, value, &mut input)?)?;
                entries.push((k, v));
            }
            Value::Map(normalize_map(entries))
        }
        CqlType::Tuple(types) => Value::Tuple(take_components(ty, types.iter(), &mut input)?),
        CqlType::Udt { def, .. } => {
            let values = take_components(ty, def.fields.iter().map(|(_, t)| t), &mut input)?;
            Value::Udt(
                def.fields
                    .iter()
                    .map(|(n, _)| n.clone())
                    .zip(values)
                    .collect(),
            )
        }
        CqlType::Vector { element, dimension } => {
            let dim = *dimension as usize;
            let mut items = Vec::with_capacity(dim.min(input.len()));
            match element.fixed_size() {
                Some(size) => {
                    if Some(input.len()) != size.checked_mul(dim) {
                        return Err(bad(
                            ty,
                            format_args!("expected {} bytes, got {}", size * dim, input.len()),
                        ));
                    }
                    for chunk in input.chunks_exact(size.max(1)) {
                        items.push(super::deserialize(element, chunk)?);
                    }
                    input = &[];
                }
                None => {
                    for _ in 0..dim {
                        let n = super::temporal::read_unsigned_vint(&mut input)
                            .ok_or_else(|| bad(ty, "truncated"))?;
                        let n = usize::try_from(n)
                            .ok()
                            .filter(|n| *n <= input.len())
                            .ok_or_else(|| bad(ty, "an element longer than the value"))?;
                        let (head, rest) = input.split_at(n);
                        items.push(super::deserialize(element, head)?);
                        input = rest;
                    }
                }
            }
            Value::Vector(items)
        }
        other => return super::deserialize(other, bytes),
    };
    if !input.is_empty() {
        return Err(bad(ty, format_args!("{} trailing bytes", input.len())));
    }
    Ok(v)
}

/// Appends the ascending comparable encoding of a composite value (contract 3).
pub(super) fn encode(v: &Value, out: &mut Vec<u8>) {
    match v {
        Value::List(items) | Value::Set(items) => {
            for e in items {
                out.push(1);
                encode_comparable(e, false, out);
            }
            out.push(0);
        }
        Value::Map(entries) => {
            for (k, v) in entries {
                out.push(1);
                encode_comparable(k, false, out);
                encode_comparable(v, false, out);
            }
            out.push(0);
        }
        Value::Tuple(_) | Value::Udt(_) => {
            let items = components(v);
            let used = items.iter().rposition(Option::is_some).map_or(0, |i| i + 1);
            for e in &items[..used] {
                match e {
                    None => out.push(1),
                    Some(e) => {
                        out.push(2);
                        encode_comparable(e, false, out);
                    }
                }
            }
            out.push(0);
        }
        Value::Vector(items) => {
            for e in items {
                encode_comparable(e, false, out);
            }
        }
        _ => {}
    }
}

fn marker(ty: &CqlType, mask: u8, input: &mut &[u8]) -> Result<u8> {
    let (&b, rest) = input.split_first().ok_or_else(|| {
        Error::InvalidInput(format!(
            "truncated comparable encoding of a {} value",
            ty.name()
        ))
    })?;
    *input = rest;
    Ok(b ^ mask)
}

fn corrupt(ty: &CqlType) -> Error {
    Error::InvalidInput(format!(
        "malformed comparable encoding of a {} value: bad marker byte",
        ty.name()
    ))
}

/// Decodes one comparable-encoded composite value (contract 3).
pub(super) fn decode(ty: &CqlType, descending: bool, input: &mut &[u8]) -> Result<Value> {
    let mask = if descending { 0xFF } else { 0 };
    Ok(match ty {
        CqlType::List { element, .. } | CqlType::Set { element, .. } => {
            let mut items = Vec::new();
            loop {
                match marker(ty, mask, input)? {
                    0 => break,
                    1 => items.push(decode_comparable(element, descending, input)?),
                    _ => return Err(corrupt(ty)),
                }
            }
            if matches!(ty, CqlType::Set { .. }) {
                Value::Set(items)
            } else {
                Value::List(items)
            }
        }
        CqlType::Map { key, value, .. } => {
            let mut entries = Vec::new();
            loop {
                match marker(ty, mask, input)? {
                    0 => break,
                    1 => {
                        let k = decode_comparable(key, descending, input)?;
                        let v = decode_comparable(value, descending, input)?;
                        entries.push((k, v));
                    }
                    _ => return Err(corrupt(ty)),
                }
            }
            Value::Map(entries)
        }
        CqlType::Tuple(types) => Value::Tuple(decode_components(ty, types, descending, input)?),
        CqlType::Udt { def, .. } => {
            let types: Vec<CqlType> = def.fields.iter().map(|(_, t)| t.clone()).collect();
            let items = decode_components(ty, &types, descending, input)?;
            Value::Udt(
                def.fields
                    .iter()
                    .map(|(n, _)| n.clone())
                    .zip(items)
                    .collect(),
            )
        }
        CqlType::Vector { element, dimension } => {
            let mut items = Vec::new();
            for _ in 0..*dimension {
                items.push(decode_comparable(element, descending, input)?);
            }
            Value::Vector(items)
        }
        other => return decode_comparable(other, descending, input),
    })
}

fn decode_components(
    ty: &CqlType,
    types: &[CqlType],
    descending: bool,
    input: &mut &[u8],
) -> Result<Vec<Option<Value>>> {
    let mask = if descending { 0xFF } else { 0 };
    let mut items = Vec::with_capacity(types.len());
    loop {
        match marker(ty, mask, input)? {
            0 => break,
            m @ (1 | 2) => {
                let t = types.get(items.len()).ok_or_else(|| corrupt(ty))?;
                items.push(if m == 1 {
                    None
                } else {
                    Some(decode_comparable(t, descending, input)?)
                });
            }
            _ => return Err(corrupt(ty)),
        }
    }
    items.resize(types.len(), None);
    Ok(items)
}

/// The canonical form of a composite value: every part canonical.
pub(super) fn canonical(v: &Value) -> Value {
    let c = super::canonical;
    match v {
        Value::List(items) => Value::List(items.iter().map(c).collect()),
        Value::Set(items) => Value::Set(items.iter().map(c).collect()),
        Value::Vector(items) => Value::Vector(items.iter().map(c).collect()),
        Value::Map(entries) => Value::Map(entries.iter().map(|(k, v)| (c(k), c(v))).collect()),
        Value::Tuple(items) => Value::Tuple(items.iter().map(|i| i.as_ref().map(c)).collect()),
        Value::Udt(fields) => Value::Udt(
            fields
                .iter()
                .map(|(n, v)| (n.clone(), v.as_ref().map(c)))
                .collect(),
        ),
        other => other.clone(),
    }
}

/// A UDT type for tests and builders.
pub fn udt(keyspace: &str, name: &str, fields: &[(&str, CqlType)], frozen: bool) -> CqlType {
    CqlType::Udt {
        def: Arc::new(UdtDef {
            keyspace: keyspace.to_string(),
            name: name.to_string(),
            fields: fields
                .iter()
                .map(|(n, t)| (n.to_string(), t.clone()))
                .collect(),
        }),
        frozen,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cql::literal::parse_value;
    use proptest::prelude::*;
    use std::cmp::Ordering;

    fn list_of(t: CqlType) -> CqlType {
        CqlType::List {
            element: Arc::new(t),
            frozen: true,
        }
    }

    fn enc(v: &Value, desc: bool) -> Vec<u8> {
        let mut out = Vec::new();
        encode_comparable(v, desc, &mut out);
        out
    }

    /// Every codec round-trips `v` as a `ty`, and the comparable decoding
    /// consumes exactly one value.
    fn round_trip(v: &Value, ty: &CqlType) {
        let bytes = super::super::serialize(v);
        assert_eq!(&super::super::deserialize(ty, &bytes).unwrap(), v, "bytes");
        let text = super::super::format_value(v);
        assert_eq!(&parse_value(ty, &text).unwrap(), v, "text {text}");
        for desc in [false, true] {
            let mut e = enc(v, desc);
            e.push(0x42);
            let mut input = &e[..];
            assert_eq!(&decode_comparable(ty, desc, &mut input).unwrap(), v);
            assert_eq!(input, [0x42]);
        }
    }

    fn addr() -> CqlType {
        udt(
            "ks",
            "addr",
            &[("street", CqlType::Text), ("nr", CqlType::Int)],
            true,
        )
    }

    #[test]
    fn composite_values_round_trip_through_every_codec() {
        let ints = |xs: &[i32]| Value::List(xs.iter().map(|x| Value::Int(*x)).collect());
        round_trip(&ints(&[3, 1, 2]), &list_of(CqlType::Int));
        round_trip(&ints(&[]), &list_of(CqlType::Int));
        let set = CqlType::Set {
            element: Arc::new(CqlType::Text),
            frozen: true,
        };
        round_trip(
            &Value::Set(vec![Value::Text("a".into()), Value::Text("it's".into())]),
            &set,
        );
        let map = CqlType::Map {
            key: Arc::new(CqlType::Int),
            value: Arc::new(list_of(CqlType::Timestamp)),
            frozen: true,
        };
        round_trip(
            &Value::Map(vec![
                (Value::Int(-1), Value::List(vec![Value::Timestamp(0)])),
                (Value::Int(7), Value::List(vec![])),
            ]),
            &map,
        );
        let tuple = CqlType::Tuple(Arc::new(vec![CqlType::Int, CqlType::Text, CqlType::Uuid]));
        round_trip(
            &Value::Tuple(vec![Some(Value::Int(1)), None, Some(Value::Uuid([7; 16]))]),
            &tuple,
        );
        round_trip(
            &Value::Udt(vec![
                ("street".into(), Some(Value::Text("Main".into()))),
                ("nr".into(), None),
            ]),
            &addr(),
        );
        let vector = CqlType::Vector {
            element: Arc::new(CqlType::Float),
            dimension: 3,
        };
        round_trip(
            &Value::Vector(vec![
                Value::Float(1.0),
                Value::Float(-2.5),
                Value::Float(0.0),
            ]),
            &vector,
        );
        let text_vector = CqlType::Vector {
            element: Arc::new(CqlType::Text),
            dimension: 2,
        };
        round_trip(
            &Value::Vector(vec![Value::Text("x".into()), Value::Text(String::new())]),
            &text_vector,
        );
        round_trip(&Value::Time(29_574_123_456_789), &CqlType::Time);
        round_trip(
            &Value::Duration {
                months: 14,
                days: 3,
                nanos: 5,
            },
            &CqlType::Duration,
        );
    }

    #[test]
    fn vectors_serialize_as_cassandra_5() {
        let v = Value::Vector(vec![Value::Float(1.0), Value::Float(2.0)]);
        assert_eq!(
            super::super::serialize(&v),
            [0x3f, 0x80, 0, 0, 0x40, 0, 0, 0]
        );
        let t = Value::Vector(vec![Value::Text("ab".into())]);
        assert_eq!(super::super::serialize(&t), [2, b'a', b'b']);
        let ty = CqlType::Vector {
            element: Arc::new(CqlType::Float),
            dimension: 3,
        };
        assert!(super::super::deserialize(&ty, &[0; 8]).is_err());
    }

    #[test]
    fn frozen_lists_order_as_cassandra_recorded() {
        // The order Cassandra 5.0.9 returned for a frozen<list<int>>
        // clustering column (tests/data/cassandra5/notes.md).
        let ints = |xs: &[i32]| Value::List(xs.iter().map(|x| Value::Int(*x)).collect());
        let order = [
            ints(&[]),
            ints(&[-1]),
            ints(&[0, 100]),
            ints(&[1]),
            ints(&[1, 1]),
            ints(&[1, 2]),
            ints(&[1, 2, 3]),
            ints(&[2]),
        ];
        for w in order.windows(2) {
            assert_eq!(enc(&w[0], false).cmp(&enc(&w[1], false)), Ordering::Less);
            assert_eq!(enc(&w[0], true).cmp(&enc(&w[1], true)), Ordering::Greater);
        }
        // Set text compares by bytes: 'B' before 'a'.
        let set = |s: &str| Value::Set(vec![Value::Text(s.into())]);
        assert!(enc(&set("B"), false) < enc(&set("a"), false));
    }

    #[test]
    fn tuples_put_nulls_first_and_ignore_trailing_nulls() {
        let t = |a: Option<i32>, b: Option<i32>| {
            Value::Tuple(vec![a.map(Value::Int), b.map(Value::Int)])
        };
        assert!(enc(&t(None, Some(5)), false) < enc(&t(Some(i32::MIN), None), false));
        assert!(enc(&t(Some(1), None), false) < enc(&t(Some(1), Some(i32::MIN)), false));
        assert_eq!(
            enc(&t(Some(1), None), false),
            enc(&Value::Tuple(vec![Some(Value::Int(1))]), false)
        );
    }

    #[test]
    fn sets_and_maps_are_normalised_from_input() {
        let set = CqlType::Set {
            element: Arc::new(CqlType::Int),
            frozen: true,
        };
        assert_eq!(
            parse_value(&set, "{3, 1, 3, 2}").unwrap(),
            Value::Set(vec![Value::Int(1), Value::Int(2), Value::Int(3)])
        );
        let map = CqlType::Map {
            key: Arc::new(CqlType::Text),
            value: Arc::new(CqlType::Int),
            frozen: true,
        };
        assert_eq!(
            parse_value(&map, "{'b': 1, 'a': 2, 'b': 3}").unwrap(),
            Value::Map(vec![
                (Value::Text("a".into()), Value::Int(2)),
                (Value::Text("b".into()), Value::Int(3)),
            ])
        );
        assert!(parse_value(&map, "{'a': null}").is_err());
        assert!(parse_value(&list_of(CqlType::Int), "[1, 'x']").is_err());
    }

    #[test]
    fn lengths_and_counts_are_bounded_by_the_bytes() {
        let ty = list_of(list_of(CqlType::Int));
        let mut huge = i32::MAX.to_be_bytes().to_vec();
        huge.extend_from_slice(&[0; 8]);
        assert!(super::super::deserialize(&ty, &huge).is_err());
        let mut long = 1i32.to_be_bytes().to_vec();
        long.extend_from_slice(&1_000_000i32.to_be_bytes());
        assert!(super::super::deserialize(&ty, &long).is_err());
    }

    #[test]
    fn type_names_print_and_parse_as_cassandra() {
        let t = CqlType::Map {
            key: Arc::new(CqlType::Text),
            value: Arc::new(list_of(CqlType::Int)),
            frozen: false,
        };
        assert_eq!(t.name(), "map<text, frozen<list<int>>>");
        assert_eq!(CqlType::from_descriptor(&t.name()).unwrap(), t);
        let tuple = CqlType::Tuple(Arc::new(vec![CqlType::Int, CqlType::Text]));
        assert_eq!(tuple.name(), "frozen<tuple<int, text>>");
        assert_eq!(CqlType::from_descriptor(&tuple.name()).unwrap(), tuple);
        assert_eq!(addr().name(), "frozen<addr>");
        assert_eq!(
            CqlType::from_descriptor(&addr().descriptor()).unwrap(),
            addr()
        );
    }

    fn nested() -> CqlType {
        CqlType::Map {
            key: Arc::new(CqlType::Int),
            value: Arc::new(CqlType::Tuple(Arc::new(vec![
                list_of(CqlType::Text),
                addr(),
            ]))),
            frozen: true,
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn frozen_list_order_is_lexicographic(
            a in proptest::collection::vec(any::<i32>(), 0..5),
            b in proptest::collection::vec(any::<i32>(), 0..5),
        ) {
            let v = |xs: &[i32]| Value::List(xs.iter().map(|x| Value::Int(*x)).collect());
            prop_assert_eq!(enc(&v(&a), false).cmp(&enc(&v(&b), false)), a.cmp(&b));
            prop_assert_eq!(enc(&v(&a), true).cmp(&enc(&v(&b), true)), b.cmp(&a));
        }

        #[test]
        fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..64)) {
            let ty = nested();
            let _ = super::super::deserialize(&ty, &bytes);
            for desc in [false, true] {
                let mut input = &bytes[..];
                let _ = decode_comparable(&ty, desc, &mut input);
            }
            if let Ok(text) = std::str::from_utf8(&bytes) {
                let _ = parse_value(&ty, text);
            }
        }
    }
}
