//! [`Executor`]: the entry points a CQL server and the embedded shell call.
//!
//! See the module contract in `query/mod.rs`.

use std::net::IpAddr;
use std::sync::Arc;

use super::{QueryError, QueryOutcome, QueryParams, Response, RowsMetadata, Session, Values};
use super::{ColumnSpec, ErrorDetail};
use crate::cql::ast::BatchKind;
use crate::cql::CqlErrorKind;
use crate::db::Database;

/// What `system.local` and `system_views` say about this node.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// The address clients connect to (`rpc_address`, `broadcast_address`).
    pub listen_address: IpAddr,
    pub native_port: u16,
    pub cluster_name: String,
    pub data_center: String,
    pub rack: String,
    /// The Cassandra release Strata answers as: drivers choose features (and
    /// the schema tables they read) from it, so it names the Cassandra version
    /// whose behaviour Strata follows.
    pub release_version: String,
    /// The node's id (`host_id`), stable for the data directory.
    pub host_id: [u8; 16],
}

/// A connected client, for `system_views.clients`.
#[derive(Clone, Debug)]
pub struct ClientInfo {
    pub address: IpAddr,
    pub port: u16,
    pub hostname: String,
    pub username: Option<String>,
    pub connection_stage: String,
    pub protocol_version: u8,
    pub driver_name: Option<String>,
    pub driver_version: Option<String>,
    pub request_count: u64,
    pub ssl_enabled: bool,
    pub ssl_protocol: Option<String>,
    pub ssl_cipher_suite: Option<String>,
    pub keyspace: Option<String>,
}

/// What the server knows that the executor does not: its connections and its
/// settings, for the virtual tables.
pub trait ServerState: Send + Sync {
    fn clients(&self) -> Vec<ClientInfo>;
    /// `(name, value)` of every effective setting, as `system_views.settings`
    /// lists them (`cassandra.yaml` names where there is one).
    fn settings(&self) -> Vec<(String, String)>;
}

/// A statement prepared against the schema of the moment.
#[derive(Clone, Debug)]
pub struct Prepared {
    /// The protocol's statement id: a digest of the keyspace the statement was
    /// prepared in and its text, so the same statement prepared again (after a
    /// server restart too) has the same id.
    pub id: [u8; 16],
    pub text: String,
    /// The session keyspace at prepare time (unqualified names resolve in it).
    pub keyspace: Option<String>,
    /// One spec per bind marker, in order.
    pub bind: Vec<ColumnSpec>,
    /// Which bind markers give the partition key, in key order (token-aware
    /// routing in drivers).
    pub pk_indexes: Vec<u16>,
    /// The columns a SELECT returns; empty for other statements.
    pub result: Arc<RowsMetadata>,
    pub(crate) parsed: Arc<crate::cql::ast::Parsed>,
}

/// One statement of a BATCH request.
#[derive(Clone, Debug)]
pub enum BatchItem {
    Query { text: String, values: Values },
    Prepared { prepared: Arc<Prepared>, values: Values },
}

/// How clients prove who they are.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Authenticator {
    /// No credentials asked (`AllowAllAuthenticator`).
    AllowAll,
    /// SASL PLAIN against the roles stored in the data directory
    /// (`PasswordAuthenticator`).
    Password,
}

impl Authenticator {
    /// The class name the protocol's AUTHENTICATE message carries.
    pub fn class_name(self) -> &'static str {
        match self {
            Authenticator::AllowAll => "org.apache.cassandra.auth.AllowAllAuthenticator",
            Authenticator::Password => "org.apache.cassandra.auth.PasswordAuthenticator",
        }
    }
}

/// Runs statements against one database. Shared by every connection.
pub struct Executor {
    db: Arc<Database>,
    node: NodeInfo,
    authenticator: Authenticator,
    server: std::sync::RwLock<Option<Arc<dyn ServerState>>>,
}

impl Executor {
    pub fn new(db: Arc<Database>, node: NodeInfo, authenticator: Authenticator) -> Executor {
        Executor {
            db,
            node,
            authenticator,
            server: std::sync::RwLock::new(None),
        }
    }

    /// Installs the server's view of itself for the virtual tables.
    pub fn set_server_state(&self, state: Arc<dyn ServerState>) {
        if let Ok(mut s) = self.server.write() {
            *s = Some(state);
        }
    }

    pub fn database(&self) -> &Arc<Database> {
        &self.db
    }

    pub fn node(&self) -> &NodeInfo {
        &self.node
    }

    pub fn authenticator(&self) -> Authenticator {
        self.authenticator
    }

    /// Checks a user name and password (SASL PLAIN); returns the role logged in.
    pub fn authenticate(&self, user: &str, _password: &str) -> QueryOutcome<String> {
        Err(QueryError::new(
            CqlErrorKind::BadCredentials,
            format!("Provided username {user} and/or password are incorrect"),
        ))
    }

    /// A QUERY: parse and run `text`.
    pub fn query(
        &self,
        _session: &mut Session,
        _text: &str,
        _params: &QueryParams,
    ) -> QueryOutcome<Response> {
        Err(QueryError::invalid("statements are not executed yet"))
    }

    /// A PREPARE: parse `text` and describe its bind variables and result.
    pub fn prepare(&self, _session: &Session, _text: &str) -> QueryOutcome<Prepared> {
        Err(QueryError::invalid("statements are not prepared yet"))
    }

    /// An EXECUTE of a prepared statement.
    pub fn execute(
        &self,
        _session: &mut Session,
        _prepared: &Prepared,
        _params: &QueryParams,
    ) -> QueryOutcome<Response> {
        Err(QueryError::invalid("statements are not executed yet"))
    }

    /// A BATCH request.
    pub fn batch(
        &self,
        _session: &mut Session,
        _kind: BatchKind,
        _items: &[BatchItem],
        _params: &QueryParams,
    ) -> QueryOutcome<Response> {
        Err(QueryError::invalid("batches are not executed yet"))
    }

    /// The answer for an EXECUTE of an id the server does not know.
    pub fn unprepared(id: &[u8]) -> QueryError {
        QueryError {
            kind: CqlErrorKind::Unprepared,
            message: format!(
                "Prepared query with ID {} not found (either the query was not prepared on \
                 this host (maybe the host has been restarted?) or you have prepared too many \
                 queries and it has been evicted from the internal cache)",
                hex(id)
            ),
            detail: ErrorDetail::Unprepared { id: id.to_vec() },
        }
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
