//! Roles and permissions: Cassandra's `PasswordAuthenticator`,
//! `CassandraRoleManager` and `CassandraAuthorizer`, kept in
//! `<data_dir>/roles.json`.
//!
//! Owns the role statements (CREATE/ALTER/DROP ROLE and USER, LIST ROLES and
//! USERS, GRANT/REVOKE of permissions and roles, LIST PERMISSIONS), the
//! password check of a login (salted bcrypt, as Cassandra stores them), and
//! the permission check of every statement.
//!
//! Threads: one `Roles` per executor; its state sits behind a mutex and every
//! change is written to disk (atomic replace) before it is visible.
//!
//! Invariants:
//! 1. Passwords are stored only as bcrypt hashes (cost 10, Cassandra's
//!    default `auth_bcrypt_gensalt_log2_rounds`); a hash given with `HASHED
//!    PASSWORD` is checked to be a bcrypt hash before it is stored.
//! 2. With password authentication on, a first open creates the role
//!    `cassandra` (password `cassandra`, superuser, login) as Cassandra does,
//!    unless roles already exist; the operator is expected to replace it.
//! 3. A permission check walks the role's granted roles transitively; a
//!    superuser passes every check. With authentication off every check passes
//!    (AllowAllAuthorizer), and role statements still work.
//! 4. A role statement that fails changes nothing, on disk or in memory.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use crate::cql::ast::{Permission, Resource, RoleOptions, Statement};
use crate::cql::CqlErrorKind;
use crate::db::Database;
use crate::fs::{IoCause, IoTag};
use crate::types::CqlType;

use super::executor::Ctx;
use super::values::encode_map;
use super::{
    ColumnSpec, ColumnType, QueryError, QueryOutcome, QueryResult, Rows, RowsMetadata, Session,
};

/// The file holding roles and permissions, in the data directory.
pub const ROLES_FILE: &str = "roles.json";
/// bcrypt cost of stored hashes (Cassandra's default log2 rounds).
const BCRYPT_COST: u32 = 10;
/// Largest roles file read (millions of roles would be needed to reach it).
const MAX_ROLES_FILE_BYTES: u64 = 64 << 20;

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct Role {
    /// bcrypt hash; `None` for a role that cannot log in with a password.
    salted_hash: Option<String>,
    login: bool,
    superuser: bool,
    /// Roles granted to this one.
    member_of: BTreeSet<String>,
    options: BTreeMap<String, String>,
}

/// What a statement needs on a keyspace or table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Access {
    Select,
    Modify,
    Create,
    Alter,
    Drop,
}

impl Access {
    fn permission(self) -> Permission {
        match self {
            Access::Select => Permission::Select,
            Access::Modify => Permission::Modify,
            Access::Create => Permission::Create,
            Access::Alter => Permission::Alter,
            Access::Drop => Permission::Drop,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
struct State {
    roles: BTreeMap<String, Role>,
    /// Resource name (Cassandra's: `data`, `data/ks`, `data/ks/t`, `roles`,
    /// `roles/r`) -> role -> permissions.
    permissions: BTreeMap<String, BTreeMap<String, BTreeSet<String>>>,
}

pub(crate) struct Roles {
    db: Arc<Database>,
    enabled: bool,
    state: parking_lot::Mutex<State>,
}

fn permission_name(p: Permission) -> &'static str {
    match p {
        Permission::All => "ALL",
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
}

/// The permissions a resource can carry (Cassandra's `applicablePermissions`).
fn applicable(resource: &str) -> &'static [Permission] {
    if resource.starts_with("data") {
        &[
            Permission::Create,
            Permission::Alter,
            Permission::Drop,
            Permission::Select,
            Permission::Modify,
            Permission::Authorize,
            Permission::Unmask,
            Permission::SelectMasked,
        ]
    } else if resource.starts_with("roles") {
        &[
            Permission::Create,
            Permission::Alter,
            Permission::Drop,
            Permission::Authorize,
            Permission::Describe,
        ]
    } else {
        &[
            Permission::Create,
            Permission::Alter,
            Permission::Drop,
            Permission::Authorize,
            Permission::Execute,
        ]
    }
}

fn resource_name(ctx: &Ctx<'_>, r: &Resource) -> QueryOutcome<String> {
    Ok(match r {
        Resource::AllKeyspaces => "data".to_string(),
        Resource::Keyspace(k) => format!("data/{}", k.text),
        Resource::Table(qn) => format!("data/{}/{}", ctx.keyspace_of(qn)?, qn.name.text),
        Resource::AllRoles => "roles".to_string(),
        Resource::Role(r) => format!("roles/{}", r.text),
        Resource::AllFunctions { keyspace } => match keyspace {
            Some(k) => format!("functions/{}", k.text),
            None => "functions".to_string(),
        },
        Resource::Function { .. } => {
            return Err(QueryError::invalid(
                "user-defined functions do not exist in this database",
            ))
        }
        Resource::AllMbeans | Resource::Mbean(_) => {
            return Err(QueryError::invalid("MBean permissions do not apply here"))
        }
    })
}

/// How Cassandra prints a resource in LIST PERMISSIONS (`<table ks.t>`).
fn resource_display(name: &str) -> String {
    let parts: Vec<&str> = name.split('/').collect();
    match parts.as_slice() {
        ["data"] => "<all keyspaces>".to_string(),
        ["data", ks] => format!("<keyspace {ks}>"),
        ["data", ks, t] => format!("<table {ks}.{t}>"),
        ["roles"] => "<all roles>".to_string(),
        ["roles", r] => format!("<role {r}>"),
        ["functions"] => "<all functions>".to_string(),
        ["functions", ks] => format!("<all functions in {ks}>"),
        _ => format!("<{name}>"),
    }
}

impl Roles {
    /// Loads the roles (or starts empty); with `enabled`, creates the default
    /// superuser when there are no roles (invariant 2).
    pub(crate) fn open(db: &Arc<Database>, enabled: bool) -> crate::Result<Roles> {
        let path = db.dir().join(ROLES_FILE);
        let state = match std::fs::symlink_metadata(&path) {
            Ok(meta) => {
                if !meta.file_type().is_file() {
                    return Err(crate::Error::InvalidInput(format!(
                        "{} is not a regular file",
                        path.display()
                    )));
                }
                if meta.len() > MAX_ROLES_FILE_BYTES {
                    return Err(crate::Error::corruption(
                        &path,
                        0,
                        format!(
                            "roles file of {} bytes is over the {MAX_ROLES_FILE_BYTES} accepted",
                            meta.len()
                        ),
                    ));
                }
                let bytes =
                    db.fs()
                        .read_all(&path, MAX_ROLES_FILE_BYTES, IoTag::new(IoCause::Metadata))?;
                serde_json::from_slice::<State>(&bytes)
                    .map_err(|e| crate::Error::corruption(&path, 0, format!("roles file: {e}")))?
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => State::default(),
            Err(e) => return Err(crate::Error::io(&path, e)),
        };
        let roles = Roles {
            db: db.clone(),
            enabled,
            state: parking_lot::Mutex::new(state),
        };
        if enabled && roles.state.lock().roles.is_empty() && !db.is_read_only() {
            let hash = bcrypt::hash("cassandra", BCRYPT_COST)
                .map_err(|e| crate::Error::InvalidInput(format!("bcrypt: {e}")))?;
            let mut next = roles.state.lock().clone();
            next.roles.insert(
                "cassandra".to_string(),
                Role {
                    salted_hash: Some(hash),
                    login: true,
                    superuser: true,
                    ..Role::default()
                },
            );
            roles
                .commit(next)
                .map_err(|e| crate::Error::InvalidInput(e.message))?;
        }
        Ok(roles)
    }

    /// Writes `next` durably, then makes it current (invariant 4).
    fn commit(&self, next: State) -> QueryOutcome<()> {
        let json = serde_json::to_vec_pretty(&next)
            .map_err(|e| QueryError::new(CqlErrorKind::ServerError, e.to_string()))?;
        self.db
            .fs()
            .write_atomic(
                &self.db.dir().join(ROLES_FILE),
                &json,
                IoTag::new(IoCause::Metadata),
            )
            .map_err(QueryError::from)?;
        *self.state.lock() = next;
        Ok(())
    }

    pub(crate) fn authenticate(&self, user: &str, password: &str) -> QueryOutcome<String> {
        let bad = || {
            QueryError::new(
                CqlErrorKind::BadCredentials,
                format!("Provided username {user} and/or password are incorrect"),
            )
        };
        let role = self.state.lock().roles.get(user).cloned().ok_or_else(bad)?;
        if !role.login {
            return Err(QueryError::new(
                CqlErrorKind::BadCredentials,
                format!("{user} is not permitted to log in"),
            ));
        }
        let hash = role.salted_hash.ok_or_else(bad)?;
        match bcrypt::verify(password, &hash) {
            Ok(true) => Ok(user.to_string()),
            _ => Err(bad()),
        }
    }

    pub(crate) fn require_login(&self, session: &Session) -> QueryOutcome<()> {
        if self.enabled && session.user.is_none() {
            return Err(QueryError::unauthorized("You have not logged in"));
        }
        Ok(())
    }

    fn is_superuser(state: &State, role: &str) -> bool {
        Self::closure(state, role)
            .iter()
            .any(|r| state.roles.get(r).is_some_and(|x| x.superuser))
    }

    /// The role and every role granted to it, transitively (invariant 3).
    fn closure(state: &State, role: &str) -> BTreeSet<String> {
        let mut seen = BTreeSet::new();
        let mut todo = vec![role.to_string()];
        while let Some(r) = todo.pop() {
            if seen.insert(r.clone()) {
                if let Some(x) = state.roles.get(&r) {
                    todo.extend(x.member_of.iter().cloned());
                }
            }
        }
        seen
    }

    /// Checks that the session may do `access` on the keyspace (and table).
    pub(crate) fn check(
        &self,
        session: &Session,
        access: Access,
        keyspace: &str,
        table: Option<&str>,
    ) -> QueryOutcome<()> {
        if !self.enabled {
            return Ok(());
        }
        let Some(user) = &session.user else {
            return Err(QueryError::unauthorized("You have not logged in"));
        };
        // Everyone may read the schema and the node's own tables (drivers
        // need them to connect).
        if access == Access::Select
            && super::system::is_system_keyspace(keyspace)
            && keyspace != "system_auth"
        {
            return Ok(());
        }
        let state = self.state.lock();
        if Self::is_superuser(&state, user) {
            return Ok(());
        }
        let wanted = permission_name(access.permission());
        let mut resources = vec!["data".to_string(), format!("data/{keyspace}")];
        if let Some(t) = table {
            resources.push(format!("data/{keyspace}/{t}"));
        }
        let roles = Self::closure(&state, user);
        let allowed = resources.iter().any(|res| {
            state.permissions.get(res).is_some_and(|by_role| {
                roles
                    .iter()
                    .any(|r| by_role.get(r).is_some_and(|ps| ps.contains(wanted)))
            })
        });
        if allowed {
            Ok(())
        } else {
            Err(QueryError::unauthorized(format!(
                "User {user} has no {wanted} permission on {} or any of its parents",
                resource_display(resources.last().map(String::as_str).unwrap_or("data"))
            )))
        }
    }

    fn require_superuser(&self, ctx: &Ctx<'_>, what: &str) -> QueryOutcome<()> {
        if !self.enabled {
            return Ok(());
        }
        let state = self.state.lock();
        match &ctx.session.user {
            Some(u) if Self::is_superuser(&state, u) => Ok(()),
            _ => Err(QueryError::unauthorized(format!(
                "Only superusers are allowed to {what}"
            ))),
        }
    }

    fn hash_of(options: &RoleOptions) -> QueryOutcome<Option<String>> {
        if let Some(h) = &options.hashed_password {
            if bcrypt::verify("", h).is_err() {
                return Err(QueryError::invalid(
                    "Hashed password is not a valid bcrypt hash",
                ));
            }
            return Ok(Some(h.clone()));
        }
        match &options.password {
            Some(p) if p.is_empty() => Err(QueryError::invalid("Password must not be empty")),
            Some(p) => bcrypt::hash(p, BCRYPT_COST)
                .map(Some)
                .map_err(|e| QueryError::new(CqlErrorKind::ServerError, format!("bcrypt: {e}"))),
            None => Ok(None),
        }
    }

    /// Runs a role or permission statement.
    pub(crate) fn execute(&self, ctx: &Ctx<'_>, stmt: &Statement) -> QueryOutcome<QueryResult> {
        let mut next = self.state.lock().clone();
        match stmt {
            Statement::CreateRole {
                if_not_exists,
                name,
                options,
            } => {
                self.require_superuser(ctx, "create roles")?;
                if next.roles.contains_key(&name.text) {
                    if *if_not_exists {
                        return Ok(QueryResult::Void);
                    }
                    return Err(QueryError::invalid(format!("{} already exists", name.text)));
                }
                let role = Role {
                    salted_hash: Self::hash_of(options)?,
                    login: options.login.unwrap_or(false),
                    superuser: options.superuser.unwrap_or(false),
                    member_of: BTreeSet::new(),
                    options: options.options.iter().cloned().collect(),
                };
                next.roles.insert(name.text.clone(), role);
            }
            Statement::AlterRole {
                if_exists,
                name,
                options,
            } => {
                let me = ctx.session.user.as_deref() == Some(name.text.as_str());
                let only_password = options.superuser.is_none() && options.login.is_none();
                if !(me && only_password) {
                    self.require_superuser(ctx, "alter roles other than their own password")?;
                }
                let Some(role) = next.roles.get_mut(&name.text) else {
                    if *if_exists {
                        return Ok(QueryResult::Void);
                    }
                    return Err(QueryError::invalid(format!("{} doesn't exist", name.text)));
                };
                if let Some(h) = Self::hash_of(options)? {
                    role.salted_hash = Some(h);
                }
                if let Some(l) = options.login {
                    role.login = l;
                }
                if let Some(s) = options.superuser {
                    role.superuser = s;
                }
                for (k, v) in &options.options {
                    role.options.insert(k.clone(), v.clone());
                }
            }
            Statement::DropRole { if_exists, name } => {
                self.require_superuser(ctx, "drop roles")?;
                if ctx.session.user.as_deref() == Some(name.text.as_str()) {
                    return Err(QueryError::invalid(
                        "Cannot DROP primary role for current login",
                    ));
                }
                if next.roles.remove(&name.text).is_none() {
                    if *if_exists {
                        return Ok(QueryResult::Void);
                    }
                    return Err(QueryError::invalid(format!("{} doesn't exist", name.text)));
                }
                for r in next.roles.values_mut() {
                    r.member_of.remove(&name.text);
                }
                for by_role in next.permissions.values_mut() {
                    by_role.remove(&name.text);
                }
            }
            Statement::GrantRole { role, grantee } => {
                self.require_superuser(ctx, "grant roles")?;
                for r in [&role.text, &grantee.text] {
                    if !next.roles.contains_key(r) {
                        return Err(QueryError::invalid(format!("{r} doesn't exist")));
                    }
                }
                if Self::closure(&next, &role.text).contains(&grantee.text) {
                    return Err(QueryError::invalid(format!(
                        "{} is a member of {}",
                        role.text, grantee.text
                    )));
                }
                if let Some(g) = next.roles.get_mut(&grantee.text) {
                    g.member_of.insert(role.text.clone());
                }
            }
            Statement::RevokeRole { role, revokee } => {
                self.require_superuser(ctx, "revoke roles")?;
                let Some(r) = next.roles.get_mut(&revokee.text) else {
                    return Err(QueryError::invalid(format!(
                        "{} doesn't exist",
                        revokee.text
                    )));
                };
                if !r.member_of.remove(&role.text) {
                    return Err(QueryError::invalid(format!(
                        "{} is not a member of {}",
                        revokee.text, role.text
                    )));
                }
            }
            Statement::GrantPermissions {
                permissions,
                resource,
                grantee,
            }
            | Statement::RevokePermissions {
                permissions,
                resource,
                revokee: grantee,
            } => {
                self.require_superuser(ctx, "grant or revoke permissions")?;
                if !next.roles.contains_key(&grantee.text) {
                    return Err(QueryError::invalid(format!(
                        "{} doesn't exist",
                        grantee.text
                    )));
                }
                let res = resource_name(ctx, resource)?;
                if let Resource::Table(qn) = resource {
                    let ks = ctx.keyspace_of(qn)?;
                    ctx.exec.table(&ks, &qn.name.text)?;
                }
                let names: Vec<&str> = if permissions.contains(&Permission::All) {
                    applicable(&res)
                        .iter()
                        .map(|p| permission_name(*p))
                        .collect()
                } else {
                    for p in permissions {
                        if !applicable(&res).contains(p) {
                            return Err(QueryError::invalid(format!(
                                "Resource type {} does not support any of the requested permissions",
                                resource_display(&res)
                            )));
                        }
                    }
                    permissions.iter().map(|p| permission_name(*p)).collect()
                };
                let set = next
                    .permissions
                    .entry(res)
                    .or_default()
                    .entry(grantee.text.clone())
                    .or_default();
                if matches!(stmt, Statement::GrantPermissions { .. }) {
                    set.extend(names.iter().map(|s| s.to_string()));
                } else {
                    for n in names {
                        set.remove(n);
                    }
                }
                next.permissions.retain(|_, by_role| {
                    by_role.retain(|_, ps| !ps.is_empty());
                    !by_role.is_empty()
                });
            }
            Statement::ListRoles {
                of,
                recursive,
                users,
            } => {
                return self.list_roles(
                    ctx,
                    &next,
                    of.as_ref().map(|n| n.text.as_str()),
                    *recursive,
                    *users,
                )
            }
            Statement::ListPermissions {
                permissions,
                resource,
                of,
                recursive,
            } => {
                return self.list_permissions(
                    ctx,
                    &next,
                    permissions,
                    resource.as_ref(),
                    of.as_ref().map(|n| n.text.as_str()),
                    *recursive,
                )
            }
            _ => return Err(QueryError::invalid("not a role statement")),
        }
        self.commit(next)?;
        Ok(QueryResult::Void)
    }

    fn list_roles(
        &self,
        ctx: &Ctx<'_>,
        state: &State,
        of: Option<&str>,
        recursive: bool,
        users: bool,
    ) -> QueryOutcome<QueryResult> {
        let names: BTreeSet<String> = match of {
            Some(r) => {
                if !state.roles.contains_key(r) {
                    return Err(QueryError::invalid(format!("{r} doesn't exist")));
                }
                if recursive {
                    Self::closure(state, r)
                } else {
                    let mut s: BTreeSet<String> = state
                        .roles
                        .get(r)
                        .map(|x| x.member_of.clone())
                        .unwrap_or_default();
                    s.insert(r.to_string());
                    s
                }
            }
            None => {
                let is_super = !self.enabled
                    || ctx
                        .session
                        .user
                        .as_deref()
                        .is_some_and(|u| Self::is_superuser(state, u));
                if is_super {
                    state.roles.keys().cloned().collect()
                } else {
                    ctx.session
                        .user
                        .as_deref()
                        .map(|u| Self::closure(state, u))
                        .unwrap_or_default()
                }
            }
        };
        let spec = |name: &str, ty: ColumnType| ColumnSpec {
            keyspace: "system_auth".to_string(),
            table: "roles".to_string(),
            name: name.to_string(),
            ty,
        };
        let text = |s: &str| Some(s.as_bytes().to_vec());
        let boolean = |b: bool| Some(vec![u8::from(b)]);
        let mut rows = Vec::new();
        for n in &names {
            let Some(r) = state.roles.get(n) else {
                continue;
            };
            if users {
                if !r.login {
                    continue;
                }
                rows.push(vec![text(n), boolean(r.superuser), text("ALL")]);
            } else {
                let opts: Vec<(Vec<u8>, Vec<u8>)> = r
                    .options
                    .iter()
                    .map(|(k, v)| (k.as_bytes().to_vec(), v.as_bytes().to_vec()))
                    .collect();
                rows.push(vec![
                    text(n),
                    boolean(r.superuser),
                    boolean(r.login),
                    Some(encode_map(&opts)),
                    text("ALL"),
                ]);
            }
        }
        let columns = if users {
            vec![
                spec("name", ColumnType::Native(CqlType::Text)),
                spec("super", ColumnType::Native(CqlType::Boolean)),
                spec("datacenters", ColumnType::Native(CqlType::Text)),
            ]
        } else {
            vec![
                spec("role", ColumnType::Native(CqlType::Text)),
                spec("super", ColumnType::Native(CqlType::Boolean)),
                spec("login", ColumnType::Native(CqlType::Boolean)),
                spec(
                    "options",
                    ColumnType::Map(
                        Box::new(ColumnType::Native(CqlType::Text)),
                        Box::new(ColumnType::Native(CqlType::Text)),
                    ),
                ),
                spec("datacenters", ColumnType::Native(CqlType::Text)),
            ]
        };
        Ok(QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata { columns }),
            rows,
            paging_state: None,
        }))
    }

    fn list_permissions(
        &self,
        ctx: &Ctx<'_>,
        state: &State,
        permissions: &[Permission],
        resource: Option<&Resource>,
        of: Option<&str>,
        recursive: bool,
    ) -> QueryOutcome<QueryResult> {
        let wanted: BTreeSet<&str> =
            if permissions.contains(&Permission::All) || permissions.is_empty() {
                [
                    "CREATE",
                    "ALTER",
                    "DROP",
                    "SELECT",
                    "MODIFY",
                    "AUTHORIZE",
                    "DESCRIBE",
                    "EXECUTE",
                    "UNMASK",
                    "SELECT_MASKED",
                ]
                .into_iter()
                .collect()
            } else {
                permissions.iter().map(|p| permission_name(*p)).collect()
            };
        let res_filter = resource.map(|r| resource_name(ctx, r)).transpose()?;
        let roles: Option<BTreeSet<String>> = of.map(|r| {
            if recursive {
                Self::closure(state, r)
            } else {
                BTreeSet::from([r.to_string()])
            }
        });
        let spec = |name: &str| ColumnSpec {
            keyspace: "system_auth".to_string(),
            table: "role_permissions".to_string(),
            name: name.to_string(),
            ty: ColumnType::Native(CqlType::Text),
        };
        let text = |s: &str| Some(s.as_bytes().to_vec());
        let mut rows = Vec::new();
        for (res, by_role) in &state.permissions {
            if let Some(f) = &res_filter {
                // The resource and its parents, as Cassandra lists them.
                if !(f == res || f.starts_with(&format!("{res}/"))) {
                    continue;
                }
            }
            for (role, perms) in by_role {
                if roles.as_ref().is_some_and(|rs| !rs.contains(role)) {
                    continue;
                }
                for p in perms.iter().filter(|p| wanted.contains(p.as_str())) {
                    rows.push(vec![
                        text(role),
                        text(role),
                        text(&resource_display(res)),
                        text(p),
                    ]);
                }
            }
        }
        Ok(QueryResult::Rows(Rows {
            metadata: Arc::new(RowsMetadata {
                columns: vec![
                    spec("role"),
                    spec("username"),
                    spec("resource"),
                    spec("permission"),
                ],
            }),
            rows,
            paging_state: None,
        }))
    }
}
