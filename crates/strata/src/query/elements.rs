//! Element operations on complex columns (non-frozen lists, sets, maps and
//! UDTs) in UPDATE and DELETE, with Cassandra's semantics and messages.
//!
//! Contract:
//! 1. Each operation writes element cells only (`crate::complex` paths); a
//!    whole-value assignment (`c = ...`) is not an element operation and goes
//!    through the schema's overwrite (complex deletion at `timestamp - 1`).
//! 2. `s + {...}`, `m + {...}`, `m[k] = v`, `l + [...]`, `[...] + l`, `u.f = v`
//!    write without reading; `s - {...}`, `m - {...}`, `DELETE s[x]`,
//!    `DELETE m[k]`, `m[k] = null`, `DELETE u.f` write element tombstones
//!    without reading; `l[i] = v`, `DELETE l[i]` and `l - [...]` read the
//!    current list first (Cassandra's read-before-write list operations).
//! 3. A null collection operand adds or removes nothing; an unset one leaves
//!    the column alone; a null map key or list index is refused.

use std::sync::Arc;

use crate::cql::ast::{Assignment, Deletion, Term};
use crate::data::{ClusteringBound, ClusteringRange, DecoratedKey};
use crate::schema::{ColumnDef, ColumnKind, ElementWrite, TableSchema};
use crate::table::Table;
use crate::types::{self, CqlType, Value};

use super::values::{self, Bound, Eval};
use super::{QueryError, QueryOutcome};

fn invalid(msg: impl Into<String>) -> QueryError {
    QueryError::invalid(msg)
}

/// One evaluated element operation.
pub(crate) struct ElementOp<'s> {
    pub col: &'s ColumnDef,
    kind: OpKind,
}

/// Element cells by path: a serialized value, or `None` to delete.
type Cells = Vec<(Vec<u8>, Option<Vec<u8>>)>;

enum OpKind {
    /// Cells put as they are (set add, map put, UDT field), or deleted.
    Cells(Cells),
    /// List elements appended or prepended: paths chosen when written.
    Append(Vec<Vec<u8>>),
    Prepend(Vec<Vec<u8>>),
    /// `l[i] = v` (`setting`; a null `v` deletes) or `DELETE l[i]`: read first.
    Index {
        index: i32,
        value: Option<Vec<u8>>,
        setting: bool,
    },
    /// `l - [...]`: elements equal to one of these are removed (read first).
    RemoveValues(Vec<Vec<u8>>),
}

impl ElementOp<'_> {
    /// Whether this operation reads the current list first.
    pub fn reads(&self) -> bool {
        matches!(self.kind, OpKind::Index { .. } | OpKind::RemoveValues(_))
    }
}

fn element_type(ty: &CqlType) -> CqlType {
    match ty {
        CqlType::List { element, .. } | CqlType::Set { element, .. } => (**element).clone(),
        CqlType::Map { value, .. } => (**value).clone(),
        other => other.clone(),
    }
}

fn frozen_set_of(element: &Arc<CqlType>) -> CqlType {
    CqlType::Set {
        element: Arc::clone(element),
        frozen: true,
    }
}

/// The column an assignment names, or `None` when it assigns a whole value.
pub(crate) fn assignment_column(a: &Assignment) -> Option<&crate::cql::ast::Name> {
    match a {
        Assignment::Set { .. } => None,
        Assignment::Add { column, .. }
        | Assignment::Subtract { column, .. }
        | Assignment::Prepend { column, .. }
        | Assignment::SetElement { column, .. }
        | Assignment::SetField { column, .. } => Some(column),
    }
}

/// Plans an element assignment on `col`, a complex column. `Ok(None)`: an
/// unset or null operand that changes nothing (contract 3).
pub(crate) fn assignment<'s>(
    col: &'s ColumnDef,
    a: &Assignment,
    eval: &Eval<'_>,
) -> QueryOutcome<Option<ElementOp<'s>>> {
    let ty = &col.ty;
    let name = col.name.as_str();
    let kind = match (a, ty) {
        (Assignment::Add { value, .. }, CqlType::Set { .. } | CqlType::Map { .. }) => {
            let bound = values::scalar(value, ty, name, eval).map_err(|e| {
                // Cassandra reports any map operand it cannot take so.
                if matches!(ty, CqlType::Map { .. }) {
                    invalid(format!(
                        "Value for a map addition has to be a map, but was: '{value}'"
                    ))
                } else {
                    e
                }
            })?;
            match bound {
                Bound::Value(v) => OpKind::Cells(whole_cells(ty, &v)?),
                Bound::Null | Bound::Unset => return Ok(None),
            }
        }
        (
            Assignment::Add { value, .. } | Assignment::Prepend { value, .. },
            CqlType::List { .. },
        ) => {
            let items = match values::scalar(value, ty, name, eval)? {
                Bound::Value(Value::List(items)) => items,
                _ => return Ok(None),
            };
            let items = items.iter().map(types::serialize).collect();
            if matches!(a, Assignment::Add { .. }) {
                OpKind::Append(items)
            } else {
                OpKind::Prepend(items)
            }
        }
        (Assignment::Subtract { value, .. }, CqlType::Set { element, .. })
        | (Assignment::Subtract { value, .. }, CqlType::Map { key: element, .. }) => {
            match values::scalar(value, &frozen_set_of(element), name, eval)? {
                Bound::Value(Value::Set(keys)) => OpKind::Cells(
                    keys.iter()
                        .map(|k| (types::element_path(k), None))
                        .collect(),
                ),
                _ => return Ok(None),
            }
        }
        (Assignment::Subtract { value, .. }, CqlType::List { .. }) => {
            match values::scalar(value, ty, name, eval)? {
                Bound::Value(Value::List(items)) => {
                    OpKind::RemoveValues(items.iter().map(types::serialize).collect())
                }
                _ => return Ok(None),
            }
        }
        (Assignment::SetElement { key, value, .. }, CqlType::Map { key: key_ty, .. }) => {
            let k = map_key(key, key_ty, name, eval)?;
            let v = element_value(value, &element_type(ty), name, eval)?;
            match v {
                Some(v) => OpKind::Cells(vec![(types::element_path(&k), v)]),
                None => return Ok(None),
            }
        }
        (Assignment::SetElement { key, value, .. }, CqlType::List { .. }) => {
            let i = list_index(key, name, eval)?;
            match element_value(value, &element_type(ty), name, eval)? {
                Some(value) => OpKind::Index {
                    index: i,
                    value,
                    setting: true,
                },
                None => return Ok(None),
            }
        }
        (Assignment::SetField { field, value, .. }, CqlType::Udt { def, .. }) => {
            let position = field_position(def, field, name)?;
            let field_ty = &def.fields[position].1;
            match element_value(value, field_ty, name, eval)? {
                Some(v) => OpKind::Cells(vec![(crate::complex::field_path(position), v)]),
                None => return Ok(None),
            }
        }
        (Assignment::SetField { .. }, _) => {
            return Err(invalid(format!(
                "Invalid operation ({a}) for non-UDT column {name}"
            )))
        }
        (Assignment::SetElement { .. }, CqlType::Set { .. }) => {
            return Err(invalid(format!(
                "Invalid operation ({a}) for set column {name}"
            )))
        }
        _ => {
            return Err(invalid(format!(
                "Invalid operation ({a}) for non counter column {name}"
            )))
        }
    };
    Ok(Some(ElementOp { col, kind }))
}

/// Plans the deletion of one element or field of `col`, a complex column.
pub(crate) fn deletion<'s>(
    col: &'s ColumnDef,
    d: &Deletion,
    eval: &Eval<'_>,
) -> QueryOutcome<Option<ElementOp<'s>>> {
    let name = col.name.as_str();
    let kind = match (d, &col.ty) {
        (Deletion::Element { key, .. }, CqlType::Map { key: key_ty, .. }) => {
            let k = map_key(key, key_ty, name, eval)?;
            OpKind::Cells(vec![(types::element_path(&k), None)])
        }
        (Deletion::Element { key, .. }, CqlType::Set { element, .. }) => {
            match values::scalar(key, element, name, eval)? {
                Bound::Value(v) => OpKind::Cells(vec![(types::element_path(&v), None)]),
                Bound::Null => return Err(invalid("Invalid null set element")),
                Bound::Unset => return Ok(None),
            }
        }
        (Deletion::Element { key, .. }, CqlType::List { .. }) => OpKind::Index {
            index: list_index(key, name, eval)?,
            value: None,
            setting: false,
        },
        (Deletion::Field { field, .. }, CqlType::Udt { def, .. }) => {
            let position = field_position(def, field, name)?;
            OpKind::Cells(vec![(crate::complex::field_path(position), None)])
        }
        (Deletion::Element { .. }, _) => {
            return Err(invalid(format!(
                "Invalid deletion operation for non collection column {name}"
            )))
        }
        _ => {
            return Err(invalid(format!(
                "Invalid deletion operation for non-UDT column {name}"
            )))
        }
    };
    Ok(Some(ElementOp { col, kind }))
}

/// The element cells of a whole set or map value added.
fn whole_cells(ty: &CqlType, v: &Value) -> QueryOutcome<Cells> {
    Ok(crate::complex::element_cells(ty, v, 0)
        .map_err(QueryError::from)?
        .into_iter()
        .map(|(p, v)| (p, Some(v)))
        .collect())
}

/// The position of `field` in UDT column `name`'s type.
fn field_position(
    def: &crate::types::UdtDef,
    field: &crate::cql::ast::Name,
    name: &str,
) -> QueryOutcome<usize> {
    def.fields
        .iter()
        .position(|(f, _)| *f == field.text)
        .ok_or_else(|| {
            invalid(format!(
                "UDT column {name} does not have a field named {}",
                field.text
            ))
        })
}

fn map_key(key: &Term, ty: &CqlType, name: &str, eval: &Eval<'_>) -> QueryOutcome<Value> {
    match values::scalar(key, ty, &format!("key({name})"), eval)? {
        Bound::Value(v) => Ok(v),
        Bound::Null => Err(invalid("Invalid null map key")),
        Bound::Unset => Err(invalid("Invalid unset map key")),
    }
}

fn list_index(key: &Term, name: &str, eval: &Eval<'_>) -> QueryOutcome<i32> {
    match values::scalar(key, &CqlType::Int, &format!("idx({name})"), eval)? {
        Bound::Value(Value::Int(i)) => Ok(i),
        Bound::Unset => Err(invalid("Invalid unset value for list index")),
        _ => Err(invalid("Invalid null value for list index")),
    }
}

/// An element's new value: `Some(Some(bytes))` puts it, `Some(None)` (null)
/// deletes it, `None` (unset) leaves it alone.
fn element_value(
    value: &Term,
    ty: &CqlType,
    name: &str,
    eval: &Eval<'_>,
) -> QueryOutcome<Option<Option<Vec<u8>>>> {
    Ok(
        match values::scalar(value, ty, &format!("value({name})"), eval)? {
            Bound::Value(v) => Some(Some(types::serialize(&v))),
            Bound::Null => Some(None),
            Bound::Unset => None,
        },
    )
}

/// The element writes of `ops` on one row, reading the current list for the
/// operations that need it (contract 2).
pub(crate) fn writes<'o>(
    ops: &'o [ElementOp<'_>],
    table: &Table,
    schema: &TableSchema,
    (pk, clustering): (&[Value], &[Value]),
    now_micros: i64,
) -> QueryOutcome<Vec<ElementWrite<'o>>> {
    let current = if ops.iter().any(ElementOp::reads) {
        let key = schema.decorated_key(pk).map_err(QueryError::from)?;
        Some(read_row(table, schema, &key, clustering)?)
    } else {
        None
    };
    let mut out = Vec::new();
    for op in ops {
        let column = op.col.name.as_str();
        let mut put = |path: Vec<u8>, value: Option<Vec<u8>>| {
            out.push(ElementWrite {
                column,
                path,
                value,
            })
        };
        match &op.kind {
            OpKind::Cells(cells) => {
                for (path, value) in cells {
                    put(path.clone(), value.clone());
                }
            }
            OpKind::Append(items) | OpKind::Prepend(items) => {
                let paths = if matches!(op.kind, OpKind::Append(_)) {
                    crate::complex::append_paths(now_micros, items.len())
                } else {
                    crate::complex::prepend_paths(now_micros, items.len())
                };
                for (path, value) in paths.into_iter().zip(items) {
                    put(path, Some(value.clone()));
                }
            }
            OpKind::Index {
                index: i,
                value,
                setting,
            } => {
                let list = list_cells(current.as_ref(), op.col);
                if list.is_empty() {
                    return Err(invalid(if *setting {
                        "Attempted to set an element on a list which is null"
                    } else {
                        "Attempted to delete an element from a list which is null"
                    }));
                }
                let Some((path, _)) = usize::try_from(*i).ok().and_then(|i| list.get(i)) else {
                    return Err(invalid(format!(
                        "List index {i} out of bound, list has size {}",
                        list.len()
                    )));
                };
                put(path.to_vec(), value.clone());
            }
            OpKind::RemoveValues(values) => {
                for (path, v) in list_cells(current.as_ref(), op.col) {
                    if values.iter().any(|x| x.as_slice() == v) {
                        put(path.to_vec(), None);
                    }
                }
            }
        }
    }
    Ok(out)
}

/// The current row (or static row) holding the columns a list operation
/// reads, as a live view; empty when there is none.
struct Current {
    row: Option<crate::data::Row>,
    static_row: Option<crate::data::Row>,
}

fn read_row(
    table: &Table,
    schema: &TableSchema,
    key: &DecoratedKey,
    clustering: &[Value],
) -> QueryOutcome<Current> {
    let range = if clustering.is_empty() {
        // Static columns only: the static row comes with any read.
        ClusteringRange::ALL
    } else {
        let enc = schema
            .encode_clustering(clustering)
            .map_err(QueryError::from)?;
        ClusteringRange {
            start: ClusteringBound::inclusive(enc.clone()),
            end: ClusteringBound::inclusive(enc),
        }
    };
    let read = table
        .read(key, &range, false, 1)
        .map_err(QueryError::from)?;
    Ok(Current {
        row: read.rows.into_iter().next(),
        static_row: read.static_row,
    })
}

/// A list column's live elements (path, serialized value) in list order.
fn list_cells<'c>(current: Option<&'c Current>, col: &ColumnDef) -> Vec<(&'c [u8], &'c [u8])> {
    let row = current.and_then(|c| {
        if col.kind == ColumnKind::Static {
            c.static_row.as_ref()
        } else {
            c.row.as_ref()
        }
    });
    match (row, col.id) {
        (Some(row), Some(id)) => crate::complex::paths_and_values(row, id).collect(),
        _ => Vec::new(),
    }
}
