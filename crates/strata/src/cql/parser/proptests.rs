//! Property tests of the CQL parser and printer.
//!
//! 1. Round trip: random statement trees of every kind, printed and parsed
//!    back, give the same tree (positions and the `quoted` flag aside), with
//!    bind markers numbered 0.. in text order.
//! 2. Robustness: arbitrary text, arbitrary bytes (lossy UTF-8) and valid
//!    statements with bytes deleted, inserted or duplicated never panic
//!    `parse_statement` or `split_statements`, and every error they return is a
//!    syntax or invalid error with a position inside the text.

use proptest::prelude::*;
use std::collections::BTreeMap;

use super::*;
use crate::cql::ddl::Setting;
use crate::cql::literal::Literal as OptionLiteral;

// ---------------------------------------------------------------------------
// Generators
// ---------------------------------------------------------------------------

fn mk_name(text: String) -> Name {
    Name {
        text,
        quoted: false,
        pos: 0,
    }
}

/// Plain identifiers, unreserved keywords, and names that need quotes.
fn name() -> BoxedStrategy<Name> {
    prop_oneof![
        4 => "[a-z][a-z0-9_]{0,6}",
        2 => prop::sample::select(vec![
            "key", "type", "ttl", "count", "json", "distinct", "role", "user", "keys",
            "values", "writetime", "maxwritetime", "cast", "as", "exists", "filtering",
            "static", "list", "map", "frozen", "tuple", "vector", "int", "text", "timestamp",
            "cluster", "types", "tables", "only", "function", "login", "all", "unmask",
            "select_masked", "options", "contains", "like", "group", "per", "partition",
            "compact", "storage", "clustering", "custom", "ann", "date", "byte",
        ])
        .prop_map(str::to_string),
        1 => prop::sample::select(vec![
            "Mixed", "with space", "select", "from", "true", "NaN", "a\"b", "1x", "token",
            "ALL", "é", "where", "key ", "set",
        ])
        .prop_map(str::to_string),
    ]
    .prop_map(mk_name)
    .boxed()
}

fn qualified() -> BoxedStrategy<QualifiedName> {
    (prop::option::of(name()), name())
        .prop_map(|(keyspace, name)| QualifiedName { keyspace, name })
        .boxed()
}

fn native() -> BoxedStrategy<String> {
    prop::sample::select(crate::cql::parser::NATIVE_TYPES.to_vec())
        .prop_map(str::to_string)
        .boxed()
}

fn type_expr() -> BoxedStrategy<TypeExpr> {
    let leaf = prop_oneof![
        4 => native().prop_map(TypeExpr::Native),
        1 => qualified().prop_map(TypeExpr::Udt),
        1 => "[a-zA-Z.']{1,12}".prop_map(TypeExpr::Custom),
    ];
    leaf.prop_recursive(3, 12, 3, |inner| {
        prop_oneof![
            inner.clone().prop_map(|t| TypeExpr::List(Box::new(t))),
            inner.clone().prop_map(|t| TypeExpr::Set(Box::new(t))),
            (inner.clone(), inner.clone())
                .prop_map(|(k, v)| TypeExpr::Map(Box::new(k), Box::new(v))),
            prop::collection::vec(inner.clone(), 1..4).prop_map(TypeExpr::Tuple),
            inner
                .clone()
                .prop_filter("frozen<> of a native type is refused", |t| {
                    !matches!(t, TypeExpr::Native(_) | TypeExpr::Custom(_))
                })
                .prop_map(|t| TypeExpr::Frozen(Box::new(t))),
            (inner, 1u32..5000).prop_map(|(t, n)| TypeExpr::Vector(Box::new(t), n)),
        ]
    })
    .boxed()
}

fn literal() -> BoxedStrategy<Literal> {
    prop_oneof![
        3 => ".{0,8}".prop_map(Literal::String),
        3 => "-?[0-9]{1,6}".prop_map(Literal::Integer),
        2 => prop::sample::select(vec![
            "1.5", "-0.25", "1e10", "2.5E-3", "-7e+2", "3.", "NaN", "Infinity", "-Infinity",
        ])
        .prop_map(|s| Literal::Float(s.to_string())),
        1 => any::<bool>().prop_map(Literal::Boolean),
        1 => any::<u128>().prop_map(|u| {
            let h = format!("{u:032x}");
            Literal::Uuid(format!("{}-{}-{}-{}-{}", &h[..8], &h[8..12], &h[12..16], &h[16..20], &h[20..]))
        }),
        1 => prop::collection::vec(any::<u8>(), 0..6).prop_map(Literal::Blob),
        1 => prop::sample::select(vec![
            "1h30m", "12ms", "-3d", "1y2mo", "P1DT2H", "P2W", "PT5S", "P0001-02-03T04:05:06", "-P1Y",
        ])
        .prop_map(|s| Literal::Duration(s.to_string())),
        1 => Just(Literal::Null),
    ]
    .boxed()
}

fn bind() -> BoxedStrategy<BindMarker> {
    prop::option::of(name())
        .prop_map(|name| BindMarker {
            index: 0,
            name,
            pos: 0,
        })
        .boxed()
}

fn lit_term() -> BoxedStrategy<Term> {
    literal()
        .prop_map(|value| Term::Literal { value, pos: 0 })
        .boxed()
}

fn int_value() -> BoxedStrategy<Term> {
    prop_oneof![
        "-?[0-9]{1,6}".prop_map(|s| Term::Literal {
            value: Literal::Integer(s),
            pos: 0
        }),
        bind().prop_map(Term::Bind),
    ]
    .boxed()
}

fn arith_op() -> BoxedStrategy<ArithOp> {
    prop::sample::select(vec![
        ArithOp::Add,
        ArithOp::Sub,
        ArithOp::Mul,
        ArithOp::Div,
        ArithOp::Rem,
    ])
    .boxed()
}

/// Terms of every shape outside a select clause. There a term has no
/// grouping parentheses (Cassandra's grammar): `(t)` is a one-element tuple,
/// so an operand looser than its place allows is generated inside one, as
/// the only way to write it.
fn term() -> BoxedStrategy<Term> {
    terms(false)
}

/// Precedence of a term as the printer and the parser see it: 1 sums,
/// 2 products, 3 negation and casts, 4 the rest.
fn prec(t: &Term) -> u8 {
    match t {
        Term::Arith {
            op: ArithOp::Add | ArithOp::Sub,
            ..
        } => 1,
        Term::Arith { .. } => 2,
        Term::Negate { .. } | Term::Cast { .. } => 3,
        _ => 4,
    }
}

/// Terms of every shape. In a select clause (`select`) one pair of
/// parentheses groups, so tuples there have two or more elements and any
/// operand may be looser than its place (the printer groups it); elsewhere
/// such an operand is put in a one-element tuple (see [`term`]).
fn terms(select: bool) -> BoxedStrategy<Term> {
    let leaf = prop_oneof![4 => lit_term(), 1 => bind().prop_map(Term::Bind)];
    let operand = move |t: Term, min: u8| -> Box<Term> {
        Box::new(if !select && prec(&t) < min {
            Term::Tuple {
                items: vec![t],
                pos: 0,
            }
        } else {
            t
        })
    };
    let shortest_tuple = if select { 2 } else { 1 };
    leaf.prop_recursive(3, 16, 3, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..3)
                .prop_map(|items| Term::List { items, pos: 0 }),
            prop::collection::vec(inner.clone(), 1..3)
                .prop_map(|items| Term::Set { items, pos: 0 }),
            prop::collection::vec((inner.clone(), inner.clone()), 0..3)
                .prop_map(|entries| Term::Map { entries, pos: 0 }),
            // `('x')` before a `:` reads as a custom type hint of a named
            // marker (`('x') :m`), in Cassandra's grammar as in ours.
            prop::collection::vec(inner.clone(), shortest_tuple..4)
                .prop_filter("a custom type hint", |items| !matches!(
                    items.as_slice(),
                    [Term::Literal {
                        value: Literal::String(_),
                        ..
                    }]
                ))
                .prop_map(|items| Term::Tuple { items, pos: 0 }),
            prop::collection::vec((name(), inner.clone()), 1..3)
                .prop_map(|fields| Term::Udt { fields, pos: 0 }),
            (qualified(), prop::collection::vec(inner.clone(), 0..3))
                .prop_map(|(name, args)| Term::Function { name, args, pos: 0 }),
            (type_expr(), inner.clone()).prop_map(move |(ty, t)| Term::Cast {
                ty,
                term: operand(t, 4),
                pos: 0
            }),
            (arith_op(), inner.clone(), inner.clone()).prop_map(move |(op, l, r)| {
                let p = prec(&Term::Arith {
                    op,
                    left: Box::new(Term::Tuple {
                        items: Vec::new(),
                        pos: 0,
                    }),
                    right: Box::new(Term::Tuple {
                        items: Vec::new(),
                        pos: 0,
                    }),
                    pos: 0,
                });
                Term::Arith {
                    op,
                    left: operand(l, p),
                    right: operand(r, p + 1),
                    pos: 0,
                }
            }),
            inner.prop_map(move |t| Term::Negate {
                term: operand(t, 4),
                pos: 0
            }),
        ]
    })
    .boxed()
}

/// A term a select clause reads back as `Selector::Term`: constants, markers,
/// collections, tuples, user type values, type hints.
fn selector_term() -> BoxedStrategy<Selector> {
    prop_oneof![
        3 => lit_term(),
        1 => bind().prop_map(Term::Bind),
        2 => terms(true).prop_filter("a select clause reads these as selectors", |t| {
            !matches!(t, Term::Function { .. } | Term::Arith { .. } | Term::Negate { .. })
        }),
    ]
    .prop_map(Selector::Term)
    .boxed()
}

/// `column` followed by field and element modifiers (WRITETIME's argument).
fn column_path() -> BoxedStrategy<Selector> {
    (
        name(),
        prop::collection::vec(
            prop_oneof![
                name().prop_map(|n| (Some(n), None)),
                term().prop_map(|t| (None, Some(t))),
            ],
            0..3,
        ),
    )
        .prop_map(|(c, mods)| {
            mods.into_iter().fold(Selector::Column(c), |s, m| match m {
                (Some(field), _) => Selector::Field {
                    selector: Box::new(s),
                    field,
                },
                (_, Some(key)) => Selector::Element {
                    selector: Box::new(s),
                    key,
                    pos: 0,
                },
                _ => s,
            })
        })
        .boxed()
}

fn selector() -> BoxedStrategy<Selector> {
    let leaf = prop_oneof![
        3 => name().prop_map(Selector::Column),
        1 => selector_term(),
    ];
    leaf.prop_recursive(3, 16, 3, |inner| {
        prop_oneof![
            (0u8..3, column_path()).prop_map(|(k, c)| {
                let column = Box::new(c);
                match k {
                    0 => Selector::WriteTime { column, pos: 0 },
                    1 => Selector::MaxWriteTime { column, pos: 0 },
                    _ => Selector::Ttl { column, pos: 0 },
                }
            }),
            (qualified(), prop::collection::vec(inner.clone(), 0..3))
                .prop_map(|(name, args)| Selector::Function { name, args, pos: 0 }),
            Just(Selector::Function {
                name: QualifiedName {
                    keyspace: None,
                    name: mk_name("count".into())
                },
                args: vec![Selector::Star { pos: 0 }],
                pos: 0
            }),
            (inner.clone(), native()).prop_map(|(s, n)| Selector::Cast {
                selector: Box::new(s),
                ty: TypeExpr::Native(n),
                pos: 0
            }),
            (inner.clone(), name()).prop_map(|(s, field)| Selector::Field {
                selector: Box::new(s),
                field
            }),
            (inner.clone(), term()).prop_map(|(s, key)| Selector::Element {
                selector: Box::new(s),
                key,
                pos: 0
            }),
            (
                inner.clone(),
                prop::option::of(term()),
                prop::option::of(term())
            )
                .prop_filter("a slice has a bound", |(_, a, b)| a.is_some()
                    || b.is_some())
                .prop_map(|(s, from, to)| Selector::Slice {
                    selector: Box::new(s),
                    from,
                    to,
                    pos: 0
                }),
            (arith_op(), inner.clone(), inner.clone()).prop_map(|(op, l, r)| Selector::Arith {
                op,
                left: Box::new(l),
                right: Box::new(r),
                pos: 0
            }),
            inner.prop_map(|s| Selector::Negate {
                selector: Box::new(s),
                pos: 0
            }),
        ]
    })
    .boxed()
}

fn comparison() -> BoxedStrategy<Operator> {
    prop::sample::select(vec![
        Operator::Eq,
        Operator::Lt,
        Operator::Lte,
        Operator::Gt,
        Operator::Gte,
        Operator::Neq,
    ])
    .boxed()
}

fn in_values() -> BoxedStrategy<Term> {
    prop_oneof![
        prop::collection::vec(term(), 0..4).prop_map(|items| Term::Tuple { items, pos: 0 }),
        bind().prop_map(Term::Bind),
    ]
    .boxed()
}

fn tuple_of(n: usize) -> BoxedStrategy<Term> {
    prop::collection::vec(term(), n)
        .prop_map(|items| Term::Tuple { items, pos: 0 })
        .boxed()
}

fn relation() -> BoxedStrategy<Relation> {
    let rel = |target, op, value| Relation {
        target,
        op,
        value,
        pos: 0,
    };
    let single = prop_oneof![
        (name(), comparison(), term()).prop_map(move |(c, op, v)| rel(
            RelationTarget::Column(c),
            op,
            v
        )),
        (
            name(),
            prop::sample::select(vec![
                Operator::Contains,
                Operator::ContainsKey,
                Operator::Like
            ]),
            term()
        )
            .prop_map(move |(c, op, v)| rel(RelationTarget::Column(c), op, v)),
        (name(), in_values()).prop_map(move |(c, v)| rel(
            RelationTarget::Column(c),
            Operator::In,
            v
        )),
        name().prop_map(move |c| rel(
            RelationTarget::Column(c),
            Operator::IsNot,
            Term::Literal {
                value: Literal::Null,
                pos: 0
            }
        )),
        (prop::collection::vec(name(), 1..3), comparison(), term())
            .prop_map(move |(cs, op, v)| rel(RelationTarget::Token(cs), op, v)),
        (name(), term(), comparison(), term()).prop_map(move |(column, key, op, v)| rel(
            RelationTarget::Element { column, key },
            op,
            v
        )),
    ];
    let multi = prop::collection::vec(name(), 1..4).prop_flat_map(move |cs| {
        let n = cs.len();
        let cs2 = cs.clone();
        let cs3 = cs.clone();
        prop_oneof![
            (
                comparison(),
                prop_oneof![tuple_of(n), bind().prop_map(Term::Bind)]
            )
                .prop_map(move |(op, v)| rel(
                    RelationTarget::Columns(cs.clone()),
                    op,
                    v
                )),
            prop_oneof![
                prop::collection::vec(tuple_of(n), 0..3),
                prop::collection::vec(bind().prop_map(Term::Bind), 1..3),
            ]
            .prop_map(move |items| rel(
                RelationTarget::Columns(cs2.clone()),
                Operator::In,
                Term::Tuple { items, pos: 0 }
            )),
            bind().prop_map(move |b| rel(
                RelationTarget::Columns(cs3.clone()),
                Operator::In,
                Term::Bind(b)
            )),
        ]
    });
    prop_oneof![3 => single, 1 => multi].boxed()
}

fn where_clause() -> BoxedStrategy<Vec<Relation>> {
    prop::collection::vec(relation(), 1..4).boxed()
}

fn ordering() -> BoxedStrategy<Ordering> {
    (name(), any::<bool>())
        .prop_map(|(column, descending)| Ordering { column, descending })
        .boxed()
}

fn select() -> BoxedStrategy<Statement> {
    let selection = prop_oneof![
        1 => Just(Selection::Star { pos: 0 }),
        4 => prop::collection::vec(
            (selector(), prop::option::of(name())).prop_map(|(selector, alias)| SelectItem { selector, alias }),
            1..4
        )
        .prop_map(Selection::Items),
    ];
    (
        (any::<bool>(), any::<bool>(), selection, qualified()),
        (
            prop::collection::vec(relation(), 0..3),
            prop::collection::vec(name(), 0..3),
            prop::collection::vec(ordering(), 0..3),
            prop::option::of(int_value()),
            prop::option::of(int_value()),
            any::<bool>(),
        ),
    )
        .prop_map(
            |(
                (json, distinct, selection, table),
                (where_clause, group_by, order_by, per_partition_limit, limit, allow_filtering),
            )| {
                Statement::Select(Box::new(Select {
                    json,
                    distinct,
                    selection,
                    table,
                    where_clause,
                    group_by,
                    order_by,
                    per_partition_limit,
                    limit,
                    allow_filtering,
                }))
            },
        )
        .boxed()
}

fn using(ttl: bool) -> BoxedStrategy<Using> {
    (
        prop::option::of(int_value()),
        if ttl {
            prop::option::of(int_value()).boxed()
        } else {
            Just(None).boxed()
        },
    )
        .prop_map(|(timestamp, ttl)| Using { timestamp, ttl })
        .boxed()
}

fn insert() -> BoxedStrategy<Insert> {
    let values = prop_oneof![
        prop::collection::vec((name(), term()), 1..4).prop_map(|cv| {
            let (columns, values) = cv.into_iter().unzip();
            InsertValues::Values { columns, values }
        }),
        (
            prop_oneof![
                ".{0,10}".prop_map(|s| Term::Literal {
                    value: Literal::String(s),
                    pos: 0
                }),
                bind().prop_map(Term::Bind),
            ],
            prop::sample::select(vec![JsonDefault::Null, JsonDefault::Unset]),
        )
            .prop_map(|(document, default)| InsertValues::Json { document, default }),
    ];
    (qualified(), values, any::<bool>(), using(true))
        .prop_map(|(table, values, if_not_exists, using)| Insert {
            table,
            values,
            if_not_exists,
            using,
        })
        .boxed()
}

fn assignment() -> BoxedStrategy<Assignment> {
    prop_oneof![
        (name(), term()).prop_map(|(column, value)| Assignment::Set { column, value }),
        (name(), term(), term()).prop_map(|(column, key, value)| Assignment::SetElement {
            column,
            key,
            value
        }),
        (name(), name(), term()).prop_map(|(column, field, value)| Assignment::SetField {
            column,
            field,
            value
        }),
        (name(), term()).prop_map(|(column, value)| Assignment::Add { column, value }),
        (name(), term()).prop_map(|(column, value)| Assignment::Subtract { column, value }),
        (name(), term()).prop_map(|(column, value)| Assignment::Prepend { column, value }),
    ]
    .boxed()
}

fn condition() -> BoxedStrategy<Condition> {
    let cond = |column, element, field, op, value| Condition {
        column,
        element,
        field,
        op,
        value,
        pos: 0,
    };
    prop_oneof![
        (name(), comparison(), term()).prop_map(move |(c, op, v)| cond(c, None, None, op, v)),
        (
            name(),
            prop::sample::select(vec![Operator::Contains, Operator::ContainsKey]),
            term()
        )
            .prop_map(move |(c, op, v)| cond(c, None, None, op, v)),
        (name(), in_values()).prop_map(move |(c, v)| cond(c, None, None, Operator::In, v)),
        (name(), term(), comparison(), term()).prop_map(move |(c, k, op, v)| cond(
            c,
            Some(k),
            None,
            op,
            v
        )),
        (name(), term(), in_values()).prop_map(move |(c, k, v)| cond(
            c,
            Some(k),
            None,
            Operator::In,
            v
        )),
        (name(), name(), comparison(), term()).prop_map(move |(c, f, op, v)| cond(
            c,
            None,
            Some(f),
            op,
            v
        )),
    ]
    .boxed()
}

fn conditions() -> BoxedStrategy<Conditions> {
    prop_oneof![
        Just(Conditions::None),
        Just(Conditions::Exists),
        prop::collection::vec(condition(), 1..3).prop_map(Conditions::Columns),
    ]
    .boxed()
}

fn update() -> BoxedStrategy<Update> {
    (
        qualified(),
        using(true),
        prop::collection::vec(assignment(), 1..4),
        where_clause(),
        conditions(),
    )
        .prop_map(
            |(table, using, assignments, where_clause, conditions)| Update {
                table,
                using,
                assignments,
                where_clause,
                conditions,
            },
        )
        .boxed()
}

fn delete() -> BoxedStrategy<Delete> {
    let deletion = prop_oneof![
        name().prop_map(Deletion::Column),
        (name(), term()).prop_map(|(column, key)| Deletion::Element { column, key }),
        (name(), name()).prop_map(|(column, field)| Deletion::Field { column, field }),
    ];
    (
        prop::collection::vec(deletion, 0..3),
        qualified(),
        using(false),
        where_clause(),
        conditions(),
    )
        .prop_map(|(columns, table, using, where_clause, conditions)| Delete {
            columns,
            table,
            using,
            where_clause,
            conditions,
        })
        .boxed()
}

fn batch() -> BoxedStrategy<Statement> {
    let stmt = prop_oneof![
        insert().prop_map(BatchStatement::Insert),
        update().prop_map(BatchStatement::Update),
        delete().prop_map(BatchStatement::Delete),
    ];
    (
        prop::sample::select(vec![
            BatchKind::Logged,
            BatchKind::Unlogged,
            BatchKind::Counter,
        ]),
        using(true),
        prop::collection::vec(stmt, 0..3),
    )
        .prop_map(|(kind, using, statements)| {
            Statement::Batch(Box::new(Batch {
                kind,
                using,
                statements,
            }))
        })
        .boxed()
}

fn option_scalar() -> BoxedStrategy<String> {
    prop_oneof![
        "-?[0-9]{1,5}",
        "[0-9]{1,3}\\.[0-9]{1,3}",
        Just("true".to_string()),
        Just("false".to_string()),
        ".{0,8}",
    ]
    .boxed()
}

fn setting() -> BoxedStrategy<Setting> {
    (
        "[a-z][a-z_]{0,10}".prop_filter("an option name is not reserved", |n| !is_reserved(n)),
        prop_oneof![
            option_scalar().prop_map(OptionLiteral::Scalar),
            prop::collection::btree_map(".{0,6}", option_scalar(), 0..3)
                .prop_map(|m: BTreeMap<String, String>| OptionLiteral::Map(m)),
        ],
    )
        .prop_map(|(name, value)| Setting {
            name,
            name_pos: 0,
            value,
            value_pos: 0,
        })
        .boxed()
}

fn settings() -> BoxedStrategy<Vec<Setting>> {
    prop::collection::vec(setting(), 1..3).boxed()
}

fn column_def(primary_key: bool) -> BoxedStrategy<ColumnDefinition> {
    (name(), type_expr(), any::<bool>())
        .prop_map(move |(name, ty, is_static)| ColumnDefinition {
            name,
            ty,
            is_static,
            primary_key,
        })
        .boxed()
}

fn create_table() -> BoxedStrategy<Statement> {
    (
        (
            any::<bool>(),
            qualified(),
            prop::collection::vec(column_def(false), 1..4),
        ),
        (
            prop::option::of(0usize..4),
            prop::collection::vec(name(), 1..3),
            prop::collection::vec(name(), 0..3),
            prop::collection::vec(ordering(), 0..3),
            any::<bool>(),
            prop::collection::vec(setting(), 0..3),
        ),
    )
        .prop_map(
            |(
                (if_not_exists, table, mut columns),
                (inline, pk, ck, clustering_order, compact_storage, settings),
            )| {
                // Either one column is the key inline, or a PRIMARY KEY clause.
                let (partition_key, clustering) = match inline {
                    Some(i) => {
                        let i = i % columns.len();
                        columns[i].primary_key = true;
                        (Vec::new(), Vec::new())
                    }
                    None => (pk, ck),
                };
                Statement::CreateTable(Box::new(CreateTable {
                    if_not_exists,
                    table,
                    columns,
                    partition_key,
                    clustering,
                    clustering_order,
                    compact_storage,
                    settings,
                    text: String::new(),
                }))
            },
        )
        .boxed()
}

fn alter_table() -> BoxedStrategy<Statement> {
    let renames = prop::collection::vec((name(), name()), 1..3);
    let action = prop_oneof![
        (
            any::<bool>(),
            prop::collection::vec(column_def(false), 1..3)
        )
            .prop_map(|(if_not_exists, columns)| AlterTableAction::Add {
                if_not_exists,
                columns
            }),
        (
            any::<bool>(),
            prop::collection::vec(name(), 1..3),
            prop::option::of(any::<i64>())
        )
            .prop_map(|(if_exists, columns, timestamp)| AlterTableAction::Drop {
                if_exists,
                columns,
                timestamp
            }),
        (any::<bool>(), renames)
            .prop_map(|(if_exists, renames)| AlterTableAction::Rename { if_exists, renames }),
        (name(), type_expr()).prop_map(|(column, ty)| AlterTableAction::AlterType { column, ty }),
        settings().prop_map(|settings| AlterTableAction::With { settings }),
        Just(AlterTableAction::DropCompactStorage),
    ];
    (any::<bool>(), qualified(), action)
        .prop_map(|(if_exists, table, action)| {
            Statement::AlterTable(Box::new(AlterTable {
                if_exists,
                table,
                action,
            }))
        })
        .boxed()
}

fn types() -> BoxedStrategy<Statement> {
    let action = prop_oneof![
        (any::<bool>(), name(), type_expr()).prop_map(|(if_not_exists, field, ty)| {
            AlterTypeAction::Add {
                if_not_exists,
                field,
                ty,
            }
        }),
        (any::<bool>(), prop::collection::vec((name(), name()), 1..3))
            .prop_map(|(if_exists, renames)| AlterTypeAction::Rename { if_exists, renames }),
        (name(), type_expr()).prop_map(|(field, ty)| AlterTypeAction::AlterField { field, ty }),
    ];
    prop_oneof![
        (
            any::<bool>(),
            qualified(),
            prop::collection::vec((name(), type_expr()), 1..4)
        )
            .prop_map(|(if_not_exists, name, fields)| Statement::CreateType {
                if_not_exists,
                name,
                fields
            }),
        (any::<bool>(), qualified(), action).prop_map(|(if_exists, name, action)| {
            Statement::AlterType {
                if_exists,
                name,
                action,
            }
        }),
        (any::<bool>(), qualified())
            .prop_map(|(if_exists, name)| Statement::DropType { if_exists, name }),
    ]
    .boxed()
}

fn keyspaces_and_tables() -> BoxedStrategy<Statement> {
    prop_oneof![
        name().prop_map(Statement::Use),
        (any::<bool>(), name(), settings()).prop_map(|(if_not_exists, name, settings)| {
            Statement::CreateKeyspace {
                if_not_exists,
                name,
                settings,
            }
        }),
        (any::<bool>(), name(), settings()).prop_map(|(if_exists, name, settings)| {
            Statement::AlterKeyspace {
                if_exists,
                name,
                settings,
            }
        }),
        (any::<bool>(), name())
            .prop_map(|(if_exists, name)| Statement::DropKeyspace { if_exists, name }),
        (any::<bool>(), qualified())
            .prop_map(|(if_exists, table)| Statement::DropTable { if_exists, table }),
        qualified().prop_map(|table| Statement::Truncate { table }),
    ]
    .boxed()
}

fn role_options() -> BoxedStrategy<RoleOptions> {
    (
        prop_oneof![
            Just((None, None)),
            ".{0,8}".prop_map(|p| (Some(p), None)),
            ".{0,8}".prop_map(|p| (None, Some(p))),
        ],
        prop::option::of(any::<bool>()),
        prop::option::of(any::<bool>()),
        prop::collection::btree_map(".{0,5}", ".{0,5}", 0..3),
        prop::option::of(prop::collection::vec(".{0,5}", 0..3)),
    )
        .prop_map(
            |((password, hashed_password), login, superuser, options, datacenters)| RoleOptions {
                password,
                hashed_password,
                login,
                superuser,
                options: options.into_iter().collect(),
                datacenters,
            },
        )
        .boxed()
}

fn permissions() -> BoxedStrategy<Vec<Permission>> {
    prop_oneof![
        Just(vec![Permission::All]),
        prop::collection::vec(
            prop::sample::select(vec![
                Permission::Create,
                Permission::Alter,
                Permission::Drop,
                Permission::Select,
                Permission::Modify,
                Permission::Authorize,
                Permission::Describe,
                Permission::Execute,
                Permission::Unmask,
                Permission::SelectMasked,
            ]),
            1..4
        ),
    ]
    .boxed()
}

fn resource() -> BoxedStrategy<Resource> {
    prop_oneof![
        Just(Resource::AllKeyspaces),
        name().prop_map(Resource::Keyspace),
        qualified().prop_map(Resource::Table),
        Just(Resource::AllRoles),
        name().prop_map(Resource::Role),
        prop::option::of(name()).prop_map(|keyspace| Resource::AllFunctions { keyspace }),
        (qualified(), prop::collection::vec(type_expr(), 0..3))
            .prop_map(|(name, arg_types)| Resource::Function { name, arg_types }),
        Just(Resource::AllMbeans),
        ".{1,8}".prop_map(Resource::Mbean),
    ]
    .boxed()
}

fn roles() -> BoxedStrategy<Statement> {
    prop_oneof![
        (any::<bool>(), name(), role_options()).prop_map(|(if_not_exists, name, options)| {
            Statement::CreateRole {
                if_not_exists,
                name,
                options,
            }
        }),
        (any::<bool>(), name(), role_options()).prop_map(|(if_exists, name, options)| {
            Statement::AlterRole {
                if_exists,
                name,
                options,
            }
        }),
        (any::<bool>(), name())
            .prop_map(|(if_exists, name)| Statement::DropRole { if_exists, name }),
        (prop::option::of(name()), any::<bool>()).prop_map(|(of, recursive)| {
            Statement::ListRoles {
                of,
                recursive,
                users: false,
            }
        }),
        Just(Statement::ListRoles {
            of: None,
            recursive: true,
            users: true
        }),
        (permissions(), resource(), name()).prop_map(|(permissions, resource, grantee)| {
            Statement::GrantPermissions {
                permissions,
                resource,
                grantee,
            }
        }),
        (permissions(), resource(), name()).prop_map(|(permissions, resource, revokee)| {
            Statement::RevokePermissions {
                permissions,
                resource,
                revokee,
            }
        }),
        (
            permissions(),
            prop::option::of(resource()),
            prop::option::of(name()),
            any::<bool>()
        )
            .prop_map(|(permissions, resource, of, recursive)| {
                Statement::ListPermissions {
                    permissions,
                    resource,
                    of,
                    recursive,
                }
            }),
        (name(), name()).prop_map(|(role, grantee)| Statement::GrantRole { role, grantee }),
        (name(), name()).prop_map(|(role, revokee)| Statement::RevokeRole { role, revokee }),
    ]
    .boxed()
}

fn describe() -> BoxedStrategy<Statement> {
    prop_oneof![
        Just(Describe::Cluster),
        any::<bool>().prop_map(|full| Describe::Schema { full }),
        Just(Describe::Keyspaces),
        (prop::option::of(name()), any::<bool>())
            .prop_map(|(name, only)| Describe::Keyspace { name, only }),
        Just(Describe::Tables),
        qualified().prop_map(Describe::Table),
        Just(Describe::Types),
        qualified().prop_map(Describe::Type),
        Just(Describe::Functions),
        qualified().prop_map(Describe::Function),
        Just(Describe::Aggregates),
        qualified().prop_map(Describe::Aggregate),
        qualified().prop_map(Describe::Index),
        qualified().prop_map(Describe::MaterializedView),
        qualified().prop_map(Describe::Generic),
    ]
    .prop_map(Statement::Describe)
    .boxed()
}

fn unsupported() -> BoxedStrategy<Statement> {
    prop::sample::select(vec![
        UnsupportedFeature::CreateIndex,
        UnsupportedFeature::DropIndex,
        UnsupportedFeature::CreateMaterializedView,
        UnsupportedFeature::AlterMaterializedView,
        UnsupportedFeature::DropMaterializedView,
        UnsupportedFeature::CreateFunction,
        UnsupportedFeature::DropFunction,
        UnsupportedFeature::CreateAggregate,
        UnsupportedFeature::DropAggregate,
        UnsupportedFeature::CreateTrigger,
        UnsupportedFeature::DropTrigger,
        UnsupportedFeature::Identity,
    ])
    .prop_map(|feature| Statement::Unsupported { feature, pos: 0 })
    .boxed()
}

fn statement() -> BoxedStrategy<Statement> {
    prop_oneof![
        4 => select(),
        2 => insert().prop_map(|i| Statement::Insert(Box::new(i))),
        2 => update().prop_map(|u| Statement::Update(Box::new(u))),
        2 => delete().prop_map(|d| Statement::Delete(Box::new(d))),
        1 => batch(),
        2 => create_table(),
        1 => alter_table(),
        1 => types(),
        1 => keyspaces_and_tables(),
        2 => roles(),
        1 => describe(),
        1 => unsupported(),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------
// Comparison
// ---------------------------------------------------------------------------

/// The tree's `Debug` text without what a reprint legitimately changes:
/// positions, the `quoted` flag of names, marker numbers (checked apart).
fn normalized(s: &Statement) -> String {
    let mut s = s.clone();
    if let Statement::CreateTable(ct) = &mut s {
        ct.text.clear();
    }
    let text = format!("{s:?}");
    let mut out = String::with_capacity(text.len());
    let mut rest = text.as_str();
    while !rest.is_empty() {
        let next = ["pos: ", "index: ", "quoted: "]
            .iter()
            .filter_map(|k| rest.find(k).map(|i| (i, *k)))
            .min();
        let Some((i, key)) = next else {
            out.push_str(rest);
            break;
        };
        out.push_str(&rest[..i + key.len()]);
        out.push('_');
        rest = &rest[i + key.len()..];
        let skip = rest
            .find(|c: char| !c.is_ascii_alphanumeric())
            .unwrap_or(rest.len());
        rest = &rest[skip..];
    }
    out
}

/// The marker numbers of a tree in `Debug` (= text) order.
fn marker_indices(s: &Statement) -> Vec<usize> {
    let text = format!("{s:?}");
    text.match_indices("BindMarker { index: ")
        .filter_map(|(i, k)| {
            text[i + k.len()..]
                .split(|c: char| !c.is_ascii_digit())
                .next()
                .and_then(|d| d.parse().ok())
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 2000, ..ProptestConfig::default() })]

    #[test]
    fn printed_statements_parse_back_to_the_same_tree(s in statement()) {
        let text = s.to_string();
        let parsed = match parse_statement(&text) {
            Ok(p) => p,
            Err(e) => return Err(TestCaseError::fail(format!("{text}\n{e}"))),
        };
        prop_assert_eq!(normalized(&parsed.statement), normalized(&s), "{}", text);
        let indices = marker_indices(&parsed.statement);
        prop_assert_eq!(indices.len(), parsed.markers.len(), "{}", text);
        prop_assert_eq!(indices, (0..parsed.markers.len()).collect::<Vec<_>>(), "{}", text);
        // Printing is a fixed point.
        prop_assert_eq!(parsed.statement.to_string(), text);
    }
}

fn check_robust(text: &str) -> Result<(), TestCaseError> {
    for result in [
        parse_statement(text).map(|_| ()),
        split_statements(text).map(|_| ()),
    ] {
        if let Err(e) = result {
            prop_assert!(
                matches!(e.kind, CqlErrorKind::SyntaxError | CqlErrorKind::Invalid),
                "{:?}",
                e
            );
            let pos = e.position.unwrap_or(usize::MAX);
            prop_assert!(pos <= text.len(), "{:?} in {:?}", e, text);
        }
    }
    Ok(())
}

/// Valid statements to mutate.
const SEEDS: &[&str] = &[
    "SELECT JSON DISTINCT k, writetime(v), m['a'..'b'], count(*) AS n FROM ks.t WHERE k IN (1, 2) AND (c1, c2) > (1, ?) AND token(k) > 5 GROUP BY k ORDER BY c DESC LIMIT 10 ALLOW FILTERING",
    "INSERT INTO t (k, v, m) VALUES (:k, {'a': [1, 2]}, {f: (1, 'x')}) IF NOT EXISTS USING TTL 5 AND TIMESTAMP ?",
    "UPDATE t USING TTL 1 SET c = c + 1, l = [1] + l, m['k'] = 'v', u.f = 0x00 WHERE k = 1 IF v = 'it''s' AND m['a'] IN (1, 2)",
    "BEGIN UNLOGGED BATCH INSERT INTO t (k) VALUES (1); DELETE m['k'] FROM t USING TIMESTAMP 1 WHERE k = 2; APPLY BATCH",
    "CREATE TABLE IF NOT EXISTS ks.t (k int, c timestamp, v frozen<map<text, list<int>>>, PRIMARY KEY ((k), c)) WITH CLUSTERING ORDER BY (c DESC) AND compaction = {'class': 'LeveledCompactionStrategy'}",
    "CREATE ROLE r WITH PASSWORD = 'p' AND LOGIN = true AND OPTIONS = {'a': 1} AND ACCESS TO DATACENTERS {'dc1'}",
    "CREATE FUNCTION f (a int) CALLED ON NULL INPUT RETURNS int LANGUAGE java AS $$ return a; $$ -- c\n",
    "GRANT SELECT, MODIFY ON ALL FUNCTIONS IN KEYSPACE ks TO \"Bob\" /* x */",
];

proptest! {
    #![proptest_config(ProptestConfig { cases: 3000, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,200}") {
        check_robust(&text)?;
    }

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..300)) {
        check_robust(&String::from_utf8_lossy(&bytes))?;
    }

    #[test]
    fn cql_shaped_text_never_panics(
        parts in prop::collection::vec(prop::sample::select(vec![
            "SELECT", "FROM", "WHERE", "(", ")", "[", "]", "{", "}", ",", ";", ".", ":", "?", "=",
            "<", ">=", "+", "-", "*", "..", "-1", "1.5", "'s'", "$$x$$", "\"Q\"", "k", "json",
            "token", "IN", "AND", "BEGIN", "BATCH", "APPLY", "CREATE", "TABLE", "PRIMARY", "KEY",
            "frozen", "<", ">", "int", "WITH", "--", "/*", "*/", "0x1", "P1D", "1h", "NaN",
            "null", "CAST", "AS", "IF", "EXISTS", "USING", "TTL", "count", "ORDER", "BY",
        ]), 0..40)
    ) {
        check_robust(&parts.join(" "))?;
    }

    #[test]
    fn mutated_statements_never_panic(
        seed in prop::sample::select(SEEDS.to_vec()),
        edits in prop::collection::vec((0u8..3, any::<prop::sample::Index>(), any::<u8>()), 1..6)
    ) {
        let mut bytes = seed.as_bytes().to_vec();
        for (kind, at, b) in edits {
            if bytes.is_empty() {
                bytes.push(b);
                continue;
            }
            let i = at.index(bytes.len());
            match kind {
                0 => { bytes.remove(i); }
                1 => bytes.insert(i, b),
                _ => {
                    let end = (i + 1 + usize::from(b % 8)).min(bytes.len());
                    let copy = bytes[i..end].to_vec();
                    bytes.splice(i..i, copy);
                }
            }
        }
        check_robust(&String::from_utf8_lossy(&bytes))?;
    }
}
