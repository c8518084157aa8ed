//! The identity block of a format-version-2 sstable: what table and generation
//! the file was written as, its column signature, and what an offline salvage
//! needs to read the data stream without the tail (chunk length, codec, encoding
//! base). Drawn in docs/FORMAT.md.
//!
//! Why at offset 0 and not in the tail: damage to the end of a file (a torn copy,
//! a truncation) destroys the tail first; a header written before the first chunk
//! survives it, so `strata sstable scrub` can still tell whose data it holds and
//! how to decode it.
//!
//! Invariants:
//! 1. The block is covered by its own CRC32C and is part of the tiling of the
//!    file checked at open (sstable invariant 1).
//! 2. [`ColumnRole`] ids are written to disk and never renumbered.
//! 3. Decoding never panics: malformed bytes give a reason string, which the
//!    reader turns into `Error::Corruption` at offset 0.

use super::compression::Codec;
use super::format::{FIRST_VERSION_WITH_ROW_TS_WIDTH, FIRST_VERSION_WITH_TABLE_UUID};
use crate::encoding::{
    put_bytes, put_u32_le, put_u64_le, put_varint, put_zigzag, DecodeError, DecodeResult,
    EncodingBase, Reader,
};
use crate::schema::{ColumnKind, TableSchema, TableUuid};
use serde::Serialize;

/// First bytes of a version-2 sstable.
pub const IDENTITY_MAGIC: [u8; 8] = *b"STRATA.H";
/// Magic, then the payload length (u32 LE).
pub const IDENTITY_PREFIX_BYTES: usize = 12;
/// A header larger than this is refused as damaged (65,535 columns of 48-byte
/// names fit well below it).
pub const MAX_IDENTITY_BYTES: u32 = 16 << 20;

/// What a column is in its table. On disk as one byte (invariant 2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum ColumnRole {
    PartitionKey,
    /// Clustering column, ascending.
    ClusteringAsc,
    /// Clustering column, descending.
    ClusteringDesc,
    Regular,
    Static,
}

impl ColumnRole {
    pub fn id(self) -> u8 {
        match self {
            ColumnRole::PartitionKey => 0,
            ColumnRole::ClusteringAsc => 1,
            ColumnRole::ClusteringDesc => 2,
            ColumnRole::Regular => 3,
            ColumnRole::Static => 4,
        }
    }

    pub fn from_id(id: u8) -> Option<ColumnRole> {
        Some(match id {
            0 => ColumnRole::PartitionKey,
            1 => ColumnRole::ClusteringAsc,
            2 => ColumnRole::ClusteringDesc,
            3 => ColumnRole::Regular,
            4 => ColumnRole::Static,
            _ => return None,
        })
    }

    /// As a person would say it ("clustering desc").
    pub fn describe(self) -> &'static str {
        match self {
            ColumnRole::PartitionKey => "partition key",
            ColumnRole::ClusteringAsc => "clustering asc",
            ColumnRole::ClusteringDesc => "clustering desc",
            ColumnRole::Regular => "regular",
            ColumnRole::Static => "static",
        }
    }
}

/// One column as the file was written.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct IdentityColumn {
    pub name: String,
    /// The type's descriptor (`CqlType::descriptor`): its CQL name (`int`,
    /// `frozen<list<int>>`), or for a type with a UDT in it the JSON form
    /// that carries the UDT's fields.
    pub cql_type: String,
    pub role: ColumnRole,
    /// The column id cells refer to (regular and static columns only).
    pub id: Option<u32>,
}

impl IdentityColumn {
    /// The column's type as its CQL name (a UDT by name), how columns are
    /// compared: ALTER TYPE changes a UDT's fields without touching stored
    /// values. The descriptor itself if it does not parse.
    pub fn type_name(&self) -> String {
        crate::types::CqlType::from_descriptor(&self.cql_type)
            .map(|t| t.name())
            .unwrap_or_else(|_| self.cql_type.clone())
    }
}

/// Who an sstable belongs to and how its data stream is encoded.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct SSTableIdentity {
    pub table_id: u64,
    /// The table's UUID (format 10 on; `None` in older files, and in files of
    /// a table that had none yet, written as 16 zero bytes: a random UUID is
    /// never all zeros, its version bits are set).
    #[serde(serialize_with = "uuid_text")]
    pub table_uuid: Option<TableUuid>,
    /// The sstable id the file was written as (`strata-{generation}-Data.db`).
    pub generation: u64,
    pub keyspace: String,
    pub table: String,
    /// In schema order (partition key, clustering, then regular and static).
    pub columns: Vec<IdentityColumn>,
    /// Filled in by the writer from its options; what the caller puts here is
    /// ignored.
    pub chunk_length_bytes: u32,
    pub codec: Codec,
    pub min_timestamp: i64,
    pub min_local_deletion: i64,
    pub min_ttl: u32,
    /// The base's row-timestamp width (format 8 on; 0 in older files).
    pub row_ts_bytes: u8,
}

impl SSTableIdentity {
    /// The identity of a new sstable `generation` of `schema`; the writer fills in
    /// chunk length, codec and encoding base.
    pub fn for_schema(schema: &TableSchema, generation: u64) -> SSTableIdentity {
        let columns = schema
            .columns
            .iter()
            .map(|c| IdentityColumn {
                name: c.name.clone(),
                cql_type: c.ty.descriptor(),
                role: match (c.kind, c.descending) {
                    (ColumnKind::PartitionKey, _) => ColumnRole::PartitionKey,
                    (ColumnKind::Clustering, false) => ColumnRole::ClusteringAsc,
                    (ColumnKind::Clustering, true) => ColumnRole::ClusteringDesc,
                    (ColumnKind::Regular, _) => ColumnRole::Regular,
                    (ColumnKind::Static, _) => ColumnRole::Static,
                },
                id: c.id,
            })
            .collect();
        SSTableIdentity {
            table_id: schema.id,
            table_uuid: schema.table_uuid(),
            generation,
            keyspace: schema.keyspace.clone(),
            table: schema.name.clone(),
            columns,
            chunk_length_bytes: 0,
            codec: Codec::None,
            min_timestamp: 0,
            min_local_deletion: 0,
            min_ttl: 0,
            row_ts_bytes: 0,
        }
    }

    pub fn qualified_name(&self) -> String {
        format!("{}.{}", self.keyspace, self.table)
    }

    pub fn base(&self) -> EncodingBase {
        EncodingBase {
            min_timestamp: self.min_timestamp,
            min_local_deletion: self.min_local_deletion,
            min_ttl: self.min_ttl,
            row_ts_bytes: self.row_ts_bytes,
        }
    }

    /// The whole block: magic, payload length, payload, CRC32C of all before it.
    pub fn encode(&self, format_version: u32) -> Vec<u8> {
        let mut payload = Vec::new();
        put_u32_le(&mut payload, format_version);
        put_u64_le(&mut payload, self.table_id);
        if format_version >= FIRST_VERSION_WITH_TABLE_UUID {
            payload.extend_from_slice(&self.table_uuid.map_or([0u8; 16], |u| u.0));
        }
        put_u64_le(&mut payload, self.generation);
        put_bytes(&mut payload, self.keyspace.as_bytes());
        put_bytes(&mut payload, self.table.as_bytes());
        put_u32_le(&mut payload, self.chunk_length_bytes);
        self.codec.encode(&mut payload);
        put_zigzag(&mut payload, self.min_timestamp);
        put_zigzag(&mut payload, self.min_local_deletion);
        put_varint(&mut payload, u64::from(self.min_ttl));
        if format_version >= FIRST_VERSION_WITH_ROW_TS_WIDTH {
            payload.push(self.row_ts_bytes);
        }
        put_varint(&mut payload, self.columns.len() as u64);
        for c in &self.columns {
            put_bytes(&mut payload, c.name.as_bytes());
            put_bytes(&mut payload, c.cql_type.as_bytes());
            payload.push(c.role.id());
            // 0 = no id, else id + 1.
            put_varint(&mut payload, c.id.map_or(0, |id| u64::from(id) + 1));
        }
        let mut out = Vec::with_capacity(IDENTITY_PREFIX_BYTES + payload.len() + 4);
        out.extend_from_slice(&IDENTITY_MAGIC);
        put_u32_le(&mut out, payload.len() as u32);
        out.extend_from_slice(&payload);
        let crc = crc32c::crc32c(&out);
        put_u32_le(&mut out, crc);
        out
    }

    /// Total block length from its 12-byte prefix (magic and payload length).
    pub fn block_length(prefix: &[u8]) -> Result<u64, String> {
        if prefix.len() < IDENTITY_PREFIX_BYTES || prefix[..8] != IDENTITY_MAGIC {
            return Err("no identity header (bad magic at offset 0)".to_string());
        }
        let len = u32::from_le_bytes([prefix[8], prefix[9], prefix[10], prefix[11]]);
        if len > MAX_IDENTITY_BYTES {
            return Err(format!("identity header claims {len} bytes"));
        }
        Ok(IDENTITY_PREFIX_BYTES as u64 + u64::from(len) + 4)
    }

    /// Decodes a whole block; returns the identity and the format version in it.
    pub fn decode(block: &[u8]) -> Result<(SSTableIdentity, u32), String> {
        let total = Self::block_length(block)?;
        if (block.len() as u64) != total {
            return Err(format!(
                "identity header of {} bytes, its length field says {total}",
                block.len()
            ));
        }
        let (body, crc) = block.split_at(block.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let actual = crc32c::crc32c(body);
        if stored != actual {
            return Err(format!(
                "identity header checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
            ));
        }
        Self::decode_payload(&body[IDENTITY_PREFIX_BYTES..])
            .map_err(|e| format!("identity header: {}", e.0))
    }

    fn decode_payload(payload: &[u8]) -> DecodeResult<(SSTableIdentity, u32)> {
        let mut r = Reader::new(payload);
        let version = r.u32_le()?;
        let table_id = r.u64_le()?;
        let table_uuid = if version >= FIRST_VERSION_WITH_TABLE_UUID {
            let raw: [u8; 16] = r
                .take(16)?
                .try_into()
                .map_err(|_| DecodeError("table UUID"))?;
            (raw != [0u8; 16]).then_some(TableUuid(raw))
        } else {
            None
        };
        let generation = r.u64_le()?;
        let text = |r: &mut Reader<'_>| -> DecodeResult<String> {
            String::from_utf8(r.bytes()?.to_vec()).map_err(|_| DecodeError("name is not UTF-8"))
        };
        let keyspace = text(&mut r)?;
        let table = text(&mut r)?;
        let chunk_length_bytes = r.u32_le()?;
        let codec = Codec::decode(&mut r)?;
        let min_timestamp = r.zigzag()?;
        let min_local_deletion = r.zigzag()?;
        let min_ttl = u32::try_from(r.varint()?).map_err(|_| DecodeError("min ttl too large"))?;
        let row_ts_bytes = if version >= FIRST_VERSION_WITH_ROW_TS_WIDTH {
            match r.u8()? {
                w @ 0..=8 => w,
                _ => return Err(DecodeError("row timestamp width beyond 8 bytes")),
            }
        } else {
            0
        };
        let n = r.varint_usize()?;
        let mut columns = Vec::with_capacity(n.min(r.remaining()));
        for _ in 0..n {
            let name = text(&mut r)?;
            let cql_type = text(&mut r)?;
            let role = ColumnRole::from_id(r.u8()?).ok_or(DecodeError("unknown column role"))?;
            let id = match r.varint()? {
                0 => None,
                v => Some(u32::try_from(v - 1).map_err(|_| DecodeError("column id too large"))?),
            };
            columns.push(IdentityColumn {
                name,
                cql_type,
                role,
                id,
            });
        }
        if !r.is_empty() {
            return Err(DecodeError("trailing bytes after the identity"));
        }
        Ok((
            SSTableIdentity {
                table_id,
                table_uuid,
                generation,
                keyspace,
                table,
                columns,
                chunk_length_bytes,
                codec,
                min_timestamp,
                min_local_deletion,
                min_ttl,
                row_ts_bytes,
            },
            version,
        ))
    }

    /// Regular and static columns of the file that `schema` never had: their
    /// ids are at or above the schema's next column id, where a column dropped
    /// since has a smaller one (schema invariant 2). A schema older than the
    /// file, or copied from another data directory, would hide their cells
    /// from every read without a word, so the table refuses to open with it.
    pub fn columns_unknown_to(&self, schema: &TableSchema) -> Vec<&IdentityColumn> {
        let next = schema.next_column_id();
        self.columns
            .iter()
            .filter(|c| c.id.is_some_and(|id| id >= next))
            .collect()
    }

    /// Why the data of a file with this identity cannot be read as `schema`'s
    /// columns, naming the first column that differs; `None` when it can.
    ///
    /// Compatible means: the same primary key (types, roles, order; names may
    /// differ, since ALTER TABLE RENAME renames key columns and a file holds
    /// their values by position, as Cassandra's serialization header holds
    /// only their types); every regular or static column of the file whose id
    /// the schema still has is the same column there (name, type, static or
    /// not). Columns added to the schema after the file was written, and
    /// columns dropped since (their id retired), are allowed, as ALTER TABLE
    /// allows them.
    pub fn column_mismatch(&self, schema: &TableSchema) -> Option<String> {
        let mine = Self::for_schema(schema, 0).columns;
        let key = |cs: &[IdentityColumn]| -> Vec<IdentityColumn> {
            cs.iter()
                .filter(|c| {
                    matches!(
                        c.role,
                        ColumnRole::PartitionKey
                            | ColumnRole::ClusteringAsc
                            | ColumnRole::ClusteringDesc
                    )
                })
                .cloned()
                .collect()
        };
        let (fk, sk) = (key(&self.columns), key(&mine));
        for i in 0..fk.len().max(sk.len()) {
            match (fk.get(i), sk.get(i)) {
                (Some(f), Some(s)) => {
                    if let Some(why) = differs(f, s, Names::MayDiffer) {
                        return Some(why);
                    }
                }
                (Some(f), None) => {
                    return Some(format!(
                    "column {} is a {} column in the file, absent from the schema's primary key",
                    f.name,
                    f.role.describe()
                ))
                }
                (None, Some(s)) => {
                    return Some(format!(
                    "column {} is a {} column in the schema, absent from the file's primary key",
                    s.name,
                    s.role.describe()
                ))
                }
                (None, None) => {}
            }
        }
        for f in self.columns.iter().filter(|c| c.id.is_some()) {
            // A file column whose id the schema lacks was dropped since: its
            // cells are ignored on read (schema invariant 2), even if a column
            // of the same name was added again under a new id.
            if let Some(s) = mine.iter().find(|s| s.id == f.id) {
                if let Some(why) = differs(f, s, Names::Compared) {
                    return Some(why);
                }
            }
        }
        None
    }
}

/// The UUID in its text form for `sstable metadata --json` (`null` when none).
fn uuid_text<S: serde::Serializer>(
    uuid: &Option<TableUuid>,
    s: S,
) -> std::result::Result<S::Ok, S::Error> {
    match uuid {
        Some(u) => s.collect_str(u),
        None => s.serialize_none(),
    }
}

/// Whether [`differs`] compares the columns' names (not for key columns,
/// which a rename may have given another name).
#[derive(PartialEq, Eq)]
enum Names {
    Compared,
    MayDiffer,
}

fn differs(f: &IdentityColumn, s: &IdentityColumn, names: Names) -> Option<String> {
    if names == Names::Compared && f.name != s.name {
        return Some(format!(
            "column {} of the file is column {} in the schema",
            f.name, s.name
        ));
    }
    // Compared by CQL name: a UDT column's descriptor carries the type's
    // fields, which ALTER TYPE changes without touching stored values.
    let (ft, st) = (f.type_name(), s.type_name());
    if ft != st {
        return Some(format!(
            "column {} is {ft} in the file, {st} in the schema",
            f.name
        ));
    }
    if f.role != s.role {
        return Some(format!(
            "column {} is {} in the file, {} in the schema",
            f.name,
            f.role.describe(),
            s.role.describe()
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::types::CqlType;

    fn schema(v: CqlType) -> TableSchema {
        TableSchema::builder("ks", "t")
            .partition_key("k", CqlType::Int)
            .clustering("c", CqlType::Text, crate::schema::Order::Desc)
            .column("v", v)
            .id(7)
            .build()
            .unwrap()
    }

    #[test]
    fn version_10_carries_the_table_uuid_and_older_versions_none() {
        let mut id = SSTableIdentity::for_schema(&schema(CqlType::Int), 3);
        id.table_uuid = Some(TableUuid([0xa5; 16]));
        let b = id.encode(10);
        assert_eq!(SSTableIdentity::decode(&b).unwrap(), (id.clone(), 10));
        // 16 bytes after the table id (docs/FORMAT.md, "Identity header").
        assert_eq!(&b[24..40], &[0xa5; 16]);
        let mut v9 = id.clone();
        v9.table_uuid = None;
        assert_eq!(b.len(), v9.encode(9).len() + 16);
        assert_eq!(
            SSTableIdentity::decode(&v9.encode(9)).unwrap(),
            (v9.clone(), 9)
        );
        // No UUID in a version-10 header: 16 zero bytes, read as none.
        assert_eq!(SSTableIdentity::decode(&v9.encode(10)).unwrap(), (v9, 10));
    }

    #[test]
    fn renamed_key_columns_stay_compatible_and_their_types_still_count() {
        let id = SSTableIdentity::for_schema(&schema(CqlType::Int), 1);
        let renamed = schema(CqlType::Int)
            .with_column_renamed("k", "key")
            .unwrap()
            .with_column_renamed("c", "cc")
            .unwrap();
        assert!(id.column_mismatch(&renamed).is_none());
        let retyped = TableSchema::builder("ks", "t")
            .partition_key("key", CqlType::BigInt)
            .clustering("c", CqlType::Text, crate::schema::Order::Desc)
            .column("v", CqlType::Int)
            .id(7)
            .build()
            .unwrap();
        assert_eq!(
            id.column_mismatch(&retyped).unwrap(),
            "column k is int in the file, bigint in the schema"
        );
        let reordered = TableSchema::builder("ks", "t")
            .partition_key("k", CqlType::Int)
            .clustering("c", CqlType::Text, crate::schema::Order::Asc)
            .column("v", CqlType::Int)
            .id(7)
            .build()
            .unwrap();
        assert!(id.column_mismatch(&reordered).is_some());
        // Regular columns are not renamed: their names still count.
        assert!(schema(CqlType::Int).with_column_renamed("v", "w").is_err());
        assert!(schema(CqlType::Int).with_column_renamed("k", "v").is_err());
    }

    #[test]
    fn columns_the_schema_never_had_are_named() {
        let id = SSTableIdentity::for_schema(
            &schema(CqlType::Int)
                .with_column_added("w", CqlType::Blob, false)
                .unwrap(),
            1,
        );
        let older = schema(CqlType::Int);
        let unknown: Vec<&str> = id
            .columns_unknown_to(&older)
            .iter()
            .map(|c| c.name.as_str())
            .collect();
        assert_eq!(unknown, ["w"]);
        // A column dropped since is not unknown: its id is below the next one.
        let dropped = older
            .with_column_added("w", CqlType::Blob, false)
            .unwrap()
            .with_column_dropped("w")
            .unwrap();
        assert!(id.columns_unknown_to(&dropped).is_empty());
    }

    #[test]
    fn round_trip_and_every_bit_checked() {
        let mut id = SSTableIdentity::for_schema(&schema(CqlType::Int), 42);
        id.chunk_length_bytes = 4096;
        id.codec = Codec::Zstd { level: 3 };
        id.min_timestamp = -5;
        id.min_local_deletion = 1_700_000_000;
        id.min_ttl = 9;
        let b = id.encode(2);
        assert_eq!(SSTableIdentity::decode(&b).unwrap(), (id.clone(), 2));
        for bit in 0..b.len() * 8 {
            let mut bad = b.clone();
            bad[bit / 8] ^= 1 << (bit % 8);
            assert!(SSTableIdentity::decode(&bad).is_err(), "bit {bit}");
        }
        // Version 8 adds the row-timestamp width after the base's TTL.
        id.row_ts_bytes = 3;
        let b8 = id.encode(8);
        assert_eq!(SSTableIdentity::decode(&b8).unwrap(), (id.clone(), 8));
        assert_eq!(b8.len(), b.len() + 1);
        let mut v7 = id.clone();
        v7.row_ts_bytes = 0;
        assert_eq!(SSTableIdentity::decode(&v7.encode(7)).unwrap(), (v7, 7));
        let mut too_wide = id.clone();
        too_wide.row_ts_bytes = 9;
        let err = SSTableIdentity::decode(&too_wide.encode(8)).unwrap_err();
        assert!(err.contains("beyond 8 bytes"), "{err}");
        assert!(id.column_mismatch(&schema(CqlType::Int)).is_none());
        let why = id.column_mismatch(&schema(CqlType::Text)).unwrap();
        assert_eq!(why, "column v is int in the file, text in the schema");
        // A column added later is compatible; one dropped later too.
        let added = schema(CqlType::Int)
            .with_column_added("w", CqlType::Blob, false)
            .unwrap();
        assert!(id.column_mismatch(&added).is_none());
        let dropped = schema(CqlType::Int).with_column_dropped("v").unwrap();
        assert!(id.column_mismatch(&dropped).is_none());
    }
}
