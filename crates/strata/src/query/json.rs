//! `SELECT JSON`, `INSERT JSON` and `toJson()`: values to and from JSON as
//! Cassandra's types write them (`AbstractType.toJSONString` / `fromJSONObject`).
//!
//! Owns the JSON spelling of each type: numbers as JSON numbers, text, UUIDs,
//! blobs (`"0x..."`), addresses, dates and timestamps (`"2024-05-01
//! 10:00:00.000Z"`) as JSON strings; and the reading side, which also takes
//! numbers given as strings, as Cassandra does. Column names are object keys,
//! double-quoted inside the key when CQL would need quotes (`"\"Name\""`).
//!
//! Pure, any thread. Invariant: no JSON input panics; a malformed document or
//! a value of the wrong shape is an `Invalid` error naming the column.

use crate::cql::ast::JsonDefault;
use crate::schema::TableSchema;
use crate::types::{self, CqlType, Value};

use super::values::Bound;
use super::{ColumnType, QueryError, QueryOutcome};

/// Deepest JSON document accepted (serde_json's own recursion limit is 128).
const MAX_JSON_BYTES: usize = 16 << 20;

/// A value as Cassandra's `toJSONString` writes it.
pub(crate) fn value_to_json(v: &Value) -> String {
    match v {
        Value::Boolean(b) => b.to_string(),
        Value::TinyInt(_)
        | Value::SmallInt(_)
        | Value::Int(_)
        | Value::BigInt(_)
        | Value::Varint(_)
        | Value::Decimal { .. } => types::format_value(v),
        // Cassandra writes a non-finite number as null (JSON has no NaN).
        Value::Float(f) if !f.is_finite() => "null".to_string(),
        Value::Double(f) if !f.is_finite() => "null".to_string(),
        Value::Float(f) => float_json(
            f64::from(*f),
            &java_float_text(format!("{f:e}"), f64::from(*f)),
        ),
        Value::Double(f) => float_json(*f, &java_float_text(format!("{f:e}"), *f)),
        Value::Inet(b) if b.len() == 16 => {
            // Java's InetAddress prints IPv6 uncompressed, without leading zeros.
            let groups: Vec<String> = b
                .chunks(2)
                .map(|g| format!("{:x}", u16::from_be_bytes([g[0], g[1]])))
                .collect();
            json_string(&groups.join(":"))
        }
        Value::Timestamp(ms) => {
            // Cassandra's JSON timestamp: "yyyy-MM-dd HH:mm:ss.SSSZ" in UTC.
            let text = types::format_value(v);
            match text.split_once('T') {
                Some((d, t)) => json_string(&format!("{d} {t}")),
                None => ms.to_string(),
            }
        }
        Value::Counter(n) => n.to_string(),
        Value::List(items) | Value::Set(items) | Value::Vector(items) => {
            let parts: Vec<String> = items.iter().map(value_to_json).collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Tuple(items) => {
            let parts: Vec<String> = items
                .iter()
                .map(|i| i.as_ref().map_or("null".to_string(), value_to_json))
                .collect();
            format!("[{}]", parts.join(", "))
        }
        Value::Map(entries) => {
            // JSON keys are strings: a non-text key is its JSON text, quoted
            // (Cassandra's `MapType.toJSONString`).
            let parts: Vec<String> = entries
                .iter()
                .map(|(k, v)| {
                    let key = value_to_json(k);
                    let key = if key.starts_with('"') {
                        key
                    } else {
                        json_string(&key)
                    };
                    format!("{key}: {}", value_to_json(v))
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        Value::Udt(fields) => {
            let parts: Vec<String> = fields
                .iter()
                .map(|(n, v)| {
                    format!(
                        "{}: {}",
                        json_string(n),
                        v.as_ref().map_or("null".to_string(), value_to_json)
                    )
                })
                .collect();
            format!("{{{}}}", parts.join(", "))
        }
        _ => json_string(&types::format_value(v)),
    }
}

/// A float as Java's `Double.toString` / `Float.toString` prints it:
/// plain with at least one decimal between 10^-3 and 10^7 (`1.5`, `100.0`),
/// otherwise `d.dddE±n` (`1.0E100`). `sci` is Rust's shortest scientific
/// form of the same value (`1e100`), whose digits both keep.
fn java_float_text(sci: String, f: f64) -> String {
    if !f.is_finite() {
        return types::format_value(&Value::Double(f));
    }
    let Some((mantissa, exp)) = sci.split_once('e') else {
        return sci;
    };
    let exp: i32 = exp.parse().unwrap_or(0);
    let (neg, mantissa) = match mantissa.strip_prefix('-') {
        Some(m) => (true, m),
        None => (false, mantissa),
    };
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let sign = if neg { "-" } else { "" };
    let abs = f.abs();
    if abs == 0.0 || (1e-3..1e7).contains(&abs) {
        // Plain: place the point `exp` digits after the first.
        let point = exp + 1;
        let text = if point <= 0 {
            format!("0.{}{}", "0".repeat((-point) as usize), digits)
        } else if point as usize >= digits.len() {
            format!("{}{}.0", digits, "0".repeat(point as usize - digits.len()))
        } else {
            format!(
                "{}.{}",
                &digits[..point as usize],
                &digits[point as usize..]
            )
        };
        return format!("{sign}{text}");
    }
    let rest = if digits.len() > 1 { &digits[1..] } else { "0" };
    format!("{sign}{}.{rest}E{exp}", &digits[..1])
}

fn float_json(f: f64, text: &str) -> String {
    if f.is_finite() {
        text.to_string()
    } else {
        // Cassandra writes NaN and Infinity bare (not valid JSON, but what
        // clients of Cassandra see); a string keeps ours parseable.
        json_string(text)
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

/// One row of SELECT JSON: `{"col": value, ...}` as serialized text.
pub(crate) fn row_to_json(
    columns: &[(String, ColumnType)],
    values: &[Option<Vec<u8>>],
) -> QueryOutcome<Vec<u8>> {
    let mut out = String::from("{");
    for (i, ((name, ty), v)) in columns.iter().zip(values).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        // The plan has already quoted what CQL would quote.
        out.push_str(&json_string(name));
        out.push_str(": ");
        match (v, ty.stored_type()) {
            (None, _) => out.push_str("null"),
            (Some(b), Some(t)) => {
                let v = types::deserialize(&t, b).map_err(QueryError::from)?;
                out.push_str(&value_to_json(&v));
            }
            (Some(_), None) => {
                return Err(QueryError::invalid(format!(
                    "JSON output of {} values is not supported",
                    ty.to_cql()
                )))
            }
        }
    }
    out.push('}');
    Ok(out.into_bytes())
}

/// `fromJson(text)` for a receiver of type `ty`.
pub(crate) fn from_json(text: &str, ty: CqlType, column: &str) -> QueryOutcome<Bound> {
    let j: serde_json::Value = serde_json::from_str(text).map_err(|e| {
        QueryError::new(
            crate::cql::CqlErrorKind::FunctionFailure,
            format!("Could not decode JSON string '{text}': {e}"),
        )
    })?;
    json_value(&j, &ty, column)
}

/// A JSON value as a value of `ty` (Cassandra's `fromJSONObject`).
fn json_value(j: &serde_json::Value, ty: &CqlType, column: &str) -> QueryOutcome<Bound> {
    if !ty.is_native() {
        return json_composite(j, ty, column);
    }
    use serde_json::Value as J;
    let bad =
        |why: &str| QueryError::invalid(format!("Error decoding JSON value for {column}: {why}"));
    // Java's class names, as Cassandra's messages name the JSON value.
    let java_class = |j: &serde_json::Value| match j {
        J::Number(n) if n.is_i64() || n.is_u64() => "Integer",
        J::Number(_) => "Double",
        J::Bool(_) => "Boolean",
        J::Array(_) => "ArrayList",
        J::Object(_) => "LinkedHashMap",
        _ => "String",
    };
    let text = match j {
        J::Null => return Ok(Bound::Null),
        J::String(s) => s.clone(),
        J::Number(n) => {
            match ty {
                CqlType::Text | CqlType::Ascii => {
                    return Err(bad(&format!(
                        "Expected {} string, but got a {}: {n}",
                        if *ty == CqlType::Text {
                            "a UTF-8"
                        } else {
                            "an ascii"
                        },
                        java_class(j)
                    )))
                }
                CqlType::Blob | CqlType::Uuid | CqlType::TimeUuid | CqlType::Inet => {
                    return Err(bad(&format!(
                        "Expected a string representation of a {} value, but got a {}: {n}",
                        ty.name(),
                        java_class(j)
                    )))
                }
                _ => {}
            }
            n.to_string()
        }
        J::Bool(b) => {
            if *ty != CqlType::Boolean {
                return Err(bad(&format!(
                    "Expected a {} value, but got a boolean",
                    ty.name()
                )));
            }
            b.to_string()
        }
        J::Array(_) | J::Object(_) => {
            return Err(bad(&format!(
                "Expected a {} value, but got a JSON array or object",
                ty.name()
            )))
        }
    };
    let v = crate::cql::literal::parse_value(ty, &text).map_err(|e| bad(&e.to_string()))?;
    Ok(Bound::Value(v))
}

/// The column values of `INSERT JSON 'doc'`: every column of the document,
/// and for the others null (`DEFAULT NULL`) or nothing (`DEFAULT UNSET`).
pub(crate) fn insert_values(
    schema: &TableSchema,
    text: &str,
    default: JsonDefault,
) -> QueryOutcome<Vec<(String, Bound)>> {
    if text.len() > MAX_JSON_BYTES {
        return Err(QueryError::invalid(format!(
            "JSON document of {} bytes is larger than the {MAX_JSON_BYTES} accepted",
            text.len()
        )));
    }
    let doc: serde_json::Value = serde_json::from_str(text)
        .map_err(|e| QueryError::invalid(format!("Could not decode JSON string '{text}': {e}")))?;
    let serde_json::Value::Object(map) = doc else {
        return Err(QueryError::invalid(format!(
            "Could not decode JSON string as a map: {text}"
        )));
    };
    let mut out: Vec<(String, Bound)> = Vec::new();
    for (key, value) in &map {
        // `"\"Name\""` names a case-sensitive column; a plain key folds.
        let name = if key.len() >= 2 && key.starts_with('"') && key.ends_with('"') {
            key[1..key.len() - 1].replace("\"\"", "\"")
        } else {
            key.to_lowercase()
        };
        let col = schema
            .columns
            .iter()
            .find(|c| c.name == name)
            .ok_or_else(|| {
                QueryError::invalid(format!(
                    "JSON values map contains unrecognized column: {key}"
                ))
            })?;
        out.push((col.name.clone(), json_value(value, &col.ty, &col.name)?));
    }
    // Columns the document leaves out: null (DEFAULT NULL, a tombstone; a key
    // column then fails as a null key, as in Cassandra) or left alone.
    for c in &schema.columns {
        if !out.iter().any(|(n, _)| *n == c.name) && default == JsonDefault::Null {
            out.push((c.name.clone(), Bound::Null));
        }
    }
    Ok(out)
}

/// A JSON value as a collection, tuple, UDT or vector (Cassandra's
/// `fromJSONObject`): arrays for lists, sets, vectors and tuples, objects for
/// maps (keys as strings, read as the key type) and UDTs (keys as field
/// names).
fn json_composite(j: &serde_json::Value, ty: &CqlType, column: &str) -> QueryOutcome<Bound> {
    use crate::types::composite::{normalize_map, normalize_set};
    use serde_json::Value as J;
    let bad =
        |why: String| QueryError::invalid(format!("Error decoding JSON value for {column}: {why}"));
    let required = |b: Bound| match b {
        Bound::Value(v) => Ok(v),
        _ => Err(bad("null is not supported inside collections".to_string())),
    };
    let optional = |b: Bound| match b {
        Bound::Value(v) => Some(v),
        _ => None,
    };
    let v = match (j, ty) {
        (J::Null, _) => return Ok(Bound::Null),
        (
            J::Array(items),
            CqlType::List { element, .. }
            | CqlType::Set { element, .. }
            | CqlType::Vector { element, .. },
        ) => {
            let values = items
                .iter()
                .map(|i| json_value(i, element, column).and_then(required))
                .collect::<QueryOutcome<Vec<Value>>>()?;
            match ty {
                CqlType::Set { .. } => Value::Set(normalize_set(values)),
                CqlType::Vector { dimension, .. } => {
                    if values.len() != *dimension as usize {
                        return Err(bad(format!(
                            "expected {dimension} elements, got {}",
                            values.len()
                        )));
                    }
                    Value::Vector(values)
                }
                _ => Value::List(values),
            }
        }
        (J::Array(items), CqlType::Tuple(types)) => {
            if items.len() > types.len() {
                return Err(bad(format!(
                    "Tuple contains extra items (expected {})",
                    types.len()
                )));
            }
            let mut out = Vec::with_capacity(types.len());
            for (i, t) in items.iter().zip(types.iter()) {
                out.push(optional(json_value(i, t, column)?));
            }
            out.resize(types.len(), None);
            Value::Tuple(out)
        }
        (J::Object(entries), CqlType::Map { key, value, .. }) => {
            let mut out = Vec::with_capacity(entries.len());
            for (k, v) in entries {
                let k = json_value(&J::String(k.clone()), key, column).and_then(required)?;
                out.push((k, json_value(v, value, column).and_then(required)?));
            }
            Value::Map(normalize_map(out))
        }
        (J::Object(entries), CqlType::Udt { def, .. }) => {
            let mut out: Vec<(String, Option<Value>)> =
                def.fields.iter().map(|(n, _)| (n.clone(), None)).collect();
            for (k, v) in entries {
                let name = if k.len() >= 2 && k.starts_with('"') && k.ends_with('"') {
                    k[1..k.len() - 1].to_string()
                } else {
                    k.to_lowercase()
                };
                let Some(i) = def.fields.iter().position(|(n, _)| *n == name) else {
                    return Err(bad(format!(
                        "Unknown field '{name}' in value of user defined type {}",
                        def.name
                    )));
                };
                out[i].1 = optional(json_value(v, &def.fields[i].1, column)?);
            }
            Value::Udt(out)
        }
        (J::String(text), _) => {
            // A composite written as its CQL literal inside a JSON string.
            crate::cql::literal::parse_value(ty, text).map_err(|e| bad(e.to_string()))?
        }
        _ => {
            return Err(bad(format!(
                "Expected a {} value, but got {}",
                ty.name(),
                j
            )))
        }
    };
    Ok(Bound::Value(v))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_spelled_as_cassandra_spells_them() {
        assert_eq!(value_to_json(&Value::Int(3)), "3");
        assert_eq!(value_to_json(&Value::Text("a\"b".into())), "\"a\\\"b\"");
        assert_eq!(value_to_json(&Value::Blob(vec![0xca, 0xfe])), "\"0xcafe\"");
        assert_eq!(
            value_to_json(&Value::Timestamp(1_000)),
            "\"1970-01-01 00:00:01.000Z\""
        );
        assert_eq!(json_string("v"), "\"v\"");
        // The plan quotes a column needing it; the key escapes the quotes.
        assert_eq!(json_string("\"MyCol\""), "\"\\\"MyCol\\\"\"");
    }

    #[test]
    fn documents_are_checked_against_the_columns() {
        let schema =
            TableSchema::from_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text, n bigint)")
                .unwrap();
        let got = insert_values(&schema, r#"{"k": 1, "v": "x"}"#, JsonDefault::Null).unwrap();
        assert!(got.contains(&("k".to_string(), Bound::Value(Value::Int(1)))));
        assert!(got.contains(&("n".to_string(), Bound::Null)));
        let unset = insert_values(&schema, r#"{"k": "1"}"#, JsonDefault::Unset).unwrap();
        assert_eq!(unset, vec![("k".to_string(), Bound::Value(Value::Int(1)))]);
        assert!(insert_values(&schema, r#"{"zz": 1}"#, JsonDefault::Null).is_err());
        assert!(insert_values(&schema, r#"{"v": 1}"#, JsonDefault::Null).is_err());
        assert!(insert_values(&schema, "[1]", JsonDefault::Null).is_err());
        assert!(insert_values(&schema, "{", JsonDefault::Null).is_err());
    }
}
