//! Bind variables: the name and type of every `?` of a statement, as PREPARE
//! answers them, and which of them give the partition key.
//!
//! Owns Cassandra's naming of bind variables (`ColumnSpecification`s): a
//! column's own name where the marker stands for a column value, `in(k)` for
//! `k IN ?`, `partition key token` for `token(k) > ?`, `[limit]`,
//! `[per_partition_limit]`, `[ttl]`, `[timestamp]` and `[json]` for the
//! statement's parameters. Drivers bind named values by these names and
//! route by the partition key indexes.
//!
//! Invariant: every marker of a statement gets exactly one spec (a marker
//! whose type cannot be inferred is an `Invalid` error at prepare time, as in
//! Cassandra).

use crate::cql::ast::{
    Assignment, BatchStatement, Conditions, InsertValues, Operator, Relation, RelationTarget,
    Selection, Selector, Statement, Term, TypeExpr, Using,
};
use crate::schema::{ColumnKind, TableSchema};
use crate::types::CqlType;

use super::executor::Ctx;
use super::{ColumnSpec, ColumnType, QueryError, QueryOutcome};

struct Specs {
    out: Vec<Option<ColumnSpec>>,
    keyspace: String,
    table: String,
    /// The table's columns: name, type, kind.
    columns: Vec<(String, ColumnType, ColumnKind)>,
}

impl Specs {
    fn set(&mut self, index: usize, name: &str, ty: ColumnType) {
        if index >= self.out.len() {
            self.out.resize(index + 1, None);
        }
        self.out[index] = Some(ColumnSpec {
            keyspace: self.keyspace.clone(),
            table: self.table.clone(),
            name: name.to_string(),
            ty,
        });
    }

    fn column_type(&self, name: &str) -> QueryOutcome<ColumnType> {
        self.columns
            .iter()
            .find(|c| c.0 == name)
            .map(|c| c.1.clone())
            .ok_or_else(|| super::undefined_column(&self.keyspace, &self.table, name))
    }

    /// Markers inside a term whose receiver is `name` of type `ty`.
    fn term(&mut self, t: &Term, name: &str, ty: ColumnType) -> QueryOutcome<()> {
        match t {
            Term::Bind(m) => {
                let name = m
                    .name
                    .as_ref()
                    .map_or(name, |n| n.text.as_str())
                    .to_string();
                self.set(m.index, &name, ty);
                Ok(())
            }
            Term::Literal { .. } => Ok(()),
            Term::List { items, .. } | Term::Set { items, .. } | Term::Tuple { items, .. } => {
                let inner = match &ty {
                    ColumnType::List(e) | ColumnType::Set(e) => (**e).clone(),
                    other => other.clone(),
                };
                for (i, item) in items.iter().enumerate() {
                    let t = match &ty {
                        ColumnType::Tuple(types) => types.get(i).cloned().unwrap_or(inner.clone()),
                        _ => inner.clone(),
                    };
                    self.term(item, name, t)?;
                }
                Ok(())
            }
            Term::Map { entries, .. } => {
                let (kt, vt) = match &ty {
                    ColumnType::Map(k, v) => ((**k).clone(), (**v).clone()),
                    other => (other.clone(), other.clone()),
                };
                for (k, v) in entries {
                    self.term(k, name, kt.clone())?;
                    self.term(v, name, vt.clone())?;
                }
                Ok(())
            }
            Term::Udt { fields, .. } => {
                for (_, v) in fields {
                    self.term(v, name, ty.clone())?;
                }
                Ok(())
            }
            Term::Cast { ty: hint, term, .. } => {
                let hinted = match hint {
                    TypeExpr::Native(n) => CqlType::parse(n)
                        .map(ColumnType::Native)
                        .map_err(QueryError::from)?,
                    _ => ty,
                };
                self.term(term, name, hinted)
            }
            Term::Function { name: f, args, .. } => {
                let lower = f.name.text.to_ascii_lowercase();
                let arg_type = if lower == "mintimeuuid" || lower == "maxtimeuuid" {
                    Some(CqlType::Timestamp)
                } else if lower.starts_with("blobas") {
                    Some(CqlType::Blob)
                } else if let Some(t) = lower.strip_suffix("asblob") {
                    CqlType::parse(t).ok()
                } else {
                    None
                };
                for (i, a) in args.iter().enumerate() {
                    let arg_name = format!("{lower}(arg{i})");
                    match (a, arg_type.clone()) {
                        (Term::Bind(_), None) => {
                            return Err(QueryError::invalid(format!(
                                "Ambiguous call to function {lower}: use type hints for its bind markers"
                            )))
                        }
                        (_, Some(t)) => self.term(a, &arg_name, ColumnType::Native(t))?,
                        (_, None) => self.term(a, &arg_name, ColumnType::Native(CqlType::Blob))?,
                    }
                }
                Ok(())
            }
            Term::Arith { left, right, .. } => {
                self.term(left, name, ty.clone())?;
                self.term(right, name, ty)
            }
            Term::Negate { term, .. } => self.term(term, name, ty),
        }
    }

    fn relations(&mut self, relations: &[Relation]) -> QueryOutcome<()> {
        for r in relations {
            match &r.target {
                RelationTarget::Column(n) => {
                    let ty = self.column_type(&n.text)?;
                    if r.op == Operator::In {
                        if let Term::Bind(_) = r.value {
                            self.term(
                                &r.value,
                                &format!("in({})", n.text),
                                ColumnType::List(Box::new(ty)),
                            )?;
                            continue;
                        }
                    }
                    self.term(&r.value, &n.text, ty)?;
                }
                RelationTarget::Token(_) => self.term(
                    &r.value,
                    "partition key token",
                    ColumnType::Native(CqlType::BigInt),
                )?,
                RelationTarget::Columns(names) => {
                    let types: Vec<ColumnType> = names
                        .iter()
                        .map(|n| self.column_type(&n.text))
                        .collect::<QueryOutcome<_>>()?;
                    let joined = format!(
                        "({})",
                        names
                            .iter()
                            .map(|n| n.text.as_str())
                            .collect::<Vec<_>>()
                            .join(",")
                    );
                    let tuple = ColumnType::Tuple(types.clone());
                    match (&r.value, r.op) {
                        (Term::Bind(_), Operator::In) => self.term(
                            &r.value,
                            &format!("in{joined}"),
                            ColumnType::List(Box::new(tuple)),
                        )?,
                        (Term::Bind(_), _) => self.term(&r.value, &joined, tuple)?,
                        (Term::Tuple { items, .. } | Term::List { items, .. }, Operator::In) => {
                            for item in items {
                                self.tuple_items(item, names, &types, &joined)?;
                            }
                        }
                        (item, _) => self.tuple_items(item, names, &types, &joined)?,
                    }
                }
                RelationTarget::Element { column, key } => {
                    let ty = self.column_type(&column.text)?;
                    self.term(key, &column.text, ty.clone())?;
                    self.term(&r.value, &column.text, ty)?;
                }
            }
        }
        Ok(())
    }

    fn tuple_items(
        &mut self,
        item: &Term,
        names: &[crate::cql::ast::Name],
        types: &[ColumnType],
        joined: &str,
    ) -> QueryOutcome<()> {
        match item {
            Term::Tuple { items, .. } => {
                for ((t, n), ty) in items.iter().zip(names).zip(types) {
                    self.term(t, &n.text, ty.clone())?;
                }
                Ok(())
            }
            Term::Bind(_) => self.term(item, joined, ColumnType::Tuple(types.to_vec())),
            other => match (names.first(), types.first()) {
                (Some(n), Some(ty)) => self.term(other, &n.text, ty.clone()),
                _ => Ok(()),
            },
        }
    }

    fn using(&mut self, u: &Using) -> QueryOutcome<()> {
        if let Some(t) = &u.timestamp {
            self.term(t, "[timestamp]", ColumnType::Native(CqlType::BigInt))?;
        }
        if let Some(t) = &u.ttl {
            self.term(t, "[ttl]", ColumnType::Native(CqlType::Int))?;
        }
        Ok(())
    }

    fn conditions(&mut self, c: &Conditions) -> QueryOutcome<()> {
        if let Conditions::Columns(list) = c {
            for cond in list {
                let ty = self.column_type(&cond.column.text)?;
                if let Some(e) = &cond.element {
                    self.term(e, &cond.column.text, ty.clone())?;
                }
                if cond.op == Operator::In {
                    if let Term::Bind(_) = cond.value {
                        self.term(
                            &cond.value,
                            &format!("in({})", cond.column.text),
                            ColumnType::List(Box::new(ty)),
                        )?;
                        continue;
                    }
                }
                self.term(&cond.value, &cond.column.text, ty)?;
            }
        }
        Ok(())
    }

    fn selector(&mut self, s: &Selector) -> QueryOutcome<()> {
        match s {
            Selector::Term(t) => self.term(t, "[selection]", ColumnType::Native(CqlType::Blob)),
            Selector::Function { args, .. } => {
                for a in args {
                    self.selector(a)?;
                }
                Ok(())
            }
            Selector::Cast { selector, .. }
            | Selector::Field { selector, .. }
            | Selector::Negate { selector, .. } => self.selector(selector),
            Selector::Element { selector, key, .. } => {
                self.selector(selector)?;
                self.term(key, "[element]", ColumnType::Native(CqlType::Blob))
            }
            Selector::Slice {
                selector, from, to, ..
            } => {
                self.selector(selector)?;
                for t in [from, to].into_iter().flatten() {
                    self.term(t, "[element]", ColumnType::Native(CqlType::Blob))?;
                }
                Ok(())
            }
            Selector::Arith { left, right, .. } => {
                self.selector(left)?;
                self.selector(right)
            }
            Selector::WriteTime { column, .. }
            | Selector::MaxWriteTime { column, .. }
            | Selector::Ttl { column, .. } => self.selector(column),
            Selector::Column(_) | Selector::Star { .. } => Ok(()),
        }
    }

    fn modification(&mut self, s: &BatchStatement) -> QueryOutcome<()> {
        match s {
            BatchStatement::Insert(i) => {
                match &i.values {
                    InsertValues::Values { columns, values } => {
                        for (c, v) in columns.iter().zip(values) {
                            let ty = self.column_type(&c.text)?;
                            self.term(v, &c.text, ty)?;
                        }
                    }
                    InsertValues::Json { document, .. } => {
                        self.term(document, "[json]", ColumnType::Native(CqlType::Text))?
                    }
                }
                self.using(&i.using)
            }
            BatchStatement::Update(u) => {
                self.using(&u.using)?;
                for a in &u.assignments {
                    match a {
                        Assignment::Subtract { column, value } => {
                            // `m - {k, ...}` takes a set of the map's keys.
                            let ty = match self.column_type(&column.text)? {
                                ColumnType::Map(k, _) => ColumnType::Set(k),
                                ty => ty,
                            };
                            self.term(value, &column.text, ty)?;
                        }
                        Assignment::Set { column, value }
                        | Assignment::Add { column, value }
                        | Assignment::Prepend { column, value } => {
                            let ty = self.column_type(&column.text)?;
                            self.term(value, &column.text, ty)?;
                        }
                        Assignment::SetElement { column, key, value } => {
                            let ty = self.column_type(&column.text)?;
                            let (k, v) = element_receivers(&column.text, ty);
                            self.term(key, &k.0, k.1)?;
                            self.term(value, &v.0, v.1)?;
                        }
                        Assignment::SetField {
                            column,
                            field,
                            value,
                        } => {
                            let ty = match self.column_type(&column.text)? {
                                ColumnType::Udt { fields, .. } => fields
                                    .into_iter()
                                    .find(|(f, _)| *f == field.text)
                                    .map(|(_, t)| t),
                                _ => None,
                            };
                            if let Some(ty) = ty {
                                self.term(value, &format!("{}.{}", column.text, field.text), ty)?;
                            }
                        }
                    }
                }
                self.relations(&u.where_clause)?;
                self.conditions(&u.conditions)
            }
            BatchStatement::Delete(d) => {
                for del in &d.columns {
                    if let crate::cql::ast::Deletion::Element { column, key } = del {
                        let ty = self.column_type(&column.text)?;
                        let (k, _) = element_receivers(&column.text, ty);
                        self.term(key, &k.0, k.1)?;
                    }
                }
                self.using(&d.using)?;
                self.relations(&d.where_clause)?;
                self.conditions(&d.conditions)
            }
        }
    }
}

/// The receivers of `col[key]` and of the element's value, named as
/// Cassandra names them: `idx(l)`/`value(l)` for a list, `key(m)`/`value(m)`
/// for a map, the element itself for a set.
fn element_receivers(col: &str, ty: ColumnType) -> ((String, ColumnType), (String, ColumnType)) {
    match ty {
        ColumnType::List(e) => (
            (format!("idx({col})"), ColumnType::Native(CqlType::Int)),
            (format!("value({col})"), *e),
        ),
        ColumnType::Map(k, v) => ((format!("key({col})"), *k), (format!("value({col})"), *v)),
        ColumnType::Set(e) => ((col.to_string(), (*e).clone()), (col.to_string(), *e)),
        ty => ((col.to_string(), ty.clone()), (col.to_string(), ty)),
    }
}

/// A table's columns: name, type, kind.
type Columns = Vec<(String, ColumnType, ColumnKind)>;

/// A table's keyspace, name and columns, user or system.
fn table_of(
    ctx: &Ctx<'_>,
    qn: &crate::cql::ast::QualifiedName,
) -> QueryOutcome<(String, String, Columns)> {
    let ks = ctx.keyspace_of(qn)?;
    if super::system::is_system_keyspace(&ks) {
        let columns = super::system::virtual_columns(&ks, &qn.name.text)?;
        return Ok((ks, qn.name.text.clone(), columns));
    }
    let table = ctx.exec.table(&ks, &qn.name.text)?;
    let schema: std::sync::Arc<TableSchema> = table.schema();
    let columns = schema
        .columns
        .iter()
        .map(|c| (c.name.clone(), ColumnType::of(&c.ty), c.kind))
        .collect();
    Ok((ks, qn.name.text.clone(), columns))
}

/// The bind variables of `stmt`, in marker order.
pub(crate) fn specs(ctx: &Ctx<'_>, stmt: &Statement) -> QueryOutcome<Vec<ColumnSpec>> {
    let mut all: Vec<Option<ColumnSpec>> = Vec::new();
    fn run(
        ctx: &Ctx<'_>,
        all: &mut Vec<Option<ColumnSpec>>,
        qn: &crate::cql::ast::QualifiedName,
        f: &mut dyn FnMut(&mut Specs) -> QueryOutcome<()>,
    ) -> QueryOutcome<()> {
        let (ks, t, columns) = table_of(ctx, qn)?;
        let mut s = Specs {
            out: std::mem::take(all),
            keyspace: ks,
            table: t,
            columns,
        };
        let r = f(&mut s);
        *all = s.out;
        r
    }
    match stmt {
        Statement::Select(sel) => run(ctx, &mut all, &sel.table, &mut |s| {
            if let Selection::Items(items) = &sel.selection {
                for i in items {
                    s.selector(&i.selector)?;
                }
            }
            s.relations(&sel.where_clause)?;
            if let Some(t) = &sel.per_partition_limit {
                s.term(t, "[per_partition_limit]", ColumnType::Native(CqlType::Int))?;
            }
            if let Some(t) = &sel.limit {
                s.term(t, "[limit]", ColumnType::Native(CqlType::Int))?;
            }
            Ok(())
        })?,
        Statement::Insert(i) => run(ctx, &mut all, &i.table, &mut |s| {
            s.modification(&BatchStatement::Insert((**i).clone()))
        })?,
        Statement::Update(u) => run(ctx, &mut all, &u.table, &mut |s| {
            s.modification(&BatchStatement::Update((**u).clone()))
        })?,
        Statement::Delete(d) => run(ctx, &mut all, &d.table, &mut |s| {
            s.modification(&BatchStatement::Delete((**d).clone()))
        })?,
        Statement::Batch(b) => {
            if let Some(t) = &b.using.timestamp {
                let mut s = Specs {
                    out: std::mem::take(&mut all),
                    keyspace: String::new(),
                    table: String::new(),
                    columns: Vec::new(),
                };
                s.term(t, "[timestamp]", ColumnType::Native(CqlType::BigInt))?;
                all = s.out;
            }
            for st in &b.statements {
                let qn = match st {
                    BatchStatement::Insert(i) => &i.table,
                    BatchStatement::Update(u) => &u.table,
                    BatchStatement::Delete(d) => &d.table,
                };
                run(ctx, &mut all, qn, &mut |s| s.modification(st))?;
            }
        }
        _ => {}
    }
    all.into_iter()
        .enumerate()
        .map(|(i, s)| {
            s.ok_or_else(|| {
                QueryError::invalid(format!("Cannot infer the type of bind marker {i}"))
            })
        })
        .collect()
}

/// Which markers give the partition key, in key order: drivers hash them to
/// route the statement. Empty unless every partition key column is bound by
/// `= ?` (or given as `?` in an INSERT).
pub(crate) fn pk_indexes(ctx: &Ctx<'_>, stmt: &Statement) -> QueryOutcome<Vec<u16>> {
    let (qn, found): (&crate::cql::ast::QualifiedName, Vec<(String, usize)>) = match stmt {
        Statement::Select(s) => (&s.table, eq_markers(&s.where_clause)),
        Statement::Update(u) => (&u.table, eq_markers(&u.where_clause)),
        Statement::Delete(d) => (&d.table, eq_markers(&d.where_clause)),
        Statement::Insert(i) => match &i.values {
            InsertValues::Values { columns, values } => (
                &i.table,
                columns
                    .iter()
                    .zip(values)
                    .filter_map(|(c, v)| match v {
                        Term::Bind(m) => Some((c.text.clone(), m.index)),
                        _ => None,
                    })
                    .collect(),
            ),
            InsertValues::Json { .. } => return Ok(Vec::new()),
        },
        _ => return Ok(Vec::new()),
    };
    let (_, _, columns) = table_of(ctx, qn)?;
    let mut out = Vec::new();
    for (name, _, _) in columns.iter().filter(|c| c.2 == ColumnKind::PartitionKey) {
        match found.iter().find(|(n, _)| n == name) {
            Some((_, i)) => out.push(u16::try_from(*i).unwrap_or(u16::MAX)),
            None => return Ok(Vec::new()),
        }
    }
    Ok(out)
}

fn eq_markers(relations: &[Relation]) -> Vec<(String, usize)> {
    relations
        .iter()
        .filter_map(|r| match (&r.target, r.op, &r.value) {
            (RelationTarget::Column(n), Operator::Eq, Term::Bind(m)) => {
                Some((n.text.clone(), m.index))
            }
            _ => None,
        })
        .collect()
}
