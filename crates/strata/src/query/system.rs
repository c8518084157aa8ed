//! The system and virtual tables a driver reads: `system.local`,
//! `system.peers(_v2)`, `system_schema.*`, `system_views.*` and
//! `system_virtual_schema.*`, built from the catalog and the node's figures
//! at each read, with Cassandra 5's names and types.
//!
//! Owns the routing of a SELECT between user tables (`select`) and these
//! virtual ones, and a small SELECT over in-memory rows: the column list or
//! `*`, `count(*)`, aliases, `=`/`IN` restrictions on any column and LIMIT,
//! which is every form drivers and cqlsh send to them.
//!
//! Invariants:
//! 1. Every table keeps Cassandra 5.0's column names, kinds and types, so a
//!    driver's metadata parser reads it unchanged; a column Strata has no
//!    figure for is null, never made up.
//! 2. System keyspaces are read-only: writes are refused (`Unauthorized`, as
//!    Cassandra refuses them).
//! 3. Rows come out in Cassandra's order: partitions by token of their key,
//!    then clustering columns ascending.

use std::sync::Arc;

use crate::cql::ast::{Operator, RelationTarget, Select, Selection, Selector, Term};
use crate::options::{CompressorClass, TableOptions};
use crate::schema::{ColumnKind, TableSchema};
use crate::types::{self, CqlType, Value};

use super::executor::Ctx;
use super::values::{self, encode_list, encode_map, Bound};
use super::{ColumnSpec, ColumnType, QueryError, QueryOutcome, QueryResult, Rows, RowsMetadata};

/// Keyspaces that exist on every node and hold no user data.
pub(crate) const SYSTEM_KEYSPACES: &[&str] = &[
    "system",
    "system_schema",
    "system_auth",
    "system_distributed",
    "system_traces",
    "system_views",
    "system_virtual_schema",
];

/// The keyspaces whose tables are virtual (no sstables, even in Cassandra).
const VIRTUAL_KEYSPACES: &[&str] = &["system_views", "system_virtual_schema"];

pub(crate) fn is_system_keyspace(ks: &str) -> bool {
    SYSTEM_KEYSPACES.contains(&ks)
}

type Col = (&'static str, &'static str, ColumnKind);

const PK: ColumnKind = ColumnKind::PartitionKey;
const CK: ColumnKind = ColumnKind::Clustering;
const REG: ColumnKind = ColumnKind::Regular;

/// Column definitions: `(name, CQL type, kind)`, in Cassandra's column order
/// (partition key, clustering, then regular columns by name).
fn definition(ks: &str, table: &str) -> Option<&'static [Col]> {
    Some(match (ks, table) {
        ("system", "local") => &[
            ("key", "text", PK),
            ("bootstrapped", "text", REG),
            ("broadcast_address", "inet", REG),
            ("broadcast_port", "int", REG),
            ("cluster_name", "text", REG),
            ("cql_version", "text", REG),
            ("data_center", "text", REG),
            ("gossip_generation", "int", REG),
            ("host_id", "uuid", REG),
            ("listen_address", "inet", REG),
            ("listen_port", "int", REG),
            ("native_protocol_version", "text", REG),
            ("partitioner", "text", REG),
            ("rack", "text", REG),
            ("release_version", "text", REG),
            ("rpc_address", "inet", REG),
            ("rpc_port", "int", REG),
            ("schema_version", "uuid", REG),
            ("tokens", "set<text>", REG),
            ("truncated_at", "map<uuid, blob>", REG),
        ],
        ("system", "peers") => &[
            ("peer", "inet", PK),
            ("data_center", "text", REG),
            ("host_id", "uuid", REG),
            ("preferred_ip", "inet", REG),
            ("rack", "text", REG),
            ("release_version", "text", REG),
            ("rpc_address", "inet", REG),
            ("schema_version", "uuid", REG),
            ("tokens", "set<text>", REG),
        ],
        ("system", "peers_v2") => &[
            ("peer", "inet", PK),
            ("peer_port", "int", CK),
            ("data_center", "text", REG),
            ("host_id", "uuid", REG),
            ("native_address", "inet", REG),
            ("native_port", "int", REG),
            ("preferred_ip", "inet", REG),
            ("preferred_port", "int", REG),
            ("rack", "text", REG),
            ("release_version", "text", REG),
            ("schema_version", "uuid", REG),
            ("tokens", "set<text>", REG),
        ],
        ("system", "size_estimates") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("range_start", "text", CK),
            ("range_end", "text", CK),
            ("mean_partition_size", "bigint", REG),
            ("partitions_count", "bigint", REG),
        ],
        ("system_schema", "keyspaces") => &[
            ("keyspace_name", "text", PK),
            ("durable_writes", "boolean", REG),
            ("replication", "frozen<map<text, text>>", REG),
        ],
        ("system_schema", "tables") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("additional_write_policy", "text", REG),
            ("allow_auto_snapshot", "boolean", REG),
            ("bloom_filter_fp_chance", "double", REG),
            ("caching", "frozen<map<text, text>>", REG),
            ("cdc", "boolean", REG),
            ("comment", "text", REG),
            ("compaction", "frozen<map<text, text>>", REG),
            ("compression", "frozen<map<text, text>>", REG),
            ("crc_check_chance", "double", REG),
            ("dclocal_read_repair_chance", "double", REG),
            ("default_time_to_live", "int", REG),
            ("extensions", "frozen<map<text, blob>>", REG),
            ("flags", "frozen<set<text>>", REG),
            ("gc_grace_seconds", "int", REG),
            ("id", "uuid", REG),
            ("incremental_backups", "boolean", REG),
            ("max_index_interval", "int", REG),
            ("memtable", "text", REG),
            ("memtable_flush_period_in_ms", "int", REG),
            ("min_index_interval", "int", REG),
            ("read_repair", "text", REG),
            ("read_repair_chance", "double", REG),
            ("speculative_retry", "text", REG),
        ],
        ("system_schema", "columns") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("column_name", "text", CK),
            ("clustering_order", "text", REG),
            ("column_name_bytes", "blob", REG),
            ("kind", "text", REG),
            ("position", "int", REG),
            ("type", "text", REG),
        ],
        ("system_schema", "column_masks") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("column_name", "text", CK),
            ("function_argument_nulls", "frozen<list<boolean>>", REG),
            ("function_argument_types", "frozen<list<text>>", REG),
            ("function_argument_values", "frozen<list<text>>", REG),
            ("function_keyspace", "text", REG),
            ("function_name", "text", REG),
        ],
        ("system_schema", "dropped_columns") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("column_name", "text", CK),
            ("dropped_time", "timestamp", REG),
            ("kind", "text", REG),
            ("type", "text", REG),
        ],
        ("system_schema", "triggers") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("trigger_name", "text", CK),
            ("options", "frozen<map<text, text>>", REG),
        ],
        ("system_schema", "views") => &[
            ("keyspace_name", "text", PK),
            ("view_name", "text", CK),
            ("base_table_id", "uuid", REG),
            ("base_table_name", "text", REG),
            ("where_clause", "text", REG),
            ("include_all_columns", "boolean", REG),
            ("id", "uuid", REG),
        ],
        ("system_schema", "indexes") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("index_name", "text", CK),
            ("kind", "text", REG),
            ("options", "frozen<map<text, text>>", REG),
        ],
        ("system_schema", "types") => &[
            ("keyspace_name", "text", PK),
            ("type_name", "text", CK),
            ("field_names", "frozen<list<text>>", REG),
            ("field_types", "frozen<list<text>>", REG),
        ],
        ("system_schema", "functions") => &[
            ("keyspace_name", "text", PK),
            ("function_name", "text", CK),
            ("argument_types", "frozen<list<text>>", CK),
            ("argument_names", "frozen<list<text>>", REG),
            ("body", "text", REG),
            ("called_on_null_input", "boolean", REG),
            ("language", "text", REG),
            ("return_type", "text", REG),
        ],
        ("system_schema", "aggregates") => &[
            ("keyspace_name", "text", PK),
            ("aggregate_name", "text", CK),
            ("argument_types", "frozen<list<text>>", CK),
            ("final_func", "text", REG),
            ("initcond", "text", REG),
            ("return_type", "text", REG),
            ("state_func", "text", REG),
            ("state_type", "text", REG),
        ],
        ("system_virtual_schema", "keyspaces") => &[("keyspace_name", "text", PK)],
        ("system_virtual_schema", "tables") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("comment", "text", REG),
        ],
        ("system_virtual_schema", "columns") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("column_name", "text", CK),
            ("clustering_order", "text", REG),
            ("column_name_bytes", "blob", REG),
            ("kind", "text", REG),
            ("position", "int", REG),
            ("type", "text", REG),
        ],
        ("system_views", "settings") => &[("name", "text", PK), ("value", "text", REG)],
        ("system_views", "clients") => &[
            ("address", "inet", PK),
            ("port", "int", CK),
            ("client_options", "frozen<map<text, text>>", REG),
            ("connection_stage", "text", REG),
            ("driver_name", "text", REG),
            ("driver_version", "text", REG),
            ("hostname", "text", REG),
            ("keyspace_name", "text", REG),
            ("protocol_version", "int", REG),
            ("request_count", "bigint", REG),
            ("ssl_cipher_suite", "text", REG),
            ("ssl_enabled", "boolean", REG),
            ("ssl_protocol", "text", REG),
            ("username", "text", REG),
        ],
        ("system_views", "disk_usage") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("mebibytes", "bigint", REG),
        ],
        ("system_views", "local_read_latency") | ("system_views", "local_write_latency") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("count", "bigint", REG),
            ("max_ms", "double", REG),
            ("p50th_ms", "double", REG),
            ("p99th_ms", "double", REG),
        ],
        ("system_views", "sstable_tasks") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("task_id", "timeuuid", CK),
            ("completion_ratio", "double", REG),
            ("kind", "text", REG),
            ("progress", "bigint", REG),
            ("sstables", "int", REG),
            ("total", "bigint", REG),
            ("unit", "text", REG),
        ],
        ("system_views", "caches") => &[
            ("name", "text", PK),
            ("capacity_bytes", "bigint", REG),
            ("entry_count", "int", REG),
            ("hit_count", "bigint", REG),
            ("hit_ratio", "double", REG),
            ("recent_hit_rate_per_second", "bigint", REG),
            ("recent_request_rate_per_second", "bigint", REG),
            ("request_count", "bigint", REG),
            ("size_bytes", "bigint", REG),
        ],
        ("system_views", "thread_pools") => &[
            ("name", "text", PK),
            ("active_tasks", "int", REG),
            ("active_tasks_limit", "int", REG),
            ("blocked_tasks", "bigint", REG),
            ("blocked_tasks_all_time", "bigint", REG),
            ("completed_tasks", "bigint", REG),
            ("pending_tasks", "int", REG),
        ],
        ("system_views", "strata_tables") => &[
            ("keyspace_name", "text", PK),
            ("table_name", "text", CK),
            ("compaction_strategy", "text", REG),
            ("live_bytes", "bigint", REG),
            ("memtable_bytes", "bigint", REG),
            ("pending_compactions", "int", REG),
            ("read_count", "bigint", REG),
            ("sstable_count", "int", REG),
            ("write_amplification", "double", REG),
            ("write_count", "bigint", REG),
        ],
        _ => return None,
    })
}

/// Parses a type text of the definitions above.
fn parse_type(text: &str) -> ColumnType {
    let t = text.trim();
    let inner = |prefix: &str| t.strip_prefix(prefix).and_then(|r| r.strip_suffix('>'));
    if let Some(i) = inner("frozen<") {
        return ColumnType::Frozen(Box::new(parse_type(i)));
    }
    if let Some(i) = inner("set<") {
        return ColumnType::Set(Box::new(parse_type(i)));
    }
    if let Some(i) = inner("list<") {
        return ColumnType::List(Box::new(parse_type(i)));
    }
    if let Some(i) = inner("map<") {
        if let Some((k, v)) = i.split_once(',') {
            return ColumnType::Map(Box::new(parse_type(k)), Box::new(parse_type(v)));
        }
    }
    // The definitions above only name native types; an unknown name would be
    // a mistake in this file, shown as text rather than a panic.
    CqlType::parse(t).map_or(ColumnType::Native(CqlType::Text), ColumnType::Native)
}

/// A system table's columns: name, type, kind.
pub(crate) fn virtual_columns(
    ks: &str,
    table: &str,
) -> QueryOutcome<Vec<(String, ColumnType, ColumnKind)>> {
    let def = definition(ks, table)
        .ok_or_else(|| QueryError::invalid(format!("table {table} does not exist")))?;
    Ok(def
        .iter()
        .map(|(n, t, k)| (n.to_string(), parse_type(t), *k))
        .collect())
}

/// Rows of a virtual table, each a value per column (serialized).
type VRows = Vec<Vec<Option<Vec<u8>>>>;

fn text(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}
fn int(i: i32) -> Option<Vec<u8>> {
    Some(i.to_be_bytes().to_vec())
}
fn bigint(i: i64) -> Option<Vec<u8>> {
    Some(i.to_be_bytes().to_vec())
}
fn double(f: f64) -> Option<Vec<u8>> {
    Some(f.to_be_bytes().to_vec())
}
fn boolean(b: bool) -> Option<Vec<u8>> {
    Some(vec![u8::from(b)])
}
fn uuid(u: [u8; 16]) -> Option<Vec<u8>> {
    Some(u.to_vec())
}
fn inet(a: std::net::IpAddr) -> Option<Vec<u8>> {
    Some(match a {
        std::net::IpAddr::V4(v) => v.octets().to_vec(),
        std::net::IpAddr::V6(v) => v.octets().to_vec(),
    })
}
fn text_set(items: &[String]) -> Option<Vec<u8>> {
    let mut sorted: Vec<Vec<u8>> = items.iter().map(|s| s.as_bytes().to_vec()).collect();
    sorted.sort();
    sorted.dedup();
    Some(encode_list(&sorted))
}
fn text_map(entries: &[(String, String)]) -> Option<Vec<u8>> {
    let mut e: Vec<(Vec<u8>, Vec<u8>)> = entries
        .iter()
        .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
        .collect();
    e.sort();
    Some(encode_map(&e))
}

/// The node's single token: Strata owns the whole ring. Cassandra's
/// `Murmur3Partitioner` minimum token, so `token(k) > t` ranges cover
/// everything from one node's view.
const TOKEN: &str = "-9223372036854775808";

/// The CQL version Cassandra 5.0 reports.
const CQL_VERSION: &str = "3.4.7";

fn local_rows(ctx: &Ctx<'_>) -> VRows {
    let n = ctx.exec.node();
    vec![vec![
        text("local"),
        text("COMPLETED"),
        inet(n.listen_address),
        int(7000),
        text(&n.cluster_name),
        text(CQL_VERSION),
        text(&n.data_center),
        int(0),
        uuid(n.host_id),
        inet(n.listen_address),
        int(7000),
        text("5"),
        text("org.apache.cassandra.dht.Murmur3Partitioner"),
        text(&n.rack),
        text(&n.release_version),
        inet(n.listen_address),
        int(i32::from(n.native_port)),
        uuid(ctx.exec.schema_version()),
        text_set(&[TOKEN.to_string()]),
        None,
    ]]
}

/// Cassandra's fully qualified class name for a compaction strategy.
fn compaction_class(short: &str) -> String {
    if short.contains('.') {
        short.to_string()
    } else {
        format!("org.apache.cassandra.db.compaction.{short}")
    }
}

fn compression_map(o: &TableOptions) -> Vec<(String, String)> {
    let c = &o.compression;
    let class = |name: &str| {
        (
            "class".to_string(),
            format!("org.apache.cassandra.io.compress.{name}"),
        )
    };
    let chunk = (
        "chunk_length_in_kb".to_string(),
        c.chunk_length_in_kb.to_string(),
    );
    match c.class {
        CompressorClass::None => vec![("enabled".to_string(), "false".to_string())],
        CompressorClass::Lz4 => vec![chunk, class("LZ4Compressor")],
        CompressorClass::Zstd => vec![
            chunk,
            class("ZstdCompressor"),
            (
                "compression_level".to_string(),
                c.compression_level.to_string(),
            ),
        ],
        CompressorClass::ZstdWithDicts => vec![
            chunk,
            class("ZstdDictionaryCompressor"),
            (
                "compression_level".to_string(),
                c.compression_level.to_string(),
            ),
        ],
        CompressorClass::Lz4WithDicts => vec![chunk, class("LZ4DictionaryCompressor")],
    }
}

fn keyspace_rows(ctx: &Ctx<'_>) -> VRows {
    let catalog = ctx.exec.db.catalog();
    let mut rows: VRows = Vec::new();
    for ks in catalog.keyspaces.values() {
        let (durable, replication) = ctx.exec.keyspace_params(&ks.name);
        rows.push(vec![
            text(&ks.name),
            boolean(durable),
            text_map(&replication),
        ]);
    }
    for ks in SYSTEM_KEYSPACES
        .iter()
        .filter(|k| !VIRTUAL_KEYSPACES.contains(k))
    {
        let class = if matches!(*ks, "system_auth" | "system_distributed" | "system_traces") {
            vec![
                (
                    "class".to_string(),
                    "org.apache.cassandra.locator.SimpleStrategy".to_string(),
                ),
                (
                    "replication_factor".to_string(),
                    if *ks == "system_auth" { "1" } else { "3" }.to_string(),
                ),
            ]
        } else {
            vec![(
                "class".to_string(),
                "org.apache.cassandra.locator.LocalStrategy".to_string(),
            )]
        };
        rows.push(vec![text(ks), boolean(true), text_map(&class)]);
    }
    rows
}

fn table_row(t: &TableSchema) -> Vec<Option<Vec<u8>>> {
    options_row(&t.keyspace, &t.name, &t.options, table_uuid(t))
}

/// A `system_schema.tables` row from a table's options; the columns Strata
/// has no setting for show Cassandra's defaults.
fn options_row(
    keyspace: &str,
    table: &str,
    o: &TableOptions,
    id: [u8; 16],
) -> Vec<Option<Vec<u8>>> {
    let mut compaction: Vec<(String, String)> = o
        .compaction
        .options()
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect();
    // Cassandra lists the common thresholds with their defaults for every
    // strategy.
    for (k, v) in [("max_threshold", "32"), ("min_threshold", "4")] {
        if !compaction.iter().any(|(key, _)| key == k) {
            compaction.push((k.to_string(), v.to_string()));
        }
    }
    compaction.push((
        "class".to_string(),
        compaction_class(o.compaction.class().name()),
    ));
    vec![
        text(keyspace),
        text(table),
        text("99p"),
        boolean(true),
        double(o.bloom_filter_fp_chance),
        text_map(&[
            ("keys".to_string(), "ALL".to_string()),
            ("rows_per_partition".to_string(), "NONE".to_string()),
        ]),
        boolean(false),
        text(&o.comment),
        text_map(&compaction),
        text_map(&compression_map(o)),
        double(1.0),
        double(0.0),
        int(o.default_time_to_live_seconds as i32),
        Some(encode_map(&[])),
        text_set(&["compound".to_string()]),
        int(o.gc_grace_seconds as i32),
        uuid(id),
        boolean(true),
        int(2048),
        text("default"),
        int(o.memtable_flush_period_in_ms as i32),
        int(128),
        text("BLOCKING"),
        double(0.0),
        text("99p"),
    ]
}

/// The table's id as a UUID: the one the catalog stores, or, for a table
/// from before tables had one, a name-based one (stable for the table's life).
fn table_uuid(t: &TableSchema) -> [u8; 16] {
    t.uuid().unwrap_or_else(|| {
        name_uuid(|d| {
            d.str(&t.keyspace);
            d.str(&t.name);
            d.bytes(&t.id.to_be_bytes());
        })
    })
}

/// A version 3 (name-based) UUID of what `feed` digests.
fn name_uuid(feed: impl FnOnce(&mut super::types::Digest)) -> [u8; 16] {
    let mut d = super::types::Digest::new();
    feed(&mut d);
    let mut u = d.finish();
    u[6] = (u[6] & 0x0F) | 0x30;
    u[8] = (u[8] & 0x3F) | 0x80;
    u
}

/// The system tables this node serves that are not virtual, as
/// `(keyspace, table)`: listed in `system_schema` as Cassandra lists its own,
/// since drivers (cqlsh first) look a table up there before they show its rows.
pub(crate) fn schema_listed_system_tables() -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for (ks, tables) in [
        ("system", &["local", "peers", "peers_v2"][..]),
        (
            "system_schema",
            &[
                "aggregates",
                "columns",
                "dropped_columns",
                "functions",
                "indexes",
                "keyspaces",
                "tables",
                "triggers",
                "types",
                "views",
            ][..],
        ),
    ] {
        for t in tables {
            if definition(ks, t).is_some() {
                out.push((ks, *t));
            }
        }
    }
    out
}

/// A system table's `system_schema.tables` row: the default options (the
/// rows live in memory here; nothing is flushed or compacted).
fn system_table_row(ks: &str, table: &str) -> Vec<Option<Vec<u8>>> {
    let id = name_uuid(|d| {
        d.str(ks);
        d.str(table);
    });
    options_row(ks, table, &TableOptions::default(), id)
}

/// A system table's `system_schema.columns` rows, from its definition.
fn system_column_rows(ks: &str, table: &str) -> VRows {
    let mut rows = Vec::new();
    let Some(def) = definition(ks, table) else {
        return rows;
    };
    let (mut pk, mut ck) = (0, 0);
    for (name, ty, kind) in def {
        let (k, pos, order) = match kind {
            ColumnKind::PartitionKey => {
                pk += 1;
                ("partition_key", pk - 1, "none")
            }
            ColumnKind::Clustering => {
                ck += 1;
                ("clustering", ck - 1, "asc")
            }
            ColumnKind::Static => ("static", -1, "none"),
            ColumnKind::Regular => ("regular", -1, "none"),
        };
        rows.push(vec![
            text(ks),
            text(table),
            text(name),
            text(order),
            Some(name.as_bytes().to_vec()),
            text(k),
            int(pos),
            text(ty),
        ]);
    }
    rows
}

fn tables_rows(ctx: &Ctx<'_>) -> VRows {
    let catalog = ctx.exec.db.catalog();
    let mut rows: VRows = schema_listed_system_tables()
        .into_iter()
        .map(|(ks, t)| system_table_row(ks, t))
        .collect();
    for ks in catalog.keyspaces.values() {
        for t in ks.tables.values() {
            rows.push(table_row(t));
        }
    }
    rows
}

fn column_rows(t: &TableSchema) -> VRows {
    t.columns
        .iter()
        .map(|c| {
            let (kind, position, order) = match c.kind {
                ColumnKind::PartitionKey => ("partition_key", c.position as i32, "none"),
                ColumnKind::Clustering => (
                    "clustering",
                    c.position as i32,
                    if c.descending { "desc" } else { "asc" },
                ),
                ColumnKind::Regular => ("regular", -1, "none"),
                ColumnKind::Static => ("static", -1, "none"),
            };
            vec![
                text(&t.keyspace),
                text(&t.name),
                text(&c.name),
                text(order),
                Some(c.name.as_bytes().to_vec()),
                text(kind),
                int(position),
                text(&c.ty.name()),
            ]
        })
        .collect()
}

/// `system_schema.types`: each user-defined type's field names and types.
fn types_rows(ctx: &Ctx<'_>) -> VRows {
    let list = |items: Vec<String>| {
        Some(crate::types::serialize(&crate::types::Value::List(
            items.into_iter().map(crate::types::Value::Text).collect(),
        )))
    };
    let catalog = ctx.exec.db.catalog();
    let mut rows = Vec::new();
    for ks in catalog.keyspaces.values() {
        for t in ks.types.values() {
            rows.push(vec![
                text(&t.keyspace),
                text(&t.name),
                list(t.fields.iter().map(|(n, _)| n.clone()).collect()),
                list(t.fields.iter().map(|(_, ty)| ty.name()).collect()),
            ]);
        }
    }
    rows
}

fn columns_rows(ctx: &Ctx<'_>) -> VRows {
    let catalog = ctx.exec.db.catalog();
    let mut rows: VRows = schema_listed_system_tables()
        .into_iter()
        .flat_map(|(ks, t)| system_column_rows(ks, t))
        .collect();
    for ks in catalog.keyspaces.values() {
        for t in ks.tables.values() {
            rows.extend(column_rows(t));
        }
    }
    rows
}

/// The virtual tables Strata serves, as `(keyspace, table)`.
fn virtual_tables() -> Vec<(&'static str, &'static str)> {
    let mut out = Vec::new();
    for ks in VIRTUAL_KEYSPACES {
        for t in [
            "keyspaces",
            "tables",
            "columns",
            "settings",
            "clients",
            "disk_usage",
            "local_read_latency",
            "local_write_latency",
            "sstable_tasks",
            "caches",
            "thread_pools",
            "strata_tables",
        ] {
            if definition(ks, t).is_some() {
                out.push((*ks, t));
            }
        }
    }
    out
}

fn virtual_schema_rows(table: &str) -> VRows {
    let mut rows = Vec::new();
    match table {
        "keyspaces" => {
            for ks in VIRTUAL_KEYSPACES {
                rows.push(vec![text(ks)]);
            }
        }
        "tables" => {
            for (ks, t) in virtual_tables() {
                rows.push(vec![text(ks), text(t), text("")]);
            }
        }
        _ => {
            for (ks, t) in virtual_tables() {
                rows.extend(system_column_rows(ks, t));
            }
        }
    }
    rows
}

fn settings_rows(ctx: &Ctx<'_>) -> VRows {
    let mut settings: Vec<(String, String)> = ctx
        .exec
        .server_state()
        .map(|s| s.settings())
        .unwrap_or_default();
    let n = ctx.exec.node();
    for (k, v) in [
        ("cluster_name", n.cluster_name.clone()),
        ("native_transport_port", n.native_port.to_string()),
        ("rpc_address", n.listen_address.to_string()),
        (
            "data_file_directories",
            ctx.exec.db.dir().display().to_string(),
        ),
        (
            "partitioner",
            "org.apache.cassandra.dht.Murmur3Partitioner".to_string(),
        ),
    ] {
        if !settings.iter().any(|(name, _)| name == k) {
            settings.push((k.to_string(), v));
        }
    }
    settings.sort();
    settings
        .into_iter()
        .map(|(k, v)| vec![text(&k), text(&v)])
        .collect()
}

fn clients_rows(ctx: &Ctx<'_>) -> VRows {
    let clients = ctx
        .exec
        .server_state()
        .map(|s| s.clients())
        .unwrap_or_default();
    clients
        .into_iter()
        .map(|c| {
            vec![
                inet(c.address),
                int(i32::from(c.port)),
                None,
                text(&c.connection_stage),
                c.driver_name.as_deref().and_then(text),
                c.driver_version.as_deref().and_then(text),
                text(&c.hostname),
                c.keyspace.as_deref().and_then(text),
                int(i32::from(c.protocol_version)),
                bigint(c.request_count as i64),
                c.ssl_cipher_suite.as_deref().and_then(text),
                boolean(c.ssl_enabled),
                c.ssl_protocol.as_deref().and_then(text),
                c.username.as_deref().and_then(text),
            ]
        })
        .collect()
}

/// One table's values of a per-table virtual table, after its key columns.
type TableRow<'a> =
    &'a dyn Fn(&crate::table::Table, &crate::tablestats::TableStats) -> Vec<Option<Vec<u8>>>;

fn per_table_rows(ctx: &Ctx<'_>, row: TableRow<'_>) -> QueryOutcome<VRows> {
    let mut rows = Vec::new();
    for t in ctx.exec.db.tables() {
        let stats = crate::tablestats::TableStats::of(&t);
        let schema = t.schema();
        let mut r = vec![text(&schema.keyspace), text(&schema.name)];
        r.extend(row(&t, &stats));
        rows.push(r);
    }
    Ok(rows)
}

/// Builds the rows of a system table.
fn rows_of(ctx: &Ctx<'_>, ks: &str, table: &str) -> QueryOutcome<VRows> {
    Ok(match (ks, table) {
        ("system", "local") => local_rows(ctx),
        ("system", "peers") | ("system", "peers_v2") | ("system", "size_estimates") => Vec::new(),
        ("system_schema", "keyspaces") => keyspace_rows(ctx),
        ("system_schema", "tables") => tables_rows(ctx),
        ("system_schema", "columns") => columns_rows(ctx),
        ("system_schema", "types") => types_rows(ctx),
        ("system_schema", _) => Vec::new(),
        ("system_virtual_schema", t) => virtual_schema_rows(t),
        ("system_views", "settings") => settings_rows(ctx),
        ("system_views", "clients") => clients_rows(ctx),
        ("system_views", "disk_usage") => per_table_rows(ctx, &|_, s| {
            vec![bigint((s.space_used_live_bytes / (1 << 20)) as i64)]
        })?,
        ("system_views", "local_read_latency") => per_table_rows(ctx, &|_, s| {
            vec![
                // Only the count: the engine keeps a mean, not the
                // percentiles these columns name (invariant 1).
                bigint(s.local_read_count as i64),
                None,
                None,
                None,
            ]
        })?,
        ("system_views", "local_write_latency") => per_table_rows(ctx, &|_, s| {
            vec![bigint(s.local_write_count as i64), None, None, None]
        })?,
        ("system_views", "sstable_tasks") => Vec::new(),
        ("system_views", "caches") => Vec::new(),
        ("system_views", "thread_pools") => Vec::new(),
        ("system_views", "strata_tables") => per_table_rows(ctx, &|t, s| {
            vec![
                text(t.schema().options.compaction.class().name()),
                bigint(s.space_used_live_bytes as i64),
                bigint(s.memtable_data_size_bytes as i64),
                int(s.pending_compactions as i32),
                bigint(s.local_read_count as i64),
                int(s.sstable_count as i32),
                double(s.write_amplification),
                bigint(s.local_write_count as i64),
            ]
        })?,
        _ => return Err(QueryError::invalid(format!("table {table} does not exist"))),
    })
}

// ---------------------------------------------------------------------------
// SELECT over a system table
// ---------------------------------------------------------------------------

/// Routes a SELECT: user tables to the engine, system tables here.
pub(crate) fn select(ctx: &Ctx<'_>, s: &Select) -> QueryOutcome<(QueryResult, Vec<String>)> {
    let ks = ctx.keyspace_of(&s.table)?;
    if !is_system_keyspace(&ks) {
        return super::select::execute(ctx, s);
    }
    let (metadata, rows) = virtual_select(ctx, &ks, s, true)?;
    Ok((
        QueryResult::Rows(Rows {
            metadata: Arc::new(metadata),
            rows,
            paging_state: None,
        }),
        Vec::new(),
    ))
}

/// The result metadata of a SELECT (for PREPARE).
pub(crate) fn select_metadata(ctx: &Ctx<'_>, s: &Select) -> QueryOutcome<RowsMetadata> {
    let ks = ctx.keyspace_of(&s.table)?;
    if !is_system_keyspace(&ks) {
        return super::select::metadata(ctx, s);
    }
    Ok(virtual_select(ctx, &ks, s, false)?.0)
}

enum VSel {
    Column(usize),
    Count,
}

fn virtual_select(
    ctx: &Ctx<'_>,
    ks: &str,
    s: &Select,
    with_rows: bool,
) -> QueryOutcome<(RowsMetadata, VRows)> {
    let table = s.table.name.text.as_str();
    let cols = virtual_columns(ks, table)?;
    let index = |name: &str| -> QueryOutcome<usize> {
        cols.iter()
            .position(|c| c.0 == name)
            .ok_or_else(|| super::undefined_column(ks, table, name))
    };
    let spec = |name: &str, ty: ColumnType| ColumnSpec {
        keyspace: ks.to_string(),
        table: table.to_string(),
        name: name.to_string(),
        ty,
    };
    let mut sel: Vec<(VSel, ColumnSpec)> = Vec::new();
    match &s.selection {
        Selection::Star { .. } => {
            for (i, c) in cols.iter().enumerate() {
                sel.push((VSel::Column(i), spec(&c.0, c.1.clone())));
            }
        }
        Selection::Items(items) => {
            for item in items {
                let (v, name, ty) = match &item.selector {
                    Selector::Column(n) => {
                        let i = index(&n.text)?;
                        (VSel::Column(i), cols[i].0.clone(), cols[i].1.clone())
                    }
                    Selector::Function { name, args, .. }
                        if name.name.text.eq_ignore_ascii_case("count")
                            && matches!(
                                args.as_slice(),
                                [Selector::Star { .. }] | [Selector::Term(_)]
                            ) =>
                    {
                        (
                            VSel::Count,
                            "count".to_string(),
                            ColumnType::Native(CqlType::BigInt),
                        )
                    }
                    _ => {
                        return Err(QueryError::invalid(format!(
                            "Only column names and count(*) can be selected from {ks}.{table}"
                        )))
                    }
                };
                let name = item.alias.as_ref().map_or(name, |a| a.text.clone());
                sel.push((v, spec(&name, ty)));
            }
        }
    }
    let metadata = RowsMetadata {
        columns: if s.json {
            vec![spec("[json]", ColumnType::Native(CqlType::Text))]
        } else {
            sel.iter().map(|(_, c)| c.clone()).collect()
        },
    };
    if !with_rows {
        return Ok((metadata, Vec::new()));
    }
    // Restrictions: = and IN on native columns.
    let mut filters: Vec<(usize, Vec<Vec<u8>>)> = Vec::new();
    for r in &s.where_clause {
        let RelationTarget::Column(n) = &r.target else {
            return Err(QueryError::invalid(format!(
                "Only = and IN restrictions on columns are supported on {ks}.{table}"
            )));
        };
        let i = index(&n.text)?;
        let ColumnType::Native(ty) = cols[i].1.unfrozen().clone() else {
            return Err(QueryError::invalid(format!(
                "Cannot restrict column {} of {ks}.{table}",
                n.text
            )));
        };
        let one = |t: &Term| -> QueryOutcome<Vec<u8>> {
            match values::scalar(t, &ty, &n.text, &ctx.eval)? {
                Bound::Value(v) => Ok(types::serialize(&v)),
                _ => Err(QueryError::invalid(format!(
                    "Invalid null value in condition for column {}",
                    n.text
                ))),
            }
        };
        let wanted = match (r.op, &r.value) {
            (Operator::Eq, t) => vec![one(t)?],
            (Operator::In, Term::Tuple { items, .. } | Term::List { items, .. }) => {
                items.iter().map(one).collect::<QueryOutcome<_>>()?
            }
            (Operator::In, Term::Bind(m)) => match ctx.eval.marker(m.index)? {
                super::BoundValue::Value(b) => values::decode_list(b, &ty, &n.text)?
                    .into_iter()
                    .filter_map(|b| match b {
                        Bound::Value(v) => Some(types::serialize(&v)),
                        _ => None,
                    })
                    .collect(),
                _ => Vec::new(),
            },
            _ => {
                return Err(QueryError::invalid(format!(
                    "Only = and IN restrictions are supported on {ks}.{table}"
                )))
            }
        };
        filters.push((i, wanted));
    }
    let mut rows = rows_of(ctx, ks, table)?;
    rows.retain(|row| {
        filters
            .iter()
            .all(|(i, wanted)| row[*i].as_ref().is_some_and(|v| wanted.contains(v)))
    });
    // Invariant 3: partitions by token, then clustering ascending.
    let pk: Vec<usize> = cols
        .iter()
        .enumerate()
        .filter(|(_, c)| c.2 == ColumnKind::PartitionKey)
        .map(|(i, _)| i)
        .collect();
    let ck: Vec<usize> = cols
        .iter()
        .enumerate()
        .filter(|(_, c)| c.2 == ColumnKind::Clustering)
        .map(|(i, _)| i)
        .collect();
    rows.sort_by_cached_key(|row| {
        let key: Vec<u8> = pk
            .iter()
            .flat_map(|&i| row[i].clone().unwrap_or_default())
            .collect();
        let token = if key.is_empty() {
            i64::MIN
        } else {
            crate::token::token_of(&key)
        };
        let clustering: Vec<Vec<u8>> = ck
            .iter()
            .map(|&i| row[i].clone().unwrap_or_default())
            .collect();
        (token, key, clustering)
    });
    if let Some(limit) = &s.limit {
        if let Bound::Value(Value::Int(n)) =
            values::scalar(limit, &CqlType::Int, "[limit]", &ctx.eval)?
        {
            rows.truncate(n.max(0) as usize);
        }
    }
    let out: VRows = if sel.iter().any(|(v, _)| matches!(v, VSel::Count)) {
        let count = rows.len() as i64;
        vec![sel
            .iter()
            .map(|(v, _)| match v {
                VSel::Count => bigint(count),
                VSel::Column(i) => rows.first().and_then(|r| r[*i].clone()),
            })
            .collect()]
    } else {
        rows.into_iter()
            .map(|r| {
                sel.iter()
                    .map(|(v, _)| match v {
                        VSel::Column(i) => r[*i].clone(),
                        VSel::Count => None,
                    })
                    .collect()
            })
            .collect()
    };
    if s.json {
        let json_cols: Vec<(String, ColumnType)> = sel
            .iter()
            .map(|(_, c)| (c.name.clone(), c.ty.clone()))
            .collect();
        return Ok((
            metadata,
            out.iter()
                .map(|r| super::json::row_to_json(&json_cols, r).map(|j| vec![Some(j)]))
                .collect::<QueryOutcome<_>>()?,
        ));
    }
    Ok((metadata, out))
}
