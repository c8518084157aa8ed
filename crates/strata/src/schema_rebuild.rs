//! `strata schema rebuild`: re-creates a lost `schema.json` from what the data
//! directory itself records, so that a missing catalog (which refuses to open,
//! docs/DURABILITY.md) has a repair that needs no backup.
//!
//! Contract:
//! 1. It runs only when `schema.json` is missing, under the directory's lock, and
//!    writes nothing but `schema.json` (atomically, once, at the end). A dry run
//!    writes nothing at all.
//! 2. A table's columns, their ids and the table id come from the identity header
//!    of its newest format-2 sstable (every sstable of a table must agree on the
//!    table id and name). Its options come from the newest snapshot's
//!    `schema.cql` when that snapshot has the same columns; otherwise they are the
//!    defaults, and the report says so.
//! 3. Nothing is guessed: a table directory with sstables but no readable
//!    identity (format-1 files only), files that disagree, and commit-log records
//!    of a table id no directory accounts for are listed as unresolved, and the
//!    rebuild refuses unless told to write what it could (`allow_partial`); the
//!    unresolved directories are then reported at every open, never touched.
//! 4. The next table id is above every id seen in a header or in the commit log,
//!    and each table's next column id above every column id any of its files
//!    used, so no id of a dropped table or column is ever reused.
//! 5. A table keeps its UUID: the one its sstables' headers name (format 10),
//!    or its MANIFEST's; files naming two UUIDs are unresolved (contract 3).

use crate::commitlog::{dump_segment, list_segments};
use crate::data::ColumnId;
use crate::dirlock::DirLock;
use crate::error::{Error, Result};
use crate::fs::{EntryKind, Fs, IoCause, IoTag};
use crate::schema::{Catalog, ColumnKind, Keyspace, Order, TableSchema};
use crate::sstable::identity::{ColumnRole, SSTableIdentity};
use crate::sstable::parse_data_file_name;
use crate::types::CqlType;
use serde::Serialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// What [`rebuild_schema`] may do.
#[derive(Clone, Debug, Default)]
pub struct RebuildSchemaOptions {
    /// Report what would be written; write nothing.
    pub dry_run: bool,
    /// Write the tables that could be rebuilt even if some could not.
    pub allow_partial: bool,
}

/// One table as rebuilt.
#[derive(Clone, Debug, Serialize)]
pub struct RebuiltTable {
    pub table: String,
    pub table_id: u64,
    /// The sstable whose identity header gave the columns.
    pub columns_from: PathBuf,
    /// The snapshot `schema.cql` the options came from; `None`: defaults.
    pub options_from: Option<PathBuf>,
    pub sstables: usize,
    /// sstables without a readable identity header (format 1, or damaged there):
    /// open checks them against the rebuilt schema like any other.
    pub without_identity: Vec<String>,
    pub cql: String,
}

/// The outcome, as `strata schema rebuild` prints it.
#[derive(Clone, Debug, Serialize)]
pub struct SchemaRebuild {
    pub tables: Vec<RebuiltTable>,
    /// What could not be rebuilt, and why (contract 3).
    pub unresolved: Vec<String>,
    pub next_table_id: u64,
    /// Whether `schema.json` was written.
    pub written: bool,
}

/// Rebuilds `<dir>/schema.json` (contract above).
pub fn rebuild_schema(fs: &Fs, dir: &Path, opts: &RebuildSchemaOptions) -> Result<SchemaRebuild> {
    let schema_path = dir.join(crate::db::SCHEMA_FILE);
    if !dir.is_dir() {
        return Err(Error::NotFound(format!("data directory {}", dir.display())));
    }
    let _lock = if opts.dry_run {
        None
    } else {
        Some(DirLock::acquire(dir, "strata schema rebuild")?)
    };
    // Nothing below the data directory is written through a link (fs
    // invariant 6); links in place of table directories, sstables or
    // snapshots are not read as this directory's (the walks below skip them).
    fs.confine(dir);
    if schema_path.exists() {
        return Err(Error::AlreadyExists(format!(
            "{} exists: there is nothing to rebuild (move it aside first if it is wrong)",
            schema_path.display()
        )));
    }
    let mut tables = Vec::new();
    let mut unresolved = Vec::new();
    let mut catalog = Catalog::new();
    let mut max_id = 0u64;
    for (ks, name, t_dir) in crate::db::table_dirs_on_disk(fs, dir)? {
        match rebuild_table(fs, &ks, &name, &t_dir)? {
            Rebuilt::Table(rebuilt) => {
                let (schema, report) = *rebuilt;
                max_id = max_id.max(schema.id);
                catalog
                    .keyspaces
                    .entry(ks.clone())
                    .or_insert_with(|| Keyspace {
                        name: ks.clone(),
                        tables: BTreeMap::new(),
                        // Replication is not in the sstables: the default, as for
                        // a catalog written before it was kept.
                        replication: crate::schema::default_replication(),
                        durable_writes: true,
                        types: BTreeMap::new(),
                    })
                    .tables
                    .insert(name.clone(), schema.clone());
                // The keyspace's user-defined types, from the definitions
                // the columns carry (the identity header records them).
                if let Some(k) = catalog.keyspaces.get_mut(&ks) {
                    for def in schema.columns.iter().flat_map(|c| c.ty.udts()) {
                        if def.keyspace == ks {
                            k.types.entry(def.name.clone()).or_insert(def);
                        }
                    }
                }
                tables.push(report);
            }
            Rebuilt::Empty => {}
            Rebuilt::Unresolved(why) => unresolved.push(why),
        }
    }
    let rebuilt_ids: BTreeSet<u64> = tables.iter().map(|t| t.table_id).collect();
    let log_dir = dir.join(crate::db::COMMITLOG_DIR);
    let mut orphan_ids = BTreeSet::new();
    if log_dir.is_dir() {
        for (_, path) in list_segments(fs, &log_dir)? {
            let dump = dump_segment(fs, &path)?;
            for id in dump.records.iter().filter_map(|r| r.table_id) {
                max_id = max_id.max(id);
                if !rebuilt_ids.contains(&id) {
                    orphan_ids.insert(id);
                }
            }
        }
    }
    for id in orphan_ids {
        unresolved.push(format!(
            "the commit log holds records of table id {id}, which no table directory's \
             sstables name (a table written but never flushed?): they would be discarded \
             at the next open"
        ));
    }
    catalog.next_table_id = max_id + 1;
    if tables.is_empty() && unresolved.is_empty() {
        return Err(Error::NotFound(format!(
            "{} holds no table data: there is no schema to rebuild",
            dir.display()
        )));
    }
    let mut written = false;
    if !unresolved.is_empty() && !opts.allow_partial {
        if opts.dry_run {
            return Ok(SchemaRebuild {
                tables,
                unresolved,
                next_table_id: catalog.next_table_id,
                written,
            });
        }
        return Err(Error::NeedsRepair(format!(
            "schema.json not written: {} (run with --allow-partial to write the {} table(s) \
             that could be rebuilt; the rest stay on disk, untouched)",
            unresolved.join("; "),
            tables.len()
        )));
    }
    // What is written must load: the same checks open applies.
    let json = catalog.to_json()?;
    Catalog::from_json(&json)?;
    if !opts.dry_run {
        fs.write_atomic(&schema_path, json.as_bytes(), IoTag::new(IoCause::Metadata))?;
        written = true;
    }
    Ok(SchemaRebuild {
        tables,
        unresolved,
        next_table_id: catalog.next_table_id,
        written,
    })
}

enum Rebuilt {
    Table(Box<(TableSchema, RebuiltTable)>),
    /// A directory without sstables: nothing to lose, nothing to rebuild.
    Empty,
    Unresolved(String),
}

fn rebuild_table(fs: &Fs, ks: &str, name: &str, t_dir: &Path) -> Result<Rebuilt> {
    let qualified = format!("{ks}.{name}");
    let mut files: Vec<(u64, PathBuf)> = fs
        .list_dir_kinds(t_dir)?
        .into_iter()
        .filter(|(_, kind)| *kind == EntryKind::File)
        .filter_map(|(n, _)| parse_data_file_name(&n).map(|id| (id, t_dir.join(n))))
        .collect();
    if files.is_empty() {
        return Ok(Rebuilt::Empty);
    }
    files.sort();
    let mut identities: Vec<(PathBuf, SSTableIdentity)> = Vec::new();
    let mut unreadable = Vec::new();
    for (_, path) in &files {
        match crate::sstable::salvage::read_identity_header(fs, path) {
            Ok((identity, _version)) => identities.push((path.clone(), identity)),
            Err(e) => unreadable.push(format!("{}: {e}", path.display())),
        }
    }
    let Some((newest_path, newest)) = identities.last().cloned() else {
        return Ok(Rebuilt::Unresolved(format!(
            "{qualified}: none of its {} sstable(s) has a readable identity header (format 1 \
             files do not record their columns): restore schema.json from a backup",
            files.len()
        )));
    };
    // The table's UUID: the one its files name (format 10 on), else the one
    // its MANIFEST names (format 2 on); `None` for a table from before UUIDs,
    // which the next read-write open gives one.
    let manifest_uuid = crate::manifest::Manifest::open(fs, t_dir)
        .ok()
        .and_then(|m| m.data().table_uuid);
    let uuid = newest.table_uuid.or(manifest_uuid);
    for (path, id) in &identities {
        let other_uuid = id.table_uuid.is_some_and(|u| Some(u) != uuid);
        if id.table_id != newest.table_id || id.keyspace != ks || id.table != name || other_uuid {
            return Ok(Rebuilt::Unresolved(format!(
                "{qualified}: {} belongs to {} (table id {}, UUID {}) but {} to {} (table id {}, \
                 UUID {})",
                path.display(),
                id.qualified_name(),
                id.table_id,
                id.table_uuid.map_or("none".to_string(), |u| u.to_string()),
                newest_path.display(),
                newest.qualified_name(),
                newest.table_id,
                uuid.map_or("none".to_string(), |u| u.to_string())
            )));
        }
    }
    let max_column_id = identities
        .iter()
        .flat_map(|(_, i)| i.columns.iter().filter_map(|c| c.id))
        .max();
    let next_column_id: ColumnId = max_column_id.map_or(0, |m| m.saturating_add(1));
    // The user-defined types the file's columns carry, for reading a
    // snapshot's `schema.cql` that names them.
    let udts: Vec<std::sync::Arc<crate::types::UdtDef>> = newest
        .columns
        .iter()
        .filter_map(|c| CqlType::from_descriptor(&c.cql_type).ok())
        .flat_map(|t| t.udts())
        .collect();
    let lookup = |k: &str, n: &str| {
        udts.iter()
            .find(|d| d.keyspace == k && d.name == n)
            .cloned()
    };
    let snapshot = newest_snapshot_schema(fs, t_dir, &lookup)?;
    let (mut builder, ids) = builder_of(&newest, ks, name, &newest_path)?;
    builder = builder.uuid(uuid);
    let mut options_from = None;
    if let Some((path, snap)) = snapshot {
        if same_columns(&snap, &newest) {
            builder = builder.options(snap.options.clone());
            options_from = Some(path);
        }
    }
    let schema = builder.build_with_ids(&ids, next_column_id)?;
    let report = RebuiltTable {
        table: qualified,
        table_id: schema.id,
        columns_from: newest_path,
        options_from,
        sstables: files.len(),
        without_identity: unreadable,
        cql: schema.to_cql(),
    };
    Ok(Rebuilt::Table(Box::new((schema, report))))
}

/// A schema builder with the columns an identity header records, in its
/// order and with its column ids (returned beside it).
fn builder_of(
    identity: &SSTableIdentity,
    keyspace: &str,
    table: &str,
    path: &Path,
) -> Result<(crate::schema::TableSchemaBuilder, Vec<ColumnId>)> {
    let mut builder = TableSchema::builder(keyspace, table).id(identity.table_id);
    let mut ids = Vec::new();
    for c in &identity.columns {
        let ty = CqlType::from_descriptor(&c.cql_type).map_err(|_| {
            Error::corruption(
                path,
                0,
                format!("column {} has unknown type {}", c.name, c.cql_type),
            )
        })?;
        builder = match c.role {
            ColumnRole::PartitionKey => builder.partition_key(&c.name, ty),
            ColumnRole::ClusteringAsc => builder.clustering(&c.name, ty, Order::Asc),
            ColumnRole::ClusteringDesc => builder.clustering(&c.name, ty, Order::Desc),
            ColumnRole::Regular => builder.column(&c.name, ty),
            ColumnRole::Static => builder.static_column(&c.name, ty),
        };
        if let Some(id) = c.id {
            ids.push(id);
        }
    }
    Ok((builder, ids))
}

/// The table schema an sstable's identity header describes (its columns,
/// types and column ids; default options): how a file is read without its
/// data directory (`strata sstable dump FILE`).
pub fn schema_of_identity(identity: &SSTableIdentity, path: &Path) -> Result<TableSchema> {
    let (builder, ids) = builder_of(identity, &identity.keyspace, &identity.table, path)?;
    let next = ids.iter().max().map_or(0, |m| m.saturating_add(1));
    builder.build_with_ids(&ids, next)
}

/// Whether a snapshot's schema has exactly the columns (names, types, roles, in
/// order) the file was written with.
fn same_columns(snap: &TableSchema, identity: &SSTableIdentity) -> bool {
    let theirs: Vec<(String, String, ColumnRole)> = identity
        .columns
        .iter()
        .map(|c| (c.name.clone(), c.type_name(), c.role))
        .collect();
    let ours: Vec<(String, String, ColumnRole)> = snap
        .columns
        .iter()
        .map(|c| {
            let role = match (c.kind, c.descending) {
                (ColumnKind::PartitionKey, _) => ColumnRole::PartitionKey,
                (ColumnKind::Clustering, false) => ColumnRole::ClusteringAsc,
                (ColumnKind::Clustering, true) => ColumnRole::ClusteringDesc,
                (ColumnKind::Regular, _) => ColumnRole::Regular,
                (ColumnKind::Static, _) => ColumnRole::Static,
            };
            (c.name.clone(), c.ty.name(), role)
        })
        .collect();
    theirs == ours
}

/// The `schema.cql` of the table's most recently modified snapshot, parsed.
fn newest_snapshot_schema(
    fs: &Fs,
    t_dir: &Path,
    udts: crate::cql::ddl::UdtLookup<'_>,
) -> Result<Option<(PathBuf, TableSchema)>> {
    let snaps = t_dir.join(crate::maintenance::SNAPSHOTS_DIR);
    if fs.entry_kind(&snaps)? != Some(EntryKind::Dir) {
        return Ok(None);
    }
    let mut best: Option<(std::time::SystemTime, PathBuf)> = None;
    for (name, kind) in fs.list_dir_kinds(&snaps)? {
        if kind != EntryKind::Dir {
            continue;
        }
        let path = snaps
            .join(name)
            .join(crate::maintenance::SNAPSHOT_SCHEMA_FILE);
        if fs.entry_kind(&path)? != Some(EntryKind::File) {
            continue;
        }
        let Ok(meta) = fs.metadata(&path) else {
            continue;
        };
        let modified = meta.modified().unwrap_or(std::time::UNIX_EPOCH);
        if best.as_ref().is_none_or(|(t, _)| modified > *t) {
            best = Some((modified, path));
        }
    }
    let Some((_, path)) = best else {
        return Ok(None);
    };
    let bytes = fs.read_all(
        &path,
        crate::maintenance::MAX_SNAPSHOT_METADATA_BYTES,
        IoTag::new(IoCause::Metadata),
    )?;
    // A snapshot's schema that does not parse is not used: the defaults are, and
    // the report shows `options_from: None`.
    // The file holds the `CREATE TYPE`s the table needs, then its `CREATE
    // TABLE`: the types come from the sstable headers (`udts`), the options
    // from the one statement that parses as a table.
    let parsed = std::str::from_utf8(&bytes).ok().and_then(|text| {
        let spans = crate::cql::parser::split_statements(text).ok()?;
        spans.iter().find_map(|&(start, end)| {
            crate::schema::CreateTableStatement::parse_with_types(None, text.get(start..end)?, udts)
                .ok()
                .map(|s| s.schema)
        })
    });
    Ok(parsed.map(|s| (path, s)))
}
