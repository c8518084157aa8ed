//! WHERE clauses: which partitions and which clustering ranges a statement
//! reads or writes, and which rows it must filter.
//!
//! Owns Cassandra's restriction rules (`StatementRestrictions`): a partition is
//! named by `=` or `IN` on every partition key column, or the partitions are a
//! `token()` range, or all of them (a scan); clustering columns are restricted
//! as a prefix of `=`/`IN` followed by at most one slice (single-column or a
//! tuple); anything else is a filter, which needs `ALLOW FILTERING` in a
//! SELECT and is refused in a write.
//!
//! Two steps: [`analyze`] checks the relations against the schema once (at
//! prepare time), [`Restrictions::partition_keys`] and
//! [`Restrictions::clustering_ranges`] evaluate them with a request's values.
//!
//! Invariants:
//! 1. Clustering ranges come out in storage order, disjoint and non-empty, so a
//!    forward read visits them in order and a reversed read in reverse.
//! 2. A multi-column slice `(a, b) > (x, y)` is Cassandra's lexicographic
//!    comparison in each column's *type* order, whatever its clustering order:
//!    it is decomposed into single-column slices (`a > x`, or `a = x AND b > y`),
//!    each a contiguous range in storage order.
//! 3. Comparisons of values use the byte-comparable encoding
//!    (`types::encode_comparable`), which is Cassandra's type order, equality
//!    included (decimal `1.5` equals `1.50`).

use std::cmp::Ordering;

use crate::cql::ast::{Operator, Relation, RelationTarget, Term};
use crate::data::{ClusteringBound, ClusteringRange};
use crate::schema::{ColumnDef, ColumnKind, TableSchema};
use crate::types::{self, CqlType, Value};

use super::values::{self, Bound, Eval};
use super::{QueryError, QueryOutcome};

/// The values a key column may take: one term, a list of terms, or a bind
/// marker standing for the whole list.
#[derive(Clone, Debug)]
pub(crate) enum Candidates {
    Eq(Term),
    In(Vec<Term>),
    InMarker(usize),
}

/// One end of a `token()` range: the bound's term and whether it is
/// inclusive.
pub(crate) type TokenBound = Option<(Term, bool)>;
/// A token range evaluated: each end `(token, inclusive)`.
pub(crate) type TokenRange = (Option<(i64, bool)>, Option<(i64, bool)>);

/// How a statement selects partitions.
#[derive(Clone, Debug)]
pub(crate) enum PartitionRestriction {
    /// Each partition key column, in key order: its candidates.
    Keys(Vec<Candidates>),
    /// `token(pk) > a AND token(pk) <= b`: each bound `(term, inclusive)`.
    Token {
        start: Box<TokenBound>,
        end: Box<TokenBound>,
    },
    /// Every partition (a scan).
    All,
}

/// One end of a slice: the tuple of terms (one for a single-column slice) or
/// a bind marker standing for the tuple, and whether it is inclusive.
#[derive(Clone, Debug)]
pub(crate) struct SliceBound {
    pub terms: TupleTerms,
    pub inclusive: bool,
}

#[derive(Clone, Debug)]
pub(crate) enum TupleTerms {
    Terms(Vec<Term>),
    /// A marker bound to a serialized tuple of this many elements.
    Marker {
        index: usize,
        arity: usize,
    },
}

/// The clustering restriction: `=`/`IN` on a prefix, then an optional slice.
#[derive(Clone, Debug, Default)]
pub(crate) struct ClusteringRestriction {
    /// One entry per restricted prefix column, in clustering order. A
    /// multi-column `=` or `IN` covers several columns at once.
    pub prefix: Vec<PrefixPart>,
    /// Slice starting at the column after the prefix.
    pub slice: Option<(Option<SliceBound>, Option<SliceBound>)>,
}

#[derive(Clone, Debug)]
pub(crate) enum PrefixPart {
    /// A single column's candidates.
    Column(Candidates),
    /// `(c1, c2) = (..)` or `IN ((..), (..))` / `IN ?`: `arity` columns at once.
    Tuples {
        arity: usize,
        tuples: Vec<TupleTerms>,
        in_marker: Option<usize>,
    },
}

impl PrefixPart {
    fn arity(&self) -> usize {
        match self {
            PrefixPart::Column(_) => 1,
            PrefixPart::Tuples { arity, .. } => *arity,
        }
    }
}

/// A row filter (ALLOW FILTERING): `column op term`.
#[derive(Clone, Debug)]
pub(crate) struct Filter {
    pub column: String,
    pub kind: ColumnKind,
    pub ty: CqlType,
    /// For a clustering or partition key column: its position.
    pub position: usize,
    pub op: Operator,
    pub value: Term,
}

/// The analysed WHERE clause of one statement on one table.
#[derive(Clone, Debug)]
pub(crate) struct Restrictions {
    pub partition: PartitionRestriction,
    /// A `token()` range beside `=`/`IN` on the whole partition key (allowed,
    /// as in Cassandra): the named keys outside it are left out.
    pub key_token_filter: Option<(TokenBound, TokenBound)>,
    pub clustering: ClusteringRestriction,
    pub filters: Vec<Filter>,
}

fn invalid(msg: impl Into<String>) -> QueryError {
    QueryError::invalid(msg)
}

/// What the statement is, for the rules that differ between reads and writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Purpose {
    Select {
        allow_filtering: bool,
    },
    /// UPDATE and INSERT-like writes: full primary key (clustering may stop
    /// early only for static-only updates, checked by the caller).
    Update,
    /// DELETE: clustering may be a prefix or a slice (range tombstones).
    Delete,
}

fn column<'s>(schema: &'s TableSchema, name: &str) -> QueryOutcome<&'s ColumnDef> {
    schema
        .columns
        .iter()
        .find(|c| c.name == name)
        .ok_or_else(|| super::undefined_column(&schema.keyspace, &schema.name, name))
}

/// Checks `relations` against `schema` (at prepare time).
pub(crate) fn analyze(
    schema: &TableSchema,
    relations: &[Relation],
    purpose: Purpose,
) -> QueryOutcome<Restrictions> {
    let pk: Vec<&ColumnDef> = schema
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::PartitionKey)
        .collect();
    let ck: Vec<&ColumnDef> = schema
        .columns
        .iter()
        .filter(|c| c.kind == ColumnKind::Clustering)
        .collect();
    let mut pk_candidates: Vec<Option<Candidates>> = vec![None; pk.len()];
    let mut token: (TokenBound, TokenBound) = (None, None);
    let mut has_token = false;
    // Per clustering column: its single-column restrictions.
    let mut ck_eq: Vec<Option<Candidates>> = vec![None; ck.len()];
    let mut ck_slices: Vec<(Option<SliceBound>, Option<SliceBound>)> = vec![(None, None); ck.len()];
    // Multi-column restrictions: (first column, part) and slices.
    let mut multi_eq: Vec<(usize, PrefixPart)> = Vec::new();
    let mut multi_slice: Option<(usize, Option<SliceBound>, Option<SliceBound>)> = None;
    let mut filters = Vec::new();
    // Non-key columns in the WHERE of a write: refused after the key checks,
    // which Cassandra reports first.
    let mut non_key: Vec<String> = Vec::new();
    let allow_filtering = matches!(
        purpose,
        Purpose::Select {
            allow_filtering: true
        }
    );

    for r in relations {
        match &r.target {
            RelationTarget::Token(names) => {
                let expected: Vec<&str> = pk.iter().map(|c| c.name.as_str()).collect();
                let given: Vec<&str> = names.iter().map(|n| n.text.as_str()).collect();
                if given.len() != expected.len() || !given.iter().all(|g| expected.contains(g)) {
                    return Err(invalid(
                        "The token() function must be applied to all partition key components or none of them",
                    ));
                }
                if given != expected {
                    return Err(invalid(format!(
                        "The token function arguments must be in the partition key order: {}",
                        expected.join(", ")
                    )));
                }
                if !matches!(purpose, Purpose::Select { .. }) {
                    return Err(invalid(
                        "The token function cannot be used in WHERE clauses for UPDATE and DELETE statements",
                    ));
                }
                has_token = true;
                match r.op {
                    Operator::Gt | Operator::Gte => {
                        if token.0.is_some() {
                            return Err(invalid(
                                "More than one restriction was found for the start bound on token",
                            ));
                        }
                        token.0 = Some((r.value.clone(), r.op == Operator::Gte));
                    }
                    Operator::Lt | Operator::Lte => {
                        if token.1.is_some() {
                            return Err(invalid(
                                "More than one restriction was found for the end bound on token",
                            ));
                        }
                        token.1 = Some((r.value.clone(), r.op == Operator::Lte));
                    }
                    Operator::Eq => {
                        token.0 = Some((r.value.clone(), true));
                        token.1 = Some((r.value.clone(), true));
                    }
                    op => {
                        return Err(invalid(format!(
                            "{} is not a supported operator for token restrictions",
                            op_name(op)
                        )))
                    }
                }
            }
            RelationTarget::Column(name) => {
                let col = column(schema, &name.text)?;
                if col.ty == CqlType::Duration
                    && matches!(
                        r.op,
                        Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte
                    )
                {
                    return Err(invalid(
                        "Slice restrictions are not supported on duration columns",
                    ));
                }
                match col.kind {
                    ColumnKind::PartitionKey => {
                        let slot = &mut pk_candidates[col.position];
                        match r.op {
                            Operator::Eq | Operator::In if slot.is_none() => {
                                *slot = Some(candidates(r)?);
                            }
                            Operator::Eq | Operator::In => {
                                return Err(invalid(format!(
                                    "{} cannot be restricted by more than one relation if it includes an Equal",
                                    col.name
                                )))
                            }
                                                        _ => match purpose {
                                Purpose::Select { allow_filtering: true } => {
                                    filters.push(filter(col, r)?)
                                }
                                Purpose::Select { .. } => return Err(filtering_needed()),
                                Purpose::Update | Purpose::Delete => {
                                    return Err(invalid(format!(
                                        "Only EQ and IN relation are supported on the partition key (unless you use the token() function) for {} statements",
                                        if purpose == Purpose::Update { "UPDATE" } else { "DELETE" }
                                    )))
                                }
                            },
                        }
                    }
                    ColumnKind::Clustering => match r.op {
                        Operator::Eq | Operator::In => {
                            if ck_eq[col.position].is_some()
                                || ck_slices[col.position].0.is_some()
                                || ck_slices[col.position].1.is_some()
                            {
                                return Err(invalid(format!(
                                    "{} cannot be restricted by more than one relation if it includes an Equal",
                                    col.name
                                )));
                            }
                            ck_eq[col.position] = Some(candidates(r)?);
                        }
                        Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => {
                            if ck_eq[col.position].is_some() {
                                return Err(invalid(format!(
                                    "{} cannot be restricted by more than one relation if it includes an Equal",
                                    col.name
                                )));
                            }
                            let b = SliceBound {
                                terms: TupleTerms::Terms(vec![r.value.clone()]),
                                inclusive: matches!(r.op, Operator::Gte | Operator::Lte),
                            };
                            let s = &mut ck_slices[col.position];
                            let slot = if matches!(r.op, Operator::Gt | Operator::Gte) {
                                &mut s.0
                            } else {
                                &mut s.1
                            };
                            if slot.is_some() {
                                return Err(invalid(format!(
                                    "More than one restriction was found for the {} bound on {}",
                                    if matches!(r.op, Operator::Gt | Operator::Gte) {
                                        "start"
                                    } else {
                                        "end"
                                    },
                                    col.name
                                )));
                            }
                            *slot = Some(b);
                        }
                        _ => {
                            if !allow_filtering {
                                return Err(filtering_needed());
                            }
                            filters.push(filter(col, r)?);
                        }
                    },
                    ColumnKind::Regular | ColumnKind::Static => match purpose {
                        Purpose::Select { allow_filtering } => {
                            if !allow_filtering {
                                return Err(filtering_needed());
                            }
                            filters.push(filter(col, r)?);
                        }
                        _ => non_key.push(col.name.clone()),
                    },
                }
            }
            RelationTarget::Columns(names) => {
                let cols: Vec<&ColumnDef> = names
                    .iter()
                    .map(|n| column(schema, &n.text))
                    .collect::<QueryOutcome<_>>()?;
                let first = match cols.first() {
                    Some(c) if c.kind == ColumnKind::Clustering => c.position,
                    _ => {
                        return Err(invalid(
                            "Multi-column relations can only be applied to clustering columns",
                        ))
                    }
                };
                for (i, c) in cols.iter().enumerate() {
                    if c.kind != ColumnKind::Clustering {
                        return Err(invalid(format!(
                            "Multi-column relations can only be applied to clustering columns but was applied to: {}",
                            c.name
                        )));
                    }
                    if c.position != first + i {
                        return Err(invalid(format!(
                            "Clustering columns must appear in the PRIMARY KEY order in multi-column relations: {}",
                            names.iter().map(|n| n.text.as_str()).collect::<Vec<_>>().join(", ")
                        )));
                    }
                }
                let arity = cols.len();
                match r.op {
                    Operator::Eq => multi_eq.push((
                        first,
                        PrefixPart::Tuples {
                            arity,
                            tuples: vec![tuple_terms(&r.value, arity)?],
                            in_marker: None,
                        },
                    )),
                    Operator::In => {
                        let part = match &r.value {
                            Term::Bind(m) => PrefixPart::Tuples {
                                arity,
                                tuples: Vec::new(),
                                in_marker: Some(m.index),
                            },
                            Term::Tuple { items, .. } | Term::List { items, .. } => {
                                PrefixPart::Tuples {
                                    arity,
                                    tuples: items
                                        .iter()
                                        .map(|t| tuple_terms(t, arity))
                                        .collect::<QueryOutcome<_>>()?,
                                    in_marker: None,
                                }
                            }
                            _ => return Err(invalid("Invalid IN relation on a tuple of columns")),
                        };
                        multi_eq.push((first, part));
                    }
                    Operator::Gt | Operator::Gte | Operator::Lt | Operator::Lte => {
                        let b = SliceBound {
                            terms: tuple_terms(&r.value, arity)?,
                            inclusive: matches!(r.op, Operator::Gte | Operator::Lte),
                        };
                        let lower = matches!(r.op, Operator::Gt | Operator::Gte);
                        let entry = multi_slice.get_or_insert((first, None, None));
                        if entry.0 != first {
                            return Err(invalid(
                                "Mixing multi-column slices that start at different columns is not supported",
                            ));
                        }
                        let slot = if lower { &mut entry.1 } else { &mut entry.2 };
                        if slot.is_some() {
                            return Err(invalid(format!(
                                "More than one restriction was found for the {} bound on {}",
                                if lower { "start" } else { "end" },
                                names
                                    .iter()
                                    .map(|n| n.text.as_str())
                                    .collect::<Vec<_>>()
                                    .join(", ")
                            )));
                        }
                        *slot = Some(b);
                    }
                    op => {
                        return Err(invalid(format!(
                            "{} is not supported on a tuple of columns",
                            op_name(op)
                        )))
                    }
                }
            }
            RelationTarget::Element { column: name, .. } => {
                let col = column(schema, &name.text)?;
                return Err(invalid(format!(
                    "Element restrictions are only supported on map columns; {} is a {}",
                    col.name,
                    col.ty.name()
                )));
            }
        }
    }

    // -- Partition key ---------------------------------------------------------
    let restricted_pk = pk_candidates.iter().filter(|c| c.is_some()).count();
    let mut key_token_filter = None;
    let partition = if has_token && restricted_pk == pk.len() {
        key_token_filter = Some((token.0, token.1));
        PartitionRestriction::Keys(pk_candidates.into_iter().flatten().collect())
    } else if has_token {
        if restricted_pk > 0 {
            return Err(invalid(format!(
                "Columns \"{}\" cannot be restricted by both a normal relation and a token relation",
                pk.iter().map(|c| c.name.as_str()).collect::<Vec<_>>().join(", ")
            )));
        }
        PartitionRestriction::Token {
            start: Box::new(token.0),
            end: Box::new(token.1),
        }
    } else if restricted_pk == pk.len() {
        PartitionRestriction::Keys(pk_candidates.into_iter().flatten().collect())
    } else if restricted_pk == 0 {
        match purpose {
            Purpose::Select { .. } => PartitionRestriction::All,
            _ => {
                return Err(invalid(format!(
                    "Some partition key parts are missing: {}",
                    pk.iter()
                        .map(|c| c.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                )))
            }
        }
    } else {
        let missing: Vec<&str> = pk
            .iter()
            .zip(&pk_candidates)
            .filter(|(_, c)| c.is_none())
            .map(|(c, _)| c.name.as_str())
            .collect();
        if !allow_filtering {
            return Err(if matches!(purpose, Purpose::Select { .. }) {
                filtering_needed()
            } else {
                invalid(format!(
                    "Some partition key parts are missing: {}",
                    missing.join(", ")
                ))
            });
        }
        // Filter on the restricted parts of a scan.
        for (col, c) in pk.iter().zip(pk_candidates) {
            if let Some(c) = c {
                let (op, value) = match c {
                    Candidates::Eq(t) => (Operator::Eq, t),
                    Candidates::In(items) => (Operator::In, Term::Tuple { items, pos: 0 }),
                    Candidates::InMarker(i) => (
                        Operator::In,
                        Term::Bind(crate::cql::ast::BindMarker {
                            index: i,
                            name: None,
                            pos: 0,
                        }),
                    ),
                };
                filters.push(Filter {
                    column: col.name.clone(),
                    kind: col.kind,
                    ty: col.ty.clone(),
                    position: col.position,
                    op,
                    value,
                });
            }
        }
        PartitionRestriction::All
    };

    if let Some(c) = non_key.first() {
        return Err(invalid(format!(
            "Non PRIMARY KEY columns found in where clause: {c}"
        )));
    }

    // -- Clustering ------------------------------------------------------------
    let mut clustering = ClusteringRestriction::default();
    let mut parts: Vec<(usize, PrefixPart)> = multi_eq;
    for (i, c) in ck_eq.into_iter().enumerate() {
        if let Some(c) = c {
            parts.push((i, PrefixPart::Column(c)));
        }
    }
    parts.sort_by_key(|(i, _)| *i);
    let mut next = 0;
    let mut filtered_from: Option<usize> = None;
    for (i, part) in parts {
        if i != next || filtered_from.is_some() {
            // A gap: preceding column unrestricted.
            if !allow_filtering {
                let preceding = ck.get(next).map(|c| c.name.as_str()).unwrap_or("");
                // A preceding column restricted by a slice is not a gap:
                // Cassandra names the slice.
                let sliced = ck_slices
                    .get(next)
                    .is_some_and(|(lo, hi)| lo.is_some() || hi.is_some())
                    || multi_slice.as_ref().is_some_and(|m| m.0 <= next);
                return Err(invalid(if sliced {
                    format!(
                        "Clustering column \"{}\" cannot be restricted (preceding column \"{preceding}\" is restricted by a non-EQ relation)",
                        ck[i].name
                    )
                } else {
                    format!(
                        "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{preceding}\" is not restricted",
                        ck[i].name
                    )
                }));
            }
            filtered_from.get_or_insert(i);
            push_prefix_filter(&mut filters, &ck, i, part)?;
            continue;
        }
        next += part.arity();
        clustering.prefix.push(part);
    }
    // Single-column slices: only the column right after the prefix may be sliced
    // without filtering.
    for (i, (lo, hi)) in ck_slices.into_iter().enumerate() {
        if lo.is_none() && hi.is_none() {
            continue;
        }
        // A slice on the first column of a multi-column slice bounds the
        // other side of the same range, as Cassandra merges them
        // (`(c1, c2) > (1, 1) AND c1 < 2`).
        if let Some(m) = multi_slice.as_mut().filter(|m| m.0 == i && i == next) {
            for (single, multi, lower) in [(lo, &mut m.1, true), (hi, &mut m.2, false)] {
                let Some(single) = single else { continue };
                if multi.is_some() {
                    return Err(invalid(format!(
                        "More than one restriction was found for the {} bound on {}",
                        if lower { "start" } else { "end" },
                        ck[i].name
                    )));
                }
                *multi = Some(single);
            }
            continue;
        }
        if i == next
            && filtered_from.is_none()
            && clustering.slice.is_none()
            && multi_slice.is_none()
        {
            clustering.slice = Some((lo, hi));
        } else if allow_filtering {
            for (b, lower) in [(lo, true), (hi, false)] {
                if let Some(b) = b {
                    let TupleTerms::Terms(mut t) = b.terms else {
                        continue;
                    };
                    let op = match (lower, b.inclusive) {
                        (true, true) => Operator::Gte,
                        (true, false) => Operator::Gt,
                        (false, true) => Operator::Lte,
                        (false, false) => Operator::Lt,
                    };
                    if let Some(value) = t.pop() {
                        filters.push(Filter {
                            column: ck[i].name.clone(),
                            kind: ColumnKind::Clustering,
                            ty: ck[i].ty.clone(),
                            position: i,
                            op,
                            value,
                        });
                    }
                }
            }
        } else {
            let preceding = ck.get(next).map(|c| c.name.as_str()).unwrap_or("");
            return Err(invalid(if i < next || clustering.slice.is_some() {
                format!(
                    "Clustering column \"{}\" cannot be restricted (preceding column \"{preceding}\" is restricted by a non-EQ relation)",
                    ck[i].name
                )
            } else {
                format!(
                    "PRIMARY KEY column \"{}\" cannot be restricted as preceding column \"{preceding}\" is not restricted",
                    ck[i].name
                )
            }));
        }
    }
    if let Some((first, lo, hi)) = multi_slice {
        if first != next || clustering.slice.is_some() || filtered_from.is_some() {
            return Err(invalid(
                "A multi-column slice must start right after the clustering columns restricted by equality",
            ));
        }
        clustering.slice = Some((lo, hi));
    }
    // Clustering restrictions on a scan filter every partition's rows.
    let restricts_clustering = !clustering.prefix.is_empty() || clustering.slice.is_some();
    if restricts_clustering
        && !matches!(partition, PartitionRestriction::Keys(_))
        && !allow_filtering
    {
        return Err(filtering_needed());
    }
    match purpose {
        Purpose::Update => {
            if clustering.slice.is_some() {
                return Err(invalid(
                    "Slice restrictions are not supported on the clustering columns in UPDATE statements",
                ));
            }
        }
        Purpose::Delete => {}
        Purpose::Select { .. } => {}
    }
    Ok(Restrictions {
        partition,
        key_token_filter,
        clustering,
        filters,
    })
}

fn filtering_needed() -> QueryError {
    invalid("Cannot execute this query as it might involve data filtering and thus may have unpredictable performance. If you want to execute this query despite the performance unpredictability, use ALLOW FILTERING")
}

fn op_name(op: Operator) -> &'static str {
    match op {
        Operator::Eq => "=",
        Operator::Lt => "<",
        Operator::Lte => "<=",
        Operator::Gt => ">",
        Operator::Gte => ">=",
        Operator::Neq => "!=",
        Operator::In => "IN",
        Operator::Contains => "CONTAINS",
        Operator::ContainsKey => "CONTAINS KEY",
        Operator::Like => "LIKE",
        Operator::IsNot => "IS NOT",
    }
}

fn candidates(r: &Relation) -> QueryOutcome<Candidates> {
    Ok(match (r.op, &r.value) {
        (Operator::Eq, t) => Candidates::Eq(t.clone()),
        (Operator::In, Term::Bind(m)) => Candidates::InMarker(m.index),
        (Operator::In, Term::Tuple { items, .. } | Term::List { items, .. }) => {
            Candidates::In(items.clone())
        }
        (Operator::In, t) => Candidates::In(vec![t.clone()]),
        _ => return Err(invalid("expected = or IN")),
    })
}

fn tuple_terms(t: &Term, arity: usize) -> QueryOutcome<TupleTerms> {
    match t {
        Term::Bind(m) => Ok(TupleTerms::Marker {
            index: m.index,
            arity,
        }),
        Term::Tuple { items, .. } => {
            if items.len() != arity {
                return Err(invalid(format!(
                    "Expected {arity} elements in value tuple, but got {}",
                    items.len()
                )));
            }
            Ok(TupleTerms::Terms(items.clone()))
        }
        other if arity == 1 => Ok(TupleTerms::Terms(vec![other.clone()])),
        _ => Err(invalid(format!("Expected a tuple of {arity} values"))),
    }
}

fn filter(col: &ColumnDef, r: &Relation) -> QueryOutcome<Filter> {
    match r.op {
        Operator::Eq
        | Operator::Lt
        | Operator::Lte
        | Operator::Gt
        | Operator::Gte
        | Operator::Neq
        | Operator::In => Ok(Filter {
            column: col.name.clone(),
            kind: col.kind,
            ty: col.ty.clone(),
            position: col.position,
            op: r.op,
            value: r.value.clone(),
        }),
        Operator::ContainsKey if !matches!(col.ty, CqlType::Map { .. }) => Err(invalid(format!(
            "Cannot use CONTAINS KEY on non-map column {}",
            col.name
        ))),
        Operator::Contains | Operator::ContainsKey if col.ty.is_collection() => Ok(Filter {
            column: col.name.clone(),
            kind: col.kind,
            ty: col.ty.clone(),
            position: col.position,
            op: r.op,
            value: r.value.clone(),
        }),
        Operator::Contains | Operator::ContainsKey => Err(invalid(format!(
            "Cannot use {} on non-collection column {}",
            op_name(r.op),
            col.name
        ))),
        Operator::Like => Err(invalid(format!(
            "LIKE restriction is only supported on properly indexed columns. {} is not valid.",
            col.name
        ))),
        Operator::IsNot => Err(invalid(
            "Unsupported restriction: IS NOT NULL is only allowed in materialized view definitions",
        )),
    }
}

/// A clustering `=`/`IN` that cannot be part of the prefix becomes filters.
fn push_prefix_filter(
    filters: &mut Vec<Filter>,
    ck: &[&ColumnDef],
    first: usize,
    part: PrefixPart,
) -> QueryOutcome<()> {
    match part {
        PrefixPart::Column(c) => {
            let (op, value) = match c {
                Candidates::Eq(t) => (Operator::Eq, t),
                Candidates::In(items) => (Operator::In, Term::Tuple { items, pos: 0 }),
                Candidates::InMarker(i) => (
                    Operator::In,
                    Term::Bind(crate::cql::ast::BindMarker {
                        index: i,
                        name: None,
                        pos: 0,
                    }),
                ),
            };
            filters.push(Filter {
                column: ck[first].name.clone(),
                kind: ColumnKind::Clustering,
                ty: ck[first].ty.clone(),
                position: first,
                op,
                value,
            });
            Ok(())
        }
        PrefixPart::Tuples { .. } => Err(invalid(
            "Multi-column relations cannot be filtered: restrict the preceding clustering columns",
        )),
    }
}

// ---------------------------------------------------------------------------
// Evaluation with a request's values
// ---------------------------------------------------------------------------

/// The values of one candidate set for a column of type `ty`, nulls refused.
fn eval_candidates(c: &Candidates, col: &ColumnDef, eval: &Eval<'_>) -> QueryOutcome<Vec<Value>> {
    let one = |t: &Term| -> QueryOutcome<Value> {
        match values::scalar(t, &col.ty, &col.name, eval)? {
            Bound::Value(v) => Ok(v),
            Bound::Null => Err(invalid(format!(
                "Invalid null value in condition for column {}",
                col.name
            ))),
            Bound::Unset => Err(invalid(format!(
                "Invalid unset value for column {}",
                col.name
            ))),
        }
    };
    match c {
        Candidates::Eq(t) => Ok(vec![one(t)?]),
        Candidates::In(items) => items.iter().map(one).collect(),
        Candidates::InMarker(i) => match eval.marker(*i)? {
            super::BoundValue::Value(b) => values::decode_list(b, &col.ty, &col.name)?
                .into_iter()
                .map(|b| match b {
                    Bound::Value(v) => Ok(v),
                    _ => Err(invalid(format!(
                        "Invalid null value in condition for column {}",
                        col.name
                    ))),
                })
                .collect(),
            super::BoundValue::Null => Err(invalid(format!(
                "Invalid null value for column {}",
                col.name
            ))),
            super::BoundValue::Unset => Err(invalid(format!(
                "Invalid unset value for column {}",
                col.name
            ))),
        },
    }
}

/// Distinct values in their type order (Cassandra reads an IN list as a set).
fn sorted_distinct(mut values: Vec<Vec<Value>>, types: &[(CqlType, bool)]) -> Vec<Vec<Value>> {
    let key = |vs: &Vec<Value>| {
        let mut out = Vec::new();
        for (v, (_, desc)) in vs.iter().zip(types) {
            types::encode_comparable(v, *desc, &mut out);
        }
        out
    };
    values.sort_by_cached_key(key);
    values.dedup_by(|a, b| key(a) == key(b));
    values
}

impl Restrictions {
    /// The partition keys named by `=`/`IN` (their cartesian product), each as
    /// its key column values. `None` for a token range or a scan.
    pub(crate) fn partition_keys(
        &self,
        schema: &TableSchema,
        eval: &Eval<'_>,
    ) -> QueryOutcome<Option<Vec<Vec<Value>>>> {
        let PartitionRestriction::Keys(cands) = &self.partition else {
            return Ok(None);
        };
        let pk: Vec<&ColumnDef> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
            .collect();
        let mut keys: Vec<Vec<Value>> = vec![Vec::new()];
        for (c, col) in cands.iter().zip(&pk) {
            let vals = eval_candidates(c, col, eval)?;
            let mut next = Vec::with_capacity(keys.len() * vals.len());
            for k in &keys {
                for v in &vals {
                    let mut k = k.clone();
                    k.push(v.clone());
                    next.push(k);
                }
            }
            if next.len() > MAX_CARTESIAN {
                return Err(cartesian_too_big(next.len()));
            }
            keys = next;
        }
        let types: Vec<(CqlType, bool)> = pk.iter().map(|c| (c.ty.clone(), false)).collect();
        Ok(Some(sorted_distinct(keys, &types)))
    }

    /// The token range of a `token()` restriction: `(start, end)` with
    /// inclusiveness, as bigint tokens. `None` when not a token restriction.
    pub(crate) fn token_range(
        &self,
        schema: &TableSchema,
        eval: &Eval<'_>,
    ) -> QueryOutcome<Option<TokenRange>> {
        let (start, end) = match (&self.partition, &self.key_token_filter) {
            (PartitionRestriction::Token { start, end }, _) => (&**start, &**end),
            (_, Some((start, end))) => (start, end),
            _ => return Ok(None),
        };
        let one = |b: &TokenBound| -> QueryOutcome<Option<(i64, bool)>> {
            match b {
                None => Ok(None),
                Some((t, incl)) => Ok(Some((token_value(schema, t, eval)?, *incl))),
            }
        };
        Ok(Some((one(start)?, one(end)?)))
    }

    /// Whether `token` passes the token restriction beside the named keys.
    pub(crate) fn admits_token(
        &self,
        schema: &TableSchema,
        eval: &Eval<'_>,
        token: i64,
    ) -> QueryOutcome<bool> {
        if self.key_token_filter.is_none() {
            return Ok(true);
        }
        let Some((start, end)) = self.token_range(schema, eval)? else {
            return Ok(true);
        };
        let after_start = match start {
            Some((t, true)) => token >= t,
            Some((t, false)) => token > t,
            None => true,
        };
        let before_end = match end {
            Some((t, true)) => token <= t,
            Some((t, false)) => token < t,
            None => true,
        };
        Ok(after_start && before_end)
    }

    /// Whether the clustering restriction names whole rows (every clustering
    /// column restricted by `=`/`IN`).
    pub(crate) fn names_whole_rows(&self, schema: &TableSchema) -> bool {
        let ck = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .count();
        self.clustering.slice.is_none()
            && self
                .clustering
                .prefix
                .iter()
                .map(PrefixPart::arity)
                .sum::<usize>()
                == ck
    }

    /// The clustering prefixes named by `=`/`IN` (cartesian product, in storage
    /// order, distinct), each as its values.
    pub(crate) fn clustering_prefixes(
        &self,
        schema: &TableSchema,
        eval: &Eval<'_>,
    ) -> QueryOutcome<Vec<Vec<Value>>> {
        let ck: Vec<&ColumnDef> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .collect();
        let mut prefixes: Vec<Vec<Value>> = vec![Vec::new()];
        let mut at = 0;
        for part in &self.clustering.prefix {
            let options: Vec<Vec<Value>> = match part {
                PrefixPart::Column(c) => eval_candidates(c, ck[at], eval)?
                    .into_iter()
                    .map(|v| vec![v])
                    .collect(),
                PrefixPart::Tuples {
                    arity,
                    tuples,
                    in_marker,
                } => {
                    let cols = &ck[at..at + arity];
                    match in_marker {
                        Some(i) => tuples_from_marker(*i, cols, eval)?,
                        None => tuples
                            .iter()
                            .map(|t| eval_tuple(t, cols, eval)?.ok_or_else(null_in_tuple))
                            .collect::<QueryOutcome<_>>()?,
                    }
                }
            };
            let mut next = Vec::with_capacity(prefixes.len() * options.len());
            for p in &prefixes {
                for o in &options {
                    let mut p = p.clone();
                    p.extend(o.iter().cloned());
                    next.push(p);
                }
            }
            if next.len() > MAX_CARTESIAN {
                return Err(cartesian_too_big(next.len()));
            }
            prefixes = next;
            at += part.arity();
        }
        let types: Vec<(CqlType, bool)> = ck[..at]
            .iter()
            .map(|c| (c.ty.clone(), c.descending))
            .collect();
        Ok(sorted_distinct(prefixes, &types))
    }

    /// The clustering ranges to read in one partition, in storage order
    /// (invariant 1).
    pub(crate) fn clustering_ranges(
        &self,
        schema: &TableSchema,
        eval: &Eval<'_>,
    ) -> QueryOutcome<Vec<ClusteringRange>> {
        let ck: Vec<&ColumnDef> = schema
            .columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
            .collect();
        let prefixes = self.clustering_prefixes(schema, eval)?;
        let at: usize = self.clustering.prefix.iter().map(PrefixPart::arity).sum();
        let mut out = Vec::new();
        for p in &prefixes {
            let prefix = schema
                .encode_clustering_prefix(p)
                .map_err(QueryError::from)?;
            let whole = ClusteringRange {
                start: bound_or_unbounded(prefix.clone(), true),
                end: bound_or_unbounded(prefix.clone(), true),
            };
            let Some((lo, hi)) = &self.clustering.slice else {
                out.push(whole);
                continue;
            };
            let cols = &ck[at..];
            let lower = match lo {
                Some(b) => slice_side(schema, &prefix, p, cols, b, true, eval)?,
                None => vec![whole.clone()],
            };
            let upper = match hi {
                Some(b) => slice_side(schema, &prefix, p, cols, b, false, eval)?,
                None => vec![whole.clone()],
            };
            for a in &lower {
                for b in &upper {
                    if let Some(r) = intersect(a, b) {
                        out.push(r);
                    }
                }
            }
        }
        out.sort_by(|a, b| cmp_pos(start_pos(&a.start), start_pos(&b.start)));
        Ok(out)
    }
}

/// A token bound's value: a bigint, or `token(v, ...)` of partition key
/// values (computed as Cassandra's partitioner does).
fn token_value(schema: &TableSchema, t: &Term, eval: &Eval<'_>) -> QueryOutcome<i64> {
    if let Term::Function { name, args, .. } = t {
        if name.name.text.eq_ignore_ascii_case("token") && name.keyspace.is_none() {
            let pk: Vec<&ColumnDef> = schema
                .columns
                .iter()
                .filter(|c| c.kind == ColumnKind::PartitionKey)
                .collect();
            if args.len() != pk.len() {
                return Err(invalid(format!(
                    "Invalid number of arguments in call to function system.token: {} required but {} provided",
                    pk.len(),
                    args.len()
                )));
            }
            let mut values = Vec::with_capacity(pk.len());
            for (a, c) in args.iter().zip(&pk) {
                values.push(values::scalar(a, &c.ty, &c.name, eval)?.required(&c.name)?);
            }
            return Ok(schema
                .decorated_key(&values)
                .map_err(QueryError::from)?
                .token);
        }
    }
    let v = values::scalar(t, &CqlType::BigInt, "partition key token", eval)?
        .required("partition key token")?;
    match v {
        Value::BigInt(x) => Ok(x),
        _ => Err(invalid("a token is a bigint")),
    }
}

/// Most keys or clustering prefixes an IN product may name (Cassandra's
/// `max_clustering_key_restrictions_per_query` guard-rail is 100 by default;
/// its hard cartesian limit is 2^16).
const MAX_CARTESIAN: usize = 65_536;

fn cartesian_too_big(n: usize) -> QueryError {
    invalid(format!(
        "IN restrictions name {n} combinations; at most {MAX_CARTESIAN} are allowed"
    ))
}

fn null_in_tuple() -> QueryError {
    invalid("Invalid null value in a tuple of clustering values")
}

fn bound_or_unbounded(prefix: Vec<u8>, inclusive: bool) -> ClusteringBound {
    if prefix.is_empty() {
        ClusteringBound::UNBOUNDED
    } else {
        ClusteringBound { prefix, inclusive }
    }
}

/// A tuple's values (`None` if an element is null).
fn eval_tuple(
    t: &TupleTerms,
    cols: &[&ColumnDef],
    eval: &Eval<'_>,
) -> QueryOutcome<Option<Vec<Value>>> {
    match t {
        TupleTerms::Terms(terms) => {
            let mut out = Vec::with_capacity(terms.len());
            for (term, col) in terms.iter().zip(cols) {
                match values::scalar(term, &col.ty, &col.name, eval)? {
                    Bound::Value(v) => out.push(v),
                    _ => return Ok(None),
                }
            }
            Ok(Some(out))
        }
        TupleTerms::Marker { index, arity } => {
            let types: Vec<CqlType> = cols[..*arity].iter().map(|c| c.ty.clone()).collect();
            match eval.marker(*index)? {
                super::BoundValue::Value(b) => {
                    let items = values::decode_tuple(b, &types, "tuple")?;
                    let mut out = Vec::with_capacity(items.len());
                    for i in items {
                        match i {
                            Bound::Value(v) => out.push(v),
                            _ => return Ok(None),
                        }
                    }
                    Ok(Some(out))
                }
                _ => Ok(None),
            }
        }
    }
}

fn tuples_from_marker(
    index: usize,
    cols: &[&ColumnDef],
    eval: &Eval<'_>,
) -> QueryOutcome<Vec<Vec<Value>>> {
    let super::BoundValue::Value(b) = eval.marker(index)? else {
        return Err(invalid("Invalid null value for IN tuples"));
    };
    // A list of serialized tuples.
    let elements = values::decode_list(b, &CqlType::Blob, "in(tuple)")?;
    let types: Vec<CqlType> = cols.iter().map(|c| c.ty.clone()).collect();
    let mut out = Vec::with_capacity(elements.len());
    for e in elements {
        let Bound::Value(Value::Blob(bytes)) = e else {
            return Err(null_in_tuple());
        };
        let items = values::decode_tuple(&bytes, &types, "tuple")?;
        let mut row = Vec::with_capacity(items.len());
        for i in items {
            match i {
                Bound::Value(v) => row.push(v),
                _ => return Err(null_in_tuple()),
            }
        }
        out.push(row);
    }
    Ok(out)
}

/// The rows after (`lower`) or before (the upper side) a slice bound, within
/// the prefix: a union of ranges in storage order (invariant 2).
fn slice_side(
    schema: &TableSchema,
    prefix: &[u8],
    prefix_values: &[Value],
    cols: &[&ColumnDef],
    b: &SliceBound,
    lower: bool,
    eval: &Eval<'_>,
) -> QueryOutcome<Vec<ClusteringRange>> {
    let Some(vals) = eval_tuple(&b.terms, cols, eval)? else {
        return Err(invalid("Invalid null value in a clustering slice bound"));
    };
    if vals.len() > cols.len() {
        return Err(invalid("too many values in a clustering slice bound"));
    }
    let mut out = Vec::new();
    let whole = ClusteringRange {
        start: bound_or_unbounded(prefix.to_vec(), true),
        end: bound_or_unbounded(prefix.to_vec(), true),
    };
    // (a, b, c) > (x, y, z): a > x, or a = x AND b > y, or a = x AND b = y AND c > z
    // (the last one >= when inclusive).
    for i in 0..vals.len() {
        let last = i + 1 == vals.len();
        let mut eq: Vec<Value> = prefix_values.to_vec();
        eq.extend(vals[..i].iter().cloned());
        let eq_prefix = schema
            .encode_clustering_prefix(&eq)
            .map_err(QueryError::from)?;
        let mut at: Vec<Value> = eq.clone();
        at.push(vals[i].clone());
        let at_prefix = schema
            .encode_clustering_prefix(&at)
            .map_err(QueryError::from)?;
        let inclusive = last && b.inclusive;
        // In type order: values after vals[i] (lower) or before it (upper).
        // In storage order a DESC column runs the other way.
        let after_in_storage = lower != cols[i].descending;
        let within = |start: ClusteringBound, end: ClusteringBound| ClusteringRange { start, end };
        let r = if after_in_storage {
            within(
                ClusteringBound {
                    prefix: at_prefix,
                    inclusive,
                },
                bound_or_unbounded(eq_prefix, true),
            )
        } else {
            within(
                bound_or_unbounded(eq_prefix, true),
                ClusteringBound {
                    prefix: at_prefix,
                    inclusive,
                },
            )
        };
        if let Some(r) = intersect(&r, &whole) {
            out.push(r);
        }
    }
    Ok(out)
}

/// A position between clustering keys: just before (`false`) or just after
/// (`true`) every key starting with the prefix. The empty prefix before is
/// the start of the partition, after is its end.
type Pos<'a> = (&'a [u8], bool);

fn start_pos(b: &ClusteringBound) -> Pos<'_> {
    // Inclusive start: before the prefix's keys; exclusive: after them.
    (&b.prefix, !b.inclusive && !b.prefix.is_empty())
}

fn end_pos(b: &ClusteringBound) -> Pos<'_> {
    // Inclusive end: after the prefix's keys; exclusive: before them.
    (&b.prefix, b.inclusive || b.prefix.is_empty())
}

fn cmp_pos(a: Pos<'_>, b: Pos<'_>) -> Ordering {
    let (pa, after_a) = a;
    let (pb, after_b) = b;
    // The empty prefix: before = -inf, after = +inf.
    match (pa.is_empty(), pb.is_empty()) {
        (true, true) => return after_a.cmp(&after_b),
        (true, false) => {
            return if after_a {
                Ordering::Greater
            } else {
                Ordering::Less
            }
        }
        (false, true) => {
            return if after_b {
                Ordering::Less
            } else {
                Ordering::Greater
            }
        }
        _ => {}
    }
    if pa == pb {
        return after_a.cmp(&after_b);
    }
    if pb.starts_with(pa) {
        // pa is a shorter prefix of pb: before(pa) < anything of pb; after(pa) > it.
        return if after_a {
            Ordering::Greater
        } else {
            Ordering::Less
        };
    }
    if pa.starts_with(pb) {
        return if after_b {
            Ordering::Less
        } else {
            Ordering::Greater
        };
    }
    pa.cmp(pb)
}

/// The intersection of two ranges, `None` if empty.
fn intersect(a: &ClusteringRange, b: &ClusteringRange) -> Option<ClusteringRange> {
    let start = if cmp_pos(start_pos(&a.start), start_pos(&b.start)) == Ordering::Less {
        b.start.clone()
    } else {
        a.start.clone()
    };
    let end = if cmp_pos(end_pos(&a.end), end_pos(&b.end)) == Ordering::Greater {
        b.end.clone()
    } else {
        a.end.clone()
    };
    if cmp_pos(start_pos(&start), end_pos(&end)) != Ordering::Less {
        return None;
    }
    Some(ClusteringRange { start, end })
}

// ---------------------------------------------------------------------------
// Filters
// ---------------------------------------------------------------------------

/// The order of two values of one type (invariant 3).
pub(crate) fn compare(a: &Value, b: &Value) -> Ordering {
    let (mut ka, mut kb) = (Vec::new(), Vec::new());
    types::encode_comparable(a, false, &mut ka);
    types::encode_comparable(b, false, &mut kb);
    ka.cmp(&kb)
}

/// A filter with its terms evaluated.
#[derive(Clone, Debug)]
pub(crate) struct BoundFilter {
    pub column: String,
    pub op: Operator,
    /// One value, or the candidates of IN.
    pub values: Vec<Value>,
}

impl Filter {
    pub(crate) fn bind(&self, eval: &Eval<'_>) -> QueryOutcome<BoundFilter> {
        // CONTAINS binds an element (a map's value), CONTAINS KEY a key.
        let ty = match (self.op, &self.ty) {
            (Operator::Contains, CqlType::List { element, .. } | CqlType::Set { element, .. }) => {
                (**element).clone()
            }
            (Operator::Contains, CqlType::Map { value, .. }) => (**value).clone(),
            (Operator::ContainsKey, CqlType::Map { key, .. }) => (**key).clone(),
            (_, t) => t.clone(),
        };
        let col = ColumnDef {
            name: self.column.clone(),
            ty,
            kind: self.kind,
            position: self.position,
            id: None,
            descending: false,
        };
        let values = match (self.op, &self.value) {
            (Operator::In, Term::Bind(m)) => {
                eval_candidates(&Candidates::InMarker(m.index), &col, eval)?
            }
            (Operator::In, Term::Tuple { items, .. } | Term::List { items, .. }) => {
                eval_candidates(&Candidates::In(items.clone()), &col, eval)?
            }
            (_, t) => eval_candidates(&Candidates::Eq(t.clone()), &col, eval)?,
        };
        Ok(BoundFilter {
            column: self.column.clone(),
            op: self.op,
            values,
        })
    }
}

impl BoundFilter {
    /// Whether a row whose column holds `value` (`None`: null) passes.
    pub(crate) fn admits(&self, value: Option<&Value>) -> bool {
        let Some(v) = value else {
            // Cassandra: a null never satisfies a filter (not even !=).
            return false;
        };
        let Some(first) = self.values.first() else {
            return false;
        };
        match (self.op, v) {
            (Operator::Contains, Value::List(items) | Value::Set(items)) => {
                return items.iter().any(|x| compare(x, first) == Ordering::Equal)
            }
            (Operator::Contains, Value::Map(entries)) => {
                return entries
                    .iter()
                    .any(|(_, x)| compare(x, first) == Ordering::Equal)
            }
            (Operator::ContainsKey, Value::Map(entries)) => {
                return entries
                    .iter()
                    .any(|(k, _)| compare(k, first) == Ordering::Equal)
            }
            _ => {}
        }
        let c = compare(v, first);
        match self.op {
            Operator::Eq => c == Ordering::Equal,
            Operator::Neq => c != Ordering::Equal,
            Operator::Lt => c == Ordering::Less,
            Operator::Lte => c != Ordering::Greater,
            Operator::Gt => c == Ordering::Greater,
            Operator::Gte => c != Ordering::Less,
            Operator::In => self.values.iter().any(|x| compare(v, x) == Ordering::Equal),
            _ => false,
        }
    }
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
    fn positions_order_prefixes_as_ranges_need() {
        // before(1) < before(1,2) < after(1,2) < after(1)
        let p1: &[u8] = &[1];
        let p12: &[u8] = &[1, 2];
        assert_eq!(cmp_pos((p1, false), (p12, false)), Ordering::Less);
        assert_eq!(cmp_pos((p12, false), (p12, true)), Ordering::Less);
        assert_eq!(cmp_pos((p12, true), (p1, true)), Ordering::Less);
        assert_eq!(cmp_pos((&[], false), (p1, false)), Ordering::Less);
        assert_eq!(cmp_pos((&[], true), (p1, true)), Ordering::Greater);
        assert_eq!(cmp_pos((&[2], false), (p1, true)), Ordering::Greater);
    }

    #[test]
    fn intersections_keep_only_the_common_keys() {
        let all = ClusteringRange::ALL;
        let after1 = ClusteringRange {
            start: b(&[1], false),
            end: ClusteringBound::UNBOUNDED,
        };
        let upto3 = ClusteringRange {
            start: ClusteringBound::UNBOUNDED,
            end: b(&[3], true),
        };
        let r = intersect(&after1, &upto3).unwrap();
        assert_eq!((r.start, r.end), (b(&[1], false), b(&[3], true)));
        assert_eq!(intersect(&all, &after1).unwrap(), after1);
        let before1 = ClusteringRange {
            start: ClusteringBound::UNBOUNDED,
            end: b(&[1], false),
        };
        assert!(intersect(&after1, &before1).is_none());
        // [1] inclusive start and end is the group of rows starting with 1.
        let group = ClusteringRange {
            start: b(&[1], true),
            end: b(&[1], true),
        };
        assert!(intersect(&group, &after1).is_none());
        assert_eq!(intersect(&group, &upto3).unwrap(), group);
    }
}
