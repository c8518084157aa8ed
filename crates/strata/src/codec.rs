//! The codec and chunk settings of an sstable, as values: which block
//! compressor, which level, how long a chunk. The table options (`options`)
//! choose them; the sstable writer and reader (`sstable::compression`) apply
//! them. They live here, below both, so that neither layer depends on the other
//! for a type (the module graph has no cycles: docs/ARCHITECTURE.md).
//!
//! Invariants:
//! 1. Codec ids are written to disk and are **never renumbered**: 0 none, 1 LZ4,
//!    2 zstd, 3 zstd with a dictionary, 4 LZ4 with a dictionary
//!    (`sstable::compression` states the stored layout). Where a codec is
//!    recorded per sstable ([`Codec::encode`]), ids 3 and 4 are followed by the
//!    dictionary's id: files written before dictionaries never hold those ids,
//!    so the extension changes nothing they contain.
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
    /// `ZstdWithDictsCompressor` (Cassandra 6: `ZstdDictionaryCompressor`): zstd
    /// primed with the table's trained dictionary `dict` (`crate::dictionary`),
    /// which every chunk of the sstable shares.
    ZstdDict { level: i32, dict: u32 },
    /// `LZ4WithDictsCompressor`: LZ4 whose match window starts with the last
    /// 64 KiB of dictionary `dict`.
    Lz4Dict { dict: u32 },
}

/// Lowest and highest zstd levels accepted (the range Cassandra's ZstdCompressor
/// exposes; negative levels are zstd's "fast" modes).
pub const ZSTD_MIN_LEVEL: i32 = -7;
pub const ZSTD_MAX_LEVEL: i32 = 22;

/// On-disk codec ids (invariant 1): never renumber.
pub const CODEC_ID_NONE: u8 = 0;
pub const CODEC_ID_LZ4: u8 = 1;
pub const CODEC_ID_ZSTD: u8 = 2;
pub const CODEC_ID_ZSTD_DICT: u8 = 3;
pub const CODEC_ID_LZ4_DICT: u8 = 4;

impl Codec {
    /// The on-disk id (invariant 1). The zstd level is not part of the id: a reader
    /// does not need it.
    pub fn id(self) -> u8 {
        match self {
            Codec::None => CODEC_ID_NONE,
            Codec::Lz4 => CODEC_ID_LZ4,
            Codec::Zstd { .. } => CODEC_ID_ZSTD,
            Codec::ZstdDict { .. } => CODEC_ID_ZSTD_DICT,
            Codec::Lz4Dict { .. } => CODEC_ID_LZ4_DICT,
        }
    }

    /// The codec for an on-disk id without a dictionary; zstd gets `level` (use 0
    /// when unknown). Dictionary codecs need their id too: [`Codec::decode`].
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
            Codec::Zstd { level } | Codec::ZstdDict { level, .. } => level,
            _ => 0,
        }
    }

    /// The dictionary the codec compresses with, if any.
    pub fn dictionary(self) -> Option<u32> {
        match self {
            Codec::ZstdDict { dict, .. } | Codec::Lz4Dict { dict } => Some(dict),
            _ => None,
        }
    }

    /// The same codec bound to dictionary `dict` (codecs without one unchanged).
    pub fn with_dictionary(self, dict: u32) -> Codec {
        match self {
            Codec::ZstdDict { level, .. } => Codec::ZstdDict { level, dict },
            Codec::Lz4Dict { .. } => Codec::Lz4Dict { dict },
            other => other,
        }
    }

    /// What a dictionary codec writes while its table has no dictionary yet:
    /// the same compressor without one (ScyllaDB does the same until its first
    /// training). Other codecs unchanged.
    pub fn without_dictionary(self) -> Codec {
        match self {
            Codec::ZstdDict { level, .. } => Codec::Zstd { level },
            Codec::Lz4Dict { .. } => Codec::Lz4,
            other => other,
        }
    }

    /// Whether an sstable written with `self` follows a table set to `target`:
    /// same compressor and level. A dictionary codec is followed by an sstable
    /// with any dictionary (an older one still serves its reads; compaction and
    /// `upgradesstables -a` move data to the newest), not by one without.
    pub fn same_setting(self, target: Codec) -> bool {
        self.id() == target.id() && self.level() == target.level()
    }

    /// Appends the per-sstable record: id, zigzag level, and for dictionary
    /// codecs the dictionary id (invariant 1).
    pub fn encode(self, out: &mut Vec<u8>) {
        out.push(self.id());
        crate::encoding::put_zigzag(out, i64::from(self.level()));
        if let Some(dict) = self.dictionary() {
            crate::encoding::put_varint(out, u64::from(dict));
        }
    }

    /// Reads what [`Codec::encode`] wrote.
    pub fn decode(r: &mut crate::encoding::Reader<'_>) -> crate::encoding::DecodeResult<Codec> {
        use crate::encoding::DecodeError;
        let id = r.u8()?;
        let level =
            i32::try_from(r.zigzag()?).map_err(|_| DecodeError("codec level out of range"))?;
        let mut dict =
            || u32::try_from(r.varint()?).map_err(|_| DecodeError("dictionary id out of range"));
        match id {
            CODEC_ID_ZSTD_DICT => Ok(Codec::ZstdDict {
                level,
                dict: dict()?,
            }),
            CODEC_ID_LZ4_DICT => Ok(Codec::Lz4Dict { dict: dict()? }),
            _ => Codec::from_id(id, level).ok_or(DecodeError("unknown codec id")),
        }
    }

    /// Checks the zstd level range; the error names the option.
    pub fn validate(self) -> crate::Result<()> {
        if let Codec::Zstd { level } | Codec::ZstdDict { level, .. } = self {
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

/// Bytes a stored chunk adds to its payload: the codec byte and the crc
/// (`sstable::compression`'s layout).
pub const CHUNK_OVERHEAD_BYTES: usize = 1 + 4;

/// [`CompressionParams::max_compressed_bytes`] when every chunk is kept
/// compressed (`min_compress_ratio` 0, Cassandra's default).
pub const NO_COMPRESSED_LIMIT: u32 = u32::MAX;

/// Cassandra's `calcMaxCompressedLength`: `ceil(min(chunk / ratio, INT_MAX))`,
/// the compressed length from which a chunk is stored uncompressed. A ratio
/// of 0 (the default) means no limit: every chunk stays compressed, even one
/// that grew.
pub fn max_compressed_length(chunk_length_bytes: u32, min_compress_ratio: f64) -> u32 {
    if min_compress_ratio <= 0.0 {
        return NO_COMPRESSED_LIMIT;
    }
    (chunk_length_bytes as f64 / min_compress_ratio)
        .min(i32::MAX as f64)
        .ceil() as u32
}

/// Whether a chunk whose compressed payload is `payload_len` bytes is kept
/// compressed: only if it is shorter than `max_compressed_bytes`, as
/// Cassandra's `CompressedSequentialWriter` (`compressedLength >=
/// maxCompressedLength` stores it raw). The one rule the writer applies and
/// every estimate of stored size assumes.
pub fn keeps_compressed(payload_len: usize, max_compressed_bytes: u32) -> bool {
    payload_len < max_compressed_bytes as usize
}

/// Stored bytes of a chunk of `input_len` bytes whose compressed payload is
/// `payload_len` (`None`: it could not be compressed), under
/// `max_compressed_bytes`.
pub fn stored_chunk_bytes(
    input_len: usize,
    payload_len: Option<usize>,
    max_compressed_bytes: u32,
) -> usize {
    let payload = payload_len
        .filter(|&n| keeps_compressed(n, max_compressed_bytes))
        .unwrap_or(input_len);
    payload + CHUNK_OVERHEAD_BYTES
}

fn no_compressed_limit() -> u32 {
    NO_COMPRESSED_LIMIT
}

/// Compression options of an sstable (Cassandra's table option `compression`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CompressionParams {
    pub codec: Codec,
    /// Uncompressed bytes per chunk (Cassandra's `chunk_length_in_kb`, default
    /// 16 KiB). Larger chunks compress better but every point read decompresses a
    /// whole chunk: 16 KiB holds ~250 of the seeds' 60-byte partitions.
    pub chunk_length_bytes: u32,
    /// A chunk whose compressed form is this long or longer is stored raw
    /// (Cassandra's `maxCompressedLength`, from the table's
    /// `min_compress_ratio` by [`max_compressed_length`]);
    /// [`NO_COMPRESSED_LIMIT`] keeps every chunk compressed. A writer's
    /// choice only: each chunk records its own codec, so readers need it not.
    #[serde(default = "no_compressed_limit")]
    pub max_compressed_bytes: u32,
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
            max_compressed_bytes: NO_COMPRESSED_LIMIT,
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

/// The CQL-like name of a codec setting.
pub fn setting_name(codec: Codec, chunk_length_bytes: u64) -> String {
    let c = match codec {
        Codec::None => "none".to_string(),
        Codec::Lz4 => "LZ4Compressor".to_string(),
        Codec::Zstd { level } => format!("ZstdCompressor level {level}"),
        // Dictionary 0 is never stored: an estimate or a training's
        // measurement, named without an id.
        Codec::ZstdDict { level, dict: 0 } => format!("ZstdWithDictsCompressor level {level}"),
        Codec::ZstdDict { level, dict } => {
            format!("ZstdWithDictsCompressor level {level}, dictionary {dict}")
        }
        Codec::Lz4Dict { dict: 0 } => "LZ4WithDictsCompressor".to_string(),
        Codec::Lz4Dict { dict } => format!("LZ4WithDictsCompressor, dictionary {dict}"),
    };
    format!("{c}, {} KiB chunks", chunk_length_bytes / 1024)
}
