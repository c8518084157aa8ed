//! Cassandra's names and byte rules for Strata's CQL types: the
//! `AbstractType` strings of an sstable's serialization header, which values
//! are written with a length and which raw, Cassandra's column order, and
//! the conversion of Strata's byte-comparable clustering values and cell
//! paths back to Cassandra's serialized values.
//!
//! Contract:
//! 1. [`type_name`] is Cassandra 5.0's `AbstractType.toString()` for the
//!    type: `FrozenType(...)` around a frozen collection or UDT,
//!    `TupleType`'s parameters unfrozen, a UDT's keyspace, name and field
//!    names in hex. The header's types decode the rows: a wrong name gives
//!    wrong values in Cassandra, not an error.
//! 2. [`fixed_length`] is `valueLengthIfFixed()`: such values are written
//!    raw, every other value with a vint length ([`write_value`]).
//! 3. [`cassandra_order`] sorts a table's regular (or static) columns as
//!    Cassandra's `Columns` does: simple before complex, then by the name's
//!    UTF-8 bytes. Column subsets in rows are indexes into this order.

use crate::cassandra::vint;
use crate::error::{Error, Result};
use crate::schema::ColumnDef;
use crate::types::{self, CqlType};

const MARSHAL: &str = "org.apache.cassandra.db.marshal.";

/// Cassandra's type string for `ty` (contract 1).
pub fn type_name(ty: &CqlType) -> String {
    name(ty, false)
}

/// `ReversedType(...)` around a descending clustering column's type.
pub fn clustering_type_name(ty: &CqlType, descending: bool) -> String {
    if descending {
        format!("{MARSHAL}ReversedType({})", type_name(ty))
    } else {
        type_name(ty)
    }
}

/// The partition key's type: the one column's, or `CompositeType` of them.
pub fn key_type_name(key_columns: &[&ColumnDef]) -> String {
    match key_columns {
        [one] => type_name(&one.ty),
        many => {
            let parts: Vec<String> = many.iter().map(|c| type_name(&c.ty)).collect();
            format!("{MARSHAL}CompositeType({})", parts.join(","))
        }
    }
}

fn name(ty: &CqlType, ignore_freezing: bool) -> String {
    let simple = |n: &str| format!("{MARSHAL}{n}");
    // Cassandra writes a frozen multi-cell type inside FrozenType(...), and
    // the parameters of a frozen type without their own FrozenType.
    let collection = |n: &str, params: &[&CqlType], frozen: bool| {
        let inner: Vec<String> = params
            .iter()
            .map(|p| name(p, ignore_freezing || frozen))
            .collect();
        let body = format!("{MARSHAL}{n}({})", inner.join(","));
        if frozen && !ignore_freezing {
            format!("{MARSHAL}FrozenType({body})")
        } else {
            body
        }
    };
    match ty {
        CqlType::Boolean => simple("BooleanType"),
        CqlType::TinyInt => simple("ByteType"),
        CqlType::SmallInt => simple("ShortType"),
        CqlType::Int => simple("Int32Type"),
        CqlType::BigInt => simple("LongType"),
        CqlType::Float => simple("FloatType"),
        CqlType::Double => simple("DoubleType"),
        CqlType::Text => simple("UTF8Type"),
        CqlType::Ascii => simple("AsciiType"),
        CqlType::Blob => simple("BytesType"),
        CqlType::Uuid => simple("UUIDType"),
        CqlType::TimeUuid => simple("TimeUUIDType"),
        CqlType::Timestamp => simple("TimestampType"),
        CqlType::Date => simple("SimpleDateType"),
        CqlType::Varint => simple("IntegerType"),
        CqlType::Decimal => simple("DecimalType"),
        CqlType::Inet => simple("InetAddressType"),
        CqlType::Time => simple("TimeType"),
        CqlType::Duration => simple("DurationType"),
        CqlType::Counter => simple("CounterColumnType"),
        CqlType::List { element, frozen } => collection("ListType", &[element], *frozen),
        CqlType::Set { element, frozen } => collection("SetType", &[element], *frozen),
        CqlType::Map { key, value, frozen } => collection("MapType", &[key, value], *frozen),
        CqlType::Tuple(parts) => {
            let inner: Vec<String> = parts.iter().map(|p| name(p, true)).collect();
            format!("{MARSHAL}TupleType({})", inner.join(","))
        }
        CqlType::Udt { def, frozen } => {
            let mut body = format!(
                "{MARSHAL}UserType({},{}",
                def.keyspace,
                hex(def.name.as_bytes())
            );
            for (field, fty) in &def.fields {
                body.push(',');
                body.push_str(&hex(field.as_bytes()));
                body.push(':');
                body.push_str(&name(fty, ignore_freezing || *frozen));
            }
            body.push(')');
            if *frozen && !ignore_freezing {
                format!("{MARSHAL}FrozenType({body})")
            } else {
                body
            }
        }
        CqlType::Vector { element, dimension } => {
            format!(
                "{MARSHAL}VectorType({} , {dimension})",
                name(element, ignore_freezing)
            )
        }
    }
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

/// Length of every value of `ty` when it is fixed (contract 2).
pub fn fixed_length(ty: &CqlType) -> Option<usize> {
    match ty {
        CqlType::Boolean => Some(1),
        CqlType::Int | CqlType::Float => Some(4),
        CqlType::BigInt | CqlType::Double | CqlType::Timestamp => Some(8),
        CqlType::Uuid | CqlType::TimeUuid => Some(16),
        CqlType::Vector { element, dimension } => {
            fixed_length(element).map(|n| n * *dimension as usize)
        }
        _ => None,
    }
}

/// Appends a value as `AbstractType.writeValue` does for `ty`. A fixed-length
/// type's value of another length cannot be written (Cassandra would
/// misread every value after it): an error.
pub fn write_value(ty: &CqlType, value: &[u8], out: &mut Vec<u8>) -> Result<()> {
    match fixed_length(ty) {
        Some(n) if n == value.len() => out.extend_from_slice(value),
        Some(n) => {
            return Err(Error::InvalidInput(format!(
                "a {} value of {} bytes, where Cassandra's type holds exactly {n}",
                ty.name(),
                value.len()
            )))
        }
        None => write_with_length(value, out),
    }
    Ok(())
}

/// A vint length, then the bytes (`writeWithVIntLength`).
pub fn write_with_length(value: &[u8], out: &mut Vec<u8>) {
    vint::write_unsigned(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// Whether a column of this type stores one cell per element (Cassandra's
/// "complex" columns: non-frozen collections and UDTs).
pub fn is_complex(ty: &CqlType) -> bool {
    matches!(
        ty,
        CqlType::List { frozen: false, .. }
            | CqlType::Set { frozen: false, .. }
            | CqlType::Map { frozen: false, .. }
            | CqlType::Udt { frozen: false, .. }
    )
}

/// Regular or static columns in Cassandra's order (contract 3).
pub fn cassandra_order<'a>(columns: impl IntoIterator<Item = &'a ColumnDef>) -> Vec<&'a ColumnDef> {
    let mut v: Vec<&ColumnDef> = columns.into_iter().collect();
    v.sort_by(|a, b| {
        is_complex(&a.ty)
            .cmp(&is_complex(&b.ty))
            .then_with(|| a.name.as_bytes().cmp(b.name.as_bytes()))
    });
    v
}

/// Cassandra's cell path of a complex column's element, from Strata's
/// (`crate::complex` contract 1): a set element or map key serialized, a
/// list cell's timeuuid, a UDT field's index as it is.
pub fn cell_path(ty: &CqlType, path: &[u8]) -> Result<Vec<u8>> {
    let key_ty = match ty {
        CqlType::Set { element, .. } => element.as_ref().clone(),
        CqlType::Map { key, .. } => key.as_ref().clone(),
        CqlType::List { .. } => CqlType::TimeUuid,
        CqlType::Udt { .. } => return Ok(path.to_vec()),
        other => {
            return Err(Error::InvalidInput(format!(
                "a cell path in a column of type {}",
                other.name()
            )))
        }
    };
    let mut input = path;
    let v = types::decode_comparable(&key_ty, false, &mut input)?;
    if !input.is_empty() {
        return Err(Error::InvalidInput(format!(
            "a {} cell path has {} bytes after its value",
            ty.name(),
            input.len()
        )));
    }
    Ok(types::serialize(&v))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Arc;

    fn m(s: &str) -> String {
        s.replace('@', MARSHAL)
    }

    #[test]
    fn type_names_are_cassandras() {
        // Strings as Cassandra 5.0.9's AbstractType.toString() prints them.
        let int = Arc::new(CqlType::Int);
        let text = Arc::new(CqlType::Text);
        let frozen_map = Arc::new(CqlType::Map {
            key: int.clone(),
            value: text.clone(),
            frozen: true,
        });
        let cases = [
            (CqlType::Int, "@Int32Type"),
            (
                CqlType::List {
                    element: int.clone(),
                    frozen: false,
                },
                "@ListType(@Int32Type)",
            ),
            (
                CqlType::Set {
                    element: frozen_map.clone(),
                    frozen: false,
                },
                "@SetType(@FrozenType(@MapType(@Int32Type,@UTF8Type)))",
            ),
            (
                CqlType::List {
                    element: frozen_map.clone(),
                    frozen: true,
                },
                "@FrozenType(@ListType(@MapType(@Int32Type,@UTF8Type)))",
            ),
            (
                CqlType::Tuple(Arc::new(vec![CqlType::Int, (*frozen_map).clone()])),
                "@TupleType(@Int32Type,@MapType(@Int32Type,@UTF8Type))",
            ),
            (
                CqlType::Vector {
                    element: Arc::new(CqlType::Float),
                    dimension: 3,
                },
                "@VectorType(@FloatType , 3)",
            ),
        ];
        for (ty, want) in cases {
            assert_eq!(type_name(&ty), m(want));
        }
        let udt = CqlType::Udt {
            def: Arc::new(crate::types::UdtDef {
                keyspace: "ks".into(),
                name: "ad".into(),
                fields: vec![("n".into(), CqlType::Int)],
            }),
            frozen: true,
        };
        assert_eq!(
            type_name(&udt),
            m("@FrozenType(@UserType(ks,6164,6e:@Int32Type))")
        );
        assert_eq!(
            clustering_type_name(&CqlType::Text, true),
            m("@ReversedType(@UTF8Type)")
        );
    }

    #[test]
    fn fixed_values_are_raw_and_others_length_prefixed() {
        let mut out = Vec::new();
        write_value(&CqlType::Int, &[0, 0, 0, 7], &mut out).unwrap();
        write_value(&CqlType::SmallInt, &[0, 7], &mut out).unwrap();
        assert_eq!(out, [0, 0, 0, 7, 2, 0, 7]);
        assert!(write_value(&CqlType::Int, &[1], &mut out).is_err());
    }
}
