//! The replay of a statement corpus recorded from Apache Cassandra 5.0.9
//! (tests/data/cassandra5/, written by its tools/record.py) against Strata's
//! executor, shared by the golden tests: the answer of each statement in the
//! corpus's JSON shape, and the differences from what Cassandra answered.
#![allow(dead_code)]

use std::sync::Arc;

use serde_json::Value as J;
use strata::clock::SystemClock;
use strata::db::{Database, DbOptions};
use strata::query::{
    Authenticator, BatchItem, BoundValue, ColumnType, Executor, NodeInfo, QueryParams, QueryResult,
    Session, Values,
};
use strata::types::{self, CqlType, Value};

pub fn executor(dir: &std::path::Path) -> Executor {
    let opts = DbOptions::new(SystemClock::new());
    let db = Arc::new(Database::open(dir, opts).expect("open"));
    Executor::new(
        db,
        NodeInfo {
            listen_address: std::net::IpAddr::from([127, 0, 0, 1]),
            native_port: 9042,
            cluster_name: "Test Cluster".into(),
            data_center: "datacenter1".into(),
            rack: "rack1".into(),
            release_version: strata::query::RELEASE_VERSION.into(),
            host_id: [7; 16],
        },
        Authenticator::AllowAll,
    )
    .expect("executor")
}

/// A type as the Python driver names it (`varchar` for text).
pub fn type_name(t: &ColumnType) -> String {
    match t.unfrozen() {
        ColumnType::Native(CqlType::Text) => "varchar".into(),
        ColumnType::Native(n) => n.name(),
        ColumnType::List(e) => format!("list<{}>", type_name(e)),
        ColumnType::Set(e) => format!("set<{}>", type_name(e)),
        ColumnType::Map(k, v) => format!("map<{}, {}>", type_name(k), type_name(v)),
        // The driver cannot tell frozen from the protocol: it prints tuples
        // and UDTs frozen, collections not.
        ColumnType::Tuple(items) => format!(
            "frozen<tuple<{}>>",
            items.iter().map(type_name).collect::<Vec<_>>().join(", ")
        ),
        ColumnType::Udt { name, .. } => format!("frozen<{name}>"),
        ColumnType::Vector(e, n) => format!(
            "org.apache.cassandra.db.marshal.VectorType<{}, {n}>",
            type_name(e)
        ),
        other => other.to_cql(),
    }
}

/// A corpus value (golden_common.py's encoding) serialized as `ty`.
pub fn to_bytes(v: &J, ty: &ColumnType) -> BoundValue {
    match v {
        J::Null => return BoundValue::Null,
        J::Object(o) if o.get("unset") == Some(&J::Bool(true)) => return BoundValue::Unset,
        _ => {}
    }
    match ty {
        ColumnType::Native(t) => {
            let text = match v {
                J::String(s) => s.clone(),
                J::Bool(b) => b.to_string(),
                J::Number(n) => n.to_string(),
                other => panic!("value {other} for {}", t.name()),
            };
            let value = strata::cql::literal::parse_value(t, &text)
                .unwrap_or_else(|e| panic!("value {text} for {}: {e}", t.name()));
            BoundValue::Value(types::serialize(&value))
        }
        ColumnType::List(e) | ColumnType::Set(e) => {
            let J::Array(items) = v else {
                panic!("expected a list for {}", ty.to_cql())
            };
            let mut out = (items.len() as i32).to_be_bytes().to_vec();
            for i in items {
                let BoundValue::Value(b) = to_bytes(i, e) else {
                    panic!("null in a collection")
                };
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(&b);
            }
            BoundValue::Value(out)
        }
        other => {
            let ty = other
                .stored_type()
                .unwrap_or_else(|| panic!("no encoding for {}", other.to_cql()));
            BoundValue::Value(types::serialize(&json_value(v, &ty)))
        }
    }
}

/// A corpus value (golden_common.py's encoding) as a value of `ty`.
pub fn json_value(v: &J, ty: &CqlType) -> Value {
    match (ty, v) {
        (CqlType::Duration, J::Object(o)) => Value::Duration {
            months: o["months"].as_i64().expect("months") as i32,
            days: o["days"].as_i64().expect("days") as i32,
            nanos: o["nanoseconds"].as_i64().expect("nanoseconds"),
        },
        (CqlType::List { element, .. }, J::Array(items)) => {
            Value::List(items.iter().map(|i| json_value(i, element)).collect())
        }
        (CqlType::Vector { element, .. }, J::Array(items)) => {
            Value::Vector(items.iter().map(|i| json_value(i, element)).collect())
        }
        (CqlType::Set { element, .. }, J::Array(items)) => Value::Set(
            types::composite::normalize_set(items.iter().map(|i| json_value(i, element)).collect()),
        ),
        (CqlType::Map { key, value, .. }, J::Object(o)) => {
            Value::Map(types::composite::normalize_map(
                o.iter()
                    .map(|(k, v)| {
                        let key = strata::cql::literal::parse_value(key, k)
                            .unwrap_or_else(|e| panic!("map key {k}: {e}"));
                        (key, json_value(v, value))
                    })
                    .collect(),
            ))
        }
        (CqlType::Tuple(types), J::Array(items)) => Value::Tuple(
            types
                .iter()
                .enumerate()
                .map(|(i, t)| {
                    items
                        .get(i)
                        .filter(|x| !x.is_null())
                        .map(|x| json_value(x, t))
                })
                .collect(),
        ),
        (CqlType::Udt { def, .. }, J::Object(o)) => Value::Udt(
            def.fields
                .iter()
                .map(|(n, t)| {
                    (
                        n.clone(),
                        o.get(n).filter(|x| !x.is_null()).map(|x| json_value(x, t)),
                    )
                })
                .collect(),
        ),
        // The driver sends a UDT it has no class for as a tuple of its fields.
        (CqlType::Udt { def, .. }, J::Array(items)) => Value::Udt(
            def.fields
                .iter()
                .enumerate()
                .map(|(i, (n, t))| {
                    (
                        n.clone(),
                        items
                            .get(i)
                            .filter(|x| !x.is_null())
                            .map(|x| json_value(x, t)),
                    )
                })
                .collect(),
        ),
        (t, v) => {
            let text = match v {
                J::String(s) => s.clone(),
                J::Bool(b) => b.to_string(),
                J::Number(n) => n.to_string(),
                other => panic!("value {other} for {}", t.name()),
            };
            strata::cql::literal::parse_value(t, &text)
                .unwrap_or_else(|e| panic!("value {text} for {}: {e}", t.name()))
        }
    }
}

/// A value in golden_common.py's encoding.
pub fn value_json(v: &Value) -> J {
    match v {
        Value::Boolean(x) => J::Bool(*x),
        Value::TinyInt(x) => J::from(*x),
        Value::SmallInt(x) => J::from(*x),
        Value::Int(x) => J::from(*x),
        Value::BigInt(x) | Value::Counter(x) => big_int(x.to_string()),
        Value::Float(x) => float(f64::from(*x)),
        Value::Double(x) => float(*x),
        Value::Varint(_) => big_int(types::format_value(v)),
        Value::Text(s) | Value::Ascii(s) => J::String(s.clone()),
        Value::Date(d) => {
            let days = i64::from(*d) - (1i64 << 31);
            if (-719_162..=2_932_896).contains(&days) {
                J::String(types::format_value(v))
            } else {
                J::from(days)
            }
        }
        Value::Time(n) => big_int(n.to_string()),
        Value::Duration {
            months,
            days,
            nanos,
        } => {
            serde_json::json!({"months": months, "days": days, "nanoseconds": big_int(nanos.to_string())})
        }
        Value::List(items) | Value::Set(items) | Value::Vector(items) => {
            J::Array(items.iter().map(value_json).collect())
        }
        Value::Tuple(items) => J::Array(
            items
                .iter()
                .map(|i| i.as_ref().map_or(J::Null, value_json))
                .collect(),
        ),
        Value::Map(entries) => {
            let mut m = serde_json::Map::new();
            for (k, v) in entries {
                let key = match value_json(k) {
                    J::String(s) => s,
                    other => other.to_string(),
                };
                m.insert(key, value_json(v));
            }
            J::Object(m)
        }
        Value::Udt(fields) => {
            let mut m = serde_json::Map::new();
            for (n, v) in fields {
                m.insert(n.clone(), v.as_ref().map_or(J::Null, value_json));
            }
            J::Object(m)
        }
        _ => J::String(types::format_value(v)),
    }
}

/// A raw corpus value: "0x.." bytes, null, or unset.
pub fn raw(v: &J) -> BoundValue {
    match v {
        J::Null => BoundValue::Null,
        J::Object(_) => BoundValue::Unset,
        J::String(s) => {
            let hex = s.strip_prefix("0x").expect("raw value in hex");
            let bytes = (0..hex.len() / 2)
                .map(|i| u8::from_str_radix(&hex[2 * i..2 * i + 2], 16).expect("hex"))
                .collect();
            BoundValue::Value(bytes)
        }
        other => panic!("raw value {other}"),
    }
}

/// A result value in golden_common.py's encoding.
pub fn to_json(bytes: &Option<Vec<u8>>, ty: &ColumnType) -> J {
    let Some(b) = bytes else {
        return J::Null;
    };
    match ty.unfrozen() {
        ColumnType::Native(t) => {
            if b.is_empty() && !matches!(t, CqlType::Text | CqlType::Ascii | CqlType::Blob) {
                // An empty value of a fixed-size type reads as null in the driver.
                return J::Null;
            }
            let v = match types::deserialize(t, b) {
                Ok(v) => v,
                Err(e) => return J::String(format!("<undecodable: {e}>")),
            };
            match v {
                Value::Boolean(x) => J::Bool(x),
                Value::TinyInt(x) => J::from(x),
                Value::SmallInt(x) => J::from(x),
                Value::Int(x) => J::from(x),
                Value::BigInt(x) => big_int(x.to_string()),
                Value::Float(x) => float(f64::from(x)),
                Value::Double(x) => float(x),
                Value::Varint(_) => big_int(types::format_value(&v)),
                Value::Text(s) | Value::Ascii(s) => J::String(s),
                // The recorder's driver shows a date outside years 1-9999
                // (what Python's date holds) as its day count from the epoch.
                Value::Date(d) => {
                    let days = i64::from(d) - (1i64 << 31);
                    if (-719_162..=2_932_896).contains(&days) {
                        J::String(types::format_value(&v))
                    } else {
                        J::from(days)
                    }
                }
                _ => J::String(types::format_value(&v)),
            }
        }
        other => match other.stored_type().map(|t| types::deserialize(&t, b)) {
            Some(Ok(v)) => value_json(&v),
            Some(Err(e)) => J::String(format!("<undecodable: {e}>")),
            None => J::String(format!("<{}>", other.to_cql())),
        },
    }
}

/// An integer as the corpus is read (`quote_big_numbers`): 16 digits or more
/// as a string.
pub fn big_int(text: String) -> J {
    if text.chars().filter(char::is_ascii_digit).count() >= 16 {
        J::String(text)
    } else {
        serde_json::from_str(&text).unwrap_or(J::String(text))
    }
}

pub fn float(f: f64) -> J {
    if f.is_nan() {
        J::String("NaN".into())
    } else if f.is_infinite() {
        J::String(if f > 0.0 { "Infinity" } else { "-Infinity" }.into())
    } else {
        serde_json::Number::from_f64(f).map_or(J::Null, J::Number)
    }
}

pub fn elements(b: &[u8], per: usize) -> Vec<Vec<u8>> {
    let mut r = b;
    let mut take = |n: usize| -> Option<Vec<u8>> {
        if r.len() < n {
            return None;
        }
        let (h, t) = r.split_at(n);
        r = t;
        Some(h.to_vec())
    };
    let n = i32::from_be_bytes(take(4).expect("count").try_into().expect("4 bytes"));
    let mut out = Vec::new();
    for _ in 0..n.max(0) as usize * per {
        let len = i32::from_be_bytes(take(4).expect("len").try_into().expect("4 bytes"));
        out.push(take(len.max(0) as usize).expect("element"));
    }
    out
}

/// Whether an expected value matches (`"<time>"` matches anything; floats
/// by value).
pub fn matches(expected: &J, got: &J) -> bool {
    match (expected, got) {
        (J::String(s), _) if s == "<time>" => true,
        (J::Number(a), J::Number(b)) => a.as_f64() == b.as_f64(),
        (J::Array(a), J::Array(b)) => {
            a.len() == b.len() && a.iter().zip(b).all(|(x, y)| matches(x, y))
        }
        (J::Object(a), J::Object(b)) => {
            a.len() == b.len()
                && a.iter()
                    .all(|(k, v)| b.get(k).is_some_and(|w| matches(v, w)))
        }
        _ => expected == got,
    }
}

/// What Strata answered, in the corpus's shape.
pub fn answer(exec: &Executor, session: &mut Session, line: &J) -> J {
    let error = |e: strata::query::QueryError| serde_json::json!({"error": {"code": format!("0x{:04x}", e.kind.code()), "message": e.message}});
    let page_size = line.get("page_size").and_then(J::as_u64);
    let mut params = QueryParams {
        page_size: Some(match page_size {
            Some(0) => 0,
            Some(n) => n as u32,
            None => 5000,
        }),
        ..QueryParams::default()
    };
    if page_size == Some(0) {
        params.page_size = None;
    }
    let mut extra = serde_json::Map::new();
    if let Some(batch) = line.get("batch").and_then(J::as_array) {
        let mut items = Vec::new();
        for s in batch {
            let cql = s["cql"].as_str().expect("cql");
            let prepared = match exec.prepare(session, cql) {
                Ok(p) => Arc::new(p),
                Err(e) => return error(e),
            };
            let values = s["values"]
                .as_array()
                .expect("values")
                .iter()
                .zip(&prepared.bind)
                .map(|(v, b)| to_bytes(v, &b.ty))
                .collect();
            items.push(BatchItem::Prepared {
                prepared,
                values: Values::Positional(values),
            });
        }
        let kind = match line["batch_type"].as_str() {
            Some("UNLOGGED") => strata::cql::ast::BatchKind::Unlogged,
            Some("COUNTER") => strata::cql::ast::BatchKind::Counter,
            _ => strata::cql::ast::BatchKind::Logged,
        };
        return match exec.batch(session, kind, &items, &params) {
            Ok(r) => result_json(r.result, r.warnings, None),
            Err(e) => error(e),
        };
    }
    let cql = line["cql"].as_str().expect("cql");
    let prepared = if line.get("values").is_some() || line.get("raw_values").is_some() {
        match exec.prepare(session, cql) {
            Ok(p) => {
                extra.insert(
                    "bind_types".into(),
                    J::Array(
                        p.bind
                            .iter()
                            .map(|b| serde_json::json!([b.name, type_name(&b.ty)]))
                            .collect(),
                    ),
                );
                extra.insert(
                    "pk_indexes".into(),
                    J::Array(p.pk_indexes.iter().map(|i| J::from(*i)).collect()),
                );
                let values: Vec<BoundValue> =
                    if let Some(v) = line.get("values").and_then(J::as_array) {
                        v.iter()
                            .zip(&p.bind)
                            .map(|(v, b)| to_bytes(v, &b.ty))
                            .collect()
                    } else {
                        line["raw_values"]
                            .as_array()
                            .expect("raw_values")
                            .iter()
                            .map(raw)
                            .collect()
                    };
                params.values = Values::Positional(values);
                Some(p)
            }
            Err(e) => {
                let mut out = error(e);
                if let J::Object(o) = &mut out {
                    o.extend(extra);
                }
                return out;
            }
        }
    } else {
        None
    };
    let mut pages: Vec<J> = Vec::new();
    let mut first: Option<J> = None;
    loop {
        let r = match &prepared {
            Some(p) => exec.execute(session, p, &params),
            None => exec.query(session, cql, &params),
        };
        let r = match r {
            Ok(r) => r,
            Err(e) => {
                let mut out = error(e);
                if let J::Object(o) = &mut out {
                    o.extend(extra);
                }
                return out;
            }
        };
        let paging = match &r.result {
            QueryResult::Rows(rows) => rows.paging_state.clone(),
            _ => None,
        };
        let j = result_json(r.result, r.warnings, Some(&extra));
        if page_size.is_none() || !matches!(j["result"]["kind"].as_str(), Some("rows")) {
            return j;
        }
        pages.push(serde_json::json!({
            "rows": j["result"]["rows"].clone(),
            "paging_state_present": paging.is_some(),
        }));
        if first.is_none() {
            first = Some(j);
        }
        match paging {
            Some(p) if pages.len() < 1000 => params.paging_state = Some(p),
            _ => break,
        }
    }
    let mut out = first.unwrap_or(J::Null);
    if let Some(r) = out.get_mut("result").and_then(J::as_object_mut) {
        r.remove("rows");
        r.remove("paging_state_present");
        r.insert("pages".into(), J::Array(pages));
    }
    out
}

pub fn result_json(
    r: QueryResult,
    warnings: Vec<String>,
    extra: Option<&serde_json::Map<String, J>>,
) -> J {
    let result = match r {
        QueryResult::Void => serde_json::json!({"kind": "void"}),
        QueryResult::SetKeyspace(k) => serde_json::json!({"kind": "set_keyspace", "keyspace": k}),
        QueryResult::SchemaChange(c) => {
            let mut change = serde_json::Map::new();
            change.insert("change_type".into(), J::String(c.kind.name().into()));
            match c.target {
                strata::query::SchemaTarget::Keyspace(k) => {
                    change.insert("keyspace".into(), J::String(k));
                    change.insert("target_type".into(), J::String("KEYSPACE".into()));
                }
                strata::query::SchemaTarget::Table { keyspace, table } => {
                    change.insert("keyspace".into(), J::String(keyspace));
                    change.insert("table".into(), J::String(table));
                    change.insert("target_type".into(), J::String("TABLE".into()));
                }
                strata::query::SchemaTarget::Type { keyspace, name } => {
                    change.insert("keyspace".into(), J::String(keyspace));
                    change.insert("type".into(), J::String(name));
                    change.insert("target_type".into(), J::String("TYPE".into()));
                }
            }
            serde_json::json!({"kind": "schema_change", "change": change})
        }
        QueryResult::Rows(rows) => {
            let columns: Vec<J> = rows
                .metadata
                .columns
                .iter()
                .map(|c| serde_json::json!([c.name, type_name(&c.ty)]))
                .collect();
            let values: Vec<J> = rows
                .rows
                .iter()
                .map(|r| {
                    J::Array(
                        r.iter()
                            .zip(&rows.metadata.columns)
                            .map(|(v, c)| to_json(v, &c.ty))
                            .collect(),
                    )
                })
                .collect();
            let mut o = serde_json::json!({
                "kind": "rows",
                "columns": columns,
                "rows": values,
                "paging_state_present": rows.paging_state.is_some(),
            });
            if !warnings.is_empty() {
                o["warnings"] = J::Array(warnings.into_iter().map(J::String).collect());
            }
            o
        }
    };
    let mut out = serde_json::Map::new();
    out.insert("result".into(), result);
    if let Some(e) = extra {
        out.extend(e.clone());
    }
    J::Object(out)
}

/// The syntax error code: its message is compared by code only, since
/// Cassandra's is ANTLR's wording ("line 1:12 mismatched input ...") and
/// Strata's names the byte and what was expected (docs/cql.md says so).
const SYNTAX_ERROR: &str = "0x2000";

/// Compares an answer with the recorded one; returns what differs.
pub fn differences(expected: &J, got: &J) -> Vec<String> {
    let mut out = Vec::new();
    for key in ["bind_types", "pk_indexes"] {
        if let Some(e) = expected.get(key) {
            if got.get(key) != Some(e) {
                out.push(format!(
                    "{key}: expected {e}, got {}",
                    got.get(key).unwrap_or(&J::Null)
                ));
            }
        }
    }
    match (expected.get("error"), got.get("error")) {
        (Some(e), Some(g)) => {
            if e["code"] != g["code"] {
                out.push(format!(
                    "error code: expected {} got {} ({})",
                    e["code"], g["code"], g["message"]
                ));
            } else if e["code"] != SYNTAX_ERROR && e["message"] != g["message"] {
                out.push(format!(
                    "error message: expected {} got {}",
                    e["message"], g["message"]
                ));
            }
        }
        (Some(e), None) => out.push(format!(
            "expected error {} {}, got {}",
            e["code"], e["message"], got
        )),
        (None, Some(g)) => out.push(format!(
            "expected {}, got error {} {}",
            expected["result"], g["code"], g["message"]
        )),
        (None, None) => {
            let (e, g) = (&expected["result"], &got["result"]);
            if e["kind"] != g["kind"] {
                out.push(format!("kind: expected {e}, got {g}"));
                return out;
            }
            for key in [
                "change",
                "keyspace",
                "columns",
                "paging_state_present",
                "warnings",
            ] {
                let ev = e.get(key).cloned().unwrap_or(J::Null);
                let gv = g.get(key).cloned().unwrap_or(J::Null);
                if key == "warnings" && ev.is_null() && gv.is_null() {
                    continue;
                }
                if ev != gv {
                    out.push(format!("{key}: expected {ev}, got {gv}"));
                }
            }
            if let Some(er) = e.get("rows") {
                if !matches(er, &g["rows"]) {
                    out.push(format!("rows: expected {er}, got {}", g["rows"]));
                }
            }
            if let Some(ep) = e.get("pages") {
                if !matches(ep, &g["pages"]) {
                    out.push(format!("pages: expected {ep}, got {}", g["pages"]));
                }
            }
        }
    }
    out
}

/// The corpus line with every integer of 16 digits or more written as a
/// string: serde_json would read it as a float and lose digits (varints).
pub fn quote_big_numbers(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut in_string = false;
    let mut escaped = false;
    let chars: Vec<char> = line.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if escaped {
                escaped = false;
            } else if c == '\\' {
                escaped = true;
            } else if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        if c == '"' {
            in_string = true;
            out.push(c);
            i += 1;
            continue;
        }
        if c == '-' || c.is_ascii_digit() {
            let start = i;
            i += 1;
            while i < chars.len() && (chars[i].is_ascii_digit() || ".eE+-".contains(chars[i])) {
                i += 1;
            }
            let token: String = chars[start..i].iter().collect();
            let digits = token.chars().filter(char::is_ascii_digit).count();
            if digits >= 16 && token.chars().all(|c| c == '-' || c.is_ascii_digit()) {
                out.push('"');
                out.push_str(&token);
                out.push('"');
            } else {
                out.push_str(&token);
            }
            continue;
        }
        out.push(c);
        i += 1;
    }
    out
}

/// Runs one statement on `exec` in a fresh session: its result, or the
/// error's message.
pub fn query(exec: &Executor, cql: &str) -> Result<strata::query::QueryResult, String> {
    exec.query(
        &mut strata::query::Session::default(),
        cql,
        &strata::query::QueryParams::default(),
    )
    .map(|r| r.result)
    .map_err(|e| e.message)
}
