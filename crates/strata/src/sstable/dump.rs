//! An sstable's contents as JSON, in the shape Cassandra's `sstabledump`
//! prints: one object per partition (`"table kind"`, `"partition"` with its
//! key and deletion, `"rows"`), each row with its clustering, liveness,
//! deletion and cells, each cell with its value as CQL's `toJson` writes it
//! and its timestamp, TTL and expiry where they differ from the row's.
//!
//! Contract:
//! 1. What is printed is what the file stores, nothing merged or purged:
//!    tombstones, expired cells and shadowed data included.
//! 2. The file describes itself (its column header), so a file is dumped
//!    without its data directory; a file too old to carry the header is
//!    refused with what to do instead.
//! 3. Memory: one row at a time (partitions stream, as in compaction), and
//!    the output is written as it is produced.
//! 4. Timestamps print as ISO-8601 UTC (`2026-11-30T12:00:00.123456Z`), or as
//!    raw numbers with [`DumpOptions::raw_timestamps`] (`sstabledump -t`).
//!
//! Where the shape differs from `sstabledump` (docs/cql.md lists it too):
//! there is no `"position"` (Strata's files are not Cassandra's, and their
//! offsets mean nothing to Cassandra's tools); range tombstones are printed
//! as stored, a start and an end marker per range, where Cassandra writes one
//! boundary marker where two ranges meet.

use std::io::Write;
use std::sync::Arc;

use crate::data::DecoratedKey;
use crate::data::{Cell, CellKind, ClusteringBound, DeletionTime, LivenessInfo, Row};
use crate::error::{Error, Result};
use crate::fs::IoTag;
use crate::schema::TableSchema;
use crate::sstable::SSTableReader;
use crate::types::{self, CqlType, Value};

/// How to dump.
#[derive(Clone, Debug, Default)]
pub struct DumpOptions {
    /// Only this partition (`sstabledump -k`).
    pub key: Option<DecoratedKey>,
    /// Timestamps and deletion times as numbers (`sstabledump -t`).
    pub raw_timestamps: bool,
}

/// The schema a file's identity header describes (contract 2).
pub fn file_schema(reader: &SSTableReader) -> Result<TableSchema> {
    let identity = reader.identity().ok_or_else(|| {
        Error::InvalidInput(
            "this file's format predates its column header: dump it by table name \
             (keyspace.table) from its data directory"
                .into(),
        )
    })?;
    crate::schema_rebuild::schema_of_identity(identity, reader.path())
}

/// Key values as text, or the bytes when they do not decode (the dump still
/// shows the partition).
fn key_strings(schema: &TableSchema, key: &[u8]) -> Vec<String> {
    match schema.decode_partition_key(key) {
        Ok(v) => v.iter().map(types::format_value).collect(),
        Err(_) => vec![hex(key)],
    }
}

fn clustering_strings(schema: &TableSchema, prefix: &[u8]) -> Vec<String> {
    match schema.decode_clustering(prefix) {
        Ok(v) => v.iter().map(types::format_value).collect(),
        Err(_) => vec![hex(prefix)],
    }
}

fn hex(b: &[u8]) -> String {
    format!("0x{}", crate::query::executor::hex(b))
}

/// Writes `reader`'s partitions to `out` as a JSON array (module docs);
/// returns how many were written.
pub fn dump(reader: &Arc<SSTableReader>, opts: &DumpOptions, out: &mut dyn Write) -> Result<u64> {
    let schema = file_schema(reader)?;
    let io = |e: std::io::Error| Error::InvalidInput(format!("writing the dump: {e}"));
    let mut scanner = reader.scan_rows(IoTag::compaction(0))?;
    let mut written = 0u64;
    out.write_all(b"[").map_err(io)?;
    let p = Printer {
        schema: &schema,
        raw: opts.raw_timestamps,
    };
    while let Some(head) = scanner.next_partition()? {
        if opts.key.as_ref().is_some_and(|k| k.key != head.key.key) {
            continue;
        }
        let mut s = String::new();
        s.push_str(if written == 0 { "\n  {\n" } else { ",\n  {\n" });
        s.push_str("    \"table kind\" : \"REGULAR\",\n    \"partition\" : {\n      \"key\" : ");
        s.push_str(&string_list(&key_strings(&schema, &head.key.key)));
        if let Some(d) = head.deletion.partition.filter(|d| !d.is_live()) {
            s.push_str(",\n      \"deletion_info\" : ");
            s.push_str(&p.deletion(&d));
        }
        s.push_str("\n    },\n    \"rows\" : [");
        out.write_all(s.as_bytes()).map_err(io)?;
        let mut first = true;
        let mut item = |text: String, out: &mut dyn Write| -> Result<()> {
            let sep = if first { "\n" } else { ",\n" };
            first = false;
            out.write_all(sep.as_bytes()).map_err(io)?;
            out.write_all(text.as_bytes()).map_err(io)
        };
        if let Some(row) = &head.static_row {
            item(p.row(row, true), out)?;
        }
        // Range tombstone bounds as markers, each before the first row it
        // precedes (contract: as stored).
        let mut bounds: Vec<(ClusteringBound, bool, DeletionTime)> = Vec::new();
        for rt in &head.deletion.ranges {
            bounds.push((rt.range.start.clone(), true, rt.deletion));
            bounds.push((rt.range.end.clone(), false, rt.deletion));
        }
        let mut next = 0;
        while let Some(row) = scanner.next_row()? {
            while next < bounds.len() && precedes(&bounds[next].0, bounds[next].1, &row.clustering)
            {
                item(p.bound(&bounds[next]), out)?;
                next += 1;
            }
            item(p.row(&row, false), out)?;
        }
        for b in &bounds[next..] {
            item(p.bound(b), out)?;
        }
        out.write_all(if first { b"]\n  }" } else { b"\n    ]\n  }" })
            .map_err(io)?;
        written += 1;
    }
    out.write_all(if written == 0 { b"]\n" } else { b"\n]\n" })
        .map_err(io)?;
    Ok(written)
}

/// Whether a range bound (`start`: a start bound) sorts before the row at
/// `clustering`.
fn precedes(bound: &ClusteringBound, start: bool, clustering: &[u8]) -> bool {
    let p = bound.prefix.as_slice();
    if p.is_empty() {
        // Unbounded: a start comes before everything, an end after.
        return start;
    }
    let within = clustering.starts_with(p);
    match (start, bound.inclusive) {
        (true, true) => clustering >= p,
        (true, false) | (false, true) => clustering > p && !within,
        (false, false) => clustering >= p,
    }
}

struct Printer<'a> {
    schema: &'a TableSchema,
    raw: bool,
}

impl Printer<'_> {
    fn micros(&self, t: i64) -> String {
        if self.raw {
            t.to_string()
        } else {
            format!("\"{}\"", types::iso8601_micros(t))
        }
    }

    fn seconds(&self, t: i64) -> String {
        if self.raw {
            t.to_string()
        } else {
            format!("\"{}\"", types::iso8601_seconds(t))
        }
    }

    fn deletion(&self, d: &DeletionTime) -> String {
        format!(
            "{{ \"marked_deleted\" : {}, \"local_delete_time\" : {} }}",
            self.micros(d.marked_for_delete_at_micros),
            self.seconds(d.local_deletion_seconds)
        )
    }

    fn liveness(&self, l: &LivenessInfo) -> String {
        let mut s = format!("{{ \"tstamp\" : {}", self.micros(l.timestamp_micros));
        if l.ttl_seconds > 0 {
            s.push_str(&format!(
                ", \"ttl\" : {}, \"expires_at\" : {}",
                l.ttl_seconds,
                self.seconds(l.local_expiry_seconds)
            ));
        }
        s.push_str(" }");
        s
    }

    fn row(&self, row: &Row, is_static: bool) -> String {
        let mut s = String::from("      {\n        \"type\" : ");
        if is_static {
            s.push_str("\"static_block\"");
        } else {
            s.push_str("\"row\",\n        \"clustering\" : ");
            s.push_str(&string_list(&clustering_strings(
                self.schema,
                &row.clustering,
            )));
        }
        let has_liveness = row.liveness.timestamp_micros != crate::data::NO_TIMESTAMP;
        if has_liveness {
            s.push_str(",\n        \"liveness_info\" : ");
            s.push_str(&self.liveness(&row.liveness));
        }
        if !row.deletion.is_live() {
            s.push_str(",\n        \"deletion_info\" : ");
            s.push_str(&self.deletion(&row.deletion));
        }
        s.push_str(",\n        \"cells\" : [");
        for (i, cell) in row.cells.iter().enumerate() {
            s.push_str(if i == 0 { "\n" } else { ",\n" });
            s.push_str("          ");
            let row_ts = has_liveness.then_some(row.liveness.timestamp_micros);
            s.push_str(&self.cell(cell, row_ts));
        }
        s.push_str(if row.cells.is_empty() {
            "]\n      }"
        } else {
            "\n        ]\n      }"
        });
        s
    }

    fn cell(&self, cell: &Cell, row_timestamp: Option<i64>) -> String {
        let (name, ty) = match self.schema.column_by_id(cell.column) {
            Some(c) => (c.name.as_str(), Some(&c.ty)),
            None => ("", None),
        };
        let name = if name.is_empty() {
            format!("column {}", cell.column)
        } else {
            name.to_string()
        };
        let mut s = format!("{{ \"name\" : {}", json_string(&name));
        // An empty path is the column's complex deletion.
        if let Some(path) = &cell.path {
            if path.is_empty() {
                return format!(
                    "{s}, \"deletion_info\" : {} }}",
                    self.deletion(&DeletionTime::new(
                        cell.timestamp_micros,
                        cell.local_deletion_seconds
                    ))
                );
            }
            s.push_str(", \"path\" : ");
            s.push_str(&string_list(&[path_string(ty, path)]));
        }
        match cell.kind {
            CellKind::Tombstone => {
                s.push_str(&format!(
                    ", \"deletion_info\" : {{ \"local_delete_time\" : {} }}",
                    self.seconds(cell.local_deletion_seconds)
                ));
                if row_timestamp != Some(cell.timestamp_micros) {
                    s.push_str(&format!(
                        ", \"tstamp\" : {}",
                        self.micros(cell.timestamp_micros)
                    ));
                }
                s.push_str(" }");
                return s;
            }
            CellKind::Expiring | CellKind::Live | CellKind::Counter => {}
        }
        s.push_str(", \"value\" : ");
        s.push_str(&value_json(ty, cell));
        if row_timestamp != Some(cell.timestamp_micros) {
            s.push_str(&format!(
                ", \"tstamp\" : {}",
                self.micros(cell.timestamp_micros)
            ));
        }
        if cell.kind == CellKind::Expiring {
            s.push_str(&format!(
                ", \"ttl\" : {}, \"expires_at\" : {}",
                cell.ttl_seconds,
                self.seconds(cell.local_deletion_seconds)
            ));
        }
        s.push_str(" }");
        s
    }

    fn bound(&self, (b, start, d): &(ClusteringBound, bool, DeletionTime)) -> String {
        format!(
            "      {{\n        \"type\" : \"range_tombstone_bound\",\n        \"{}\" : {{\n          \"type\" : \"{}\",\n          \"clustering\" : {},\n          \"deletion_info\" : {}\n        }}\n      }}",
            if *start { "start" } else { "end" },
            if b.inclusive { "inclusive" } else { "exclusive" },
            string_list(&clustering_strings(self.schema, &b.prefix)),
            self.deletion(d)
        )
    }
}

/// The element a complex cell's path names, as text.
fn path_string(ty: Option<&CqlType>, path: &[u8]) -> String {
    let decoded = match ty {
        // List cells are keyed by a timeuuid that orders them.
        Some(CqlType::List { .. }) => {
            types::decode_comparable(&CqlType::TimeUuid, false, &mut &path[..])
        }
        Some(CqlType::Set { element, .. }) => {
            types::decode_comparable(element, false, &mut &path[..])
        }
        Some(CqlType::Map { key, .. }) => types::decode_comparable(key, false, &mut &path[..]),
        Some(CqlType::Udt { def, .. }) => {
            if let Ok(b) = <[u8; 2]>::try_from(path) {
                if let Some((name, _)) = def.fields.get(usize::from(u16::from_be_bytes(b))) {
                    return name.clone();
                }
            }
            Err(Error::InvalidInput("field path".into()))
        }
        _ => Err(Error::InvalidInput("path".into())),
    };
    match decoded {
        Ok(v) => types::format_value(&v),
        Err(_) => hex(path),
    }
}

/// A cell's value as `toJson` writes it, for the column's type (an element's
/// type for a collection cell).
fn value_json(ty: Option<&CqlType>, cell: &Cell) -> String {
    if cell.kind == CellKind::Counter {
        return match crate::counter::total(&cell.value) {
            Ok(n) => n.to_string(),
            Err(_) => json_string(&hex(&cell.value)),
        };
    }
    let elem: Option<&CqlType> = match (ty, &cell.path) {
        (Some(CqlType::List { element, .. }), Some(_)) => Some(element),
        (Some(CqlType::Set { .. }), Some(_)) => return "\"\"".to_string(),
        (Some(CqlType::Map { value, .. }), Some(_)) => Some(value),
        (Some(CqlType::Udt { def, .. }), Some(p)) => <[u8; 2]>::try_from(&p[..])
            .ok()
            .and_then(|b| def.fields.get(usize::from(u16::from_be_bytes(b))))
            .map(|(_, t)| t),
        (t, _) => t,
    };
    match elem.map(|t| types::deserialize(t, &cell.value)) {
        Some(Ok(v)) => value_to_json(&v),
        _ => json_string(&hex(&cell.value)),
    }
}

fn value_to_json(v: &Value) -> String {
    crate::query::json::value_to_json(v)
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).unwrap_or_else(|_| "\"\"".to_string())
}

fn string_list(items: &[String]) -> String {
    let inner: Vec<String> = items.iter().map(|s| json_string(s)).collect();
    format!("[ {} ]", inner.join(", "))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn b(prefix: &[u8], inclusive: bool) -> ClusteringBound {
        ClusteringBound {
            prefix: prefix.to_vec(),
            inclusive,
        }
    }

    #[test]
    fn bounds_sort_against_rows_as_their_ranges_cover_them() {
        // start >= "b": before "b" and "bx"; start > "b": after "b" and "bx".
        assert!(precedes(&b(b"b", true), true, b"b"));
        assert!(precedes(&b(b"b", true), true, b"bx"));
        assert!(!precedes(&b(b"b", true), true, b"a"));
        assert!(!precedes(&b(b"b", false), true, b"b"));
        assert!(!precedes(&b(b"b", false), true, b"bx"));
        assert!(precedes(&b(b"b", false), true, b"c"));
        // end <= "b": after "b" and "bx"; end < "b": before "b".
        assert!(!precedes(&b(b"b", true), false, b"bx"));
        assert!(precedes(&b(b"b", true), false, b"c"));
        assert!(precedes(&b(b"b", false), false, b"b"));
        assert!(!precedes(&b(b"b", false), false, b"a"));
        // Unbounded: a start before everything, an end after everything.
        assert!(precedes(&b(b"", true), true, b""));
        assert!(!precedes(&b(b"", true), false, b"zzz"));
    }

    #[test]
    fn times_print_as_iso8601_utc() {
        assert_eq!(types::iso8601_micros(0), "1970-01-01T00:00:00.000000Z");
        assert_eq!(
            types::iso8601_micros(1_764_504_000_123_456),
            "2025-11-30T12:00:00.123456Z"
        );
        assert_eq!(
            types::iso8601_seconds(1_764_504_000),
            "2025-11-30T12:00:00Z"
        );
        assert_eq!(types::iso8601_micros(-1), "1969-12-31T23:59:59.999999Z");
        assert_eq!(types::iso8601_micros(i64::MAX), i64::MAX.to_string());
    }
}
