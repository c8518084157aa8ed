//! The CQL statement tree: what a statement *says*, as the parser read it, before
//! anything is checked against the catalog.
//!
//! Owns the shape of every statement of Cassandra 5.0's CQL grammar (`Parser.g` /
//! `Lexer.g` in apache/cassandra), including the ones Strata refuses to execute
//! (secondary indexes, materialized views, functions, aggregates, triggers): they
//! are parsed whole, so a script that contains one fails with "not supported"
//! naming the feature rather than with a syntax error at a valid token.
//!
//! Pure values: `Clone + Send + Sync`, no catalog, no I/O. The parser
//! (`cql::parser`) builds them; the executor (`cql::exec`) checks and runs them.
//!
//! Invariants:
//! 1. Names are folded as CQL folds them: an unquoted identifier is lower case,
//!    a double-quoted one keeps its case. [`Name::text`] is the folded name, what
//!    the catalog compares; `Name::quoted` records how it was written.
//! 2. Every node that an error may point at carries the byte offset (`pos`) where
//!    it starts in the statement text.
//! 3. Bind markers are numbered in text order from 0 across the whole statement
//!    (a batch numbers across its statements), so `?` number `i` is the i-th value
//!    of an EXECUTE or a QUERY with values; a named marker `:x` also has its
//!    number, and the name.
//! 4. Literal text is kept as typed (`Literal::Integer("007")`): the executor
//!    converts it to the receiving column's type, so `1` can be an int, a bigint
//!    or a varint and `'2024-01-01'` a date, a timestamp or a text.

use super::settings::Setting;

/// An identifier after CQL's folding (invariant 1).
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Name {
    pub text: String,
    /// Written in double quotes.
    pub quoted: bool,
    pub pos: usize,
}

/// `[keyspace.]name`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QualifiedName {
    pub keyspace: Option<Name>,
    pub name: Name,
}

/// A CQL type as written: `int`, `frozen<map<text, int>>`, `tuple<int, text>`,
/// `my_udt`, `vector<float, 3>`, `'org.apache...CustomType'`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum TypeExpr {
    /// A native type by its CQL name, lower case (`int`, `text`, `counter`,
    /// `duration`, ...). `varchar` is kept as written; the executor aliases it.
    Native(String),
    List(Box<TypeExpr>),
    Set(Box<TypeExpr>),
    Map(Box<TypeExpr>, Box<TypeExpr>),
    Tuple(Vec<TypeExpr>),
    Frozen(Box<TypeExpr>),
    /// A user-defined type, optionally keyspace-qualified.
    Udt(QualifiedName),
    /// `vector<element, dimension>`.
    Vector(Box<TypeExpr>, u32),
    /// A quoted custom type class name.
    Custom(String),
}

impl TypeExpr {
    /// The type as CQL spells it (`frozen<map<text, int>>`): the printer's
    /// `Display`.
    pub fn to_cql(&self) -> String {
        self.to_string()
    }
}

/// A constant as typed (invariant 4).
#[derive(Clone, Debug, PartialEq)]
pub enum Literal {
    /// `'...'` or `$$...$$`, unescaped.
    String(String),
    /// Digits with an optional sign, as typed.
    Integer(String),
    /// A decimal or exponent number, as typed; also `NaN`, `Infinity`,
    /// `-Infinity`.
    Float(String),
    Boolean(bool),
    /// An unquoted UUID, as typed.
    Uuid(String),
    /// `0x...`: the bytes.
    Blob(Vec<u8>),
    /// `1h30m`, `P1DT2H`, `P2W`, as typed.
    Duration(String),
    Null,
}

/// A bind marker (invariant 3).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BindMarker {
    pub index: usize,
    /// `:name` markers; `None` for `?`.
    pub name: Option<Name>,
    pub pos: usize,
}

/// Arithmetic operators of CQL terms and selectors (Cassandra 4.0+).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ArithOp {
    Add,
    Sub,
    Mul,
    Div,
    Rem,
}

/// A value in a statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Term {
    Literal {
        value: Literal,
        pos: usize,
    },
    Bind(BindMarker),
    /// `[a, b]`
    List {
        items: Vec<Term>,
        pos: usize,
    },
    /// `{a, b}`; `{}` parses as an empty map literal (`Map`), as in Cassandra,
    /// and the executor accepts it for a set.
    Set {
        items: Vec<Term>,
        pos: usize,
    },
    /// `{k: v, ...}`
    Map {
        entries: Vec<(Term, Term)>,
        pos: usize,
    },
    /// `(a, b, ...)` with at least two elements, or one element followed by a
    /// comma-less context that makes it a tuple (`(c1) = (1)` in relations).
    Tuple {
        items: Vec<Term>,
        pos: usize,
    },
    /// `{field: value, ...}` where the receiver is a UDT: the parser cannot tell
    /// a UDT literal from a map with identifier keys, so it returns `Map` when
    /// every key is a term and `Udt` when every key is a bare identifier.
    Udt {
        fields: Vec<(Name, Term)>,
        pos: usize,
    },
    /// `name(args)`: `now()`, `uuid()`, `toTimestamp(now())`, `token(...)`...
    Function {
        name: QualifiedName,
        args: Vec<Term>,
        pos: usize,
    },
    /// `(type) term`
    Cast {
        ty: TypeExpr,
        term: Box<Term>,
        pos: usize,
    },
    /// `a + b`, `-a` is `Negate`.
    Arith {
        op: ArithOp,
        left: Box<Term>,
        right: Box<Term>,
        pos: usize,
    },
    Negate {
        term: Box<Term>,
        pos: usize,
    },
}

impl Term {
    pub fn pos(&self) -> usize {
        match self {
            Term::Literal { pos, .. }
            | Term::List { pos, .. }
            | Term::Set { pos, .. }
            | Term::Map { pos, .. }
            | Term::Tuple { pos, .. }
            | Term::Udt { pos, .. }
            | Term::Function { pos, .. }
            | Term::Cast { pos, .. }
            | Term::Arith { pos, .. }
            | Term::Negate { pos, .. } => *pos,
            Term::Bind(b) => b.pos,
        }
    }

    /// The term a receiver of a tuple type (`to_tuple`) or of any other type
    /// takes: a one-element tuple literal `(t)` is a tuple only for a tuple
    /// receiver and `t` for any other, as Cassandra prepares one (so `k =
    /// (1)` and `(1 + 2) * 3` read as grouping where no tuple is wanted).
    pub fn ungrouped(&self, to_tuple: bool) -> &Term {
        match self {
            Term::Tuple { items, .. } if items.len() == 1 && !to_tuple => items[0].ungrouped(false),
            t => t,
        }
    }
}

// ---------------------------------------------------------------------------
// SELECT
// ---------------------------------------------------------------------------

/// One item of a select clause.
#[derive(Clone, Debug, PartialEq)]
pub enum Selector {
    Column(Name),
    /// `WRITETIME(col)`, `MAXWRITETIME(col)`, `TTL(col)`; a selector may address
    /// an element or field (`WRITETIME(m['k'])` in 5.0).
    WriteTime {
        column: Box<Selector>,
        pos: usize,
    },
    MaxWriteTime {
        column: Box<Selector>,
        pos: usize,
    },
    Ttl {
        column: Box<Selector>,
        pos: usize,
    },
    /// `count(*)`, `count(1)`, `min(x)`, `token(k)`, `toJson(x)`, ...
    /// `count(*)` has the single argument `Selector::Star`.
    Function {
        name: QualifiedName,
        args: Vec<Selector>,
        pos: usize,
    },
    /// `*` inside `count(*)`.
    Star {
        pos: usize,
    },
    /// `CAST(sel AS type)`
    Cast {
        selector: Box<Selector>,
        ty: TypeExpr,
        pos: usize,
    },
    /// `sel.field`
    Field {
        selector: Box<Selector>,
        field: Name,
    },
    /// `sel[term]`
    Element {
        selector: Box<Selector>,
        key: Term,
        pos: usize,
    },
    /// `sel[from..to]`, either bound optional.
    Slice {
        selector: Box<Selector>,
        from: Option<Term>,
        to: Option<Term>,
        pos: usize,
    },
    /// A constant or bind marker in the select clause.
    Term(Term),
    Arith {
        op: ArithOp,
        left: Box<Selector>,
        right: Box<Selector>,
        pos: usize,
    },
    Negate {
        selector: Box<Selector>,
        pos: usize,
    },
}

/// `selector [AS alias]`.
#[derive(Clone, Debug, PartialEq)]
pub struct SelectItem {
    pub selector: Selector,
    pub alias: Option<Name>,
}

/// `SELECT *` or a list.
#[derive(Clone, Debug, PartialEq)]
pub enum Selection {
    Star { pos: usize },
    Items(Vec<SelectItem>),
}

/// Comparison operators of WHERE relations and IF conditions.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Operator {
    Eq,
    Lt,
    Lte,
    Gt,
    Gte,
    Neq,
    In,
    Contains,
    ContainsKey,
    Like,
    /// `IS NOT NULL` (materialized view definitions; the right side is `Null`).
    IsNot,
}

/// The left side of a relation.
#[derive(Clone, Debug, PartialEq)]
pub enum RelationTarget {
    Column(Name),
    /// `(c1, c2, ...)`: multi-column relation on clustering columns.
    Columns(Vec<Name>),
    /// `token(k1, k2, ...)`
    Token(Vec<Name>),
    /// `col[key]` (a map entry restriction, filtering only).
    Element {
        column: Name,
        key: Term,
    },
}

/// `target op value`. For `IN`, the value is `Term::Tuple` of candidates (or a
/// bind marker standing for the whole list); for a multi-column `IN` a tuple of
/// tuples.
#[derive(Clone, Debug, PartialEq)]
pub struct Relation {
    pub target: RelationTarget,
    pub op: Operator,
    pub value: Term,
    pub pos: usize,
}

/// `ORDER BY col [ASC|DESC]`.
#[derive(Clone, Debug, PartialEq)]
pub struct Ordering {
    pub column: Name,
    pub descending: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Select {
    pub json: bool,
    pub distinct: bool,
    pub selection: Selection,
    pub table: QualifiedName,
    pub where_clause: Vec<Relation>,
    pub group_by: Vec<Name>,
    pub order_by: Vec<Ordering>,
    pub per_partition_limit: Option<Term>,
    pub limit: Option<Term>,
    pub allow_filtering: bool,
}

// ---------------------------------------------------------------------------
// INSERT, UPDATE, DELETE, BATCH
// ---------------------------------------------------------------------------

/// `USING TIMESTAMP x AND TTL y`.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Using {
    pub timestamp: Option<Term>,
    pub ttl: Option<Term>,
}

/// How an INSERT JSON treats columns the document omits.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum JsonDefault {
    /// `DEFAULT NULL` (the default): omitted columns are set to null.
    Null,
    /// `DEFAULT UNSET`: omitted columns are left alone.
    Unset,
}

#[derive(Clone, Debug, PartialEq)]
pub enum InsertValues {
    /// `(c1, c2) VALUES (v1, v2)`
    Values {
        columns: Vec<Name>,
        values: Vec<Term>,
    },
    /// `JSON 'doc'` or `JSON ?`
    Json {
        document: Term,
        default: JsonDefault,
    },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Insert {
    pub table: QualifiedName,
    pub values: InsertValues,
    pub if_not_exists: bool,
    pub using: Using,
}

/// The right side of one `SET` assignment.
#[derive(Clone, Debug, PartialEq)]
pub enum Assignment {
    /// `col = term`
    Set { column: Name, value: Term },
    /// `col[key] = term`
    SetElement {
        column: Name,
        key: Term,
        value: Term,
    },
    /// `col.field = term`
    SetField {
        column: Name,
        field: Name,
        value: Term,
    },
    /// `col = col + term` or `col += term` (counters, collections).
    Add { column: Name, value: Term },
    /// `col = col - term` or `col -= term`.
    Subtract { column: Name, value: Term },
    /// `col = term + col` (list prepend).
    Prepend { column: Name, value: Term },
}

/// One `IF` condition of an UPDATE or DELETE.
#[derive(Clone, Debug, PartialEq)]
pub struct Condition {
    pub column: Name,
    /// `col[key] op v`
    pub element: Option<Term>,
    /// `col.field op v`
    pub field: Option<Name>,
    pub op: Operator,
    pub value: Term,
    pub pos: usize,
}

/// `IF EXISTS`, `IF NOT EXISTS` (INSERT only: see `Insert::if_not_exists`), or
/// conditions.
#[derive(Clone, Debug, PartialEq)]
pub enum Conditions {
    None,
    Exists,
    Columns(Vec<Condition>),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Update {
    pub table: QualifiedName,
    pub using: Using,
    pub assignments: Vec<Assignment>,
    pub where_clause: Vec<Relation>,
    pub conditions: Conditions,
}

/// What a DELETE removes: whole rows (empty list) or these columns / elements.
#[derive(Clone, Debug, PartialEq)]
pub enum Deletion {
    Column(Name),
    Element { column: Name, key: Term },
    Field { column: Name, field: Name },
}

#[derive(Clone, Debug, PartialEq)]
pub struct Delete {
    pub columns: Vec<Deletion>,
    pub table: QualifiedName,
    /// Only `TIMESTAMP` is allowed in a DELETE; the parser refuses TTL.
    pub using: Using,
    pub where_clause: Vec<Relation>,
    pub conditions: Conditions,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BatchKind {
    Logged,
    Unlogged,
    Counter,
}

/// A statement allowed inside a batch.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchStatement {
    Insert(Insert),
    Update(Update),
    Delete(Delete),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Batch {
    pub kind: BatchKind,
    pub using: Using,
    pub statements: Vec<BatchStatement>,
}

// ---------------------------------------------------------------------------
// Schema
// ---------------------------------------------------------------------------

/// A column in CREATE TABLE.
#[derive(Clone, Debug, PartialEq)]
pub struct ColumnDefinition {
    pub name: Name,
    pub ty: TypeExpr,
    pub is_static: bool,
    /// `c int PRIMARY KEY`
    pub primary_key: bool,
}

#[derive(Clone, Debug, PartialEq)]
pub struct CreateTable {
    pub if_not_exists: bool,
    pub table: QualifiedName,
    pub columns: Vec<ColumnDefinition>,
    /// The `PRIMARY KEY (...)` clause: partition key columns, then clustering
    /// columns. Empty when a column is declared `PRIMARY KEY` inline.
    pub partition_key: Vec<Name>,
    pub clustering: Vec<Name>,
    /// `WITH CLUSTERING ORDER BY (c DESC, ...)`
    pub clustering_order: Vec<Ordering>,
    /// `WITH COMPACT STORAGE` (refused by Cassandra 4.0+, kept to say so).
    pub compact_storage: bool,
    /// The other `WITH` settings, as the option parser takes them.
    pub settings: Vec<Setting>,
    /// The statement's text, for the schema layer that builds the table.
    pub text: String,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterTableAction {
    /// `ADD [IF NOT EXISTS] c type [static], ...`
    Add {
        if_not_exists: bool,
        columns: Vec<ColumnDefinition>,
    },
    /// `DROP [IF EXISTS] c, ...` with an optional `USING TIMESTAMP`.
    Drop {
        if_exists: bool,
        columns: Vec<Name>,
        timestamp: Option<i64>,
    },
    /// `RENAME [IF EXISTS] a TO b AND c TO d`
    Rename {
        if_exists: bool,
        renames: Vec<(Name, Name)>,
    },
    /// `ALTER c TYPE t` (refused by Cassandra 4.0+, kept to say so).
    AlterType { column: Name, ty: TypeExpr },
    /// `WITH settings`
    With { settings: Vec<Setting> },
    /// `DROP COMPACT STORAGE`
    DropCompactStorage,
}

#[derive(Clone, Debug, PartialEq)]
pub struct AlterTable {
    pub if_exists: bool,
    pub table: QualifiedName,
    pub action: AlterTableAction,
}

#[derive(Clone, Debug, PartialEq)]
pub enum AlterTypeAction {
    /// `ADD [IF NOT EXISTS] field type`
    Add {
        if_not_exists: bool,
        field: Name,
        ty: TypeExpr,
    },
    /// `RENAME [IF EXISTS] a TO b AND ...`
    Rename {
        if_exists: bool,
        renames: Vec<(Name, Name)>,
    },
    /// `ALTER field TYPE t` (refused by Cassandra 4.0+).
    AlterField { field: Name, ty: TypeExpr },
}

/// A permission of GRANT / REVOKE / LIST PERMISSIONS.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Permission {
    All,
    Create,
    Alter,
    Drop,
    Select,
    Modify,
    Authorize,
    Describe,
    Execute,
    Unmask,
    SelectMasked,
}

/// What a permission is on.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Resource {
    AllKeyspaces,
    Keyspace(Name),
    Table(QualifiedName),
    AllRoles,
    Role(Name),
    AllFunctions {
        keyspace: Option<Name>,
    },
    Function {
        name: QualifiedName,
        arg_types: Vec<TypeExpr>,
    },
    AllMbeans,
    Mbean(String),
}

/// `WITH PASSWORD = '...' AND LOGIN = true AND SUPERUSER = false AND OPTIONS =
/// {...} AND ACCESS TO DATACENTERS {...}` of CREATE/ALTER ROLE; CREATE USER's
/// `WITH PASSWORD ... SUPERUSER|NOSUPERUSER` maps onto the same.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RoleOptions {
    pub password: Option<String>,
    /// `HASHED PASSWORD` (Cassandra 4.1+): a bcrypt hash given directly.
    pub hashed_password: Option<String>,
    pub login: Option<bool>,
    pub superuser: Option<bool>,
    pub options: Vec<(String, String)>,
    /// `ACCESS TO ALL DATACENTERS` is `Some(vec![])`.
    pub datacenters: Option<Vec<String>>,
}

/// `DESCRIBE ...` (server-side since Cassandra 4.0; cqlsh sends it).
#[derive(Clone, Debug, PartialEq)]
pub enum Describe {
    Cluster,
    Schema {
        full: bool,
    },
    Keyspaces,
    Keyspace {
        name: Option<Name>,
        only: bool,
    },
    Tables,
    Table(QualifiedName),
    Types,
    Type(QualifiedName),
    Functions,
    Function(QualifiedName),
    Aggregates,
    Aggregate(QualifiedName),
    Index(QualifiedName),
    MaterializedView(QualifiedName),
    /// `DESCRIBE name`: a keyspace, table, type, ... whichever exists.
    Generic(QualifiedName),
}

/// Statements Strata parses but does not execute (no secondary indexes,
/// materialized views, user functions, aggregates or triggers): executed, they
/// answer `Invalid` naming the feature.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnsupportedFeature {
    CreateIndex,
    DropIndex,
    CreateMaterializedView,
    AlterMaterializedView,
    DropMaterializedView,
    CreateFunction,
    DropFunction,
    CreateAggregate,
    DropAggregate,
    CreateTrigger,
    DropTrigger,
    /// `ADD IDENTITY` / `DROP IDENTITY` (Cassandra 5.0 mTLS identities).
    Identity,
}

impl UnsupportedFeature {
    /// The statement as a user would name it.
    pub fn statement(self) -> &'static str {
        match self {
            UnsupportedFeature::CreateIndex => "CREATE INDEX",
            UnsupportedFeature::DropIndex => "DROP INDEX",
            UnsupportedFeature::CreateMaterializedView => "CREATE MATERIALIZED VIEW",
            UnsupportedFeature::AlterMaterializedView => "ALTER MATERIALIZED VIEW",
            UnsupportedFeature::DropMaterializedView => "DROP MATERIALIZED VIEW",
            UnsupportedFeature::CreateFunction => "CREATE FUNCTION",
            UnsupportedFeature::DropFunction => "DROP FUNCTION",
            UnsupportedFeature::CreateAggregate => "CREATE AGGREGATE",
            UnsupportedFeature::DropAggregate => "DROP AGGREGATE",
            UnsupportedFeature::CreateTrigger => "CREATE TRIGGER",
            UnsupportedFeature::DropTrigger => "DROP TRIGGER",
            UnsupportedFeature::Identity => "ADD/DROP IDENTITY",
        }
    }
}

/// Every statement.
#[derive(Clone, Debug, PartialEq)]
pub enum Statement {
    Select(Box<Select>),
    Insert(Box<Insert>),
    Update(Box<Update>),
    Delete(Box<Delete>),
    Batch(Box<Batch>),
    Use(Name),
    CreateKeyspace {
        if_not_exists: bool,
        name: Name,
        settings: Vec<Setting>,
    },
    AlterKeyspace {
        if_exists: bool,
        name: Name,
        settings: Vec<Setting>,
    },
    DropKeyspace {
        if_exists: bool,
        name: Name,
    },
    CreateTable(Box<CreateTable>),
    AlterTable(Box<AlterTable>),
    DropTable {
        if_exists: bool,
        table: QualifiedName,
    },
    Truncate {
        table: QualifiedName,
    },
    CreateType {
        if_not_exists: bool,
        name: QualifiedName,
        fields: Vec<(Name, TypeExpr)>,
    },
    AlterType {
        if_exists: bool,
        name: QualifiedName,
        action: AlterTypeAction,
    },
    DropType {
        if_exists: bool,
        name: QualifiedName,
    },
    CreateRole {
        if_not_exists: bool,
        name: Name,
        options: RoleOptions,
    },
    AlterRole {
        if_exists: bool,
        name: Name,
        options: RoleOptions,
    },
    DropRole {
        if_exists: bool,
        name: Name,
    },
    /// `LIST ROLES [OF role] [NORECURSIVE]`; `LIST USERS` sets `users`.
    ListRoles {
        of: Option<Name>,
        recursive: bool,
        users: bool,
    },
    /// `GRANT perms ON resource TO role`
    GrantPermissions {
        permissions: Vec<Permission>,
        resource: Resource,
        grantee: Name,
    },
    RevokePermissions {
        permissions: Vec<Permission>,
        resource: Resource,
        revokee: Name,
    },
    /// `LIST perms [ON resource] [OF role] [NORECURSIVE]`
    ListPermissions {
        permissions: Vec<Permission>,
        resource: Option<Resource>,
        of: Option<Name>,
        recursive: bool,
    },
    /// `GRANT role TO role`
    GrantRole {
        role: Name,
        grantee: Name,
    },
    RevokeRole {
        role: Name,
        revokee: Name,
    },
    Describe(Describe),
    Unsupported {
        feature: UnsupportedFeature,
        pos: usize,
    },
}

impl Statement {
    /// The statement's kind as a user names it, for messages and logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Statement::Select(_) => "SELECT",
            Statement::Insert(_) => "INSERT",
            Statement::Update(_) => "UPDATE",
            Statement::Delete(_) => "DELETE",
            Statement::Batch(_) => "BATCH",
            Statement::Use(_) => "USE",
            Statement::CreateKeyspace { .. } => "CREATE KEYSPACE",
            Statement::AlterKeyspace { .. } => "ALTER KEYSPACE",
            Statement::DropKeyspace { .. } => "DROP KEYSPACE",
            Statement::CreateTable(_) => "CREATE TABLE",
            Statement::AlterTable(_) => "ALTER TABLE",
            Statement::DropTable { .. } => "DROP TABLE",
            Statement::Truncate { .. } => "TRUNCATE",
            Statement::CreateType { .. } => "CREATE TYPE",
            Statement::AlterType { .. } => "ALTER TYPE",
            Statement::DropType { .. } => "DROP TYPE",
            Statement::CreateRole { .. } => "CREATE ROLE",
            Statement::AlterRole { .. } => "ALTER ROLE",
            Statement::DropRole { .. } => "DROP ROLE",
            Statement::ListRoles { .. } => "LIST ROLES",
            Statement::GrantPermissions { .. } => "GRANT",
            Statement::RevokePermissions { .. } => "REVOKE",
            Statement::ListPermissions { .. } => "LIST PERMISSIONS",
            Statement::GrantRole { .. } => "GRANT ROLE",
            Statement::RevokeRole { .. } => "REVOKE ROLE",
            Statement::Describe(_) => "DESCRIBE",
            Statement::Unsupported { feature, .. } => feature.statement(),
        }
    }
}

/// A parsed statement and the number of bind markers it holds, with their names
/// (invariant 3).
#[derive(Clone, Debug, PartialEq)]
pub struct Parsed {
    pub statement: Statement,
    /// One entry per bind marker in text order: its name for `:name` markers.
    pub markers: Vec<Option<Name>>,
}
