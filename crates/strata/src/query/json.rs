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
        Value::Float(f) => float_json(f64::from(*f), &types::format_value(v)),
        Value::Double(f) => float_json(*f, &types::format_value(v)),
        Value::Timestamp(ms) => {
            // Cassandra's JSON timestamp: "yyyy-MM-dd HH:mm:ss.SSSZ" in UTC.
            let text = types::format_value(v);
            match text.split_once('T') {
                Some((d, t)) => json_string(&format!("{d} {t}")),
                None => ms.to_string(),
            }
        }
        _ => json_string(&types::format_value(v)),
    }
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

/// The JSON object key of a column: quoted inside when CQL needs quotes.
fn json_key(name: &str) -> String {
    let plain = name.chars().next().is_some_and(|c| c.is_ascii_lowercase())
        && name
            .chars()
            .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_');
    if plain {
        json_string(name)
    } else {
        json_string(&format!("\"{}\"", name.replace('"', "\"\"")))
    }
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
        out.push_str(&json_key(name));
        out.push_str(": ");
        match (v, ty.unfrozen()) {
            (None, _) => out.push_str("null"),
            (Some(b), ColumnType::Native(t)) => {
                let v = types::deserialize(*t, b).map_err(QueryError::from)?;
                out.push_str(&value_to_json(&v));
            }
            (Some(_), other) => {
                return Err(QueryError::invalid(format!(
                    "JSON output of {} values is not supported",
                    other.to_cql()
                )))
            }
        }
    }
    out.push('}');
    Ok(out.into_bytes())
}

/// A JSON value as a value of `ty` (Cassandra's `fromJSONObject`).
fn json_value(j: &serde_json::Value, ty: CqlType, column: &str) -> QueryOutcome<Bound> {
    use serde_json::Value as J;
    let bad =
        |why: &str| QueryError::invalid(format!("Error decoding JSON value for {column}: {why}"));
    let text = match j {
        J::Null => return Ok(Bound::Null),
        J::String(s) => s.clone(),
        J::Number(n) => {
            if matches!(
                ty,
                CqlType::Text
                    | CqlType::Ascii
                    | CqlType::Blob
                    | CqlType::Uuid
                    | CqlType::TimeUuid
                    | CqlType::Inet
            ) {
                return Err(bad(&format!(
                    "Expected a string representation of a {} value, but got a number",
                    ty.name()
                )));
            }
            n.to_string()
        }
        J::Bool(b) => {
            if ty != CqlType::Boolean {
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
        out.push((col.name.clone(), json_value(value, col.ty, &col.name)?));
    }
    for c in &schema.columns {
        if !out.iter().any(|(n, _)| *n == c.name) {
            match default {
                JsonDefault::Null if !c.is_primary_key() => out.push((c.name.clone(), Bound::Null)),
                _ => {}
            }
        }
    }
    Ok(out)
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
        assert_eq!(json_key("v"), "\"v\"");
        assert_eq!(json_key("MyCol"), "\"\\\"MyCol\\\"\"");
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
