//! Schema statements: keyspaces, tables and types, run against the catalog,
//! answered with Cassandra's schema-change results.
//!
//! Owns what CREATE/ALTER/DROP KEYSPACE, CREATE/ALTER/DROP TABLE and TRUNCATE
//! mean: `IF [NOT] EXISTS` as a no-op answered `Void` (nothing changed, no
//! event), keyspace replication checked as Cassandra's strategies check it
//! and stored, tables built by the schema layer from the statement's text,
//! drops and truncations snapshotted first when `auto_snapshot` is on.
//!
//! Invariant: a refused statement changes nothing (the catalog checks every
//! change on a copy before it is persisted).

use std::collections::BTreeMap;

use crate::cql::ast::{AlterTableAction, Statement, TypeExpr};
use crate::cql::ddl::Setting;
use crate::cql::literal::Literal;
use crate::cql::CqlErrorKind;
use crate::schema::ColumnKind;
use crate::types::CqlType;

use super::auth::Access;
use super::executor::Ctx;
use super::{QueryError, QueryOutcome, QueryResult, SchemaChange, SchemaChangeKind, SchemaTarget};

fn config_error(msg: impl Into<String>) -> QueryError {
    QueryError::new(CqlErrorKind::ConfigError, msg)
}

fn changed(kind: SchemaChangeKind, target: SchemaTarget) -> QueryResult {
    QueryResult::SchemaChange(SchemaChange { kind, target })
}

/// A refusal of the schema layer as Cassandra reports it (Invalid, the
/// message alone); any other error (the disk's) as itself.
fn refused(e: crate::error::Error) -> QueryError {
    match e {
        crate::error::Error::InvalidInput(m) => QueryError::invalid(m),
        other => QueryError::from(other),
    }
}

/// A column type from a type expression, resolved against the keyspace's
/// user-defined types with Cassandra's rules and messages.
pub(crate) fn column_type(
    t: &TypeExpr,
    keyspace: &str,
    catalog: &crate::schema::Catalog,
) -> QueryOutcome<CqlType> {
    crate::cql::ddl::resolve_type(t, keyspace, &catalog.udt_lookup()).map_err(refused)
}

/// CREATE TABLE's definition checked as Cassandra checks it, in its order and
/// with its messages, before the schema layer builds the table (whose own
/// checks then only repeat these).
fn check_create_table(
    ks: &str,
    ct: &crate::cql::ast::CreateTable,
    catalog: &crate::schema::Catalog,
) -> QueryOutcome<()> {
    let table = &ct.table.name.text;
    let mut seen = std::collections::BTreeSet::new();
    for c in &ct.columns {
        if !seen.insert(c.name.text.as_str()) {
            return Err(QueryError::invalid(format!(
                "Duplicate column '{}' declaration for table '{table}'",
                c.name.text
            )));
        }
    }
    let mut types = Vec::with_capacity(ct.columns.len());
    for c in &ct.columns {
        types.push(column_type(&c.ty, ks, catalog)?);
    }
    let inline: Vec<&str> = ct
        .columns
        .iter()
        .filter(|c| c.primary_key)
        .map(|c| c.name.text.as_str())
        .collect();
    let (partition, clustering): (Vec<&str>, Vec<&str>) = if inline.is_empty() {
        (
            ct.partition_key.iter().map(|n| n.text.as_str()).collect(),
            ct.clustering.iter().map(|n| n.text.as_str()).collect(),
        )
    } else {
        (inline, Vec::new())
    };
    if partition.is_empty() {
        // Cassandra's words, its typo included.
        return Err(QueryError::invalid(format!(
            "No PRIMARY KEY specifed for table '{table}' (exactly one required)"
        )));
    }
    for k in partition.iter().chain(&clustering) {
        if !seen.contains(k) {
            return Err(QueryError::invalid(format!(
                "Unknown column '{k}' referenced in PRIMARY KEY for table '{table}'"
            )));
        }
    }
    let not_clustering: Vec<&str> = ct
        .clustering_order
        .iter()
        .map(|o| o.column.text.as_str())
        .filter(|c| !clustering.contains(c))
        .collect();
    if !not_clustering.is_empty() {
        return Err(QueryError::invalid(format!(
            "Only clustering key columns can be defined in CLUSTERING ORDER directive: [{}] are \
             not clustering columns",
            not_clustering.join(", ")
        )));
    }
    if !ct.clustering_order.is_empty() {
        let ordered: Vec<&str> = ct
            .clustering_order
            .iter()
            .map(|o| o.column.text.as_str())
            .collect();
        for (i, c) in clustering.iter().enumerate() {
            match ordered.iter().position(|o| o == c) {
                None => {
                    return Err(QueryError::invalid(format!(
                        "Missing CLUSTERING ORDER for column {c}"
                    )))
                }
                Some(at) if at != i => {
                    return Err(QueryError::invalid(format!(
                        "The order of columns in the CLUSTERING ORDER directive must match that \
                         of the clustering columns ({c} must appear before {})",
                        ordered[i]
                    )))
                }
                Some(_) => {}
            }
        }
    }
    if clustering.is_empty() && ct.columns.iter().any(|c| c.is_static) {
        return Err(QueryError::invalid(STATIC_WITHOUT_CLUSTERING));
    }
    Ok(())
}

/// The table options Cassandra 5.0 knows; those this database has too are
/// taken by the option parser, the others refused there by name.
const CASSANDRA_TABLE_OPTIONS: [&str; 19] = [
    "additional_write_policy",
    "allow_auto_snapshot",
    "bloom_filter_fp_chance",
    "caching",
    "cdc",
    "comment",
    "compaction",
    "compression",
    "crc_check_chance",
    "default_time_to_live",
    "extensions",
    "gc_grace_seconds",
    "incremental_backups",
    "max_index_interval",
    "memtable",
    "memtable_flush_period_in_ms",
    "min_index_interval",
    "read_repair",
    "speculative_retry",
];

/// Options only this database has (docs/cql.md lists them).
const STRATA_TABLE_OPTIONS: [&str; 4] = [
    "memtable_flush_threshold_mb",
    "memtable_flush_threshold_kb",
    "max_value_size_in_mb",
    "max_value_size_in_kb",
];

/// A table's `WITH` settings checked as Cassandra checks them before the
/// option parser takes them: an unknown name is a syntax error, a negative
/// duration and an unknown compaction class are configuration errors, each
/// with Cassandra's message.
fn check_table_settings(settings: &[Setting]) -> QueryOutcome<()> {
    for s in settings {
        let name = s.name.as_str();
        if name == "id" {
            // Cassandra's table id (a snapshot's schema.cql sets it): the
            // table takes it as its UUID.
            let ok = matches!(&s.value, Literal::Scalar(v) if crate::schema::TableUuid::parse(v).is_some());
            if !ok {
                return Err(config_error("ID must be a UUID".to_string()));
            }
            continue;
        }
        if !CASSANDRA_TABLE_OPTIONS.contains(&name) && !STRATA_TABLE_OPTIONS.contains(&name) {
            return Err(QueryError::new(
                CqlErrorKind::SyntaxError,
                format!("Unknown property '{name}'"),
            ));
        }
        match (name, &s.value) {
            ("default_time_to_live" | "gc_grace_seconds", Literal::Scalar(v)) => {
                if let Ok(n) = v.parse::<i64>() {
                    if n < 0 {
                        return Err(config_error(format!(
                            "{name} must be greater than or equal to 0 (got {n})"
                        )));
                    }
                }
            }
            ("compaction", Literal::Map(m)) => {
                if let Some(class) = m.get("class") {
                    // A class Cassandra has (unified compaction) but this
                    // database not yet keeps the option parser's message.
                    if crate::options::CompactionClass::parse(class).is_err()
                        && !class.ends_with("UnifiedCompactionStrategy")
                    {
                        let full = if class.contains('.') {
                            class.clone()
                        } else {
                            format!("org.apache.cassandra.db.compaction.{class}")
                        };
                        return Err(config_error(format!(
                            "Unable to find compaction strategy class '{full}'"
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    Ok(())
}

/// Cassandra's refusal of a static column in a table without clustering.
const STATIC_WITHOUT_CLUSTERING: &str =
    "Static columns are only useful (and thus allowed) if the table has at least one clustering \
     column";

/// `replication = {...}` and `durable_writes = ...` of a keyspace statement,
/// checked as Cassandra's replication strategies check them.
fn keyspace_params(
    settings: &[Setting],
    current: Option<(BTreeMap<String, String>, bool)>,
) -> QueryOutcome<(BTreeMap<String, String>, bool)> {
    let (mut replication, mut durable) = match current {
        Some((r, d)) => (Some(r), d),
        None => (None, true),
    };
    for s in settings {
        match (s.name.as_str(), &s.value) {
            ("replication", Literal::Map(m)) => replication = Some(m.clone()),
            ("durable_writes", Literal::Scalar(v)) => {
                durable = match v.to_ascii_lowercase().as_str() {
                    "true" => true,
                    "false" => false,
                    _ => {
                        return Err(config_error(format!(
                            "Invalid value for durable_writes: {v}"
                        )))
                    }
                }
            }
            (other, _) => {
                return Err(QueryError::new(
                    CqlErrorKind::SyntaxError,
                    format!("Unknown property '{other}'"),
                ))
            }
        }
    }
    let Some(mut replication) = replication else {
        return Err(config_error("Missing mandatory option 'replication'"));
    };
    let class = replication
        .remove("class")
        .ok_or_else(|| config_error("Missing replication strategy class"))?;
    let full = if class.contains('.') {
        class.clone()
    } else {
        format!("org.apache.cassandra.locator.{class}")
    };
    let short = full.rsplit('.').next().unwrap_or(&full).to_string();
    let rf_ok = |v: &str| v.parse::<u32>().is_ok() || v.contains('/');
    match short.as_str() {
        "SimpleStrategy" => {
            // Cassandra 5 fills a missing factor from `default_keyspace_rf` (1).
            let rf = replication
                .entry("replication_factor".to_string())
                .or_insert_with(|| "1".to_string())
                .clone();
            if !rf_ok(&rf) {
                return Err(config_error(format!(
                    "Replication factor must be non-negative; found {rf}"
                )));
            }
            if let Some(k) = replication.keys().find(|k| *k != "replication_factor") {
                return Err(config_error(format!(
                    "Unrecognized strategy option {{{k}}} passed to SimpleStrategy for keyspace"
                )));
            }
        }
        "NetworkTopologyStrategy" => {
            for (dc, rf) in &replication {
                if !rf_ok(rf) {
                    return Err(config_error(format!(
                        "Replication factor must be non-negative; found {rf} for {dc}"
                    )));
                }
            }
        }
        "LocalStrategy" => return Err(config_error("LocalStrategy is only for internal use")),
        other => {
            return Err(config_error(format!(
                "Unable to find replication strategy class '{}'",
                if other.contains('.') {
                    other.to_string()
                } else {
                    format!("org.apache.cassandra.locator.{other}")
                }
            )))
        }
    }
    replication.insert("class".to_string(), full);
    Ok((replication, durable))
}

/// Cassandra's checks of a new keyspace's name, with its messages.
fn check_keyspace_name(name: &str) -> QueryOutcome<()> {
    if super::system::is_system_keyspace(name) {
        return Err(QueryError::invalid(format!(
            "System keyspace '{name}' is not user-modifiable"
        )));
    }
    if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
        return Err(QueryError::invalid(format!(
            "Keyspace name must not be empty and must contain alphanumeric or underscore characters only (got \"{name}\")"
        )));
    }
    if name.len() > crate::schema::MAX_NAME_LENGTH {
        return Err(QueryError::invalid(format!(
            "Keyspace name must not be more than {} characters long (got {} characters for \"{name}\")",
            crate::schema::MAX_NAME_LENGTH,
            name.len()
        )));
    }
    Ok(())
}

/// Runs a schema statement.
pub(crate) fn run(ctx: &Ctx<'_>, stmt: &Statement) -> QueryOutcome<QueryResult> {
    let db = &ctx.exec.db;
    let auth = &ctx.exec.auth;
    let snapshot = ctx.exec.auto_snapshot();
    match stmt {
        Statement::CreateKeyspace {
            if_not_exists,
            name,
            settings,
        } => {
            auth.check(ctx.session, Access::Create, &name.text, None)?;
            check_keyspace_name(&name.text)?;
            let (replication, durable) = keyspace_params(settings, None)?;
            if db.catalog().keyspaces.contains_key(&name.text) {
                if *if_not_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::already_exists(
                    &name.text,
                    "",
                    format!("Cannot add existing keyspace \"{}\"", name.text),
                ));
            }
            db.create_keyspace_with(&name.text, replication, durable)?;
            Ok(changed(
                SchemaChangeKind::Created,
                SchemaTarget::Keyspace(name.text.clone()),
            ))
        }
        Statement::AlterKeyspace {
            if_exists,
            name,
            settings,
        } => {
            auth.check(ctx.session, Access::Alter, &name.text, None)?;
            let catalog = db.catalog();
            let Some(ks) = catalog.keyspaces.get(&name.text) else {
                if *if_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::invalid(format!(
                    "Keyspace '{}' doesn't exist",
                    name.text
                )));
            };
            let (replication, durable) =
                keyspace_params(settings, Some((ks.replication.clone(), ks.durable_writes)))?;
            db.alter_keyspace(&name.text, replication, durable)?;
            Ok(changed(
                SchemaChangeKind::Updated,
                SchemaTarget::Keyspace(name.text.clone()),
            ))
        }
        Statement::DropKeyspace { if_exists, name } => {
            auth.check(ctx.session, Access::Drop, &name.text, None)?;
            if super::system::is_system_keyspace(&name.text) {
                return Err(QueryError::unauthorized(format!(
                    "{} keyspace is not user-modifiable.",
                    name.text
                )));
            }
            if !db.catalog().keyspaces.contains_key(&name.text) {
                if *if_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::invalid(format!(
                    "Keyspace '{}' doesn't exist",
                    name.text
                )));
            }
            db.drop_keyspace(&name.text, snapshot)?;
            Ok(changed(
                SchemaChangeKind::Dropped,
                SchemaTarget::Keyspace(name.text.clone()),
            ))
        }
        Statement::CreateTable(ct) => {
            let ks = ctx.keyspace_of(&ct.table)?;
            auth.check(ctx.session, Access::Create, &ks, None)?;
            if !db.catalog().keyspaces.contains_key(&ks) {
                return Err(QueryError::invalid(format!(
                    "Keyspace '{ks}' doesn't exist"
                )));
            }
            if ct.compact_storage {
                return Err(QueryError::invalid(
                    "Compact tables are not allowed in Cassandra starting with 4.0 version.",
                ));
            }
            check_create_table(&ks, ct, &db.catalog())?;
            check_table_settings(&ct.settings)?;
            let table = ct.table.name.text.clone();
            if db.catalog().table(&ks, &table).is_ok() {
                if ct.if_not_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::already_exists(
                    &ks,
                    &table,
                    format!("Cannot add already existing table \"{table}\" to keyspace \"{ks}\""),
                ));
            }
            let catalog = db.catalog();
            let schema = crate::schema::CreateTableStatement::parse_with_types(
                Some(&ks),
                &ct.text,
                &catalog.udt_lookup(),
            )
            .map_err(refused)?
            .schema;
            db.create_table(schema)?;
            Ok(changed(
                SchemaChangeKind::Created,
                SchemaTarget::Table {
                    keyspace: ks,
                    table,
                },
            ))
        }
        Statement::AlterTable(at) => {
            let ks = ctx.keyspace_of(&at.table)?;
            let table = at.table.name.text.clone();
            auth.check(ctx.session, Access::Alter, &ks, Some(&table))?;
            let schema = match ctx.exec.table(&ks, &table) {
                Ok(t) => t.schema(),
                Err(_) if at.if_exists => return Ok(QueryResult::Void),
                Err(_) => {
                    return Err(QueryError::invalid(format!(
                        "Table '{ks}.{table}' doesn't exist"
                    )))
                }
            };
            match &at.action {
                AlterTableAction::Add {
                    if_not_exists,
                    columns,
                } => {
                    let mut add = Vec::new();
                    for c in columns {
                        if schema.columns.iter().any(|d| d.name == c.name.text) {
                            if *if_not_exists {
                                continue;
                            }
                            return Err(QueryError::invalid(format!(
                                "Column with name '{}' already exists",
                                c.name.text
                            )));
                        }
                        if c.is_static
                            && !schema
                                .columns
                                .iter()
                                .any(|d| d.kind == ColumnKind::Clustering)
                        {
                            return Err(QueryError::invalid(STATIC_WITHOUT_CLUSTERING));
                        }
                        add.push((
                            c.name.text.clone(),
                            column_type(&c.ty, &ks, &db.catalog())?,
                            c.is_static,
                        ));
                    }
                    if add.is_empty() {
                        return Ok(QueryResult::Void);
                    }
                    db.alter_table_add_columns(&ks, &table, &add)?;
                }
                AlterTableAction::Drop {
                    if_exists, columns, ..
                } => {
                    let mut drop = Vec::new();
                    for c in columns {
                        match schema.columns.iter().find(|d| d.name == c.text) {
                            None if *if_exists => continue,
                            None => {
                                return Err(QueryError::invalid(format!(
                                    "Column {} was not found in table '{ks}.{table}'",
                                    c.text
                                )))
                            }
                            Some(d) if d.is_primary_key() => {
                                return Err(QueryError::invalid(format!(
                                    "Cannot drop PRIMARY KEY column {}",
                                    c.text
                                )))
                            }
                            Some(_) => drop.push(c.text.clone()),
                        }
                    }
                    if drop.is_empty() {
                        return Ok(QueryResult::Void);
                    }
                    db.alter_table_drop_columns(&ks, &table, &drop)?;
                }
                AlterTableAction::Rename { if_exists, renames } => {
                    // Each checked against the table as it was, as Cassandra's
                    // RenameColumns checks every pair against the original.
                    let mut apply = Vec::new();
                    for (from, to) in renames {
                        match schema.columns.iter().find(|d| d.name == from.text) {
                            None if *if_exists => continue,
                            None => {
                                return Err(QueryError::invalid(format!(
                                    "Column {} was not found in table {ks}.{table}",
                                    from.text
                                )))
                            }
                            Some(d) if !d.is_primary_key() => {
                                return Err(QueryError::invalid(format!(
                                    "Cannot rename non PRIMARY KEY column {}",
                                    from.text
                                )))
                            }
                            Some(_) => {}
                        }
                        if schema.columns.iter().any(|d| d.name == to.text) {
                            return Err(QueryError::invalid(format!(
                                "Cannot rename column {} to {} in table '{ks}.{table}'; another \
                                 column with that name already exists",
                                from.text, to.text
                            )));
                        }
                        apply.push((from.text.clone(), to.text.clone()));
                    }
                    if apply.is_empty() {
                        return Ok(QueryResult::Void);
                    }
                    db.alter_table_rename_columns(&ks, &table, &apply)?;
                }
                AlterTableAction::AlterType { .. } => {
                    return Err(QueryError::invalid(
                        "Altering column types is no longer supported",
                    ))
                }
                AlterTableAction::With { settings } => {
                    check_table_settings(settings)?;
                    db.alter_table_settings(&ks, &table, settings)?;
                }
                AlterTableAction::DropCompactStorage => {
                    return Err(QueryError::invalid(
                        "This table has no compact storage to drop",
                    ))
                }
            }
            Ok(changed(
                SchemaChangeKind::Updated,
                SchemaTarget::Table {
                    keyspace: ks,
                    table,
                },
            ))
        }
        Statement::DropTable { if_exists, table } => {
            let ks = ctx.keyspace_of(table)?;
            auth.check(ctx.session, Access::Drop, &ks, Some(&table.name.text))?;
            if super::system::is_system_keyspace(&ks) {
                return Err(QueryError::unauthorized(format!(
                    "{ks} keyspace is not user-modifiable."
                )));
            }
            if db.catalog().table(&ks, &table.name.text).is_err() {
                if *if_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::invalid(format!(
                    "Table '{ks}.{}' doesn't exist",
                    table.name.text
                )));
            }
            db.drop_table(&ks, &table.name.text, snapshot)?;
            Ok(changed(
                SchemaChangeKind::Dropped,
                SchemaTarget::Table {
                    keyspace: ks,
                    table: table.name.text.clone(),
                },
            ))
        }
        Statement::Truncate { table } => {
            let ks = ctx.keyspace_of(table)?;
            auth.check(ctx.session, Access::Modify, &ks, Some(&table.name.text))?;
            let t = ctx.table(table)?;
            let schema = t.schema();
            db.truncate_table(&schema.keyspace, &schema.name, snapshot)
                .map_err(|e| QueryError::new(CqlErrorKind::TruncateError, e.to_string()))?;
            Ok(QueryResult::Void)
        }
        Statement::CreateType {
            if_not_exists,
            name,
            fields,
        } => {
            let ks = ctx.keyspace_of(name)?;
            auth.check(ctx.session, Access::Create, &ks, None)?;
            let catalog = db.catalog();
            if !catalog.keyspaces.contains_key(&ks) {
                return Err(QueryError::invalid(format!(
                    "Keyspace '{ks}' doesn't exist"
                )));
            }
            let type_name = name.name.text.clone();
            if catalog.udt(&ks, &type_name).is_some() {
                if *if_not_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::invalid(format!(
                    "A user type with name '{type_name}' already exists"
                )));
            }
            let mut resolved = Vec::with_capacity(fields.len());
            for (f, t) in fields {
                resolved.push((f.text.clone(), column_type(t, &ks, &catalog)?));
            }
            db.change_types(&ks, |c| c.create_type(&ks, &type_name, resolved))
                .map_err(refused)?;
            Ok(changed(
                SchemaChangeKind::Created,
                SchemaTarget::Type {
                    keyspace: ks,
                    name: type_name,
                },
            ))
        }
        Statement::AlterType {
            if_exists,
            name,
            action,
        } => {
            use crate::cql::ast::AlterTypeAction;
            let ks = ctx.keyspace_of(name)?;
            auth.check(ctx.session, Access::Alter, &ks, None)?;
            let catalog = db.catalog();
            let type_name = name.name.text.clone();
            let Some(def) = catalog.udt(&ks, &type_name) else {
                if *if_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::invalid(format!(
                    "No user type named {ks}.{type_name} exists."
                )));
            };
            let mut new = (*def).clone();
            match action {
                AlterTypeAction::Add {
                    if_not_exists,
                    field,
                    ty,
                } => {
                    if new.fields.iter().any(|(n, _)| *n == field.text) {
                        if *if_not_exists {
                            return Ok(QueryResult::Void);
                        }
                        return Err(QueryError::invalid(format!(
                            "Cannot add field {} to type {ks}.{type_name}: a field with name {} \
                             already exists",
                            field.text, field.text
                        )));
                    }
                    let t = column_type(ty, &ks, &catalog)?;
                    if t.any(&|x| matches!(x, CqlType::Udt { def, .. } if def.keyspace == ks && def.name == type_name)) {
                        return Err(QueryError::invalid(format!(
                            "Cannot add new field {} of type {} to user type {ks}.{type_name} as \
                             this would create a circular reference",
                            field.text,
                            t.name()
                        )));
                    }
                    new.fields.push((field.text.clone(), t));
                }
                AlterTypeAction::Rename { if_exists, renames } => {
                    for (from, to) in renames {
                        let Some(i) = new.fields.iter().position(|(n, _)| *n == from.text) else {
                            if *if_exists {
                                continue;
                            }
                            return Err(QueryError::invalid(format!(
                                "Unkown field {} in user type {ks}.{type_name}",
                                from.text
                            )));
                        };
                        new.fields[i].0 = to.text.clone();
                    }
                    for (i, (n, _)) in new.fields.iter().enumerate() {
                        if new.fields[..i].iter().any(|(m, _)| m == n) {
                            return Err(QueryError::invalid(format!(
                                "Duplicate field name {n} in type {ks}"
                            )));
                        }
                    }
                }
                AlterTypeAction::AlterField { .. } => {
                    return Err(QueryError::invalid(
                        "Altering field types is no longer supported",
                    ))
                }
            }
            db.change_types(&ks, |c| c.alter_type(new))
                .map_err(refused)?;
            Ok(changed(
                SchemaChangeKind::Updated,
                SchemaTarget::Type {
                    keyspace: ks,
                    name: type_name,
                },
            ))
        }
        Statement::DropType { if_exists, name } => {
            let ks = ctx.keyspace_of(name)?;
            auth.check(ctx.session, Access::Drop, &ks, None)?;
            let type_name = name.name.text.clone();
            if db.catalog().udt(&ks, &type_name).is_none() {
                if *if_exists {
                    return Ok(QueryResult::Void);
                }
                return Err(QueryError::invalid(format!(
                    "Type '{ks}.{type_name}' doesn't exist"
                )));
            }
            db.change_types(&ks, |c| c.drop_type(&ks, &type_name))
                .map_err(refused)?;
            Ok(changed(
                SchemaChangeKind::Dropped,
                SchemaTarget::Type {
                    keyspace: ks,
                    name: type_name,
                },
            ))
        }
        other => Err(QueryError::invalid(format!(
            "{} is not a schema statement",
            other.kind()
        ))),
    }
}
