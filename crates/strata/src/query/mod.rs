//! The CQL executor: statements parsed by [`crate::cql`] run against a
//! [`Database`], with the results and errors a CQL client expects.
//!
//! Owns what a statement *means*: schema changes, writes with their timestamps
//! and TTLs, lightweight transactions (a compare-and-set under a per-partition
//! lock), SELECT planning over partition slices and token-ordered scans, paging
//! state, aggregates, JSON, the system and virtual tables a driver reads on
//! connect, roles and permissions. Nothing here knows about frames or sockets:
//! the CQL server (`strata-server`) turns frames into calls of [`Executor`] and
//! its results into frames, and the embedded shell calls the same methods, so a
//! statement means the same thing either way.
//!
//! Why a module of its own and not `cql::exec`: the language (`cql`) sits below
//! `schema` and `options`, which call its parsers; the executor sits above `db`.
//! Keeping it in `cql` would make the layers a cycle (`cql -> db -> schema ->
//! cql`); see docs/ARCHITECTURE.md.
//!
//! Threads: one [`Executor`] is shared by every connection (`Send + Sync`);
//! each connection owns its [`Session`]. Statements run on the caller's thread
//! and may block on the disk (the server calls them from a blocking pool).
//!
//! Invariants:
//! 1. A statement either takes effect whole or not at all: every value is
//!    checked and every mutation built before the first is applied (a batch's
//!    mutations of one partition are applied as one update).
//! 2. A lightweight transaction holds its partition's lock from the read of the
//!    current row to the write, and every LWT of that partition takes the same
//!    lock, so LWTs of one partition are linearizable on this node.
//! 3. Every error is a [`QueryError`] with the protocol's error kind; no input
//!    panics.
//! 4. Results carry their values in the protocol's serialized form
//!    ([`crate::types::serialize`]), with metadata giving each column's type.

mod auth;
mod bind;
mod describe;
mod elements;
pub mod executor;
pub(crate) mod json;
mod modify;
mod numeric;
mod restrict;
mod schema_ops;
mod select;
mod system;
pub mod types;
mod values;

pub use auth::ROLES_FILE;
pub use executor::{
    Authenticator, BatchItem, ClientInfo, Executor, NodeInfo, Prepared, ServerState,
};
pub use types::ColumnType;

use crate::cql::CqlErrorKind;
use crate::error::Error;

/// The Cassandra release Strata reports in `system.local.release_version`:
/// drivers and cqlsh pick the schema tables they read and the features they
/// use (server-side DESCRIBE, virtual tables) from it, and Strata follows
/// Cassandra 5.0.9's behaviour, so it answers as that release.
pub const RELEASE_VERSION: &str = "5.0.9";

/// A consistency level, as the protocol numbers them. Strata is one replica, so
/// every level is met by the one node; they are accepted and echoed, never
/// refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Consistency {
    Any,
    One,
    Two,
    Three,
    Quorum,
    All,
    LocalQuorum,
    EachQuorum,
    Serial,
    LocalSerial,
    LocalOne,
}

impl Consistency {
    /// The protocol's `[consistency]` short.
    pub fn code(self) -> u16 {
        match self {
            Consistency::Any => 0x0000,
            Consistency::One => 0x0001,
            Consistency::Two => 0x0002,
            Consistency::Three => 0x0003,
            Consistency::Quorum => 0x0004,
            Consistency::All => 0x0005,
            Consistency::LocalQuorum => 0x0006,
            Consistency::EachQuorum => 0x0007,
            Consistency::Serial => 0x0008,
            Consistency::LocalSerial => 0x0009,
            Consistency::LocalOne => 0x000A,
        }
    }

    pub fn from_code(code: u16) -> Option<Consistency> {
        Some(match code {
            0x0000 => Consistency::Any,
            0x0001 => Consistency::One,
            0x0002 => Consistency::Two,
            0x0003 => Consistency::Three,
            0x0004 => Consistency::Quorum,
            0x0005 => Consistency::All,
            0x0006 => Consistency::LocalQuorum,
            0x0007 => Consistency::EachQuorum,
            0x0008 => Consistency::Serial,
            0x0009 => Consistency::LocalSerial,
            0x000A => Consistency::LocalOne,
            _ => return None,
        })
    }

    /// The name cqlsh and Cassandra's messages use (`LOCAL_QUORUM`).
    pub fn name(self) -> &'static str {
        match self {
            Consistency::Any => "ANY",
            Consistency::One => "ONE",
            Consistency::Two => "TWO",
            Consistency::Three => "THREE",
            Consistency::Quorum => "QUORUM",
            Consistency::All => "ALL",
            Consistency::LocalQuorum => "LOCAL_QUORUM",
            Consistency::EachQuorum => "EACH_QUORUM",
            Consistency::Serial => "SERIAL",
            Consistency::LocalSerial => "LOCAL_SERIAL",
            Consistency::LocalOne => "LOCAL_ONE",
        }
    }
}

/// One bound value of a QUERY or EXECUTE, in the protocol's serialized form.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum BoundValue {
    Value(Vec<u8>),
    Null,
    /// Protocol v4+ "not set": the column is left alone.
    Unset,
}

/// The values of a request: by position, or by name (`:name` markers, or the
/// bind variables' names for `?`, which are the column names they bind to).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum Values {
    #[default]
    None,
    Positional(Vec<BoundValue>),
    Named(Vec<(String, BoundValue)>),
}

/// The parameters of a QUERY, EXECUTE or BATCH, after the frame is decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryParams {
    pub consistency: Consistency,
    pub values: Values,
    /// Rows per page; `None` (or a value <= 0 on the wire) means no paging.
    pub page_size: Option<u32>,
    /// The opaque state a previous page returned.
    pub paging_state: Option<Vec<u8>>,
    pub serial_consistency: Option<Consistency>,
    /// The client's default timestamp (microseconds) for writes without
    /// `USING TIMESTAMP`.
    pub timestamp_micros: Option<i64>,
    /// Protocol v5: the keyspace to use for unqualified names in this request.
    pub keyspace: Option<String>,
    /// Protocol v5: "now" in seconds for TTL and expiry of this request (tests).
    pub now_seconds: Option<i32>,
}

impl Default for QueryParams {
    fn default() -> QueryParams {
        QueryParams {
            consistency: Consistency::One,
            values: Values::None,
            page_size: None,
            paging_state: None,
            serial_consistency: None,
            timestamp_micros: None,
            keyspace: None,
            now_seconds: None,
        }
    }
}

/// A connection's state: the current keyspace (`USE`) and who is logged in.
#[derive(Clone, Debug, Default)]
pub struct Session {
    pub keyspace: Option<String>,
    /// The authenticated role; `None` with authentication off.
    pub user: Option<String>,
}

/// The keyspace, table, name and type of a result column or a bind variable.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ColumnSpec {
    pub keyspace: String,
    pub table: String,
    pub name: String,
    pub ty: ColumnType,
}

/// The columns of a rows result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowsMetadata {
    pub columns: Vec<ColumnSpec>,
}

impl RowsMetadata {
    /// Protocol v5's result metadata id: a digest of the column specifications,
    /// which changes whenever the result's shape does (so a client that skips
    /// metadata notices an ALTER).
    pub fn id(&self) -> [u8; 16] {
        let mut h = types::Digest::new();
        for c in &self.columns {
            h.str(&c.keyspace);
            h.str(&c.table);
            h.str(&c.name);
            h.str(&c.ty.to_cql());
        }
        h.finish()
    }
}

/// A page of rows, each a value per column (`None`: null).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Rows {
    pub metadata: std::sync::Arc<RowsMetadata>,
    pub rows: Vec<Vec<Option<Vec<u8>>>>,
    /// Where the next page starts; `None` on the last page.
    pub paging_state: Option<Vec<u8>>,
}

/// What kind of schema change happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchemaChangeKind {
    Created,
    Updated,
    Dropped,
}

impl SchemaChangeKind {
    pub fn name(self) -> &'static str {
        match self {
            SchemaChangeKind::Created => "CREATED",
            SchemaChangeKind::Updated => "UPDATED",
            SchemaChangeKind::Dropped => "DROPPED",
        }
    }
}

/// What a schema change touched.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SchemaTarget {
    Keyspace(String),
    Table { keyspace: String, table: String },
    Type { keyspace: String, name: String },
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SchemaChange {
    pub kind: SchemaChangeKind,
    pub target: SchemaTarget,
}

/// The result of one statement.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum QueryResult {
    Void,
    Rows(Rows),
    SetKeyspace(String),
    SchemaChange(SchemaChange),
}

/// A result and the warnings Cassandra would attach to it (a large batch, an
/// aggregation over many partitions, ...).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Response {
    pub result: QueryResult,
    pub warnings: Vec<String>,
}

impl Response {
    pub fn new(result: QueryResult) -> Response {
        Response {
            result,
            warnings: Vec::new(),
        }
    }
}

/// Extra fields some protocol errors carry.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub enum ErrorDetail {
    #[default]
    None,
    /// `Already_exists`: the keyspace, and the table (empty for a keyspace).
    AlreadyExists { keyspace: String, table: String },
    /// `Unprepared`: the unknown id.
    Unprepared { id: Vec<u8> },
}

/// An error answered to a client: the protocol's kind, a message for a person,
/// and the kind's extra fields.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct QueryError {
    pub kind: CqlErrorKind,
    pub message: String,
    pub detail: ErrorDetail,
}

impl QueryError {
    pub fn new(kind: CqlErrorKind, message: impl Into<String>) -> QueryError {
        QueryError {
            kind,
            message: message.into(),
            detail: ErrorDetail::None,
        }
    }

    /// `Invalid` (0x2200): the statement is well formed but cannot run.
    pub fn invalid(message: impl Into<String>) -> QueryError {
        QueryError::new(CqlErrorKind::Invalid, message)
    }

    pub fn unauthorized(message: impl Into<String>) -> QueryError {
        QueryError::new(CqlErrorKind::Unauthorized, message)
    }

    pub fn already_exists(keyspace: &str, table: &str, message: impl Into<String>) -> QueryError {
        QueryError {
            kind: CqlErrorKind::AlreadyExists,
            message: message.into(),
            detail: ErrorDetail::AlreadyExists {
                keyspace: keyspace.to_string(),
                table: table.to_string(),
            },
        }
    }
}

impl std::fmt::Display for QueryError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for QueryError {}

impl From<Error> for QueryError {
    fn from(e: Error) -> QueryError {
        let kind = e.cql_kind();
        let message = match &e {
            Error::Cql(c) => c.message.clone(),
            other => other.to_string(),
        };
        QueryError::new(kind, message)
    }
}

impl From<crate::cql::CqlError> for QueryError {
    fn from(e: crate::cql::CqlError) -> QueryError {
        QueryError::new(e.kind, e.message)
    }
}

pub type QueryOutcome<T> = std::result::Result<T, QueryError>;

/// Cassandra's error for a column the table does not have.
pub(crate) fn undefined_column(keyspace: &str, table: &str, column: &str) -> QueryError {
    use crate::cql::ddl::cql_name;
    QueryError::invalid(format!(
        "Undefined column name {column} in table {}.{}",
        cql_name(keyspace),
        cql_name(table)
    ))
}
