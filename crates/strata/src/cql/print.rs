//! CQL text from a statement tree: `Display` for [`Statement`], [`Term`],
//! [`Selector`], [`TypeExpr`] and the other nodes of `ast`.
//!
//! Owns the inverse of `parser`. Pure, any thread. The executor uses it for
//! DESCRIBE output and messages; the parser's property tests print random
//! trees and parse them back.
//!
//! Invariants:
//! 1. `parse_statement(&s.to_string())` gives back `s`, positions and the
//!    `quoted` flag of names aside (they record how the text was written), for
//!    every tree the parser can produce. Two spellings of one tree (`c += 1` and
//!    `c = c + 1`, `PRIMARY KEY ((k))` and `PRIMARY KEY (k)`) print as one.
//! 2. Names are bare when they read back unchanged and double-quoted otherwise
//!    ([`ddl::cql_name`], plus the keywords a position reads specially: a user
//!    type named `int`, a function named `ttl`, a leading column `json`).
//! 3. Operators are spaced and parenthesized by precedence, so `a - -1`,
//!    `- 1` and `(a + b) * c` read back as the same tree.
//! 4. A statement Strata parses but does not execute (`Statement::Unsupported`)
//!    prints as the shortest statement of its kind, since the tree keeps only
//!    the feature.

use std::fmt::{self, Write};

use super::ast::*;
use super::ddl::cql_name;
use super::lexer::quote;
use super::literal::Literal as OptionLiteral;
use super::parser::{NATIVE_TYPES, NOT_FUNCTION_NAMES, NOT_TYPE_NAMES};
use super::settings::Setting;

fn name(n: &Name) -> String {
    cql_name(&n.text)
}

fn qualified(q: &QualifiedName) -> String {
    match &q.keyspace {
        Some(ks) => format!("{}.{}", name(ks), name(&q.name)),
        None => name(&q.name),
    }
}

/// A name that an unquoted position would read as something else (invariant 2).
fn guarded(n: &Name, specials: &[&[&str]]) -> String {
    if specials.iter().any(|l| l.contains(&n.text.as_str())) {
        format!("\"{}\"", n.text.replace('"', "\"\""))
    } else {
        name(n)
    }
}

fn function_name(q: &QualifiedName) -> String {
    let n = guarded(&q.name, &[NOT_FUNCTION_NAMES]);
    match &q.keyspace {
        Some(ks) => format!("{}.{n}", name(ks)),
        None => n,
    }
}

fn type_name(q: &QualifiedName) -> String {
    let n = guarded(&q.name, &[NATIVE_TYPES, NOT_TYPE_NAMES]);
    match &q.keyspace {
        Some(ks) => format!("{}.{n}", name(ks)),
        None => n,
    }
}

fn join<T>(items: &[T], f: impl Fn(&T) -> String) -> String {
    items.iter().map(f).collect::<Vec<_>>().join(", ")
}

impl fmt::Display for Name {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&name(self))
    }
}

impl fmt::Display for QualifiedName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&qualified(self))
    }
}

impl fmt::Display for TypeExpr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TypeExpr::Native(n) => f.write_str(n),
            TypeExpr::List(e) => write!(f, "list<{e}>"),
            TypeExpr::Set(e) => write!(f, "set<{e}>"),
            TypeExpr::Map(k, v) => write!(f, "map<{k}, {v}>"),
            TypeExpr::Tuple(items) => write!(f, "tuple<{}>", join(items, |t| t.to_string())),
            TypeExpr::Frozen(e) => write!(f, "frozen<{e}>"),
            TypeExpr::Udt(q) => f.write_str(&type_name(q)),
            TypeExpr::Vector(e, n) => write!(f, "vector<{e}, {n}>"),
            TypeExpr::Custom(c) => f.write_str(&quote(c)),
        }
    }
}

impl fmt::Display for Literal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Literal::String(s) => f.write_str(&quote(s)),
            Literal::Integer(t) | Literal::Float(t) | Literal::Uuid(t) | Literal::Duration(t) => {
                f.write_str(t)
            }
            Literal::Boolean(b) => write!(f, "{b}"),
            Literal::Blob(bytes) => {
                f.write_str("0x")?;
                for b in bytes {
                    write!(f, "{b:02x}")?;
                }
                Ok(())
            }
            // As Cassandra prints a null term in its messages.
            Literal::Null => f.write_str("NULL"),
        }
    }
}

impl fmt::Display for BindMarker {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.name {
            Some(n) => write!(f, ":{n}"),
            None => f.write_str("?"),
        }
    }
}

/// The operator as written in CQL.
pub fn op_text(op: ArithOp) -> &'static str {
    match op {
        ArithOp::Add => "+",
        ArithOp::Sub => "-",
        ArithOp::Mul => "*",
        ArithOp::Div => "/",
        ArithOp::Rem => "%",
    }
}

fn op_prec(op: ArithOp) -> u8 {
    match op {
        ArithOp::Add | ArithOp::Sub => 1,
        _ => 2,
    }
}

/// Precedence of a term: 1 sums, 2 products, 3 negation and casts, 4 the rest.
fn term_prec(t: &Term) -> u8 {
    match t {
        Term::Arith { op, .. } => op_prec(*op),
        Term::Negate { .. } | Term::Cast { .. } => 3,
        _ => 4,
    }
}

/// `t`, parenthesized unless its precedence is at least `min`.
fn term_at(t: &Term, min: u8) -> String {
    if term_prec(t) < min {
        format!("({t})")
    } else {
        t.to_string()
    }
}

impl fmt::Display for Term {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Term::Literal { value, .. } => write!(f, "{value}"),
            Term::Bind(b) => write!(f, "{b}"),
            Term::List { items, .. } => write!(f, "[{}]", join(items, |t| t.to_string())),
            Term::Set { items, .. } => write!(f, "{{{}}}", join(items, |t| t.to_string())),
            Term::Map { entries, .. } => {
                write!(f, "{{{}}}", join(entries, |(k, v)| format!("{k}: {v}")))
            }
            Term::Tuple { items, .. } => write!(f, "({})", join(items, |t| t.to_string())),
            Term::Udt { fields, .. } => {
                write!(f, "{{{}}}", join(fields, |(k, v)| format!("{k}: {v}")))
            }
            Term::Function { name, args, .. } => {
                write!(
                    f,
                    "{}({})",
                    function_name(name),
                    join(args, |t| t.to_string())
                )
            }
            // The operand of a cast or a negation is a simple term. A term has
            // no grouping parentheses (`(t)` is a one-element tuple, as in
            // Cassandra's grammar), so a tree the parser built never holds a
            // looser one there; any other tree prints it in parentheses, which
            // read back as that tuple.
            Term::Cast { ty, term, .. } => write!(f, "({ty}) {}", term_at(term, 4)),
            Term::Negate { term, .. } => write!(f, "- {}", term_at(term, 4)),
            Term::Arith {
                op, left, right, ..
            } => {
                let p = op_prec(*op);
                write!(
                    f,
                    "{} {} {}",
                    term_at(left, p),
                    op_text(*op),
                    term_at(right, p + 1)
                )
            }
        }
    }
}

// ---------------------------------------------------------------------------
// Selectors
// ---------------------------------------------------------------------------

fn selector_prec(s: &Selector) -> u8 {
    match s {
        Selector::Arith { op, .. } => op_prec(*op),
        Selector::Negate { .. } => 3,
        _ => 4,
    }
}

fn selector_at(s: &Selector, min: u8) -> String {
    if selector_prec(s) < min {
        format!("({s})")
    } else {
        s.to_string()
    }
}

/// The base of `.field` / `[key]`: numbers and expressions in parentheses
/// (`1.f` would read as the number `1.`); a string bare (`('')[0]` would read as
/// a cast to the custom type `''`).
fn selector_base(s: &Selector) -> String {
    match s {
        Selector::Term(Term::Literal {
            value: Literal::String(_),
            ..
        })
        | Selector::Column(_)
        | Selector::Function { .. }
        | Selector::WriteTime { .. }
        | Selector::MaxWriteTime { .. }
        | Selector::Ttl { .. }
        | Selector::Cast { .. }
        | Selector::Field { .. }
        | Selector::Element { .. }
        | Selector::Slice { .. } => s.to_string(),
        _ => format!("({s})"),
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Selector::Column(n) => write!(f, "{n}"),
            Selector::WriteTime { column, .. } => write!(f, "WRITETIME({column})"),
            Selector::MaxWriteTime { column, .. } => write!(f, "MAXWRITETIME({column})"),
            Selector::Ttl { column, .. } => write!(f, "TTL({column})"),
            Selector::Function { name, args, .. } => {
                write!(
                    f,
                    "{}({})",
                    function_name(name),
                    join(args, |s| s.to_string())
                )
            }
            Selector::Star { .. } => f.write_str("*"),
            Selector::Cast { selector, ty, .. } => write!(f, "CAST({selector} AS {ty})"),
            Selector::Field { selector, field } => {
                write!(f, "{}.{field}", selector_base(selector))
            }
            Selector::Element { selector, key, .. } => {
                write!(f, "{}[{key}]", selector_base(selector))
            }
            Selector::Slice {
                selector, from, to, ..
            } => {
                let bound =
                    |t: &Option<Term>| t.as_ref().map(|t| t.to_string()).unwrap_or_default();
                write!(
                    f,
                    "{}[{} .. {}]",
                    selector_base(selector),
                    bound(from),
                    bound(to)
                )
            }
            Selector::Term(t) => write!(f, "{t}"),
            Selector::Arith {
                op, left, right, ..
            } => {
                let p = op_prec(*op);
                write!(
                    f,
                    "{} {} {}",
                    selector_at(left, p),
                    op_text(*op),
                    selector_at(right, p + 1)
                )
            }
            Selector::Negate { selector, .. } => write!(f, "- {}", selector_at(selector, 3)),
        }
    }
}

// ---------------------------------------------------------------------------
// Relations, conditions, settings
// ---------------------------------------------------------------------------

fn operator(op: Operator) -> &'static str {
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

/// A tuple always in parentheses, even of one element (relation contexts).
fn tuple_or_term(t: &Term) -> String {
    match t {
        Term::Tuple { items, .. } => format!("({})", join(items, |t| t.to_string())),
        t => t.to_string(),
    }
}

impl fmt::Display for Relation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.target {
            RelationTarget::Column(c) => write!(f, "{c}")?,
            RelationTarget::Columns(cs) => write!(f, "({})", join(cs, name))?,
            RelationTarget::Token(cs) => write!(f, "token({})", join(cs, name))?,
            RelationTarget::Element { column, key } => write!(f, "{column}[{key}]")?,
        }
        if self.op == Operator::IsNot {
            return f.write_str(" IS NOT NULL");
        }
        let value = match (&self.target, self.op, &self.value) {
            (RelationTarget::Columns(_), Operator::In, Term::Tuple { items, .. }) => {
                format!("({})", join(items, tuple_or_term))
            }
            (RelationTarget::Columns(_), _, v) | (_, Operator::In, v) => tuple_or_term(v),
            (_, _, v) => v.to_string(),
        };
        write!(f, " {} {value}", operator(self.op))
    }
}

impl fmt::Display for Condition {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.column)?;
        if let Some(k) = &self.element {
            write!(f, "[{k}]")?;
        }
        if let Some(field) = &self.field {
            write!(f, ".{field}")?;
        }
        let value = if self.op == Operator::In {
            tuple_or_term(&self.value)
        } else {
            self.value.to_string()
        };
        write!(f, " {} {value}", operator(self.op))
    }
}

/// An option scalar: bare when it is a plain number or a boolean (it reads back
/// as the same text either way).
fn option_scalar(s: &str) -> String {
    let digits = s.strip_prefix('-').unwrap_or(s);
    let number = !digits.is_empty()
        && digits
            .split_once('.')
            .map_or(digits.bytes().all(|b| b.is_ascii_digit()), |(a, b)| {
                !a.is_empty()
                    && !b.is_empty()
                    && a.bytes().all(|c| c.is_ascii_digit())
                    && b.bytes().all(|c| c.is_ascii_digit())
            });
    if number || s == "true" || s == "false" {
        s.to_string()
    } else {
        quote(s)
    }
}

impl fmt::Display for Setting {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} = ", self.name)?;
        match &self.value {
            OptionLiteral::Scalar(s) => f.write_str(&option_scalar(s)),
            OptionLiteral::Map(m) => {
                let entries: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{}: {}", quote(k), option_scalar(v)))
                    .collect();
                write!(f, "{{{}}}", entries.join(", "))
            }
        }
    }
}

fn settings(s: &[Setting]) -> String {
    s.iter()
        .map(|s| s.to_string())
        .collect::<Vec<_>>()
        .join(" AND ")
}

fn using(u: &Using) -> String {
    let mut parts = Vec::new();
    if let Some(t) = &u.timestamp {
        parts.push(format!("TIMESTAMP {t}"));
    }
    if let Some(t) = &u.ttl {
        parts.push(format!("TTL {t}"));
    }
    if parts.is_empty() {
        String::new()
    } else {
        format!(" USING {}", parts.join(" AND "))
    }
}

fn where_clause(rs: &[Relation]) -> String {
    rs.iter()
        .map(|r| r.to_string())
        .collect::<Vec<_>>()
        .join(" AND ")
}

fn conditions(c: &Conditions) -> String {
    match c {
        Conditions::None => String::new(),
        Conditions::Exists => " IF EXISTS".to_string(),
        Conditions::Columns(cs) => format!(
            " IF {}",
            cs.iter()
                .map(|c| c.to_string())
                .collect::<Vec<_>>()
                .join(" AND ")
        ),
    }
}

fn ordering(o: &Ordering) -> String {
    format!("{} {}", o.column, if o.descending { "DESC" } else { "ASC" })
}

// ---------------------------------------------------------------------------
// Statements
// ---------------------------------------------------------------------------

impl fmt::Display for Select {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("SELECT ")?;
        if self.json {
            f.write_str("JSON ")?;
        }
        if self.distinct {
            f.write_str("DISTINCT ")?;
        }
        let selection = match &self.selection {
            Selection::Star { .. } => "*".to_string(),
            Selection::Items(items) => {
                let text = join(items, |i| match &i.alias {
                    Some(a) => format!("{} AS {a}", i.selector),
                    None => i.selector.to_string(),
                });
                // A leading column named `json` or `distinct` would read as the
                // keyword (invariant 2).
                let lead = text
                    .bytes()
                    .take_while(|b| b.is_ascii_alphanumeric() || *b == b'_')
                    .count();
                match &text[..lead] {
                    w @ ("json" | "distinct") => format!("\"{w}\"{}", &text[lead..]),
                    _ => text,
                }
            }
        };
        write!(f, "{selection} FROM {}", self.table)?;
        if !self.where_clause.is_empty() {
            write!(f, " WHERE {}", where_clause(&self.where_clause))?;
        }
        if !self.group_by.is_empty() {
            write!(f, " GROUP BY {}", join(&self.group_by, name))?;
        }
        if !self.order_by.is_empty() {
            write!(f, " ORDER BY {}", join(&self.order_by, ordering))?;
        }
        if let Some(l) = &self.per_partition_limit {
            write!(f, " PER PARTITION LIMIT {l}")?;
        }
        if let Some(l) = &self.limit {
            write!(f, " LIMIT {l}")?;
        }
        if self.allow_filtering {
            f.write_str(" ALLOW FILTERING")?;
        }
        Ok(())
    }
}

impl fmt::Display for Insert {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "INSERT INTO {}", self.table)?;
        match &self.values {
            InsertValues::Values { columns, values } => write!(
                f,
                " ({}) VALUES ({})",
                join(columns, name),
                join(values, |t| t.to_string())
            )?,
            InsertValues::Json { document, default } => {
                write!(f, " JSON {document}")?;
                if *default == JsonDefault::Unset {
                    f.write_str(" DEFAULT UNSET")?;
                }
            }
        }
        if self.if_not_exists {
            f.write_str(" IF NOT EXISTS")?;
        }
        f.write_str(&using(&self.using))
    }
}

impl fmt::Display for Assignment {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Assignment::Set { column, value } => write!(f, "{column} = {value}"),
            Assignment::SetElement { column, key, value } => {
                write!(f, "{column}[{key}] = {value}")
            }
            Assignment::SetField {
                column,
                field,
                value,
            } => write!(f, "{column}.{field} = {value}"),
            Assignment::Add { column, value } => write!(f, "{column} = {column} + {value}"),
            Assignment::Subtract { column, value } => {
                write!(f, "{column} = {column} - {value}")
            }
            Assignment::Prepend { column, value } => write!(f, "{column} = {value} + {column}"),
        }
    }
}

impl fmt::Display for Update {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "UPDATE {}{} SET {} WHERE {}{}",
            self.table,
            using(&self.using),
            join(&self.assignments, |a| a.to_string()),
            where_clause(&self.where_clause),
            conditions(&self.conditions)
        )
    }
}

impl fmt::Display for Deletion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Deletion::Column(c) => write!(f, "{c}"),
            Deletion::Element { column, key } => write!(f, "{column}[{key}]"),
            Deletion::Field { column, field } => write!(f, "{column}.{field}"),
        }
    }
}

impl fmt::Display for Delete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DELETE ")?;
        if !self.columns.is_empty() {
            write!(f, "{} ", join(&self.columns, |d| d.to_string()))?;
        }
        write!(
            f,
            "FROM {}{} WHERE {}{}",
            self.table,
            using(&self.using),
            where_clause(&self.where_clause),
            conditions(&self.conditions)
        )
    }
}

impl fmt::Display for Batch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self.kind {
            BatchKind::Logged => "BEGIN BATCH",
            BatchKind::Unlogged => "BEGIN UNLOGGED BATCH",
            BatchKind::Counter => "BEGIN COUNTER BATCH",
        })?;
        f.write_str(&using(&self.using))?;
        for s in &self.statements {
            match s {
                BatchStatement::Insert(i) => write!(f, " {i};")?,
                BatchStatement::Update(u) => write!(f, " {u};")?,
                BatchStatement::Delete(d) => write!(f, " {d};")?,
            }
        }
        f.write_str(" APPLY BATCH")
    }
}

fn column_definition(c: &ColumnDefinition) -> String {
    let mut s = format!("{} {}", c.name, c.ty);
    if c.is_static {
        s.push_str(" STATIC");
    }
    if c.primary_key {
        s.push_str(" PRIMARY KEY");
    }
    s
}

impl fmt::Display for CreateTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("CREATE TABLE ")?;
        if self.if_not_exists {
            f.write_str("IF NOT EXISTS ")?;
        }
        let mut items: Vec<String> = self.columns.iter().map(column_definition).collect();
        if !self.partition_key.is_empty() {
            let mut key = format!("({})", join(&self.partition_key, name));
            for c in &self.clustering {
                let _ = write!(key, ", {c}");
            }
            items.push(format!("PRIMARY KEY ({key})"));
        }
        write!(f, "{} ({})", self.table, items.join(", "))?;
        let mut with = Vec::new();
        if !self.clustering_order.is_empty() {
            with.push(format!(
                "CLUSTERING ORDER BY ({})",
                join(&self.clustering_order, ordering)
            ));
        }
        if self.compact_storage {
            with.push("COMPACT STORAGE".to_string());
        }
        with.extend(self.settings.iter().map(|s| s.to_string()));
        if !with.is_empty() {
            write!(f, " WITH {}", with.join(" AND "))?;
        }
        Ok(())
    }
}

fn renames(r: &[(Name, Name)]) -> String {
    r.iter()
        .map(|(a, b)| format!("{a} TO {b}"))
        .collect::<Vec<_>>()
        .join(" AND ")
}

impl fmt::Display for AlterTable {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("ALTER TABLE ")?;
        if self.if_exists {
            f.write_str("IF EXISTS ")?;
        }
        write!(f, "{} ", self.table)?;
        match &self.action {
            AlterTableAction::Add {
                if_not_exists,
                columns,
            } => {
                f.write_str("ADD ")?;
                if *if_not_exists {
                    f.write_str("IF NOT EXISTS ")?;
                }
                let cols = join(columns, column_definition);
                if columns.len() == 1 {
                    f.write_str(&cols)
                } else {
                    write!(f, "({cols})")
                }
            }
            AlterTableAction::Drop {
                if_exists,
                columns,
                timestamp,
            } => {
                f.write_str("DROP ")?;
                if *if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                if columns.len() == 1 {
                    write!(f, "{}", columns[0])?;
                } else {
                    write!(f, "({})", join(columns, name))?;
                }
                if let Some(ts) = timestamp {
                    write!(f, " USING TIMESTAMP {ts}")?;
                }
                Ok(())
            }
            AlterTableAction::Rename {
                if_exists,
                renames: r,
            } => {
                f.write_str("RENAME ")?;
                if *if_exists {
                    f.write_str("IF EXISTS ")?;
                }
                f.write_str(&renames(r))
            }
            AlterTableAction::AlterType { column, ty } => write!(f, "ALTER {column} TYPE {ty}"),
            AlterTableAction::With { settings: s } => write!(f, "WITH {}", settings(s)),
            AlterTableAction::DropCompactStorage => f.write_str("DROP COMPACT STORAGE"),
        }
    }
}

fn permission(p: &Permission) -> String {
    match p {
        Permission::All => "ALL PERMISSIONS",
        Permission::Create => "CREATE",
        Permission::Alter => "ALTER",
        Permission::Drop => "DROP",
        Permission::Select => "SELECT",
        Permission::Modify => "MODIFY",
        Permission::Authorize => "AUTHORIZE",
        Permission::Describe => "DESCRIBE",
        Permission::Execute => "EXECUTE",
        Permission::Unmask => "UNMASK",
        Permission::SelectMasked => "SELECT_MASKED",
    }
    .to_string()
}

impl fmt::Display for Resource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Resource::AllKeyspaces => f.write_str("ALL KEYSPACES"),
            Resource::Keyspace(k) => write!(f, "KEYSPACE {k}"),
            Resource::Table(t) => write!(f, "TABLE {t}"),
            Resource::AllRoles => f.write_str("ALL ROLES"),
            Resource::Role(r) => write!(f, "ROLE {r}"),
            Resource::AllFunctions { keyspace } => match keyspace {
                Some(k) => write!(f, "ALL FUNCTIONS IN KEYSPACE {k}"),
                None => f.write_str("ALL FUNCTIONS"),
            },
            Resource::Function { name, arg_types } => write!(
                f,
                "FUNCTION {}({})",
                function_name(name),
                join(arg_types, |t| t.to_string())
            ),
            Resource::AllMbeans => f.write_str("ALL MBEANS"),
            Resource::Mbean(m) => write!(f, "MBEAN {}", quote(m)),
        }
    }
}

impl fmt::Display for RoleOptions {
    /// The options after `WITH`, joined by `AND` (empty when there are none).
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mut parts = Vec::new();
        if let Some(p) = &self.password {
            parts.push(format!("PASSWORD = {}", quote(p)));
        }
        if let Some(p) = &self.hashed_password {
            parts.push(format!("HASHED PASSWORD = {}", quote(p)));
        }
        if let Some(b) = self.login {
            parts.push(format!("LOGIN = {b}"));
        }
        if let Some(b) = self.superuser {
            parts.push(format!("SUPERUSER = {b}"));
        }
        if !self.options.is_empty() {
            parts.push(format!(
                "OPTIONS = {{{}}}",
                join(&self.options, |(k, v)| format!(
                    "{}: {}",
                    quote(k),
                    quote(v)
                ))
            ));
        }
        match &self.datacenters {
            Some(dcs) if dcs.is_empty() => parts.push("ACCESS TO ALL DATACENTERS".to_string()),
            Some(dcs) => parts.push(format!(
                "ACCESS TO DATACENTERS {{{}}}",
                join(dcs, |d| quote(d))
            )),
            None => {}
        }
        f.write_str(&parts.join(" AND "))
    }
}

fn with_role_options(o: &RoleOptions) -> String {
    let text = o.to_string();
    if text.is_empty() {
        text
    } else {
        format!(" WITH {text}")
    }
}

impl fmt::Display for Describe {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("DESCRIBE ")?;
        match self {
            Describe::Cluster => f.write_str("CLUSTER"),
            Describe::Schema { full } => f.write_str(if *full { "FULL SCHEMA" } else { "SCHEMA" }),
            Describe::Keyspaces => f.write_str("KEYSPACES"),
            Describe::Keyspace { name, only } => {
                if *only {
                    f.write_str("ONLY ")?;
                }
                f.write_str("KEYSPACE")?;
                match name {
                    Some(n) => write!(f, " {n}"),
                    None => Ok(()),
                }
            }
            Describe::Tables => f.write_str("TABLES"),
            Describe::Table(t) => write!(f, "TABLE {t}"),
            Describe::Types => f.write_str("TYPES"),
            Describe::Type(t) => write!(f, "TYPE {}", type_name(t)),
            Describe::Functions => f.write_str("FUNCTIONS"),
            Describe::Function(n) => write!(f, "FUNCTION {}", function_name(n)),
            Describe::Aggregates => f.write_str("AGGREGATES"),
            Describe::Aggregate(n) => write!(f, "AGGREGATE {}", function_name(n)),
            Describe::Index(n) => write!(f, "INDEX {n}"),
            Describe::MaterializedView(n) => write!(f, "MATERIALIZED VIEW {n}"),
            Describe::Generic(q) => {
                // The plural keywords win over a name spelled like them.
                const TAKEN: &[&str] = &[
                    "cluster",
                    "keyspaces",
                    "tables",
                    "types",
                    "functions",
                    "aggregates",
                ];
                let first = match &q.keyspace {
                    Some(k) => k,
                    None => &q.name,
                };
                let first_text = guarded(first, &[TAKEN]);
                match &q.keyspace {
                    Some(_) => write!(f, "{first_text}.{}", q.name),
                    None => f.write_str(&first_text),
                }
            }
        }
    }
}

/// The shortest statement of each unsupported kind (invariant 4).
fn unsupported(feature: UnsupportedFeature) -> &'static str {
    match feature {
        UnsupportedFeature::CreateIndex => "CREATE INDEX ON t (c)",
        UnsupportedFeature::DropIndex => "DROP INDEX i",
        UnsupportedFeature::CreateMaterializedView => {
            "CREATE MATERIALIZED VIEW v AS SELECT * FROM t WHERE k IS NOT NULL PRIMARY KEY (k)"
        }
        UnsupportedFeature::AlterMaterializedView => "ALTER MATERIALIZED VIEW v WITH comment = ''",
        UnsupportedFeature::DropMaterializedView => "DROP MATERIALIZED VIEW v",
        UnsupportedFeature::CreateFunction => {
            "CREATE FUNCTION f () CALLED ON NULL INPUT RETURNS int LANGUAGE java AS 'return 1;'"
        }
        UnsupportedFeature::DropFunction => "DROP FUNCTION f",
        UnsupportedFeature::CreateAggregate => "CREATE AGGREGATE a (int) SFUNC f STYPE int",
        UnsupportedFeature::DropAggregate => "DROP AGGREGATE a",
        UnsupportedFeature::CreateTrigger => "CREATE TRIGGER tr ON t USING 'c'",
        UnsupportedFeature::DropTrigger => "DROP TRIGGER tr ON t",
        UnsupportedFeature::Identity => "DROP IDENTITY 'i'",
    }
}

impl fmt::Display for Statement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let if_ne = |b: bool| if b { "IF NOT EXISTS " } else { "" };
        let if_e = |b: bool| if b { "IF EXISTS " } else { "" };
        match self {
            Statement::Select(s) => write!(f, "{s}"),
            Statement::Insert(s) => write!(f, "{s}"),
            Statement::Update(s) => write!(f, "{s}"),
            Statement::Delete(s) => write!(f, "{s}"),
            Statement::Batch(s) => write!(f, "{s}"),
            Statement::Use(n) => write!(f, "USE {n}"),
            Statement::CreateKeyspace {
                if_not_exists,
                name,
                settings: s,
            } => write!(
                f,
                "CREATE KEYSPACE {}{name} WITH {}",
                if_ne(*if_not_exists),
                settings(s)
            ),
            Statement::AlterKeyspace {
                if_exists,
                name,
                settings: s,
            } => write!(
                f,
                "ALTER KEYSPACE {}{name} WITH {}",
                if_e(*if_exists),
                settings(s)
            ),
            Statement::DropKeyspace { if_exists, name } => {
                write!(f, "DROP KEYSPACE {}{name}", if_e(*if_exists))
            }
            Statement::CreateTable(t) => write!(f, "{t}"),
            Statement::AlterTable(t) => write!(f, "{t}"),
            Statement::DropTable { if_exists, table } => {
                write!(f, "DROP TABLE {}{table}", if_e(*if_exists))
            }
            Statement::Truncate { table } => write!(f, "TRUNCATE TABLE {table}"),
            Statement::CreateType {
                if_not_exists,
                name,
                fields,
            } => write!(
                f,
                "CREATE TYPE {}{} ({})",
                if_ne(*if_not_exists),
                type_name(name),
                join(fields, |(n, t)| format!("{n} {t}"))
            ),
            Statement::AlterType {
                if_exists,
                name,
                action,
            } => {
                write!(f, "ALTER TYPE {}{} ", if_e(*if_exists), type_name(name))?;
                match action {
                    AlterTypeAction::Add {
                        if_not_exists,
                        field,
                        ty,
                    } => write!(f, "ADD {}{field} {ty}", if_ne(*if_not_exists)),
                    AlterTypeAction::Rename {
                        if_exists,
                        renames: r,
                    } => {
                        write!(f, "RENAME {}{}", if_e(*if_exists), renames(r))
                    }
                    AlterTypeAction::AlterField { field, ty } => {
                        write!(f, "ALTER {field} TYPE {ty}")
                    }
                }
            }
            Statement::DropType { if_exists, name } => {
                write!(f, "DROP TYPE {}{}", if_e(*if_exists), type_name(name))
            }
            Statement::CreateRole {
                if_not_exists,
                name,
                options,
            } => write!(
                f,
                "CREATE ROLE {}{name}{}",
                if_ne(*if_not_exists),
                with_role_options(options)
            ),
            Statement::AlterRole {
                if_exists,
                name,
                options,
            } => write!(
                f,
                "ALTER ROLE {}{name}{}",
                if_e(*if_exists),
                with_role_options(options)
            ),
            Statement::DropRole { if_exists, name } => {
                write!(f, "DROP ROLE {}{name}", if_e(*if_exists))
            }
            Statement::ListRoles {
                of,
                recursive,
                users,
            } => {
                if *users {
                    return f.write_str("LIST USERS");
                }
                f.write_str("LIST ROLES")?;
                if let Some(r) = of {
                    write!(f, " OF {r}")?;
                }
                if !recursive {
                    f.write_str(" NORECURSIVE")?;
                }
                Ok(())
            }
            Statement::GrantPermissions {
                permissions,
                resource,
                grantee,
            } => write!(
                f,
                "GRANT {} ON {resource} TO {grantee}",
                join(permissions, permission)
            ),
            Statement::RevokePermissions {
                permissions,
                resource,
                revokee,
            } => write!(
                f,
                "REVOKE {} ON {resource} FROM {revokee}",
                join(permissions, permission)
            ),
            Statement::ListPermissions {
                permissions,
                resource,
                of,
                recursive,
            } => {
                write!(f, "LIST {}", join(permissions, permission))?;
                if let Some(r) = resource {
                    write!(f, " ON {r}")?;
                }
                if let Some(r) = of {
                    write!(f, " OF {r}")?;
                }
                if !recursive {
                    f.write_str(" NORECURSIVE")?;
                }
                Ok(())
            }
            Statement::GrantRole { role, grantee } => write!(f, "GRANT {role} TO {grantee}"),
            Statement::RevokeRole { role, revokee } => write!(f, "REVOKE {role} FROM {revokee}"),
            Statement::Describe(d) => write!(f, "{d}"),
            Statement::Unsupported { feature, .. } => f.write_str(unsupported(*feature)),
        }
    }
}

impl Statement {
    /// The statement as CQL text (`Display`), which parses back to this tree
    /// (invariant 1).
    pub fn to_cql(&self) -> String {
        self.to_string()
    }
}

impl Term {
    /// The term as CQL text (`Display`).
    pub fn to_cql(&self) -> String {
        self.to_string()
    }
}
