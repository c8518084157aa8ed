//! [`Executor`]: the entry points a CQL server and the embedded shell call.
//!
//! See the module contract in `query/mod.rs`.

use std::net::IpAddr;
use std::sync::Arc;

use super::modify;
use super::values::Eval;
use super::{ColumnSpec, ErrorDetail};
use super::{
    QueryError, QueryOutcome, QueryParams, QueryResult, Response, RowsMetadata, Session, Values,
};
use crate::cql::ast::{BatchKind, BatchStatement, Parsed, QualifiedName, Statement};
use crate::cql::CqlErrorKind;
use crate::data::DecoratedKey;
use crate::db::Database;
use crate::table::Table;

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
    Query {
        text: String,
        values: Values,
    },
    Prepared {
        prepared: Arc<Prepared>,
        values: Values,
    },
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
    pub(crate) db: Arc<Database>,
    node: NodeInfo,
    authenticator: Authenticator,
    server: std::sync::RwLock<Option<Arc<dyn ServerState>>>,
    pub(crate) locks: Locks,
    pub(crate) auth: super::auth::Roles,
    /// Cassandra's `auto_snapshot`: DROP and TRUNCATE snapshot first.
    auto_snapshot: std::sync::atomic::AtomicBool,
}

/// The per-partition locks of lightweight transactions: striped by table and
/// token, each stripe remembering the last timestamp it handed out
/// (module invariant 2).
pub(crate) struct Locks {
    stripes: Vec<parking_lot::Mutex<i64>>,
}

/// A held stripe.
pub(crate) struct LockGuard<'a> {
    last: parking_lot::MutexGuard<'a, i64>,
}

const LWT_STRIPES: usize = 1024;

impl Locks {
    fn new() -> Locks {
        Locks {
            stripes: (0..LWT_STRIPES)
                .map(|_| parking_lot::Mutex::new(i64::MIN))
                .collect(),
        }
    }

    pub(crate) fn lock(&self, table_id: u64, key: &DecoratedKey) -> LockGuard<'_> {
        let h = (key.token as u64) ^ table_id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
        let i = (h % LWT_STRIPES as u64) as usize;
        LockGuard {
            last: self.stripes[i].lock(),
        }
    }
}

impl LockGuard<'_> {
    /// A write timestamp for an LWT under this lock: `now`, or just above the
    /// stripe's last one; recorded as the stripe's last.
    pub(crate) fn next_timestamp(&mut self, now_micros: i64) -> i64 {
        let ts = now_micros.max(self.last.saturating_add(1));
        *self.last = ts;
        ts
    }
}

/// One statement's execution context: who runs it, with which values, at
/// what time.
pub(crate) struct Ctx<'a> {
    pub exec: &'a Executor,
    pub session: &'a Session,
    pub params: &'a QueryParams,
    pub eval: Eval<'a>,
    now_micros: i64,
}

impl Ctx<'_> {
    pub(crate) fn now_micros(&self) -> i64 {
        self.now_micros
    }

    pub(crate) fn now_seconds(&self) -> i64 {
        match self.params.now_seconds {
            Some(s) => i64::from(s),
            None => self.now_micros.div_euclid(1_000_000),
        }
    }

    /// The keyspace a name lives in: its own, the request's (v5), or the
    /// session's (`USE`).
    pub(crate) fn keyspace_of(&self, qn: &QualifiedName) -> QueryOutcome<String> {
        if let Some(ks) = &qn.keyspace {
            return Ok(ks.text.clone());
        }
        if let Some(ks) = &self.params.keyspace {
            return Ok(ks.clone());
        }
        self.session.keyspace.clone().ok_or_else(|| {
            QueryError::invalid(
                "No keyspace has been specified. USE a keyspace, or explicitly specify keyspace.tablename",
            )
        })
    }

    /// A user table by name.
    pub(crate) fn table(&self, qn: &QualifiedName) -> QueryOutcome<Arc<Table>> {
        let ks = self.keyspace_of(qn)?;
        if super::system::is_system_keyspace(&ks) {
            return Err(QueryError::unauthorized(format!(
                "{ks} keyspace is not user-modifiable."
            )));
        }
        self.exec.table(&ks, &qn.name.text)
    }
}

impl Executor {
    /// An executor over `db`. With `Authenticator::Password` the roles are
    /// loaded from the data directory (and the default superuser created on
    /// first use, as Cassandra does).
    pub fn new(
        db: Arc<Database>,
        node: NodeInfo,
        authenticator: Authenticator,
    ) -> crate::Result<Executor> {
        let auth = super::auth::Roles::open(&db, authenticator == Authenticator::Password)?;
        Ok(Executor {
            db,
            node,
            authenticator,
            server: std::sync::RwLock::new(None),
            locks: Locks::new(),
            auth,
            auto_snapshot: std::sync::atomic::AtomicBool::new(true),
        })
    }

    /// Installs the server's view of itself for the virtual tables.
    pub fn set_server_state(&self, state: Arc<dyn ServerState>) {
        if let Ok(mut s) = self.server.write() {
            *s = Some(state);
        }
    }

    pub(crate) fn server_state(&self) -> Option<Arc<dyn ServerState>> {
        self.server.read().ok().and_then(|s| s.clone())
    }

    /// Cassandra's `auto_snapshot` (default true): whether DROP TABLE, DROP
    /// KEYSPACE and TRUNCATE snapshot a table before removing its data.
    pub fn set_auto_snapshot(&self, on: bool) {
        self.auto_snapshot
            .store(on, std::sync::atomic::Ordering::Relaxed);
    }

    pub(crate) fn auto_snapshot(&self) -> bool {
        self.auto_snapshot
            .load(std::sync::atomic::Ordering::Relaxed)
    }

    /// A keyspace's durable_writes and replication, as stored.
    pub(crate) fn keyspace_params(&self, name: &str) -> (bool, Vec<(String, String)>) {
        match self.db.catalog().keyspaces.get(name) {
            Some(ks) => (
                ks.durable_writes,
                ks.replication
                    .iter()
                    .map(|(k, v)| (k.clone(), v.clone()))
                    .collect(),
            ),
            None => (true, Vec::new()),
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

    /// The schema's version: a digest of the catalog, new on every schema
    /// change (drivers compare it across nodes to know a change has settled).
    pub fn schema_version(&self) -> [u8; 16] {
        let mut d = super::types::Digest::new();
        match self.db.catalog().to_json() {
            Ok(json) => d.str(&json),
            Err(_) => d.str("unserializable catalog"),
        }
        let mut v = d.finish();
        // A version 4 (random-form) UUID, as Cassandra's schema versions are
        // name-based UUIDs a driver parses.
        v[6] = (v[6] & 0x0F) | 0x30;
        v[8] = (v[8] & 0x3F) | 0x80;
        v
    }

    pub(crate) fn table(&self, keyspace: &str, name: &str) -> QueryOutcome<Arc<Table>> {
        match self.db.table(keyspace, name) {
            Ok(t) => Ok(t),
            Err(crate::Error::NotFound(_)) => {
                if self.db.catalog().keyspaces.contains_key(keyspace) {
                    Err(QueryError::invalid(format!("table {name} does not exist")))
                } else {
                    Err(QueryError::invalid(format!(
                        "keyspace {keyspace} does not exist"
                    )))
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// Checks a user name and password (SASL PLAIN); returns the role logged in.
    pub fn authenticate(&self, user: &str, password: &str) -> QueryOutcome<String> {
        self.auth.authenticate(user, password)
    }

    fn ctx<'a>(
        &'a self,
        session: &'a Session,
        params: &'a QueryParams,
        parsed: &'a Parsed,
        receivers: &'a [String],
    ) -> Ctx<'a> {
        let now_micros = self.db.clock().now_micros();
        Ctx {
            exec: self,
            session,
            params,
            eval: Eval {
                values: &params.values,
                marker_names: &parsed.markers,
                marker_receivers: receivers,
                now_micros,
            },
            now_micros,
        }
    }

    /// A QUERY: parse and run `text`.
    pub fn query(
        &self,
        session: &mut Session,
        text: &str,
        params: &QueryParams,
    ) -> QueryOutcome<Response> {
        let parsed = crate::cql::parse_statement(text)?;
        let receivers = if matches!(params.values, Values::Named(_)) {
            let snapshot = session.clone();
            let ctx = self.ctx(&snapshot, params, &parsed, &[]);
            super::bind::specs(&ctx, &parsed.statement)?
                .into_iter()
                .map(|s| s.name)
                .collect()
        } else {
            Vec::new()
        };
        self.run(session, &parsed, params, &receivers)
    }

    /// A PREPARE: parse `text` and describe its bind variables and result.
    pub fn prepare(&self, session: &Session, text: &str) -> QueryOutcome<Prepared> {
        let parsed = crate::cql::parse_statement(text)?;
        let params = QueryParams::default();
        let ctx = self.ctx(session, &params, &parsed, &[]);
        let bind = super::bind::specs(&ctx, &parsed.statement)?;
        if bind.len() != parsed.markers.len() {
            return Err(QueryError::new(
                CqlErrorKind::ServerError,
                format!(
                    "prepared {} bind variables for {} markers",
                    bind.len(),
                    parsed.markers.len()
                ),
            ));
        }
        let pk_indexes = super::bind::pk_indexes(&ctx, &parsed.statement)?;
        let result = match &parsed.statement {
            Statement::Select(s) => Arc::new(super::system::select_metadata(&ctx, s)?),
            _ => Arc::new(RowsMetadata::default()),
        };
        let mut id = super::types::Digest::new();
        id.str(session.keyspace.as_deref().unwrap_or(""));
        id.str(text);
        Ok(Prepared {
            id: id.finish(),
            text: text.to_string(),
            keyspace: session.keyspace.clone(),
            bind,
            pk_indexes,
            result,
            parsed: Arc::new(parsed),
        })
    }

    /// An EXECUTE of a prepared statement.
    pub fn execute(
        &self,
        session: &mut Session,
        prepared: &Prepared,
        params: &QueryParams,
    ) -> QueryOutcome<Response> {
        // Unqualified names resolve in the keyspace the statement was prepared
        // in (Cassandra binds them at prepare time).
        let receivers: Vec<String> = prepared.bind.iter().map(|b| b.name.clone()).collect();
        if session.keyspace != prepared.keyspace && params.keyspace.is_none() {
            let mut p = params.clone();
            p.keyspace = prepared.keyspace.clone();
            return self.run(session, &prepared.parsed, &p, &receivers);
        }
        self.run(session, &prepared.parsed, params, &receivers)
    }

    /// A BATCH request.
    pub fn batch(
        &self,
        session: &mut Session,
        kind: BatchKind,
        items: &[BatchItem],
        params: &QueryParams,
    ) -> QueryOutcome<Response> {
        // Each item is parsed (or taken prepared) and must be a modification.
        // Each item: the statement, its values, its markers' receiver names,
        // the keyspace it was prepared in.
        type Item = (Arc<Parsed>, Values, Vec<String>, Option<String>);
        let mut statements: Vec<Item> = Vec::new();
        for item in items {
            match item {
                BatchItem::Query { text, values } => {
                    let parsed = crate::cql::parse_statement(text)?;
                    statements.push((Arc::new(parsed), values.clone(), Vec::new(), None));
                }
                BatchItem::Prepared { prepared, values } => statements.push((
                    prepared.parsed.clone(),
                    values.clone(),
                    prepared.bind.iter().map(|b| b.name.clone()).collect(),
                    prepared.keyspace.clone(),
                )),
            }
        }
        let mut all = Vec::new();
        let mut checks = Vec::new();
        let mut statement_count = 0usize;
        for (parsed, values, receivers, keyspace) in &statements {
            let mut p = params.clone();
            p.values = values.clone();
            if p.keyspace.is_none() {
                p.keyspace = keyspace.clone();
            }
            let ctx = self.ctx(session, &p, parsed, receivers);
            let stmt = match &parsed.statement {
                Statement::Insert(i) => BatchStatement::Insert((**i).clone()),
                Statement::Update(u) => BatchStatement::Update((**u).clone()),
                Statement::Delete(d) => BatchStatement::Delete((**d).clone()),
                other => {
                    return Err(QueryError::invalid(format!(
                        "Invalid statement in batch: only UPDATE, INSERT and DELETE statements are allowed, not {}",
                        other.kind()
                    )))
                }
            };
            self.check_modify(session, &stmt_table(&stmt), &ctx)?;
            let (m, cas) = modify::batch_statement(&ctx, &stmt, None, kind)?;
            all.extend(m);
            checks.extend(cas);
            statement_count += 1;
        }
        let _ = statement_count;
        modify::check_batch_mix(&all)?;
        self.finish_modification(session, params, all, checks)
    }

    /// Applies a statement's or batch's mutations, through the LWT path when
    /// it has conditions.
    fn finish_modification(
        &self,
        session: &Session,
        params: &QueryParams,
        mutations: Vec<modify::Mutation>,
        checks: Vec<modify::Cas>,
    ) -> QueryOutcome<Response> {
        if checks.is_empty() {
            modify::apply_all(mutations)?;
            return Ok(Response::new(QueryResult::Void));
        }
        let parsed = Parsed {
            statement: Statement::Use(crate::cql::ast::Name {
                text: String::new(),
                quoted: false,
                pos: 0,
            }),
            markers: Vec::new(),
        };
        let ctx = self.ctx(session, params, &parsed, &[]);
        Ok(Response::new(modify::apply_cas(&ctx, checks, mutations)?))
    }

    fn check_modify(
        &self,
        session: &Session,
        table: &QualifiedName,
        ctx: &Ctx<'_>,
    ) -> QueryOutcome<()> {
        let ks = ctx.keyspace_of(table)?;
        self.auth.check(
            session,
            super::auth::Access::Modify,
            &ks,
            Some(&table.name.text),
        )
    }

    /// Runs one parsed statement.
    fn run(
        &self,
        session: &mut Session,
        parsed: &Parsed,
        params: &QueryParams,
        receivers: &[String],
    ) -> QueryOutcome<Response> {
        self.auth.require_login(session)?;
        let snapshot = session.clone();
        let ctx = self.ctx(&snapshot, params, parsed, receivers);
        match &parsed.statement {
            Statement::Select(s) => {
                let ks = ctx.keyspace_of(&s.table)?;
                self.auth
                    .check(&snapshot, super::auth::Access::Select, &ks, Some(&s.table.name.text))?;
                let (result, warnings) = super::system::select(&ctx, s)?;
                Ok(Response { result, warnings })
            }
            Statement::Insert(i) => {
                self.check_modify(&snapshot, &i.table, &ctx)?;
                let (m, cas) = modify::insert(&ctx, i, None)?;
                self.finish_modification(&snapshot, params, m, cas.into_iter().collect())
            }
            Statement::Update(u) => {
                self.check_modify(&snapshot, &u.table, &ctx)?;
                let (m, cas) = modify::update(&ctx, u, None)?;
                self.finish_modification(&snapshot, params, m, cas.into_iter().collect())
            }
            Statement::Delete(d) => {
                self.check_modify(&snapshot, &d.table, &ctx)?;
                let (m, cas) = modify::delete(&ctx, d, None)?;
                self.finish_modification(&snapshot, params, m, cas.into_iter().collect())
            }
            Statement::Batch(b) => {
                let ts = match &b.using.timestamp {
                    Some(_) => modify::write_options(&b.using, &ctx.eval, None)?.timestamp_micros,
                    None => None,
                };
                if b.using.ttl.is_some() {
                    return Err(QueryError::invalid(
                        "Global TTL on the BATCH statement is not supported.",
                    ));
                }
                                let mut all = Vec::new();
                let mut checks = Vec::new();
                for stmt in &b.statements {
                    self.check_modify(&snapshot, &stmt_table(stmt), &ctx)?;
                    let (m, cas) = modify::batch_statement(&ctx, stmt, ts, b.kind)?;
                    all.extend(m);
                    checks.extend(cas);
                }
                modify::check_batch_mix(&all)?;
                if ts.is_some() && !checks.is_empty() {
                    return Err(QueryError::invalid(
                        "Cannot provide custom timestamp for conditional BATCH",
                    ));
                }
                self.finish_modification(&snapshot, params, all, checks)
            }
            Statement::Use(name) => {
                if !super::system::is_system_keyspace(&name.text)
                    && !self.db.catalog().keyspaces.contains_key(&name.text)
                {
                    return Err(QueryError::invalid(format!(
                        "Keyspace '{}' does not exist",
                        name.text
                    )));
                }
                session.keyspace = Some(name.text.clone());
                Ok(Response::new(QueryResult::SetKeyspace(name.text.clone())))
            }
            Statement::Describe(d) => Ok(Response::new(super::describe::run(&ctx, d)?)),
            Statement::Unsupported { feature, .. } => Err(QueryError::invalid(format!(
                "{} is not supported by this database: it has no secondary indexes, materialized views, user-defined functions, aggregates or triggers",
                feature.statement()
            ))),
            Statement::CreateRole { .. }
            | Statement::AlterRole { .. }
            | Statement::DropRole { .. }
            | Statement::ListRoles { .. }
            | Statement::GrantPermissions { .. }
            | Statement::RevokePermissions { .. }
            | Statement::ListPermissions { .. }
            | Statement::GrantRole { .. }
            | Statement::RevokeRole { .. } => {
                Ok(Response::new(self.auth.execute(&ctx, &parsed.statement)?))
            }
            other => Ok(Response::new(super::schema_ops::run(&ctx, other)?)),
        }
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

fn stmt_table(s: &BatchStatement) -> QualifiedName {
    match s {
        BatchStatement::Insert(i) => i.table.clone(),
        BatchStatement::Update(u) => u.table.clone(),
        BatchStatement::Delete(d) => d.table.clone(),
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
