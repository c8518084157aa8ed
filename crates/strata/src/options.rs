//! Table options, written and validated the CQL way.
//!
//! Operators type options as in `CREATE TABLE ... WITH` / `ALTER TABLE ... WITH`:
//!
//! ```text
//! compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 4}
//!   AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16}
//!   AND gc_grace_seconds = 864000 AND bloom_filter_fp_chance = 0.01
//! ```
//!
//! The syntax (`AND`-separated settings whose values are strings in single or
//! double quotes, bare or quoted numbers, booleans, and `{key: value, ...}` map
//! literals) is parsed by `cql::ddl` with the `cql` lexer; this module owns the
//! typed [`TableOptions`] the settings produce and their validation, including
//! the per-strategy validation of compaction sub-options. Option names, defaults and
//! ranges follow Cassandra; every field documents its default, unit, trade-off and
//! the Cassandra or RocksDB name for the same knob.
//!
//! Pure values, no I/O, no interior mutability: safe to share between threads.
//!
//! Invariants:
//! 1. Every [`TableOptions`] produced by this module (by [`TableOptions::parse`],
//!    [`TableOptions::apply`], [`Default`], or deserialization through
//!    [`TableOptions::validate`]) satisfies every documented range; later code
//!    (flush, compaction, sstable writers) may rely on that without re-checking.
//! 2. A [`CompactionOptions`] can only be built validated ([`CompactionOptions::new`],
//!    [`CompactionOptions::from_map`], serde): it holds only sub-options its class
//!    accepts, so the typed getters ([`CompactionOptions::lcs`], ...) are infallible.
//! 3. Bad input changes nothing: [`TableOptions::apply`] returns a new value or an
//!    error naming the option (and, for text, the byte position); `self` is untouched.
//! 4. `TableOptions::parse(&opts.to_string()) == Ok(opts)` (Display round-trips).
//! 5. A map-valued option (`compaction`, `compression`) given in an ALTER replaces
//!    the whole previous map, as in Cassandra: sub-options not repeated return to
//!    their defaults.
//!
//! The enums here are persisted by name in `schema.json` (serde): variants may be
//! added, never renamed.

use std::collections::BTreeMap;
use std::fmt;

use crate::cql::ddl::{parse_settings, Setting};
use crate::cql::lexer::{quote, Lexer};
use crate::cql::literal::Literal;
use crate::data::MAX_TTL_SECONDS;
use crate::error::{Error, Result};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * 1024;
/// The largest LCS `l0_compaction_trigger`: an L0 compaction takes at most
/// this many sstables (`compaction::lcs::MAX_COMPACTING_L0`, which checks the
/// two agree), so a larger trigger could never fire.
pub const MAX_L0_COMPACTION_TRIGGER: u64 = 32;

// ---------------------------------------------------------------------------
// Table options
// ---------------------------------------------------------------------------

/// Per-table options. See the module docs for the syntax and invariants.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct TableOptions {
    /// Compaction strategy and its sub-options. Default: SizeTieredCompactionStrategy
    /// with Cassandra's defaults. Cassandra: `compaction`.
    pub compaction: CompactionOptions,
    /// Block compression. Default: LZ4, 16 KiB chunks (Cassandra 4.0's default).
    /// Cassandra: `compression`; RocksDB: `compression` + `block_size`.
    pub compression: CompressionOptions,
    /// TTL applied to writes that carry none. Unit: seconds; default 0 (no TTL);
    /// range 0..=[`MAX_TTL_SECONDS`] (20 years, Cassandra's cap). A table default TTL
    /// lets time-window strategies drop whole sstables without reading them.
    /// Cassandra: `default_time_to_live`; RocksDB: `DBWithTTL`'s `ttl`.
    pub default_time_to_live_seconds: u32,
    /// How long a tombstone must be kept before compaction may purge it. Unit: seconds;
    /// default 864000 (10 days, Cassandra's). Shorter reclaims space sooner; it must
    /// exceed the longest time a replica can miss a delete (repair interval) or deleted
    /// data can resurrect. Cassandra: `gc_grace_seconds`.
    pub gc_grace_seconds: u32,
    /// Target false-positive probability of the per-sstable partition bloom filter.
    /// Unitless, range (0, 1]; default 0.01 (Cassandra's default for STCS). Lower costs
    /// memory (about 9.6 bits/key at 0.01, 14.4 at 0.001); 1.0 means no filter at all.
    /// Cassandra: `bloom_filter_fp_chance`; RocksDB: `bits_per_key` of the bloom policy.
    pub bloom_filter_fp_chance: f64,
    /// Memtable size that triggers a flush. Unit: bytes; default 64 MiB; at least
    /// 64 KiB, a multiple of 1 KiB, at most 64 GiB. Larger memtables mean fewer, larger
    /// L0 sstables (less write amplification) but more memory and longer commit-log
    /// replay. Written as `memtable_flush_threshold_mb` (>= 1), or
    /// `memtable_flush_threshold_kb` (>= 64, meant for tests). Strata option; RocksDB:
    /// `write_buffer_size`; Cassandra sizes memtables globally (`memtable_heap_space_in_mb`).
    pub memtable_flush_threshold_bytes: u64,
    /// Largest accepted serialized column value. Unit: bytes; default 256 MiB
    /// (Cassandra's `max_value_size_in_mb` default in cassandra.yaml); range 1 KiB ..=
    /// 2047 MiB, a multiple of 1 KiB. A write with a larger value is rejected whole.
    /// Higher allows CFS-style large blocks but bounds memory per mutation less
    /// tightly. Written as `max_value_size_in_mb` (1..=2047), or `max_value_size_in_kb`
    /// (for tests). Cassandra: `max_value_size_in_mb` (global there, per table here).
    pub max_value_size_bytes: u64,
    /// A free-text description of the table, stored and shown (`DESCRIBE`,
    /// `system_schema.tables`); it changes nothing else. Default empty.
    /// Cassandra: `comment`.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub comment: String,
    /// Flush a memtable this long after it was created even if it is not full.
    /// Unit: milliseconds (engine clock); default 0 = off; 0..=2147483647 (a
    /// Java int, as Cassandra). Bounds how long writes sit only in memory and
    /// the commit log (replay time), and how long a time-window table's
    /// window stays open in a memtable; shorter means more, smaller flushes.
    /// Checked after writes and about once a second by the flush thread.
    /// Cassandra: `memtable_flush_period_in_ms`.
    #[serde(default)]
    pub memtable_flush_period_in_ms: u32,
}

/// Default of [`TableOptions::gc_grace_seconds`]: 10 days, as Cassandra.
pub const DEFAULT_GC_GRACE_SECONDS: u32 = 864_000;
/// Default of [`TableOptions::bloom_filter_fp_chance`].
pub const DEFAULT_BLOOM_FILTER_FP_CHANCE: f64 = 0.01;
/// Default of [`TableOptions::memtable_flush_threshold_bytes`].
pub const DEFAULT_MEMTABLE_FLUSH_THRESHOLD_BYTES: u64 = 64 * MIB;
/// Default of [`TableOptions::max_value_size_bytes`].
pub const DEFAULT_MAX_VALUE_SIZE_BYTES: u64 = 256 * MIB;

const MIN_MEMTABLE_BYTES: u64 = 64 * KIB;
const MAX_MEMTABLE_BYTES: u64 = 64 * 1024 * MIB;
const MIN_VALUE_SIZE_BYTES: u64 = KIB;
/// Cassandra requires `max_value_size_in_mb < 2048` (it is a Java int of bytes).
const MAX_VALUE_SIZE_BYTES: u64 = 2047 * MIB;

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            compaction: CompactionOptions::default(),
            compression: CompressionOptions::default(),
            default_time_to_live_seconds: 0,
            gc_grace_seconds: DEFAULT_GC_GRACE_SECONDS,
            bloom_filter_fp_chance: DEFAULT_BLOOM_FILTER_FP_CHANCE,
            memtable_flush_threshold_bytes: DEFAULT_MEMTABLE_FLUSH_THRESHOLD_BYTES,
            max_value_size_bytes: DEFAULT_MAX_VALUE_SIZE_BYTES,
            comment: String::new(),
            memtable_flush_period_in_ms: 0,
        }
    }
}

impl TableOptions {
    /// Parses an `AND`-separated option list on top of the defaults. Empty text gives
    /// the defaults.
    pub fn parse(text: &str) -> Result<TableOptions> {
        TableOptions::default().apply(text)
    }

    /// ALTER: returns `self` with the options in `text` changed (invariants 3 and 5).
    pub fn apply(&self, text: &str) -> Result<TableOptions> {
        let mut lexer = Lexer::new(text);
        let settings = parse_settings(&mut lexer)?;
        self.apply_settings(&settings)
    }

    /// Applies already-parsed settings (shared with the CREATE TABLE parser).
    pub(crate) fn apply_settings(&self, settings: &[Setting]) -> Result<TableOptions> {
        let mut out = self.clone();
        let mut seen: Vec<&str> = Vec::new();
        for s in settings {
            if seen.contains(&s.name.as_str()) {
                return Err(Error::option(
                    &s.name,
                    format!("given twice (at byte {})", s.name_pos),
                ));
            }
            seen.push(&s.name);
            out.apply_one(s)?;
        }
        out.validate()?;
        Ok(out)
    }

    fn apply_one(&mut self, s: &Setting) -> Result<()> {
        let at = |e: Error| with_position(e, s.value_pos);
        match s.name.as_str() {
            "compaction" => {
                let map = s.value.as_map(&s.name, s.value_pos)?;
                self.compaction = CompactionOptions::from_map(&map).map_err(at)?;
            }
            "compression" => {
                let map = s.value.as_map(&s.name, s.value_pos)?;
                self.compression = CompressionOptions::from_map(&map).map_err(at)?;
            }
            "default_time_to_live" => {
                let v = s.value.as_scalar(&s.name, s.value_pos)?;
                self.default_time_to_live_seconds =
                    parse_int(&s.name, &v, 0, MAX_TTL_SECONDS as u64).map_err(at)? as u32;
            }
            "gc_grace_seconds" => {
                let v = s.value.as_scalar(&s.name, s.value_pos)?;
                self.gc_grace_seconds =
                    parse_int(&s.name, &v, 0, u32::MAX as u64).map_err(at)? as u32;
            }
            "bloom_filter_fp_chance" => {
                let v = s.value.as_scalar(&s.name, s.value_pos)?;
                let p = parse_float(&s.name, &v).map_err(at)?;
                if !(p > 0.0 && p <= 1.0) {
                    return Err(at(Error::option(
                        &s.name,
                        format!("must be in (0, 1], got {v}"),
                    )));
                }
                self.bloom_filter_fp_chance = p;
            }
            "memtable_flush_threshold_mb" | "memtable_flush_threshold_kb" => {
                let (unit, min) = if s.name.ends_with("_mb") {
                    (MIB, 1)
                } else {
                    (KIB, 64)
                };
                let v = s.value.as_scalar(&s.name, s.value_pos)?;
                let n = parse_int(&s.name, &v, min, MAX_MEMTABLE_BYTES / unit).map_err(at)?;
                self.memtable_flush_threshold_bytes = n * unit;
            }
            "comment" => {
                self.comment = s.value.as_scalar(&s.name, s.value_pos)?;
            }
            "memtable_flush_period_in_ms" => {
                let v = s.value.as_scalar(&s.name, s.value_pos)?;
                self.memtable_flush_period_in_ms =
                    parse_int(&s.name, &v, 0, i32::MAX as u64).map_err(at)? as u32;
            }
            "max_value_size_in_mb" | "max_value_size_in_kb" => {
                let (unit, min) = if s.name.ends_with("_mb") {
                    (MIB, 1)
                } else {
                    (KIB, 1)
                };
                let v = s.value.as_scalar(&s.name, s.value_pos)?;
                let n = parse_int(&s.name, &v, min, MAX_VALUE_SIZE_BYTES / unit).map_err(at)?;
                self.max_value_size_bytes = n * unit;
            }
            name if CASSANDRA_DEFAULT_ONLY.iter().any(|(n, _, _)| *n == name) => {
                accept_cassandra_default(s)?;
            }
            other => {
                return Err(Error::option(
                    other,
                    format!(
                        "unknown table option (at byte {}); known: compaction, compression, \
                         default_time_to_live, gc_grace_seconds, bloom_filter_fp_chance, \
                         memtable_flush_threshold_mb, memtable_flush_threshold_kb, \
                         memtable_flush_period_in_ms, max_value_size_in_mb, max_value_size_in_kb, comment; \
                         at Cassandra's default only: {}",
                        s.name_pos,
                        CASSANDRA_DEFAULT_ONLY.map(|(n, _, _)| n).join(", ")
                    ),
                ))
            }
        }
        Ok(())
    }

    /// Checks every range (invariant 1). Called after parsing and by the catalog after
    /// deserializing, since the pub fields can be set directly.
    pub fn validate(&self) -> Result<()> {
        self.compression.validate()?;
        if self.default_time_to_live_seconds > MAX_TTL_SECONDS {
            return Err(Error::option(
                "default_time_to_live",
                format!(
                    "must be at most {MAX_TTL_SECONDS} (20 years), got {}",
                    self.default_time_to_live_seconds
                ),
            ));
        }
        let p = self.bloom_filter_fp_chance;
        if !(p > 0.0 && p <= 1.0) {
            return Err(Error::option(
                "bloom_filter_fp_chance",
                format!("must be in (0, 1], got {p}"),
            ));
        }
        let m = self.memtable_flush_threshold_bytes;
        if !(MIN_MEMTABLE_BYTES..=MAX_MEMTABLE_BYTES).contains(&m) || !m.is_multiple_of(KIB) {
            return Err(Error::option(
                "memtable_flush_threshold_mb",
                format!("must be a multiple of 1 KiB between 64 KiB and 64 GiB, got {m} bytes"),
            ));
        }
        if self.memtable_flush_period_in_ms > i32::MAX as u32 {
            return Err(Error::option(
                "memtable_flush_period_in_ms",
                format!(
                    "must be in 0..={}, got {}",
                    i32::MAX,
                    self.memtable_flush_period_in_ms
                ),
            ));
        }
        let v = self.max_value_size_bytes;
        if !(MIN_VALUE_SIZE_BYTES..=MAX_VALUE_SIZE_BYTES).contains(&v) || !v.is_multiple_of(KIB) {
            return Err(Error::option(
                "max_value_size_in_mb",
                format!("must be a multiple of 1 KiB between 1 KiB and 2047 MiB, got {v} bytes"),
            ));
        }
        Ok(())
    }
}

/// The CQL form, `AND`-separated, every option spelled out (invariant 4).
impl fmt::Display for TableOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.write_cql(f, " AND ")
    }
}

impl TableOptions {
    /// Writes the settings joined by `separator` (`" AND "` for Display; the DDL
    /// printer puts each on its own line).
    pub(crate) fn write_cql(&self, f: &mut dyn fmt::Write, separator: &str) -> fmt::Result {
        write!(
            f,
            "compaction = {}{separator}compression = {}",
            self.compaction, self.compression
        )?;
        write!(
            f,
            "{separator}default_time_to_live = {}",
            self.default_time_to_live_seconds
        )?;
        write!(f, "{separator}gc_grace_seconds = {}", self.gc_grace_seconds)?;
        // `{}` on f64 prints the shortest text that parses back to the same bits.
        write!(
            f,
            "{separator}bloom_filter_fp_chance = {}",
            self.bloom_filter_fp_chance
        )?;
        let sizes = [
            (
                "memtable_flush_threshold_mb",
                "memtable_flush_threshold_kb",
                self.memtable_flush_threshold_bytes,
            ),
            (
                "max_value_size_in_mb",
                "max_value_size_in_kb",
                self.max_value_size_bytes,
            ),
        ];
        if !self.comment.is_empty() {
            write!(
                f,
                "{separator}comment = {}",
                crate::cql::lexer::quote(&self.comment)
            )?;
        }
        write!(
            f,
            "{separator}memtable_flush_period_in_ms = {}",
            self.memtable_flush_period_in_ms
        )?;
        for (mb_name, kb_name, bytes) in sizes {
            // Whole MiB are written in the operator's usual unit; anything else was
            // necessarily given in KiB (validate requires a multiple of 1 KiB).
            if bytes.is_multiple_of(MIB) {
                write!(f, "{separator}{mb_name} = {}", bytes / MIB)?;
            } else {
                write!(f, "{separator}{kb_name} = {}", bytes / KIB)?;
            }
        }
        Ok(())
    }
}

/// Appends " (at byte N)" to an option error's reason, so errors from map contents
/// point into the text the operator typed.
fn with_position(e: Error, pos: usize) -> Error {
    match e {
        Error::InvalidOption { option, reason } => Error::InvalidOption {
            option,
            reason: format!("{reason} (value at byte {pos})"),
        },
        other => other,
    }
}

// ---------------------------------------------------------------------------
// Compression
// ---------------------------------------------------------------------------

/// Block codec of an sstable. Recorded per sstable as well (DESIGN.md §8), so a
/// change applies to new sstables only until they are recompressed.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CompressorClass {
    /// No compression: `{'enabled': 'false'}` or `{'class': ''}`.
    None,
    /// Cassandra's `LZ4Compressor`: fast, ~2x on typical rows.
    #[serde(rename = "LZ4Compressor")]
    Lz4,
    /// Cassandra's `ZstdCompressor`: 5-10% smaller than LZ4 at level 3, more CPU.
    #[serde(rename = "ZstdCompressor")]
    Zstd,
    /// ScyllaDB's `ZstdWithDictsCompressor` (Cassandra 6:
    /// `ZstdDictionaryCompressor`): zstd primed with a dictionary trained on the
    /// table's data (`crate::dictionary`); what small rows need.
    #[serde(rename = "ZstdWithDictsCompressor")]
    ZstdWithDicts,
    /// ScyllaDB's `LZ4WithDictsCompressor`: LZ4 whose window starts with the
    /// table's dictionary.
    #[serde(rename = "LZ4WithDictsCompressor")]
    Lz4WithDicts,
}

impl CompressorClass {
    /// Cassandra's class name (`""` for none).
    pub fn name(&self) -> &'static str {
        match self {
            CompressorClass::None => "",
            CompressorClass::Lz4 => "LZ4Compressor",
            CompressorClass::Zstd => "ZstdCompressor",
            CompressorClass::ZstdWithDicts => "ZstdWithDictsCompressor",
            CompressorClass::Lz4WithDicts => "LZ4WithDictsCompressor",
        }
    }

    /// Whether the class compresses with a trained dictionary.
    pub fn uses_dictionary(&self) -> bool {
        matches!(
            self,
            CompressorClass::ZstdWithDicts | CompressorClass::Lz4WithDicts
        )
    }

    /// Whether `compression_level` applies.
    pub fn is_zstd(&self) -> bool {
        matches!(self, CompressorClass::Zstd | CompressorClass::ZstdWithDicts)
    }

    /// Accepts the short and the fully-qualified Cassandra names.
    pub fn parse(name: &str) -> Result<CompressorClass> {
        let short = name
            .strip_prefix("org.apache.cassandra.io.compress.")
            .unwrap_or(name);
        match short {
            "" => Ok(CompressorClass::None),
            s if s.eq_ignore_ascii_case("LZ4Compressor") => Ok(CompressorClass::Lz4),
            s if s.eq_ignore_ascii_case("ZstdCompressor") => Ok(CompressorClass::Zstd),
            s if s.eq_ignore_ascii_case("ZstdWithDictsCompressor")
                || s.eq_ignore_ascii_case("ZstdDictionaryCompressor") =>
            {
                Ok(CompressorClass::ZstdWithDicts)
            }
            s if s.eq_ignore_ascii_case("LZ4WithDictsCompressor") => Ok(CompressorClass::Lz4WithDicts),
            s if s.eq_ignore_ascii_case("SnappyCompressor") || s.eq_ignore_ascii_case("DeflateCompressor") => {
                Err(Error::option("class", format!("compressor '{name}' is not supported by Strata (use LZ4Compressor or ZstdCompressor)")))
            }
            _ => Err(Error::option("class", format!("unknown compressor '{name}'"))),
        }
    }
}

/// Compression sub-options (`compression = {...}`).
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct CompressionOptions {
    /// The codec. Default LZ4. Cassandra: `class` (`sstable_compression` before 3.0).
    pub class: CompressorClass,
    /// Uncompressed size of a compressed block. Unit: KiB; default 16 (Cassandra 4.0;
    /// 3.x used 64); a power of two in 1..=1024. Smaller chunks read less for a point
    /// read, larger ones compress better and index fewer blocks. Cassandra:
    /// `chunk_length_in_kb`; RocksDB: `block_size`.
    pub chunk_length_in_kb: u32,
    /// Zstd level, -7..=22 (negative levels are zstd's fast modes); default 3, zstd's
    /// and Cassandra's. Higher is smaller and slower to write; decompression speed
    /// barely changes. Only valid with ZstdCompressor. Cassandra: `compression_level`;
    /// RocksDB: `CompressionOptions::level`.
    pub compression_level: i32,
    /// Largest dictionary a training produces, bytes; default 64 KiB. Only with
    /// the dictionary classes. Cassandra 6: `training_max_dictionary_size`;
    /// RocksDB: `CompressionOptions::max_dict_bytes`.
    #[serde(default = "default_max_dictionary_bytes")]
    pub training_max_dictionary_size: u32,
    /// Most uncompressed data a training samples, bytes; default 10 MiB (zstd
    /// advises about 100x the dictionary). Cassandra 6:
    /// `training_max_total_sample_size`; RocksDB: `zstd_max_train_bytes`.
    #[serde(default = "default_max_sample_bytes")]
    pub training_max_total_sample_size: u64,
    /// A chunk is stored compressed only if `chunk_length / compressed length`
    /// is at least this; otherwise raw (no decompression on read). Default 0.0,
    /// Cassandra's: every chunk stays compressed, even one that grew. Either 0
    /// or >= 1 (1.1 keeps a chunk compressed when it saves at least ~9%).
    /// Higher stores more chunks raw: larger files, cheaper reads of them.
    /// Cassandra: `min_compress_ratio` (it stores the derived
    /// `maxCompressedLength`, `ceil(chunk / ratio)`, which the writer compares).
    #[serde(default)]
    pub min_compress_ratio: f64,
}

fn default_max_dictionary_bytes() -> u32 {
    crate::dictionary::DEFAULT_MAX_DICTIONARY_BYTES as u32
}

fn default_max_sample_bytes() -> u64 {
    crate::dictionary::DEFAULT_MAX_SAMPLE_BYTES as u64
}

/// Default of [`CompressionOptions::chunk_length_in_kb`].
pub const DEFAULT_CHUNK_LENGTH_KB: u32 = 16;
/// Default of [`CompressionOptions::compression_level`].
pub const DEFAULT_ZSTD_LEVEL: i32 = 3;

impl Default for CompressionOptions {
    fn default() -> Self {
        CompressionOptions {
            class: CompressorClass::Lz4,
            chunk_length_in_kb: DEFAULT_CHUNK_LENGTH_KB,
            compression_level: DEFAULT_ZSTD_LEVEL,
            training_max_dictionary_size: default_max_dictionary_bytes(),
            training_max_total_sample_size: default_max_sample_bytes(),
            min_compress_ratio: 0.0,
        }
    }
}

impl CompressionOptions {
    /// No compression.
    pub fn none() -> CompressionOptions {
        CompressionOptions {
            class: CompressorClass::None,
            ..CompressionOptions::default()
        }
    }

    /// Chunk length in bytes.
    pub fn chunk_length_bytes(&self) -> usize {
        self.chunk_length_in_kb as usize * 1024
    }

    /// What the sstable writer takes. Both sides accept the same ranges (a power of
    /// two 1..=1024 KiB lies within the writer's 256 B..=16 MiB; zstd -7..=22), so a
    /// validated option always gives valid parameters.
    pub fn params(&self) -> crate::codec::CompressionParams {
        let codec = match self.class {
            CompressorClass::None => crate::codec::Codec::None,
            CompressorClass::Lz4 => crate::codec::Codec::Lz4,
            CompressorClass::Zstd => crate::codec::Codec::Zstd {
                level: self.compression_level,
            },
            // Dictionary 0 stands for "the table's current one": the table
            // binds it (`Table::writer_options`); 0 is never a stored id.
            CompressorClass::ZstdWithDicts => crate::codec::Codec::ZstdDict {
                level: self.compression_level,
                dict: 0,
            },
            CompressorClass::Lz4WithDicts => crate::codec::Codec::Lz4Dict { dict: 0 },
        };
        let chunk_length_bytes = self.chunk_length_in_kb * 1024;
        crate::codec::CompressionParams {
            codec,
            chunk_length_bytes,
            max_compressed_bytes: crate::codec::max_compressed_length(
                chunk_length_bytes,
                self.min_compress_ratio,
            ),
        }
    }

    /// Builds from a `compression = {...}` map (string values, as Cassandra stores them).
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<CompressionOptions> {
        let mut out = CompressionOptions::default();
        if let Some(enabled) = map.get("enabled") {
            if !parse_bool("enabled", enabled)? {
                // Cassandra: "If the 'enabled' option is false, no other option may be given".
                if let Some(other) = map.keys().find(|k| k.as_str() != "enabled") {
                    return Err(Error::option(
                        other,
                        "cannot be combined with 'enabled': 'false'",
                    ));
                }
                return Ok(CompressionOptions::none());
            }
        }
        let class = map
            .get("class")
            .or_else(|| map.get("sstable_compression"))
            .ok_or_else(|| {
                Error::option(
                    "class",
                    "missing sub-option 'class' for the 'compression' option",
                )
            })?;
        out.class = CompressorClass::parse(class)?;
        let mut level_given = false;
        let mut training_given = None;
        for (k, v) in map {
            match k.as_str() {
                "enabled" | "class" | "sstable_compression" => {}
                "chunk_length_in_kb" | "chunk_length_kb" => {
                    out.chunk_length_in_kb = parse_int(k, v, 1, 1024)? as u32;
                }
                "compression_level" => {
                    out.compression_level = parse_signed(k, v, -7, 22)? as i32;
                    level_given = true;
                }
                "training_max_dictionary_size" => {
                    out.training_max_dictionary_size = parse_int(
                        k,
                        v,
                        crate::dictionary::MIN_DICTIONARY_BYTES as u64,
                        crate::dictionary::MAX_DICTIONARY_BYTES as u64,
                    )? as u32;
                    training_given = Some(k);
                }
                "training_max_total_sample_size" => {
                    out.training_max_total_sample_size = parse_int(
                        k,
                        v,
                        crate::dictionary::MIN_SAMPLE_BYTES as u64,
                        1 << 30,
                    )?;
                    training_given = Some(k);
                }
                "min_compress_ratio" => {
                    out.min_compress_ratio = parse_float(k, v)?;
                }
                // Cassandra's probability of verifying a chunk's checksum on read.
                // Strata verifies every chunk on every read (sstable invariant 2):
                // 1.0 is what it does, so it is accepted; a lower chance would
                // return unchecked data, so it is refused rather than ignored.
                "crc_check_chance" => {
                    let chance = parse_float(k, v)?;
                    if chance != 1.0 {
                        return Err(Error::option(
                            k,
                            format!(
                                "Strata verifies every chunk's checksum on every read; only 1.0 is supported, got {v}"
                            ),
                        ));
                    }
                }
                other => {
                    return Err(Error::option(
                        other,
                        "unknown compression sub-option; known: class, enabled, chunk_length_in_kb, compression_level, crc_check_chance, min_compress_ratio, training_max_dictionary_size, training_max_total_sample_size",
                    ))
                }
            }
        }
        if level_given && !out.class.is_zstd() {
            return Err(Error::option(
                "compression_level",
                format!(
                    "only applies to ZstdCompressor and ZstdWithDictsCompressor, not '{}'",
                    out.class.name()
                ),
            ));
        }
        if let Some(k) = training_given {
            if !out.class.uses_dictionary() {
                return Err(Error::option(
                    k,
                    format!(
                        "only applies to ZstdWithDictsCompressor and LZ4WithDictsCompressor, not '{}'",
                        out.class.name()
                    ),
                ));
            }
        }
        out.validate()?;
        Ok(out)
    }

    /// Checks the ranges (see the field docs).
    pub fn validate(&self) -> Result<()> {
        let c = self.chunk_length_in_kb;
        if !(1..=1024).contains(&c) || !c.is_power_of_two() {
            return Err(Error::option(
                "chunk_length_in_kb",
                format!("must be a power of two in 1..=1024, got {c}"),
            ));
        }
        if !(-7..=22).contains(&self.compression_level) {
            return Err(Error::option(
                "compression_level",
                format!("must be in -7..=22, got {}", self.compression_level),
            ));
        }
        // Cassandra's `CompressionParams.validate`: a negative ratio gives a
        // negative max length; one in (0, 1) a max above the chunk length.
        let r = self.min_compress_ratio;
        if !r.is_finite() || r < 0.0 {
            return Err(Error::option(
                "min_compress_ratio",
                format!("must be 0 or a finite number >= 1, got {r}"),
            ));
        }
        if r > 0.0 && r < 1.0 {
            return Err(Error::option(
                "min_compress_ratio",
                format!("can either be 0 or greater than or equal to 1, got {r}"),
            ));
        }
        Ok(())
    }
}

impl fmt::Display for CompressionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.class == CompressorClass::None {
            return write!(f, "{{'enabled': 'false'}}");
        }
        write!(
            f,
            "{{'class': '{}', 'chunk_length_in_kb': '{}'",
            self.class.name(),
            self.chunk_length_in_kb
        )?;
        if self.class.is_zstd() {
            write!(f, ", 'compression_level': '{}'", self.compression_level)?;
        }
        if self.class.uses_dictionary() {
            write!(
                f,
                ", 'training_max_dictionary_size': '{}', 'training_max_total_sample_size': '{}'",
                self.training_max_dictionary_size, self.training_max_total_sample_size
            )?;
        }
        // Written only when not the default, as Cassandra's `asMap`; `{}` on
        // f64 prints the shortest text that parses back to the same bits.
        if self.min_compress_ratio != 0.0 {
            write!(f, ", 'min_compress_ratio': '{}'", self.min_compress_ratio)?;
        }
        write!(f, "}}")
    }
}

// ---------------------------------------------------------------------------
// Compaction
// ---------------------------------------------------------------------------

/// Compaction strategy. Persisted by name (module docs).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, serde::Serialize, serde::Deserialize)]
pub enum CompactionClass {
    /// Cassandra's default: merge sstables of similar size (RocksDB: universal).
    SizeTieredCompactionStrategy,
    /// Levels of non-overlapping sstables, each `fanout_size` times the previous
    /// (RocksDB: leveled).
    LeveledCompactionStrategy,
    /// Time-series: one sstable per time window, whole sstables expire.
    TimeWindowCompactionStrategy,
    /// Cassandra 2.1's time-series strategy (seed 003); superseded by TWCS in
    /// Cassandra but kept for the experiments.
    DateTieredCompactionStrategy,
    /// Large immutable blocks (seed 002, DSE's `CFSCompactionStrategy`): drops
    /// whole sstables once every block in them is deleted, rewrites one alone when
    /// too fragmented, never merges to reduce the count
    /// (docs/compaction/blob.md). Aliases: `CFSCompactionStrategy`, DSE's
    /// `com.datastax.bdp.hadoop.cfs.compaction.CFSCompactionStrategy`.
    BlobCompactionStrategy,
}

impl CompactionClass {
    /// The name written in options (Cassandra's short class name).
    pub fn name(&self) -> &'static str {
        match self {
            CompactionClass::SizeTieredCompactionStrategy => "SizeTieredCompactionStrategy",
            CompactionClass::LeveledCompactionStrategy => "LeveledCompactionStrategy",
            CompactionClass::TimeWindowCompactionStrategy => "TimeWindowCompactionStrategy",
            CompactionClass::DateTieredCompactionStrategy => "DateTieredCompactionStrategy",
            CompactionClass::BlobCompactionStrategy => "BlobCompactionStrategy",
        }
    }

    /// Accepts short names, `org.apache.cassandra.db.compaction.X`, and for the
    /// blob strategy `CFSCompactionStrategy` and DSE's
    /// `com.datastax.bdp.hadoop.cfs.compaction.` prefix. Case-insensitive: class
    /// names never differ only by case.
    pub fn parse(name: &str) -> Result<CompactionClass> {
        let short = name
            .strip_prefix("org.apache.cassandra.db.compaction.")
            .or_else(|| name.strip_prefix("com.datastax.bdp.hadoop.cfs.compaction."))
            .unwrap_or(name);
        if short.eq_ignore_ascii_case("CFSCompactionStrategy") {
            return Ok(CompactionClass::BlobCompactionStrategy);
        }
        const ALL: [CompactionClass; 5] = [
            CompactionClass::SizeTieredCompactionStrategy,
            CompactionClass::LeveledCompactionStrategy,
            CompactionClass::TimeWindowCompactionStrategy,
            CompactionClass::DateTieredCompactionStrategy,
            CompactionClass::BlobCompactionStrategy,
        ];
        ALL.iter()
            .copied()
            .find(|c| c.name().eq_ignore_ascii_case(short))
            .ok_or_else(|| {
                Error::option(
                    "class",
                    format!(
                    "unknown compaction strategy '{name}'; known: SizeTieredCompactionStrategy, \
                     LeveledCompactionStrategy, TimeWindowCompactionStrategy, \
                     DateTieredCompactionStrategy, BlobCompactionStrategy (alias CFSCompactionStrategy)"
                ),
                )
            })
    }

    /// Whether the strategy takes the size-tiered sub-options: STCS itself, LCS (for
    /// size-tiering an overloaded L0), TWCS (inside the newest window) and DTCS
    /// (inside each window), as Cassandra.
    fn uses_stcs_options(self) -> bool {
        matches!(
            self,
            CompactionClass::SizeTieredCompactionStrategy
                | CompactionClass::LeveledCompactionStrategy
                | CompactionClass::TimeWindowCompactionStrategy
                | CompactionClass::DateTieredCompactionStrategy
        )
    }
}

/// `compaction = {...}`: a validated strategy class with its sub-options (invariant 2).
///
/// Built only through [`CompactionOptions::new`] / [`CompactionOptions::from_map`]
/// (and serde, which goes through them); the raw map is kept for Display and the
/// typed values are parsed once.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(try_from = "RawCompaction", into = "RawCompaction")]
pub struct CompactionOptions {
    class: CompactionClass,
    options: BTreeMap<String, String>,
    parsed: ParsedCompaction,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct RawCompaction {
    class: CompactionClass,
    options: BTreeMap<String, String>,
}

impl TryFrom<RawCompaction> for CompactionOptions {
    type Error = Error;
    fn try_from(raw: RawCompaction) -> Result<CompactionOptions> {
        CompactionOptions::new(raw.class, raw.options)
    }
}

impl From<CompactionOptions> for RawCompaction {
    fn from(c: CompactionOptions) -> RawCompaction {
        RawCompaction {
            class: c.class,
            options: c.options,
        }
    }
}

#[derive(Clone, Debug, Default, PartialEq)]
struct ParsedCompaction {
    common: CommonCompactionOptions,
    stcs: StcsOptions,
    lcs: LcsOptions,
    twcs: TwcsOptions,
    dtcs: DtcsOptions,
    blob: BlobOptions,
}

impl Default for CompactionOptions {
    fn default() -> Self {
        CompactionOptions {
            class: CompactionClass::SizeTieredCompactionStrategy,
            options: BTreeMap::new(),
            parsed: ParsedCompaction::default(),
        }
    }
}

impl CompactionOptions {
    /// Validates `options` (without `class`) for `class`; unknown or out-of-range
    /// sub-options give [`Error::InvalidOption`] naming the sub-option.
    pub fn new(
        class: CompactionClass,
        options: BTreeMap<String, String>,
    ) -> Result<CompactionOptions> {
        let parsed = parse_compaction(class, &options)?;
        Ok(CompactionOptions {
            class,
            options,
            parsed,
        })
    }

    /// Builds from a `compaction = {...}` map, which must name its `class`.
    pub fn from_map(map: &BTreeMap<String, String>) -> Result<CompactionOptions> {
        let class = map.get("class").ok_or_else(|| {
            Error::option(
                "class",
                "missing sub-option 'class' for the 'compaction' option",
            )
        })?;
        let class = CompactionClass::parse(class)?;
        let mut options = map.clone();
        options.remove("class");
        CompactionOptions::new(class, options)
    }

    pub fn class(&self) -> CompactionClass {
        self.class
    }

    /// The sub-options as given (without `class`).
    pub fn options(&self) -> &BTreeMap<String, String> {
        &self.options
    }

    /// Options every strategy takes.
    pub fn common(&self) -> CommonCompactionOptions {
        self.parsed.common.clone()
    }

    /// Size-tiered options (defaults unless the class takes them: STCS, LCS, TWCS).
    pub fn stcs(&self) -> StcsOptions {
        self.parsed.stcs.clone()
    }

    /// Leveled options (defaults unless the class is LCS).
    pub fn lcs(&self) -> LcsOptions {
        self.parsed.lcs.clone()
    }

    /// Time-window options (defaults unless the class is TWCS).
    pub fn twcs(&self) -> TwcsOptions {
        self.parsed.twcs.clone()
    }

    /// Date-tiered options (defaults unless the class is DTCS).
    pub fn dtcs(&self) -> DtcsOptions {
        self.parsed.dtcs.clone()
    }

    /// Blob strategy options (defaults unless the class is the blob strategy).
    pub fn blob(&self) -> BlobOptions {
        self.parsed.blob.clone()
    }

    /// Whether these options ask for TWCS's `unsafe_aggressive_sstable_expiration`.
    pub fn asks_unsafe_aggressive_expiration(&self) -> bool {
        self.class == CompactionClass::TimeWindowCompactionStrategy
            && self.parsed.twcs.unsafe_aggressive_sstable_expiration
    }

    /// The options a database not allowed `unsafe_aggressive_sstable_expiration`
    /// runs with: the same, with that option off (Cassandra's
    /// `UNSAFE_AGGRESSIVE_SSTABLE_EXPIRATION_ENABLED && option`). The map is
    /// kept as given, so the schema still shows what the operator wrote.
    pub fn without_unsafe_aggressive_expiration(&self) -> CompactionOptions {
        let mut out = self.clone();
        out.parsed.twcs.unsafe_aggressive_sstable_expiration = false;
        out
    }

    /// The error for `unsafe_aggressive_sstable_expiration: true` on a database
    /// not opened to allow it (Cassandra's wording, Strata's switch).
    pub fn unsafe_aggressive_expiration_refused() -> Error {
        Error::option(
            "unsafe_aggressive_sstable_expiration",
            "is requested but not allowed: open the database with \
             allow_unsafe_aggressive_sstable_expiration (the command line's \
             --allow-unsafe-aggressive-sstable-expiration) to allow it",
        )
    }
}

impl fmt::Display for CompactionOptions {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{{'class': '{}'", self.class.name())?;
        for (k, v) in &self.options {
            write!(f, ", {}: {}", quote(k), quote(v))?;
        }
        write!(f, "}}")
    }
}

/// Options every strategy takes (Cassandra's `CompactionParams` and
/// `AbstractCompactionStrategy` options).
#[derive(Clone, Debug, PartialEq)]
pub struct CommonCompactionOptions {
    /// Whether background compaction runs. Default true. Disabling lets sstables pile
    /// up (reads slow down) but user-triggered `compact` still works.
    /// Cassandra: `enabled`; RocksDB: `disable_auto_compactions` (inverted).
    pub enabled: bool,
    /// Fewest sstables merged at once by size tiering (STCS buckets, LCS's L0, the
    /// newest TWCS window). Default 4, >= 2. Lower merges sooner (fewer sstables per
    /// read, more rewriting). Cassandra: `min_threshold`; RocksDB universal:
    /// `min_merge_width`, leveled: `level0_file_num_compaction_trigger`.
    pub min_threshold: u32,
    /// Most sstables merged at once. Default 32, >= `min_threshold`. Bounds the memory
    /// and duration of one compaction. Cassandra: `max_threshold`; RocksDB universal:
    /// `max_merge_width`.
    pub max_threshold: u32,
    /// Estimated droppable-tombstone ratio above which an sstable is compacted alone
    /// to purge them. Default 0.2, in 0..=1. Lower purges sooner at the cost of
    /// rewrites. Cassandra: `tombstone_threshold`.
    pub tombstone_threshold: f64,
    /// Minimum sstable age before a single-sstable tombstone compaction is tried.
    /// Unit: seconds; default 86400 (1 day), >= 0. Prevents re-compacting a fresh
    /// sstable whose tombstones are not yet purgeable. Cassandra:
    /// `tombstone_compaction_interval`.
    pub tombstone_compaction_interval_seconds: u64,
    /// Run tombstone compactions without first checking that the sstable's range
    /// overlaps no other (which could keep the tombstones anyway). Default false.
    /// Cassandra: `unchecked_tombstone_compaction`.
    pub unchecked_tombstone_compaction: bool,
    /// Purge tombstones only from repaired sstables. Default false. Strata has no
    /// repair yet, so true means tombstones are never purged. Cassandra:
    /// `only_purge_repaired_tombstones`.
    pub only_purge_repaired_tombstones: bool,
    /// Log every compaction decision (Cassandra writes them to a separate log).
    /// Default false. Cassandra: `log_all`.
    pub log_all: bool,
    /// Let the row-level check (`compaction::expiry`) drop a fully expired
    /// sstable that Cassandra's overlap rule would keep, when no overlapping
    /// source holds old data in a row it holds or deletes. Default true; false
    /// gives Cassandra's behaviour exactly. Costs a read of the (usually small)
    /// blockers' data each time the set of blockers changes. Strata only.
    pub row_level_expiry_check: bool,
}

impl Default for CommonCompactionOptions {
    fn default() -> Self {
        CommonCompactionOptions {
            enabled: true,
            min_threshold: 4,
            max_threshold: 32,
            tombstone_threshold: 0.2,
            tombstone_compaction_interval_seconds: 86_400,
            unchecked_tombstone_compaction: false,
            only_purge_repaired_tombstones: false,
            log_all: false,
            row_level_expiry_check: true,
        }
    }
}

/// Size-tiered options (STCS; also LCS's L0 and TWCS's newest window).
#[derive(Clone, Debug, PartialEq)]
pub struct StcsOptions {
    /// An sstable joins a bucket if its size is at least `bucket_low` times the
    /// bucket's average. Default 0.5, in (0, bucket_high). Cassandra: `bucket_low`;
    /// RocksDB universal: `size_ratio` (expressed differently).
    pub bucket_low: f64,
    /// ... and at most `bucket_high` times the average. Default 1.5, > bucket_low.
    /// Wider buckets merge more unlike sizes (more write amplification, fewer sstables).
    /// Cassandra: `bucket_high`.
    pub bucket_high: f64,
    /// Sstables below this size all share the smallest bucket, so tiny flushes merge
    /// together regardless of ratio. Unit: bytes; default 50 MiB. Cassandra:
    /// `min_sstable_size` (also bytes).
    pub min_sstable_size_bytes: u64,
}

impl Default for StcsOptions {
    fn default() -> Self {
        StcsOptions {
            bucket_low: 0.5,
            bucket_high: 1.5,
            min_sstable_size_bytes: 50 * MIB,
        }
    }
}

/// Leveled options.
#[derive(Clone, Debug, PartialEq)]
pub struct LcsOptions {
    /// Target size of each sstable in L1 and above. Unit: MiB; default 160 (Cassandra's);
    /// at least 1. Larger sstables mean fewer files and fewer levels but coarser compactions;
    /// seed 000 measured 36% less write IO at 1024 MiB with fanout 4. Cassandra:
    /// `sstable_size_in_mb`; RocksDB: `target_file_size_base`.
    pub sstable_size_in_mb: u32,
    /// Size ratio between consecutive levels. Default 10, >= 2. Lower means less
    /// rewriting per promotion (write IO ~ 1 + (1 + fanout) * levels) but more levels
    /// to read (seed 000). Cassandra: `fanout_size`; RocksDB:
    /// `max_bytes_for_level_multiplier`.
    pub fanout_size: u32,
    /// Move a lone sstable up a level by relinking it instead of rewriting it when it
    /// overlaps nothing in the next level. Default true (Cassandra 4.0's default).
    /// Cassandra: `single_sstable_uplevel`; RocksDB: trivial move.
    pub single_sstable_uplevel: bool,
    /// Strata's fixed-levels mode (seed 000's closing suggestion): 0 = off (levels grow
    /// with the data, each `fanout_size` times the last, sstables of
    /// `sstable_size_in_mb`); 2..=10 = keep exactly this many levels, sstables still
    /// of `sstable_size_in_mb`, and let the ratio between levels follow the top
    /// level's size (`compaction::lcs::level_target_bytes`). Trades write
    /// amplification, which then grows like `data^(1/N)`, for a bounded read
    /// fan-in (docs/compaction/lcs.md). RocksDB: `num_levels` with
    /// `level_compaction_dynamic_level_bytes`.
    pub level_count: u32,
    /// Strata only: sstable size in KiB, overriding `sstable_size_in_mb` when set
    /// (>= 16). For scaled-down experiments (seed 000 at 1/1000: 160 KB sstables)
    /// and tests; production tables use `sstable_size_in_mb`.
    pub sstable_size_in_kb: Option<u32>,
    /// Strata only: while L0 holds less than one sstable's worth, merge it by size
    /// tiers (`min_threshold` similar-sized sstables at a time, the STCS bucket
    /// rules) instead of Cassandra's rule of merging all of L0 on every flush.
    /// Default false (Cassandra's behaviour). With sstables `k` flushes wide,
    /// Cassandra's rule rewrites each flushed byte about `k / 2` times in L0, size
    /// tiering about `log_T k` (what seed 000's L0 term assumes); the price is up
    /// to `T - 1` more L0 sstables per tier for reads. Only matters when
    /// `sstable size / flush size` is well above 2. RocksDB has no intra-L0
    /// merging at all by default (L0 goes to L1 at `level0_file_num_compaction_trigger`).
    pub l0_size_tiered: bool,
    /// Strata only: 0 = off (Cassandra's rule: L0 goes to L1 once it holds one
    /// sstable's worth, and is merged within itself until then); `n` in
    /// `2..=32` = L0 goes to L1, with L1's overlap, as soon as it holds `n`
    /// sstables not being compacted, and is never merged within itself below
    /// that (RocksDB's `level0_file_num_compaction_trigger`, 4 there by
    /// default). Each flushed byte is then written once into L0 and once into
    /// L1 per batch of `n` flushes, with no L0 rewrites at all; the price is
    /// up to `n` L0 sstables per read, and batches whose size follows the
    /// flushes rather than `sstable_size_in_mb`. Not with `l0_size_tiered` or
    /// `level_count` (each has its own L0 rule).
    pub l0_compaction_trigger: u32,
}

impl Default for LcsOptions {
    fn default() -> Self {
        LcsOptions {
            sstable_size_in_mb: 160,
            fanout_size: 10,
            single_sstable_uplevel: true,
            level_count: 0,
            sstable_size_in_kb: None,
            l0_size_tiered: false,
            l0_compaction_trigger: 0,
        }
    }
}

impl LcsOptions {
    pub fn sstable_size_bytes(&self) -> u64 {
        match self.sstable_size_in_kb {
            Some(kb) => kb as u64 * 1024,
            None => self.sstable_size_in_mb as u64 * MIB,
        }
    }
}

/// Unit of a TWCS window.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum WindowUnit {
    Minutes,
    Hours,
    Days,
}

impl WindowUnit {
    pub fn seconds(self) -> u64 {
        match self {
            WindowUnit::Minutes => 60,
            WindowUnit::Hours => 3600,
            WindowUnit::Days => 86_400,
        }
    }
}

/// Unit in which the client writes timestamps (Cassandra's `timestamp_resolution`,
/// a Java `TimeUnit` name). Strata's own default timestamps are always
/// microseconds. TWCS takes NANOSECONDS to SECONDS; DTCS also MINUTES, HOURS
/// and DAYS (Cassandra 4.1's DTCS accepts every `TimeUnit`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimestampResolution {
    Nanoseconds,
    Microseconds,
    Milliseconds,
    Seconds,
    Minutes,
    Hours,
    Days,
}

impl TimestampResolution {
    /// Java's `TimeUnit` name, as the option is written.
    pub fn name(self) -> &'static str {
        match self {
            TimestampResolution::Nanoseconds => "NANOSECONDS",
            TimestampResolution::Microseconds => "MICROSECONDS",
            TimestampResolution::Milliseconds => "MILLISECONDS",
            TimestampResolution::Seconds => "SECONDS",
            TimestampResolution::Minutes => "MINUTES",
            TimestampResolution::Hours => "HOURS",
            TimestampResolution::Days => "DAYS",
        }
    }

    /// Units of this resolution in one second, as a fraction for the coarse
    /// ones (`1/60` for MINUTES).
    fn per_second(self) -> (i64, i64) {
        match self {
            TimestampResolution::Nanoseconds => (1_000_000_000, 1),
            TimestampResolution::Microseconds => (1_000_000, 1),
            TimestampResolution::Milliseconds => (1_000, 1),
            TimestampResolution::Seconds => (1, 1),
            TimestampResolution::Minutes => (1, 60),
            TimestampResolution::Hours => (1, 3_600),
            TimestampResolution::Days => (1, 86_400),
        }
    }

    /// A write timestamp in this resolution, in microseconds (truncated
    /// toward zero from nanoseconds, saturating for the coarse units).
    pub fn to_micros(self, timestamp: i64) -> i64 {
        match self {
            TimestampResolution::Nanoseconds => timestamp / 1000,
            TimestampResolution::Microseconds => timestamp,
            TimestampResolution::Milliseconds => timestamp.saturating_mul(1000),
            TimestampResolution::Seconds => timestamp.saturating_mul(1_000_000),
            TimestampResolution::Minutes => timestamp.saturating_mul(60_000_000),
            TimestampResolution::Hours => timestamp.saturating_mul(3_600_000_000),
            TimestampResolution::Days => timestamp.saturating_mul(86_400_000_000),
        }
    }

    /// `seconds` in this resolution, as Java's `TimeUnit.convert`: truncated
    /// toward zero into a coarser unit (90 s is 1 minute), saturating into a
    /// finer one.
    pub fn from_seconds(self, seconds: i64) -> i64 {
        let (num, den) = self.per_second();
        seconds.saturating_mul(num) / den
    }

    /// Units of this resolution in one day (`max_sstable_age_days`' scale).
    pub fn per_day(self) -> f64 {
        let (num, den) = self.per_second();
        86_400.0 * num as f64 / den as f64
    }
}

/// Time-window options.
#[derive(Clone, Debug, PartialEq)]
pub struct TwcsOptions {
    /// Unit of the window. MINUTES, HOURS or DAYS, upper case (Java's
    /// `TimeUnit.valueOf`); default DAYS. Cassandra: `compaction_window_unit`.
    pub compaction_window_unit: WindowUnit,
    /// Window length in `compaction_window_unit`s. Default 1, 1..=2147483647 (a
    /// Java int, as Cassandra). Aim for 20-30 windows over the data's TTL: fewer
    /// windows mean bigger merges, more mean more sstables per read. Cassandra:
    /// `compaction_window_size`.
    pub compaction_window_size: u32,
    /// Unit of write timestamps: NANOSECONDS, MICROSECONDS, MILLISECONDS or
    /// SECONDS, upper case; default MICROSECONDS. Cassandra: `timestamp_resolution`.
    pub timestamp_resolution: TimestampResolution,
    /// How often to look for fully expired sstables to drop. Unit: seconds; default
    /// 600, >= 0. Cassandra: `expired_sstable_check_frequency_seconds`.
    pub expired_sstable_check_frequency_seconds: u64,
    /// Drop an sstable once all its data has expired even if older sstables overlap it
    /// (which could resurrect shadowed data). Default false. Accepted only by a
    /// database opened with `allow_unsafe_aggressive_sstable_expiration`
    /// (`TableRuntimeOptions`; the CLI's
    /// `--allow-unsafe-aggressive-sstable-expiration`), Cassandra's
    /// `-Dcassandra.allow_unsafe_aggressive_sstable_expiration=true`; a table that
    /// has it set, opened without that, keeps the overlap check (as Cassandra).
    /// Cassandra: `unsafe_aggressive_sstable_expiration`.
    pub unsafe_aggressive_sstable_expiration: bool,
    /// Cut flush and compaction output by time window of each write's timestamp,
    /// so a write with an old timestamp (repair, hints, `USING TIMESTAMP`) lands
    /// in an sstable of its own window instead of stretching a new sstable back in
    /// time and blocking old windows' expiry. Default true. Costs one extra small
    /// sstable per window an out-of-order write touches (merged into its window
    /// later). Strata only; Cassandra always writes one output.
    pub split_output_by_window: bool,
}

impl Default for TwcsOptions {
    fn default() -> Self {
        TwcsOptions {
            compaction_window_unit: WindowUnit::Days,
            compaction_window_size: 1,
            timestamp_resolution: TimestampResolution::Microseconds,
            expired_sstable_check_frequency_seconds: 600,
            unsafe_aggressive_sstable_expiration: false,
            split_output_by_window: true,
        }
    }
}

impl TwcsOptions {
    /// Window length in seconds.
    pub fn window_seconds(&self) -> u64 {
        self.compaction_window_unit.seconds() * self.compaction_window_size as u64
    }
}

/// Default of [`DtcsOptions::max_sstable_age_days`]: Cassandra 4.1's `365 * 1000`.
pub const DEFAULT_MAX_SSTABLE_AGE_DAYS: f64 = 365_000.0;

/// Date-tiered options.
#[derive(Clone, Debug, PartialEq)]
pub struct DtcsOptions {
    /// Size of the first (newest) window. Unit: seconds; default 60, > 0. Windows grow
    /// by `min_threshold` each tier (seed 003). Cassandra: `base_time_seconds`.
    pub base_time_seconds: u64,
    /// Sstables whose newest data is older than this are no longer compacted. Unit:
    /// days, fractional allowed, >= 0 (0: no limit); default 365000 (Cassandra
    /// 4.1's, which deprecated the option: in effect no limit; 2.1, the seed's
    /// version, had 365). Applied as Cassandra does: `round(days x units per day)`
    /// in `timestamp_resolution` units. Cassandra: `max_sstable_age_days`.
    pub max_sstable_age_days: f64,
    /// Largest window. Unit: seconds; default 86400, >= 0; below
    /// `base_time_seconds x min_threshold` windows never grow past the base.
    /// Cassandra: `max_window_size_seconds`.
    pub max_window_size_seconds: u64,
    /// Unit of write timestamps. Default MICROSECONDS; any Java `TimeUnit`
    /// name, upper case. Cassandra: `timestamp_resolution`.
    pub timestamp_resolution: TimestampResolution,
    /// How often to look for fully expired sstables to drop. Unit: seconds; default
    /// 600, >= 0. Cassandra: `expired_sstable_check_frequency_seconds`.
    pub expired_sstable_check_frequency_seconds: u64,
    /// As TWCS's option of the name, with windows of `max_window_size_seconds`:
    /// a write older than the largest window lands in an sstable of its own
    /// largest-size window. Default true. Strata only.
    pub split_output_by_window: bool,
}

impl Default for DtcsOptions {
    fn default() -> Self {
        DtcsOptions {
            base_time_seconds: 60,
            max_sstable_age_days: DEFAULT_MAX_SSTABLE_AGE_DAYS,
            max_window_size_seconds: 86_400,
            timestamp_resolution: TimestampResolution::Microseconds,
            expired_sstable_check_frequency_seconds: 600,
            split_output_by_window: true,
        }
    }
}

impl DtcsOptions {
    /// Cassandra's `maxSSTableAge`: `Math.round(days x units per day)` in
    /// `timestamp_resolution` units, saturating (0: no limit).
    pub fn max_sstable_age_units(&self) -> i64 {
        (self.max_sstable_age_days * self.timestamp_resolution.per_day()).round() as i64
    }

    /// Cassandra's `baseTime`: `base_time_seconds` in `timestamp_resolution`
    /// units, truncated (at least 1: validated).
    pub fn base_units(&self) -> i64 {
        self.timestamp_resolution
            .from_seconds(self.base_time_seconds as i64)
            .max(1)
    }

    /// Cassandra's `maxWindowSize`: `max_window_size_seconds` in
    /// `timestamp_resolution` units, truncated.
    pub fn max_window_units(&self) -> i64 {
        self.timestamp_resolution
            .from_seconds(self.max_window_size_seconds as i64)
    }
}

/// Blob strategy options (docs/compaction/blob.md).
#[derive(Clone, Debug, PartialEq)]
pub struct BlobOptions {
    /// Ratio of an sstable's size to its live bytes (uncompressed; live = not
    /// superseded by deletions held in other sstables) strictly above which it is
    /// rewritten alone; an sstable with nothing live is dropped instead. Default
    /// 5.0, > 1.0. Lower reclaims space sooner with more rewriting (at 5.0 up to
    /// 80% of an sstable is garbage before it is rewritten). DSE:
    /// `max_sstable_fragmentation`. docs/compaction/blob.md.
    pub max_sstable_fragmentation: f64,
}

impl Default for BlobOptions {
    fn default() -> Self {
        BlobOptions {
            max_sstable_fragmentation: 5.0,
        }
    }
}

const COMMON_KEYS: &[&str] = &[
    "enabled",
    "min_threshold",
    "max_threshold",
    "tombstone_threshold",
    "tombstone_compaction_interval",
    "unchecked_tombstone_compaction",
    "only_purge_repaired_tombstones",
    "log_all",
    "row_level_expiry_check",
];
const STCS_KEYS: &[&str] = &["bucket_low", "bucket_high", "min_sstable_size"];
const LCS_KEYS: &[&str] = &[
    "sstable_size_in_mb",
    "sstable_size_in_kb",
    "fanout_size",
    "single_sstable_uplevel",
    "level_count",
    "l0_size_tiered",
    "l0_compaction_trigger",
];
const TWCS_KEYS: &[&str] = &[
    "compaction_window_unit",
    "compaction_window_size",
    "timestamp_resolution",
    "expired_sstable_check_frequency_seconds",
    "unsafe_aggressive_sstable_expiration",
    "split_output_by_window",
];
const DTCS_KEYS: &[&str] = &[
    "base_time_seconds",
    "max_sstable_age_days",
    "max_window_size_seconds",
    "timestamp_resolution",
    "expired_sstable_check_frequency_seconds",
    "split_output_by_window",
];
const BLOB_KEYS: &[&str] = &["max_sstable_fragmentation"];

fn class_keys(class: CompactionClass) -> Vec<&'static str> {
    let mut keys: Vec<&str> = COMMON_KEYS.to_vec();
    if class.uses_stcs_options() {
        keys.extend_from_slice(STCS_KEYS);
    }
    match class {
        CompactionClass::SizeTieredCompactionStrategy => {}
        CompactionClass::LeveledCompactionStrategy => keys.extend_from_slice(LCS_KEYS),
        CompactionClass::TimeWindowCompactionStrategy => keys.extend_from_slice(TWCS_KEYS),
        CompactionClass::DateTieredCompactionStrategy => keys.extend_from_slice(DTCS_KEYS),
        CompactionClass::BlobCompactionStrategy => keys.extend_from_slice(BLOB_KEYS),
    }
    keys
}

fn parse_compaction(
    class: CompactionClass,
    map: &BTreeMap<String, String>,
) -> Result<ParsedCompaction> {
    let mut p = ParsedCompaction::default();
    for (k, v) in map {
        let handled = set_common(&mut p.common, k, v)?
            || (class.uses_stcs_options() && set_stcs(&mut p.stcs, k, v)?)
            || match class {
                CompactionClass::SizeTieredCompactionStrategy => false,
                CompactionClass::LeveledCompactionStrategy => set_lcs(&mut p.lcs, k, v)?,
                CompactionClass::TimeWindowCompactionStrategy => set_twcs(&mut p.twcs, k, v)?,
                CompactionClass::DateTieredCompactionStrategy => set_dtcs(&mut p.dtcs, k, v)?,
                CompactionClass::BlobCompactionStrategy => set_blob(&mut p.blob, k, v)?,
            };
        if !handled {
            return Err(Error::option(
                k,
                format!(
                    "not understood by {}; known: {}",
                    class.name(),
                    class_keys(class).join(", ")
                ),
            ));
        }
    }
    // Cross-field checks, with Cassandra's rules.
    if p.common.max_threshold < p.common.min_threshold {
        return Err(Error::option(
            "max_threshold",
            format!(
                "must be >= min_threshold ({}), got {}",
                p.common.min_threshold, p.common.max_threshold
            ),
        ));
    }
    if p.stcs.bucket_high <= p.stcs.bucket_low {
        return Err(Error::option(
            "bucket_high",
            format!(
                "must be greater than bucket_low ({}), got {}",
                p.stcs.bucket_low, p.stcs.bucket_high
            ),
        ));
    }
    if p.lcs.l0_compaction_trigger > 0 && (p.lcs.l0_size_tiered || p.lcs.level_count > 0) {
        return Err(Error::option(
            "l0_compaction_trigger",
            "cannot be combined with l0_size_tiered or level_count, which have their own L0 rules",
        ));
    }
    // Cassandra converts base_time_seconds into timestamp_resolution units,
    // truncating, and divides by it: a base below one unit (60 s with DAYS)
    // would divide by zero there; here it is refused.
    if class == CompactionClass::DateTieredCompactionStrategy
        && p.dtcs
            .timestamp_resolution
            .from_seconds(p.dtcs.base_time_seconds as i64)
            == 0
    {
        return Err(Error::option(
            "base_time_seconds",
            format!(
                "{} seconds is less than one {} unit of timestamp_resolution",
                p.dtcs.base_time_seconds,
                p.dtcs.timestamp_resolution.name()
            ),
        ));
    }
    Ok(p)
}

fn set_common(c: &mut CommonCompactionOptions, k: &str, v: &str) -> Result<bool> {
    match k {
        "enabled" => c.enabled = parse_bool(k, v)?,
        "min_threshold" => c.min_threshold = parse_int(k, v, 2, u32::MAX as u64)? as u32,
        "max_threshold" => c.max_threshold = parse_int(k, v, 2, u32::MAX as u64)? as u32,
        "tombstone_threshold" => c.tombstone_threshold = parse_float_in(k, v, 0.0, 1.0)?,
        "tombstone_compaction_interval" => {
            c.tombstone_compaction_interval_seconds = parse_int(k, v, 0, u64::MAX)?
        }
        "unchecked_tombstone_compaction" => c.unchecked_tombstone_compaction = parse_bool(k, v)?,
        "only_purge_repaired_tombstones" => c.only_purge_repaired_tombstones = parse_bool(k, v)?,
        "log_all" => c.log_all = parse_bool(k, v)?,
        "row_level_expiry_check" => c.row_level_expiry_check = parse_bool(k, v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn set_stcs(s: &mut StcsOptions, k: &str, v: &str) -> Result<bool> {
    match k {
        "bucket_low" => {
            s.bucket_low = parse_float(k, v)?;
            if !(s.bucket_low > 0.0 && s.bucket_low.is_finite()) {
                return Err(Error::option(
                    k,
                    format!("must be a positive number, got {v}"),
                ));
            }
        }
        "bucket_high" => {
            s.bucket_high = parse_float(k, v)?;
            if !(s.bucket_high > 0.0 && s.bucket_high.is_finite()) {
                return Err(Error::option(
                    k,
                    format!("must be a positive number, got {v}"),
                ));
            }
        }
        "min_sstable_size" => s.min_sstable_size_bytes = parse_int(k, v, 0, u64::MAX)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn set_lcs(l: &mut LcsOptions, k: &str, v: &str) -> Result<bool> {
    match k {
        // Capped at 1 TiB so that size arithmetic in bytes cannot overflow anywhere.
        "sstable_size_in_mb" => l.sstable_size_in_mb = parse_int(k, v, 1, 1 << 20)? as u32,
        "sstable_size_in_kb" => l.sstable_size_in_kb = Some(parse_int(k, v, 16, 1 << 30)? as u32),
        "fanout_size" => l.fanout_size = parse_int(k, v, 2, 1000)? as u32,
        "single_sstable_uplevel" => l.single_sstable_uplevel = parse_bool(k, v)?,
        "l0_size_tiered" => l.l0_size_tiered = parse_bool(k, v)?,
        "l0_compaction_trigger" => {
            let n = parse_int(k, v, 0, MAX_L0_COMPACTION_TRIGGER)? as u32;
            if n == 1 {
                // A batch of one is a merge of each flush into all of L1's
                // overlap: not refused for being wrong, but for never being
                // what was meant (and an L0 batch is at least two sstables).
                return Err(Error::option(
                    k,
                    format!("must be 0 (off) or in 2..={MAX_L0_COMPACTION_TRIGGER}, got 1"),
                ));
            }
            l.l0_compaction_trigger = n;
        }
        "level_count" => {
            let n = parse_int(k, v, 0, 10)? as u32;
            if n == 1 {
                return Err(Error::option(k, "must be 0 (off) or in 2..=10, got 1"));
            }
            l.level_count = n;
        }
        _ => return Ok(false),
    }
    Ok(true)
}

fn set_twcs(t: &mut TwcsOptions, k: &str, v: &str) -> Result<bool> {
    match k {
        // Java's `TimeUnit.valueOf`: exact, upper-case names.
        "compaction_window_unit" => {
            t.compaction_window_unit = match v {
                "MINUTES" => WindowUnit::Minutes,
                "HOURS" => WindowUnit::Hours,
                "DAYS" => WindowUnit::Days,
                _ => {
                    return Err(Error::option(
                        k,
                        format!("'{v}' is not valid: MINUTES, HOURS or DAYS (upper case)"),
                    ))
                }
            }
        }
        // A Java int, as Cassandra's `Integer.parseInt`.
        "compaction_window_size" => {
            t.compaction_window_size = parse_int(k, v, 1, i32::MAX as u64)? as u32
        }
        "timestamp_resolution" => {
            t.timestamp_resolution = parse_resolution(k, v)?;
            if matches!(
                t.timestamp_resolution,
                TimestampResolution::Minutes
                    | TimestampResolution::Hours
                    | TimestampResolution::Days
            ) {
                return Err(Error::option(
                    k,
                    format!("'{v}' is not valid for TimeWindowCompactionStrategy: NANOSECONDS, MICROSECONDS, MILLISECONDS or SECONDS"),
                ));
            }
        }
        "expired_sstable_check_frequency_seconds" => {
            t.expired_sstable_check_frequency_seconds = parse_int(k, v, 0, u64::MAX)?
        }
        "unsafe_aggressive_sstable_expiration" => {
            t.unsafe_aggressive_sstable_expiration = parse_bool(k, v)?
        }
        "split_output_by_window" => t.split_output_by_window = parse_bool(k, v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn set_dtcs(d: &mut DtcsOptions, k: &str, v: &str) -> Result<bool> {
    match k {
        // Java longs, as Cassandra's `Long.parseLong`.
        "base_time_seconds" => d.base_time_seconds = parse_int(k, v, 1, i64::MAX as u64)?,
        "max_sstable_age_days" => {
            d.max_sstable_age_days = parse_float(k, v)?;
            if !(d.max_sstable_age_days >= 0.0 && d.max_sstable_age_days.is_finite()) {
                return Err(Error::option(
                    k,
                    format!("must be a non-negative number, got {v}"),
                ));
            }
        }
        "max_window_size_seconds" => {
            d.max_window_size_seconds = parse_int(k, v, 0, i64::MAX as u64)?
        }
        "timestamp_resolution" => d.timestamp_resolution = parse_resolution(k, v)?,
        "expired_sstable_check_frequency_seconds" => {
            d.expired_sstable_check_frequency_seconds = parse_int(k, v, 0, u64::MAX)?
        }
        "split_output_by_window" => d.split_output_by_window = parse_bool(k, v)?,
        _ => return Ok(false),
    }
    Ok(true)
}

fn set_blob(c: &mut BlobOptions, k: &str, v: &str) -> Result<bool> {
    match k {
        "max_sstable_fragmentation" => {
            c.max_sstable_fragmentation = parse_float(k, v)?;
            if !(c.max_sstable_fragmentation > 1.0 && c.max_sstable_fragmentation.is_finite()) {
                return Err(Error::option(
                    k,
                    format!("must be greater than 1.0, got {v}"),
                ));
            }
        }
        _ => return Ok(false),
    }
    Ok(true)
}

/// Java's `TimeUnit.valueOf`: the exact, upper-case name of any unit (TWCS
/// then refuses the coarse ones).
fn parse_resolution(k: &str, v: &str) -> Result<TimestampResolution> {
    match v {
        "NANOSECONDS" => Ok(TimestampResolution::Nanoseconds),
        "MICROSECONDS" => Ok(TimestampResolution::Microseconds),
        "MILLISECONDS" => Ok(TimestampResolution::Milliseconds),
        "SECONDS" => Ok(TimestampResolution::Seconds),
        "MINUTES" => Ok(TimestampResolution::Minutes),
        "HOURS" => Ok(TimestampResolution::Hours),
        "DAYS" => Ok(TimestampResolution::Days),
        _ => Err(Error::option(
            k,
            format!(
                "'{v}' is not valid: a Java TimeUnit name in upper case (NANOSECONDS ... DAYS)"
            ),
        )),
    }
}

// ---------------------------------------------------------------------------
// Scalar parsing
// ---------------------------------------------------------------------------

fn parse_bool(k: &str, v: &str) -> Result<bool> {
    // Stricter than Cassandra's `Boolean.parseBoolean` (anything but "true" is false):
    // a typo should not silently disable a feature.
    if v.eq_ignore_ascii_case("true") {
        Ok(true)
    } else if v.eq_ignore_ascii_case("false") {
        Ok(false)
    } else {
        Err(Error::option(
            k,
            format!("expected true or false, got '{v}'"),
        ))
    }
}

fn parse_int(k: &str, v: &str, min: u64, max: u64) -> Result<u64> {
    let n: u64 = v
        .trim()
        .parse()
        .map_err(|_| Error::option(k, format!("expected a whole number, got '{v}'")))?;
    if n < min || n > max {
        return Err(Error::option(
            k,
            format!("must be in {min}..={max}, got {n}"),
        ));
    }
    Ok(n)
}

fn parse_signed(k: &str, v: &str, min: i64, max: i64) -> Result<i64> {
    let n: i64 = v
        .trim()
        .parse()
        .map_err(|_| Error::option(k, format!("expected a whole number, got '{v}'")))?;
    if n < min || n > max {
        return Err(Error::option(
            k,
            format!("must be in {min}..={max}, got {n}"),
        ));
    }
    Ok(n)
}

fn parse_float(k: &str, v: &str) -> Result<f64> {
    let x: f64 = v
        .trim()
        .parse()
        .map_err(|_| Error::option(k, format!("expected a number, got '{v}'")))?;
    if !x.is_finite() {
        return Err(Error::option(
            k,
            format!("expected a finite number, got '{v}'"),
        ));
    }
    Ok(x)
}

fn parse_float_in(k: &str, v: &str, min: f64, max: f64) -> Result<f64> {
    let x = parse_float(k, v)?;
    if x < min || x > max {
        return Err(Error::option(
            k,
            format!("must be in {min}..={max}, got {v}"),
        ));
    }
    Ok(x)
}

/// Cassandra table options that have no counterpart here, accepted only at
/// Cassandra's default so that a schema copied from Cassandra's DESCRIBE
/// applies unchanged (system_schema.tables reports these defaults). Any
/// other value is refused: accepting it and doing something else would be
/// a silent difference. `(name, default as DESCRIBE writes it, why)`.
const CASSANDRA_DEFAULT_ONLY: [(&str, &str, &str); 12] = [
    ("additional_write_policy", "'99p'", "a single node has no other replica to write to"),
    (
        "allow_auto_snapshot",
        "true",
        "DROP and TRUNCATE snapshot every table when auto_snapshot is on; a per-table opt-out is not implemented",
    ),
    (
        "caching",
        "{'keys': 'ALL', 'rows_per_partition': 'NONE'}",
        "there is no key or row cache to tune (reads use the row index and the chunk cache)",
    ),
    ("cdc", "false", "there is no change-data capture"),
    ("crc_check_chance", "1.0", "every read verifies its checksums"),
    ("extensions", "{}", "there are no table extensions"),
    (
        "incremental_backups",
        "true",
        "there are no incremental backups (Cassandra's default leaves them off node-wide)",
    ),
    ("max_index_interval", "2048", "the row index is not sampled"),
    ("memtable", "'default'", "there is one memtable implementation"),
    ("min_index_interval", "128", "the row index is not sampled"),
    ("read_repair", "'BLOCKING'", "a single node has no replicas to repair"),
    ("speculative_retry", "'99p'", "a single node has no other replica to retry on"),
];

/// Accepts `s` when its value is Cassandra's default (case as Cassandra
/// ignores it), else refuses it saying why (`CASSANDRA_DEFAULT_ONLY`).
fn accept_cassandra_default(s: &Setting) -> Result<()> {
    let Some(&(name, default, why)) = CASSANDRA_DEFAULT_ONLY.iter().find(|(n, _, _)| *n == s.name)
    else {
        return Ok(());
    };
    let is_default = match (name, &s.value) {
        ("caching", Literal::Map(m)) => m.iter().all(|(k, v)| {
            matches!(
                (
                    k.to_ascii_lowercase().as_str(),
                    v.to_ascii_uppercase().as_str()
                ),
                ("keys", "ALL") | ("rows_per_partition", "NONE")
            )
        }),
        ("extensions", Literal::Map(m)) => m.is_empty(),
        (_, Literal::Scalar(v)) => {
            let v = v.to_ascii_lowercase();
            match name {
                "additional_write_policy" | "speculative_retry" => {
                    v == "99p" || v == "99percentile"
                }
                "crc_check_chance" => v.parse::<f64>() == Ok(1.0),
                "max_index_interval" => v.parse::<u64>() == Ok(2048),
                "min_index_interval" => v.parse::<u64>() == Ok(128),
                _ => v == default.trim_matches('\'').to_ascii_lowercase(),
            }
        }
        _ => false,
    };
    if is_default {
        return Ok(());
    }
    Err(Error::option(
        name,
        format!(
            "only Cassandra's default {default} is accepted (at byte {}): {why}",
            s.value_pos
        ),
    ))
}

/// Single-quoted CQL string literal, quotes doubled.
// The option-specific reading of a parsed literal (the syntax is `cql::literal`).
impl Literal {
    fn as_map(&self, name: &str, pos: usize) -> Result<BTreeMap<String, String>> {
        match self {
            Literal::Map(m) => Ok(m.clone()),
            Literal::Scalar(s) => Err(Error::option(
                name,
                format!(
                    "expected a map {{'class': ...}}, got {} (at byte {pos})",
                    quote(s)
                ),
            )),
        }
    }

    fn as_scalar(&self, name: &str, pos: usize) -> Result<String> {
        match self {
            Literal::Scalar(s) => Ok(s.clone()),
            Literal::Map(_) => Err(Error::option(
                name,
                format!("expected a number, got a map (at byte {pos})"),
            )),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cassandra_only_options_are_accepted_at_their_default_only() {
        let o = TableOptions::default();
        let described = "caching = {'keys': 'ALL', 'rows_per_partition': 'NONE'} \
             AND speculative_retry = '99p' AND additional_write_policy = '99p' \
             AND read_repair = 'BLOCKING' AND cdc = false AND crc_check_chance = 1.0 \
             AND extensions = {} AND allow_auto_snapshot = true \
             AND incremental_backups = true AND memtable = 'default' \
             AND min_index_interval = 128 AND max_index_interval = 2048";
        assert_eq!(o.apply(described).unwrap(), o, "no effect on the options");
        for other in [
            "caching = {'keys': 'NONE'}",
            "caching = {'rows_per_partition': '10'}",
            "speculative_retry = 'ALWAYS'",
            "cdc = true",
            "crc_check_chance = 0.5",
            "extensions = {'a': '01'}",
            "memtable = 'trie'",
            "min_index_interval = 64",
        ] {
            let e = o.apply(other).unwrap_err().to_string();
            assert!(e.contains("only Cassandra's default"), "{other}: {e}");
        }
    }

    fn option_name(e: &Error) -> &str {
        match e {
            Error::InvalidOption { option, .. } => option,
            other => panic!("expected InvalidOption, got {other:?}"),
        }
    }

    fn reason(e: &Error) -> &str {
        match e {
            Error::InvalidOption { reason, .. } => reason,
            other => panic!("expected InvalidOption, got {other:?}"),
        }
    }

    const FULL: &str = "compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 4, 'sstable_size_in_mb': 160} \
        AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 16} AND default_time_to_live = 0 \
        AND gc_grace_seconds = 864000 AND bloom_filter_fp_chance = 0.01 AND memtable_flush_threshold_mb = 64";

    #[test]
    fn parses_the_operator_example() {
        let o = TableOptions::parse(FULL).expect("parses");
        assert_eq!(
            o.compaction.class(),
            CompactionClass::LeveledCompactionStrategy
        );
        let lcs = o.compaction.lcs();
        assert_eq!(lcs.fanout_size, 4);
        assert_eq!(lcs.sstable_size_in_mb, 160);
        assert_eq!(lcs.sstable_size_bytes(), 160 * MIB);
        assert_eq!(o.compression.class, CompressorClass::Lz4);
        assert_eq!(o.compression.chunk_length_in_kb, 16);
        assert_eq!(o.gc_grace_seconds, 864_000);
        assert_eq!(o.bloom_filter_fp_chance, 0.01);
        assert_eq!(o.memtable_flush_threshold_bytes, 64 * MIB);
    }

    #[test]
    fn defaults_equal_cassandras() {
        let o = TableOptions::default();
        assert_eq!(TableOptions::parse("").expect("empty"), o);
        assert_eq!(TableOptions::parse("   ").expect("blank"), o);
        assert_eq!(
            o.compaction.class(),
            CompactionClass::SizeTieredCompactionStrategy
        );
        assert_eq!(o.gc_grace_seconds, 864_000);
        assert_eq!(o.default_time_to_live_seconds, 0);
        assert_eq!(o.bloom_filter_fp_chance, 0.01);
        assert_eq!(
            o.compression,
            CompressionOptions {
                class: CompressorClass::Lz4,
                chunk_length_in_kb: 16,
                compression_level: 3,
                ..CompressionOptions::default()
            }
        );
        assert_eq!(o.max_value_size_bytes, 256 * MIB);
        let c = o.compaction.common();
        assert!(c.enabled);
        assert_eq!((c.min_threshold, c.max_threshold), (4, 32));
        assert_eq!(c.tombstone_threshold, 0.2);
        assert_eq!(c.tombstone_compaction_interval_seconds, 86_400);
        assert!(
            !c.unchecked_tombstone_compaction && !c.only_purge_repaired_tombstones && !c.log_all
        );
        let s = o.compaction.stcs();
        assert_eq!(
            (s.bucket_low, s.bucket_high, s.min_sstable_size_bytes),
            (0.5, 1.5, 50 * 1024 * 1024)
        );
        let l = o.compaction.lcs();
        assert_eq!(
            (
                l.sstable_size_in_mb,
                l.fanout_size,
                l.single_sstable_uplevel,
                l.level_count
            ),
            (160, 10, true, 0)
        );
        let t = o.compaction.twcs();
        assert_eq!(t.compaction_window_unit, WindowUnit::Days);
        assert_eq!(t.compaction_window_size, 1);
        assert_eq!(t.timestamp_resolution, TimestampResolution::Microseconds);
        assert_eq!(t.expired_sstable_check_frequency_seconds, 600);
        assert!(!t.unsafe_aggressive_sstable_expiration);
        assert_eq!(t.window_seconds(), 86_400);
        let d = o.compaction.dtcs();
        assert_eq!(
            (
                d.base_time_seconds,
                d.max_sstable_age_days,
                d.max_window_size_seconds
            ),
            (60, 365_000.0, 86_400)
        );
        assert_eq!(o.compaction.blob().max_sstable_fragmentation, 5.0);
    }

    #[test]
    fn quoting_numbers_whitespace_and_case_are_tolerated() {
        let a = TableOptions::parse(
            "COMPACTION={\"class\":\"org.apache.cassandra.db.compaction.LeveledCompactionStrategy\",'fanout_size':'4',}\n\tand gc_grace_seconds='3600'",
        )
        .expect("parses");
        assert_eq!(a.compaction.lcs().fanout_size, 4);
        assert_eq!(a.gc_grace_seconds, 3600);
        let b = TableOptions::parse(
            "compaction = {'class': 'CFSCompactionStrategy', 'max_sstable_fragmentation': 2.0}",
        )
        .expect("CFS alias");
        assert_eq!(
            b.compaction.class(),
            CompactionClass::BlobCompactionStrategy
        );
        assert_eq!(b.compaction.blob().max_sstable_fragmentation, 2.0);
        let c = TableOptions::parse(
            "compaction = {'class': 'com.datastax.bdp.hadoop.cfs.compaction.CFSCompactionStrategy'}",
        )
        .expect("DSE name");
        assert_eq!(
            c.compaction.class(),
            CompactionClass::BlobCompactionStrategy
        );
        let z = TableOptions::parse(
            "compression = {'class': 'org.apache.cassandra.io.compress.ZstdCompressor', 'compression_level': -3, 'chunk_length_in_kb': 64}",
        )
        .expect("zstd");
        assert_eq!(
            z.compression,
            CompressionOptions {
                class: CompressorClass::Zstd,
                chunk_length_in_kb: 64,
                compression_level: -3,
                ..CompressionOptions::default()
            }
        );
        let s = TableOptions::parse("compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': false, 'bucket_high': 2}")
            .expect("bare bool");
        assert!(!s.compaction.common().enabled);
        assert_eq!(s.compaction.stcs().bucket_high, 2.0);
    }

    #[test]
    fn every_strategy_parses_its_own_options() {
        let t = TableOptions::parse(
            "compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'HOURS', \
             'compaction_window_size': 6, 'timestamp_resolution': 'MILLISECONDS', \
             'expired_sstable_check_frequency_seconds': 60, 'unsafe_aggressive_sstable_expiration': 'true', \
             'min_threshold': 2, 'bucket_low': 0.3}",
        )
        .expect("twcs");
        let tw = t.compaction.twcs();
        assert_eq!(tw.window_seconds(), 6 * 3600);
        assert_eq!(tw.timestamp_resolution.to_micros(5), 5000);
        assert!(tw.unsafe_aggressive_sstable_expiration);
        assert_eq!(t.compaction.common().min_threshold, 2);
        assert_eq!(t.compaction.stcs().bucket_low, 0.3);
        let d = TableOptions::parse(
            "compaction = {'class': 'DateTieredCompactionStrategy', 'base_time_seconds': 3600, \
             'max_sstable_age_days': 0.5, 'max_window_size_seconds': 7200, 'timestamp_resolution': 'SECONDS'}",
        )
        .expect("dtcs");
        let dt = d.compaction.dtcs();
        assert_eq!(
            (
                dt.base_time_seconds,
                dt.max_sstable_age_days,
                dt.max_window_size_seconds
            ),
            (3600, 0.5, 7200)
        );
        let l = TableOptions::parse(
            "compaction = {'class': 'LeveledCompactionStrategy', 'level_count': 3, 'single_sstable_uplevel': false, 'l0_size_tiered': true, \
             'tombstone_threshold': 0.5, 'tombstone_compaction_interval': 0, 'log_all': true}",
        )
        .expect("lcs");
        assert_eq!(l.compaction.lcs().level_count, 3);
        assert!(!l.compaction.lcs().single_sstable_uplevel);
        assert!(l.compaction.lcs().l0_size_tiered);
        assert_eq!(l.compaction.lcs().l0_compaction_trigger, 0);
        let t = TableOptions::parse(
            "compaction = {'class': 'LeveledCompactionStrategy', 'l0_compaction_trigger': 4}",
        )
        .expect("trigger");
        assert_eq!(t.compaction.lcs().l0_compaction_trigger, 4);
        assert_eq!(l.compaction.common().tombstone_threshold, 0.5);
        assert_eq!(
            l.compaction.common().tombstone_compaction_interval_seconds,
            0
        );
    }

    #[test]
    fn min_compress_ratio_is_cassandras_option() {
        // Default 0.0: every chunk kept compressed (no limit).
        let d = TableOptions::default().compression;
        assert_eq!(d.min_compress_ratio, 0.0);
        assert_eq!(
            d.params().max_compressed_bytes,
            crate::codec::NO_COMPRESSED_LIMIT
        );
        // 1.1 on 16 KiB chunks: Cassandra's ceil(16384 / 1.1) = 14895.
        let o = TableOptions::parse(
            "compression = {'class': 'ZstdCompressor', 'min_compress_ratio': 1.1}",
        )
        .expect("ratio");
        assert_eq!(o.compression.params().max_compressed_bytes, 14895);
        // Round trip, and only written when set.
        assert_eq!(TableOptions::parse(&o.to_string()).expect("round trip"), o);
        assert!(o.to_string().contains("'min_compress_ratio': '1.1'"));
        assert!(!TableOptions::default()
            .to_string()
            .contains("min_compress_ratio"));
        // 1 stores raw any chunk that does not shrink.
        let one = TableOptions::parse(
            "compression = {'class': 'LZ4Compressor', 'min_compress_ratio': 1}",
        )
        .expect("1");
        assert_eq!(one.compression.params().max_compressed_bytes, 16384);
        // Cassandra refuses (0, 1) and negatives; Strata also non-finite values.
        for bad in ["0.5", "-1", "NaN", "inf"] {
            let e = TableOptions::parse(&format!(
                "compression = {{'class': 'LZ4Compressor', 'min_compress_ratio': '{bad}'}}"
            ))
            .expect_err(bad);
            assert_eq!(option_name(&e), "min_compress_ratio", "{bad}: {e}");
        }
    }

    #[test]
    fn memtable_flush_period_in_ms_is_cassandras_option() {
        let o = TableOptions::parse("memtable_flush_period_in_ms = 60000").expect("period");
        assert_eq!(o.memtable_flush_period_in_ms, 60_000);
        assert_eq!(TableOptions::default().memtable_flush_period_in_ms, 0);
        assert_eq!(TableOptions::parse(&o.to_string()).expect("round trip"), o);
        let max = TableOptions::parse("memtable_flush_period_in_ms = 2147483647").expect("int max");
        assert_eq!(max.memtable_flush_period_in_ms, i32::MAX as u32);
        for bad in ["-1", "2147483648", "'soon'"] {
            let e = TableOptions::parse(&format!("memtable_flush_period_in_ms = {bad}"))
                .expect_err(bad);
            assert_eq!(option_name(&e), "memtable_flush_period_in_ms");
        }
        // A schema written before the option reads back with it off.
        let mut json = serde_json::to_value(TableOptions::default()).expect("json");
        json.as_object_mut()
            .expect("object")
            .remove("memtable_flush_period_in_ms");
        let back: TableOptions = serde_json::from_value(json).expect("old schema");
        assert_eq!(back.memtable_flush_period_in_ms, 0);
    }

    #[test]
    fn time_series_options_parse_as_cassandras_option_classes() {
        let parse = |text: &str| {
            TableOptions::parse(&format!("compaction = {{{text}}}"))
                .unwrap_or_else(|e| panic!("{text}: {e}"))
                .compaction
        };
        // DTCS takes STCS's options (Cassandra's DTCS validates them through
        // SizeTieredCompactionStrategyOptions and sizes its windows' tiers).
        let d = parse(
            "'class': 'DateTieredCompactionStrategy', 'bucket_low': 0.25, 'bucket_high': 2.0, \
             'min_sstable_size': 1000",
        );
        let st = d.stcs();
        assert_eq!(
            (st.bucket_low, st.bucket_high, st.min_sstable_size_bytes),
            (0.25, 2.0, 1000)
        );
        // Every Java TimeUnit for DTCS's resolution, and a max window of 0.
        for unit in ["MINUTES", "HOURS", "DAYS"] {
            let d = parse(&format!(
                "'class': 'DateTieredCompactionStrategy', 'timestamp_resolution': '{unit}', \
                 'base_time_seconds': 86400, 'max_window_size_seconds': 0"
            ))
            .dtcs();
            assert_eq!(d.timestamp_resolution.name(), unit);
            assert_eq!(d.max_window_units(), 0);
        }
        // Cassandra converts seconds into the resolution truncating: 90 s is 1
        // minute; 86400 s is 1440 minutes.
        let d = parse(
            "'class': 'DateTieredCompactionStrategy', 'timestamp_resolution': 'MINUTES', \
             'base_time_seconds': 90",
        )
        .dtcs();
        assert_eq!((d.base_units(), d.max_window_units()), (1, 1440));
        // max_sstable_age_days is rounded into resolution units, as
        // Math.round: 1.4 days is 120960000000 us exactly (truncation gave one
        // microsecond less, dropping an sstable exactly at the cut-off).
        let d =
            parse("'class': 'DateTieredCompactionStrategy', 'max_sstable_age_days': 1.4").dtcs();
        assert_eq!(d.max_sstable_age_units(), 120_960_000_000);
        assert!(std::hint::black_box(1.4f64) * 86_400e6 < 120_960_000_000.0);
        let d = parse(
            "'class': 'DateTieredCompactionStrategy', 'max_sstable_age_days': 0.0001, \
             'timestamp_resolution': 'SECONDS'",
        )
        .dtcs();
        assert_eq!(d.max_sstable_age_units(), 9); // 8.64 rounds to 9
                                                  // TWCS: the largest Java int is a valid window size.
        let t =
            parse("'class': 'TimeWindowCompactionStrategy', 'compaction_window_size': 2147483647")
                .twcs();
        assert_eq!(t.compaction_window_size, i32::MAX as u32);
    }

    #[test]
    fn unknown_options_are_named() {
        let e = TableOptions::parse("gc_grace = 5").expect_err("unknown");
        assert_eq!(option_name(&e), "gc_grace");
        let e = TableOptions::parse(
            "compaction = {'class': 'SizeTieredCompactionStrategy', 'fanout_size': 4}",
        )
        .expect_err("LCS option on STCS");
        assert_eq!(option_name(&e), "fanout_size");
        assert!(reason(&e).contains("SizeTieredCompactionStrategy"), "{e}");
        let e = TableOptions::parse(
            "compaction = {'class': 'DateTieredCompactionStrategy', 'fanout_size': 4}",
        )
        .expect_err("LCS option on DTCS");
        assert_eq!(option_name(&e), "fanout_size");
        let e = TableOptions::parse("compaction = {'class': 'NoSuchStrategy'}")
            .expect_err("unknown class");
        assert_eq!(option_name(&e), "class");
        let e = TableOptions::parse("compaction = {'fanout_size': 4}").expect_err("missing class");
        assert_eq!(option_name(&e), "class");
        // crc_check_chance: 1.0 is what Strata does (every chunk checked); less
        // would skip checks, and is refused with the reason.
        assert!(TableOptions::parse(
            "compression = {'class': 'LZ4Compressor', 'crc_check_chance': 1}"
        )
        .is_ok());
        let e = TableOptions::parse(
            "compression = {'class': 'LZ4Compressor', 'crc_check_chance': 0.5}",
        )
        .expect_err("a lower chance");
        assert_eq!(option_name(&e), "crc_check_chance");
        assert!(reason(&e).contains("every chunk"));
        let e =
            TableOptions::parse("compression = {'class': 'SnappyCompressor'}").expect_err("snappy");
        assert!(reason(&e).contains("not supported"));
    }

    #[test]
    fn dictionary_classes_and_their_options() {
        let o = TableOptions::parse(
            "compression = {'class': 'org.apache.cassandra.io.compress.ZstdDictionaryCompressor', 'compression_level': 5}",
        )
        .expect("Cassandra 6's name");
        assert_eq!(o.compression.class, CompressorClass::ZstdWithDicts);
        assert_eq!(
            o.compression.params().codec,
            crate::codec::Codec::ZstdDict { level: 5, dict: 0 }
        );
        assert_eq!(o.compression.training_max_dictionary_size, 64 * 1024);
        let o =
            TableOptions::parse("compression = {'class': 'LZ4WithDictsCompressor'}").expect("lz4");
        assert_eq!(
            o.compression.params().codec,
            crate::codec::Codec::Lz4Dict { dict: 0 }
        );
        for (text, option, says) in [
            (
                "compression = {'class': 'LZ4WithDictsCompressor', 'compression_level': 3}",
                "compression_level",
                "only applies to ZstdCompressor",
            ),
            (
                "compression = {'class': 'LZ4Compressor', 'training_max_dictionary_size': 4096}",
                "training_max_dictionary_size",
                "only applies to ZstdWithDictsCompressor",
            ),
            (
                "compression = {'class': 'ZstdWithDictsCompressor', 'training_max_dictionary_size': 100}",
                "training_max_dictionary_size",
                "",
            ),
            (
                "compression = {'class': 'ZstdWithDictsCompressor', 'training_max_total_sample_size': 1000}",
                "training_max_total_sample_size",
                "",
            ),
        ] {
            let e = TableOptions::parse(text).expect_err(text);
            assert_eq!(option_name(&e), option, "{text}");
            assert!(reason(&e).contains(says), "{text}: {}", reason(&e));
        }
    }

    #[test]
    fn out_of_range_values_are_rejected() {
        let cases: &[(&str, &str)] = &[
            ("bloom_filter_fp_chance = 0", "bloom_filter_fp_chance"),
            ("bloom_filter_fp_chance = 1.5", "bloom_filter_fp_chance"),
            ("gc_grace_seconds = -1", "gc_grace_seconds"),
            ("gc_grace_seconds = 4294967296", "gc_grace_seconds"),
            ("default_time_to_live = 630720001", "default_time_to_live"),
            ("memtable_flush_threshold_mb = 0", "memtable_flush_threshold_mb"),
            ("memtable_flush_threshold_kb = 63", "memtable_flush_threshold_kb"),
            ("max_value_size_in_mb = 2048", "max_value_size_in_mb"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 1}", "fanout_size"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'sstable_size_in_mb': 0}", "sstable_size_in_mb"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'level_count': 1}", "level_count"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'level_count': 11}", "level_count"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'l0_compaction_trigger': 33}", "l0_compaction_trigger"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'l0_compaction_trigger': 1}", "l0_compaction_trigger"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'l0_compaction_trigger': 4, 'l0_size_tiered': true}", "l0_compaction_trigger"),
            ("compaction = {'class': 'LeveledCompactionStrategy', 'l0_compaction_trigger': 4, 'level_count': 3}", "l0_compaction_trigger"),
            ("compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 1}", "min_threshold"),
            ("compaction = {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 8, 'max_threshold': 6}", "max_threshold"),
            ("compaction = {'class': 'SizeTieredCompactionStrategy', 'tombstone_threshold': 1.1}", "tombstone_threshold"),
            ("compaction = {'class': 'SizeTieredCompactionStrategy', 'bucket_low': 0.9, 'bucket_high': 0.8}", "bucket_high"),
            ("compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'WEEKS'}", "compaction_window_unit"),
            ("compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_size': 0}", "compaction_window_size"),
            ("compaction = {'class': 'DateTieredCompactionStrategy', 'base_time_seconds': 0}", "base_time_seconds"),
            ("compaction = {'class': 'DateTieredCompactionStrategy', 'max_sstable_age_days': -1}", "max_sstable_age_days"),
            ("compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'days'}", "compaction_window_unit"),
            ("compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_size': 2147483648}", "compaction_window_size"),
            ("compaction = {'class': 'TimeWindowCompactionStrategy', 'timestamp_resolution': 'microseconds'}", "timestamp_resolution"),
            ("compaction = {'class': 'TimeWindowCompactionStrategy', 'timestamp_resolution': 'MINUTES'}", "timestamp_resolution"),
            ("compaction = {'class': 'DateTieredCompactionStrategy', 'timestamp_resolution': 'Seconds'}", "timestamp_resolution"),
            ("compaction = {'class': 'DateTieredCompactionStrategy', 'timestamp_resolution': 'DAYS'}", "base_time_seconds"),
            ("compaction = {'class': 'DateTieredCompactionStrategy', 'base_time_seconds': 9223372036854775808}", "base_time_seconds"),
            ("compaction = {'class': 'DateTieredCompactionStrategy', 'bucket_low': 0.9, 'bucket_high': 0.8}", "bucket_high"),
            ("compaction = {'class': 'CfsCompactionStrategy', 'max_sstable_fragmentation': 1.0}", "max_sstable_fragmentation"),
            ("compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 3}", "chunk_length_in_kb"),
            ("compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 2048}", "chunk_length_in_kb"),
            ("compression = {'class': 'ZstdCompressor', 'compression_level': 23}", "compression_level"),
            ("compression = {'class': 'LZ4Compressor', 'compression_level': 3}", "compression_level"),
            ("compression = {'enabled': 'false', 'class': 'LZ4Compressor'}", "class"),
        ];
        for (text, option) in cases {
            let e = TableOptions::parse(text).expect_err(text);
            assert_eq!(option_name(&e), *option, "{text}: {e}");
        }
    }

    #[test]
    fn wrong_types_are_rejected() {
        let e = TableOptions::parse("gc_grace_seconds = 'ten days'").expect_err("text for int");
        assert_eq!(option_name(&e), "gc_grace_seconds");
        assert!(reason(&e).contains("whole number"), "{e}");
        let e = TableOptions::parse("gc_grace_seconds = 1.5").expect_err("fraction for int");
        assert_eq!(option_name(&e), "gc_grace_seconds");
        let e = TableOptions::parse("gc_grace_seconds = {'a': 1}").expect_err("map for int");
        assert_eq!(option_name(&e), "gc_grace_seconds");
        let e = TableOptions::parse("compaction = 'LeveledCompactionStrategy'")
            .expect_err("string for map");
        assert_eq!(option_name(&e), "compaction");
        let e = TableOptions::parse(
            "compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'yes'}",
        )
        .expect_err("bad bool");
        assert_eq!(option_name(&e), "enabled");
    }

    #[test]
    fn syntax_errors_point_at_the_position() {
        let text = "gc_grace_seconds = 10 AND compaction = {'class' 'LeveledCompactionStrategy'}";
        let e = TableOptions::parse(text).expect_err("missing colon");
        assert_eq!(option_name(&e), "compaction");
        let pos = text.find("'LeveledCompactionStrategy'").expect("in text");
        assert!(reason(&e).contains(&format!("at byte {pos}")), "{e}");
        let e = TableOptions::parse("gc_grace_seconds = 10 gc_grace_seconds = 11")
            .expect_err("missing AND");
        assert!(
            reason(&e).contains("at byte 22") && reason(&e).contains("expected AND"),
            "{e}"
        );
        let e = TableOptions::parse("compaction = {'class': 'LeveledCompactionStrategy")
            .expect_err("unterminated");
        assert!(reason(&e).contains("unterminated string"), "{e}");
        let e = TableOptions::parse("gc_grace_seconds 10").expect_err("missing =");
        assert_eq!(option_name(&e), "gc_grace_seconds");
        let e = TableOptions::parse("gc_grace_seconds = 1 AND gc_grace_seconds = 2")
            .expect_err("twice");
        assert_eq!(option_name(&e), "gc_grace_seconds");
        let e = TableOptions::parse(
            "compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 0}",
        )
        .expect_err("out of range inside a map");
        assert!(reason(&e).contains("value at byte 13"), "{e}");
        let e = TableOptions::parse("gc_grace_seconds = 10 AND").expect_err("dangling AND");
        assert!(reason(&e).contains("end of input"), "{e}");
    }

    #[test]
    fn display_round_trips() {
        let samples = [
            TableOptions::default(),
            TableOptions::parse(FULL).expect("full"),
            TableOptions::parse(
                "compaction = {'class': 'TimeWindowCompactionStrategy', 'compaction_window_unit': 'MINUTES', 'compaction_window_size': 30} \
                 AND compression = {'enabled': false} AND bloom_filter_fp_chance = 1 AND memtable_flush_threshold_kb = 100 \
                 AND max_value_size_in_kb = 1536 AND default_time_to_live = 3600",
            )
            .expect("twcs"),
            TableOptions::parse(
                "compaction = {'class': 'BlobCompactionStrategy', 'max_sstable_fragmentation': 2.5} \
                 AND compression = {'class': 'ZstdCompressor', 'compression_level': 19} AND bloom_filter_fp_chance = 0.000123",
            )
            .expect("cfs"),
            TableOptions::parse(
                "compression = {'class': 'ZstdWithDictsCompressor', 'compression_level': 6, \
                 'training_max_dictionary_size': 32768, 'training_max_total_sample_size': 1048576}",
            )
            .expect("zstd dicts"),
            TableOptions::parse("compression = {'class': 'LZ4WithDictsCompressor', 'chunk_length_in_kb': 4}")
                .expect("lz4 dicts"),
        ];
        for o in samples {
            let text = o.to_string();
            assert_eq!(TableOptions::parse(&text).expect(&text), o, "{text}");
        }
        let text = TableOptions::default().to_string();
        assert!(text.starts_with("compaction = {'class': 'SizeTieredCompactionStrategy'} AND compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': '16'}"), "{text}");
    }

    #[test]
    fn alter_changes_only_what_it_names_and_nothing_on_error() {
        let base = TableOptions::parse(FULL).expect("full");
        let altered = base.apply("gc_grace_seconds = 60").expect("alter");
        assert_eq!(altered.gc_grace_seconds, 60);
        assert_eq!(altered.compaction, base.compaction);
        // A compaction map replaces the previous one whole (invariant 5).
        let restrategy = base
            .apply("compaction = {'class': 'LeveledCompactionStrategy'}")
            .expect("alter");
        assert_eq!(restrategy.compaction.lcs().fanout_size, 10);
        let before = base.clone();
        let e = base
            .apply("gc_grace_seconds = 60 AND nonsense = 1")
            .expect_err("unknown");
        assert_eq!(option_name(&e), "nonsense");
        assert_eq!(base, before);
    }

    #[test]
    fn serde_round_trip_and_validation_on_deserialize() {
        let o = TableOptions::parse(FULL).expect("full");
        let json = serde_json::to_string(&o).expect("serialize");
        let back: TableOptions = serde_json::from_str(&json).expect("deserialize");
        assert_eq!(back, o);
        let bad = json.replace("\"fanout_size\":\"4\"", "\"fanout_size\":\"1\"");
        assert_ne!(bad, json);
        assert!(serde_json::from_str::<TableOptions>(&bad).is_err());
    }

    #[test]
    fn compression_maps_to_writer_params() {
        for text in [
            "compression = {'enabled': false}",
            "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 1}",
            "compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 1024, 'compression_level': -7}",
            "compression = {'class': 'ZstdCompressor', 'compression_level': 22}",
        ] {
            let o = TableOptions::parse(text).expect(text);
            let p = o.compression.params();
            p.validate().expect(text);
            assert_eq!(p.chunk_length_bytes as usize, o.compression.chunk_length_bytes());
        }
        let z = TableOptions::parse(
            "compression = {'class': 'ZstdCompressor', 'compression_level': 9}",
        )
        .expect("zstd");
        assert_eq!(
            z.compression.params().codec,
            crate::codec::Codec::Zstd { level: 9 }
        );
    }
}
