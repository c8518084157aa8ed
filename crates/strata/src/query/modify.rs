//! INSERT, UPDATE, DELETE and BATCH: statements turned into partition updates,
//! checked whole before any is applied, and lightweight transactions.
//!
//! Owns Cassandra's write semantics as the CQL layer sees them: an INSERT
//! writes the row marker and a tombstone for a `null` value, an UPDATE writes
//! cells only, `unset` leaves a column alone, a DELETE of a clustering prefix
//! or slice is a range tombstone; `USING TTL` / `USING TIMESTAMP` with their
//! bounds; conditions (`IF NOT EXISTS`, `IF EXISTS`, `IF col op value`)
//! evaluated against the current row under the partition's lock, with the
//! `[applied]` result Cassandra returns.
//!
//! Invariants:
//! 1. Every mutation of a statement (or batch) is built before the first is
//!    applied; a refused value changes nothing.
//! 2. A conditional statement holds its partition's lock (`Locks`) from its
//!    read to its write; its write timestamp is above every earlier
//!    conditional write of that lock stripe, so a later LWT always wins over
//!    an earlier one even within one microsecond (Paxos ballots give Cassandra
//!    the same order).
//! 3. The updates of one partition in a batch are merged into one update, so
//!    they are applied (and logged) together.

use std::collections::BTreeMap;
use std::sync::Arc;

use crate::cql::ast::{
    Assignment, BatchKind, BatchStatement, Condition, Conditions, Delete, Deletion, Insert,
    InsertValues, Operator, Update, Using,
};
use crate::data::{ClusteringRange, DecoratedKey, PartitionUpdate, MAX_TTL_SECONDS};
use crate::read::merge_partition;
use crate::schema::{ColumnDef, ColumnKind, TableSchema, WriteOptions};
use crate::table::Table;
use crate::types::{CqlType, Value};

use super::elements;
use super::executor::Ctx;
use super::restrict::{self, compare, Purpose};
use super::values::{self, Bound, Eval};
use super::{ColumnSpec, ColumnType, QueryError, QueryOutcome, QueryResult, Rows, RowsMetadata};

fn invalid(msg: impl Into<String>) -> QueryError {
    QueryError::invalid(msg)
}

/// Evaluates `USING TTL` and `USING TIMESTAMP`.
pub(crate) fn write_options(
    using: &Using,
    eval: &Eval<'_>,
    default_timestamp: Option<i64>,
) -> QueryOutcome<WriteOptions> {
    let mut opts = WriteOptions {
        timestamp_micros: default_timestamp,
        ttl_seconds: None,
    };
    if let Some(t) = &using.timestamp {
        match values::scalar(t, &CqlType::BigInt, "[timestamp]", eval)? {
            Bound::Value(Value::BigInt(ts)) => {
                if ts == i64::MIN {
                    return Err(invalid(format!(
                        "Illegal timestamp {ts}: it is reserved for 'no timestamp'"
                    )));
                }
                opts.timestamp_micros = Some(ts);
            }
            Bound::Null => return Err(invalid("Invalid null value of timestamp")),
            Bound::Unset | Bound::Value(_) => {}
        }
    }
    if let Some(t) = &using.ttl {
        match values::scalar(t, &CqlType::Int, "[ttl]", eval)? {
            Bound::Value(Value::Int(ttl)) => {
                if ttl < 0 {
                    return Err(invalid(format!(
                        "A TTL must be greater or equal to 0, but was {ttl}"
                    )));
                }
                if ttl as u32 > MAX_TTL_SECONDS {
                    return Err(invalid(format!(
                        "ttl is too large. requested ({ttl}) maximum ({MAX_TTL_SECONDS})"
                    )));
                }
                opts.ttl_seconds = Some(ttl as u32);
            }
            // A null TTL is no TTL (Cassandra 5 accepts it so).
            Bound::Null => opts.ttl_seconds = Some(0),
            Bound::Unset | Bound::Value(_) => {}
        }
    }
    Ok(opts)
}

/// One partition's update of one table, ready to apply.
pub(crate) struct Mutation {
    pub table: Arc<Table>,
    pub update: PartitionUpdate,
}

/// What a conditional statement needs to check before it applies.
pub(crate) struct Cas {
    pub table: Arc<Table>,
    pub key: DecoratedKey,
    /// The row's full clustering values; `None` for a statement on static
    /// columns only.
    pub clustering: Option<Vec<Value>>,
    pub check: CasCheck,
}

pub(crate) enum CasCheck {
    NotExists,
    Exists,
    Columns(Vec<BoundCondition>),
}

pub(crate) struct BoundCondition {
    pub column: ColumnDef,
    /// `m[k]`, `l[i]` or `u.f`: the part of the column the condition reads.
    pub part: Option<Part>,
    pub op: Operator,
    /// One value (`None`: null), or IN's candidates.
    pub values: Vec<Option<Value>>,
}

/// The part of a column an element or field condition compares.
pub(crate) enum Part {
    MapKey(Value),
    ListIndex(i32),
    Field(usize),
}

impl Part {
    /// The part of `value` (a column's current value), if it has it.
    fn of(&self, value: Option<&Value>) -> Option<Value> {
        match (self, value?) {
            (Part::MapKey(k), Value::Map(entries)) => entries
                .iter()
                .find(|(key, _)| compare(key, k) == std::cmp::Ordering::Equal)
                .map(|(_, v)| v.clone()),
            (Part::ListIndex(i), Value::List(items)) => {
                usize::try_from(*i).ok().and_then(|i| items.get(i)).cloned()
            }
            (Part::Field(i), Value::Udt(fields)) => fields.get(*i).and_then(|(_, v)| v.clone()),
            _ => None,
        }
    }
}

fn key_pairs<'a>(
    schema: &'a TableSchema,
    pk: &'a [Value],
    ck: &'a [Value],
) -> Vec<(&'a str, Value)> {
    let mut out = Vec::with_capacity(pk.len() + ck.len());
    let mut pk_it = pk.iter();
    let mut ck_it = ck.iter();
    for c in &schema.columns {
        match c.kind {
            ColumnKind::PartitionKey => {
                if let Some(v) = pk_it.next() {
                    out.push((c.name.as_str(), v.clone()));
                }
            }
            ColumnKind::Clustering => {
                if let Some(v) = ck_it.next() {
                    out.push((c.name.as_str(), v.clone()));
                }
            }
            _ => {}
        }
    }
    out
}

fn column_of<'s>(schema: &'s TableSchema, name: &str) -> QueryOutcome<&'s ColumnDef> {
    schema
        .columns
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| super::undefined_column(&schema.keyspace, &schema.name, name))
}

/// What Cassandra refuses of any statement on a counter table: a TTL, a
/// timestamp (a counter's clock is the server's: `apply_counters`), a
/// condition.
fn check_counter_statement(using: &Using, conditions: &Conditions) -> QueryOutcome<()> {
    if using.ttl.is_some() {
        return Err(invalid("Cannot provide custom TTL for counter updates"));
    }
    if using.timestamp.is_some() {
        return Err(invalid(
            "Cannot provide custom timestamp for counter updates",
        ));
    }
    if !matches!(conditions, Conditions::None) {
        return Err(invalid("Conditions on counters are not supported"));
    }
    Ok(())
}

/// The column and increment of `a`, an assignment of an UPDATE of a counter
/// table (`None` for an assignment of a key column, which the caller
/// refuses as for any table); an unset increment is `None`, as Cassandra
/// skips it.
fn counter_delta<'s>(
    schema: &'s TableSchema,
    a: &Assignment,
    eval: &Eval<'_>,
) -> QueryOutcome<Option<(&'s ColumnDef, Option<i64>)>> {
    let (column, value, negate) = match a {
        Assignment::Add { column, value } => (column, value, false),
        Assignment::Subtract { column, value } => (column, value, true),
        Assignment::Set { column, .. } => {
            let col = column_of(schema, &column.text)?;
            if col.ty != CqlType::Counter {
                return Ok(None);
            }
            return Err(invalid(format!(
                "Cannot set the value of counter column {} (counters can only be incremented/decremented, not set)",
                col.name
            )));
        }
        Assignment::Prepend { column, value } => {
            // Cassandra reads `c = 1 + c` as a prepend and prints it so.
            let col = column_of(schema, &column.text)?;
            if col.ty != CqlType::Counter {
                return Ok(None);
            }
            return Err(invalid(format!(
                "Invalid operation ({name} = {value} - {name}) for non list column {name}",
                name = col.name
            )));
        }
        _ => return Ok(None),
    };
    let col = column_of(schema, &column.text)?;
    if col.ty != CqlType::Counter {
        return Ok(None);
    }
    let delta = match values::scalar(value, &CqlType::Counter, &col.name, eval)? {
        Bound::Value(Value::Counter(n) | Value::BigInt(n)) => {
            Some(if negate { n.wrapping_neg() } else { n })
        }
        Bound::Value(_) => {
            return Err(invalid(format!(
                "Invalid increment for counter {}",
                col.name
            )))
        }
        Bound::Null => return Err(invalid("Invalid null value for counter increment")),
        Bound::Unset => None,
    };
    Ok(Some((col, delta)))
}

/// The mutations of an INSERT, and its condition.
pub(crate) fn insert(
    ctx: &Ctx<'_>,
    ins: &Insert,
    batch_timestamp: Option<i64>,
) -> QueryOutcome<(Vec<Mutation>, Option<Cas>)> {
    let table = ctx.table(&ins.table)?;
    let schema = table.schema();
    if schema.is_counter_table() {
        return Err(invalid(
            "INSERT statements are not allowed on counter tables, use UPDATE instead",
        ));
    }
    let mut opts = write_options(
        &ins.using,
        &ctx.eval,
        batch_timestamp.or(ctx.params.timestamp_micros),
    )?;
    let mut values: Vec<(String, Bound)> = Vec::new();
    match &ins.values {
        InsertValues::Values {
            columns,
            values: terms,
        } => {
            if columns.len() != terms.len() {
                return Err(invalid("Unmatched column names/values"));
            }
            for (name, term) in columns.iter().zip(terms) {
                let col = column_of(&schema, &name.text)?;
                if values.iter().any(|(n, _)| *n == col.name) {
                    return Err(invalid("The column names contains duplicates"));
                }
                values.push((
                    col.name.clone(),
                    values::scalar(term, &col.ty, &col.name, &ctx.eval)?,
                ));
            }
        }
        InsertValues::Json { document, default } => {
            let text = match values::scalar(document, &CqlType::Text, "[json]", &ctx.eval)? {
                Bound::Value(Value::Text(t)) => t,
                _ => return Err(invalid("Got null for INSERT JSON values")),
            };
            values = super::json::insert_values(&schema, &text, *default)?;
        }
    }
    let mut row: Vec<(&str, Option<&Value>)> = Vec::with_capacity(values.len());
    for (name, b) in &values {
        let col = column_of(&schema, name)?;
        match b {
            Bound::Value(v) => row.push((col.name.as_str(), Some(v))),
            Bound::Null if col.is_primary_key() => {
                return Err(invalid(format!(
                    "Invalid null value in condition for column {}",
                    col.name
                )))
            }
            Bound::Null => row.push((col.name.as_str(), None)),
            Bound::Unset if col.is_primary_key() => {
                return Err(invalid(format!(
                    "Invalid unset value for column {}",
                    col.name
                )))
            }
            Bound::Unset => {}
        }
    }
    for c in schema.columns.iter().filter(|c| c.is_primary_key()) {
        if !row.iter().any(|(n, _)| *n == c.name) {
            let statics_only = row.iter().all(|(n, _)| {
                schema.columns.iter().any(|d| {
                    d.name == *n && matches!(d.kind, ColumnKind::PartitionKey | ColumnKind::Static)
                })
            });
            if c.kind == ColumnKind::Clustering && statics_only {
                continue;
            }
            return Err(invalid(format!(
                "Some {} key parts are missing: {}",
                if c.kind == ColumnKind::PartitionKey {
                    "partition"
                } else {
                    "clustering"
                },
                c.name
            )));
        }
    }
    let cas = if ins.if_not_exists {
        if ins.using.timestamp.is_some() {
            return Err(invalid(
                "Cannot provide custom timestamp for conditional updates",
            ));
        }
        let pk: Vec<Value> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
            .filter_map(|c| {
                row.iter()
                    .find(|(n, _)| *n == c.name)
                    .and_then(|(_, v)| (*v).cloned())
            })
            .collect();
        let ck: Vec<Value> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .filter_map(|c| {
                row.iter()
                    .find(|(n, _)| *n == c.name)
                    .and_then(|(_, v)| (*v).cloned())
            })
            .collect();
        let has_ck = schema
            .columns
            .iter()
            .any(|c| c.kind == ColumnKind::Clustering);
        // The LWT's own timestamp is chosen under the lock (invariant 2).
        opts.timestamp_micros = None;
        Some(Cas {
            table: table.clone(),
            key: schema.decorated_key(&pk).map_err(QueryError::from)?,
            clustering: if has_ck && ck.is_empty() {
                None
            } else {
                Some(ck)
            },
            check: CasCheck::NotExists,
        })
    } else {
        None
    };
    let update = schema
        .insert_values(&row, &opts, ctx.now_micros())
        .map_err(QueryError::from)?;
    Ok((vec![Mutation { table, update }], cas))
}

/// The mutations of an UPDATE, and its condition.
pub(crate) fn update(
    ctx: &Ctx<'_>,
    up: &Update,
    batch_timestamp: Option<i64>,
) -> QueryOutcome<(Vec<Mutation>, Option<Cas>)> {
    let table = ctx.table(&up.table)?;
    let schema = table.schema();
    let mut opts = write_options(
        &up.using,
        &ctx.eval,
        batch_timestamp.or(ctx.params.timestamp_micros),
    )?;
    let mut set: Vec<(String, Option<Value>)> = Vec::new();
    let mut element_ops: Vec<elements::ElementOp<'_>> = Vec::new();
    let mut statics_only = true;
    let counter_table = schema.is_counter_table();
    if counter_table {
        check_counter_statement(&up.using, &up.conditions)?;
    }
    let mut deltas: Vec<(&str, i64)> = Vec::new();
    for a in &up.assignments {
        if counter_table {
            if let Some((col, delta)) = counter_delta(&schema, a, &ctx.eval)? {
                if col.kind != ColumnKind::Static {
                    statics_only = false;
                }
                deltas.extend(delta.map(|d| (col.name.as_str(), d)));
                continue;
            }
        }
        if let Some(column) = elements::assignment_column(a) {
            let col = column_of(&schema, &column.text)?;
            if col.ty.is_multi_cell() {
                if col.kind != ColumnKind::Static {
                    statics_only = false;
                }
                element_ops.extend(elements::assignment(col, a, &ctx.eval)?);
                continue;
            }
        }
        let (name, value) = match a {
            Assignment::Set { column, value } => (column, value),
            Assignment::Add { column, .. }
            | Assignment::Subtract { column, .. }
            | Assignment::Prepend { column, .. }
            | Assignment::SetElement { column, .. } => {
                let col = column_of(&schema, &column.text)?;
                // Cassandra prints the operation as it understood it, and
                // names what the column is not.
                let not = if col.ty.is_collection() {
                    "frozen collection"
                } else if matches!(a, Assignment::SetElement { .. }) {
                    "non collection"
                } else {
                    "non counter"
                };
                return Err(invalid(format!(
                    "Invalid operation ({a}) for {not} column {}",
                    col.name
                )));
            }
            Assignment::SetField { column, .. } => {
                let col = column_of(&schema, &column.text)?;
                let not = if matches!(col.ty, CqlType::Udt { .. }) {
                    "frozen UDT"
                } else {
                    "non-UDT"
                };
                return Err(invalid(format!(
                    "Invalid operation ({a}) for {not} column {}",
                    col.name
                )));
            }
        };
        let col = column_of(&schema, &name.text)?;
        if col.is_primary_key() {
            return Err(invalid(format!(
                "PRIMARY KEY part {} found in SET part",
                col.name
            )));
        }
        if set.iter().any(|(n, _)| *n == col.name) {
            return Err(invalid(format!(
                "Multiple incompatible setting of column {}",
                col.name
            )));
        }
        if col.kind != ColumnKind::Static {
            statics_only = false;
        }
        match values::scalar(value, &col.ty, &col.name, &ctx.eval)? {
            Bound::Value(v) => set.push((col.name.clone(), Some(v))),
            Bound::Null => set.push((col.name.clone(), None)),
            Bound::Unset => {}
        }
    }
    let r = restrict::analyze(&schema, &up.where_clause, Purpose::Update)?;
    let keys = r
        .partition_keys(&schema, &ctx.eval)?
        .ok_or_else(|| invalid("UPDATE needs the whole partition key"))?;
    let has_ck = schema
        .columns
        .iter()
        .any(|c| c.kind == ColumnKind::Clustering);
    let whole_rows = r.names_whole_rows(&schema);
    let prefixes = if whole_rows {
        r.clustering_prefixes(&schema, &ctx.eval)?
    } else if statics_only && r.clustering.prefix.is_empty() && r.clustering.slice.is_none() {
        vec![Vec::new()]
    } else {
        let missing: Vec<&str> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .map(|c| c.name.as_str())
            .collect();
        return Err(invalid(format!(
            "Some clustering keys are missing: {}",
            missing.join(", ")
        )));
    };
    let conditions_on_rows = match &up.conditions {
        Conditions::Columns(cs) => cs.iter().any(|c| {
            schema
                .columns
                .iter()
                .any(|d| d.name == c.column.text && d.kind != ColumnKind::Static)
        }),
        Conditions::Exists => true,
        Conditions::None => false,
    };
    if statics_only
        && has_ck
        && !up.assignments.is_empty()
        && !conditions_on_rows
        && (!r.clustering.prefix.is_empty() || r.clustering.slice.is_some())
    {
        return Err(invalid(
            "Invalid restrictions on clustering columns since the UPDATE statement modifies only static columns",
        ));
    }
    let cas = conditions(
        ctx,
        &table,
        &schema,
        &up.conditions,
        &keys,
        &prefixes,
        &up.using,
    )?;
    if cas.is_some() {
        opts.timestamp_micros = None;
    }
    if set.is_empty() && element_ops.is_empty() && deltas.is_empty() {
        // Every value was unset: nothing to write, as Cassandra (no error).
        return Ok((Vec::new(), cas));
    }
    let now = ctx.now_micros();
    let set_refs: Vec<(&str, Option<Value>)> =
        set.iter().map(|(n, v)| (n.as_str(), v.clone())).collect();
    let mut out = Vec::with_capacity(keys.len() * prefixes.len());
    for pk in &keys {
        for ck in &prefixes {
            let key = key_pairs(&schema, pk, ck);
            let update = if !deltas.is_empty() {
                // A counter table has no other columns to set.
                Some(
                    schema
                        .update_counters(&key, &deltas, now)
                        .map_err(QueryError::from)?,
                )
            } else if set_refs.is_empty() {
                None
            } else {
                Some(
                    schema
                        .update(&key, &set_refs, &opts, now)
                        .map_err(QueryError::from)?,
                )
            };
            let update = with_elements(
                update,
                &element_ops,
                (&table, &schema),
                (pk, ck),
                (&opts, now, true),
            )?;
            out.extend(update.map(|update| Mutation {
                table: table.clone(),
                update,
            }));
        }
    }
    Ok((out, cas))
}

/// `update` (the whole-value writes of one row, if any) merged with the
/// element writes of `ops` on that row (`elements` contract 2).
fn with_elements(
    update: Option<PartitionUpdate>,
    ops: &[elements::ElementOp<'_>],
    (table, schema): (&Arc<Table>, &TableSchema),
    (pk, ck): (&[Value], &[Value]),
    (opts, now, ttl_allowed): (&WriteOptions, i64, bool),
) -> QueryOutcome<Option<PartitionUpdate>> {
    if ops.is_empty() {
        return Ok(update);
    }
    let writes = elements::writes(ops, table, schema, (pk, ck), now)?;
    if writes.is_empty() {
        return Ok(update);
    }
    let pairs = key_pairs(schema, pk, ck);
    let more = schema
        .update_elements(&pairs, writes, opts, now, ttl_allowed)
        .map_err(QueryError::from)?;
    Ok(Some(match update {
        Some(mut u) => {
            merge_partition(&mut u, more);
            u
        }
        None => more,
    }))
}

/// The mutations of a DELETE, and its condition.
pub(crate) fn delete(
    ctx: &Ctx<'_>,
    del: &Delete,
    batch_timestamp: Option<i64>,
) -> QueryOutcome<(Vec<Mutation>, Option<Cas>)> {
    let table = ctx.table(&del.table)?;
    let schema = table.schema();
    if del.using.ttl.is_some() {
        return Err(invalid("TTL attribute is not allowed for deletes"));
    }
    if schema.is_counter_table() {
        check_counter_statement(&del.using, &del.conditions)?;
    }
    let mut opts = write_options(
        &del.using,
        &ctx.eval,
        batch_timestamp.or(ctx.params.timestamp_micros),
    )?;
    let mut columns: Vec<&ColumnDef> = Vec::new();
    // Columns whose elements are deleted, and those deletions.
    let mut element_cols: Vec<&ColumnDef> = Vec::new();
    let mut element_ops: Vec<elements::ElementOp<'_>> = Vec::new();
    for d in &del.columns {
        match d {
            Deletion::Column(n) => {
                let col = column_of(&schema, &n.text)?;
                if col.is_primary_key() {
                    return Err(invalid(format!(
                        "Invalid identifier {} for deletion (should not be a PRIMARY KEY part)",
                        col.name
                    )));
                }
                columns.push(col);
            }
            Deletion::Element { column, .. } | Deletion::Field { column, .. } => {
                let col = column_of(&schema, &column.text)?;
                if col.ty.is_multi_cell() {
                    element_cols.push(col);
                    element_ops.extend(elements::deletion(col, d, &ctx.eval)?);
                    continue;
                }
                let field = matches!(d, Deletion::Field { .. });
                return Err(invalid(match (field, &col.ty) {
                    (false, t) if t.is_collection() => format!(
                        "Invalid deletion operation for frozen collection column {}",
                        col.name
                    ),
                    (false, _) => format!(
                        "Invalid deletion operation for non collection column {}",
                        col.name
                    ),
                    (true, CqlType::Udt { .. }) => format!(
                        "Frozen UDT column {} does not support field deletions",
                        col.name
                    ),
                    (true, _) => {
                        format!("Invalid deletion operation for non-UDT column {}", col.name)
                    }
                }));
            }
        }
    }
    if schema.is_counter_table() && !columns.is_empty() {
        // A deleted counter stays deleted (`data.rs` invariant 6), also
        // under a later row or partition deletion, which would otherwise
        // shadow its tombstone in one merge order and not in another.
        opts.timestamp_micros = Some(crate::data::COUNTER_TOMBSTONE_TIMESTAMP);
    }
    let r = restrict::analyze(&schema, &del.where_clause, Purpose::Delete)?;
    let keys = r
        .partition_keys(&schema, &ctx.eval)?
        .ok_or_else(|| invalid("DELETE needs the whole partition key"))?;
    let whole_rows = r.names_whole_rows(&schema);
    let has_ck = schema
        .columns
        .iter()
        .any(|c| c.kind == ColumnKind::Clustering);
    let simple_columns = columns;
    let columns: Vec<&ColumnDef> = simple_columns
        .iter()
        .chain(&element_cols)
        .copied()
        .collect();
    let statics_only = !columns.is_empty() && columns.iter().all(|c| c.kind == ColumnKind::Static);
    let no_clustering = r.clustering.prefix.is_empty() && r.clustering.slice.is_none();
    if statics_only && has_ck && !no_clustering && matches!(del.conditions, Conditions::None) {
        return Err(invalid(
            "Invalid restrictions on clustering columns since the DELETE statement modifies only static columns",
        ));
    }
    let prefixes = if whole_rows || (no_clustering && (statics_only || columns.is_empty())) {
        r.clustering_prefixes(&schema, &ctx.eval)?
    } else if !columns.is_empty() {
        return Err(invalid(
            "Range deletions are not supported for specific columns",
        ));
    } else {
        Vec::new()
    };
    let cas = conditions(
        ctx,
        &table,
        &schema,
        &del.conditions,
        &keys,
        &prefixes,
        &del.using,
    )?;
    if cas.is_some() {
        if !whole_rows && has_ck && !(no_clustering && statics_only) {
            return Err(invalid(
                                "DELETE statements must restrict all PRIMARY KEY columns with equality relations in order to delete non static columns",
            ));
        }
        opts.timestamp_micros = None;
    }
    let now = ctx.now_micros();
    let mut out = Vec::new();
    for pk in &keys {
        let updates: Vec<PartitionUpdate> = if !columns.is_empty() {
            let names: Vec<&str> = simple_columns.iter().map(|c| c.name.as_str()).collect();
            let mut updates = Vec::with_capacity(prefixes.len());
            for ck in &prefixes {
                let update = if names.is_empty() {
                    None
                } else {
                    Some(
                        schema
                            .delete_cells(&key_pairs(&schema, pk, ck), &names, &opts, now)
                            .map_err(QueryError::from)?,
                    )
                };
                updates.extend(with_elements(
                    update,
                    &element_ops,
                    (&table, &schema),
                    (pk, ck),
                    (&opts, now, false),
                )?);
            }
            updates
        } else if !has_ck || no_clustering {
            let pk_pairs = key_pairs(&schema, pk, &[]);
            vec![schema
                .delete_partition(&pk_pairs, &opts, now)
                .map_err(QueryError::from)?]
        } else if whole_rows {
            prefixes
                .iter()
                .map(|ck| {
                    schema
                        .delete_row(&key_pairs(&schema, pk, ck), &opts, now)
                        .map_err(QueryError::from)
                })
                .collect::<QueryOutcome<_>>()?
        } else {
            let ranges: Vec<ClusteringRange> = r.clustering_ranges(&schema, &ctx.eval)?;
            if ranges.is_empty() {
                continue;
            }
            vec![schema
                .delete_ranges(pk, &ranges, &opts, now)
                .map_err(QueryError::from)?]
        };
        out.extend(updates.into_iter().map(|update| Mutation {
            table: table.clone(),
            update,
        }));
    }
    Ok((out, cas))
}

/// The condition of an UPDATE or DELETE, bound.
fn conditions(
    ctx: &Ctx<'_>,
    table: &Arc<Table>,
    schema: &TableSchema,
    conds: &Conditions,
    keys: &[Vec<Value>],
    prefixes: &[Vec<Value>],
    using: &Using,
) -> QueryOutcome<Option<Cas>> {
    if matches!(conds, Conditions::None) {
        return Ok(None);
    }
    if using.timestamp.is_some() {
        return Err(invalid(
            "Cannot provide custom timestamp for conditional updates",
        ));
    }
    if keys.len() != 1 {
        return Err(invalid(
            "IN on the partition key is not supported with conditional updates",
        ));
    }
    if prefixes.len() > 1 {
        return Err(invalid(
            "IN on the clustering key columns is not supported with conditional updates",
        ));
    }
    let key = schema.decorated_key(&keys[0]).map_err(QueryError::from)?;
    let clustering = prefixes
        .first()
        .filter(|p| {
            !p.is_empty()
                || !schema
                    .columns
                    .iter()
                    .any(|c| c.kind == ColumnKind::Clustering)
        })
        .cloned();
    let check = match conds {
        Conditions::None => return Ok(None),
        Conditions::Exists => CasCheck::Exists,
        Conditions::Columns(list) => CasCheck::Columns(
            list.iter()
                .map(|c| bind_condition(schema, c, &ctx.eval))
                .collect::<QueryOutcome<_>>()?,
        ),
    };
    if clustering.is_none() {
        if let CasCheck::Columns(cs) = &check {
            if let Some(c) = cs.iter().find(|c| c.column.kind != ColumnKind::Static) {
                return Err(invalid(format!(
                    "Some clustering keys are missing: a condition on {} needs the full primary key",
                    c.column.name
                )));
            }
        }
    }
    Ok(Some(Cas {
        table: table.clone(),
        key,
        clustering,
        check,
    }))
}

fn bind_condition(
    schema: &TableSchema,
    c: &Condition,
    eval: &Eval<'_>,
) -> QueryOutcome<BoundCondition> {
    let col = column_of(schema, &c.column.text)?;
    if col.is_primary_key() {
        return Err(invalid(format!(
            "PRIMARY KEY column '{}' cannot have IF conditions",
            col.name
        )));
    }
    // `m[k] op v`, `l[i] op v`, `u.f op v`: the part and the type compared.
    let (part, ty) = match (&c.element, &c.field, &col.ty) {
        (None, None, ty) => (None, ty.clone()),
        (Some(k), None, CqlType::Map { key, value, .. }) => {
            match values::scalar(k, key, &format!("key({})", col.name), eval)? {
                Bound::Value(k) => (Some(Part::MapKey(k)), (**value).clone()),
                _ => return Err(invalid("Invalid null value for map element access")),
            }
        }
        (Some(i), None, CqlType::List { element, .. }) => {
            match values::scalar(i, &CqlType::Int, &format!("idx({})", col.name), eval)? {
                Bound::Value(Value::Int(i)) => (Some(Part::ListIndex(i)), (**element).clone()),
                _ => return Err(invalid("Invalid null value for list element access")),
            }
        }
        (None, Some(f), CqlType::Udt { def, .. }) => {
            match def.fields.iter().position(|(n, _)| *n == f.text) {
                Some(i) => (Some(Part::Field(i)), def.fields[i].1.clone()),
                None => {
                    return Err(invalid(format!(
                        "Unknown field {} for column {}",
                        f.text, col.name
                    )))
                }
            }
        }
        _ => {
            return Err(invalid(format!(
                "Invalid element or field condition on column {} of type {}",
                col.name,
                col.ty.name()
            )))
        }
    };
    let one = |t: &crate::cql::ast::Term| -> QueryOutcome<Option<Value>> {
        match values::scalar(t, &ty, &col.name, eval)? {
            Bound::Value(v) => Ok(Some(v)),
            Bound::Null => Ok(None),
            Bound::Unset => Err(invalid(format!(
                "Invalid 'unset' value in condition on {}",
                col.name
            ))),
        }
    };
    let values = match (c.op, &c.value) {
        (Operator::In, crate::cql::ast::Term::Bind(m)) => match eval.marker(m.index)? {
            super::BoundValue::Value(b) => values::decode_list(b, &ty, &col.name)?
                .into_iter()
                .map(|b| match b {
                    Bound::Value(v) => Some(v),
                    _ => None,
                })
                .collect(),
            _ => {
                return Err(invalid(format!(
                    "Invalid null list in IN condition on {}",
                    col.name
                )))
            }
        },
        (
            Operator::In,
            crate::cql::ast::Term::Tuple { items, .. } | crate::cql::ast::Term::List { items, .. },
        ) => items.iter().map(one).collect::<QueryOutcome<_>>()?,
        (op, t) => {
            let v = one(t)?;
            if v.is_none() && !matches!(op, Operator::Eq | Operator::Neq) {
                return Err(invalid(format!(
                    "Invalid comparison with null for operator \"{}\"",
                    match op {
                        Operator::Lt => "<",
                        Operator::Lte => "<=",
                        Operator::Gt => ">",
                        Operator::Gte => ">=",
                        _ => "?",
                    }
                )));
            }
            vec![v]
        }
    };
    if !matches!(
        c.op,
        Operator::Eq
            | Operator::Neq
            | Operator::Lt
            | Operator::Lte
            | Operator::Gt
            | Operator::Gte
            | Operator::In
    ) {
        return Err(invalid(format!(
            "Unsupported operator in condition on {}",
            col.name
        )));
    }
    Ok(BoundCondition {
        column: col.clone(),
        part,
        op: c.op,
        values,
    })
}

impl BoundCondition {
    fn holds(&self, current: Option<&Value>) -> bool {
        if let Some(part) = &self.part {
            let value = part.of(current);
            return self.holds_value(value.as_ref());
        }
        self.holds_value(current)
    }

    fn holds_value(&self, current: Option<&Value>) -> bool {
        let eq = |a: Option<&Value>, b: Option<&Value>| match (a, b) {
            (None, None) => true,
            (Some(a), Some(b)) => compare(a, b) == std::cmp::Ordering::Equal,
            _ => false,
        };
        match self.op {
            Operator::In => self.values.iter().any(|v| eq(current, v.as_ref())),
            Operator::Eq => eq(current, self.values[0].as_ref()),
            Operator::Neq => !eq(current, self.values[0].as_ref()),
            op => {
                let (Some(cur), Some(Some(want))) = (current, self.values.first()) else {
                    return false;
                };
                let o = compare(cur, want);
                match op {
                    Operator::Lt => o.is_lt(),
                    Operator::Lte => o.is_le(),
                    Operator::Gt => o.is_gt(),
                    Operator::Gte => o.is_ge(),
                    _ => false,
                }
            }
        }
    }
}

/// Applies `mutations`, merging those of one partition of one table into one
/// update (invariant 3).
pub(crate) fn apply_all(mutations: Vec<Mutation>) -> QueryOutcome<()> {
    if mutations.len() == 1 {
        if let Some(m) = mutations.into_iter().next() {
            apply_one(m)?;
        }
        return Ok(());
    }
    let mut merged: BTreeMap<(u64, i64, Vec<u8>), Mutation> = BTreeMap::new();
    for m in mutations {
        let id = (
            m.table.schema().id,
            m.update.key.token,
            m.update.key.key.to_vec(),
        );
        match merged.get_mut(&id) {
            Some(acc) => merge_partition(&mut acc.update, m.update),
            None => {
                merged.insert(id, m);
            }
        }
    }
    for m in merged.into_values() {
        apply_one(m)?;
    }
    Ok(())
}

/// Applies one partition's update: a counter table's through
/// [`Table::apply_counters`], which resolves its increments, any other's as
/// it is.
fn apply_one(m: Mutation) -> QueryOutcome<()> {
    if m.table.schema().is_counter_table() {
        return m.table.apply_counters(m.update).map_err(QueryError::from);
    }
    m.table.apply(&m.update).map_err(QueryError::from)
}

/// Whether a batch's mutations mix counter and other tables, which Cassandra
/// refuses (a counter batch and a logged one refuse it per statement).
pub(crate) fn check_batch_mix(mutations: &[Mutation]) -> QueryOutcome<()> {
    let counter = |m: &Mutation| m.table.schema().is_counter_table();
    if mutations.iter().any(counter) && !mutations.iter().all(counter) {
        return Err(invalid(
            "Counter and non-counter mutations cannot exist in the same batch",
        ));
    }
    Ok(())
}

/// Runs a conditional statement or batch: reads the current rows under the
/// partition's lock, applies `mutations` (built at the statement's "now") at
/// a timestamp above the lock's last one if every check holds, and answers
/// as Cassandra does (invariant 2): `[applied]` alone when applied or when
/// the checked row does not exist; otherwise the condition columns (regular
/// before static, each by name) for one statement, the whole existing row for
/// `IF NOT EXISTS`, and every existing row the batch touches for a batch.
pub(crate) fn apply_cas(
    ctx: &Ctx<'_>,
    checks: Vec<Cas>,
    mut mutations: Vec<Mutation>,
) -> QueryOutcome<QueryResult> {
    // Conditions on counters are refused before this; a counter write could
    // not be ordered with the read below.
    if mutations
        .iter()
        .any(|m| m.table.schema().is_counter_table())
    {
        return Err(invalid("Conditions on counters are not supported"));
    }
    let first = checks.first().ok_or_else(|| invalid("no condition"))?;
    let (table, key) = (first.table.clone(), first.key.clone());
    let same_table = |t: &Arc<Table>| Arc::ptr_eq(t, &table);
    if checks.iter().any(|c| !same_table(&c.table))
        || mutations.iter().any(|m| !same_table(&m.table))
    {
        return Err(invalid("Batch with conditions cannot span multiple tables"));
    }
    if checks.iter().any(|c| c.key != key) || mutations.iter().any(|m| m.update.key != key) {
        return Err(invalid(
            "Batch with conditions cannot span multiple partitions",
        ));
    }
    let batch = checks.len() > 1;
    let schema = table.schema();
    let mut guard = ctx.exec.locks.lock(schema.id, &key);
    let read = table
        .read(&key, &ClusteringRange::ALL, false, usize::MAX)
        .map_err(QueryError::from)?;
    // The static row counts only with a live cell.
    let static_row = read.static_row.as_ref().filter(|r| !r.cells.is_empty());
    let mut applied = true;
    let mut shown: Vec<(&ColumnDef, Option<Value>)> = Vec::new();
    let mut show_rows: Vec<&crate::data::Row> = Vec::new();
    let mut show_static_only = false;
    let mut missing_row_checked = false;
    for c in &checks {
        let row = match &c.clustering {
            Some(ck) => {
                let enc = schema.encode_clustering(ck).map_err(QueryError::from)?;
                read.rows.iter().find(|r| r.clustering == enc)
            }
            None => None,
        };
        let exists = match &c.clustering {
            Some(_) => row.is_some(),
            None => static_row.is_some() || !read.rows.is_empty(),
        };
        if let Some(r) = row {
            if !show_rows.iter().any(|x| x.clustering == r.clustering) {
                show_rows.push(r);
            }
        } else if c.clustering.is_none() && static_row.is_some() {
            show_static_only = true;
        }
        match &c.check {
            CasCheck::NotExists => {
                if exists {
                    applied = false;
                }
            }
            CasCheck::Exists => {
                if !exists {
                    applied = false;
                    missing_row_checked = true;
                }
            }
            CasCheck::Columns(conds) => {
                if !exists {
                    missing_row_checked = true;
                }
                for cond in conds {
                    let source = if cond.column.kind == ColumnKind::Static {
                        static_row
                    } else {
                        row
                    };
                    let current = match source {
                        Some(r) => schema
                            .column_value(&cond.column, r)
                            .map_err(QueryError::from)?,
                        None => None,
                    };
                    if !cond.holds(current.as_ref()) {
                        applied = false;
                    }
                    if !shown.iter().any(|(c, _)| c.name == cond.column.name) {
                        shown.push((&cond.column, current));
                    }
                }
            }
        }
    }
    let keyspace = schema.keyspace.clone();
    let table_name = schema.name.clone();
    let spec = |name: &str, ty: ColumnType| ColumnSpec {
        keyspace: keyspace.clone(),
        table: table_name.clone(),
        name: name.to_string(),
        ty,
    };
    let applied_only = |b: bool| {
        QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata {
                columns: vec![spec("[applied]", ColumnType::Native(CqlType::Boolean))],
            }),
            rows: vec![vec![Some(vec![u8::from(b)])]],
            paging_state: None,
        })
    };
    if applied {
        // The mutations were built at the statement's "now"; move them to the
        // timestamp chosen under the lock, keeping their relative order.
        let ts = guard.next_timestamp(ctx.now_micros());
        let delta = ts - ctx.now_micros();
        for m in &mut mutations {
            shift_timestamps(&mut m.update, delta);
        }
        apply_all(mutations)?;
        drop(guard);
        return Ok(applied_only(true));
    }
    drop(guard);
    let whole_rows = batch
        || checks
            .iter()
            .any(|c| matches!(c.check, CasCheck::NotExists));
    if whole_rows {
        // Every column, in SELECT * order, for each existing row touched.
        let order = super::select::select_order(&schema);
        let mut columns = vec![spec("[applied]", ColumnType::Native(CqlType::Boolean))];
        for &i in &order {
            columns.push(spec(
                &schema.columns[i].name,
                ColumnType::of(&schema.columns[i].ty),
            ));
        }
        show_rows.sort_by(|a, b| a.clustering.cmp(&b.clustering));
        let mut rows = Vec::new();
        let empty = crate::data::Row::new(Vec::new());
        let mut sources: Vec<&crate::data::Row> = show_rows;
        if sources.is_empty() && show_static_only {
            sources.push(&empty);
        }
        // Cassandra reads the static columns only for a condition on them (or
        // on the partition alone); otherwise they show as null.
        let reads_statics = checks.iter().any(|c| {
            c.clustering.is_none()
                || matches!(&c.check, CasCheck::Columns(conds)
                    if conds.iter().any(|x| x.column.kind == ColumnKind::Static))
        });
        let static_shown = if reads_statics { static_row } else { None };
        for r in sources {
            let values = schema
                .row_values_with_static(&key.key, static_shown, r)
                .map_err(QueryError::from)?;
            let mut out: Vec<Option<Vec<u8>>> = vec![Some(vec![0])];
            for &i in &order {
                out.push(values[i].1.as_ref().map(crate::types::serialize));
            }
            rows.push(out);
        }
        if rows.is_empty() {
            return Ok(applied_only(false));
        }
        return Ok(QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata { columns }),
            rows,
            paging_state: None,
        }));
    }
    if missing_row_checked && shown.iter().all(|(_, v)| v.is_none()) {
        // The checked row does not exist: Cassandra answers `[applied]` alone.
        return Ok(applied_only(false));
    }
    // The condition columns: regular before static, each by name.
    shown.sort_by(|(a, _), (b, _)| {
        (a.kind == ColumnKind::Static, &a.name).cmp(&(b.kind == ColumnKind::Static, &b.name))
    });
    let mut columns = vec![spec("[applied]", ColumnType::Native(CqlType::Boolean))];
    let mut row_out: Vec<Option<Vec<u8>>> = vec![Some(vec![0])];
    for (c, v) in shown {
        columns.push(spec(&c.name, ColumnType::of(&c.ty)));
        row_out.push(v.map(|v| crate::types::serialize(&v)));
    }
    Ok(QueryResult::Rows(Rows {
        metadata: Arc::new(RowsMetadata { columns }),
        rows: vec![row_out],
        paging_state: None,
    }))
}

/// Moves every timestamp of `update` by `delta` microseconds.
fn shift_timestamps(update: &mut PartitionUpdate, delta: i64) {
    fn row(r: &mut crate::data::Row, delta: i64) {
        if r.liveness.timestamp_micros != crate::data::NO_TIMESTAMP {
            r.liveness.timestamp_micros += delta;
        }
        if !r.deletion.is_live() {
            r.deletion.marked_for_delete_at_micros += delta;
        }
        for c in &mut r.cells {
            c.timestamp_micros += delta;
        }
    }
    if let Some(d) = &mut update.deletion.partition {
        d.marked_for_delete_at_micros += delta;
    }
    for rt in &mut update.deletion.ranges {
        rt.deletion.marked_for_delete_at_micros += delta;
    }
    if let Some(s) = &mut update.static_row {
        row(s, delta);
    }
    for r in &mut update.rows {
        row(r, delta);
    }
}

/// The mutations of one batch statement.
pub(crate) fn batch_statement(
    ctx: &Ctx<'_>,
    s: &BatchStatement,
    batch_timestamp: Option<i64>,
    kind: BatchKind,
) -> QueryOutcome<(Vec<Mutation>, Option<Cas>)> {
    let using = match s {
        BatchStatement::Insert(i) => &i.using,
        BatchStatement::Update(u) => &u.using,
        BatchStatement::Delete(d) => &d.using,
    };
    if batch_timestamp.is_some() && using.timestamp.is_some() {
        return Err(invalid(
            "Timestamp must be set either on BATCH or individual statements",
        ));
    }
    if kind == BatchKind::Counter && batch_timestamp.is_some() {
        return Err(invalid("Cannot provide custom timestamp for counter BATCH"));
    }
    let name = match s {
        BatchStatement::Insert(i) => &i.table,
        BatchStatement::Update(u) => &u.table,
        BatchStatement::Delete(d) => &d.table,
    };
    let counter = ctx.table(name)?.schema().is_counter_table();
    match kind {
        BatchKind::Logged if counter => {
            return Err(invalid(
                "Cannot include a counter statement in a logged batch",
            ))
        }
        BatchKind::Counter if !counter => {
            return Err(invalid(
                "Cannot include non-counter statement in a counter batch",
            ))
        }
        _ => {}
    }
    match s {
        BatchStatement::Insert(i) => insert(ctx, i, batch_timestamp),
        BatchStatement::Update(u) => update(ctx, u, batch_timestamp),
        BatchStatement::Delete(d) => delete(ctx, d, batch_timestamp),
    }
}
