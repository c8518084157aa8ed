//! Compression dictionaries: trained from a sample of a table's data, stored
//! once per table, referenced by id from every sstable compressed with them
//! (ScyllaDB's `ZstdWithDictsCompressor`, Cassandra 6's
//! `ZstdDictionaryCompressor`).
//!
//! Why: a 16 KiB chunk of 60-byte partitions gives zstd or LZ4 little history to
//! find repeats in; a dictionary trained on the table's own data primes every
//! chunk with the byte strings that recur across partitions (column layouts,
//! timestamps' high bytes, common names), which is most of what a small row has
//! to compress.
//!
//! Owns: `<table_dir>/CompressionDictionary-<id>.db`, one file per dictionary.
//!
//! File layout (all integers little-endian):
//! `magic "STRDICT1" | id u32 | trained_at_seconds i64 | sample_bytes u64 |
//! sample_compressed_bytes u64 | codec id u32 | level i32 | length u32 |
//! dictionary bytes | crc32c u32 of everything before it`. The codec and level
//! are those the sample was measured with (`sample_compressed_bytes`). The dictionary bytes are zstd's trained
//! format (`ZDICT_trainFromBuffer`); LZ4 uses their last 64 KiB as its window.
//!
//! Threads: [`load`] may be called from any thread; one loaded copy per file is
//! shared by every reader and writer in the process (a cache of weak references
//! keyed by path).
//!
//! Invariants:
//! 1. A dictionary file is durable (written to a `.tmp`, fsynced, renamed,
//!    directory fsynced) before any sstable that names it is written, so a
//!    listed sstable's dictionary exists whenever the sstable does.
//! 2. Dictionary files are never rewritten and never deleted by the engine: ids
//!    only grow (the highest id + 1), and an sstable in a snapshot, a backup or
//!    the quarantine may still name an old one. A dictionary is at most a few
//!    hundred KiB; keeping every one costs little.
//! 3. The newest dictionary (highest id) is the table's current one: what new
//!    sstables are written with. Older ones keep serving the sstables that name
//!    them.
//! 4. A damaged or missing dictionary makes the sstables that name it
//!    unreadable (never silently decoded without it): their open fails with the
//!    dictionary's path and the reason, and the table sets them aside as it does
//!    any unreadable sstable.

use crate::codec::{Codec, CompressionParams};
use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoTag};
use parking_lot::{Mutex, RwLock};
use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Weak};

const MAGIC: &[u8; 8] = b"STRDICT1";
const HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 8 + 4 + 4 + 4;
const FILE_PREFIX: &str = "CompressionDictionary-";
const FILE_SUFFIX: &str = ".db";

/// Default largest dictionary, bytes (Cassandra 6's
/// `training_max_dictionary_size`, 64 KiB; zstd's own default is 110 KiB).
pub const DEFAULT_MAX_DICTIONARY_BYTES: usize = 64 * 1024;
/// Default sample a training reads, bytes (Cassandra 6's
/// `training_max_total_sample_size`, 10 MiB; zstd advises ~100x the dictionary).
pub const DEFAULT_MAX_SAMPLE_BYTES: usize = 10 << 20;
/// Below this much sample, zstd's trainer either fails or learns noise: a
/// table holding less is not trained (its data fits in a few chunks anyway).
pub const MIN_SAMPLE_BYTES: usize = 64 * 1024;
/// Smallest and largest accepted dictionary sizes (zstd refuses below ~256 B;
/// above 1 MiB the dictionary costs more memory per loaded table than it saves).
pub const MIN_DICTIONARY_BYTES: usize = 1024;
pub const MAX_DICTIONARY_BYTES: usize = 1 << 20;
/// Samples are cut into pieces this long for the trainer: it learns from the
/// segments that recur across many samples, and a few hundred whole chunks
/// give it too few (zstd's trainer refuses fewer than about ten samples).
const TRAIN_PIECE_BYTES: usize = 4096;

/// One trained dictionary, loaded and prepared for both directions.
pub struct CompressionDictionary {
    id: u32,
    bytes: Vec<u8>,
    trained_at_seconds: i64,
    sample_bytes: u64,
    sample_compressed_bytes: u64,
    measured: Codec,
    decoder: zstd::dict::DecoderDictionary<'static>,
    /// Prepared encoders by zstd level: preparing one costs about as much as
    /// compressing 100 KiB, so each level is prepared once per loaded copy.
    encoders: Mutex<Vec<(i32, Arc<zstd::dict::EncoderDictionary<'static>>)>>,
}

impl std::fmt::Debug for CompressionDictionary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CompressionDictionary")
            .field("id", &self.id)
            .field("bytes", &self.bytes.len())
            .field("sample_ratio", &self.sample_ratio())
            .finish()
    }
}

impl CompressionDictionary {
    fn new(
        id: u32,
        bytes: Vec<u8>,
        trained_at_seconds: i64,
        sample_bytes: u64,
        sample_compressed_bytes: u64,
        measured: Codec,
    ) -> CompressionDictionary {
        CompressionDictionary {
            id,
            decoder: zstd::dict::DecoderDictionary::copy(&bytes),
            bytes,
            trained_at_seconds,
            sample_bytes,
            sample_compressed_bytes,
            measured,
            encoders: Mutex::new(Vec::new()),
        }
    }

    pub fn id(&self) -> u32 {
        self.id
    }

    /// The dictionary's bytes (zstd's trained format).
    pub fn bytes(&self) -> &[u8] {
        &self.bytes
    }

    /// What LZ4 primes its window with: the last 64 KiB (LZ4's whole reach).
    pub fn lz4_window(&self) -> &[u8] {
        &self.bytes[self.bytes.len().saturating_sub(64 * 1024)..]
    }

    pub fn trained_at_seconds(&self) -> i64 {
        self.trained_at_seconds
    }

    /// Uncompressed bytes of the sample it was trained on.
    pub fn sample_bytes(&self) -> u64 {
        self.sample_bytes
    }

    /// Compressed / uncompressed on its own training sample, chunk by chunk at
    /// the level it was trained for: the baseline drift is measured against.
    pub fn sample_ratio(&self) -> f64 {
        ratio(self.sample_compressed_bytes, self.sample_bytes)
    }

    /// The codec [`sample_ratio`](Self::sample_ratio) was measured with.
    pub fn measured_codec(&self) -> Codec {
        self.measured
    }

    pub(crate) fn decoder(&self) -> &zstd::zstd_safe::DDict<'static> {
        self.decoder.as_ddict()
    }

    /// The prepared encoder for zstd `level`.
    pub(crate) fn encoder(&self, level: i32) -> Arc<zstd::dict::EncoderDictionary<'static>> {
        let mut encoders = self.encoders.lock();
        if let Some((_, e)) = encoders.iter().find(|(l, _)| *l == level) {
            return e.clone();
        }
        let e = Arc::new(zstd::dict::EncoderDictionary::copy(&self.bytes, level));
        encoders.push((level, e.clone()));
        e
    }

    fn encode_file(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_BYTES + self.bytes.len() + 4);
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&self.id.to_le_bytes());
        out.extend_from_slice(&self.trained_at_seconds.to_le_bytes());
        out.extend_from_slice(&self.sample_bytes.to_le_bytes());
        out.extend_from_slice(&self.sample_compressed_bytes.to_le_bytes());
        out.extend_from_slice(&u32::from(self.measured.id()).to_le_bytes());
        out.extend_from_slice(&self.measured.level().to_le_bytes());
        out.extend_from_slice(&(self.bytes.len() as u32).to_le_bytes());
        out.extend_from_slice(&self.bytes);
        let crc = crc32c::crc32c(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    fn decode_file(data: &[u8]) -> std::result::Result<CompressionDictionary, String> {
        if data.len() < HEADER_BYTES + 4 {
            return Err(format!("{} bytes is shorter than a header", data.len()));
        }
        let (body, crc) = data.split_at(data.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let actual = crc32c::crc32c(body);
        if stored != actual {
            return Err(format!(
                "checksum mismatch (stored {stored:#010x}, computed {actual:#010x})"
            ));
        }
        if &body[..8] != MAGIC {
            return Err("bad magic (not a Strata compression dictionary)".into());
        }
        // Fixed-width fields at known offsets; the length is checked below.
        let u32_at =
            |at: usize| u32::from_le_bytes([body[at], body[at + 1], body[at + 2], body[at + 3]]);
        let u64_at = |at: usize| {
            let mut b = [0u8; 8];
            b.copy_from_slice(&body[at..at + 8]);
            u64::from_le_bytes(b)
        };
        let id = u32_at(8);
        let trained_at = u64_at(12) as i64;
        let sample = u64_at(20);
        let sample_compressed = u64_at(28);
        let measured = match (u8::try_from(u32_at(36)), u32_at(40) as i32) {
            (Ok(crate::codec::CODEC_ID_ZSTD_DICT), level) => Codec::ZstdDict { level, dict: id },
            (Ok(crate::codec::CODEC_ID_LZ4_DICT), _) => Codec::Lz4Dict { dict: id },
            (codec, _) => return Err(format!("unknown measured codec {codec:?}")),
        };
        let len = u32_at(44) as usize;
        if body.len() != HEADER_BYTES + len {
            return Err(format!(
                "length field says {len} dictionary bytes, file holds {}",
                body.len() - HEADER_BYTES
            ));
        }
        Ok(CompressionDictionary::new(
            id,
            body[HEADER_BYTES..].to_vec(),
            trained_at,
            sample,
            sample_compressed,
            measured,
        ))
    }
}

/// Compressed over uncompressed bytes; 1 for no bytes (nothing gained).
fn ratio(compressed: u64, uncompressed: u64) -> f64 {
    if uncompressed == 0 {
        1.0
    } else {
        compressed as f64 / uncompressed as f64
    }
}

/// The file name of dictionary `id`.
pub fn file_name(id: u32) -> String {
    format!("{FILE_PREFIX}{id}{FILE_SUFFIX}")
}

/// The dictionary id a file name stands for.
pub fn parse_file_name(name: &str) -> Option<u32> {
    name.strip_prefix(FILE_PREFIX)?
        .strip_suffix(FILE_SUFFIX)?
        .parse()
        .ok()
}

/// Where the dictionaries of the sstable at `sstable_path` are: its own
/// directory (a table directory, or a snapshot, which links the dictionaries
/// its sstables name), except for a quarantined sstable, whose dictionaries
/// stayed in the table directory above the quarantine.
pub fn dir_for(sstable_path: &Path) -> PathBuf {
    let dir = sstable_path.parent().unwrap_or(Path::new("."));
    match (dir.file_name(), dir.parent()) {
        (Some(name), Some(table_dir)) if name == crate::quarantine::QUARANTINE_DIR => {
            table_dir.to_path_buf()
        }
        _ => dir.to_path_buf(),
    }
}

/// The dictionary ids present in `table_dir`, ascending.
pub fn list(fs: &Fs, table_dir: &Path) -> Result<Vec<u32>> {
    let mut ids: Vec<u32> = fs
        .list_dir(table_dir)?
        .iter()
        .filter_map(|n| parse_file_name(n))
        .collect();
    ids.sort_unstable();
    Ok(ids)
}

fn cache() -> &'static Mutex<HashMap<PathBuf, Weak<CompressionDictionary>>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<PathBuf, Weak<CompressionDictionary>>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Dictionary `id` of the table in `table_dir`, loaded once per process while
/// anything holds it. The error names the file and what is wrong with it
/// (invariant 4).
pub fn load(fs: &Fs, table_dir: &Path, id: u32) -> Result<Arc<CompressionDictionary>> {
    let path = table_dir.join(file_name(id));
    if let Some(d) = cache().lock().get(&path).and_then(Weak::upgrade) {
        return Ok(d);
    }
    let data = fs.read_all(
        &path,
        (HEADER_BYTES + MAX_DICTIONARY_BYTES) as u64,
        IoTag::new(IoCause::Metadata),
    )?;
    let dict = CompressionDictionary::decode_file(&data).map_err(|reason| {
        Error::corruption(&path, 0, format!("compression dictionary: {reason}"))
    })?;
    if dict.id != id {
        return Err(Error::corruption(
            &path,
            8,
            format!(
                "compression dictionary: file holds id {}, its name says {id}",
                dict.id
            ),
        ));
    }
    let dict = Arc::new(dict);
    let mut cache = cache().lock();
    cache.retain(|_, w| w.strong_count() > 0);
    // Another thread may have loaded it meanwhile: keep one copy.
    if let Some(d) = cache.get(&path).and_then(Weak::upgrade) {
        return Ok(d);
    }
    cache.insert(path, Arc::downgrade(&dict));
    Ok(dict)
}

/// The current dictionary of the table in `table_dir` (invariant 3), if any.
pub fn load_latest(fs: &Fs, table_dir: &Path) -> Result<Option<Arc<CompressionDictionary>>> {
    match list(fs, table_dir)?.last() {
        Some(&id) => load(fs, table_dir, id).map(Some),
        None => Ok(None),
    }
}

/// A dictionary trained but not yet stored.
pub struct Trained {
    pub bytes: Vec<u8>,
    /// Samples measured (whole chunks), uncompressed bytes.
    pub sample_bytes: u64,
    /// Those samples stored with `codec` and this dictionary (chunk framing
    /// included).
    pub sample_compressed_bytes: u64,
    /// The same without a dictionary: what the dictionary gains.
    pub plain_compressed_bytes: u64,
    pub codec: Codec,
}

impl Trained {
    /// Compressed / uncompressed on the training sample.
    pub fn sample_ratio(&self) -> f64 {
        ratio(self.sample_compressed_bytes, self.sample_bytes)
    }

    /// Compressed / uncompressed on the same samples without a dictionary.
    pub fn plain_ratio(&self) -> f64 {
        ratio(self.plain_compressed_bytes, self.sample_bytes)
    }

    /// A loaded dictionary for estimates (`upgradesstables --dry-run`) that is
    /// never stored; id 0 is never a stored id.
    pub fn unsaved(&self) -> CompressionDictionary {
        CompressionDictionary::new(
            0,
            self.bytes.clone(),
            0,
            self.sample_bytes,
            self.sample_compressed_bytes,
            self.codec.with_dictionary(0),
        )
    }
}

/// Trains a dictionary of at most `max_bytes` on `samples` (whole chunks of the
/// table's uncompressed data stream), and measures it on the same samples
/// with `codec` (a dictionary codec: zstd at its level, or LZ4), with and
/// without the dictionary. Errors: too little sample (`MIN_SAMPLE_BYTES`), or
/// zstd's trainer refusing the data (too uniform or too random to learn from).
pub fn train(samples: &[Vec<u8>], max_bytes: usize, codec: Codec) -> Result<Trained> {
    let total: usize = samples.iter().map(Vec::len).sum();
    if total < MIN_SAMPLE_BYTES {
        return Err(Error::InvalidInput(format!(
            "too little data to train a compression dictionary: {total} bytes sampled, at \
             least {MIN_SAMPLE_BYTES} needed (flush more data first)"
        )));
    }
    let max_bytes = max_bytes.clamp(MIN_DICTIONARY_BYTES, MAX_DICTIONARY_BYTES);
    // Trained on every other sample and measured on the rest: measured on what
    // it was trained on, a dictionary as large as a small sample memorizes it
    // and reports a gain no other data will see (a 64 KiB dictionary showed
    // 0.50 on 128 KiB of random values it had learned by heart).
    let pieces: Vec<&[u8]> = training_half(samples)
        .flat_map(|s| s.chunks(TRAIN_PIECE_BYTES))
        .collect();
    let bytes = zstd::dict::from_samples(&pieces, max_bytes).map_err(|e| {
        Error::InvalidInput(format!(
            "zstd could not train a dictionary on {total} sampled bytes: {e}"
        ))
    })?;
    let test = held_out(samples);
    let (with, plain) = measure(&test, &bytes, codec)?;
    Ok(Trained {
        bytes,
        sample_bytes: test.iter().map(|s| s.len() as u64).sum(),
        sample_compressed_bytes: with,
        plain_compressed_bytes: plain,
        codec,
    })
}

/// The samples a training learns from: every other one (all of one sample).
fn training_half(samples: &[Vec<u8>]) -> impl Iterator<Item = &Vec<u8>> {
    let step = if samples.len() >= 2 { 2 } else { 1 };
    samples.iter().step_by(step)
}

/// The samples a training is measured on: the ones it did not learn from
/// (all of one sample, which then measures what it learned: said by the
/// caller's figures being on one chunk).
pub fn held_out(samples: &[Vec<u8>]) -> Vec<&[u8]> {
    if samples.len() >= 2 {
        samples
            .iter()
            .skip(1)
            .step_by(2)
            .map(Vec::as_slice)
            .collect()
    } else {
        samples.iter().map(Vec::as_slice).collect()
    }
}

/// Compressed bytes of `samples` with `codec` and dictionary `dict`, and
/// without it: each sample as one chunk with its framing (codec byte and crc,
/// 5 bytes), always in compressed form. The codec's own ratio is what judges a
/// dictionary: a table's `min_compress_ratio` may store chunks raw, and
/// measured through that rule a gain below it would read as "1.000 with, 1.000
/// without". Only a chunk the codec cannot compress at all counts raw.
pub fn measure(samples: &[&[u8]], dict: &[u8], codec: Codec) -> Result<(u64, u64)> {
    let refused =
        |e: std::io::Error| Error::InvalidInput(format!("zstd refused a dictionary: {e}"));
    let stored = |input: &[u8], n: Option<usize>| {
        crate::codec::stored_chunk_bytes(input.len(), n, crate::codec::NO_COMPRESSED_LIMIT) as u64
    };
    let (mut with, mut plain) = (0u64, 0u64);
    match codec {
        Codec::ZstdDict { level, .. } => {
            let mut dc = zstd::bulk::Compressor::with_dictionary(level, dict).map_err(refused)?;
            let mut pc = zstd::bulk::Compressor::new(level).map_err(refused)?;
            for s in samples {
                with += stored(s, dc.compress(s).ok().map(|c| c.len()));
                plain += stored(s, pc.compress(s).ok().map(|c| c.len()));
            }
        }
        Codec::Lz4Dict { .. } => {
            let window = &dict[dict.len().saturating_sub(64 * 1024)..];
            for s in samples {
                with += stored(
                    s,
                    Some(lz4_flex::block::compress_with_dict(s, window).len()),
                );
                plain += stored(s, Some(lz4_flex::block::compress(s).len()));
            }
        }
        other => {
            return Err(Error::InvalidInput(format!(
                "{other:?} does not use a dictionary"
            )))
        }
    }
    Ok((with, plain))
}

/// Stores `trained` as the table's next dictionary (the highest id + 1) and
/// returns it loaded (invariants 1 and 3).
pub fn save(
    fs: &Fs,
    table_dir: &Path,
    trained: &Trained,
    now_seconds: i64,
) -> Result<Arc<CompressionDictionary>> {
    let id = list(fs, table_dir)?.last().map_or(1, |&id| id + 1);
    let dict = CompressionDictionary::new(
        id,
        trained.bytes.clone(),
        now_seconds,
        trained.sample_bytes,
        trained.sample_compressed_bytes,
        trained.codec.with_dictionary(id),
    );
    let path = table_dir.join(file_name(id));
    fs.write_atomic(&path, &dict.encode_file(), IoTag::new(IoCause::Metadata))?;
    fs.sync_dir(table_dir)?;
    let dict = Arc::new(dict);
    cache().lock().insert(path, Arc::downgrade(&dict));
    Ok(dict)
}

/// The file that keeps a table's training figures across reopens.
pub const NOTES_FILE: &str = "CompressionDictionaryNotes.json";
/// Largest [`NOTES_FILE`] read back.
const MAX_NOTES_BYTES: u64 = 64 * 1024;

/// What [`NOTES_FILE`] holds.
#[derive(serde::Serialize, serde::Deserialize)]
struct TrainingNotes {
    trainings: u64,
    last_training: Option<String>,
}

/// A table's dictionary state.
///
/// The state lives here, below `table` (which holds it), and the training that
/// changes it in `crate::table_dictionary`, above: the module graph stays
/// acyclic (docs/ARCHITECTURE.md).
#[derive(Debug, Default)]
pub struct TableDictionaries {
    pub(crate) current: RwLock<Option<Arc<CompressionDictionary>>>,
    pub(crate) train_lock: Mutex<()>,
    pub(crate) last_error: Mutex<Option<String>>,
    /// Id of the dictionary whose drift retraining was declined (0: none).
    pub(crate) drift_declined: AtomicU32,
    /// Live uncompressed bytes when a training was last declined for gaining
    /// too little (0: never).
    pub(crate) declined_at_bytes: AtomicU64,
    pub(crate) trainings: AtomicU64,
    /// What the last training did, in one line (tablestats).
    pub(crate) last_training: Mutex<Option<String>>,
}

impl TableDictionaries {
    /// Loads the newest stored dictionary. One that cannot be loaded is noted
    /// and new sstables are written without a dictionary until the next
    /// training; sstables that name it fail to open on their own (dictionary
    /// invariant 4).
    pub(crate) fn open(
        fs: &Fs,
        dir: &Path,
        table: &str,
        notes: &mut Vec<String>,
    ) -> TableDictionaries {
        let out = TableDictionaries::default();
        match load_latest(fs, dir) {
            Ok(d) => *out.current.write() = d,
            Err(e) => notes.push(format!(
                "table {table}: its newest compression dictionary cannot be loaded ({e}); new \
                 sstables are written without one until `strata traincompressiondictionary {table}`"
            )),
        }
        let path = dir.join(NOTES_FILE);
        if path.is_file() {
            let read = fs
                .file_len(&path)
                .and_then(|len| {
                    // A few hundred bytes when written here; anything larger
                    // is not ours to allocate for.
                    if len > MAX_NOTES_BYTES {
                        return Err(Error::InvalidInput(format!(
                            "{}: {len} bytes, more than {MAX_NOTES_BYTES}",
                            path.display()
                        )));
                    }
                    fs.read_all(&path, MAX_NOTES_BYTES, IoTag::new(IoCause::Metadata))
                })
                .and_then(|bytes| {
                    serde_json::from_slice::<TrainingNotes>(&bytes)
                        .map_err(|e| Error::InvalidInput(format!("{}: {e}", path.display())))
                });
            match read {
                Ok(n) => {
                    out.trainings.store(n.trainings, Ordering::Relaxed);
                    *out.last_training.lock() = n.last_training;
                }
                // Only figures for tablestats: reported, and rewritten at the
                // next training.
                Err(e) => notes.push(format!(
                    "table {table}: its dictionary training notes cannot be read ({e}); \
                     tablestats counts trainings from zero"
                )),
            }
        }
        out
    }

    /// Stores the training figures (`trainings`, `last_training`) so that
    /// they survive a reopen: `<table_dir>/CompressionDictionaryNotes.json`,
    /// replaced atomically.
    pub(crate) fn save_notes(&self, fs: &Fs, dir: &Path) -> Result<()> {
        let notes = TrainingNotes {
            trainings: self.trainings.load(Ordering::Relaxed),
            last_training: self.last_training.lock().clone(),
        };
        let bytes = serde_json::to_vec(&notes)
            .map_err(|e| Error::InvalidInput(format!("dictionary notes: {e}")))?;
        fs.write_atomic(&dir.join(NOTES_FILE), &bytes, IoTag::new(IoCause::Metadata))
    }

    pub(crate) fn current(&self) -> Option<Arc<CompressionDictionary>> {
        self.current.read().clone()
    }

    /// The compression a new sstable is written with when the table's options
    /// say `params`, and the dictionary it needs (`crate::table_dictionary`
    /// invariants 1 and 2).
    pub(crate) fn bind(
        &self,
        mut params: CompressionParams,
    ) -> (CompressionParams, Option<Arc<CompressionDictionary>>) {
        if params.codec.dictionary().is_none() {
            return (params, None);
        }
        match self.current() {
            Some(d) => {
                params.codec = params.codec.with_dictionary(d.id());
                (params, Some(d))
            }
            None => {
                params.codec = params.codec.without_dictionary();
                (params, None)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn measure_reports_the_codecs_own_ratio_even_for_small_gains() {
        // Random bytes with a 6-byte marker every 64: zstd saves a few
        // percent (the markers), less than any keep-compressed rule of a
        // writer might demand; the training must still see that gain, or it
        // reads "1.000 with, 1.000 without".
        let mut x = 1u64;
        let sample: Vec<u8> = (0..16384)
            .map(|i| {
                if i % 64 >= 58 {
                    return b"strata"[i % 64 - 58];
                }
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        let (_, plain) = measure(
            &[&sample],
            b"a few bytes of raw dictionary content",
            Codec::ZstdDict { level: 3, dict: 0 },
        )
        .expect("measure");
        assert!(
            plain < sample.len() as u64,
            "{plain} stored bytes for {} input bytes",
            sample.len()
        );
    }

    /// Small rows shaped like the seed's `content_by_sha1_git`: a fixed layout
    /// around random hashes, the case dictionaries exist for.
    fn samples(n: usize, seed: u64) -> Vec<Vec<u8>> {
        use rand::{Rng, SeedableRng};
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        (0..n)
            .map(|_| {
                let mut s = Vec::new();
                while s.len() < 4096 {
                    s.extend_from_slice(b"\x00\x14sha1_git\x00\x20");
                    s.extend((0..20).map(|_| rng.gen::<u8>()));
                    s.extend_from_slice(b"\x01length\x08\x00\x00\x00\x00");
                    s.extend((0..3).map(|_| rng.gen_range(b'0'..=b'9')));
                    s.extend_from_slice(b"status=visible;ctime=2026-11-");
                }
                s
            })
            .collect()
    }

    #[test]
    fn file_round_trips_and_detects_damage() {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let trained = train(
            &samples(64, 1),
            8 * 1024,
            Codec::ZstdDict { level: 3, dict: 0 },
        )
        .unwrap();
        assert!(
            trained.sample_ratio() < trained.plain_ratio(),
            "{} vs {}",
            trained.sample_ratio(),
            trained.plain_ratio()
        );
        let d = save(&fs, dir.path(), &trained, 1234).unwrap();
        assert_eq!(d.id(), 1);
        let d2 = save(&fs, dir.path(), &trained, 1235).unwrap();
        assert_eq!(d2.id(), 2, "ids only grow");
        assert_eq!(list(&fs, dir.path()).unwrap(), vec![1, 2]);
        drop((d, d2));
        let loaded = load(&fs, dir.path(), 1).unwrap();
        assert_eq!(loaded.bytes(), &trained.bytes[..]);
        assert_eq!(loaded.trained_at_seconds(), 1234);
        assert_eq!(load_latest(&fs, dir.path()).unwrap().unwrap().id(), 2);
        drop(loaded);
        // Invariant 4: one flipped byte is an error naming the file, not a decode.
        let path = dir.path().join(file_name(1));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[HEADER_BYTES + 10] ^= 1;
        std::fs::write(&path, &bytes).unwrap();
        let err = load(&fs, dir.path(), 1).unwrap_err().to_string();
        assert!(
            err.contains("checksum mismatch") && err.contains("CompressionDictionary-1.db"),
            "{err}"
        );
        // A file renamed to another id is refused too.
        std::fs::copy(dir.path().join(file_name(2)), dir.path().join(file_name(7))).unwrap();
        let err = load(&fs, dir.path(), 7).unwrap_err().to_string();
        assert!(err.contains("holds id 2"), "{err}");
    }

    #[test]
    fn too_little_sample_is_refused_with_the_numbers() {
        let codec = Codec::Lz4Dict { dict: 0 };
        let err = train(&[vec![1u8; 1000]], 8192, codec)
            .err()
            .unwrap()
            .to_string();
        assert!(err.contains("1000 bytes sampled"), "{err}");
    }

    #[test]
    fn quarantined_sstables_find_their_table_s_dictionaries() {
        let t = Path::new("/d/ks/t");
        assert_eq!(dir_for(&t.join("strata-1-Data.db")), t);
        assert_eq!(dir_for(&t.join("quarantine").join("strata-1-Data.db.2")), t);
        let snap = t.join("snapshots").join("s1");
        assert_eq!(dir_for(&snap.join("strata-1-Data.db")), snap);
    }

    #[test]
    fn names_parse_back() {
        assert_eq!(parse_file_name(&file_name(42)), Some(42));
        assert_eq!(parse_file_name("CompressionDictionary-x.db"), None);
        assert_eq!(parse_file_name("strata-1-Data.db"), None);
    }
}
