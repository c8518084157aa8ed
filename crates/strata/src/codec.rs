//! The codec and chunk settings of an sstable, as values: which block
//! compressor, which level, how long a chunk. The table options (`options`)
//! choose them; the sstable writer and reader (`sstable::compression`) apply
//! them. They live here, below both, so that neither layer depends on the other
//! for a type (the module graph has no cycles: docs/ARCHITECTURE.md).
//!
//! Invariants:
//! 1. Codec ids are written to disk and are **never renumbered**: 0 none, 1 LZ4,
//!    2 zstd (`sstable::compression` states the stored layout).
//! 2. [`CompressionParams::validate`] is the one check of a setting, used at
//!    table creation, ALTER and sstable creation alike.

/// The block compressor of an sstable (Cassandra's `compression = {'class': ...}`).
///
/// Recorded per sstable in its statistics and per chunk in the chunk's codec byte;
/// changing a table's codec therefore never needs to rewrite existing sstables.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub enum Codec {
    /// `'enabled': 'false'`.
    None,
    /// `LZ4Compressor`, Cassandra's default: ~4x faster to compress than zstd at
    /// a lower ratio.
    Lz4,
    /// `ZstdCompressor` with `compression_level` -7..=22 (default 3 in Cassandra).
    Zstd { level: i32 },
}

/// Lowest and highest zstd levels accepted (the range Cassandra's ZstdCompressor
/// exposes; negative levels are zstd's "fast" modes).
pub const ZSTD_MIN_LEVEL: i32 = -7;
pub const ZSTD_MAX_LEVEL: i32 = 22;

/// On-disk codec ids (invariant 1): never renumber.
pub const CODEC_ID_NONE: u8 = 0;
pub const CODEC_ID_LZ4: u8 = 1;
pub const CODEC_ID_ZSTD: u8 = 2;

impl Codec {
    /// The on-disk id (invariant 1). The zstd level is not part of the id: a reader
    /// does not need it.
    pub fn id(self) -> u8 {
        match self {
            Codec::None => CODEC_ID_NONE,
            Codec::Lz4 => CODEC_ID_LZ4,
            Codec::Zstd { .. } => CODEC_ID_ZSTD,
        }
    }

    /// The codec for an on-disk id; zstd gets `level` (use 0 when unknown).
    pub fn from_id(id: u8, zstd_level: i32) -> Option<Codec> {
        match id {
            CODEC_ID_NONE => Some(Codec::None),
            CODEC_ID_LZ4 => Some(Codec::Lz4),
            CODEC_ID_ZSTD => Some(Codec::Zstd { level: zstd_level }),
            _ => None,
        }
    }

    /// The zstd level, 0 for other codecs (serialized beside the id in the stats).
    pub fn level(self) -> i32 {
        match self {
            Codec::Zstd { level } => level,
            _ => 0,
        }
    }

    /// Checks the zstd level range; the error names the option.
    pub fn validate(self) -> crate::Result<()> {
        if let Codec::Zstd { level } = self {
            if !(ZSTD_MIN_LEVEL..=ZSTD_MAX_LEVEL).contains(&level) {
                return Err(crate::Error::option(
                    "compression_level",
                    format!("zstd level {level} outside {ZSTD_MIN_LEVEL}..={ZSTD_MAX_LEVEL}"),
                ));
            }
        }
        Ok(())
    }
}

/// Compression options of an sstable (Cassandra's table option `compression`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompressionParams {
    pub codec: Codec,
    /// Uncompressed bytes per chunk (Cassandra's `chunk_length_in_kb`, default
    /// 16 KiB). Larger chunks compress better but every point read decompresses a
    /// whole chunk: 16 KiB holds ~250 of the seeds' 60-byte partitions.
    pub chunk_length_bytes: u32,
}

/// Smallest and largest accepted chunk lengths: below 256 B the per-chunk overhead
/// (5 bytes + an offset-table entry) dominates; above 16 MiB a point read
/// decompresses absurd amounts.
pub const MIN_CHUNK_LENGTH_BYTES: u32 = 256;
pub const MAX_CHUNK_LENGTH_BYTES: u32 = 16 << 20;

impl Default for CompressionParams {
    fn default() -> Self {
        CompressionParams {
            codec: Codec::Lz4,
            chunk_length_bytes: 16 * 1024,
        }
    }
}

impl CompressionParams {
    pub fn validate(&self) -> crate::Result<()> {
        self.codec.validate()?;
        if !(MIN_CHUNK_LENGTH_BYTES..=MAX_CHUNK_LENGTH_BYTES).contains(&self.chunk_length_bytes) {
            return Err(crate::Error::option(
                "chunk_length_in_kb",
                format!(
                    "chunk length {} bytes outside {MIN_CHUNK_LENGTH_BYTES}..={MAX_CHUNK_LENGTH_BYTES}",
                    self.chunk_length_bytes
                ),
            ));
        }
        Ok(())
    }
}
