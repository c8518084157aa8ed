//! Keyspaces, tables and typed rows: the layer that turns CQL-shaped input into the
//! byte-level [`PartitionUpdate`]s the engine stores, and stored rows back into values.
//!
//! Owns:
//! - [`TableSchema`] — columns (partition key, clustering ASC/DESC, regular, static)
//!   with CQL types and stable [`ColumnId`]s, plus the table's [`TableOptions`];
//!   built with [`TableSchema::builder`] or parsed from a `CREATE TABLE` subset
//!   ([`TableSchema::from_cql`]) and printed back ([`TableSchema::to_cql`]).
//! - Key encoding: the serialized partition key Cassandra hashes (so tokens match a
//!   real cluster) and the byte-comparable clustering (so the engine only compares bytes).
//! - The typed mutation builder ([`TableSchema::insert`], [`TableSchema::update`],
//!   [`TableSchema::delete_row`], ...) with Cassandra's semantics: INSERT writes the
//!   row marker, UPDATE does not (DESIGN.md §2).
//! - [`Catalog`] — every keyspace and table, persisted as JSON by the database layer
//!   (which writes `<data_dir>/schema.json` atomically; this module does no I/O).
//!
//! Schemas are immutable values; the catalog is a plain value mutated through
//! `&mut self`. Callers share them behind their own locks; everything is `Send + Sync`.
//!
//! Invariants:
//! 1. `TableSchema::columns` lists partition-key columns (in key order), then
//!    clustering columns (in clustering order), then regular and static columns in
//!    definition order; `position` is the index within its kind.
//! 2. Regular and static columns, and only they, have an id. Ids are assigned 0, 1, ...
//!    in definition order and never reused: dropping a column retires its id, so
//!    cells of a dropped column left in old sstables can never be read as a new
//!    column of the same name (Cassandra's reason for dropped-column records).
//! 3. Every mutation builder either returns a complete update or an error naming the
//!    offending column or limit; it never returns a partial update. Errors: unknown
//!    column → `NotFound`; missing key component, wrong value type, oversized value or
//!    key, bad TTL or timestamp → `InvalidInput`.
//! 4. Keys: a partition key is at most 65,535 bytes serialized and never empty; each
//!    clustering component at most 65,535 bytes (Cassandra's limits, from its 16-bit
//!    length prefixes). Regular and static values are at most
//!    `options.max_value_size_bytes`.
//!    Decimal key components: a clustering component is byte-comparable by value
//!    (`types` invariant 3), so `1.5` and `1.50` are one row and read back in the
//!    canonical spelling `1.5`. A partition key is Cassandra's serialized bytes,
//!    scale included, so `1.5` and `1.50` are two partitions, each found only by
//!    its own spelling, exactly as in Cassandra. Canonicalising partition keys was
//!    rejected: the token of `1.50` would then differ from Cassandra's (DESIGN.md
//!    §2 requires equal tokens; token-aware drivers route by the bytes they send),
//!    and partitions already stored under a non-canonical spelling would no longer
//!    be found by the spelling that wrote them.
//! 5. Table ids are assigned by the [`Catalog`] and never reused, so a table dropped
//!    and re-created under the same name never sees the old table's files.
//! 6. `TableSchema::from_cql(&s.to_cql())` equals `s` up to the table id and the
//!    numbering of retired column ids.
//! 7. Names. Keyspace and table names are `[A-Za-z0-9_]{1,48}` (Cassandra's rule;
//!    they become directory names). Column names are `[A-Za-z][A-Za-z0-9_]*`, unique,
//!    and new ones at most [`MAX_COLUMN_NAME_LENGTH`] characters. In CQL text,
//!    unquoted names fold to lower case and quoted ones keep theirs, so `k` and `K`
//!    are one column (defined twice: refused) and `"K"` another. The catalog refuses
//!    to create reserved keyspaces ([`RESERVED_KEYSPACE_NAMES`], `system_*`) and a
//!    keyspace or table whose name differs only in case from an existing one. Every
//!    refusal is a one-line `InvalidInput` and changes nothing.
//! 8. A table created by a [`Catalog`] has a [`TableUuid`], random and kept for
//!    its life (ALTER never changes it); UUIDs are unique across data
//!    directories, where table ids are only unique within one.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use crate::cql::ddl::{cql_name, CreateTable};
use crate::data::{
    Cell, CellKind, ClusteringBound, ClusteringRange, ColumnId, DecoratedKey, DeletionTime,
    LivenessInfo, PartitionUpdate, RangeTombstone, Row, MAX_TTL_SECONDS, NO_TIMESTAMP,
};
use crate::error::{Error, Result};
use crate::options::TableOptions;
use crate::token::compose_partition_key;
use std::sync::Arc;

use crate::types::{self, CqlType, UdtDef, Value};

/// Largest serialized partition key and clustering component (Cassandra's limit).
pub const MAX_KEY_COMPONENT_BYTES: usize = 65_535;
/// Most columns a table may have.
pub const MAX_COLUMNS: usize = 65_535;
/// Longest keyspace or table name: Cassandra's limit, because names become
/// directory names.
pub const MAX_NAME_LENGTH: usize = 48;
/// Longest column name, checked when a column is created (not when a stored schema
/// is loaded, so an older catalog still opens). Cassandra's only bound is 65,535
/// bytes (its 2-byte length prefix); 128 is the SQL standard's identifier length
/// (and Oracle's and SQL Server's limit): ample for any real name, while keeping
/// names, which appear in error messages, `DESCRIBE` output and `schema.json`,
/// readable, and refusing a pasted 100,000-character value at once.
pub const MAX_COLUMN_NAME_LENGTH: usize = 128;
/// Keyspace names that cannot be created, compared ignoring case (a
/// case-insensitive file system maps `Commitlog` onto `commitlog`): Cassandra's
/// own `system` (and every `system_*`), and the entries Strata keeps or may keep
/// at the top of the data directory, where keyspace directories live (db.rs):
/// `commitlog/`, the `LOCK` file, the server's `logs/`, and the `quarantine`
/// and `snapshots` folder names, reserved so that a data-directory-wide
/// quarantine or snapshot folder can never meet a keyspace of the same name.
pub const RESERVED_KEYSPACE_NAMES: &[&str] = &[
    "system",
    "commitlog",
    "lock",
    "logs",
    "quarantine",
    "snapshots",
];

/// What role a column plays.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum ColumnKind {
    PartitionKey,
    Clustering,
    Regular,
    /// One value per partition, stored in the static row.
    Static,
}

/// Clustering order of a clustering column.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Order {
    Asc,
    Desc,
}

/// One column of a table.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct ColumnDef {
    pub name: String,
    pub ty: CqlType,
    pub kind: ColumnKind,
    /// Index within its kind (invariant 1).
    pub position: usize,
    /// Regular and static columns only (invariant 2).
    pub id: Option<ColumnId>,
    /// Clustering columns only: stored in descending order.
    pub descending: bool,
}

impl ColumnDef {
    pub fn is_primary_key(&self) -> bool {
        matches!(self.kind, ColumnKind::PartitionKey | ColumnKind::Clustering)
    }
}

/// A table's UUID: Cassandra's table id (`system_schema.tables.id`), 128 bits
/// unique across data directories, given by the catalog when the table is
/// created (invariant 8). Kept in `schema.json`, in the table's MANIFEST and in
/// each sstable's identity header (docs/FORMAT.md), so that a file, a manifest
/// or a schema that came from another data directory is told apart from this
/// directory's own even where the small sequential [`TableSchema::id`]s agree.
///
/// Cassandra 5 generates a time-based (version 1) UUID (`TableId.generate`,
/// beside a note asking whether it should be random). Strata's is random
/// (version 4, from the kernel's generator): every "now" in the engine comes
/// from an injected clock (DESIGN.md §3), and two directories created under
/// the same simulated clock would otherwise get equal ids. Both are unique,
/// which is all the id must be; neither form is interpreted.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TableUuid(pub [u8; 16]);

impl TableUuid {
    /// A random (version 4, RFC 4122 variant) UUID.
    pub fn random() -> Result<TableUuid> {
        let mut b = [0u8; 16];
        let mut filled = 0;
        while filled < b.len() {
            // SAFETY: writes at most `len - filled` bytes into the rest of `b`.
            let n = unsafe {
                libc::getrandom(
                    b[filled..].as_mut_ptr().cast::<libc::c_void>(),
                    b.len() - filled,
                    0,
                )
            };
            if n < 0 {
                let e = std::io::Error::last_os_error();
                if e.kind() == std::io::ErrorKind::Interrupted {
                    continue;
                }
                return Err(Error::io("getrandom(2)", e));
            }
            filled += n as usize;
        }
        b[6] = (b[6] & 0x0f) | 0x40;
        b[8] = (b[8] & 0x3f) | 0x80;
        Ok(TableUuid(b))
    }

    pub fn as_bytes(&self) -> &[u8; 16] {
        &self.0
    }

    /// Parses the canonical `8-4-4-4-12` hexadecimal form.
    pub fn parse(text: &str) -> Option<TableUuid> {
        let groups: Vec<&str> = text.split('-').collect();
        let lengths: Vec<usize> = groups.iter().map(|g| g.len()).collect();
        if lengths != [8, 4, 4, 4, 12] {
            return None;
        }
        let hex: String = groups.concat();
        let mut b = [0u8; 16];
        for (i, byte) in b.iter_mut().enumerate() {
            *byte = u8::from_str_radix(hex.get(2 * i..2 * i + 2)?, 16).ok()?;
        }
        Some(TableUuid(b))
    }
}

impl std::fmt::Display for TableUuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, byte) in self.0.iter().enumerate() {
            if matches!(i, 4 | 6 | 8 | 10) {
                f.write_str("-")?;
            }
            write!(f, "{byte:02x}")?;
        }
        Ok(())
    }
}

impl std::fmt::Debug for TableUuid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "TableUuid({self})")
    }
}

impl serde::Serialize for TableUuid {
    fn serialize<S: serde::Serializer>(&self, s: S) -> std::result::Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for TableUuid {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> std::result::Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        TableUuid::parse(&text)
            .ok_or_else(|| serde::de::Error::custom(format!("bad table UUID {text:?}")))
    }
}

/// A table's schema. Build with [`TableSchema::builder`] or [`TableSchema::from_cql`].
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableSchema {
    pub keyspace: String,
    pub name: String,
    /// Assigned by [`Catalog::create_table`] (invariant 5); 0 until then.
    pub id: u64,
    /// Invariant 8; see [`TableSchema::uuid`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    uuid: Option<TableUuid>,
    /// Invariant 1.
    pub columns: Vec<ColumnDef>,
    pub options: TableOptions,
    /// Next id for an added column (invariant 2).
    next_column_id: ColumnId,
}

/// Timestamp and TTL of a write. `None` means: the caller's clock (`now_micros`) for
/// the timestamp, the table's `default_time_to_live` for the TTL. A TTL of 0 means
/// no expiry (as `USING TTL 0` in Cassandra).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct WriteOptions {
    pub timestamp_micros: Option<i64>,
    pub ttl_seconds: Option<u32>,
}

/// Builder for [`TableSchema`]; see [`TableSchema::builder`].
#[derive(Clone, Debug)]
pub struct TableSchemaBuilder {
    keyspace: String,
    name: String,
    id: u64,
    uuid: Option<TableUuid>,
    columns: Vec<(String, CqlType, ColumnKind, bool)>,
    options: TableOptions,
}

impl TableSchemaBuilder {
    pub fn partition_key(mut self, name: &str, ty: CqlType) -> Self {
        self.columns
            .push((name.to_string(), ty, ColumnKind::PartitionKey, false));
        self
    }

    pub fn clustering(mut self, name: &str, ty: CqlType, order: Order) -> Self {
        self.columns.push((
            name.to_string(),
            ty,
            ColumnKind::Clustering,
            order == Order::Desc,
        ));
        self
    }

    pub fn column(mut self, name: &str, ty: CqlType) -> Self {
        self.columns
            .push((name.to_string(), ty, ColumnKind::Regular, false));
        self
    }

    pub fn static_column(mut self, name: &str, ty: CqlType) -> Self {
        self.columns
            .push((name.to_string(), ty, ColumnKind::Static, false));
        self
    }

    pub fn options(mut self, options: TableOptions) -> Self {
        self.options = options;
        self
    }

    /// Normally left at 0: the catalog assigns ids.
    pub fn id(mut self, id: u64) -> Self {
        self.id = id;
        self
    }

    /// Normally left unset: the catalog gives each new table its UUID. Set by
    /// `strata schema rebuild`, which takes it from the table's own files.
    pub fn uuid(mut self, uuid: Option<TableUuid>) -> Self {
        self.uuid = uuid;
        self
    }

    /// Orders the columns (invariant 1), numbers them (invariant 2) and validates.
    pub fn build(self) -> Result<TableSchema> {
        let mut columns = Vec::with_capacity(self.columns.len());
        for kind in [ColumnKind::PartitionKey, ColumnKind::Clustering] {
            for (name, ty, _, descending) in self.columns.iter().filter(|c| c.2 == kind) {
                let position = columns
                    .iter()
                    .filter(|c: &&ColumnDef| c.kind == kind)
                    .count();
                columns.push(ColumnDef {
                    name: name.clone(),
                    ty: ty.clone(),
                    kind,
                    position,
                    id: None,
                    descending: *descending,
                });
            }
        }
        let mut next_id: ColumnId = 0;
        let (mut regular, mut statics) = (0, 0);
        for (name, ty, kind, _) in &self.columns {
            let position = match kind {
                ColumnKind::Regular => &mut regular,
                ColumnKind::Static => &mut statics,
                _ => continue,
            };
            columns.push(ColumnDef {
                name: name.clone(),
                ty: ty.clone(),
                kind: *kind,
                position: *position,
                id: Some(next_id),
                descending: false,
            });
            *position += 1;
            next_id += 1;
        }
        let schema = TableSchema {
            keyspace: self.keyspace,
            name: self.name,
            id: self.id,
            uuid: self.uuid,
            columns,
            options: self.options,
            next_column_id: next_id,
        };
        schema.validate_new()?;
        Ok(schema)
    }
}

impl TableSchemaBuilder {
    /// As [`build`](Self::build), but with the column ids the table's files were
    /// written with (`strata schema rebuild`, after a lost `schema.json`): `ids`
    /// holds one id per regular or static column in declaration order, strictly
    /// increasing; ids assigned later are above them and at least
    /// `next_column_id`, so a dropped column's id is never reused.
    pub fn build_with_ids(self, ids: &[ColumnId], next_column_id: ColumnId) -> Result<TableSchema> {
        let mut schema = self.build()?;
        let table = schema.qualified_name();
        let mut given = ids.iter();
        for c in schema.columns.iter_mut().filter(|c| c.id.is_some()) {
            let id = given.next().ok_or_else(|| {
                Error::InvalidInput(format!("{table}: fewer column ids than columns"))
            })?;
            c.id = Some(*id);
        }
        if given.next().is_some() {
            return Err(Error::InvalidInput(format!(
                "{table}: more column ids than columns"
            )));
        }
        let above = match ids.iter().max() {
            Some(&m) => m.checked_add(1).ok_or_else(|| {
                Error::InvalidInput(format!("{table}: column id {m} is the largest possible"))
            })?,
            None => 0,
        };
        schema.next_column_id = above.max(next_column_id);
        schema.validate()?;
        Ok(schema)
    }
}

/// `[A-Za-z][A-Za-z0-9_]*`: what CQL accepts unquoted, and safe as a directory name.
fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    chars.next().is_some_and(|c| c.is_ascii_alphabetic())
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name for a message: in full when short, else its start and its length, so a
/// pasted 100,000-character name gives a one-line error.
fn shown(name: &str) -> String {
    const SHOWN_CHARS: usize = 40;
    if name.chars().count() <= SHOWN_CHARS {
        format!("'{name}'")
    } else {
        let head: String = name.chars().take(SHOWN_CHARS).collect();
        format!("'{head}...' ({} characters)", name.chars().count())
    }
}

/// Keyspace and table names (become directory names): Cassandra's rule, `\w+` in
/// ASCII (`[A-Za-z0-9_]`, so never `.`, `/` or a space) and at most
/// [`MAX_NAME_LENGTH`] characters.
fn check_name(what: &str, name: &str) -> Result<()> {
    let chars_ok = name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_');
    if name.is_empty() || !chars_ok || name.len() > MAX_NAME_LENGTH {
        return Err(Error::InvalidInput(format!(
            "invalid {what} name {}: must be 1 to {MAX_NAME_LENGTH} letters, digits or '_'",
            shown(name)
        )));
    }
    Ok(())
}

/// Refuses the keyspace names of [`RESERVED_KEYSPACE_NAMES`] and `system_*`.
fn check_keyspace_not_reserved(name: &str) -> Result<()> {
    let lower = name.to_ascii_lowercase();
    if RESERVED_KEYSPACE_NAMES.contains(&lower.as_str()) || lower.starts_with("system_") {
        return Err(Error::InvalidInput(format!(
            "keyspace name '{name}' is reserved (system, system_*, commitlog, lock, logs, \
             quarantine and snapshots, in any case, name Cassandra's or Strata's own data)"
        )));
    }
    Ok(())
}

impl TableSchema {
    pub fn builder(keyspace: &str, name: &str) -> TableSchemaBuilder {
        TableSchemaBuilder {
            keyspace: keyspace.to_string(),
            name: name.to_string(),
            id: 0,
            uuid: None,
            columns: Vec::new(),
            options: TableOptions::default(),
        }
    }

    /// `keyspace.table`, for messages.
    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.keyspace, self.name)
    }

    /// The table's UUID as 16 bytes (big-endian, as Cassandra serializes a
    /// UUID): what `system_schema.tables.id` publishes (invariant 8). `None`
    /// for a schema no catalog has created, and for a table of a data
    /// directory written before table UUIDs that has only been opened
    /// read-only since (the first read-write open gives every table one).
    pub fn uuid(&self) -> Option<[u8; 16]> {
        self.uuid.map(|u| u.0)
    }

    /// [`TableSchema::uuid`] as its type (text form, comparison).
    pub fn table_uuid(&self) -> Option<TableUuid> {
        self.uuid
    }

    /// The next column id ALTER TABLE ADD would give: every column this
    /// table ever had has a smaller one (invariant 2).
    pub fn next_column_id(&self) -> ColumnId {
        self.next_column_id
    }

    /// What a *new* table or column must satisfy beyond [`TableSchema::validate`]:
    /// column names of at most [`MAX_COLUMN_NAME_LENGTH`] characters. Kept out of
    /// `validate`, which also runs on a loaded catalog, so that a limit added later
    /// never stops a data directory written before it from opening.
    fn validate_new(&self) -> Result<()> {
        self.validate()?;
        if let Some(c) = self
            .columns
            .iter()
            .find(|c| c.name.len() > MAX_COLUMN_NAME_LENGTH)
        {
            return Err(Error::InvalidInput(format!(
                "column name {} in table {} is too long: at most {MAX_COLUMN_NAME_LENGTH} characters",
                shown(&c.name),
                self.qualified_name()
            )));
        }
        Ok(())
    }

    /// Checks invariants 1, 2 and the naming rules. The builder and the catalog (after
    /// loading) call it, since the fields are public.
    pub fn validate(&self) -> Result<()> {
        check_name("keyspace", &self.keyspace)?;
        check_name("table", &self.name)?;
        let table = self.qualified_name();
        if self.columns.len() > MAX_COLUMNS {
            return Err(Error::InvalidInput(format!(
                "table {table} has {} columns; at most {MAX_COLUMNS} are allowed",
                self.columns.len()
            )));
        }
        if !self
            .columns
            .iter()
            .any(|c| c.kind == ColumnKind::PartitionKey)
        {
            return Err(Error::InvalidInput(format!(
                "table {table} needs at least one partition key column"
            )));
        }
        let mut names: Vec<&str> = Vec::with_capacity(self.columns.len());
        let mut ids: Vec<ColumnId> = Vec::new();
        let mut counts = [0usize; 4];
        let mut last_kind = 0;
        for c in &self.columns {
            if !is_identifier(&c.name) {
                return Err(Error::InvalidInput(format!(
                    "invalid column name {} in table {table}: must be a letter then letters, digits or '_'",
                    shown(&c.name)
                )));
            }
            if names.contains(&c.name.as_str()) {
                return Err(Error::InvalidInput(format!(
                    "column {} defined twice in table {table}",
                    shown(&c.name)
                )));
            }
            names.push(&c.name);
            let k = match c.kind {
                ColumnKind::PartitionKey => 0,
                ColumnKind::Clustering => 1,
                ColumnKind::Regular => 2,
                ColumnKind::Static => 3,
            };
            // Regular and static columns interleave; key columns come first, in order.
            if k.min(2) < last_kind {
                return Err(Error::InvalidInput(format!(
                    "columns of table {table} are out of order at '{}'",
                    c.name
                )));
            }
            last_kind = k.min(2);
            if c.position != counts[k] {
                return Err(Error::InvalidInput(format!(
                    "column '{}' of table {table} has position {}, expected {}",
                    c.name, c.position, counts[k]
                )));
            }
            counts[k] += 1;
            match (c.is_primary_key(), c.id) {
                (true, None) | (false, Some(_)) => {}
                _ => {
                    return Err(Error::InvalidInput(format!(
                        "column '{}' of table {table} has a wrong id",
                        c.name
                    )))
                }
            }
            if let Some(id) = c.id {
                if ids.last().is_some_and(|&last| last >= id) || id >= self.next_column_id {
                    return Err(Error::InvalidInput(format!(
                        "column '{}' of table {table} has id {id} out of order",
                        c.name
                    )));
                }
                ids.push(id);
            }
            if c.is_primary_key() {
                check_key_type(&c.name, &c.ty)?;
            }
            if c.descending && c.kind != ColumnKind::Clustering {
                return Err(Error::InvalidInput(format!(
                    "column '{}' is not a clustering column and cannot be DESC",
                    c.name
                )));
            }
        }
        if counts[3] > 0 && counts[1] == 0 {
            return Err(Error::InvalidInput(format!(
                "table {table} has static columns but no clustering columns; static columns need at least one"
            )));
        }
        if self.is_counter_table() {
            // Cassandra's rules for a counter table (`data.rs` invariant 6:
            // counter cells meet only counter cells).
            if self
                .columns
                .iter()
                .any(|c| !c.is_primary_key() && c.ty != CqlType::Counter)
            {
                return Err(Error::InvalidInput(
                    "Cannot mix counter and non counter columns in the same table".to_string(),
                ));
            }
            if self.options.default_time_to_live_seconds != 0 {
                return Err(Error::InvalidInput(
                    "Cannot set default_time_to_live on a table with counters".to_string(),
                ));
            }
        }
        self.options.validate()
    }

    /// Whether this is a counter table: its non-key columns are counters
    /// (Cassandra's `counter` table flag). A table of key columns alone is not.
    pub fn is_counter_table(&self) -> bool {
        self.columns
            .iter()
            .any(|c| !c.is_primary_key() && c.ty == CqlType::Counter)
    }

    /// The column called `name`, or `NotFound`.
    pub fn column(&self, name: &str) -> Result<&ColumnDef> {
        self.columns.iter().find(|c| c.name == name).ok_or_else(|| {
            Error::NotFound(format!(
                "column '{name}' in table {}",
                self.qualified_name()
            ))
        })
    }

    pub fn column_by_id(&self, id: ColumnId) -> Option<&ColumnDef> {
        // Ids ascend along the non-key columns (invariant 2).
        let start = self
            .columns
            .iter()
            .position(|c| c.id.is_some())
            .unwrap_or(self.columns.len());
        let others = &self.columns[start..];
        others
            .binary_search_by_key(&Some(id), |c| c.id)
            .ok()
            .map(|i| &others[i])
    }

    pub fn partition_key_columns(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::PartitionKey)
    }

    pub fn clustering_columns(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Clustering)
    }

    pub fn regular_columns(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns
            .iter()
            .filter(|c| c.kind == ColumnKind::Regular)
    }

    pub fn static_columns(&self) -> impl Iterator<Item = &ColumnDef> {
        self.columns.iter().filter(|c| c.kind == ColumnKind::Static)
    }

    fn pk_count(&self) -> usize {
        self.partition_key_columns().count()
    }

    fn ck_count(&self) -> usize {
        self.clustering_columns().count()
    }

    // -- ALTER ---------------------------------------------------------------

    /// ALTER TABLE ADD: a new regular (or static) column with a fresh id.
    pub fn with_column_added(
        &self,
        name: &str,
        ty: CqlType,
        is_static: bool,
    ) -> Result<TableSchema> {
        let mut out = self.clone();
        let kind = if is_static {
            ColumnKind::Static
        } else {
            ColumnKind::Regular
        };
        let counter_table = self.is_counter_table();
        if counter_table != (ty == CqlType::Counter) {
            // Cassandra answers these as a ConfigurationException.
            return Err(Error::Cql(crate::error::CqlError {
                kind: crate::error::CqlErrorKind::ConfigError,
                message: format!(
                    "{}: Cannot have a {} column (\"{name}\") in a {} table",
                    self.qualified_name(),
                    if counter_table {
                        "non counter"
                    } else {
                        "counter"
                    },
                    if counter_table {
                        "counter"
                    } else {
                        "non counter"
                    },
                ),
                position: None,
            }));
        }
        let position = out.columns.iter().filter(|c| c.kind == kind).count();
        let id = out.next_column_id;
        out.next_column_id = id.checked_add(1).ok_or_else(|| {
            Error::InvalidInput(format!(
                "table {} has used up its column ids",
                self.qualified_name()
            ))
        })?;
        out.columns.push(ColumnDef {
            name: name.to_string(),
            ty,
            kind,
            position,
            id: Some(id),
            descending: false,
        });
        out.validate_new()?;
        Ok(out)
    }

    /// ALTER TABLE DROP: removes a regular or static column; its id is retired.
    pub fn with_column_dropped(&self, name: &str) -> Result<TableSchema> {
        let col = self.column(name)?;
        if col.is_primary_key() {
            return Err(Error::InvalidInput(format!(
                "cannot drop primary key column '{name}'"
            )));
        }
        let kind = col.kind;
        let mut out = self.clone();
        out.columns.retain(|c| c.name != name);
        for (i, c) in out
            .columns
            .iter_mut()
            .filter(|c| c.kind == kind)
            .enumerate()
        {
            c.position = i;
        }
        out.validate()?;
        Ok(out)
    }

    /// ALTER TABLE RENAME: gives a primary-key column another name. Only key
    /// columns may be renamed (as in Cassandra): sstables hold their values
    /// by position and type, never by name, so every file stays readable
    /// (`sstable::identity`), where a regular column's cells would be tied
    /// to its name in files already written.
    pub fn with_column_renamed(&self, from: &str, to: &str) -> Result<TableSchema> {
        let col = self.column(from)?;
        if !col.is_primary_key() {
            return Err(Error::InvalidInput(format!(
                "cannot rename non primary key column '{from}'"
            )));
        }
        if self.columns.iter().any(|c| c.name == to) {
            return Err(Error::InvalidInput(format!(
                "cannot rename column '{from}' to '{to}': table {} has a column of that name",
                self.qualified_name()
            )));
        }
        let mut out = self.clone();
        for c in out.columns.iter_mut().filter(|c| c.name == from) {
            c.name = to.to_string();
        }
        out.validate_new()?;
        Ok(out)
    }

    // -- Keys ----------------------------------------------------------------

    /// Serializes a value for column `col`, checking its type (invariant 3).
    fn serialize_for(&self, col: &ColumnDef, v: &Value) -> Result<Vec<u8>> {
        if !v.fits(&col.ty) {
            return Err(Error::InvalidInput(format!(
                "column '{}' of table {} is {}, got a {} value",
                col.name,
                self.qualified_name(),
                col.ty.name(),
                v.kind_name()
            )));
        }
        let bytes = types::serialize(v);
        // `Value` can hold what its type cannot (non-ASCII text in an ascii value, a
        // 5-byte inet): reject it here rather than store bytes Cassandra would refuse.
        // A complex column's value is checked by decoding it once, in
        // `decode_for`, which its element cells need anyway.
        if !col.ty.is_multi_cell() {
            types::validate(&col.ty, &bytes).map_err(|e| {
                Error::InvalidInput(format!("column '{}': {}", col.name, strip_prefix(&e)))
            })?;
        }
        Ok(bytes)
    }

    /// A complex column's serialized value decoded: checked, and normalised
    /// (sets and maps sorted, duplicates gone) as its element cells need it.
    fn decode_for(&self, col: &ColumnDef, bytes: &[u8]) -> Result<Value> {
        types::deserialize(&col.ty, bytes).map_err(|e| {
            Error::InvalidInput(format!("column '{}': {}", col.name, strip_prefix(&e)))
        })
    }

    /// Serialized partition key from its values in key order: the bytes Cassandra
    /// hashes (one component as is, several in `CompositeType` form).
    pub fn serialize_partition_key(&self, values: &[Value]) -> Result<Vec<u8>> {
        // One key column, the usual table: its serialized value is the key,
        // built without the component vectors below (five allocations that
        // were a fifth of a point read's time when the key is missing:
        // BENCHMARKS.md, "Building the key").
        let mut key_columns = self.partition_key_columns();
        if let (Some(col), None, [v]) = (key_columns.next(), key_columns.next(), values) {
            let key = self.serialize_for(col, v)?;
            return self.checked_key(key, &col.name);
        }
        let cols: Vec<&ColumnDef> = self.partition_key_columns().collect();
        if values.len() != cols.len() {
            return Err(Error::InvalidInput(format!(
                "table {} has {} partition key column(s), got {} value(s)",
                self.qualified_name(),
                cols.len(),
                values.len()
            )));
        }
        let mut parts = Vec::with_capacity(cols.len());
        for (col, v) in cols.iter().zip(values) {
            parts.push(self.serialize_for(col, v)?);
        }
        let named: Vec<(&ColumnDef, &[u8])> = cols
            .iter()
            .zip(&parts)
            .map(|(c, p)| (*c, p.as_slice()))
            .collect();
        self.compose_key(&named)
    }

    /// The partition key from its serialized components in key order, with
    /// Cassandra's size limits and the empty-key refusal checked.
    fn compose_key(&self, parts: &[(&ColumnDef, &[u8])]) -> Result<Vec<u8>> {
        for (col, bytes) in parts {
            if bytes.len() > MAX_KEY_COMPONENT_BYTES {
                return Err(key_too_long(&col.name, bytes.len()));
            }
        }
        let refs: Vec<&[u8]> = parts.iter().map(|(_, p)| *p).collect();
        self.checked_key(compose_partition_key(&refs), "(composite)")
    }

    /// `key` if it is within Cassandra's size limit (`name` says whose
    /// bytes are too long) and not empty.
    fn checked_key(&self, key: Vec<u8>, name: &str) -> Result<Vec<u8>> {
        if key.len() > MAX_KEY_COMPONENT_BYTES {
            return Err(key_too_long(name, key.len()));
        }
        if key.is_empty() {
            // Cassandra: "Key may not be empty" (and the empty key owns no token).
            return Err(Error::InvalidInput(format!(
                "partition key of table {} may not be empty",
                self.qualified_name()
            )));
        }
        Ok(key)
    }

    /// The ring position of the partition with these key values.
    pub fn decorated_key(&self, values: &[Value]) -> Result<DecoratedKey> {
        Ok(DecoratedKey::new(&self.serialize_partition_key(values)?))
    }

    /// A partition key typed as nodetool and `sstabledump -k` take it: the
    /// value in CQL literal form, or for a key of several columns their
    /// values joined by ':'.
    pub fn parse_partition_key(&self, text: &str) -> Result<DecoratedKey> {
        let cols: Vec<&ColumnDef> = self.partition_key_columns().collect();
        let parts: Vec<&str> = if cols.len() == 1 {
            vec![text]
        } else {
            text.split(':').collect()
        };
        if parts.len() != cols.len() {
            return Err(Error::InvalidInput(format!(
                "{} has a partition key of {} columns ({}): give their values joined by ':'",
                self.qualified_name(),
                cols.len(),
                cols.iter()
                    .map(|c| c.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )));
        }
        let values = cols
            .iter()
            .zip(parts)
            .map(|(c, p)| crate::cql::literal::parse_value(&c.ty, p))
            .collect::<Result<Vec<_>>>()?;
        self.decorated_key(&values)
    }

    /// Inverse of [`TableSchema::serialize_partition_key`].
    pub fn decode_partition_key(&self, bytes: &[u8]) -> Result<Vec<Value>> {
        let cols: Vec<&ColumnDef> = self.partition_key_columns().collect();
        if let [single] = cols.as_slice() {
            return Ok(vec![types::deserialize(&single.ty, bytes)?]);
        }
        let mut out = Vec::with_capacity(cols.len());
        let mut rest = bytes;
        for col in &cols {
            let malformed = || {
                Error::InvalidInput(format!(
                    "malformed composite partition key at column '{}'",
                    col.name
                ))
            };
            let (len_bytes, tail) = rest.split_first_chunk::<2>().ok_or_else(malformed)?;
            let len = u16::from_be_bytes(*len_bytes) as usize;
            if tail.len() < len + 1 || tail[len] != 0 {
                return Err(malformed());
            }
            out.push(types::deserialize(&col.ty, &tail[..len])?);
            rest = &tail[len + 1..];
        }
        if !rest.is_empty() {
            return Err(Error::InvalidInput(format!(
                "{} trailing bytes after composite partition key",
                rest.len()
            )));
        }
        Ok(out)
    }

    /// Byte-comparable encoding of a full clustering (all clustering values, in order).
    pub fn encode_clustering(&self, values: &[Value]) -> Result<Vec<u8>> {
        let n = self.ck_count();
        if values.len() != n {
            return Err(Error::InvalidInput(format!(
                "table {} has {n} clustering column(s), got {} value(s)",
                self.qualified_name(),
                values.len()
            )));
        }
        self.encode_clustering_prefix(values)
    }

    /// Encoding of the first `values.len()` clustering values: a range bound that
    /// covers every row starting with them (types invariant 4).
    pub fn encode_clustering_prefix(&self, values: &[Value]) -> Result<Vec<u8>> {
        let cols: Vec<&ColumnDef> = self.clustering_columns().collect();
        if values.len() > cols.len() {
            return Err(Error::InvalidInput(format!(
                "table {} has {} clustering column(s), got {} value(s)",
                self.qualified_name(),
                cols.len(),
                values.len()
            )));
        }
        let mut parts = Vec::with_capacity(values.len());
        for (col, v) in cols.iter().zip(values) {
            check_clustering_size(col, self.serialize_for(col, v)?.len())?;
            parts.push((v, col.descending));
        }
        if parts.is_empty() {
            return Ok(Vec::new());
        }
        Ok(types::encode_clustering(&parts))
    }

    /// Decodes a clustering or a clustering prefix.
    pub fn decode_clustering(&self, bytes: &[u8]) -> Result<Vec<Value>> {
        let tys: Vec<(CqlType, bool)> = self
            .clustering_columns()
            .map(|c| (c.ty.clone(), c.descending))
            .collect();
        types::decode_clustering(&tys, bytes)
    }

    /// A clustering range from two prefixes, each `(values, inclusive)`. Bounds are in
    /// storage order: for a DESC column the start holds the larger value. An empty
    /// prefix is unbounded whatever its flag.
    pub fn clustering_range(
        &self,
        start: (&[Value], bool),
        end: (&[Value], bool),
    ) -> Result<ClusteringRange> {
        let bound = |(values, inclusive): (&[Value], bool)| -> Result<ClusteringBound> {
            let prefix = self.encode_clustering_prefix(values)?;
            Ok(if prefix.is_empty() {
                ClusteringBound::UNBOUNDED
            } else {
                ClusteringBound { prefix, inclusive }
            })
        };
        let range = ClusteringRange {
            start: bound(start)?,
            end: bound(end)?,
        };
        let (s, e) = (&range.start.prefix, &range.end.prefix);
        // A start after the end (and not inside it, as prefix [1, 5] is inside [1]) is
        // almost certainly a caller mixing up DESC order: say so instead of deleting nothing.
        if !s.is_empty() && !e.is_empty() && s > e && !s.starts_with(e) {
            return Err(Error::InvalidInput(format!(
                "clustering range of table {} starts after it ends (bounds are in clustering order; DESC columns run from high to low)",
                self.qualified_name()
            )));
        }
        Ok(range)
    }

    // -- Mutations -----------------------------------------------------------

    /// INSERT: the row marker (timestamp, TTL) plus one cell per given non-key column.
    /// Every partition key and clustering column must be given, except that an
    /// insert of static columns only may omit the clustering (it then writes the
    /// static row, which carries the marker, as Cassandra does).
    pub fn insert(
        &self,
        row: &[(&str, Value)],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        let values: Vec<(&str, Option<&Value>)> = row.iter().map(|(n, v)| (*n, Some(v))).collect();
        self.insert_values(&values, opts, now_micros)
    }

    /// INSERT where a non-key column may be `None`: CQL's `INSERT ... VALUES
    /// (..., null)`, which writes a cell tombstone for it beside the row
    /// marker, as Cassandra does.
    pub fn insert_values(
        &self,
        values: &[(&str, Option<&Value>)],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        let mut split = self.split(values, true)?;
        let time = self.write_time(opts, now_micros, true)?;
        let (key, clustering) =
            self.keys(&split, split.has_regular() || split.statics.is_empty())?;
        let mut update = PartitionUpdate::new(key);
        let marker = time.marker();
        match clustering {
            Some(clustering) => {
                let mut r = Row::new(clustering);
                r.liveness = marker;
                r.cells.reserve_exact(split.regulars.len());
                for (col, v) in &mut split.regulars {
                    time.put(&mut r, col, v.take())?;
                }
                update.add_row(r);
                if !split.statics.is_empty() {
                    let mut s = Row::new(Vec::new());
                    for (col, v) in &mut split.statics {
                        time.put(&mut s, col, v.take())?;
                    }
                    update.static_row = Some(s);
                }
            }
            None => {
                let mut s = Row::new(Vec::new());
                s.liveness = marker;
                for (col, v) in &mut split.statics {
                    time.put(&mut s, col, v.take())?;
                }
                update.static_row = Some(s);
            }
        }
        Ok(update)
    }

    /// UPDATE: cells only, no row marker. `key` holds the partition key and the
    /// clustering (which may be omitted when only static columns are set); `set` the
    /// new values, `None` deleting that cell (a cell tombstone).
    pub fn update(
        &self,
        key: &[(&str, Value)],
        set: &[(&str, Option<Value>)],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        if set.is_empty() {
            return Err(Error::InvalidInput(format!(
                "UPDATE of {} sets no column",
                self.qualified_name()
            )));
        }
        let time = self.write_time(opts, now_micros, true)?;
        let set: Vec<(&str, Option<&Value>)> = set.iter().map(|(n, v)| (*n, v.as_ref())).collect();
        self.cells_mutation(key, &set, &time)
    }

    /// DELETE of some columns of one row (cell tombstones). As for UPDATE, the
    /// clustering may be omitted when only static columns are deleted.
    pub fn delete_cells(
        &self,
        key: &[(&str, Value)],
        columns: &[&str],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        if columns.is_empty() {
            return Err(Error::InvalidInput(format!(
                "DELETE of {} names no column",
                self.qualified_name()
            )));
        }
        let time = self.write_time(opts, now_micros, false)?;
        let set: Vec<(&str, Option<&Value>)> = columns.iter().map(|c| (*c, None)).collect();
        self.cells_mutation(key, &set, &time)
    }

    /// UPDATE and column DELETE: `key` names primary key columns only, `set` non-key
    /// columns only.
    fn cells_mutation(
        &self,
        key: &[(&str, Value)],
        set: &[(&str, Option<&Value>)],
        time: &WriteTime,
    ) -> Result<PartitionUpdate> {
        let mut values = self.key_only(key)?;
        for &(n, v) in set {
            if self.column(n)?.is_primary_key() {
                return Err(Error::InvalidInput(format!(
                    "primary key column '{n}' cannot be updated or deleted alone"
                )));
            }
            values.push((n, v));
        }
        let mut split = self.split(&values, true)?;
        let (key, clustering) = self.keys(&split, split.has_regular())?;
        let mut update = PartitionUpdate::new(key);
        if !split.regulars.is_empty() {
            let mut r = Row::new(clustering.unwrap_or_default());
            for (col, v) in &mut split.regulars {
                time.put(&mut r, col, v.take())?;
            }
            update.add_row(r);
        }
        if !split.statics.is_empty() {
            let mut s = Row::new(Vec::new());
            for (col, v) in &mut split.statics {
                time.put(&mut s, col, v.take())?;
            }
            update.static_row = Some(s);
        }
        Ok(update)
    }

    /// Element writes to complex columns (`crate::complex`): each names a
    /// column, an element's cell path and its serialized value, `None`
    /// deleting that element. No complex deletion: the other elements stay.
    /// As for UPDATE, the clustering may be omitted when only static columns
    /// are written; `ttl_allowed` is false for a DELETE.
    pub fn update_elements(
        &self,
        key: &[(&str, Value)],
        elements: Vec<ElementWrite<'_>>,
        opts: &WriteOptions,
        now_micros: i64,
        ttl_allowed: bool,
    ) -> Result<PartitionUpdate> {
        let time = self.write_time(opts, now_micros, ttl_allowed)?;
        let mut cells = Vec::with_capacity(elements.len());
        for e in elements {
            let col = self.column(e.column)?;
            if !col.ty.is_multi_cell() {
                return Err(Error::InvalidInput(format!(
                    "column '{}' of type {} has no elements",
                    col.name,
                    col.ty.name()
                )));
            }
            if e.path.is_empty() {
                return Err(Error::InvalidInput(format!(
                    "an element of column '{}' has an empty path",
                    col.name
                )));
            }
            cells.push((col.kind, time.element(col, e.path, e.value)));
        }
        self.cells_update(key, cells)
    }

    /// The update of one row (or the static row) of `key` holding `cells`,
    /// each with its column's kind. As for UPDATE, the clustering may be
    /// omitted when only static columns are written.
    fn cells_update(
        &self,
        key: &[(&str, Value)],
        cells: Vec<(ColumnKind, Cell)>,
    ) -> Result<PartitionUpdate> {
        let values = self.key_only(key)?;
        let split = self.split(&values, false)?;
        let regular = cells.iter().any(|(k, _)| *k == ColumnKind::Regular);
        let (key, clustering) = self.keys(&split, regular)?;
        let mut update = PartitionUpdate::new(key);
        let mut row = Row::new(clustering.unwrap_or_default());
        let mut statics = Row::new(Vec::new());
        for (kind, cell) in cells {
            match kind {
                ColumnKind::Static => statics.add_cell(cell),
                _ => row.add_cell(cell),
            }
        }
        if !row.cells.is_empty() {
            update.add_row(row);
        }
        if !statics.cells.is_empty() {
            update.static_row = Some(statics);
        }
        Ok(update)
    }

    /// UPDATE of counter columns, `c = c + delta` for each `(column, delta)`:
    /// pending increments (`crate::counter` contract 2), which
    /// `Table::apply_counters` resolves against the current value, under the
    /// partition's lock, before the update reaches the table. As for UPDATE,
    /// the clustering may be omitted when only static counters change.
    ///
    /// The writer id of the shards is the table's UUID: every process that
    /// opens the data directory writes the one shard, so a row deletion
    /// followed by an increment never meets an older shard of another writer
    /// that the deletion shadowed (which a merge would carry past it), and a
    /// table's sstables imported from another directory keep their own
    /// shards, which add up with this table's.
    pub fn update_counters(
        &self,
        key: &[(&str, Value)],
        deltas: &[(&str, i64)],
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        let writer = self.uuid().unwrap_or_default();
        let mut cells = Vec::with_capacity(deltas.len());
        for (name, delta) in deltas {
            let col = self.column(name)?;
            let (Some(id), CqlType::Counter) = (col.id, &col.ty) else {
                return Err(Error::InvalidInput(format!(
                    "column '{name}' is not a counter"
                )));
            };
            let context = crate::counter::pending(writer, *delta);
            cells.push((col.kind, Cell::counter(id, now_micros, context)));
        }
        self.cells_update(key, cells)
    }

    /// The value of non-key column `col` in `row`, a live view: a simple
    /// column's cell, or a complex column's elements put together.
    pub fn column_value(&self, col: &ColumnDef, row: &Row) -> Result<Option<Value>> {
        match col.id {
            Some(id) => cell_value(col, row, id),
            None => Ok(None),
        }
    }

    /// DELETE of one whole row: a row tombstone. `key` is the full primary key.
    pub fn delete_row(
        &self,
        key: &[(&str, Value)],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        let values = self.key_only(key)?;
        let split = self.split(&values, false)?;
        let time = self.write_time(opts, now_micros, false)?;
        let (key, clustering) = self.keys(&split, true)?;
        let mut update = PartitionUpdate::new(key);
        let mut row = Row::new(clustering.unwrap_or_default());
        row.deletion = time.deletion();
        update.add_row(row);
        Ok(update)
    }

    /// DELETE of a whole partition (partition tombstone). `pk` is the partition key.
    pub fn delete_partition(
        &self,
        pk: &[(&str, Value)],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        let values = self.key_only(pk)?;
        let split = self.split(&values, false)?;
        if split.clustering.iter().any(|c| c.is_some()) {
            return Err(Error::InvalidInput(
                "a partition deletion takes only partition key columns".to_string(),
            ));
        }
        let time = self.write_time(opts, now_micros, false)?;
        let key = self.partition_key_of(&split)?;
        let mut update = PartitionUpdate::new(key);
        update.deletion.partition = Some(time.deletion());
        Ok(update)
    }

    /// DELETE of a clustering range within a partition (range tombstone). `start` and
    /// `end` are clustering prefixes with their inclusiveness, in storage order (see
    /// [`TableSchema::clustering_range`]).
    pub fn delete_range(
        &self,
        pk: &[(&str, Value)],
        start: (&[Value], bool),
        end: (&[Value], bool),
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        if self.ck_count() == 0 {
            return Err(Error::InvalidInput(format!(
                "table {} has no clustering columns: delete the partition instead",
                self.qualified_name()
            )));
        }
        let values = self.key_only(pk)?;
        let split = self.split(&values, false)?;
        if split.clustering.iter().any(|c| c.is_some()) {
            return Err(Error::InvalidInput(
                "give clustering values as range bounds, not in the partition key".to_string(),
            ));
        }
        let range = self.clustering_range(start, end)?;
        let time = self.write_time(opts, now_micros, false)?;
        let key = self.partition_key_of(&split)?;
        let mut update = PartitionUpdate::new(key);
        update.deletion.ranges.push(RangeTombstone {
            range,
            deletion: time.deletion(),
        });
        Ok(update)
    }

    /// DELETE of clustering ranges already in storage order (CQL's `DELETE ...
    /// WHERE k = ? AND c > ?`, a prefix or a slice): one range tombstone each.
    pub fn delete_ranges(
        &self,
        pk: &[Value],
        ranges: &[ClusteringRange],
        opts: &WriteOptions,
        now_micros: i64,
    ) -> Result<PartitionUpdate> {
        let time = self.write_time(opts, now_micros, false)?;
        let key = self.decorated_key(pk)?;
        let mut update = PartitionUpdate::new(key);
        for range in ranges {
            update.deletion.ranges.push(RangeTombstone {
                range: range.clone(),
                deletion: time.deletion(),
            });
        }
        Ok(update)
    }

    /// The values of one stored row, every column in schema order, `None` where the
    /// row has no value. `pk` is the serialized partition key and `row` should be a
    /// live view (`Row::live_view`): tombstones read as `None`, but expiry is not
    /// re-checked. The static row (empty clustering in a table with clustering
    /// columns) yields `None` clustering values. Cells of dropped columns are skipped.
    pub fn row_values(&self, pk: &[u8], row: &Row) -> Result<Vec<(String, Option<Value>)>> {
        self.row_values_with_static(pk, None, row)
    }

    /// As [`TableSchema::row_values`], taking static column values from `static_row`.
    pub fn row_values_with_static(
        &self,
        pk: &[u8],
        static_row: Option<&Row>,
        row: &Row,
    ) -> Result<Vec<(String, Option<Value>)>> {
        let mut pk_values = self.decode_partition_key(pk)?.into_iter();
        let mut ck_values = if row.clustering.is_empty() {
            Vec::new().into_iter()
        } else {
            self.decode_clustering(&row.clustering)?.into_iter()
        };
        let mut out = Vec::with_capacity(self.columns.len());
        for col in &self.columns {
            let value = match (col.kind, col.id) {
                (ColumnKind::PartitionKey, _) => pk_values.next(),
                (ColumnKind::Clustering, _) => ck_values.next(),
                (ColumnKind::Static, Some(id)) => match static_row {
                    Some(s) => cell_value(col, s, id)?,
                    None => cell_value(col, row, id)?,
                },
                (_, Some(id)) => cell_value(col, row, id)?,
                (_, None) => None,
            };
            out.push((col.name.clone(), value));
        }
        Ok(out)
    }

    /// Resolves named values into key components and non-key values (invariant 3).
    fn split<'a>(
        &'a self,
        values: &[(&str, Option<&'a Value>)],
        allow_non_key: bool,
    ) -> Result<Split<'a>> {
        // Sized up front: pushing a row's cells one by one into empty vectors
        // regrew them (4, then 8, ...) on every write.
        let mut split = Split {
            partition: vec![None; self.pk_count()],
            clustering: vec![None; self.ck_count()],
            regulars: Vec::with_capacity(values.len()),
            statics: Vec::new(),
        };
        let mut seen: Vec<&str> = Vec::with_capacity(values.len());
        for &(name, value) in values {
            let col = self.column(name)?;
            if seen.contains(&name) {
                return Err(Error::InvalidInput(format!(
                    "column '{name}' given more than once"
                )));
            }
            seen.push(name);
            match (col.kind, value) {
                (ColumnKind::PartitionKey | ColumnKind::Clustering, None) => {
                    return Err(Error::InvalidInput(format!(
                        "primary key column '{name}' cannot be null"
                    )));
                }
                (ColumnKind::PartitionKey, Some(v)) => {
                    split.partition[col.position] = Some((v, self.serialize_for(col, v)?));
                }
                (ColumnKind::Clustering, Some(v)) => {
                    split.clustering[col.position] = Some((v, self.serialize_for(col, v)?));
                }
                (ColumnKind::Regular | ColumnKind::Static, _) if !allow_non_key => {
                    return Err(Error::InvalidInput(format!(
                        "column '{name}' is not part of the primary key"
                    )));
                }
                (kind, v) => {
                    let bytes = match v {
                        Some(v) => {
                            let bytes = self.serialize_for(col, v)?;
                            if bytes.len() as u64 > self.options.max_value_size_bytes {
                                return Err(Error::InvalidInput(format!(
                                    "value of column '{name}' is {} bytes; the table's max_value_size is {} bytes",
                                    bytes.len(),
                                    self.options.max_value_size_bytes
                                )));
                            }
                            Some(if col.ty.is_multi_cell() {
                                Checked::Elements(self.decode_for(col, &bytes)?)
                            } else {
                                Checked::Bytes(bytes)
                            })
                        }
                        None => None,
                    };
                    if kind == ColumnKind::Static {
                        split.statics.push((col, bytes));
                    } else {
                        split.regulars.push((col, bytes));
                    }
                }
            }
        }
        Ok(split)
    }

    /// Checks that `key` names only primary key columns.
    fn key_only<'a>(
        &self,
        key: &'a [(&'a str, Value)],
    ) -> Result<Vec<(&'a str, Option<&'a Value>)>> {
        key.iter()
            .map(|(n, v)| {
                if self.column(n)?.is_primary_key() {
                    Ok((*n, Some(v)))
                } else {
                    Err(Error::InvalidInput(format!(
                        "column '{n}' is not part of the primary key"
                    )))
                }
            })
            .collect()
    }

    fn partition_key_of(&self, split: &Split<'_>) -> Result<DecoratedKey> {
        let mut parts = Vec::with_capacity(split.partition.len());
        for (col, v) in self.partition_key_columns().zip(&split.partition) {
            match v {
                Some((_, bytes)) => parts.push((col, bytes.as_slice())),
                None => {
                    return Err(Error::InvalidInput(format!(
                        "missing partition key column '{}'",
                        col.name
                    )))
                }
            }
        }
        Ok(DecoratedKey::new(&self.compose_key(&parts)?))
    }

    /// The partition key and, if `need_clustering` or any clustering value is given,
    /// the full clustering (every missing component is an error).
    fn keys(
        &self,
        split: &Split<'_>,
        need_clustering: bool,
    ) -> Result<(DecoratedKey, Option<Vec<u8>>)> {
        let key = self.partition_key_of(split)?;
        if !need_clustering && split.clustering.iter().all(|c| c.is_none()) {
            return Ok((key, None));
        }
        // As `encode_clustering`, from the values `split` already checked.
        let mut parts = Vec::with_capacity(split.clustering.len());
        for (col, v) in self.clustering_columns().zip(&split.clustering) {
            match v {
                Some((v, bytes)) => {
                    check_clustering_size(col, bytes.len())?;
                    parts.push((*v, col.descending));
                }
                None => {
                    return Err(Error::InvalidInput(format!(
                        "missing clustering column '{}'",
                        col.name
                    )))
                }
            }
        }
        if parts.is_empty() {
            return Ok((key, Some(Vec::new())));
        }
        Ok((key, Some(types::encode_clustering(&parts))))
    }

    /// Resolves timestamp and TTL (see [`WriteOptions`]).
    fn write_time(
        &self,
        opts: &WriteOptions,
        now_micros: i64,
        ttl_allowed: bool,
    ) -> Result<WriteTime> {
        // Every write takes `now` for its local deletion and expiry times, an
        // explicit timestamp or not: none is stamped by a clock before 1970.
        crate::clock::check_writable_time(now_micros)?;
        let timestamp_micros = opts.timestamp_micros.unwrap_or(now_micros);
        if timestamp_micros == NO_TIMESTAMP {
            return Err(Error::InvalidInput(format!(
                "timestamp {timestamp_micros} is reserved (it means 'no timestamp')"
            )));
        }
        let ttl_seconds = match (opts.ttl_seconds, ttl_allowed) {
            (Some(_), false) => {
                return Err(Error::InvalidInput(
                    "a deletion cannot have a TTL".to_string(),
                ))
            }
            (Some(ttl), true) => ttl,
            (None, true) => self.options.default_time_to_live_seconds,
            (None, false) => 0,
        };
        if ttl_seconds > MAX_TTL_SECONDS {
            return Err(Error::InvalidInput(format!(
                "TTL of {ttl_seconds} seconds exceeds the maximum of {MAX_TTL_SECONDS} (20 years)"
            )));
        }
        Ok(WriteTime {
            timestamp_micros,
            ttl_seconds,
            now_seconds: now_micros.div_euclid(1_000_000),
            now_micros,
        })
    }
}

/// One element write of [`TableSchema::update_elements`].
pub struct ElementWrite<'a> {
    pub column: &'a str,
    /// The element's cell path (`crate::complex` contract 1), never empty.
    pub path: Vec<u8>,
    /// Serialized value; `None` deletes the element.
    pub value: Option<Vec<u8>>,
}

/// Key components and non-key values of one mutation, resolved against the schema.
struct Split<'a> {
    /// Key components by position: the value and its serialization, checked
    /// here once and used as is for the key. Serializing them again and
    /// cloning the values into temporary vectors to build the key was about a
    /// dozen small allocations per write (BENCHMARKS.md, "Write path (issue
    /// 15)").
    partition: Vec<Option<(&'a Value, Vec<u8>)>>,
    clustering: Vec<Option<(&'a Value, Vec<u8>)>>,
    /// Values checked against their columns; `None` is a deletion.
    regulars: Vec<(&'a ColumnDef, Option<Checked>)>,
    statics: Vec<(&'a ColumnDef, Option<Checked>)>,
}

/// A non-key value checked against its column: a simple column's
/// serialization (the cell's value), or a complex column's value as its
/// check decoded it (normalised), which its element cells are built from.
enum Checked {
    Bytes(Vec<u8>),
    Elements(Value),
}

impl Split<'_> {
    fn has_regular(&self) -> bool {
        !self.regulars.is_empty()
    }
}

/// Timestamp, TTL and local time of one write.
struct WriteTime {
    timestamp_micros: i64,
    ttl_seconds: u32,
    now_seconds: i64,
    /// The clock, for list cell paths (`complex` contract 4).
    now_micros: i64,
}

impl WriteTime {
    fn marker(&self) -> LivenessInfo {
        if self.ttl_seconds > 0 {
            LivenessInfo::expiring(self.timestamp_micros, self.ttl_seconds, self.now_seconds)
        } else {
            LivenessInfo::new(self.timestamp_micros)
        }
    }

    /// Takes the serialized value by value: the update owns the bytes the
    /// schema layer serialized, without a second copy (issue 13).
    fn cell(&self, col: &ColumnDef, value: Option<Vec<u8>>) -> Cell {
        // Only regular and static columns reach here, and they all have ids (invariant 2).
        let id = col.id.unwrap_or_default();
        match value {
            None => Cell::tombstone(id, self.timestamp_micros, self.now_seconds),
            Some(v) if self.ttl_seconds > 0 => Cell::expiring(
                id,
                self.timestamp_micros,
                self.ttl_seconds,
                self.now_seconds,
                v,
            ),
            Some(v) => Cell::live(id, self.timestamp_micros, v),
        }
    }

    fn deletion(&self) -> DeletionTime {
        DeletionTime::new(self.timestamp_micros, self.now_seconds)
    }

    /// An element cell of a complex column (`complex` contract 1); `None`
    /// deletes the element.
    fn element(&self, col: &ColumnDef, path: Vec<u8>, value: Option<Vec<u8>>) -> Cell {
        Cell {
            path: Some(path.into_boxed_slice()),
            ..self.cell(col, value)
        }
    }

    /// Puts a whole column value into `row`: one cell, or for a complex
    /// column the complex deletion plus its elements. A complex value
    /// replaces what was there (deletion at `timestamp - 1`, as Cassandra's
    /// collection setters); `None` deletes the column (at `timestamp`).
    fn put(&self, row: &mut Row, col: &ColumnDef, value: Option<Checked>) -> Result<()> {
        let id = col.id.unwrap_or_default();
        match value {
            Some(Checked::Bytes(bytes)) => row.add_cell(self.cell(col, Some(bytes))),
            None if !col.ty.is_multi_cell() => row.add_cell(self.cell(col, None)),
            None => row.add_cell(Cell::complex_deletion(
                id,
                self.timestamp_micros,
                self.now_seconds,
            )),
            Some(Checked::Elements(v)) => {
                row.add_cell(Cell::complex_deletion(
                    id,
                    self.timestamp_micros.saturating_sub(1),
                    self.now_seconds,
                ));
                for (path, value) in crate::complex::element_cells(&col.ty, &v, self.now_micros)? {
                    row.add_cell(self.element(col, path, Some(value)));
                }
            }
        }
        Ok(())
    }
}

fn cell_value(col: &ColumnDef, row: &Row, id: ColumnId) -> Result<Option<Value>> {
    if col.ty.is_multi_cell() {
        let bytes = crate::complex::assemble(&col.ty, crate::complex::paths_and_values(row, id))?;
        return bytes.map(|b| types::deserialize(&col.ty, &b)).transpose();
    }
    let found = row
        .cells
        .iter()
        .find(|c| c.column == id && c.path.is_none() && c.kind != CellKind::Tombstone);
    match found {
        Some(c) => Ok(Some(
            types::deserialize(
                &col.ty,
                &c.read_value().map_err(|e| {
                    Error::InvalidInput(format!("counter column '{}': {}", col.name, e.0))
                })?,
            )
            .map_err(|e| {
                Error::InvalidInput(format!("column '{}': {}", col.name, strip_prefix(&e)))
            })?,
        )),
        None => Ok(None),
    }
}

/// Cassandra's limit on one clustering component.
fn check_clustering_size(col: &ColumnDef, size: usize) -> Result<()> {
    if size > MAX_KEY_COMPONENT_BYTES {
        return Err(Error::InvalidInput(format!(
            "clustering column '{}' value is {size} bytes; the maximum is {MAX_KEY_COMPONENT_BYTES} (Cassandra's limit)",
            col.name
        )));
    }
    Ok(())
}

fn key_too_long(column: &str, len: usize) -> Error {
    Error::InvalidInput(format!(
        "partition key column {column} is {len} bytes; the maximum partition key size is {MAX_KEY_COMPONENT_BYTES} bytes (Cassandra's limit)"
    ))
}

use crate::error::strip_prefix;

/// Whether a column of type `ty` may be part of the primary key, with
/// Cassandra's messages: no non-frozen collection or UDT, no counter, no
/// duration anywhere inside.
fn check_key_type(name: &str, ty: &CqlType) -> Result<()> {
    let refuse = |m: String| Err(Error::InvalidInput(m));
    match ty {
        CqlType::Udt { def, frozen: false } => refuse(format!(
            "Invalid non-frozen user-defined type \"{}.{}\" for PRIMARY KEY column '{name}'",
            def.keyspace, def.name
        )),
        t if t.is_multi_cell() => refuse(format!(
            "Invalid non-frozen collection type {} for PRIMARY KEY column '{name}'",
            t.name()
        )),
        CqlType::Counter => refuse(format!(
            "counter type is not supported for PRIMARY KEY column '{name}'"
        )),
        t if t.references_duration() => refuse(format!(
            "duration type is not supported for PRIMARY KEY column '{name}'"
        )),
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// CREATE TABLE
// ---------------------------------------------------------------------------

impl TableSchema {
    /// Parses `CREATE TABLE ks.name (...) [WITH ...]`; the keyspace must be named.
    /// Supported: the scalar CQL types, `static`, inline `PRIMARY KEY`,
    /// `PRIMARY KEY ((a, b), c)` / `(a, c)` / `(a)`, `IF NOT EXISTS` (accepted here;
    /// [`CreateTableStatement`] reports it to the catalog's caller),
    /// `WITH CLUSTERING ORDER BY (...)` and the table options of [`TableOptions`].
    /// Unquoted names fold to lower case, as in CQL, so `k` and `K` are one column
    /// (defined twice is an error) while `"K"` is another.
    pub fn from_cql(text: &str) -> Result<TableSchema> {
        Self::from_cql_in(None, text)
    }

    /// As [`TableSchema::from_cql`], with a keyspace for unqualified table names (`USE ks`).
    pub fn from_cql_in(default_keyspace: Option<&str>, text: &str) -> Result<TableSchema> {
        Ok(CreateTableStatement::parse_in(default_keyspace, text)?.schema)
    }

    fn from_parsed(default_keyspace: Option<&str>, ct: &CreateTable) -> Result<TableSchema> {
        let keyspace = match (&ct.keyspace, default_keyspace) {
            (Some(ks), _) => ks.clone(),
            (None, Some(ks)) => ks.to_string(),
            (None, None) => {
                return Err(Error::InvalidInput(format!(
                    "CREATE TABLE: table name '{}' must be qualified with its keyspace (ks.{})",
                    ct.name, ct.name
                )))
            }
        };
        let fail = |pos: usize, msg: String| {
            Error::InvalidInput(format!("CREATE TABLE: {msg} (at byte {pos})"))
        };
        // Names are compared after folding, so `k` and `K` unquoted collide here.
        for (i, (name, _, _, _, pos)) in ct.columns.iter().enumerate() {
            if let Some(j) = ct.columns[..i].iter().position(|c| c.0 == *name) {
                let (first, again) = (&ct.spellings[j], &ct.spellings[i]);
                let msg = if first == again {
                    format!("column {} is defined twice", shown(name))
                } else {
                    format!(
                        "column {again} is the same column as {first} at byte {}: unquoted \
                         names ignore case (write \"{name}\" in double quotes to keep case)",
                        ct.columns[j].4
                    )
                };
                return Err(fail(*pos, msg));
            }
        }
        for (i, (name, pos)) in ct.partition_key.iter().chain(&ct.clustering).enumerate() {
            let mut earlier = ct.partition_key.iter().chain(&ct.clustering).take(i);
            if earlier.any(|(n, _)| n == name) {
                return Err(fail(
                    *pos,
                    format!("PRIMARY KEY names column {} twice", shown(name)),
                ));
            }
        }
        match ct.primary_key_clauses {
            1 => {}
            0 => {
                return Err(Error::InvalidInput(
                    "CREATE TABLE: no PRIMARY KEY given".to_string(),
                ))
            }
            _ => {
                return Err(Error::InvalidInput(
                    "CREATE TABLE: more than one PRIMARY KEY given".to_string(),
                ))
            }
        }
        let find = |name: &str, pos: usize| {
            ct.columns
                .iter()
                .find(|c| c.0 == name)
                .ok_or_else(|| fail(pos, format!("PRIMARY KEY names undefined column '{name}'")))
        };
        let mut builder = TableSchema::builder(&keyspace, &ct.name);
        for (name, pos) in &ct.partition_key {
            let col = find(name, *pos)?;
            if col.2 {
                return Err(fail(
                    col.4,
                    format!("partition key column '{name}' cannot be static"),
                ));
            }
            builder = builder.partition_key(name, col.1.clone());
        }
        let mut order = ct.order.iter().peekable();
        for (i, (name, pos)) in ct.clustering.iter().enumerate() {
            let col = find(name, *pos)?;
            if col.2 {
                return Err(fail(
                    col.4,
                    format!("clustering column '{name}' cannot be static"),
                ));
            }
            let dir = match order.peek() {
                Some((o_name, descending, _)) if o_name == name => {
                    let dir = if *descending { Order::Desc } else { Order::Asc };
                    order.next();
                    dir
                }
                Some((o_name, _, o_pos)) if !ct.clustering.iter().any(|(n, _)| n == o_name) => {
                    return Err(fail(*o_pos, format!("CLUSTERING ORDER BY names '{o_name}', which is not a clustering column")))
                }
                Some((o_name, _, o_pos)) => {
                    return Err(fail(
                        *o_pos,
                        format!("CLUSTERING ORDER BY must list clustering columns in order: expected '{name}' (clustering column {}), found '{o_name}'", i + 1),
                    ))
                }
                None => Order::Asc,
            };
            builder = builder.clustering(name, col.1.clone(), dir);
        }
        if let Some((o_name, _, o_pos)) = order.next() {
            return Err(fail(
                *o_pos,
                format!("CLUSTERING ORDER BY names '{o_name}', which is not a clustering column"),
            ));
        }
        for (name, ty, is_static, _, _) in &ct.columns {
            let is_key = ct
                .partition_key
                .iter()
                .chain(&ct.clustering)
                .any(|(n, _)| n == name);
            if is_key {
                continue;
            }
            builder = if *is_static {
                builder.static_column(name, ty.clone())
            } else {
                builder.column(name, ty.clone())
            };
        }
        // `ID = <uuid>`: the table's UUID, as Cassandra takes it.
        let mut settings = ct.settings.clone();
        if let Some(i) = settings.iter().position(|s| s.name == "id") {
            let s = settings.remove(i);
            let uuid = match &s.value {
                crate::cql::literal::Literal::Scalar(v) => TableUuid::parse(v),
                _ => None,
            }
            .ok_or_else(|| Error::option("id", "must be a UUID"))?;
            builder = builder.uuid(Some(uuid));
        }
        let options = TableOptions::default().apply_settings(&settings)?;
        builder.options(options).build()
    }

    /// The `CREATE TABLE` statement for this table, in Cassandra's DESCRIBE layout
    /// (invariant 6).
    /// `CREATE TYPE IF NOT EXISTS` for every user-defined type the table's
    /// columns use, nested ones first: what must exist before [`Self::to_cql`]
    /// runs elsewhere (a snapshot's `schema.cql`, as Cassandra writes it).
    pub fn types_cql(&self) -> String {
        let mut defs: Vec<Arc<crate::types::UdtDef>> = Vec::new();
        for c in &self.columns {
            for d in c.ty.udts() {
                if !defs
                    .iter()
                    .any(|x| x.keyspace == d.keyspace && x.name == d.name)
                {
                    defs.push(d);
                }
            }
        }
        crate::cql::ddl::types_in_creation_order(defs)
            .iter()
            .map(|d| format!("{}\n", crate::cql::ddl::create_type_cql(d, true)))
            .collect()
    }

    pub fn to_cql(&self) -> String {
        let mut s = format!(
            "CREATE TABLE {}.{} (\n",
            cql_name(&self.keyspace),
            cql_name(&self.name)
        );
        for c in &self.columns {
            let _ = writeln!(
                s,
                "    {} {}{},",
                cql_name(&c.name),
                c.ty.name(),
                if c.kind == ColumnKind::Static {
                    " static"
                } else {
                    ""
                }
            );
        }
        let pk: Vec<String> = self
            .partition_key_columns()
            .map(|c| cql_name(&c.name))
            .collect();
        let ck: Vec<String> = self
            .clustering_columns()
            .map(|c| cql_name(&c.name))
            .collect();
        let pk = if pk.len() == 1 {
            pk[0].clone()
        } else {
            format!("({})", pk.join(", "))
        };
        let key = std::iter::once(pk).chain(ck).collect::<Vec<_>>().join(", ");
        let _ = write!(s, "    PRIMARY KEY ({key})\n) WITH ");
        if self.ck_count() > 0 {
            let order: Vec<String> = self
                .clustering_columns()
                .map(|c| {
                    format!(
                        "{} {}",
                        cql_name(&c.name),
                        if c.descending { "DESC" } else { "ASC" }
                    )
                })
                .collect();
            let _ = write!(s, "CLUSTERING ORDER BY ({})\n    AND ", order.join(", "));
        }
        let _ = self.options.write_cql(&mut s, "\n    AND ");
        s.push(';');
        s
    }
}

/// A parsed `CREATE TABLE`: the table it defines and whether `IF NOT EXISTS` was
/// given. What an existing table means is the caller's decision (the database
/// returns the existing table unchanged when the flag is set, as Cassandra does
/// even when the definitions differ; without it, an existing table is an error).
#[derive(Clone, Debug, PartialEq)]
pub struct CreateTableStatement {
    pub schema: TableSchema,
    pub if_not_exists: bool,
}

impl CreateTableStatement {
    /// Parses and validates the statement; see [`TableSchema::from_cql`].
    pub fn parse(text: &str) -> Result<CreateTableStatement> {
        Self::parse_in(None, text)
    }

    /// As [`CreateTableStatement::parse`], with a keyspace for unqualified names.
    pub fn parse_in(default_keyspace: Option<&str>, text: &str) -> Result<CreateTableStatement> {
        Self::parse_with_types(default_keyspace, text, &crate::cql::ddl::no_udts)
    }

    /// As [`CreateTableStatement::parse_in`], with the user-defined types
    /// `udts` finds (a catalog's, [`Catalog::udt_lookup`]).
    pub fn parse_with_types(
        default_keyspace: Option<&str>,
        text: &str,
        udts: crate::cql::ddl::UdtLookup<'_>,
    ) -> Result<CreateTableStatement> {
        let ct = crate::cql::ddl::parse_create_table_with(text, default_keyspace, udts)?;
        Ok(CreateTableStatement {
            schema: TableSchema::from_parsed(default_keyspace, &ct)?,
            if_not_exists: ct.if_not_exists,
        })
    }
}

// ---------------------------------------------------------------------------
// Catalog
// ---------------------------------------------------------------------------

/// Version of the `schema.json` layout; bumped on any incompatible change.
///
/// 2: decimal clustering values are encoded by value (`1.5` and `1.50` are one
/// key). Data written under version 1 orders them as distinct keys, in sstables
/// and in commit-log records alike, so a version-1 catalog's tables with a
/// decimal clustering column are listed in [`Catalog::legacy_decimal_clustering`]
/// and refused at open (docs/FORMAT.md, "Decimal clustering keys"); the other
/// tables upgrade in place.
pub const CATALOG_FORMAT_VERSION: u32 = 2;

/// A keyspace: a namespace of tables.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Keyspace {
    pub name: String,
    pub tables: BTreeMap<String, TableSchema>,
    /// `replication = {...}` as given (class and its options). Strata keeps one
    /// replica whatever it says; it is stored so that `DESCRIBE`, drivers and
    /// an export to Cassandra see what the operator wrote. Catalogs written
    /// before it was kept read as SimpleStrategy with one replica.
    #[serde(default = "default_replication")]
    pub replication: BTreeMap<String, String>,
    /// `durable_writes`: stored, and true for every keyspace Strata writes
    /// (the commit log is per database, not per keyspace).
    #[serde(default = "default_durable_writes")]
    pub durable_writes: bool,
    /// User-defined types by name. A column of a UDT type carries the
    /// definition itself; ALTER TYPE rewrites both (see [`Catalog::alter_type`]).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub types: BTreeMap<String, Arc<UdtDef>>,
}

/// The replication a keyspace gets when none is given: SimpleStrategy, one
/// replica.
pub fn default_replication() -> BTreeMap<String, String> {
    BTreeMap::from([
        (
            "class".to_string(),
            "org.apache.cassandra.locator.SimpleStrategy".to_string(),
        ),
        ("replication_factor".to_string(), "1".to_string()),
    ])
}

fn default_durable_writes() -> bool {
    true
}

/// Every keyspace and table of a database. Persisted by the database layer as
/// `<data_dir>/schema.json` ([`Catalog::to_json`]), written atomically.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Catalog {
    pub format_version: u32,
    pub keyspaces: BTreeMap<String, Keyspace>,
    /// Next table id to assign; never decreases (invariant 5).
    pub next_table_id: u64,
    /// Tables (`ks.table`) created before decimal clustering keys compared by
    /// value: their data holds the old encoding, so they stay in the catalog (their
    /// files and commit-log records are kept) but are not opened.
    #[serde(default, skip_serializing_if = "std::collections::BTreeSet::is_empty")]
    pub legacy_decimal_clustering: std::collections::BTreeSet<String>,
}

impl Default for Catalog {
    fn default() -> Self {
        Catalog {
            format_version: CATALOG_FORMAT_VERSION,
            keyspaces: BTreeMap::new(),
            next_table_id: 1,
            legacy_decimal_clustering: Default::default(),
        }
    }
}

impl Catalog {
    pub fn new() -> Catalog {
        Catalog::default()
    }

    pub fn to_json(&self) -> Result<String> {
        serde_json::to_string_pretty(self)
            .map_err(|e| Error::InvalidInput(format!("cannot serialize schema: {e}")))
    }

    /// Parses and validates every table. Errors are `InvalidInput` with serde's line
    /// and column; the database layer, which knows the file, reports them as corruption.
    pub fn from_json(text: &str) -> Result<Catalog> {
        let mut catalog: Catalog = serde_json::from_str(text)
            .map_err(|e| Error::InvalidInput(format!("schema.json: {e}")))?;
        if catalog.format_version == 1 {
            // Upgrade: only tables with a decimal clustering column hold keys whose
            // encoding changed (see CATALOG_FORMAT_VERSION).
            for ks in catalog.keyspaces.values() {
                for t in ks.tables.values() {
                    if t.clustering_columns().any(|c| c.ty == CqlType::Decimal) {
                        catalog.legacy_decimal_clustering.insert(t.qualified_name());
                    }
                }
            }
            catalog.format_version = CATALOG_FORMAT_VERSION;
        }
        if catalog.format_version != CATALOG_FORMAT_VERSION {
            return Err(Error::InvalidInput(format!(
                "schema.json has format version {}; this build reads version {CATALOG_FORMAT_VERSION}",
                catalog.format_version
            )));
        }
        let mut uuids = std::collections::HashMap::new();
        for (ks_name, ks) in &catalog.keyspaces {
            if *ks_name != ks.name {
                return Err(Error::InvalidInput(format!(
                    "schema.json: keyspace '{}' stored under '{ks_name}'",
                    ks.name
                )));
            }
            for (t_name, t) in &ks.tables {
                if *t_name != t.name || t.keyspace != ks.name {
                    return Err(Error::InvalidInput(format!(
                        "schema.json: table {} stored under {ks_name}.{t_name}",
                        t.qualified_name()
                    )));
                }
                t.validate()?;
                if let Some(u) = t.uuid {
                    if let Some(other) = uuids.insert(u, t.qualified_name()) {
                        return Err(Error::InvalidInput(format!(
                            "schema.json: tables {other} and {} have the same UUID {u}",
                            t.qualified_name()
                        )));
                    }
                }
                if t.id >= catalog.next_table_id {
                    return Err(Error::InvalidInput(format!(
                        "schema.json: table {} has id {} but next_table_id is {}",
                        t.qualified_name(),
                        t.id,
                        catalog.next_table_id
                    )));
                }
            }
        }
        Ok(catalog)
    }

    pub fn keyspace(&self, name: &str) -> Result<&Keyspace> {
        self.keyspaces
            .get(name)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{name}'")))
    }

    /// Adds an empty keyspace. Refuses, besides a bad or existing name, the
    /// reserved names ([`RESERVED_KEYSPACE_NAMES`], `system_*`) and a name that
    /// differs only in case from an existing keyspace: their directories would be
    /// one directory on a case-insensitive file system.
    pub fn create_keyspace(&mut self, name: &str) -> Result<()> {
        check_name("keyspace", name)?;
        check_keyspace_not_reserved(name)?;
        if self.keyspaces.contains_key(name) {
            return Err(Error::AlreadyExists(format!("keyspace '{name}'")));
        }
        if let Some(other) = self.keyspaces.keys().find(|k| k.eq_ignore_ascii_case(name)) {
            return Err(Error::InvalidInput(format!(
                "keyspace '{name}' differs only in case from existing keyspace '{other}'; their \
                 directories would collide on a case-insensitive file system"
            )));
        }
        self.keyspaces.insert(
            name.to_string(),
            Keyspace {
                name: name.to_string(),
                tables: BTreeMap::new(),
                replication: default_replication(),
                durable_writes: true,
                types: BTreeMap::new(),
            },
        );
        Ok(())
    }

    /// Drops an empty keyspace (tables must be dropped first, so that the database
    /// layer gets to delete each table's files).
    pub fn drop_keyspace(&mut self, name: &str) -> Result<Keyspace> {
        let ks = self.keyspace(name)?;
        if let Some(t) = ks.tables.keys().next() {
            return Err(Error::InvalidInput(format!(
                "keyspace '{name}' still has table '{t}'; drop its tables first"
            )));
        }
        self.keyspaces
            .remove(name)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{name}'")))
    }

    /// Adds a table, assigning it a fresh id (invariant 5). An existing table of
    /// that name is `AlreadyExists` naming it; a name differing from an existing
    /// table's only in case is refused (one directory on a case-insensitive file
    /// system).
    pub fn create_table(&mut self, mut schema: TableSchema) -> Result<&TableSchema> {
        schema.validate_new()?;
        let qualified = schema.qualified_name();
        let ks = self
            .keyspaces
            .get_mut(&schema.keyspace)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{}'", schema.keyspace)))?;
        if ks.tables.contains_key(&schema.name) {
            return Err(Error::AlreadyExists(format!("table {qualified}")));
        }
        if let Some(other) = ks
            .tables
            .keys()
            .find(|t| t.eq_ignore_ascii_case(&schema.name))
        {
            return Err(Error::InvalidInput(format!(
                "table {qualified} differs only in case from existing table {}.{other}; their \
                 directories would collide on a case-insensitive file system",
                schema.keyspace
            )));
        }
        schema.uuid = Some(TableUuid::random()?);
        schema.id = self.next_table_id;
        self.next_table_id += 1;
        let name = schema.name.clone();
        Ok(ks.tables.entry(name).or_insert(schema))
    }

    /// Gives every table without a UUID (created before table UUIDs, or in a
    /// `schema.json` that lost it) the one `known` says its files name, else a
    /// new one; returns the tables it gave one, so that the caller persists
    /// the catalog (invariant 8: a UUID is given once and kept).
    pub fn assign_missing_uuids(
        &mut self,
        known: &dyn Fn(&TableSchema) -> Option<TableUuid>,
    ) -> Result<Vec<String>> {
        let mut given = Vec::new();
        for ks in self.keyspaces.values_mut() {
            for t in ks.tables.values_mut() {
                if t.uuid.is_none() {
                    t.uuid = Some(match known(t) {
                        Some(u) => u,
                        None => TableUuid::random()?,
                    });
                    given.push(t.qualified_name());
                }
            }
        }
        Ok(given)
    }

    pub fn table(&self, keyspace: &str, name: &str) -> Result<&TableSchema> {
        self.keyspace(keyspace)?
            .tables
            .get(name)
            .ok_or_else(|| Error::NotFound(format!("table {keyspace}.{name}")))
    }

    fn table_mut(&mut self, keyspace: &str, name: &str) -> Result<&mut TableSchema> {
        self.keyspaces
            .get_mut(keyspace)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{keyspace}'")))?
            .tables
            .get_mut(name)
            .ok_or_else(|| Error::NotFound(format!("table {keyspace}.{name}")))
    }

    /// `ALTER TABLE ks.t WITH <options_text>`; nothing changes on error.
    pub fn alter_table_options(
        &mut self,
        keyspace: &str,
        name: &str,
        options_text: &str,
    ) -> Result<&TableSchema> {
        let table = self.table_mut(keyspace, name)?;
        table.options = table.options.apply(options_text)?;
        Ok(table)
    }

    /// `ALTER TABLE ks.t WITH ...` from settings a statement parser already
    /// read.
    pub fn alter_table_settings(
        &mut self,
        keyspace: &str,
        name: &str,
        settings: &[crate::cql::ddl::Setting],
    ) -> Result<&TableSchema> {
        let table = self.table_mut(keyspace, name)?;
        table.options = table.options.apply_settings(settings)?;
        Ok(table)
    }

    /// `ALTER TABLE ks.t ADD name type [static]`.
    pub fn alter_table_add_column(
        &mut self,
        keyspace: &str,
        name: &str,
        column: &str,
        ty: CqlType,
        is_static: bool,
    ) -> Result<&TableSchema> {
        let table = self.table_mut(keyspace, name)?;
        *table = table.with_column_added(column, ty, is_static)?;
        Ok(table)
    }

    /// `ALTER TABLE ks.t DROP name`.
    pub fn alter_table_drop_column(
        &mut self,
        keyspace: &str,
        name: &str,
        column: &str,
    ) -> Result<&TableSchema> {
        let table = self.table_mut(keyspace, name)?;
        *table = table.with_column_dropped(column)?;
        Ok(table)
    }

    pub fn alter_table_rename_column(
        &mut self,
        keyspace: &str,
        name: &str,
        from: &str,
        to: &str,
    ) -> Result<&TableSchema> {
        let table = self.table_mut(keyspace, name)?;
        *table = table.with_column_renamed(from, to)?;
        Ok(table)
    }

    /// Sets a keyspace's `replication` and `durable_writes`.
    pub fn set_keyspace_params(
        &mut self,
        name: &str,
        replication: BTreeMap<String, String>,
        durable_writes: bool,
    ) -> Result<()> {
        let ks = self
            .keyspaces
            .get_mut(name)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{name}'")))?;
        ks.replication = replication;
        ks.durable_writes = durable_writes;
        Ok(())
    }

    /// Removes a table and returns its schema (the database layer deletes its files).
    pub fn drop_table(&mut self, keyspace: &str, name: &str) -> Result<TableSchema> {
        let dropped = self
            .keyspaces
            .get_mut(keyspace)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{keyspace}'")))?
            .tables
            .remove(name)
            .ok_or_else(|| Error::NotFound(format!("table {keyspace}.{name}")))?;
        self.legacy_decimal_clustering
            .remove(&dropped.qualified_name());
        Ok(dropped)
    }

    /// The user-defined type `keyspace.name`, if it exists.
    pub fn udt(&self, keyspace: &str, name: &str) -> Option<Arc<UdtDef>> {
        self.keyspaces.get(keyspace)?.types.get(name).cloned()
    }

    /// A lookup of this catalog's user-defined types, for type resolution.
    pub fn udt_lookup(&self) -> impl Fn(&str, &str) -> Option<Arc<UdtDef>> + '_ {
        move |ks, name| self.udt(ks, name)
    }

    /// Creates a user-defined type (CREATE TYPE), with Cassandra's checks.
    pub fn create_type(
        &mut self,
        keyspace: &str,
        name: &str,
        fields: Vec<(String, CqlType)>,
    ) -> Result<()> {
        let ks = self
            .keyspaces
            .get_mut(keyspace)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{keyspace}'")))?;
        if ks.types.contains_key(name) {
            return Err(Error::AlreadyExists(format!(
                "A user type with name '{name}' already exists"
            )));
        }
        check_name("type", name)?;
        for (i, (f, t)) in fields.iter().enumerate() {
            if fields[..i].iter().any(|(g, _)| g == f) {
                return Err(Error::InvalidInput(format!(
                    "Duplicate field name {f} in type {name}"
                )));
            }
            if t.any(&|t| *t == CqlType::Counter) {
                return Err(Error::InvalidInput(
                    "A user type cannot contain counters".to_string(),
                ));
            }
        }
        if fields.is_empty() {
            return Err(Error::InvalidInput(format!(
                "A user type must have at least one field: {name}"
            )));
        }
        ks.types.insert(
            name.to_string(),
            Arc::new(UdtDef {
                keyspace: keyspace.to_string(),
                name: name.to_string(),
                fields,
            }),
        );
        Ok(())
    }

    /// Replaces a user-defined type's definition (ALTER TYPE ADD or RENAME,
    /// built by the caller from [`Catalog::udt`]) everywhere it is used: the
    /// keyspace's types, other types nesting it, and every column whose type
    /// contains it. Stored values stay readable: a value written before a
    /// field was added reads that field as null (trailing fields may be
    /// absent), and names are not part of the bytes.
    pub fn alter_type(&mut self, new: UdtDef) -> Result<()> {
        let new = Arc::new(new);
        let ks = self
            .keyspaces
            .get_mut(&new.keyspace)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{}'", new.keyspace)))?;
        if !ks.types.contains_key(&new.name) {
            return Err(Error::NotFound(format!(
                "type {}.{}",
                new.keyspace, new.name
            )));
        }
        for t in ks.types.values_mut() {
            *t = udt_with_udt(t, &new);
        }
        ks.types.insert(new.name.clone(), new.clone());
        for table in ks.tables.values_mut() {
            for c in &mut table.columns {
                c.ty = with_udt(&c.ty, &new);
            }
        }
        Ok(())
    }

    /// Drops a user-defined type no table or other type uses (DROP TYPE).
    pub fn drop_type(&mut self, keyspace: &str, name: &str) -> Result<()> {
        let ks = self
            .keyspaces
            .get(keyspace)
            .ok_or_else(|| Error::NotFound(format!("keyspace '{keyspace}'")))?;
        if !ks.types.contains_key(name) {
            return Err(Error::NotFound(format!("type {keyspace}.{name}")));
        }
        let uses = |t: &CqlType| {
            t.any(&|t| matches!(t, CqlType::Udt { def, .. } if def.keyspace == keyspace && def.name == name))
        };
        // In creation order, as Cassandra lists them.
        let mut using: Vec<&TableSchema> = ks
            .tables
            .values()
            .filter(|t| t.columns.iter().any(|c| uses(&c.ty)))
            .collect();
        using.sort_by_key(|t| t.id);
        let tables: Vec<&str> = using.iter().map(|t| t.name.as_str()).collect();
        if !tables.is_empty() {
            return Err(Error::InvalidInput(format!(
                "Cannot drop user type '{keyspace}.{name}' as it is still used by tables {}",
                tables.join(", ")
            )));
        }
        let types: Vec<&str> = ks
            .types
            .values()
            .filter(|t| t.name != name && t.fields.iter().any(|(_, ft)| uses(ft)))
            .map(|t| t.name.as_str())
            .collect();
        if !types.is_empty() {
            return Err(Error::InvalidInput(format!(
                "Cannot drop user type '{keyspace}.{name}' as it is still used by user types {}",
                types.join(", ")
            )));
        }
        if let Some(ks) = self.keyspaces.get_mut(keyspace) {
            ks.types.remove(name);
        }
        Ok(())
    }

    /// Why a table listed in [`Catalog::legacy_decimal_clustering`] is not opened.
    pub fn legacy_decimal_reason(qualified_name: &str) -> String {
        format!(
            "table {qualified_name} was created before decimal clustering values compared \
             by value: its sstables and commit-log records order 1.5 and 1.50 as two keys, \
             which this build would read as one; it is kept untouched and not opened \
             (docs/FORMAT.md, \"Decimal clustering keys\")"
        )
    }
}

/// `ty` with every occurrence of the user-defined type `new` (same keyspace
/// and name) replaced by `new`'s definition.
/// A user-defined type whose fields' types have `new` in place of the type
/// of the same keyspace and name.
fn udt_with_udt(def: &UdtDef, new: &Arc<UdtDef>) -> Arc<UdtDef> {
    Arc::new(UdtDef {
        keyspace: def.keyspace.clone(),
        name: def.name.clone(),
        fields: def
            .fields
            .iter()
            .map(|(n, t)| (n.clone(), with_udt(t, new)))
            .collect(),
    })
}

fn with_udt(ty: &CqlType, new: &Arc<UdtDef>) -> CqlType {
    match ty {
        CqlType::Udt { def, frozen } => CqlType::Udt {
            def: if def.keyspace == new.keyspace && def.name == new.name {
                new.clone()
            } else {
                udt_with_udt(def, new)
            },
            frozen: *frozen,
        },
        CqlType::List { element, frozen } => CqlType::List {
            element: Arc::new(with_udt(element, new)),
            frozen: *frozen,
        },
        CqlType::Set { element, frozen } => CqlType::Set {
            element: Arc::new(with_udt(element, new)),
            frozen: *frozen,
        },
        CqlType::Map { key, value, frozen } => CqlType::Map {
            key: Arc::new(with_udt(key, new)),
            value: Arc::new(with_udt(value, new)),
            frozen: *frozen,
        },
        CqlType::Tuple(items) => {
            CqlType::Tuple(Arc::new(items.iter().map(|t| with_udt(t, new)).collect()))
        }
        CqlType::Vector { element, dimension } => CqlType::Vector {
            element: Arc::new(with_udt(element, new)),
            dimension: *dimension,
        },
        native => native.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::data::NO_DELETION_TIME;

    const NOW_MICROS: i64 = 1_700_000_000_123_456;
    const NOW_SECONDS: i64 = 1_700_000_000;

    /// `events(id bigint, ts timestamp DESC, s text static, v text, n int)`.
    fn events() -> TableSchema {
        TableSchema::builder("ks", "events")
            .partition_key("id", CqlType::BigInt)
            .clustering("ts", CqlType::Timestamp, Order::Desc)
            .static_column("s", CqlType::Text)
            .column("v", CqlType::Text)
            .column("n", CqlType::Int)
            .build()
            .expect("valid schema")
    }

    fn kv() -> TableSchema {
        TableSchema::builder("ks", "kv")
            .partition_key("k", CqlType::Text)
            .column("v", CqlType::Blob)
            .build()
            .expect("kv")
    }

    fn text(s: &str) -> Value {
        Value::Text(s.to_string())
    }

    fn input_error(r: Result<PartitionUpdate>) -> String {
        match r {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("expected InvalidInput, got {other:?}"),
        }
    }

    #[test]
    fn builder_orders_and_numbers_columns() {
        let t = TableSchema::builder("ks", "t")
            .column("a", CqlType::Int)
            .clustering("c2", CqlType::Int, Order::Asc)
            .partition_key("p1", CqlType::Int)
            .static_column("s", CqlType::Int)
            .clustering("c1", CqlType::Text, Order::Desc)
            .partition_key("p2", CqlType::Text)
            .column("b", CqlType::Int)
            .build()
            .expect("valid");
        let names: Vec<&str> = t.columns.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, ["p1", "p2", "c2", "c1", "a", "s", "b"]);
        let ids: Vec<Option<ColumnId>> = t.columns.iter().map(|c| c.id).collect();
        assert_eq!(ids, [None, None, None, None, Some(0), Some(1), Some(2)]);
        assert_eq!(t.column("c1").expect("c1").position, 1);
        assert!(t.column("c1").expect("c1").descending);
        assert_eq!(
            t.column("b").expect("b").position,
            1,
            "second regular column"
        );
        assert_eq!(t.column("s").expect("s").position, 0, "first static column");
        assert_eq!(t.column_by_id(1).map(|c| c.name.as_str()), Some("s"));
        assert!(t.column_by_id(3).is_none());
        assert_eq!(t.partition_key_columns().count(), 2);
        assert_eq!(t.clustering_columns().count(), 2);
        assert_eq!(t.regular_columns().count(), 2);
        assert!(matches!(t.column("zz"), Err(Error::NotFound(_))));
    }

    #[test]
    fn builder_rejects_bad_schemas() {
        let b = || TableSchema::builder("ks", "t");
        let bad = [
            b().column("v", CqlType::Int).build(),
            b().partition_key("k", CqlType::Int)
                .column("k", CqlType::Int)
                .build(),
            b().partition_key("1k", CqlType::Int).build(),
            b().partition_key("k-k", CqlType::Int).build(),
            b().partition_key("k", CqlType::Int)
                .static_column("s", CqlType::Int)
                .build(),
            TableSchema::builder("ks", "a_very_long_table_name_that_is_longer_than_48_chars")
                .partition_key("k", CqlType::Int)
                .build(),
            TableSchema::builder("k s", "t")
                .partition_key("k", CqlType::Int)
                .build(),
        ];
        for r in bad {
            assert!(matches!(r, Err(Error::InvalidInput(_))), "{r:?}");
        }
        let mut many = b().partition_key("k", CqlType::Int);
        for i in 0..MAX_COLUMNS {
            many = many.column(&format!("c{i}"), CqlType::Int);
        }
        assert!(matches!(many.build(), Err(Error::InvalidInput(m)) if m.contains("65535")));
    }

    #[test]
    fn parses_create_table_with_composite_key_and_desc() {
        let t = TableSchema::from_cql(
            "CREATE TABLE IF NOT EXISTS Ks.t (a int, b text, c timestamp, d uuid, s text STATIC, v blob, \
             PRIMARY KEY ((a, b), c, d)) WITH CLUSTERING ORDER BY (c DESC, d ASC) \
             AND compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 4} AND gc_grace_seconds = 60;",
        )
        .expect("parses");
        assert_eq!((t.keyspace.as_str(), t.name.as_str()), ("ks", "t"));
        let pk: Vec<&str> = t.partition_key_columns().map(|c| c.name.as_str()).collect();
        assert_eq!(pk, ["a", "b"]);
        let ck: Vec<(&str, bool)> = t
            .clustering_columns()
            .map(|c| (c.name.as_str(), c.descending))
            .collect();
        assert_eq!(ck, [("c", true), ("d", false)]);
        assert_eq!(t.column("s").expect("s").kind, ColumnKind::Static);
        assert_eq!(t.column("v").expect("v").id, Some(1));
        assert_eq!(t.options.compaction.lcs().fanout_size, 4);
        assert_eq!(t.options.gc_grace_seconds, 60);

        let inline =
            TableSchema::from_cql("create table ks.kv (k text PRIMARY KEY, \"Value\" varchar)")
                .expect("inline");
        assert_eq!(inline.partition_key_columns().count(), 1);
        assert_eq!(inline.clustering_columns().count(), 0);
        assert_eq!(
            inline.column("Value").expect("quoted keeps case").ty,
            CqlType::Text
        );

        let single = TableSchema::from_cql("CREATE TABLE ks.t (id bigint, ts timestamp, v text, PRIMARY KEY ((id), ts)) WITH CLUSTERING ORDER BY (ts DESC)")
            .expect("brief example");
        assert!(single.column("ts").expect("ts").descending);
        let plain =
            TableSchema::from_cql("CREATE TABLE ks.t (id bigint, v text, PRIMARY KEY (id))")
                .expect("(a)");
        assert_eq!(plain.partition_key_columns().count(), 1);
        let used = TableSchema::from_cql_in(Some("ks"), "CREATE TABLE t (id int PRIMARY KEY)")
            .expect("USE ks");
        assert_eq!(used.keyspace, "ks");
    }

    #[test]
    fn create_table_errors_are_clear() {
        let cases: &[(&str, &str)] = &[
            ("CREATE TABLE t (id int PRIMARY KEY)", "qualified"),
            ("CREATE TABLE ks.t (id int)", "no PRIMARY KEY"),
            ("CREATE TABLE ks.t (id int PRIMARY KEY, v int, PRIMARY KEY (v))", "Multiple PRIMARY KEY"),
            ("CREATE TABLE ks.t (id int, PRIMARY KEY (nope))", "undefined column 'nope'"),
            ("CREATE TABLE ks.t (id int, v counter, w int, PRIMARY KEY (id))", "Cannot mix counter and non counter columns"),
            ("CREATE TABLE ks.t (id int, v counter, PRIMARY KEY (id)) WITH default_time_to_live = 5", "default_time_to_live"),
            ("CREATE TABLE ks.t (id int, v strang, PRIMARY KEY (id))", "Unknown type ks.strang"),
            ("CREATE TABLE ks.t (id int, c int, PRIMARY KEY (id, c)) WITH CLUSTERING ORDER BY (id DESC)", "not a clustering column"),
            ("CREATE TABLE ks.t (id int, c int, d int, PRIMARY KEY (id, c, d)) WITH CLUSTERING ORDER BY (d DESC)", "in order"),
            ("CREATE TABLE ks.t (id int static, c int, PRIMARY KEY (id, c))", "cannot be static"),
            ("CREATE TABLE ks.t (id int PRIMARY KEY, s int static)", "static"),
        ];
        for (cql, needle) in cases {
            match TableSchema::from_cql(cql) {
                Err(Error::InvalidInput(m)) => assert!(m.contains(needle), "{cql}: {m}"),
                other => panic!("{cql}: expected InvalidInput, got {other:?}"),
            }
        }
        // Syntax errors are the structured CQL error, with their byte position.
        let syntax: &[(&str, &str, usize)] = &[
            (
                "CREATE TABLE ks.t (id int PRIMARY KEY v int)",
                "syntax error at byte 38",
                38,
            ),
            (
                "CREATE TABLE ks.t (id int PRIMARY KEY) extra",
                "expected end of statement",
                39,
            ),
        ];
        for (cql, needle, pos) in syntax {
            match TableSchema::from_cql(cql) {
                Err(Error::Cql(e)) => {
                    assert!(e.message.contains(needle), "{cql}: {e}");
                    assert_eq!(e.kind, crate::cql::CqlErrorKind::SyntaxError, "{cql}");
                    assert_eq!(e.position, Some(*pos), "{cql}");
                }
                other => panic!("{cql}: expected a CQL syntax error, got {other:?}"),
            }
        }
        let e = TableSchema::from_cql("CREATE TABLE ks.t (id int PRIMARY KEY) WITH gc_grace = 1")
            .expect_err("option");
        assert!(
            matches!(e, Error::InvalidOption { ref option, .. } if option == "gc_grace"),
            "{e:?}"
        );
    }

    #[test]
    fn create_table_refuses_duplicate_and_case_variant_columns() {
        let err = |cql: &str| match TableSchema::from_cql(cql) {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("{cql}: expected InvalidInput, got {other:?}"),
        };
        let m = err("CREATE TABLE ks.t (k int PRIMARY KEY, k text)");
        assert!(m.contains("column 'k' is defined twice"), "{m}");
        assert!(!m.contains('\n'), "one line: {m}");
        let m = err("CREATE TABLE ks.t (k int PRIMARY KEY, K text)");
        assert!(
            m.contains("K is the same column as k at byte 19") && m.contains("ignore case"),
            "{m}"
        );
        let m = err("CREATE TABLE ks.t (Val int, k int PRIMARY KEY, vAL text)");
        assert!(m.contains("vAL is the same column as Val"), "{m}");
        // A quoted lower-case name is the unquoted one.
        let m = err("CREATE TABLE ks.t (k int PRIMARY KEY, \"k\" text)");
        assert!(m.contains("\"k\" is the same column as k"), "{m}");
        let m = err("CREATE TABLE ks.t (k int, c int, PRIMARY KEY (k, c, C))");
        assert!(m.contains("PRIMARY KEY names column 'c' twice"), "{m}");
        let m = err("CREATE TABLE ks.t (k int, PRIMARY KEY ((k, k)))");
        assert!(m.contains("twice"), "{m}");
        // Quoted names keep their case: "K" and k are two columns, as in CQL.
        let t = TableSchema::from_cql("CREATE TABLE ks.t (k int PRIMARY KEY, \"K\" text)")
            .expect("quoted K differs from k");
        assert_eq!(t.column("K").expect("K").ty, CqlType::Text);
        assert_eq!(t.column("k").expect("k").ty, CqlType::Int);
        assert_eq!(TableSchema::from_cql(&t.to_cql()).expect("round trip"), t);
    }

    #[test]
    fn create_table_refuses_bad_names_with_one_line_errors() {
        let err = |cql: &str| match TableSchema::from_cql(cql) {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("{cql}: expected InvalidInput, got {other:?}"),
        };
        let long = "c".repeat(100_000);
        let m = err(&format!(
            "CREATE TABLE ks.t (k int PRIMARY KEY, {long} text)"
        ));
        assert!(
            m.contains("too long") && m.contains("100000 characters") && m.len() < 300,
            "{m}"
        );
        let at_limit = "c".repeat(MAX_COLUMN_NAME_LENGTH);
        assert!(TableSchema::from_cql(&format!(
            "CREATE TABLE ks.t (k int PRIMARY KEY, {at_limit} text)"
        ))
        .is_ok());
        let over = "c".repeat(MAX_COLUMN_NAME_LENGTH + 1);
        assert!(err(&format!(
            "CREATE TABLE ks.t (k int PRIMARY KEY, {over} text)"
        ))
        .contains("at most 128"));
        // Keyspace and table names: [A-Za-z0-9_]{1,48}.
        let name49 = "t".repeat(49);
        for (cql, needle) in [
            (
                format!("CREATE TABLE ks.{name49} (k int PRIMARY KEY)"),
                "invalid table name",
            ),
            (
                format!("CREATE TABLE {name49}.t (k int PRIMARY KEY)"),
                "invalid keyspace name",
            ),
            (
                "CREATE TABLE \"k s\".t (k int PRIMARY KEY)".to_string(),
                "invalid keyspace name",
            ),
            (
                "CREATE TABLE ks.\"a.b\" (k int PRIMARY KEY)".to_string(),
                "invalid table name",
            ),
            (
                "CREATE TABLE ks.\"../x\" (k int PRIMARY KEY)".to_string(),
                "invalid table name",
            ),
            (
                "CREATE TABLE ks.\"\" (k int PRIMARY KEY)".to_string(),
                "invalid table name",
            ),
            (
                "CREATE TABLE ks.\"tête\" (k int PRIMARY KEY)".to_string(),
                "invalid table name",
            ),
        ] {
            let m = err(&cql);
            assert!(
                m.contains(needle) && m.contains("letters, digits or '_'"),
                "{cql}: {m}"
            );
        }
        let m = err(&format!(
            "CREATE TABLE ks.\"{}\" (k int PRIMARY KEY)",
            "x".repeat(100_000)
        ));
        assert!(m.len() < 300, "{m}");
        // Cassandra's \w+ allows a leading digit or '_' (quoted, for a digit).
        for cql in [
            format!("CREATE TABLE ks.{} (k int PRIMARY KEY)", "t".repeat(48)),
            // Unquoted, a leading '_' is a syntax error, as in Cassandra's lexer.
            "CREATE TABLE \"1ks\".\"_t\" (k int PRIMARY KEY)".to_string(),
        ] {
            let t = TableSchema::from_cql(&cql).expect(&cql);
            assert_eq!(TableSchema::from_cql(&t.to_cql()).expect("round trip"), t);
        }
    }

    #[test]
    fn create_table_statement_reports_if_not_exists() {
        let s = CreateTableStatement::parse("CREATE TABLE IF NOT EXISTS ks.t (k int PRIMARY KEY)")
            .expect("parse");
        assert!(s.if_not_exists);
        assert_eq!(s.schema.qualified_name(), "ks.t");
        let s =
            CreateTableStatement::parse("create table ks.t (k int primary key)").expect("parse");
        assert!(!s.if_not_exists);
        assert!(
            CreateTableStatement::parse("CREATE TABLE IF EXISTS ks.t (k int PRIMARY KEY)").is_err()
        );
    }

    #[test]
    fn catalog_refuses_reserved_and_case_colliding_names() {
        let mut c = Catalog::new();
        for name in [
            "system",
            "SYSTEM",
            "system_auth",
            "System_Schema",
            "commitlog",
            "Commitlog",
            "quarantine",
            "snapshots",
            "LOCK",
            "lock",
            "logs",
            "Logs",
        ] {
            match c.create_keyspace(name) {
                Err(Error::InvalidInput(m)) => assert!(m.contains("reserved"), "{name}: {m}"),
                other => panic!("{name}: {other:?}"),
            }
        }
        assert!(c.keyspaces.is_empty(), "nothing created");
        // Near misses are ordinary names.
        for name in ["systems", "system2", "my_system", "commitlogs", "locks"] {
            c.create_keyspace(name).expect(name);
        }
        c.create_keyspace("ks").expect("ks");
        let m = match c.create_keyspace("Ks") {
            Err(Error::InvalidInput(m)) => m,
            other => panic!("{other:?}"),
        };
        assert!(
            m.contains("differs only in case") && m.contains("'ks'"),
            "{m}"
        );
        c.create_table(kv()).expect("kv");
        let before = c.clone();
        let upper = TableSchema::builder("ks", "KV")
            .partition_key("k", CqlType::Text)
            .build()
            .expect("builds");
        assert!(
            matches!(c.create_table(upper), Err(Error::InvalidInput(m)) if m.contains("differs only in case"))
        );
        let m = match c.create_table(kv()) {
            Err(Error::AlreadyExists(m)) => m,
            other => panic!("{other:?}"),
        };
        assert_eq!(m, "table ks.kv");
        assert_eq!(c, before, "refusals change nothing");
        // Over-long column names are refused for new columns only.
        let long = "c".repeat(MAX_COLUMN_NAME_LENGTH + 1);
        assert!(c
            .alter_table_add_column("ks", "kv", &long, CqlType::Int, false)
            .is_err());
        assert_eq!(c, before);
    }

    #[test]
    fn a_stored_over_long_column_name_still_loads() {
        // The 128-character limit applies to new columns; a catalog written before
        // it must still open.
        let mut c = Catalog::new();
        c.create_keyspace("ks").expect("ks");
        c.create_table(kv()).expect("kv");
        let long = "c".repeat(MAX_COLUMN_NAME_LENGTH + 1);
        let json = c
            .to_json()
            .expect("json")
            .replace("\"name\": \"v\"", &format!("\"name\": \"{long}\""));
        assert!(json.contains(&long));
        let back = Catalog::from_json(&json).expect("loads");
        assert!(back.table("ks", "kv").expect("kv").column(&long).is_ok());
    }

    #[test]
    fn to_cql_round_trips() {
        let mut schemas = vec![events(), kv()];
        schemas.push(
            TableSchema::from_cql(
                "CREATE TABLE ks.t (a int, b text, c timestamp, \"Mixed\" double, \"order\" int, s text static, \
                 PRIMARY KEY ((a, b), c, \"Mixed\")) WITH CLUSTERING ORDER BY (c DESC) \
                 AND compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS'} \
                 AND compression = {'class': 'ZstdCompressor', 'compression_level': 1} AND memtable_flush_threshold_kb = 128",
            )
            .expect("parses"),
        );
        for s in schemas {
            let cql = s.to_cql();
            let back = TableSchema::from_cql(&cql).unwrap_or_else(|e| panic!("{cql}\n{e}"));
            assert_eq!(back, s, "{cql}");
        }
        let cql = events().to_cql();
        assert!(
            cql.starts_with(
                "CREATE TABLE ks.events (\n    id bigint,\n    ts timestamp,\n    s text static,"
            ),
            "{cql}"
        );
        assert!(
            cql.contains(
                "PRIMARY KEY (id, ts)\n) WITH CLUSTERING ORDER BY (ts DESC)\n    AND compaction = "
            ),
            "{cql}"
        );
    }

    #[test]
    fn partition_keys_serialize_like_cassandra() {
        let t = events();
        assert_eq!(
            t.serialize_partition_key(&[Value::BigInt(1)])
                .expect("single"),
            1i64.to_be_bytes()
        );
        let c = TableSchema::builder("ks", "c")
            .partition_key("a", CqlType::Int)
            .partition_key("b", CqlType::Text)
            .build()
            .expect("composite");
        let key = c
            .serialize_partition_key(&[Value::Int(7), text("xy")])
            .expect("composite");
        assert_eq!(key, [0, 4, 0, 0, 0, 7, 0, 0, 2, b'x', b'y', 0]);
        assert_eq!(
            c.decode_partition_key(&key).expect("decode"),
            vec![Value::Int(7), text("xy")]
        );
        assert_eq!(
            c.decorated_key(&[Value::Int(7), text("xy")])
                .expect("dk")
                .token,
            crate::token::token_of(&key)
        );
        assert!(c.decode_partition_key(&key[..key.len() - 1]).is_err());
        assert!(
            c.serialize_partition_key(&[Value::Int(7)]).is_err(),
            "missing component"
        );
        assert!(
            c.serialize_partition_key(&[text("7"), text("xy")]).is_err(),
            "wrong type"
        );
        assert!(
            kv().serialize_partition_key(&[text("")]).is_err(),
            "empty key"
        );
        // The one-column shortcut refuses what the general path refuses.
        assert!(
            t.serialize_partition_key(&[Value::BigInt(1), Value::BigInt(2)])
                .is_err(),
            "two values for one key column"
        );
        assert!(t.serialize_partition_key(&[]).is_err(), "no value");
        assert!(
            t.serialize_partition_key(&[Value::Int(1)]).is_err(),
            "wrong type"
        );
        let long = kv()
            .serialize_partition_key(&[text(&"x".repeat(MAX_KEY_COMPONENT_BYTES + 1))])
            .expect_err("too long");
        assert!(long.to_string().contains("is 65536 bytes"), "{long}");
    }

    #[test]
    fn oversized_keys_are_rejected() {
        let t = kv();
        let ok = "k".repeat(MAX_KEY_COMPONENT_BYTES);
        assert!(t.serialize_partition_key(&[text(&ok)]).is_ok());
        let big = "k".repeat(MAX_KEY_COMPONENT_BYTES + 1);
        let e = t
            .serialize_partition_key(&[text(&big)])
            .expect_err("too big");
        assert!(e.to_string().contains("65535"), "{e}");
        let e = input_error(t.insert(
            &[("k", text(&big)), ("v", Value::Blob(vec![1]))],
            &WriteOptions::default(),
            0,
        ));
        assert!(e.contains("65535"), "{e}");
        // A composite key whose parts fit but whose whole does not.
        let c = TableSchema::builder("ks", "c")
            .partition_key("a", CqlType::Text)
            .partition_key("b", CqlType::Text)
            .build()
            .expect("composite");
        let half = "x".repeat(40_000);
        assert!(c
            .serialize_partition_key(&[text(&half), text(&half)])
            .is_err());
        let ck = TableSchema::builder("ks", "ck")
            .partition_key("k", CqlType::Int)
            .clustering("c", CqlType::Blob, Order::Asc)
            .build()
            .expect("ck");
        assert!(ck
            .encode_clustering(&[Value::Blob(vec![0; MAX_KEY_COMPONENT_BYTES + 1])])
            .is_err());
        assert!(ck.encode_clustering(&[Value::Blob(vec![0; 100])]).is_ok());
        // The same limits through `insert`, which builds both keys from the
        // bytes `split` serialized once, and gives the same keys as the
        // public encoders.
        let opts = WriteOptions::default();
        let e = input_error(c.insert(&[("a", text(&half)), ("b", text(&half))], &opts, 0));
        assert!(e.contains("65535"), "{e}");
        let huge = Value::Blob(vec![0; MAX_KEY_COMPONENT_BYTES + 1]);
        let e = input_error(ck.insert(&[("k", Value::Int(1)), ("c", huge)], &opts, 0));
        assert!(e.contains("clustering column 'c'"), "{e}");
        let u = ck
            .insert(
                &[("k", Value::Int(1)), ("c", Value::Blob(vec![7; 3]))],
                &opts,
                0,
            )
            .expect("fits");
        assert_eq!(u.key, ck.decorated_key(&[Value::Int(1)]).expect("key"));
        assert_eq!(
            u.rows[0].clustering,
            ck.encode_clustering(&[Value::Blob(vec![7; 3])])
                .expect("clustering")
        );
        let e = input_error(ck.insert(&[("k", Value::Int(1))], &opts, 0));
        assert!(e.contains("missing clustering column 'c'"), "{e}");
    }

    #[test]
    fn clustering_encoding_respects_desc_and_prefixes() {
        let t = events();
        let a = t.encode_clustering(&[Value::Timestamp(1)]).expect("a");
        let b = t.encode_clustering(&[Value::Timestamp(2)]).expect("b");
        assert!(b < a, "DESC: later timestamps sort first");
        assert_eq!(
            t.decode_clustering(&a).expect("decode"),
            vec![Value::Timestamp(1)]
        );
        assert!(
            t.encode_clustering(&[]).is_err(),
            "full clustering needs every column"
        );
        assert_eq!(
            t.encode_clustering_prefix(&[]).expect("empty prefix"),
            Vec::<u8>::new()
        );
        assert!(t
            .encode_clustering_prefix(&[Value::Timestamp(1), Value::Timestamp(2)])
            .is_err());
        assert!(
            t.encode_clustering(&[Value::BigInt(1)]).is_err(),
            "bigint is not timestamp"
        );
        assert_eq!(
            kv().encode_clustering(&[]).expect("no clustering"),
            Vec::<u8>::new()
        );
    }

    #[test]
    fn insert_writes_marker_and_cells() {
        let t = events();
        let u = t
            .insert(
                &[
                    ("id", Value::BigInt(1)),
                    ("ts", Value::Timestamp(5)),
                    ("v", text("x")),
                    ("s", text("st")),
                ],
                &WriteOptions::default(),
                NOW_MICROS,
            )
            .expect("insert");
        assert_eq!(u.key, t.decorated_key(&[Value::BigInt(1)]).expect("dk"));
        assert_eq!(u.rows.len(), 1);
        let row = &u.rows[0];
        assert_eq!(
            row.clustering,
            t.encode_clustering(&[Value::Timestamp(5)]).expect("ck")
        );
        assert_eq!(row.liveness, LivenessInfo::new(NOW_MICROS));
        assert_eq!(row.cells, vec![Cell::live(1, NOW_MICROS, b"x".to_vec())]);
        let st = u.static_row.as_ref().expect("static row");
        assert!(st.liveness.is_empty(), "marker lives on the clustering row");
        assert_eq!(st.cells, vec![Cell::live(0, NOW_MICROS, b"st".to_vec())]);
        assert!(u.deletion.is_empty());
        // Values read back through the schema.
        let values = t
            .row_values_with_static(&u.key.key, u.static_row.as_ref(), row)
            .expect("decode");
        assert_eq!(
            values,
            vec![
                ("id".to_string(), Some(Value::BigInt(1))),
                ("ts".to_string(), Some(Value::Timestamp(5))),
                ("s".to_string(), Some(text("st"))),
                ("v".to_string(), Some(text("x"))),
                ("n".to_string(), None),
            ]
        );
    }

    #[test]
    fn insert_of_key_only_and_static_only() {
        let t = events();
        let u = t
            .insert(
                &[("id", Value::BigInt(1)), ("ts", Value::Timestamp(5))],
                &WriteOptions::default(),
                NOW_MICROS,
            )
            .expect("key only");
        assert!(!u.rows[0].liveness.is_empty() && u.rows[0].cells.is_empty());
        let s = t
            .insert(
                &[("id", Value::BigInt(1)), ("s", text("st"))],
                &WriteOptions::default(),
                NOW_MICROS,
            )
            .expect("static only");
        assert!(s.rows.is_empty());
        let st = s.static_row.expect("static row");
        assert_eq!(st.liveness, LivenessInfo::new(NOW_MICROS));
        let e = input_error(t.insert(
            &[("id", Value::BigInt(1)), ("v", text("x"))],
            &WriteOptions::default(),
            NOW_MICROS,
        ));
        assert!(e.contains("missing clustering column 'ts'"), "{e}");
    }

    #[test]
    fn update_writes_cells_without_marker_and_tombstones_for_none() {
        let t = events();
        let opts = WriteOptions {
            timestamp_micros: Some(42),
            ttl_seconds: None,
        };
        let u = t
            .update(
                &[("id", Value::BigInt(1)), ("ts", Value::Timestamp(5))],
                &[("v", Some(text("x"))), ("n", None)],
                &opts,
                NOW_MICROS,
            )
            .expect("update");
        let row = &u.rows[0];
        assert!(row.liveness.is_empty(), "UPDATE writes no row marker");
        assert_eq!(
            row.cells,
            vec![
                Cell::live(1, 42, b"x".to_vec()),
                Cell::tombstone(2, 42, NOW_SECONDS)
            ]
        );
        let s = t
            .update(
                &[("id", Value::BigInt(1))],
                &[("s", Some(text("y")))],
                &opts,
                NOW_MICROS,
            )
            .expect("static");
        assert!(s.rows.is_empty());
        assert_eq!(
            s.static_row.expect("static").cells,
            vec![Cell::live(0, 42, b"y".to_vec())]
        );
    }

    #[test]
    fn ttl_default_and_explicit() {
        let mut t = events();
        t.options = t.options.apply("default_time_to_live = 100").expect("ttl");
        let key = [("id", Value::BigInt(1)), ("ts", Value::Timestamp(5))];
        let row = [
            ("id", Value::BigInt(1)),
            ("ts", Value::Timestamp(5)),
            ("v", text("x")),
        ];
        let u = t
            .insert(&row, &WriteOptions::default(), NOW_MICROS)
            .expect("default ttl");
        assert_eq!(
            u.rows[0].liveness,
            LivenessInfo::expiring(NOW_MICROS, 100, NOW_SECONDS)
        );
        assert_eq!(
            u.rows[0].cells[0],
            Cell::expiring(1, NOW_MICROS, 100, NOW_SECONDS, b"x".to_vec())
        );
        let u = t
            .insert(
                &row,
                &WriteOptions {
                    timestamp_micros: None,
                    ttl_seconds: Some(0),
                },
                NOW_MICROS,
            )
            .expect("ttl 0");
        assert_eq!(u.rows[0].liveness, LivenessInfo::new(NOW_MICROS));
        assert_eq!(u.rows[0].cells[0].local_deletion_seconds, NO_DELETION_TIME);
        let u = t
            .update(
                &key,
                &[("v", Some(text("y")))],
                &WriteOptions {
                    timestamp_micros: None,
                    ttl_seconds: Some(7),
                },
                NOW_MICROS,
            )
            .expect("update ttl");
        assert_eq!(u.rows[0].cells[0].local_deletion_seconds, NOW_SECONDS + 7);
        let e = input_error(t.insert(
            &row,
            &WriteOptions {
                timestamp_micros: None,
                ttl_seconds: Some(MAX_TTL_SECONDS + 1),
            },
            NOW_MICROS,
        ));
        assert!(e.contains("TTL"), "{e}");
        assert!(t
            .insert(
                &row,
                &WriteOptions {
                    timestamp_micros: None,
                    ttl_seconds: Some(MAX_TTL_SECONDS)
                },
                NOW_MICROS
            )
            .is_ok());
    }

    #[test]
    fn deletions_of_each_kind() {
        let t = events();
        let opts = WriteOptions {
            timestamp_micros: Some(99),
            ttl_seconds: None,
        };
        let del = DeletionTime::new(99, NOW_SECONDS);
        let row = t
            .delete_row(
                &[("id", Value::BigInt(1)), ("ts", Value::Timestamp(5))],
                &opts,
                NOW_MICROS,
            )
            .expect("row");
        assert_eq!(row.rows.len(), 1);
        assert_eq!(row.rows[0].deletion, del);
        assert!(row.rows[0].liveness.is_empty() && row.rows[0].cells.is_empty());

        let cells = t
            .delete_cells(
                &[("id", Value::BigInt(1)), ("ts", Value::Timestamp(5))],
                &["v", "s"],
                &opts,
                NOW_MICROS,
            )
            .expect("cells");
        assert_eq!(
            cells.rows[0].cells,
            vec![Cell::tombstone(1, 99, NOW_SECONDS)]
        );
        assert_eq!(
            cells.static_row.expect("static").cells,
            vec![Cell::tombstone(0, 99, NOW_SECONDS)]
        );

        let part = t
            .delete_partition(&[("id", Value::BigInt(1))], &opts, NOW_MICROS)
            .expect("partition");
        assert_eq!(part.deletion.partition, Some(del));
        assert!(part.rows.is_empty());

        let range = t
            .delete_range(
                &[("id", Value::BigInt(1))],
                (&[Value::Timestamp(9)], true),
                (&[Value::Timestamp(3)], false),
                &opts,
                NOW_MICROS,
            )
            .expect("range");
        let rt = &range.deletion.ranges[0];
        assert_eq!(rt.deletion, del);
        let at = |ts| t.encode_clustering(&[Value::Timestamp(ts)]).expect("ck");
        assert!(
            rt.range.contains(&at(9)) && rt.range.contains(&at(5)) && rt.range.contains(&at(4))
        );
        assert!(
            !rt.range.contains(&at(3)) && !rt.range.contains(&at(10)) && !rt.range.contains(&at(1))
        );
        let open = t
            .delete_range(
                &[("id", Value::BigInt(1))],
                (&[], false),
                (&[Value::Timestamp(3)], true),
                &opts,
                NOW_MICROS,
            )
            .expect("open start");
        assert!(open.deletion.ranges[0].range.start.is_unbounded());
        let inverted = t.delete_range(
            &[("id", Value::BigInt(1))],
            (&[Value::Timestamp(3)], true),
            (&[Value::Timestamp(9)], true),
            &opts,
            NOW_MICROS,
        );
        assert!(input_error(inverted).contains("starts after it ends"));
    }

    #[test]
    fn bad_input_is_named_and_produces_nothing() {
        let t = events();
        let d = WriteOptions::default();
        let key = || vec![("id", Value::BigInt(1)), ("ts", Value::Timestamp(5))];
        // Unknown column.
        let mut row = key();
        row.push(("nope", text("x")));
        assert!(
            matches!(t.insert(&row, &d, NOW_MICROS), Err(Error::NotFound(m)) if m.contains("nope"))
        );
        // Missing partition key.
        let e = input_error(t.insert(
            &[("ts", Value::Timestamp(5)), ("v", text("x"))],
            &d,
            NOW_MICROS,
        ));
        assert!(e.contains("missing partition key column 'id'"), "{e}");
        // Wrong type.
        let mut row = key();
        row.push(("n", Value::BigInt(3)));
        let e = input_error(t.insert(&row, &d, NOW_MICROS));
        assert!(
            e.contains("'n'") && e.contains("int") && e.contains("bigint"),
            "{e}"
        );
        let e = input_error(t.insert(
            &[("id", text("1")), ("ts", Value::Timestamp(5))],
            &d,
            NOW_MICROS,
        ));
        assert!(e.contains("'id'"), "{e}");
        // Invalid value for its type (non-ASCII in ascii).
        let a = TableSchema::builder("ks", "a")
            .partition_key("k", CqlType::Ascii)
            .build()
            .expect("a");
        assert!(a
            .insert(&[("k", Value::Ascii("é".into()))], &d, NOW_MICROS)
            .is_err());
        // Duplicate column.
        let mut row = key();
        row.push(("id", Value::BigInt(2)));
        assert!(input_error(t.insert(&row, &d, NOW_MICROS)).contains("more than once"));
        // Oversized value.
        let mut small = kv();
        small.options = small
            .options
            .apply("max_value_size_in_kb = 1")
            .expect("1 KiB");
        let e = input_error(small.insert(
            &[("k", text("k")), ("v", Value::Blob(vec![0; 1025]))],
            &d,
            NOW_MICROS,
        ));
        assert!(e.contains("'v'") && e.contains("1024"), "{e}");
        assert!(small
            .insert(
                &[("k", text("k")), ("v", Value::Blob(vec![0; 1024]))],
                &d,
                NOW_MICROS
            )
            .is_ok());
        // Reserved timestamp; TTL on a deletion.
        let e = input_error(t.insert(
            &key(),
            &WriteOptions {
                timestamp_micros: Some(i64::MIN),
                ttl_seconds: None,
            },
            NOW_MICROS,
        ));
        assert!(e.contains("reserved"), "{e}");
        let e = input_error(t.delete_row(
            &key(),
            &WriteOptions {
                timestamp_micros: None,
                ttl_seconds: Some(5),
            },
            NOW_MICROS,
        ));
        assert!(e.contains("TTL"), "{e}");
        // Updates: key column in SET, non-key column in key, nothing set, null key.
        assert!(t
            .update(&key(), &[("ts", Some(Value::Timestamp(1)))], &d, NOW_MICROS)
            .is_err());
        assert!(t
            .update(
                &[("id", Value::BigInt(1)), ("v", text("x"))],
                &[("n", None)],
                &d,
                NOW_MICROS
            )
            .is_err());
        assert!(t.update(&key(), &[], &d, NOW_MICROS).is_err());
        assert!(
            t.update(
                &[("id", Value::BigInt(1))],
                &[("v", Some(text("x")))],
                &d,
                NOW_MICROS
            )
            .is_err(),
            "regular column needs clustering"
        );
        // Deletes: partial key for a row, clustering in a partition delete.
        assert!(t
            .delete_row(&[("id", Value::BigInt(1))], &d, NOW_MICROS)
            .is_err());
        assert!(t.delete_partition(&key(), &d, NOW_MICROS).is_err());
        assert!(kv()
            .delete_range(
                &[("k", text("k"))],
                (&[], true),
                (&[], true),
                &d,
                NOW_MICROS
            )
            .is_err());
    }

    #[test]
    fn row_values_handles_tombstones_dropped_columns_and_static_rows() {
        let t = events();
        let key = t.serialize_partition_key(&[Value::BigInt(3)]).expect("key");
        let mut row = Row::new(t.encode_clustering(&[Value::Timestamp(1)]).expect("ck"));
        row.add_cell(Cell::tombstone(1, 1, 1));
        row.add_cell(Cell::live(2, 1, types::serialize(&Value::Int(8))));
        row.add_cell(Cell::live(77, 1, b"dropped column".to_vec()));
        let values = t.row_values(&key, &row).expect("values");
        let v: Vec<Option<Value>> = values.into_iter().map(|(_, v)| v).collect();
        assert_eq!(
            v,
            vec![
                Some(Value::BigInt(3)),
                Some(Value::Timestamp(1)),
                None,
                None,
                Some(Value::Int(8))
            ]
        );
        let mut st = Row::new(Vec::new());
        st.add_cell(Cell::live(0, 1, b"s".to_vec()));
        let v: Vec<Option<Value>> = t
            .row_values(&key, &st)
            .expect("static")
            .into_iter()
            .map(|(_, v)| v)
            .collect();
        assert_eq!(
            v,
            vec![Some(Value::BigInt(3)), None, Some(text("s")), None, None]
        );
        let mut bad = Row::new(Vec::new());
        bad.add_cell(Cell::live(2, 1, vec![1, 2, 3]));
        assert!(t.row_values(&key, &bad).is_err(), "3 bytes is not an int");
    }

    #[test]
    fn dropped_column_ids_are_never_reused() {
        let t = events();
        let dropped = t.with_column_dropped("v").expect("drop");
        assert!(dropped.column("v").is_err());
        assert_eq!(
            dropped.column("n").expect("n").id,
            Some(2),
            "others keep their ids"
        );
        assert_eq!(dropped.column("n").expect("n").position, 0);
        let readded = dropped
            .with_column_added("v", CqlType::Text, false)
            .expect("add");
        assert_eq!(readded.column("v").expect("v").id, Some(3));
        assert!(t.with_column_dropped("id").is_err());
        assert!(
            t.with_column_added("n", CqlType::Int, false).is_err(),
            "duplicate name"
        );
        let cql = readded.to_cql();
        assert!(TableSchema::from_cql(&cql).is_ok(), "{cql}");
    }

    #[test]
    fn catalog_lifecycle_and_json_round_trip() {
        let mut c = Catalog::new();
        assert!(matches!(c.create_table(events()), Err(Error::NotFound(_))));
        c.create_keyspace("ks").expect("ks");
        assert!(matches!(
            c.create_keyspace("ks"),
            Err(Error::AlreadyExists(_))
        ));
        assert!(c.create_keyspace("bad name").is_err());
        let id = c.create_table(events()).expect("create").id;
        assert_eq!(id, 1);
        assert!(matches!(
            c.create_table(events()),
            Err(Error::AlreadyExists(_))
        ));
        c.create_table(kv()).expect("kv");
        let altered = c
            .alter_table_options(
                "ks",
                "events",
                "compaction = {'class': 'LeveledCompactionStrategy'}",
            )
            .expect("alter");
        assert_eq!(
            altered.options.compaction.class(),
            crate::options::CompactionClass::LeveledCompactionStrategy
        );
        let before = c.clone();
        assert!(c
            .alter_table_options("ks", "events", "gc_grace_seconds = 1 AND bogus = 2")
            .is_err());
        assert_eq!(c, before, "a failed ALTER changes nothing");
        assert!(matches!(
            c.alter_table_options("ks", "nope", "gc_grace_seconds = 1"),
            Err(Error::NotFound(_))
        ));
        c.alter_table_drop_column("ks", "events", "n")
            .expect("drop column");
        c.alter_table_add_column("ks", "events", "m", CqlType::Double, false)
            .expect("add column");

        let json = c.to_json().expect("json");
        let back = Catalog::from_json(&json).expect("parse");
        assert_eq!(back, c);
        assert_eq!(
            back.table("ks", "events")
                .expect("t")
                .column("m")
                .expect("m")
                .id,
            Some(3),
            "next after n's 2"
        );

        let dropped = c.drop_table("ks", "events").expect("drop");
        assert_eq!(dropped.id, 1);
        assert!(matches!(c.table("ks", "events"), Err(Error::NotFound(_))));
        assert!(matches!(
            c.drop_table("ks", "events"),
            Err(Error::NotFound(_))
        ));
        assert_eq!(
            c.create_table(events()).expect("recreate").id,
            3,
            "table ids are never reused"
        );
        assert!(c.drop_keyspace("ks").is_err(), "not empty");

        assert!(Catalog::from_json("{").is_err());
        let future = json.replace("\"format_version\": 2", "\"format_version\": 3");
        assert_ne!(future, json);
        assert!(Catalog::from_json(&future).is_err());
        // Version 1 upgrades; this catalog has no decimal clustering column.
        let old = json.replace("\"format_version\": 2", "\"format_version\": 1");
        let upgraded = Catalog::from_json(&old).unwrap();
        assert_eq!(upgraded.format_version, CATALOG_FORMAT_VERSION);
        assert!(upgraded.legacy_decimal_clustering.is_empty());
        let bad_opts = json.replace(
            "\"gc_grace_seconds\": 864000",
            "\"gc_grace_seconds\": 864000, \"bloom_filter_fp_chance\": 0.0",
        );
        let bad_opts = bad_opts.replacen(
            "\"bloom_filter_fp_chance\": 0.01",
            "\"bloom_filter_fp_chance\": 0.0",
            1,
        );
        assert!(
            Catalog::from_json(&bad_opts).is_err(),
            "options are validated on load"
        );
    }
}
