//! `DESCRIBE`: the server-side describe cqlsh sends to Cassandra 4.0 and
//! later, answered with the same result columns (`keyspace_name`, `type`,
//! `name`, and `create_statement` for element descriptions).
//!
//! Owns the CQL text of keyspaces and tables as DESCRIBE prints them: a
//! keyspace's `CREATE KEYSPACE` with its stored replication, a table's
//! `CREATE TABLE` from the schema layer (Strata's own table options included,
//! so the text re-creates the same table here; docs/cql.md says which of them
//! Cassandra would refuse).

use std::sync::Arc;

use crate::cql::ast::Describe;
use crate::cql::ddl::cql_name;
use crate::schema::Keyspace;
use crate::types::CqlType;

use super::executor::Ctx;
use super::{ColumnSpec, ColumnType, QueryError, QueryOutcome, QueryResult, Rows, RowsMetadata};

fn spec(name: &str) -> ColumnSpec {
    ColumnSpec {
        keyspace: String::new(),
        table: String::new(),
        name: name.to_string(),
        ty: ColumnType::Native(CqlType::Text),
    }
}

fn text(s: &str) -> Option<Vec<u8>> {
    Some(s.as_bytes().to_vec())
}

fn keyspace_cql(ks: &Keyspace) -> String {
    let mut entries: Vec<(&String, &String)> = ks.replication.iter().collect();
    // `class` first, as Cassandra prints it.
    entries.sort_by_key(|(k, _)| (k.as_str() != "class", k.as_str().to_string()));
    let map = entries
        .iter()
        .map(|(k, v)| format!("'{}': '{}'", k.replace('\'', "''"), v.replace('\'', "''")))
        .collect::<Vec<_>>()
        .join(", ");
    format!(
        "CREATE KEYSPACE {} WITH replication = {{{map}}}  AND durable_writes = {};",
        cql_name(&ks.name),
        ks.durable_writes
    )
}

fn type_cql(def: &crate::types::UdtDef) -> String {
    crate::cql::ddl::create_type_cql(def, false)
}

/// A keyspace's types in an order that creates each after the types its
/// fields use (Cassandra sorts them so too), then by name.
fn types_in_order(ks: &Keyspace) -> Vec<Arc<crate::types::UdtDef>> {
    crate::cql::ddl::types_in_creation_order(ks.types.values().cloned().collect())
}

/// Runs a DESCRIBE statement.
pub(crate) fn run(ctx: &Ctx<'_>, d: &Describe) -> QueryOutcome<QueryResult> {
    let catalog = ctx.exec.db.catalog();
    let listing = |rows: Vec<(String, &str, String)>| {
        QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata {
                columns: vec![spec("keyspace_name"), spec("type"), spec("name")],
            }),
            rows: rows
                .into_iter()
                .map(|(k, t, n)| vec![text(&k), text(t), text(&n)])
                .collect(),
            paging_state: None,
        })
    };
    let elements = |rows: Vec<(String, &str, String, String)>| {
        QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata {
                columns: vec![
                    spec("keyspace_name"),
                    spec("type"),
                    spec("name"),
                    spec("create_statement"),
                ],
            }),
            rows: rows
                .into_iter()
                .map(|(k, t, n, c)| vec![text(&k), text(t), text(&n), text(&c)])
                .collect(),
            paging_state: None,
        })
    };
    let keyspace_elements = |ks: &Keyspace, only: bool| {
        let mut rows = vec![(
            ks.name.clone(),
            "keyspace",
            ks.name.clone(),
            keyspace_cql(ks),
        )];
        if !only {
            for def in types_in_order(ks) {
                rows.push((ks.name.clone(), "type", def.name.clone(), type_cql(&def)));
            }
            for t in ks.tables.values() {
                rows.push((ks.name.clone(), "table", t.name.clone(), t.to_cql()));
            }
        }
        rows
    };
    Ok(match d {
        Describe::Cluster => QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata {
                columns: vec![spec("cluster"), spec("partitioner"), spec("snitch")],
            }),
            rows: vec![vec![
                text(&ctx.exec.node().cluster_name),
                text("org.apache.cassandra.dht.Murmur3Partitioner"),
                text("org.apache.cassandra.locator.SimpleSnitch"),
            ]],
            paging_state: None,
        }),
        // As Cassandra: the system keyspaces and their tables are listed too.
        Describe::Keyspaces => {
            let mut names: Vec<String> = super::system::SYSTEM_KEYSPACES
                .iter()
                .map(|k| k.to_string())
                .chain(catalog.keyspaces.keys().cloned())
                .collect();
            names.sort();
            names.dedup();
            listing(
                names
                    .into_iter()
                    .map(|k| (k.clone(), "keyspace", k))
                    .collect(),
            )
        }
        Describe::Tables => listing(
            super::system::schema_listed_system_tables()
                .into_iter()
                .map(|(ks, t)| (ks.to_string(), "table", t.to_string()))
                .chain(catalog.keyspaces.values().flat_map(|ks| {
                    ks.tables
                        .keys()
                        .map(move |t| (ks.name.clone(), "table", t.clone()))
                }))
                .collect(),
        ),
        Describe::Types => listing(
            catalog
                .keyspaces
                .values()
                .flat_map(|ks| {
                    ks.types
                        .keys()
                        .map(move |t| (ks.name.clone(), "type", t.clone()))
                })
                .collect(),
        ),
        Describe::Functions | Describe::Aggregates => listing(Vec::new()),
        Describe::Schema { .. } => elements(
            catalog
                .keyspaces
                .values()
                .flat_map(|ks| keyspace_elements(ks, false))
                .collect(),
        ),
        Describe::Keyspace { name, only } => {
            let name = match name {
                Some(n) => n.text.clone(),
                None => ctx.session.keyspace.clone().ok_or_else(|| {
                    QueryError::invalid("No keyspace specified and no current keyspace")
                })?,
            };
            let ks = catalog
                .keyspaces
                .get(&name)
                .ok_or_else(|| QueryError::invalid(format!("'{name}' not found in keyspaces")))?;
            elements(keyspace_elements(ks, *only))
        }
        Describe::Table(qn) | Describe::Generic(qn) => {
            if let (Describe::Generic(_), None) = (d, &qn.keyspace) {
                // `DESCRIBE name`: a keyspace of that name first.
                if let Some(ks) = catalog.keyspaces.get(&qn.name.text) {
                    return Ok(elements(keyspace_elements(ks, false)));
                }
            }
            let ks = ctx.keyspace_of(qn)?;
            let t = catalog.table(&ks, &qn.name.text).map_err(|_| {
                QueryError::invalid(format!("'{}' not found in keyspace '{ks}'", qn.name.text))
            })?;
            elements(vec![(ks.clone(), "table", t.name.clone(), t.to_cql())])
        }
        Describe::Type(qn) => {
            let ks = ctx.keyspace_of(qn)?;
            let def = catalog.udt(&ks, &qn.name.text).ok_or_else(|| {
                QueryError::invalid(format!(
                    "'{}' not found in keyspace '{ks}'",
                    qn.name.text
                ))
            })?;
            elements(vec![(ks, "type", def.name.clone(), type_cql(&def))])
        }
        Describe::Function(qn) | Describe::Aggregate(qn) => {
            return Err(QueryError::invalid(format!(
                "'{}' not found: user-defined functions and aggregates do not exist in this database",
                qn.name.text
            )))
        }
        Describe::Index(qn) | Describe::MaterializedView(qn) => {
            return Err(QueryError::invalid(format!(
                "'{}' not found: secondary indexes and materialized views do not exist in this database",
                qn.name.text
            )))
        }
    })
}
