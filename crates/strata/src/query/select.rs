//! SELECT: planning over partition slices and token-ordered scans, selectors,
//! aggregates, GROUP BY, DISTINCT, filtering, JSON and paging.
//!
//! Owns Cassandra's read semantics as the CQL layer sees them:
//! - partitions named by `=`/`IN` are read in token order (`IN` is a set),
//!   each as the clustering ranges of its restriction, forward or reversed;
//!   otherwise the table is scanned in token order (a `token()` range narrows
//!   the scan);
//! - a partition with static values but no live rows shows as one row (null
//!   clustering) when the query does not restrict clustering columns;
//! - `LIMIT` and `PER PARTITION LIMIT` count rows that pass the filters;
//! - a page holds at most `page_size` rows and its paging state resumes after
//!   the last row it returned, so writes between pages neither repeat nor
//!   skip rows that existed before them.
//!
//! Invariants:
//! 1. Nothing decodes a whole partition to return a few rows: partition reads
//!    take the limit the query can prove (the page, the LIMIT, the partition
//!    limit) unless a filter may drop rows.
//! 2. The paging state names a position (partition, last clustering) and the
//!    limits left; it is checked (length-bounded, the key's token recomputed)
//!    before it is used.
//! 3. Result values are the stored serialized bytes where the column is
//!    returned as is; only functions decode.

use std::cmp::Ordering as CmpOrdering;
use std::sync::Arc;

use crate::cql::ast::{Ordering, Select, Selection, Selector, Term};
use crate::data::{ClusteringBound, ClusteringRange, DecoratedKey, Row};
use crate::read::PagingState;
use crate::schema::{ColumnDef, ColumnKind, TableSchema};
use crate::table::Table;
use crate::types::{self, CqlType, Value};

use super::executor::Ctx;
use super::restrict::{self, BoundFilter, Purpose, Restrictions};
use super::values::{self, Bound};
use super::{ColumnSpec, ColumnType, QueryError, QueryOutcome, QueryResult, Rows, RowsMetadata};

fn invalid(msg: impl Into<String>) -> QueryError {
    QueryError::invalid(msg)
}

// ---------------------------------------------------------------------------
// Selectors
// ---------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum AggKind {
    CountRows,
    Count,
    Min,
    Max,
    Sum,
    Avg,
}

/// What one result column computes.
#[derive(Clone, Debug)]
enum Expr {
    /// A column of the table, by index into `schema.columns`.
    Column(usize),
    WriteTime(usize),
    MaxWriteTime(usize),
    Ttl(usize),
    /// `writetime()`/`maxwritetime()` (`ttl == false`) or `ttl()` of one
    /// element or field of a complex column, by its cell path.
    ElementTime {
        column: usize,
        path: Vec<u8>,
        ttl: bool,
    },
    /// `writetime()` or `ttl()` of a slice of a complex set or map: a list
    /// of the times of the elements in it (`maxwritetime()`: the largest).
    SliceTimes {
        column: usize,
        range: KeyRange,
        ttl: bool,
        max: bool,
    },
    /// `-a`: a number of the operand's type, negated as Java negates it
    /// (Cassandra's `_negate`: `-(-128)` of a tinyint is -128).
    Negate {
        inner: Box<Expr>,
        ty: CqlType,
    },
    /// `a + b`, `a * b`, ...: numbers of the wider operand type (Cassandra's
    /// `OperationFcts`), or a timestamp or date moved by a duration.
    Arith {
        op: crate::cql::ast::ArithOp,
        left: Box<Expr>,
        right: Box<Expr>,
        types: [CqlType; 2],
        out: CqlType,
    },
    /// `m[a..b]`, `s[a..b]`: the entries (elements) whose key is in the
    /// range, null when none.
    Slice {
        inner: Box<Expr>,
        collection: CqlType,
        range: KeyRange,
    },
    Token,
    Constant(Option<Vec<u8>>),
    /// A scalar function over other expressions, typed.
    Function {
        name: String,
        args: Vec<Expr>,
        arg_types: Vec<ColumnType>,
    },
    Cast {
        inner: Box<Expr>,
        from: ColumnType,
        to: CqlType,
    },
    Aggregate {
        kind: AggKind,
        /// Index into the aggregate accumulators.
        slot: usize,
        arg: Option<Box<Expr>>,
        ty: ColumnType,
    },
    /// The entry of a frozen map at a key (its value), or a frozen set's
    /// element equal to it; null when absent. `key` is the key's comparable
    /// encoding (`types::element_path`), so equal-valued keys match.
    Element {
        inner: Box<Expr>,
        collection: CqlType,
        key: Vec<u8>,
    },
    /// Field `index` of a user-defined type value.
    Field {
        inner: Box<Expr>,
        udt: CqlType,
        index: usize,
    },
}

/// Inclusive bounds on a set's elements or a map's keys, as their
/// comparable encodings (`types::element_path`); `None` is unbounded.
#[derive(Clone, Debug)]
struct KeyRange {
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
}

impl KeyRange {
    fn contains(&self, path: &[u8]) -> bool {
        self.from.as_deref().is_none_or(|f| path >= f)
            && self.to.as_deref().is_none_or(|t| path <= t)
    }
}

struct OutColumn {
    name: String,
    ty: ColumnType,
    expr: Expr,
}

/// A row as the selectors see it.
struct RowCtx<'a> {
    schema: &'a TableSchema,
    key: &'a DecoratedKey,
    /// The partition key's components, serialized (decoded lazily).
    pk_parts: &'a [Vec<u8>],
    /// Clustering values, serialized, in clustering order (empty for a static
    /// only row or a table without clustering columns).
    ck_parts: &'a [Option<Vec<u8>>],
    row: Option<&'a Row>,
    static_row: Option<&'a Row>,
    now_seconds: i64,
}

impl RowCtx<'_> {
    /// The row holding column `col`'s cells (the static row for a static column).
    fn source(&self, col: &ColumnDef) -> Option<&Row> {
        if col.kind == ColumnKind::Static {
            self.static_row
        } else {
            self.row
        }
    }

    /// A simple column's cell.
    fn cell(&self, col: &ColumnDef) -> Option<&crate::data::Cell> {
        let id = col.id?;
        self.source(col)?
            .cells
            .iter()
            .find(|c| c.column == id && c.path.is_none())
    }

    /// A complex column's live element cells, in path order.
    fn elements(&self, col: &ColumnDef) -> impl Iterator<Item = &crate::data::Cell> {
        let id = col.id;
        self.source(col)
            .zip(id)
            .into_iter()
            .flat_map(|(r, id)| r.elements(id))
    }

    /// The serialized value of column `i`.
    fn column(&self, i: usize) -> QueryOutcome<Option<Vec<u8>>> {
        let col = &self.schema.columns[i];
        Ok(match col.kind {
            ColumnKind::PartitionKey => self.pk_parts.get(col.position).cloned(),
            ColumnKind::Clustering => self.ck_parts.get(col.position).cloned().flatten(),
            _ if col.ty.is_multi_cell() => match (self.source(col), col.id) {
                (Some(row), Some(id)) => {
                    crate::complex::assemble(&col.ty, crate::complex::paths_and_values(row, id))?
                }
                _ => None,
            },
            _ => match self.cell(col) {
                Some(c) => Some(c.read_value().map_err(counter_corrupt)?.into_owned()),
                None => None,
            },
        })
    }

    /// The typed value of column `i`.
    fn value(&self, i: usize) -> QueryOutcome<Option<Value>> {
        let col = &self.schema.columns[i];
        self.column(i)?
            .map(|b| types::deserialize(&col.ty, &b))
            .transpose()
            .map_err(QueryError::from)
    }

    /// A cell's write time (bigint), or with `ttl` its seconds left (int;
    /// null for a cell without a TTL).
    fn cell_time(&self, c: &crate::data::Cell, ttl: bool) -> Option<Vec<u8>> {
        if !ttl {
            return Some(c.timestamp_micros.to_be_bytes().to_vec());
        }
        (c.kind == crate::data::CellKind::Expiring).then(|| {
            let left = (c.local_deletion_seconds - self.now_seconds).clamp(0, i64::from(i32::MAX));
            (left as i32).to_be_bytes().to_vec()
        })
    }

    /// `writetime()` or `ttl()` of a complex column, as Cassandra 5 answers
    /// them: a list with one entry per element (per field for a UDT, null
    /// for a field without a cell); null entries for an element without a
    /// TTL; null when the column has no element.
    fn element_times(&self, col: &ColumnDef, ttl: bool) -> Option<Vec<u8>> {
        let entry = |c: &crate::data::Cell| self.cell_time(c, ttl);
        let entries: Vec<Option<Vec<u8>>> = match &col.ty {
            CqlType::Udt { def, .. } => {
                let mut fields: Vec<Option<Vec<u8>>> = vec![None; def.fields.len()];
                let mut any = false;
                for c in self.elements(col) {
                    let at = c.path.as_deref().and_then(|p| <[u8; 2]>::try_from(p).ok());
                    if let Some(slot) =
                        at.and_then(|p| fields.get_mut(u16::from_be_bytes(p) as usize))
                    {
                        *slot = entry(c);
                        any = true;
                    }
                }
                if !any {
                    return None;
                }
                fields
            }
            _ => self.elements(col).map(entry).collect(),
        };
        pack_times(entries)
    }
}

/// A list of times (null entries allowed) in Cassandra's bytes; null when
/// empty.
fn pack_times(entries: Vec<Option<Vec<u8>>>) -> Option<Vec<u8>> {
    if entries.is_empty() {
        return None;
    }
    let mut out = (entries.len() as i32).to_be_bytes().to_vec();
    for e in entries {
        match e {
            Some(b) => {
                out.extend_from_slice(&(b.len() as i32).to_be_bytes());
                out.extend_from_slice(&b);
            }
            None => out.extend_from_slice(&(-1i32).to_be_bytes()),
        }
    }
    Some(out)
}

fn column_index(schema: &TableSchema, name: &str) -> QueryOutcome<usize> {
    schema
        .columns
        .iter()
        .position(|c| c.name == name)
        .ok_or_else(|| super::undefined_column(&schema.keyspace, &schema.name, name))
}

/// Plans the select clause.
fn plan_selection(
    schema: &TableSchema,
    selection: &Selection,
    eval: &values::Eval<'_>,
) -> QueryOutcome<(Vec<OutColumn>, usize)> {
    let mut slots = 0usize;
    let mut out = Vec::new();
    match selection {
        Selection::Star { .. } => {
            for i in select_order(schema) {
                let c = &schema.columns[i];
                out.push(OutColumn {
                    name: c.name.clone(),
                    ty: ColumnType::of(&c.ty),
                    expr: Expr::Column(i),
                });
            }
        }
        Selection::Items(items) => {
            for item in items {
                let (expr, ty, name) = plan_selector(schema, &item.selector, &mut slots, eval)?;
                out.push(OutColumn {
                    name: item.alias.as_ref().map(|a| a.text.clone()).unwrap_or(name),
                    ty,
                    expr,
                });
            }
        }
    }
    Ok((out, slots))
}

/// What part of a column `writetime()`, `maxwritetime()` or `ttl()` reads.
enum TimeTarget {
    Whole,
    /// One element or field, by its cell path.
    Cell(Vec<u8>),
    /// The elements of a set or map slice.
    Slice(KeyRange),
}

/// What `writetime()`, `maxwritetime()` or `ttl()` takes: a column, or an
/// element, field or slice of one (Cassandra 5). Returns the column's index,
/// the part, and the selector's name.
fn time_target(
    schema: &TableSchema,
    s: &Selector,
    slots: &mut usize,
    eval: &values::Eval<'_>,
) -> QueryOutcome<(usize, TimeTarget, String)> {
    let not_column = || invalid("writetime(), maxwritetime() and ttl() take a column name");
    if !matches!(
        s,
        Selector::Column(_)
            | Selector::Element { .. }
            | Selector::Field { .. }
            | Selector::Slice { .. }
    ) {
        return Err(not_column());
    }
    let (expr, _, name) = plan_selector(schema, s, slots, eval)?;
    match expr {
        Expr::Column(i) => Ok((i, TimeTarget::Whole, name)),
        Expr::Slice { inner, range, .. } => match *inner {
            Expr::Column(i) => Ok((i, TimeTarget::Slice(range), name)),
            _ => Err(not_column()),
        },
        Expr::Element { inner, key, .. } => match *inner {
            Expr::Column(i) => Ok((i, TimeTarget::Cell(key), name)),
            _ => Err(not_column()),
        },
        Expr::Field { inner, index, .. } => match *inner {
            Expr::Column(i) => Ok((i, TimeTarget::Cell(crate::complex::field_path(index)), name)),
            _ => Err(not_column()),
        },
        _ => Err(not_column()),
    }
}

/// The type of `writetime()` (`BigInt`), `ttl()` (`Int`) or
/// `maxwritetime()` of `col`: a list of them for a complex column, except
/// the one maximum.
fn times_type(col: &ColumnDef, scalar: CqlType, single: bool) -> ColumnType {
    if col.ty.is_multi_cell() && !single {
        ColumnType::of(&CqlType::List {
            element: std::sync::Arc::new(scalar),
            frozen: true,
        })
    } else {
        ColumnType::Native(scalar)
    }
}

fn plan_selector(
    schema: &TableSchema,
    s: &Selector,
    slots: &mut usize,
    eval: &values::Eval<'_>,
) -> QueryOutcome<(Expr, ColumnType, String)> {
    Ok(match s {
        Selector::Column(n) => {
            let i = column_index(schema, &n.text)?;
            (
                Expr::Column(i),
                ColumnType::of(&schema.columns[i].ty),
                schema.columns[i].name.clone(),
            )
        }
        Selector::WriteTime { column, .. }
        | Selector::MaxWriteTime { column, .. }
        | Selector::Ttl { column, .. } => {
            let function = match s {
                Selector::WriteTime { .. } => "writetime",
                Selector::MaxWriteTime { .. } => "maxwritetime",
                _ => "ttl",
            };
            let (i, path, name) = time_target(schema, column, slots, eval)?;
            let col = &schema.columns[i];
            if col.is_primary_key() {
                return Err(invalid(format!(
                    "Cannot use selection function {function} on PRIMARY KEY part {}",
                    col.name
                )));
            }
            let ttl = function == "ttl";
            let max = function == "maxwritetime";
            let scalar = if ttl { CqlType::Int } else { CqlType::BigInt };
            let (expr, ty) = match path {
                // One element of a complex column: its own cell's time.
                TimeTarget::Cell(path) if col.ty.is_multi_cell() => (
                    Expr::ElementTime {
                        column: i,
                        path,
                        ttl,
                    },
                    ColumnType::Native(scalar),
                ),
                TimeTarget::Slice(range) if col.ty.is_multi_cell() => (
                    Expr::SliceTimes {
                        column: i,
                        range,
                        ttl,
                        max,
                    },
                    times_type(col, scalar, max),
                ),
                // A part of a frozen value shares the value's cell.
                _ if ttl => (Expr::Ttl(i), times_type(col, scalar, max)),
                _ if max => (Expr::MaxWriteTime(i), times_type(col, scalar, max)),
                _ => (Expr::WriteTime(i), times_type(col, scalar, max)),
            };
            (expr, ty, format!("{function}({name})"))
        }
        Selector::Function { name, args, .. } => {
            let lower = name.name.text.to_ascii_lowercase();
            if let Some(ks) = &name.keyspace {
                if ks.text != "system" {
                    return Err(invalid(format!(
                        "Unknown function {}.{}: user-defined functions are not supported",
                        ks.text, name.name.text
                    )));
                }
            }
            match lower.as_str() {
                "count" => {
                    if args.len() != 1 {
                        return Err(invalid("count() takes one argument"));
                    }
                    let slot = *slots;
                    *slots += 1;
                    match &args[0] {
                        Selector::Star { .. } => (
                            Expr::Aggregate {
                                kind: AggKind::CountRows,
                                slot,
                                arg: None,
                                ty: ColumnType::Native(CqlType::BigInt),
                            },
                            ColumnType::Native(CqlType::BigInt),
                            "count".to_string(),
                        ),
                        Selector::Term(Term::Literal { .. }) => (
                            Expr::Aggregate {
                                kind: AggKind::CountRows,
                                slot,
                                arg: None,
                                ty: ColumnType::Native(CqlType::BigInt),
                            },
                            ColumnType::Native(CqlType::BigInt),
                            "count".to_string(),
                        ),
                        a => {
                            let (e, _, n) = plan_selector(schema, a, slots, eval)?;
                            (
                                Expr::Aggregate {
                                    kind: AggKind::Count,
                                    slot,
                                    arg: Some(Box::new(e)),
                                    ty: ColumnType::Native(CqlType::BigInt),
                                },
                                ColumnType::Native(CqlType::BigInt),
                                format!("system.count({n})"),
                            )
                        }
                    }
                }
                "min" | "max" | "sum" | "avg" => {
                    // Cassandra's overloads of sum and avg, for its message
                    // when none fits (a wrong count or type of arguments).
                    let numeric_signatures = || {
                        [
                            "bigint", "counter", "decimal", "double", "float", "int", "smallint",
                            "tinyint", "varint",
                        ]
                        .iter()
                        .map(|t| format!("system.{lower} : ({t}) -> {t}"))
                        .collect::<Vec<_>>()
                        .join(", ")
                    };
                    let no_signature = || {
                        invalid(format!(
                            "Invalid call to function {lower}, none of its type signatures \
                             match (known type signatures: {})",
                            numeric_signatures()
                        ))
                    };
                    if args.len() != 1 {
                        if matches!(lower.as_str(), "sum" | "avg") {
                            return Err(no_signature());
                        }
                        return Err(invalid(format!("{lower}() takes one argument")));
                    }
                    let slot = *slots;
                    *slots += 1;
                    let (e, ty, n) = plan_selector(schema, &args[0], slots, eval)?;
                    let kind = match lower.as_str() {
                        "min" => AggKind::Min,
                        "max" => AggKind::Max,
                        "sum" => AggKind::Sum,
                        _ => AggKind::Avg,
                    };
                    if matches!(kind, AggKind::Sum | AggKind::Avg) {
                        let numeric = matches!(
                            ty,
                            ColumnType::Native(
                                CqlType::TinyInt
                                    | CqlType::SmallInt
                                    | CqlType::Int
                                    | CqlType::BigInt
                                    | CqlType::Counter
                                    | CqlType::Float
                                    | CqlType::Double
                                    | CqlType::Varint
                                    | CqlType::Decimal
                            )
                        );
                        if !numeric && ty != ColumnType::Counter {
                            return Err(no_signature());
                        }
                    }
                    (
                        Expr::Aggregate {
                            kind,
                            slot,
                            arg: Some(Box::new(e)),
                            ty: ty.clone(),
                        },
                        ty,
                        format!("system.{lower}({n})"),
                    )
                }
                "token" => {
                    let pk: Vec<&str> = schema
                        .columns
                        .iter()
                        .filter(|c| c.kind == ColumnKind::PartitionKey)
                        .map(|c| c.name.as_str())
                        .collect();
                    let given: Vec<String> = args
                        .iter()
                        .map(|a| match a {
                            Selector::Column(n) => Ok(n.text.clone()),
                            _ => Err(invalid("token() takes the partition key columns")),
                        })
                        .collect::<QueryOutcome<_>>()?;
                    if given.len() != pk.len() {
                        return Err(invalid(format!(
                            "Invalid number of arguments in call to function system.token: \
                             {} required but {} provided",
                            pk.len(),
                            given.len()
                        )));
                    }
                    // Cassandra's token() takes exactly the partition key
                    // columns, in order; its message names the first misfit.
                    if let Some(i) = (0..pk.len()).find(|&i| given[i] != pk[i]) {
                        let ty = schema
                            .columns
                            .iter()
                            .find(|c| c.name == pk[i])
                            .map(|c| c.ty.name())
                            .unwrap_or_default();
                        return Err(invalid(format!(
                            "Type error: {} cannot be passed as argument {i} of function \
                             system.token of type {ty}",
                            given[i]
                        )));
                    }
                    (
                        Expr::Token,
                        ColumnType::Native(CqlType::BigInt),
                        format!("system.token({})", pk.join(", ")),
                    )
                }
                "similarity_cosine" | "similarity_dot_product" | "similarity_euclidean" => {
                    plan_similarity(schema, &lower, args, slots, eval)?
                }
                _ => {
                    // A function of constants only (`now()`,
                    // `toTimestamp(now())`, `bigintAsBlob(7)`) is evaluated once,
                    // as a term, its arguments typed by the function.
                    if let Some(term) = constant_selector(s) {
                        let v = match &term {
                            Term::Function { name, args, .. } => {
                                values::call_function(&name.name.text, args, None, eval)?
                            }
                            _ => return Err(invalid("not a function")),
                        };
                        let names: Vec<String> = args.iter().map(selector_name).collect();
                        return Ok((
                            Expr::Constant(Some(types::serialize(&v))),
                            value_column_type(&v),
                            format!("system.{lower}({})", names.join(", ")),
                        ));
                    }
                    let mut planned = Vec::new();
                    let mut types = Vec::new();
                    let mut names = Vec::new();
                    for a in args {
                        let (e, t, n) = plan_selector(schema, a, slots, eval)?;
                        planned.push(e);
                        types.push(t);
                        names.push(n);
                    }
                    let ty = function_type(&lower, &types)?;
                    (
                        Expr::Function {
                            name: lower.clone(),
                            args: planned,
                            arg_types: types,
                        },
                        ty,
                        format!("system.{lower}({})", names.join(", ")),
                    )
                }
            }
        }
        Selector::Cast { selector, ty, .. } => {
            let (e, from, n) = plan_selector(schema, selector, slots, eval)?;
            let to = match ty {
                crate::cql::ast::TypeExpr::Native(t) => {
                    CqlType::parse(t).map_err(QueryError::from)?
                }
                other => {
                    return Err(invalid(format!(
                        "Cannot cast to {other:?}: only native types are cast targets"
                    )))
                }
            };
            check_cast(from.clone(), to.clone(), &n)?;
            (
                Expr::Cast {
                    inner: Box::new(e),
                    from,
                    to: to.clone(),
                },
                ColumnType::of(&to),
                format!("cast({n} as {})", to.name()),
            )
        }
        Selector::Term(t) => {
            // A constant needs a type hint, as in Cassandra (`(int)1`).
            if let Term::Literal { .. } = t {
                return Err(invalid(format!(
                    "Cannot infer type for term {} in selection clause (try using a cast to force a type)",
                    constant_name(t)
                )));
            }
            let (ty, v) = constant_term(t, eval)?;
            let text = constant_name(t);
            (Expr::Constant(v), ty, text)
        }
        Selector::Star { .. } => return Err(invalid("* is only allowed in count(*)")),
        Selector::Field { selector, field } => {
            let (e, ty, n) = plan_selector(schema, selector, slots, eval)?;
            let udt = match ty.stored_type() {
                Some(t @ CqlType::Udt { .. }) => t,
                _ => {
                    return Err(invalid(format!(
                        "Invalid field selection: {n} of type {} is not a user type",
                        ty.to_cql()
                    )))
                }
            };
            let CqlType::Udt { def, .. } = &udt else {
                return Err(invalid("not a user type"));
            };
            let Some(index) = def.fields.iter().position(|(f, _)| *f == field.text) else {
                return Err(invalid(format!(
                    "{n} of type {} has no field {}",
                    def.name, field.text
                )));
            };
            let field_ty = ColumnType::of(&def.fields[index].1);
            let name = format!("{n}.{}", field.text);
            (
                Expr::Field {
                    inner: Box::new(e),
                    udt: udt.clone(),
                    index,
                },
                field_ty,
                name,
            )
        }
        Selector::Element { selector, key, .. } => {
            let (e, ty, n) = plan_selector(schema, selector, slots, eval)?;
            let (collection, key_ty, out_ty) = selectable_collection(&ty, &n)?;
            let key_value = match values::scalar(key, &key_ty, &format!("key({n})"), eval)? {
                Bound::Value(v) => v,
                _ => return Err(invalid("Invalid null value for element selection")),
            };
            (
                Expr::Element {
                    inner: Box::new(e),
                    collection,
                    key: types::element_path(&key_value),
                },
                ColumnType::of(&out_ty),
                format!("{n}[{key}]"),
            )
        }
        Selector::Slice {
            selector, from, to, ..
        } => {
            let (e, ty, n) = plan_selector(schema, selector, slots, eval)?;
            let (collection, key_ty, _) = selectable_collection(&ty, &n)?;
            let bound = |t: &Option<Term>| -> QueryOutcome<Option<Vec<u8>>> {
                let Some(t) = t else { return Ok(None) };
                match values::scalar(t, &key_ty, &format!("key({n})"), eval)? {
                    Bound::Value(v) => Ok(Some(types::element_path(&v))),
                    _ => Err(invalid("Invalid null value for slice selection")),
                }
            };
            let range = KeyRange {
                from: bound(from)?,
                to: bound(to)?,
            };
            let text = |t: &Option<Term>| t.as_ref().map(|t| t.to_string()).unwrap_or_default();
            (
                Expr::Slice {
                    inner: Box::new(e),
                    collection,
                    range,
                },
                ty.clone(),
                format!("{n}[{}..{}]", text(from), text(to)),
            )
        }
        Selector::Arith {
            op, left, right, ..
        } => plan_arith(schema, *op, left, right, slots, eval)?,
        Selector::Negate { selector, .. } => {
            let (e, ty, n) = plan_selector(schema, selector, slots, eval)?;
            let stored = ty.stored_type();
            let Some(ty) = stored.filter(|t| {
                matches!(
                    t,
                    CqlType::TinyInt
                        | CqlType::SmallInt
                        | CqlType::Int
                        | CqlType::BigInt
                        | CqlType::Float
                        | CqlType::Double
                        | CqlType::Varint
                        | CqlType::Decimal
                        | CqlType::Counter
                )
            }) else {
                return Err(invalid(
                    "Invalid call to function system._negate, none of its type signatures \
                     match (known type signatures: system.\"_negate\" : (bigint) -> bigint, \
                     system.\"_negate\" : (float) -> float, system.\"_negate\" : (int) -> \
                     int, system.\"_negate\" : (tinyint) -> tinyint, system.\"_negate\" : \
                     (smallint) -> smallint, system.\"_negate\" : (decimal) -> decimal, \
                     system.\"_negate\" : (double) -> double, system.\"_negate\" : (varint) \
                     -> varint, system.\"_negate\" : (counter) -> counter)",
                ));
            };
            (
                Expr::Negate {
                    inner: Box::new(e),
                    ty: ty.clone(),
                },
                ColumnType::of(&ty),
                format!("-{}", negated_name(selector, n)),
            )
        }
    })
}

/// The selector as a term when it holds no column: a constant, or a function
/// of constants.
fn constant_selector(s: &Selector) -> Option<Term> {
    match s {
        Selector::Term(t) => Some(t.clone()),
        Selector::Function { name, args, pos } => {
            let lower = name.name.text.to_ascii_lowercase();
            if matches!(
                lower.as_str(),
                "count" | "min" | "max" | "sum" | "avg" | "token" | "tojson"
            ) {
                return None;
            }
            let args = args
                .iter()
                .map(constant_selector)
                .collect::<Option<Vec<_>>>()?;
            Some(Term::Function {
                name: name.clone(),
                args,
                pos: *pos,
            })
        }
        _ => None,
    }
}

/// A selector's result column name, as Cassandra prints it.
fn selector_name(s: &Selector) -> String {
    match s {
        Selector::Column(n) => n.text.clone(),
        Selector::Term(t) => constant_name(t),
        Selector::Function { name, args, .. } => format!(
            "system.{}({})",
            name.name.text.to_ascii_lowercase(),
            args.iter()
                .map(selector_name)
                .collect::<Vec<_>>()
                .join(", ")
        ),
        Selector::Cast { selector, ty, .. } => {
            format!("cast({} as {})", selector_name(selector), ty.to_cql())
        }
        Selector::WriteTime { column, .. } => format!("writetime({})", selector_name(column)),
        Selector::MaxWriteTime { column, .. } => {
            format!("maxwritetime({})", selector_name(column))
        }
        Selector::Ttl { column, .. } => format!("ttl({})", selector_name(column)),
        Selector::Star { .. } => "*".to_string(),
        Selector::Arith {
            op, left, right, ..
        } => format!(
            "{} {} {}",
            selector_name(left),
            crate::cql::print::op_text(*op),
            selector_name(right)
        ),
        Selector::Negate { selector, .. } => {
            format!("-{}", negated_name(selector, selector_name(selector)))
        }
        _ => "[selection]".to_string(),
    }
}

/// The name of a negation's operand `s` (named `name`) after its `-`: an
/// operation in the parentheses it must have been written in (`-(v + 1)`).
fn negated_name(s: &Selector, name: String) -> String {
    match s {
        Selector::Arith { .. } => format!("({name})"),
        _ => name,
    }
}

/// The set or map `ty` (selector `n`) that an element or a slice is taken
/// from: the collection, its key (element) type and the type of one value;
/// Cassandra's messages for a list and for anything else.
fn selectable_collection(ty: &ColumnType, n: &str) -> QueryOutcome<(CqlType, CqlType, CqlType)> {
    match ty.stored_type() {
        Some(t @ CqlType::Map { .. }) => {
            let CqlType::Map { key, value, .. } = &t else {
                return Err(invalid("not a map"));
            };
            let (k, v) = ((**key).clone(), (**value).clone());
            Ok((t, k, v))
        }
        Some(t @ CqlType::Set { .. }) => {
            let CqlType::Set { element, .. } = &t else {
                return Err(invalid("not a set"));
            };
            let el = (**element).clone();
            Ok((t, el.clone(), el))
        }
        Some(CqlType::List { .. }) => Err(invalid(format!(
            "Element selection is only allowed on sets and maps, but {n} is a list"
        ))),
        _ => Err(invalid(format!(
            "Invalid element selection: {n} is of type {} is not a collection",
            ty.to_cql()
        ))),
    }
}

/// Plans `left op right` in a select clause. A constant side takes its type
/// from the other side (a number the other's numeric type, a duration for a
/// timestamp or date), as Cassandra types it; two constants their own.
fn plan_arith(
    schema: &TableSchema,
    op: crate::cql::ast::ArithOp,
    left: &Selector,
    right: &Selector,
    slots: &mut usize,
    eval: &values::Eval<'_>,
) -> QueryOutcome<(Expr, ColumnType, String)> {
    let symbol = crate::cql::print::op_text(op);
    let name = format!("{} {symbol} {}", selector_name(left), selector_name(right));
    let constant_for = |other: &CqlType, t: &Term| -> QueryOutcome<(Expr, CqlType)> {
        let ty = match other {
            CqlType::Timestamp | CqlType::Date => CqlType::Duration,
            CqlType::TinyInt
            | CqlType::SmallInt
            | CqlType::Int
            | CqlType::BigInt
            | CqlType::Float
            | CqlType::Double => other.clone(),
            // No operation takes this side: the constant keeps its own type
            // and the operation is refused below.
            _ => {
                let (ty, v) = constant_term(t, eval)?;
                let ty = ty.stored_type().ok_or_else(|| {
                    invalid(format!(
                        "the '{symbol}' operation is not supported on {name}"
                    ))
                })?;
                return Ok((Expr::Constant(v), ty));
            }
        };
        let v = match values::scalar(t, &ty, &name, eval)? {
            Bound::Value(v) => Some(types::serialize(&v)),
            _ => None,
        };
        Ok((Expr::Constant(v), ty))
    };
    let planned = |s: &Selector, slots: &mut usize| -> QueryOutcome<(Expr, CqlType)> {
        let (e, ty, _) = plan_selector(schema, s, slots, eval)?;
        let ty = ty.stored_type().ok_or_else(|| {
            invalid(format!(
                "the '{symbol}' operation is not supported on {name}"
            ))
        })?;
        Ok((e, ty))
    };
    let ((l, lt), (r, rt)) = match (constant_selector(left), constant_selector(right)) {
        (Some(_), Some(_)) | (None, None) => (planned(left, slots)?, planned(right, slots)?),
        (Some(t), None) => {
            let r = planned(right, slots)?;
            (constant_for(&r.1, &t)?, r)
        }
        (None, Some(t)) => {
            let l = planned(left, slots)?;
            let r = constant_for(&l.1, &t)?;
            (l, r)
        }
    };
    let out = arith_type(op, &lt, &rt).ok_or_else(|| {
        invalid(format!(
            "the '{symbol}' operation is not supported between {} and {}",
            selector_name(left),
            selector_name(right)
        ))
    })?;
    Ok((
        Expr::Arith {
            op,
            left: Box::new(l),
            right: Box::new(r),
            types: [lt, rt],
            out: out.clone(),
        },
        ColumnType::of(&out),
        name,
    ))
}

/// Cassandra's result type of `l op r` (`OperationFcts`): for numbers the
/// wider of the two sizes, floating point if either is; a timestamp or date
/// plus or minus a duration stays itself. `None`: not supported.
fn arith_type(op: crate::cql::ast::ArithOp, l: &CqlType, r: &CqlType) -> Option<CqlType> {
    use crate::cql::ast::ArithOp;
    fn size(t: &CqlType) -> Option<(u32, bool)> {
        Some(match t {
            CqlType::TinyInt => (1, false),
            CqlType::SmallInt => (2, false),
            CqlType::Int => (4, false),
            CqlType::BigInt => (8, false),
            CqlType::Float => (4, true),
            CqlType::Double => (8, true),
            _ => return None,
        })
    }
    if let Some(t) = super::numeric::result_type(l, r) {
        return Some(t);
    }
    match (l, r) {
        (CqlType::Timestamp | CqlType::Date, CqlType::Duration)
            if matches!(op, ArithOp::Add | ArithOp::Sub) =>
        {
            Some(l.clone())
        }
        _ => {
            let ((ls, lf), (rs, rf)) = (size(l)?, size(r)?);
            let width = ls.max(rs);
            Some(match (lf || rf, width) {
                (true, 4) => CqlType::Float,
                (true, _) => CqlType::Double,
                (false, 1) => CqlType::TinyInt,
                (false, 2) => CqlType::SmallInt,
                (false, 4) => CqlType::Int,
                (false, _) => CqlType::BigInt,
            })
        }
    }
}

/// `-v` for the types a negation's plan accepts, as Java negates them:
/// integers wrap (`-(-128)` of a tinyint is -128), varints and decimals
/// are exact.
fn negated(v: Value) -> Value {
    match v {
        Value::TinyInt(x) => Value::TinyInt(x.wrapping_neg()),
        Value::SmallInt(x) => Value::SmallInt(x.wrapping_neg()),
        Value::Int(x) => Value::Int(x.wrapping_neg()),
        Value::BigInt(x) => Value::BigInt(x.wrapping_neg()),
        Value::Counter(x) => Value::Counter(x.wrapping_neg()),
        Value::Float(x) => Value::Float(-x),
        Value::Double(x) => Value::Double(-x),
        Value::Varint(b) => Value::Varint(types::varint_negated(&b)),
        Value::Decimal { scale, unscaled } => Value::Decimal {
            scale,
            unscaled: types::varint_negated(&unscaled),
        },
        other => other,
    }
}

/// `l op r` on values of the types [`arith_type`] accepted, with Java's
/// integer arithmetic (wrapping, as Cassandra's operations on `int`s wrap).
/// Why [`arith_values`] gave no value: Java's integer division by zero
/// (Cassandra's function failure, which names the operand types), or any
/// other refusal.
enum ArithFailure {
    DivideByZero,
    Query(QueryError),
}

impl From<QueryError> for ArithFailure {
    fn from(e: QueryError) -> Self {
        ArithFailure::Query(e)
    }
}

fn arith_values(
    op: crate::cql::ast::ArithOp,
    l: Value,
    r: Value,
    out: &CqlType,
) -> Result<Value, ArithFailure> {
    use crate::cql::ast::ArithOp;
    if let Value::Duration { .. } = r {
        return Ok(values::move_by_duration(op, l, &r)?);
    }
    let int = |v: &Value| -> Option<i64> {
        Some(match v {
            Value::TinyInt(x) => i64::from(*x),
            Value::SmallInt(x) => i64::from(*x),
            Value::Int(x) => i64::from(*x),
            Value::BigInt(x) => *x,
            _ => return None,
        })
    };
    let float = |v: &Value| -> Option<f64> {
        Some(match v {
            Value::Float(x) => f64::from(*x),
            Value::Double(x) => *x,
            other => int(other)? as f64,
        })
    };
    let zero = || invalid("arithmetic on these values is not supported");
    if matches!(out, CqlType::Float | CqlType::Double) {
        let (a, b) = (float(&l).ok_or_else(zero)?, float(&r).ok_or_else(zero)?);
        let x = match op {
            ArithOp::Add => a + b,
            ArithOp::Sub => a - b,
            ArithOp::Mul => a * b,
            ArithOp::Div => a / b,
            ArithOp::Rem => a % b,
        };
        return Ok(if *out == CqlType::Float {
            Value::Float(x as f32)
        } else {
            Value::Double(x)
        });
    }
    let (a, b) = match (int(&l), int(&r)) {
        (Some(a), Some(b)) => (a, b),
        _ => return Err(invalid("arithmetic on these values is not supported").into()),
    };
    let x = match op {
        ArithOp::Add => a.wrapping_add(b),
        ArithOp::Sub => a.wrapping_sub(b),
        ArithOp::Mul => a.wrapping_mul(b),
        ArithOp::Div | ArithOp::Rem if b == 0 => return Err(ArithFailure::DivideByZero),
        ArithOp::Div => a.wrapping_div(b),
        ArithOp::Rem => a.wrapping_rem(b),
    };
    // Narrowed to the result type as Java's casts narrow.
    Ok(match out {
        CqlType::TinyInt => Value::TinyInt(x as i8),
        CqlType::SmallInt => Value::SmallInt(x as i16),
        CqlType::Int => Value::Int(x as i32),
        _ => Value::BigInt(x),
    })
}

/// The result column name of a constant selector, as written.
fn constant_name(t: &Term) -> String {
    use crate::cql::ast::Literal;
    match t {
        Term::Literal { value, .. } => match value {
            Literal::String(s) => format!("'{}'", s.replace('\'', "''")),
            other => crate::cql::literal::constant_text(other),
        },
        Term::Cast { ty, term, .. } => format!("({}){}", ty.to_cql(), constant_name(term)),
        Term::Function { name, .. } => format!("{}(...)", name.name.text),
        _ => "[selection]".to_string(),
    }
}

fn constant_term(t: &Term, eval: &values::Eval<'_>) -> QueryOutcome<(ColumnType, Option<Vec<u8>>)> {
    use crate::cql::ast::Literal;
    let ty = match t {
        Term::Literal { value, .. } => match value {
            Literal::String(_) => CqlType::Text,
            Literal::Integer(_) => CqlType::Int,
            Literal::Float(_) => CqlType::Double,
            Literal::Boolean(_) => CqlType::Boolean,
            Literal::Uuid(_) => CqlType::Uuid,
            Literal::Blob(_) => CqlType::Blob,
            Literal::Null => CqlType::Blob,
            Literal::Duration(_) => CqlType::Duration,
        },
        Term::Cast { ty, .. } => match ty {
            crate::cql::ast::TypeExpr::Native(n) => CqlType::parse(n).map_err(QueryError::from)?,
            _ => return Err(invalid("only native types can be type hints")),
        },
        Term::Function { name, args, .. } => {
            let v = values::call_function(&name.name.text, args, None, eval)?;
            return Ok((value_column_type(&v), Some(types::serialize(&v))));
        }
        _ => return Err(invalid("this term is not supported in a select clause")),
    };
    let v = match values::scalar(t, &ty, "selector", eval)? {
        Bound::Value(v) => Some(types::serialize(&v)),
        _ => None,
    };
    Ok((ColumnType::of(&ty), v))
}

/// Cassandra 5's vector similarity functions: two float vectors of one
/// dimension, a column's and a literal (typed by the column's vector type)
/// or two columns'.
fn plan_similarity(
    schema: &TableSchema,
    name: &str,
    args: &[Selector],
    slots: &mut usize,
    eval: &values::Eval<'_>,
) -> QueryOutcome<(Expr, ColumnType, String)> {
    if args.len() != 2 {
        return Err(invalid(format!(
            "Invalid number of arguments for function system.{name}: expected 2, got {}",
            args.len()
        )));
    }
    let mut planned: Vec<Option<(Expr, ColumnType, String)>> = Vec::new();
    for a in args {
        planned.push(match a {
            Selector::Term(_) => None,
            other => Some(plan_selector(schema, other, slots, eval)?),
        });
    }
    let dimension_of = |t: &ColumnType| match t.stored_type() {
        Some(CqlType::Vector { element, dimension }) if *element == CqlType::Float => {
            Some(dimension)
        }
        _ => None,
    };
    let Some(dim) = planned
        .iter()
        .flatten()
        .find_map(|(_, t, _)| dimension_of(t))
    else {
        return Err(invalid(format!(
            "Function system.{name} requires a float vector argument"
        )));
    };
    let mut exprs = Vec::with_capacity(2);
    let mut names = Vec::with_capacity(2);
    for (a, p) in args.iter().zip(planned) {
        match (a, p) {
            (_, Some((e, t, n))) => {
                if dimension_of(&t) != Some(dim) {
                    return Err(invalid(
                        "All arguments must have the same vector dimensions",
                    ));
                }
                exprs.push(e);
                names.push(n);
            }
            (Selector::Term(term), None) => {
                let given = match term {
                    Term::List { items, .. } => items.len() as u32,
                    _ => dim,
                };
                if given != dim {
                    return Err(invalid(
                        "All arguments must have the same vector dimensions",
                    ));
                }
                let ty = CqlType::Vector {
                    element: std::sync::Arc::new(CqlType::Float),
                    dimension: dim,
                };
                let v = match values::scalar(term, &ty, name, eval)? {
                    Bound::Value(v) => Some(types::serialize(&v)),
                    _ => None,
                };
                exprs.push(Expr::Constant(v));
                names.push(term.to_string());
            }
            (_, None) => return Err(invalid("not a selector")),
        }
    }
    let vector = ColumnType::Vector(Box::new(ColumnType::Native(CqlType::Float)), dim);
    Ok((
        Expr::Function {
            name: name.to_string(),
            args: exprs,
            arg_types: vec![vector.clone(), vector],
        },
        ColumnType::Native(CqlType::Float),
        format!("system.{name}({})", names.join(", ")),
    ))
}

/// Cassandra 5's similarity of two float vectors (Lucene's definitions,
/// which it uses): cosine `(1 + cos) / 2`, dot product `(1 + a.b) / 2`,
/// euclidean `1 / (1 + |a - b|^2)`, each in float arithmetic.
fn similarity(name: &str, a: &[Value], b: &[Value]) -> QueryOutcome<f32> {
    let floats = |v: &[Value]| -> Vec<f32> {
        v.iter()
            .map(|x| match x {
                Value::Float(f) => *f,
                _ => f32::NAN,
            })
            .collect()
    };
    let (a, b) = (floats(a), floats(b));
    if a.len() != b.len() {
        return Err(invalid(
            "All arguments must have the same vector dimensions",
        ));
    }
    let dot: f32 = a.iter().zip(&b).map(|(x, y)| x * y).sum();
    Ok(match name {
        "similarity_cosine" => {
            let na: f32 = a.iter().map(|x| x * x).sum();
            let nb: f32 = b.iter().map(|x| x * x).sum();
            if na == 0.0 || nb == 0.0 {
                return Err(invalid(format!(
                    "Function system.{name} doesn't support all-zero vectors"
                )));
            }
            let cos = dot / (na * nb).sqrt();
            (1.0 + cos) / 2.0
        }
        "similarity_dot_product" => (1.0 + dot) / 2.0,
        _ => {
            let d: f32 = a.iter().zip(&b).map(|(x, y)| (x - y) * (x - y)).sum();
            1.0 / (1.0 + d)
        }
    })
}

/// The result type of a function's value (functions return native values).
fn value_column_type(v: &Value) -> ColumnType {
    ColumnType::of(&v.native_type().unwrap_or(CqlType::Blob))
}

/// The result type of a native scalar function of the select clause.
fn function_type(name: &str, args: &[ColumnType]) -> QueryOutcome<ColumnType> {
    let one = || -> QueryOutcome<&ColumnType> {
        match args {
            [a] => Ok(a),
            _ => Err(invalid(format!(
                "Invalid number of arguments in call to function system.{name}: 1 required but {} provided",
                args.len()
            ))),
        }
    };
    let native = |t: CqlType| ColumnType::Native(t);
    Ok(match name {
        "totimestamp" => {
            one()?;
            native(CqlType::Timestamp)
        }
        "todate" => {
            one()?;
            native(CqlType::Date)
        }
        "tounixtimestamp" => {
            one()?;
            native(CqlType::BigInt)
        }
        "tojson" => {
            one()?;
            native(CqlType::Text)
        }
        // Cassandra 5's math functions keep the argument's type.
        "abs" | "exp" | "log" | "log10" | "round" => {
            let t = one()?.clone();
            match t {
                ColumnType::Native(
                    CqlType::TinyInt
                    | CqlType::SmallInt
                    | CqlType::Int
                    | CqlType::BigInt
                    | CqlType::Float
                    | CqlType::Double
                    | CqlType::Varint
                    | CqlType::Decimal,
                ) => t,
                other => {
                    return Err(invalid(format!(
                        "Invalid call to function {name}: it takes a number, not {}",
                        other.to_cql()
                    )))
                }
            }
        }
        "blobastext" | "blobasvarchar" => native(CqlType::Text),
        _ => {
            if let Some(t) = name.strip_suffix("asblob") {
                CqlType::parse(t).map_err(|_| invalid(format!("Unknown function '{name}'")))?;
                one()?;
                return Ok(native(CqlType::Blob));
            }
            if let Some(t) = name.strip_prefix("blobas") {
                let t =
                    CqlType::parse(t).map_err(|_| invalid(format!("Unknown function '{name}'")))?;
                one()?;
                return Ok(native(t));
            }
            return Err(invalid(format!("Unknown function '{name}'")));
        }
    })
}

/// Evaluates a non-aggregate expression on a row.
fn eval_expr(e: &Expr, r: &RowCtx<'_>, aggs: &[Acc]) -> QueryOutcome<Option<Vec<u8>>> {
    Ok(match e {
        Expr::Column(i) => r.column(*i)?,
        Expr::WriteTime(i) if r.schema.columns[*i].ty.is_multi_cell() => {
            r.element_times(&r.schema.columns[*i], false)
        }
        Expr::MaxWriteTime(i) if r.schema.columns[*i].ty.is_multi_cell() => r
            .elements(&r.schema.columns[*i])
            .map(|c| c.timestamp_micros)
            .max()
            .map(|ts| ts.to_be_bytes().to_vec()),
        Expr::Ttl(i) if r.schema.columns[*i].ty.is_multi_cell() => {
            r.element_times(&r.schema.columns[*i], true)
        }
        Expr::Arith {
            op,
            left,
            right,
            types: [lt, rt],
            out,
        } => {
            let (Some(a), Some(b)) = (eval_expr(left, r, aggs)?, eval_expr(right, r, aggs)?) else {
                return Ok(None);
            };
            let a = types::deserialize(lt, &a).map_err(QueryError::from)?;
            let b = types::deserialize(rt, &b).map_err(QueryError::from)?;
            let failed = |why: String| {
                QueryError::new(
                    crate::cql::CqlErrorKind::FunctionFailure,
                    format!(
                        "the operation '{} {} {}' failed: {why}",
                        lt.name(),
                        crate::cql::print::op_text(*op),
                        rt.name()
                    ),
                )
            };
            let v = if matches!(out, CqlType::Varint | CqlType::Decimal) {
                super::numeric::apply(*op, &a, &b, out).map_err(failed)?
            } else {
                arith_values(*op, a, b, out).map_err(|e| match e {
                    ArithFailure::DivideByZero => failed("/ by zero".to_string()),
                    ArithFailure::Query(e) => e,
                })?
            };
            Some(types::serialize(&v))
        }
        Expr::Negate { inner, ty } => {
            let Some(v) = eval_expr(inner, r, aggs)? else {
                return Ok(None);
            };
            let v = types::deserialize(ty, &v).map_err(QueryError::from)?;
            Some(types::serialize(&negated(v)))
        }
        Expr::SliceTimes {
            column,
            range,
            ttl,
            max,
        } => {
            let col = &r.schema.columns[*column];
            let inside =
                |c: &&crate::data::Cell| c.path.as_deref().is_some_and(|p| range.contains(p));
            if *max {
                r.elements(col)
                    .filter(inside)
                    .map(|c| c.timestamp_micros)
                    .max()
                    .map(|ts| ts.to_be_bytes().to_vec())
            } else {
                pack_times(
                    r.elements(col)
                        .filter(inside)
                        .map(|c| r.cell_time(c, *ttl))
                        .collect(),
                )
            }
        }
        Expr::Slice {
            inner,
            collection,
            range,
        } => {
            let Some(bytes) = eval_expr(inner, r, aggs)? else {
                return Ok(None);
            };
            let sliced = match types::deserialize(collection, &bytes).map_err(QueryError::from)? {
                Value::Map(entries) => {
                    let kept: Vec<(Value, Value)> = entries
                        .into_iter()
                        .filter(|(k, _)| range.contains(&types::element_path(k)))
                        .collect();
                    (!kept.is_empty()).then_some(Value::Map(kept))
                }
                Value::Set(items) => {
                    let kept: Vec<Value> = items
                        .into_iter()
                        .filter(|x| range.contains(&types::element_path(x)))
                        .collect();
                    (!kept.is_empty()).then_some(Value::Set(kept))
                }
                _ => None,
            };
            sliced.map(|v| types::serialize(&v))
        }
        Expr::ElementTime { column, path, ttl } => {
            let col = &r.schema.columns[*column];
            let cell = r
                .elements(col)
                .find(|c| c.path.as_deref() == Some(&path[..]));
            cell.and_then(|c| r.cell_time(c, *ttl))
        }
        Expr::WriteTime(i) | Expr::MaxWriteTime(i) => {
            let col = &r.schema.columns[*i];
            r.cell(col)
                .map(|c| c.timestamp_micros.to_be_bytes().to_vec())
        }
        Expr::Ttl(i) => {
            let col = &r.schema.columns[*i];
            r.cell(col).and_then(|c| r.cell_time(c, true))
        }
        Expr::Token => Some(r.key.token.to_be_bytes().to_vec()),
        Expr::Constant(v) => v.clone(),
        Expr::Element {
            inner,
            collection,
            key,
        } => {
            let Some(bytes) = eval_expr(inner, r, aggs)? else {
                return Ok(None);
            };
            match types::deserialize(collection, &bytes).map_err(QueryError::from)? {
                Value::Map(entries) => entries
                    .into_iter()
                    .find(|(k, _)| types::element_path(k) == *key)
                    .map(|(_, v)| types::serialize(&v)),
                Value::Set(items) => items
                    .into_iter()
                    .find(|x| types::element_path(x) == *key)
                    .map(|x| types::serialize(&x)),
                _ => None,
            }
        }
        Expr::Field { inner, udt, index } => {
            let Some(bytes) = eval_expr(inner, r, aggs)? else {
                return Ok(None);
            };
            match types::deserialize(udt, &bytes).map_err(QueryError::from)? {
                Value::Udt(mut fields) if *index < fields.len() => {
                    fields.swap_remove(*index).1.map(|v| types::serialize(&v))
                }
                _ => None,
            }
        }
        Expr::Cast { inner, from, to } => {
            let Some(bytes) = eval_expr(inner, r, aggs)? else {
                return Ok(None);
            };
            let ColumnType::Native(from) = from else {
                return Err(invalid("only native values can be cast"));
            };
            let v = types::deserialize(from, &bytes).map_err(QueryError::from)?;
            Some(types::serialize(&cast(v, to.clone())?))
        }
        Expr::Function {
            name,
            args,
            arg_types,
        } => {
            let mut vals = Vec::with_capacity(args.len());
            for (a, t) in args.iter().zip(arg_types) {
                let b = eval_expr(a, r, aggs)?;
                vals.push(match (b, t) {
                    (Some(b), t) => match t.stored_type() {
                        Some(t) => Some(types::deserialize(&t, &b).map_err(QueryError::from)?),
                        None => None,
                    },
                    _ => None,
                });
            }
            scalar_function(name, &vals, arg_types)?.map(|v| types::serialize(&v))
        }
        Expr::Aggregate { slot, .. } => aggs.get(*slot).and_then(Acc::result),
    })
}

fn scalar_function(
    name: &str,
    args: &[Option<Value>],
    arg_types: &[ColumnType],
) -> QueryOutcome<Option<Value>> {
    if name.starts_with("similarity_") {
        return Ok(match (args.first(), args.get(1)) {
            (Some(Some(Value::Vector(a))), Some(Some(Value::Vector(b)))) => {
                Some(Value::Float(similarity(name, a, b)?))
            }
            _ => None,
        });
    }
    let Some(Some(v)) = args.first() else {
        // toJson(null) is the JSON text "null", as Cassandra returns it.
        if name == "tojson" {
            return Ok(Some(Value::Text("null".to_string())));
        }
        return Ok(None);
    };
    Ok(Some(match name {
        "totimestamp" => match v {
            Value::TimeUuid(u) => Value::Timestamp(values::timeuuid_millis(u)),
            Value::Date(d) => Value::Timestamp((i64::from(*d) - (1 << 31)) * 86_400_000),
            Value::Timestamp(t) => Value::Timestamp(*t),
            other => return Err(bad_function_arg(name, other)),
        },
        "todate" => match v {
            Value::TimeUuid(u) => Value::Date(date_of(values::timeuuid_millis(u))),
            Value::Timestamp(t) => Value::Date(date_of(*t)),
            Value::Date(d) => Value::Date(*d),
            other => return Err(bad_function_arg(name, other)),
        },
        "tounixtimestamp" => match v {
            Value::TimeUuid(u) => Value::BigInt(values::timeuuid_millis(u)),
            Value::Timestamp(t) => Value::BigInt(*t),
            Value::Date(d) => Value::BigInt((i64::from(*d) - (1 << 31)) * 86_400_000),
            other => return Err(bad_function_arg(name, other)),
        },
        "tojson" => Value::Text(super::json::value_to_json(v)),
        "abs" | "exp" | "log" | "log10" | "round" => math(name, v)?,
        _ => {
            if name.ends_with("asblob") {
                Value::Blob(types::serialize(v))
            } else if let Some(t) = name.strip_prefix("blobas") {
                let t = CqlType::parse(t).map_err(QueryError::from)?;
                let Value::Blob(b) = v else {
                    return Err(bad_function_arg(name, v));
                };
                values::bytes_value(b, &t, name)?
            } else {
                let _ = arg_types;
                return Err(invalid(format!("Unknown function '{name}'")));
            }
        }
    }))
}

/// `abs`, `exp`, `log`, `log10`, `round` on a number, in its own type (the
/// transcendental ones compute in double precision, as Cassandra's do).
fn math(name: &str, v: &Value) -> QueryOutcome<Value> {
    let f = |x: f64| -> f64 {
        match name {
            "abs" => x.abs(),
            "exp" => x.exp(),
            "log" => x.ln(),
            "log10" => x.log10(),
            _ => x.round(),
        }
    };
    let int = |x: i128| -> i128 {
        match name {
            "abs" => x.abs(),
            "round" => x,
            _ => f(x as f64) as i128,
        }
    };
    Ok(match v {
        Value::TinyInt(x) => Value::TinyInt(int(i128::from(*x)) as i8),
        Value::SmallInt(x) => Value::SmallInt(int(i128::from(*x)) as i16),
        Value::Int(x) => Value::Int(int(i128::from(*x)) as i32),
        Value::BigInt(x) => Value::BigInt(int(i128::from(*x)) as i64),
        Value::Float(x) => Value::Float(f(f64::from(*x)) as f32),
        Value::Double(x) => Value::Double(f(*x)),
        other => return Err(bad_function_arg(name, other)),
    })
}

fn bad_function_arg(name: &str, v: &Value) -> QueryError {
    invalid(format!(
        "Function system.{name} does not take a {} argument",
        v.kind_name()
    ))
}

fn date_of(ms: i64) -> u32 {
    (ms.div_euclid(86_400_000) + (1 << 31)).clamp(0, i64::from(u32::MAX)) as u32
}

/// `CAST(v AS t)` as Cassandra's `CastFcts` allows: between numeric types,
/// anything to text/ascii, timestamps and dates and timeuuids among
/// themselves.
/// Refuses, when the statement is prepared, a cast Cassandra has no function
/// for, with Cassandra's message: to or from blob, or text to a number.
fn check_cast(from: ColumnType, to: CqlType, selector: &str) -> QueryOutcome<()> {
    const NUMERIC: [&str; 9] = [
        "bigint", "counter", "decimal", "double", "float", "int", "smallint", "tinyint", "varint",
    ];
    let ColumnType::Native(from) = from else {
        return Ok(());
    };
    if from == to {
        return Ok(());
    }
    if from == CqlType::Blob || to == CqlType::Blob {
        return Err(invalid(format!(
            "{selector} cannot be cast to {}",
            to.name()
        )));
    }
    let to_name = to.name();
    if NUMERIC.contains(&to_name.as_str()) && !NUMERIC.contains(&from.name().as_str()) {
        let signatures: Vec<String> = NUMERIC
            .iter()
            .filter(|n| **n != to_name)
            .map(|n| format!("system.cast_as_{to_name} : ({n}) -> {to_name}"))
            .collect();
        return Err(invalid(format!(
            "Invalid call to function system.cast_as_{to_name}, none of its type signatures \
             match (known type signatures: {})",
            signatures.join(", ")
        )));
    }
    Ok(())
}

fn cast(v: Value, to: CqlType) -> QueryOutcome<Value> {
    if v.fits(&to) {
        return Ok(v);
    }
    let as_f64 = |v: &Value| -> Option<f64> {
        Some(match v {
            Value::TinyInt(x) => f64::from(*x),
            Value::SmallInt(x) => f64::from(*x),
            Value::Int(x) => f64::from(*x),
            Value::BigInt(x) => *x as f64,
            Value::Float(x) => f64::from(*x),
            Value::Double(x) => *x,
            Value::Varint(_) | Value::Decimal { .. } => {
                types::format_value(v).parse::<f64>().ok()?
            }
            _ => return None,
        })
    };
    let as_i64 = |v: &Value| -> Option<i64> {
        Some(match v {
            Value::TinyInt(x) => i64::from(*x),
            Value::SmallInt(x) => i64::from(*x),
            Value::Int(x) => i64::from(*x),
            Value::BigInt(x) => *x,
            // Java's narrowing casts truncate toward zero.
            Value::Float(x) => *x as i64,
            Value::Double(x) => *x as i64,
            Value::Varint(_) => types::format_value(v).parse::<i64>().ok()?,
            Value::Decimal { .. } => types::format_value(v)
                .split('.')
                .next()?
                .parse::<i64>()
                .ok()?,
            _ => return None,
        })
    };
    let fail = |v: &Value| invalid(format!("{} cannot be cast to {}", v.kind_name(), to.name()));
    Ok(match to {
        CqlType::Text => Value::Text(types::format_value(&v)),
        CqlType::Ascii => {
            let s = types::format_value(&v);
            if !s.is_ascii() {
                return Err(fail(&v));
            }
            Value::Ascii(s)
        }
        CqlType::TinyInt => Value::TinyInt(as_i64(&v).ok_or_else(|| fail(&v))? as i8),
        CqlType::SmallInt => Value::SmallInt(as_i64(&v).ok_or_else(|| fail(&v))? as i16),
        CqlType::Int => Value::Int(as_i64(&v).ok_or_else(|| fail(&v))? as i32),
        CqlType::BigInt => Value::BigInt(as_i64(&v).ok_or_else(|| fail(&v))?),
        CqlType::Float => Value::Float(as_f64(&v).ok_or_else(|| fail(&v))? as f32),
        CqlType::Double => Value::Double(as_f64(&v).ok_or_else(|| fail(&v))?),
        CqlType::Varint => {
            let i = as_i64(&v).ok_or_else(|| fail(&v))?;
            crate::cql::literal::parse_value(&CqlType::Varint, &i.to_string())
                .map_err(QueryError::from)?
        }
        CqlType::Decimal => {
            let text = match &v {
                Value::Float(_) | Value::Double(_) => {
                    let f = as_f64(&v).ok_or_else(|| fail(&v))?;
                    if !f.is_finite() {
                        return Err(fail(&v));
                    }
                    format!("{f}")
                }
                _ => types::format_value(&v),
            };
            crate::cql::literal::parse_value(&CqlType::Decimal, &text).map_err(QueryError::from)?
        }
        CqlType::Timestamp => match v {
            Value::Date(d) => Value::Timestamp((i64::from(d) - (1 << 31)) * 86_400_000),
            Value::TimeUuid(u) => Value::Timestamp(values::timeuuid_millis(&u)),
            other => return Err(fail(&other)),
        },
        CqlType::Date => match v {
            Value::Timestamp(t) => Value::Date(date_of(t)),
            Value::TimeUuid(u) => Value::Date(date_of(values::timeuuid_millis(&u))),
            other => return Err(fail(&other)),
        },
        _ => return Err(fail(&v)),
    })
}

// ---------------------------------------------------------------------------
// Aggregates
// ---------------------------------------------------------------------------

/// One aggregate's running state.
#[derive(Clone, Debug)]
struct Acc {
    kind: AggKind,
    ty: ColumnType,
    count: i64,
    best: Option<Value>,
    sum_i: i128,
    sum_f: f64,
    /// Decimal and varint sums, as text-free big values.
    sum_big: Option<Value>,
}

impl Acc {
    fn new(kind: AggKind, ty: ColumnType) -> Acc {
        Acc {
            kind,
            ty,
            count: 0,
            best: None,
            sum_i: 0,
            sum_f: 0.0,
            sum_big: None,
        }
    }

    fn add(&mut self, v: Option<Value>) -> QueryOutcome<()> {
        if self.kind == AggKind::CountRows {
            self.count += 1;
            return Ok(());
        }
        let Some(v) = v else {
            return Ok(());
        };
        self.count += 1;
        match self.kind {
            AggKind::Count | AggKind::CountRows => {}
            AggKind::Min | AggKind::Max => {
                let replace = match &self.best {
                    None => true,
                    Some(b) => {
                        let o = restrict::compare(&v, b);
                        if self.kind == AggKind::Min {
                            o == CmpOrdering::Less
                        } else {
                            o == CmpOrdering::Greater
                        }
                    }
                };
                if replace {
                    self.best = Some(v);
                }
            }
            AggKind::Sum | AggKind::Avg => match v {
                Value::TinyInt(x) => self.sum_i += i128::from(x),
                Value::SmallInt(x) => self.sum_i += i128::from(x),
                Value::Int(x) => self.sum_i += i128::from(x),
                Value::BigInt(x) | Value::Counter(x) => self.sum_i += i128::from(x),
                Value::Float(x) => self.sum_f += f64::from(x),
                Value::Double(x) => self.sum_f += x,
                big @ (Value::Varint(_) | Value::Decimal { .. }) => {
                    let f: f64 = types::format_value(&big).parse().unwrap_or(0.0);
                    self.sum_f += f;
                    self.sum_big = Some(big);
                }
                _ => {}
            },
        }
        Ok(())
    }

    fn result(&self) -> Option<Vec<u8>> {
        let native = match &self.ty {
            ColumnType::Native(t) => Some(t.clone()),
            ColumnType::Counter => Some(CqlType::Counter),
            _ => None,
        };
        let v = match self.kind {
            AggKind::CountRows | AggKind::Count => Some(Value::BigInt(self.count)),
            AggKind::Min | AggKind::Max => self.best.clone(),
            AggKind::Sum | AggKind::Avg => {
                let avg = self.kind == AggKind::Avg;
                let n = self.count.max(1);
                // Java's integer arithmetic: the sum wraps in the column's type,
                // the average divides the wide sum (Cassandra's AVG keeps a
                // BigInteger for integer types).
                match native? {
                    CqlType::TinyInt => Some(Value::TinyInt(if avg {
                        (self.sum_i / i128::from(n)) as i8
                    } else {
                        self.sum_i as i8
                    })),
                    CqlType::SmallInt => Some(Value::SmallInt(if avg {
                        (self.sum_i / i128::from(n)) as i16
                    } else {
                        self.sum_i as i16
                    })),
                    CqlType::Int => Some(Value::Int(if avg {
                        (self.sum_i / i128::from(n)) as i32
                    } else {
                        self.sum_i as i32
                    })),
                    CqlType::BigInt => Some(Value::BigInt(if avg {
                        (self.sum_i / i128::from(n)) as i64
                    } else {
                        self.sum_i as i64
                    })),
                    CqlType::Counter => Some(Value::Counter(if avg {
                        (self.sum_i / i128::from(n)) as i64
                    } else {
                        self.sum_i as i64
                    })),
                    CqlType::Float => Some(Value::Float(if avg {
                        if self.count == 0 {
                            0.0
                        } else {
                            (self.sum_f / self.count as f64) as f32
                        }
                    } else {
                        self.sum_f as f32
                    })),
                    CqlType::Double => Some(Value::Double(if avg {
                        if self.count == 0 {
                            0.0
                        } else {
                            self.sum_f / self.count as f64
                        }
                    } else {
                        self.sum_f
                    })),
                    t @ (CqlType::Varint | CqlType::Decimal) => {
                        let f = if avg && self.count > 0 {
                            self.sum_f / self.count as f64
                        } else {
                            self.sum_f
                        };
                        let text = if t == CqlType::Varint {
                            format!("{}", f.trunc() as i128)
                        } else {
                            format!("{f}")
                        };
                        crate::cql::literal::parse_value(&t, &text).ok()
                    }
                    _ => None,
                }
            }
        };
        v.map(|v| types::serialize(&v))
    }
}

/// The accumulators of a selection, in slot order.
fn accumulators(cols: &[OutColumn], slots: usize) -> Vec<Acc> {
    let mut accs: Vec<Option<Acc>> = vec![None; slots];
    fn walk(e: &Expr, accs: &mut Vec<Option<Acc>>) {
        match e {
            Expr::Aggregate {
                kind,
                slot,
                arg,
                ty,
                ..
            } => {
                if let Some(a) = accs.get_mut(*slot) {
                    *a = Some(Acc::new(*kind, ty.clone()));
                }
                if let Some(a) = arg {
                    walk(a, accs);
                }
            }
            Expr::Function { args, .. } => args.iter().for_each(|a| walk(a, accs)),
            Expr::Cast { inner, .. } => walk(inner, accs),
            _ => {}
        }
    }
    for c in cols {
        walk(&c.expr, &mut accs);
    }
    accs.into_iter()
        .map(|a| {
            a.unwrap_or_else(|| Acc::new(AggKind::CountRows, ColumnType::Native(CqlType::BigInt)))
        })
        .collect()
}

/// Feeds a row to every aggregate of the selection.
fn accumulate(cols: &[OutColumn], r: &RowCtx<'_>, accs: &mut [Acc]) -> QueryOutcome<()> {
    fn walk(e: &Expr, r: &RowCtx<'_>, accs: &mut [Acc]) -> QueryOutcome<()> {
        match e {
            Expr::Aggregate { slot, arg, .. } => {
                let v = match arg {
                    Some(a) => {
                        let bytes = eval_expr(a, r, &[])?;
                        let ty = accs[*slot].ty.stored_type();
                        match (bytes, ty, accs[*slot].kind) {
                            (Some(_), _, AggKind::Count) => Some(Value::Boolean(true)),
                            (Some(b), Some(t), _) => {
                                Some(types::deserialize(&t, &b).map_err(QueryError::from)?)
                            }
                            _ => None,
                        }
                    }
                    None => None,
                };
                if let Some(acc) = accs.get_mut(*slot) {
                    acc.add(v)?;
                }
                Ok(())
            }
            Expr::Function { args, .. } => {
                for a in args {
                    walk(a, r, accs)?;
                }
                Ok(())
            }
            Expr::Cast { inner, .. } => walk(inner, r, accs),
            _ => Ok(()),
        }
    }
    for c in cols {
        walk(&c.expr, r, accs)?;
    }
    Ok(())
}

fn has_aggregate(e: &Expr) -> bool {
    match e {
        Expr::Aggregate { .. } => true,
        Expr::Function { args, .. } => args.iter().any(has_aggregate),
        Expr::Cast { inner, .. } => has_aggregate(inner),
        _ => false,
    }
}

// ---------------------------------------------------------------------------
// Paging state
// ---------------------------------------------------------------------------

const PAGING_VERSION: u8 = 1;
/// Longest paging state accepted (a key of 64 KiB, a clustering of a few
/// 64 KiB components, and the counters).
const MAX_PAGING_STATE_BYTES: usize = 1 << 20;

/// Where the next page starts and what the limits have left.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Resume {
    key: DecoratedKey,
    /// The last row returned from `key`; `None`: `key` was finished.
    clustering: Option<Vec<u8>>,
    remaining: u64,
    remaining_in_partition: u64,
}

impl Resume {
    fn to_bytes(&self) -> Vec<u8> {
        let mut out = vec![PAGING_VERSION];
        out.extend_from_slice(&self.key.token.to_be_bytes());
        out.extend_from_slice(&(self.key.key.len() as u32).to_be_bytes());
        out.extend_from_slice(&self.key.key);
        match &self.clustering {
            Some(c) => {
                out.push(1);
                out.extend_from_slice(&(c.len() as u32).to_be_bytes());
                out.extend_from_slice(c);
            }
            None => out.push(0),
        }
        out.extend_from_slice(&self.remaining.to_be_bytes());
        out.extend_from_slice(&self.remaining_in_partition.to_be_bytes());
        out
    }

    fn from_bytes(b: &[u8]) -> QueryOutcome<Resume> {
        let bad = || {
            QueryError::new(
                crate::cql::CqlErrorKind::ProtocolError,
                "Invalid value for the paging state",
            )
        };
        if b.len() > MAX_PAGING_STATE_BYTES {
            return Err(bad());
        }
        let mut r = b;
        let mut take = |n: usize| -> QueryOutcome<&[u8]> {
            if r.len() < n {
                return Err(bad());
            }
            let (h, t) = r.split_at(n);
            r = t;
            Ok(h)
        };
        if take(1)?[0] != PAGING_VERSION {
            return Err(bad());
        }
        let token = i64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        let len = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
        let key: Arc<[u8]> = Arc::from(take(len)?);
        if key.is_empty() || crate::token::token_of(&key) != token {
            return Err(bad());
        }
        let clustering = match take(1)?[0] {
            0 => None,
            1 => {
                let len = u32::from_be_bytes(take(4)?.try_into().map_err(|_| bad())?) as usize;
                Some(take(len)?.to_vec())
            }
            _ => return Err(bad()),
        };
        let remaining = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        let remaining_in_partition = u64::from_be_bytes(take(8)?.try_into().map_err(|_| bad())?);
        if !r.is_empty() {
            return Err(bad());
        }
        Ok(Resume {
            key: DecoratedKey { token, key },
            clustering,
            remaining,
            remaining_in_partition,
        })
    }
}

// ---------------------------------------------------------------------------
// Execution
// ---------------------------------------------------------------------------

/// The output being built: rows, limits, groups, the resume point.
struct Collector<'p> {
    plan: &'p Plan,
    rows: Vec<Vec<Option<Vec<u8>>>>,
    /// Rows the LIMIT still admits.
    remaining: u64,
    /// Rows of the current partition the partition limit still admits.
    remaining_in_partition: u64,
    current_partition: Option<DecoratedKey>,
    /// Rows this page may still take (`u64::MAX` without paging).
    page_left: u64,
    /// The last row handed out: where the next page starts.
    last: Option<(DecoratedKey, Vec<u8>)>,
    accs: Vec<Acc>,
    /// GROUP BY: the current group's key, and its first row's values.
    group_key: Option<Vec<Vec<u8>>>,
    group_first: Option<Vec<Option<Vec<u8>>>>,
    aggregated_rows: u64,
}

impl Collector<'_> {
    fn done(&self) -> bool {
        self.remaining == 0 || self.page_left == 0
    }

    fn start_partition(&mut self, key: &DecoratedKey) {
        if self.current_partition.as_ref() != Some(key) {
            self.current_partition = Some(key.clone());
            self.remaining_in_partition = self.plan.per_partition_limit;
        }
    }

    /// Offers one row; returns whether more rows of this partition are wanted.
    fn offer(&mut self, r: &RowCtx<'_>, clustering: &[u8]) -> QueryOutcome<bool> {
        if self.done() {
            return Ok(false);
        }
        // With GROUP BY, PER PARTITION LIMIT counts groups (below), not rows.
        let grouped = self.plan.aggregate && self.plan.group_by.is_some();
        if self.remaining_in_partition == 0 && !grouped {
            return Ok(false);
        }
        for f in &self.plan.bound_filters {
            let i = column_index(r.schema, &f.column)?;
            let v = r.value(i)?;
            if !f.admits(v.as_ref()) {
                return Ok(true);
            }
        }
        if !grouped {
            self.remaining_in_partition -= 1;
        }
        if self.plan.aggregate {
            if let Some(group_cols) = &self.plan.group_by {
                let gk: Vec<Vec<u8>> = group_cols
                    .iter()
                    .map(|&i| r.column(i).map(Option::unwrap_or_default))
                    .collect::<QueryOutcome<_>>()?;
                if self.group_key.as_ref() != Some(&gk) {
                    self.flush_group()?;
                    if self.done() || self.remaining_in_partition == 0 {
                        return Ok(false);
                    }
                    self.remaining_in_partition -= 1;
                    self.group_key = Some(gk);
                }
            }
            if self.group_first.is_none() {
                let mut first = Vec::with_capacity(self.plan.columns.len());
                for c in &self.plan.columns {
                    first.push(if has_aggregate(&c.expr) {
                        None
                    } else {
                        eval_expr(&c.expr, r, &[])?
                    });
                }
                self.group_first = Some(first);
            }
            accumulate(&self.plan.columns, r, &mut self.accs)?;
            self.aggregated_rows += 1;
            self.last = Some((r.key.clone(), clustering.to_vec()));
            // A group may go on past the partition's last allowed group start.
            return Ok(grouped || self.remaining_in_partition > 0);
        }
        let mut out = Vec::with_capacity(self.plan.columns.len());
        for c in &self.plan.columns {
            out.push(eval_expr(&c.expr, r, &self.accs)?);
        }
        if self.plan.json {
            out = vec![Some(super::json::row_to_json(
                &self.plan.columns_json,
                &out,
            )?)];
        }
        self.rows.push(out);
        self.remaining -= 1;
        self.page_left -= 1;
        self.last = Some((r.key.clone(), clustering.to_vec()));
        Ok(self.remaining_in_partition > 0 && !self.done())
    }

    /// Emits the current group's aggregated row (GROUP BY, or the end of an
    /// aggregation without one).
    fn flush_group(&mut self) -> QueryOutcome<()> {
        let Some(first) = self.group_first.take() else {
            return Ok(());
        };
        let mut out = Vec::with_capacity(self.plan.columns.len());
        for (c, f) in self.plan.columns.iter().zip(first) {
            out.push(if has_aggregate(&c.expr) {
                aggregate_value(&c.expr, &self.accs)?
            } else {
                f
            });
        }
        if self.plan.json {
            out = vec![Some(super::json::row_to_json(
                &self.plan.columns_json,
                &out,
            )?)];
        }
        self.rows.push(out);
        self.remaining = self.remaining.saturating_sub(1);
        self.page_left = self.page_left.saturating_sub(1);
        self.accs = accumulators(&self.plan.columns, self.plan.slots);
        Ok(())
    }
}

fn aggregate_value(e: &Expr, accs: &[Acc]) -> QueryOutcome<Option<Vec<u8>>> {
    match e {
        Expr::Aggregate { slot, .. } => Ok(accs.get(*slot).and_then(Acc::result)),
        Expr::Cast { inner, from, to } => {
            let Some(b) = aggregate_value(inner, accs)? else {
                return Ok(None);
            };
            let ColumnType::Native(from) = from else {
                return Ok(None);
            };
            let v = types::deserialize(from, &b).map_err(QueryError::from)?;
            Ok(Some(types::serialize(&cast(v, to.clone())?)))
        }
        Expr::Function {
            name,
            args,
            arg_types,
        } => {
            let mut vals = Vec::new();
            for (a, t) in args.iter().zip(arg_types) {
                let b = aggregate_value(a, accs)?;
                vals.push(match (b, t) {
                    (Some(b), t) => match t.stored_type() {
                        Some(t) => Some(types::deserialize(&t, &b).map_err(QueryError::from)?),
                        None => None,
                    },
                    _ => None,
                });
            }
            Ok(scalar_function(name, &vals, arg_types)?.map(|v| types::serialize(&v)))
        }
        _ => Ok(None),
    }
}

/// A SELECT checked against its table.
struct Plan {
    table: Arc<Table>,
    schema: Arc<TableSchema>,
    columns: Vec<OutColumn>,
    /// For SELECT JSON: each column's name and type (the JSON object's keys).
    columns_json: Vec<(String, ColumnType)>,
    slots: usize,
    aggregate: bool,
    group_by: Option<Vec<usize>>,
    json: bool,
    distinct: bool,
    restrictions: Restrictions,
    bound_filters: Vec<BoundFilter>,
    reversed: bool,
    /// How many clustering columns ORDER BY names.
    order_columns: usize,
    limit: u64,
    per_partition_limit: u64,
    /// Partitions with only static values show as a row.
    statics_as_rows: bool,
}

fn limit_value(t: &Option<Term>, what: &str, ctx: &Ctx<'_>) -> QueryOutcome<u64> {
    let Some(t) = t else {
        return Ok(u64::MAX);
    };
    match values::scalar(t, &CqlType::Int, what, &ctx.eval)? {
        Bound::Value(Value::Int(n)) if n > 0 => Ok(n as u64),
        // Cassandra says LIMIT for both limits.
        Bound::Value(Value::Int(_)) => Err(invalid("LIMIT must be strictly positive")),
        Bound::Unset => Ok(u64::MAX),
        _ => Err(invalid(format!("Invalid null value of {what}"))),
    }
}

fn plan(ctx: &Ctx<'_>, s: &Select) -> QueryOutcome<Plan> {
    let table = ctx.table(&s.table)?;
    let schema = table.schema();
    let restrictions = restrict::analyze(
        &schema,
        &s.where_clause,
        Purpose::Select {
            allow_filtering: s.allow_filtering,
        },
    )?;
    let (columns, slots) = plan_selection(&schema, &s.selection, &ctx.eval)?;
    let aggregate = columns.iter().any(|c| has_aggregate(&c.expr));
    // Primary key columns restricted by a single `=`: ORDER BY and GROUP BY
    // may leave them out.
    let eq_restricted = |name: &str| {
        s.where_clause.iter().any(|r| {
            r.op == crate::cql::ast::Operator::Eq
                && matches!(&r.target, crate::cql::ast::RelationTarget::Column(n) if n.text == name)
        })
    };
    let group_by = if s.group_by.is_empty() {
        None
    } else {
        let key: Vec<&ColumnDef> = schema
            .columns
            .iter()
            .filter(|c| c.is_primary_key())
            .collect();
        let mut idx = Vec::new();
        let mut next = 0usize;
        for n in &s.group_by {
            let Some(at) = key.iter().position(|c| c.name == n.text) else {
                return Err(invalid(format!(
                    "Group by is currently only supported on the columns of the PRIMARY KEY, got {}",
                    n.text
                )));
            };
            // Skipped key columns must be fixed by `=`.
            if at < next || key[next..at].iter().any(|c| !eq_restricted(&c.name)) {
                return Err(invalid(
                    "Group by currently only support groups of columns following their declared order in the PRIMARY KEY",
                ));
            }
            next = at + 1;
            idx.push(column_index(&schema, &n.text)?);
        }
        Some(idx)
    };
    let aggregate = aggregate || group_by.is_some();
    let pk_names: Vec<&str> = schema
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::PartitionKey)
        .map(|c| c.name.as_str())
        .collect();
    if s.distinct {
        for c in &columns {
            match &c.expr {
                Expr::Column(i)
                    if matches!(
                        schema.columns[*i].kind,
                        ColumnKind::PartitionKey | ColumnKind::Static
                    ) => {}
                Expr::Token | Expr::Aggregate { .. } => {}
                _ => {
                    return Err(invalid(format!(
                        "SELECT DISTINCT queries must only request partition key columns and/or static columns (not {})",
                        c.name
                    )))
                }
            }
        }
        let selected: Vec<&str> = columns
            .iter()
            .filter_map(|c| match &c.expr {
                Expr::Column(i) => Some(schema.columns[*i].name.as_str()),
                _ => None,
            })
            .collect();
        let missing: Vec<&str> = pk_names
            .iter()
            .filter(|n| !selected.contains(n))
            .copied()
            .collect();
        if !missing.is_empty() && !columns.iter().any(|c| matches!(c.expr, Expr::Token)) {
            return Err(invalid(format!(
                "SELECT DISTINCT queries must request all the partition key columns (missing {})",
                missing.join(", ")
            )));
        }
        if s.per_partition_limit.is_some() {
            return Err(invalid(
                "PER PARTITION LIMIT is not allowed with SELECT DISTINCT queries",
            ));
        }
    }
    // A selection of static and partition key columns only cannot restrict
    // clustering columns (it reads no rows).
    let statics_only = matches!(s.selection, Selection::Items(_))
        && !columns.is_empty()
        && columns.iter().all(|c| match &c.expr {
            Expr::Column(i) => matches!(
                schema.columns[*i].kind,
                ColumnKind::PartitionKey | ColumnKind::Static
            ),
            _ => false,
        })
        && columns.iter().any(
            |c| matches!(&c.expr, Expr::Column(i) if schema.columns[*i].kind == ColumnKind::Static),
        );
    if statics_only
        && (!restrictions.clustering.prefix.is_empty() || restrictions.clustering.slice.is_some())
    {
        return Err(invalid(
            "Cannot restrict clustering columns when selecting only static columns",
        ));
    }
    // ORDER BY: clustering columns in their order (those fixed by `=` may be
    // left out), all in the clustering order or all in its reverse.
    let mut reversed = false;
    if !s.order_by.is_empty() {
        let ck: Vec<&ColumnDef> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .collect();
        let mut direction: Option<bool> = None;
        let mut next = 0usize;
        for Ordering { column, descending } in &s.order_by {
            let Some(at) = ck.iter().position(|c| c.name == column.text) else {
                return Err(invalid(format!(
                    "Order by is currently only supported on the clustered columns of the PRIMARY KEY, got {}",
                    column.text
                )));
            };
            if at < next || ck[next..at].iter().any(|c| !eq_restricted(&c.name)) {
                return Err(invalid(
                    "Order by currently only supports the ordering of columns following their declared order in the PRIMARY KEY",
                ));
            }
            next = at + 1;
            let rev = *descending != ck[at].descending;
            match direction {
                None => direction = Some(rev),
                Some(d) if d != rev => return Err(invalid("Unsupported order by relation")),
                _ => {}
            }
        }
        if !matches!(
            restrictions.partition,
            restrict::PartitionRestriction::Keys(_)
        ) {
            return Err(invalid(
                "ORDER BY is only supported when the partition key is restricted by an EQ or an IN.",
            ));
        }
        reversed = direction.unwrap_or(false);
    }
    let bound_filters = restrictions
        .filters
        .iter()
        .map(|f| f.bind(&ctx.eval))
        .collect::<QueryOutcome<_>>()?;
    let limit = limit_value(&s.limit, "[limit]", ctx)?;
    let per_partition_limit = limit_value(&s.per_partition_limit, "[per_partition_limit]", ctx)?;
    let statics_as_rows = restrictions.clustering.prefix.is_empty()
        && restrictions.clustering.slice.is_none()
        && !restrictions
            .filters
            .iter()
            .any(|f| matches!(f.kind, ColumnKind::Clustering | ColumnKind::Regular));
    let columns_json = columns
        .iter()
        .map(|c| {
            // A column of the table keeps CQL's quoting as its JSON key;
            // other selectors are named as written.
            let key = match &c.expr {
                Expr::Column(_)
                    if c.name.chars().any(|ch| {
                        ch.is_ascii_uppercase() || !(ch.is_ascii_alphanumeric() || ch == '_')
                    }) =>
                {
                    format!("\"{}\"", c.name.replace('"', "\"\""))
                }
                _ => c.name.clone(),
            };
            (key, c.ty.clone())
        })
        .collect();
    Ok(Plan {
        table,
        schema,
        columns,
        columns_json,
        slots,
        aggregate,
        group_by,
        json: s.json,
        distinct: s.distinct,
        restrictions,
        bound_filters,
        reversed,
        order_columns: s.order_by.len(),
        limit,
        per_partition_limit: if s.distinct { 1 } else { per_partition_limit },
        statics_as_rows,
    })
}

/// The columns of `SELECT *`, as indexes into `schema.columns`: partition
/// key and clustering columns in key order, then static columns, then regular
/// columns, each by name (Cassandra's `allColumnsInSelectOrder`).
pub(crate) fn select_order(schema: &TableSchema) -> Vec<usize> {
    let mut key: Vec<usize> = (0..schema.columns.len())
        .filter(|&i| schema.columns[i].is_primary_key())
        .collect();
    let by_name = |kind: ColumnKind| {
        let mut v: Vec<usize> = (0..schema.columns.len())
            .filter(|&i| schema.columns[i].kind == kind)
            .collect();
        v.sort_by(|&a, &b| schema.columns[a].name.cmp(&schema.columns[b].name));
        v
    };
    key.extend(by_name(ColumnKind::Static));
    key.extend(by_name(ColumnKind::Regular));
    key
}

/// The result metadata of a SELECT (for PREPARE).
pub(crate) fn metadata(ctx: &Ctx<'_>, s: &Select) -> QueryOutcome<RowsMetadata> {
    // The limits shape no column, and a `LIMIT ?` has no value yet.
    let s = Select {
        limit: None,
        per_partition_limit: None,
        ..s.clone()
    };
    let p = plan(ctx, &s)?;
    Ok(result_metadata(&p))
}

fn result_metadata(p: &Plan) -> RowsMetadata {
    let spec = |name: &str, ty: ColumnType| ColumnSpec {
        keyspace: p.schema.keyspace.clone(),
        table: p.schema.name.clone(),
        name: name.to_string(),
        ty,
    };
    if p.json {
        return RowsMetadata {
            columns: vec![spec("[json]", ColumnType::Native(CqlType::Text))],
        };
    }
    RowsMetadata {
        columns: p
            .columns
            .iter()
            .map(|c| spec(&c.name, c.ty.clone()))
            .collect(),
    }
}

/// Splits a serialized partition key into its components.
fn pk_components(schema: &TableSchema, key: &[u8]) -> QueryOutcome<Vec<Vec<u8>>> {
    let n = schema
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::PartitionKey)
        .count();
    if n == 1 {
        return Ok(vec![key.to_vec()]);
    }
    let mut out = Vec::with_capacity(n);
    let mut rest = key;
    for _ in 0..n {
        if rest.len() < 2 {
            return Err(invalid("malformed composite partition key"));
        }
        let len = u16::from_be_bytes([rest[0], rest[1]]) as usize;
        if rest.len() < 2 + len + 1 {
            return Err(invalid("malformed composite partition key"));
        }
        out.push(rest[2..2 + len].to_vec());
        rest = &rest[2 + len + 1..];
    }
    Ok(out)
}

/// The clustering's components, serialized.
fn ck_components(schema: &TableSchema, clustering: &[u8]) -> QueryOutcome<Vec<Option<Vec<u8>>>> {
    if clustering.is_empty() {
        return Ok(Vec::new());
    }
    let values = schema
        .decode_clustering(clustering)
        .map_err(QueryError::from)?;
    Ok(values.iter().map(|v| Some(types::serialize(v))).collect())
}

/// Runs a SELECT.
pub(crate) fn execute(ctx: &Ctx<'_>, s: &Select) -> QueryOutcome<(QueryResult, Vec<String>)> {
    let p = plan(ctx, s)?;
    let mut warnings = Vec::new();
    let resume = match &ctx.params.paging_state {
        Some(b) => Some(Resume::from_bytes(b)?),
        None => None,
    };
    let page_rows = match ctx.params.page_size {
        Some(n) if n > 0 && !p.aggregate => u64::from(n),
        _ => u64::MAX,
    };
    let mut c = Collector {
        plan: &p,
        rows: Vec::new(),
        remaining: resume.as_ref().map_or(p.limit, |r| r.remaining),
        remaining_in_partition: p.per_partition_limit,
        current_partition: None,
        page_left: page_rows,
        last: None,
        accs: accumulators(&p.columns, p.slots),
        group_key: None,
        group_first: None,
        aggregated_rows: 0,
    };
    if let Some(r) = &resume {
        c.current_partition = Some(r.key.clone());
        c.remaining_in_partition = r.remaining_in_partition;
    }
    let keys = p.restrictions.partition_keys(&p.schema, &ctx.eval)?;
    if p.aggregate {
        // Cassandra's warnings on aggregations that read many partitions.
        match &keys {
            None => warnings.push("Aggregation query used without partition key".to_string()),
            Some(k) if k.len() > 1 => warnings.push(
                "Aggregation query used on multiple partition keys (IN restriction)".to_string(),
            ),
            Some(_) => {}
        }
    }
    match keys {
        Some(keys) => {
            let in_order = !s.order_by.is_empty() && keys.len() > 1;
            if in_order && page_rows != u64::MAX {
                return Err(invalid(
                    "Cannot page queries with both ORDER BY and a IN restriction on the partition key; you must either remove the ORDER BY or the IN and sort client side, or disable paging for this query",
                ));
            }
            read_keys(ctx, &p, &mut c, keys, resume.as_ref(), in_order)?;
        }
        None => {
            scan(ctx, &p, &mut c, resume.as_ref())?;
        }
    }
    if p.aggregate {
        // Without GROUP BY an aggregation always answers one row (count 0 on
        // nothing); with it, the last group.
        if p.group_by.is_none() && c.group_first.is_none() && c.aggregated_rows == 0 {
            let mut out = Vec::new();
            for col in &p.columns {
                out.push(if has_aggregate(&col.expr) {
                    aggregate_value(&col.expr, &c.accs)?
                } else {
                    None
                });
            }
            if p.json {
                out = vec![Some(super::json::row_to_json(&p.columns_json, &out)?)];
            }
            c.rows.push(out);
        } else {
            c.flush_group()?;
        }
    }
    // As Cassandra's pager: a full page carries a paging state (the next page
    // may then be empty); a short page, or a reached LIMIT, ends the query.
    let page_full = page_rows != u64::MAX && c.page_left == 0;
    let paging_state = if !page_full || p.aggregate || c.remaining == 0 {
        None
    } else {
        c.last.as_ref().map(|(key, clustering)| {
            Resume {
                key: key.clone(),
                clustering: (!clustering.is_empty()).then(|| clustering.clone()),
                remaining: c.remaining,
                remaining_in_partition: c.remaining_in_partition,
            }
            .to_bytes()
        })
    };
    Ok((
        QueryResult::Rows(Rows {
            metadata: Arc::new(result_metadata(&p)),
            rows: c.rows,
            paging_state,
        }),
        warnings,
    ))
}

/// Reads the named partitions; returns whether every row was visited.
fn read_keys(
    ctx: &Ctx<'_>,
    p: &Plan,
    c: &mut Collector<'_>,
    keys: Vec<Vec<Value>>,
    resume: Option<&Resume>,
    sort_by_clustering: bool,
) -> QueryOutcome<bool> {
    // Partitions come in the key's type order (the IN list read as a sorted
    // set, as Cassandra answers it), not in token order.
    let mut decorated: Vec<DecoratedKey> = Vec::with_capacity(keys.len());
    for k in &keys {
        let key = p.schema.decorated_key(k).map_err(QueryError::from)?;
        // A token() restriction beside the keys leaves out those outside it.
        if p.restrictions
            .admits_token(&p.schema, &ctx.eval, key.token)?
        {
            decorated.push(key);
        }
    }
    let ranges = p.restrictions.clustering_ranges(&p.schema, &ctx.eval)?;
    if sort_by_clustering {
        // IN with ORDER BY: all rows of every partition, sorted by clustering
        // (Cassandra sorts in memory too; paging is refused above).
        // Cassandra reads each partition in the query's direction (reversed
        // for a descending ORDER BY) and sorts the rows on the ORDER BY
        // columns only, stably: ties keep partition order, then read order.
        let mut all: Vec<(Vec<u8>, DecoratedKey, Option<Row>, Row)> = Vec::new();
        let in_read_order: Vec<&ClusteringRange> = if p.reversed {
            ranges.iter().rev().collect()
        } else {
            ranges.iter().collect()
        };
        for key in &decorated {
            let mut static_row = None;
            for range in in_read_order.iter().copied() {
                let r = p
                    .table
                    .read(key, range, p.reversed, usize::MAX)
                    .map_err(QueryError::from)?;
                if static_row.is_none() {
                    static_row = r.static_row;
                }
                for row in r.rows {
                    let values = p
                        .schema
                        .decode_clustering(&row.clustering)
                        .map_err(QueryError::from)?;
                    let n = p.order_columns.min(values.len());
                    let sort_key = p
                        .schema
                        .encode_clustering_prefix(&values[..n])
                        .map_err(QueryError::from)?;
                    all.push((sort_key, key.clone(), static_row.clone(), row));
                }
            }
        }
        if p.reversed {
            all.sort_by(|a, b| b.0.cmp(&a.0));
        } else {
            all.sort_by(|a, b| a.0.cmp(&b.0));
        }
        for (_, key, static_row, row) in &all {
            let clustering = &row.clustering;
            c.start_partition(key);
            let pk_parts = pk_components(&p.schema, &key.key)?;
            let ck_parts = ck_components(&p.schema, clustering)?;
            let r = RowCtx {
                schema: &p.schema,
                key,
                pk_parts: &pk_parts,
                ck_parts: &ck_parts,
                row: Some(row),
                static_row: static_row.as_ref(),
                now_seconds: ctx.now_seconds(),
            };
            c.offer(&r, clustering)?;
            if c.done() {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    let start = match resume {
        Some(r) => decorated
            .iter()
            .position(|k| *k == r.key)
            .unwrap_or(decorated.len()),
        None => 0,
    };
    for (i, key) in decorated.iter().enumerate().skip(start) {
        let after = match resume {
            Some(r) if r.key == *key => match &r.clustering {
                Some(ck) => Some(ck.clone()),
                // The partition was finished on the previous page.
                None => continue,
            },
            _ => None,
        };
        c.start_partition(key);
        let exhausted = visit_partition(ctx, p, c, key, &ranges, after)?;
        if c.done() {
            // Finished only if this partition and every later one are done.
            return Ok((exhausted && i + 1 == decorated.len()) || c.remaining == 0);
        }
    }
    Ok(true)
}

/// Reads one partition's rows in the clustering ranges, after `after` in the
/// read's direction; at most `limit` rows unless filters may drop some.
fn read_partition(
    p: &Plan,
    key: &DecoratedKey,
    ranges: &[ClusteringRange],
    after: Option<&[u8]>,
    limit: u64,
) -> QueryOutcome<(Option<Row>, Vec<Row>)> {
    let read_limit = if p.bound_filters.is_empty() {
        usize::try_from(limit).unwrap_or(usize::MAX)
    } else {
        usize::MAX
    };
    let mut static_row = None;
    let mut rows = Vec::new();
    let ordered: Vec<&ClusteringRange> = if p.reversed {
        ranges.iter().rev().collect()
    } else {
        ranges.iter().collect()
    };
    if ordered.is_empty() {
        // Nothing to read but, for a static-only query, the static row.
        let r = p
            .table
            .read(key, &ClusteringRange::ALL, false, 0)
            .map_err(QueryError::from)?;
        return Ok((r.static_row, rows));
    }
    for range in ordered {
        let range = match after {
            Some(ck) => {
                let resumed = if p.reversed {
                    ClusteringRange {
                        start: ClusteringBound::UNBOUNDED,
                        end: ClusteringBound::exclusive(ck.to_vec()),
                    }
                } else {
                    ClusteringRange {
                        start: ClusteringBound::exclusive(ck.to_vec()),
                        end: ClusteringBound::UNBOUNDED,
                    }
                };
                match narrow(range, &resumed) {
                    Some(r) => r,
                    None => continue,
                }
            }
            None => range.clone(),
        };
        let left = read_limit.saturating_sub(rows.len());
        if left == 0 && static_row.is_some() {
            break;
        }
        let r = p
            .table
            .read(key, &range, p.reversed, left)
            .map_err(QueryError::from)?;
        if static_row.is_none() {
            static_row = r.static_row;
        }
        rows.extend(r.rows);
    }
    Ok((static_row, rows))
}

/// `a` narrowed to `b` (both in storage order), `None` if empty.
fn narrow(a: &ClusteringRange, b: &ClusteringRange) -> Option<ClusteringRange> {
    // Rows admitted by both: the later start and the earlier end. Full-key
    // bounds from a resume point compare as plain bytes against prefixes.
    let start = if b.start.is_unbounded() {
        a.start.clone()
    } else if a.start.is_unbounded() || a.start.admits_as_start(&b.start.prefix) {
        b.start.clone()
    } else {
        a.start.clone()
    };
    let end = if b.end.is_unbounded() {
        a.end.clone()
    } else if a.end.is_unbounded() || a.end.admits_as_end(&b.end.prefix) {
        b.end.clone()
    } else {
        a.end.clone()
    };
    if !start.is_unbounded() && !end.is_unbounded() {
        // Empty if the start lies past the end.
        let s = &start.prefix;
        let e = &end.prefix;
        if s > e && !s.starts_with(e) {
            return None;
        }
        if s == e && !(start.inclusive && end.inclusive) {
            return None;
        }
    }
    Some(ClusteringRange { start, end })
}

/// Offers one partition's rows; returns whether the partition was exhausted.
fn visit_partition(
    ctx: &Ctx<'_>,
    p: &Plan,
    c: &mut Collector<'_>,
    key: &DecoratedKey,
    ranges: &[ClusteringRange],
    after: Option<Vec<u8>>,
) -> QueryOutcome<bool> {
    // An aggregation reads every row it aggregates; otherwise the rows the
    // limits can still take, and one more to know whether the partition
    // goes on (module invariant 1).
    let limit = if p.aggregate {
        u64::MAX
    } else {
        c.remaining_in_partition
            .min(c.remaining)
            .min(c.page_left)
            .saturating_add(1)
    };
    let (static_row, rows) = if p.distinct {
        // One row tells whether the partition has anything live.
        read_partition(p, key, &[ClusteringRange::ALL], None, 1)?
    } else {
        read_partition(p, key, ranges, after.as_deref(), limit)?
    };
    // A static row counts only with a live static cell (Cassandra's static
    // row has no row marker of its own).
    let static_row = static_row.filter(|r| !r.cells.is_empty());
    let pk_parts = pk_components(&p.schema, &key.key)?;
    let now = ctx.now_seconds();
    if rows.is_empty() || p.distinct {
        // A partition of static values only shows as one row when nothing
        // restricts the clustering; DISTINCT shows every live partition once.
        let shows = after.is_none()
            && ((static_row.is_some() && p.statics_as_rows)
                || (p.distinct && (static_row.is_some() || !rows.is_empty())));
        if shows {
            let r = RowCtx {
                schema: &p.schema,
                key,
                pk_parts: &pk_parts,
                ck_parts: &[],
                row: None,
                static_row: static_row.as_ref(),
                now_seconds: now,
            };
            c.offer(&r, &[])?;
        }
        return Ok(true);
    }
    let total = rows.len() as u64;
    for (n, row) in rows.iter().enumerate() {
        let ck_parts = ck_components(&p.schema, &row.clustering)?;
        let r = RowCtx {
            schema: &p.schema,
            key,
            pk_parts: &pk_parts,
            ck_parts: &ck_parts,
            row: Some(row),
            static_row: static_row.as_ref(),
            now_seconds: now,
        };
        let more = c.offer(&r, &row.clustering)?;
        if !more || c.done() {
            // Exhausted if that was the last row there is.
            return Ok(n as u64 + 1 == total && total < limit);
        }
    }
    Ok(true)
}

/// Scans the table in token order (restricted by a token range, if any);
/// returns whether the scan reached its end.
fn scan(
    ctx: &Ctx<'_>,
    p: &Plan,
    c: &mut Collector<'_>,
    resume: Option<&Resume>,
) -> QueryOutcome<bool> {
    let range = p.restrictions.token_range(&p.schema, &ctx.eval)?;
    let clustering_ranges = if p.restrictions.clustering.prefix.is_empty()
        && p.restrictions.clustering.slice.is_none()
    {
        None
    } else {
        Some(p.restrictions.clustering_ranges(&p.schema, &ctx.eval)?)
    };
    let (start_tok, end_tok) = match range {
        Some((s, e)) => (s, e),
        None => (None, None),
    };
    // A resumed partition finishes first, read as a slice with its static row.
    let mut position: Option<PagingState> = None;
    if let Some(r) = resume {
        c.start_partition(&r.key);
        if let Some(ck) = &r.clustering {
            if c.remaining_in_partition > 0 {
                let exhausted =
                    visit_partition(ctx, p, c, &r.key, &[ClusteringRange::ALL], Some(ck.clone()))?;
                if c.done() && !exhausted {
                    return Ok(false);
                }
            }
        }
        position = Some(PagingState {
            key: r.key.clone(),
            last_clustering: None,
        });
    } else if let Some((t, inclusive)) = start_tok {
        let t = if inclusive {
            t
        } else if t == i64::MAX {
            return Ok(true);
        } else {
            t + 1
        };
        // A key with no bytes sorts before every real key of its token.
        position = Some(PagingState {
            key: DecoratedKey {
                token: t,
                key: Arc::from(&[][..]),
            },
            last_clustering: None,
        });
    }
    let past_end = |token: i64| match end_tok {
        Some((e, true)) => token > e,
        Some((e, false)) => token >= e,
        None => false,
    };
    let now = ctx.now_seconds();
    let schema = p.schema.clone();
    // Rows of the partition being assembled: static row, then rows; a
    // partition's rows arrive contiguously.
    struct Pending {
        key: DecoratedKey,
        static_row: Option<Row>,
        rows: Vec<Row>,
    }
    loop {
        if c.done() {
            return Ok(false);
        }
        let batch = c.page_left.min(c.remaining).clamp(1, 5_000) as usize + 1;
        let mut pending: Vec<Pending> = Vec::new();
        let mut ended = false;
        let next = p
            .table
            .scan_rows(position.as_ref(), batch, &mut |row| {
                if past_end(row.token) {
                    ended = true;
                    return;
                }
                let same = pending
                    .last()
                    .is_some_and(|q| q.key.token == row.token && *q.key.key == *row.key);
                if !same {
                    pending.push(Pending {
                        key: DecoratedKey {
                            token: row.token,
                            key: Arc::from(row.key),
                        },
                        static_row: None,
                        rows: Vec::new(),
                    });
                }
                if let Some(q) = pending.last_mut() {
                    if row.is_static {
                        q.static_row = Some(row.to_row());
                    } else {
                        q.rows.push(row.to_row());
                    }
                }
            })
            .map_err(QueryError::from)?;
        let last_index = pending.len().saturating_sub(1);
        for (i, q) in pending.iter().enumerate() {
            // The scan's last partition may continue on its next page.
            let partial = i == last_index
                && next
                    .as_ref()
                    .is_some_and(|n| n.key == q.key && n.last_clustering.is_some());
            let static_needed = q.static_row.is_none()
                && schema.columns.iter().any(|c| c.kind == ColumnKind::Static);
            let static_row = if static_needed && !q.rows.is_empty() {
                // A partition resumed mid-way by the scan comes without its
                // static row: read it.
                p.table
                    .read(&q.key, &ClusteringRange::ALL, false, 0)
                    .map_err(QueryError::from)?
                    .static_row
            } else {
                q.static_row.clone()
            };
            // Static values show only with a live static cell.
            let static_row = static_row.filter(|r| !r.cells.is_empty());
            // A scan with clustering restrictions (ALLOW FILTERING) keeps the
            // rows inside them.
            let rows: Vec<&Row> = match &clustering_ranges {
                Some(ranges) => q
                    .rows
                    .iter()
                    .filter(|r| ranges.iter().any(|range| range.contains(&r.clustering)))
                    .collect(),
                None => q.rows.iter().collect(),
            };
            c.start_partition(&q.key);
            let pk_parts = pk_components(&schema, &q.key.key)?;
            if rows.is_empty() || p.distinct {
                let shows = (static_row.is_some() && p.statics_as_rows && q.rows.is_empty())
                    || (p.distinct && (static_row.is_some() || !q.rows.is_empty()));
                if shows && c.remaining_in_partition > 0 {
                    let r = RowCtx {
                        schema: &schema,
                        key: &q.key,
                        pk_parts: &pk_parts,
                        ck_parts: &[],
                        row: None,
                        static_row: static_row.as_ref(),
                        now_seconds: now,
                    };
                    if partial && p.distinct {
                        // Counted once: the rest of this partition is skipped below.
                    }
                    c.offer(&r, &[])?;
                }
            } else {
                for row in rows {
                    let ck_parts = ck_components(&schema, &row.clustering)?;
                    let r = RowCtx {
                        schema: &schema,
                        key: &q.key,
                        pk_parts: &pk_parts,
                        ck_parts: &ck_parts,
                        row: Some(row),
                        static_row: static_row.as_ref(),
                        now_seconds: now,
                    };
                    if !c.offer(&r, &row.clustering)? {
                        break;
                    }
                }
            }
            if c.done() {
                return Ok(false);
            }
        }
        if ended {
            return Ok(true);
        }
        match next {
            None => return Ok(true),
            Some(n) => {
                // A partition the partition limit (or DISTINCT) has finished
                // is skipped whole.
                position = if c.remaining_in_partition == 0
                    && c.current_partition.as_ref() == Some(&n.key)
                {
                    Some(PagingState {
                        key: n.key,
                        last_clustering: None,
                    })
                } else {
                    Some(n)
                };
            }
        }
    }
}

/// A stored counter context that does not decode.
fn counter_corrupt(e: crate::encoding::DecodeError) -> QueryError {
    QueryError::new(
        crate::error::CqlErrorKind::ServerError,
        format!("a stored counter cannot be read: {}", e.0),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(xs: &[f32]) -> Vec<Value> {
        xs.iter().map(|x| Value::Float(*x)).collect()
    }

    /// Result types as Cassandra's `OperationFcts` picks them, Java's
    /// wrapping integer arithmetic, and durations moving timestamps and dates
    /// by calendar months (day clamped), days and time.
    #[test]
    fn arithmetic_follows_cassandra() {
        use crate::cql::ast::ArithOp::{Add, Div, Mul, Rem, Sub};
        use CqlType::*;
        assert_eq!(arith_type(Add, &Int, &Int), Some(Int));
        assert_eq!(arith_type(Add, &TinyInt, &SmallInt), Some(SmallInt));
        assert_eq!(arith_type(Mul, &Int, &BigInt), Some(BigInt));
        assert_eq!(arith_type(Add, &Int, &Float), Some(Float));
        assert_eq!(arith_type(Add, &BigInt, &Float), Some(Double));
        assert_eq!(arith_type(Sub, &Timestamp, &Duration), Some(Timestamp));
        assert_eq!(arith_type(Mul, &Timestamp, &Duration), None);
        assert_eq!(arith_type(Add, &Time, &Duration), None);
        assert_eq!(arith_type(Add, &Text, &Int), None);
        let v = |op, a, b, out: &CqlType| {
            arith_values(op, a, b, out).map_err(|e| match e {
                ArithFailure::DivideByZero => "/ by zero".to_string(),
                ArithFailure::Query(e) => e.message,
            })
        };
        assert_eq!(
            v(Mul, Value::Int(i32::MAX), Value::Int(2), &Int),
            Ok(Value::Int(-2))
        );
        assert_eq!(
            v(Div, Value::Int(7), Value::Int(2), &Int),
            Ok(Value::Int(3))
        );
        assert_eq!(
            v(Rem, Value::Int(-7), Value::Int(4), &Int),
            Ok(Value::Int(-3))
        );
        assert_eq!(
            v(Div, Value::Int(7), Value::Int(0), &Int),
            Err("/ by zero".into())
        );
        assert_eq!(
            v(Add, Value::Int(1), Value::Float(0.5), &Float),
            Ok(Value::Float(1.5))
        );
        let dur = |months, days, nanos| Value::Duration {
            months,
            days,
            nanos,
        };
        // 2024-01-31 + 1mo = 2024-02-29 (a leap year); - 2d = 2024-01-29.
        let jan31 = 1_706_659_200_000; // 2024-01-31T00:00:00Z
        assert_eq!(
            v(Add, Value::Timestamp(jan31), dur(1, 0, 0), &Timestamp),
            Ok(Value::Timestamp(1_709_164_800_000))
        );
        assert_eq!(
            v(
                Sub,
                Value::Timestamp(jan31),
                dur(0, 0, 3_600_000_000_000),
                &Timestamp
            ),
            Ok(Value::Timestamp(jan31 - 3_600_000))
        );
        let date = |days: i64| Value::Date((days + (1 << 31)) as u32);
        assert_eq!(v(Add, date(19753), dur(1, 0, 0), &Date), Ok(date(19782)));
        assert_eq!(v(Sub, date(19753), dur(0, 2, 0), &Date), Ok(date(19751)));
        assert!(v(Add, date(0), dur(0, 0, 1), &Date)
            .unwrap_err()
            .starts_with("The duration must have a day precision"));
    }

    #[test]
    fn similarities_follow_cassandra_5() {
        // The values Cassandra 5.0.9 returned for [1, 2.5, -3]
        // (tests/data/cassandra5/statements_datamodel.jsonl).
        let a = v(&[1.0, 2.5, -3.0]);
        let cos = similarity("similarity_cosine", &a, &v(&[1.0, 0.0, 0.0])).unwrap();
        assert_eq!(f64::from(cos), 0.6240347623825073);
        let same = similarity("similarity_euclidean", &a, &a).unwrap();
        assert_eq!(same, 1.0);
        let dot = similarity("similarity_dot_product", &a, &v(&[1.0, 1.0, 1.0])).unwrap();
        assert_eq!(dot, 0.75);
        let zero = similarity("similarity_cosine", &a, &v(&[0.0, 0.0, 0.0])).unwrap_err();
        assert!(zero.message.contains("all-zero"), "{}", zero.message);
        assert!(similarity("similarity_dot_product", &a, &v(&[1.0])).is_err());
    }
}
