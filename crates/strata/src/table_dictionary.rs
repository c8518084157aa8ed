//! Compression dictionaries as seen from a table: which dictionary new
//! sstables are written with, training on demand (`strata
//! traincompressiondictionary`, Cassandra 6's `nodetool
//! traincompressiondictionary`) and after flushes (the first dictionary of a
//! table set to a dictionary class, and a new one when the data drifts), and the
//! figures `tablestats` shows. The files themselves belong to
//! `crate::dictionary`.
//!
//! Threads: any. Trainings of one table are serialized by a lock (a new id is
//! the highest stored id + 1); binding a writer only reads the current
//! dictionary.
//!
//! Invariants:
//! 1. A dictionary is stored durably before it becomes current, and a writer is
//!    bound to the current dictionary at creation, so no sstable names a
//!    dictionary that is not on disk (dictionary invariant 1).
//! 2. A table set to a dictionary class with no dictionary yet writes with the
//!    same compressor without one (`Codec::without_dictionary`); those sstables
//!    count as "on another setting" in `tablestats` and are what
//!    `upgradesstables` rewrites once a dictionary exists. This is ScyllaDB's
//!    behaviour too; it is reported, never hidden.
//! 3. Automatic training never fails a flush: its error is kept for
//!    `tablestats`. It runs on the flush thread, bounded by
//!    `training_max_total_sample_size`.
//! 4. Drift: a flushed sstable that compressed worse than
//!    [`DRIFT_FACTOR`] times the current dictionary's ratio on its own training
//!    sample triggers one retraining; the new dictionary becomes current only if
//!    it compresses a fresh sample at least [`MIN_RETRAIN_GAIN`] better than the
//!    current one does. A declined retraining is not tried again for that
//!    dictionary until the process restarts.
//! 5. A dictionary that does not compress its sample at least
//!    [`MIN_DICTIONARY_GAIN`] better than the same codec without one is not
//!    stored (on data dominated by hashes a dictionary makes chunks larger:
//!    docs/compression.md). After such a decline, automatic training waits until
//!    the table's data has grown [`RETRY_GROWTH`] times.

use crate::codec::{Codec, CompressionParams};
use crate::dictionary::{self, CompressionDictionary};
use crate::error::{Error, Result};
use crate::fs::{IoCause, IoTag};
use crate::schema::TableSchema;
use crate::sstable::SSTableReader;
use crate::table::Table;
use serde::Serialize;
use std::sync::atomic::Ordering;
use std::sync::Arc;

/// A flushed sstable compressing this much worse than the dictionary did on its
/// training sample is drift (invariant 4). Flushes vary by a few percent on
/// steady data; 25% is a change of shape, not noise.
pub const DRIFT_FACTOR: f64 = 1.25;
/// A retrained dictionary must beat the current one by this much on the same
/// fresh sample to replace it (invariant 4): each dictionary is kept forever
/// (dictionary invariant 2), so a marginal one is not worth a file.
pub const MIN_RETRAIN_GAIN: f64 = 0.05;
/// A dictionary must beat no dictionary by this much on its sample to be
/// stored (invariant 5): below it, the 4 bytes of dictionary id per chunk and
/// a dictionary to keep forever buy nothing.
pub const MIN_DICTIONARY_GAIN: f64 = 0.02;
/// After a declined training, automatic training retries once the live data
/// has grown this many times (invariant 5).
pub const RETRY_GROWTH: u64 = 4;

/// How to train.
#[derive(Clone, Debug, Default)]
pub struct TrainOptions {
    /// Largest dictionary, bytes (default: the table's
    /// `training_max_dictionary_size`).
    pub max_dictionary_bytes: Option<usize>,
    /// Most data sampled, bytes (default: the table's
    /// `training_max_total_sample_size`).
    pub max_sample_bytes: Option<usize>,
}

/// What a training did.
#[derive(Clone, Debug, Serialize)]
pub struct TrainReport {
    pub keyspace: String,
    pub table: String,
    /// The id of the stored dictionary (`None`: a retraining was declined).
    pub dictionary_id: Option<u32>,
    pub previous_dictionary_id: Option<u32>,
    pub dictionary_bytes: usize,
    pub sampled_sstables: usize,
    pub sample_bytes: u64,
    /// Codec the ratios were measured with.
    pub measured_with: String,
    /// Compressed / uncompressed of the sample with the new dictionary.
    pub ratio_with_dictionary: f64,
    /// The same sample without a dictionary.
    pub ratio_without_dictionary: f64,
    /// The same sample with the previous dictionary, if there was one.
    pub ratio_with_previous: Option<f64>,
    pub seconds: f64,
    /// Operator hints: the table's class does not use dictionaries, sstables
    /// still on an older setting.
    pub notes: Vec<String>,
}

/// Tablestats' dictionary figures.
#[derive(Clone, Debug, Default, Serialize)]
pub struct DictionaryStats {
    /// The current dictionary (new sstables use it).
    pub current_id: Option<u32>,
    pub current_bytes: u64,
    pub current_trained_at_seconds: Option<i64>,
    /// Its ratio on its own training sample (the drift baseline).
    pub current_sample_ratio: Option<f64>,
    /// Dictionary files stored (all kept: dictionary invariant 2) and bytes.
    pub stored: usize,
    pub stored_bytes: u64,
    /// Live sstables compressed with the current dictionary, an older one, and
    /// (for a dictionary class) none.
    pub sstables_with_current: usize,
    pub sstables_with_older: usize,
    pub sstables_without: usize,
    pub trainings: u64,
    /// What the last training in this process did (stored, or declined and why).
    pub last_training: Option<String>,
    pub last_error: Option<String>,
}

/// The codec a training measures with: the table's own if it is a dictionary
/// class, else zstd at the table's level (or 3), the usual next step.
fn measuring_codec(schema: &TableSchema) -> Codec {
    let c = schema.options.compression.params().codec;
    if c.dictionary().is_some() {
        c.with_dictionary(0)
    } else {
        Codec::ZstdDict {
            level: schema.options.compression.compression_level,
            dict: 0,
        }
    }
}

/// Whole chunks of `readers`, evenly spread over each and over all of them in
/// proportion to their size, until `max_bytes`. Read as `Recompression` I/O
/// (compression maintenance), never as compaction: write amplification and the
/// compaction counters stay the strategies' own.
fn sample_chunks(readers: &[Arc<SSTableReader>], max_bytes: usize) -> Result<Vec<Vec<u8>>> {
    let total: u64 = readers.iter().map(|r| r.uncompressed_bytes()).sum();
    let mut out = Vec::new();
    if total == 0 {
        return Ok(out);
    }
    let share = (max_bytes as f64 / total as f64).min(1.0);
    for r in readers {
        let n = r.chunk_count();
        let take = ((n as f64 * share).ceil() as usize).min(n);
        for k in 0..take {
            let i = k * n / take;
            out.push(r.chunk(i, IoTag::new(IoCause::Recompression))?);
        }
    }
    Ok(out)
}

impl Table {
    /// The dictionary new sstables are written with, if any.
    pub fn compression_dictionary(&self) -> Option<Arc<CompressionDictionary>> {
        self.dictionaries.current()
    }

    /// The compression a new sstable gets now: the table's options with the
    /// current dictionary bound (`upgradesstables` and `tablestats` compare
    /// sstables against it).
    pub fn target_compression(&self) -> CompressionParams {
        self.dictionaries
            .bind(self.schema().options.compression.params())
            .0
    }

    /// Trains a dictionary on a sample of the live sstables and stores it as
    /// the table's current one (`strata traincompressiondictionary`). Works
    /// whatever the table's class (an operator may train, then ALTER); the
    /// report says when the class does not use it.
    pub fn train_compression_dictionary(&self, opts: &TrainOptions) -> Result<TrainReport> {
        if self.is_read_only() {
            return Err(Error::ReadOnly(format!(
                "table {} was opened read-only; training a dictionary writes a file",
                self.schema().qualified_name()
            )));
        }
        let readers: Vec<Arc<SSTableReader>> = self.view().sstables().iter().cloned().collect();
        self.train_from(&readers, opts, false)
    }

    fn train_from(
        &self,
        readers: &[Arc<SSTableReader>],
        opts: &TrainOptions,
        only_if_better: bool,
    ) -> Result<TrainReport> {
        let started = std::time::Instant::now();
        let schema = self.schema();
        let c = &schema.options.compression;
        let max_dict = opts
            .max_dictionary_bytes
            .unwrap_or(c.training_max_dictionary_size as usize);
        let max_sample = opts
            .max_sample_bytes
            .unwrap_or(c.training_max_total_sample_size as usize);
        let _serial = self.dictionaries.train_lock.lock();
        let samples = sample_chunks(readers, max_sample)?;
        let codec = measuring_codec(&schema);
        let trained = dictionary::train(&samples, max_dict, codec).map_err(|e| match e {
            Error::InvalidInput(m) => {
                Error::InvalidInput(format!("table {}: {m}", schema.qualified_name()))
            }
            other => other,
        })?;
        let previous = self.dictionaries.current();
        let ratio_with_previous = match &previous {
            // On the same held-out samples the new one was measured on.
            Some(p) => Some(
                dictionary::measure(&dictionary::held_out(&samples), p.bytes(), codec)?.0 as f64
                    / trained.sample_bytes.max(1) as f64,
            ),
            None => None,
        };
        let mut report = TrainReport {
            keyspace: schema.keyspace.clone(),
            table: schema.name.clone(),
            dictionary_id: None,
            previous_dictionary_id: previous.as_ref().map(|p| p.id()),
            dictionary_bytes: trained.bytes.len(),
            sampled_sstables: readers.len(),
            sample_bytes: trained.sample_bytes,
            measured_with: crate::upgrade::setting_name(
                codec,
                u64::from(c.params().chunk_length_bytes),
            ),
            ratio_with_dictionary: trained.sample_ratio(),
            ratio_without_dictionary: trained.plain_ratio(),
            ratio_with_previous,
            seconds: 0.0,
            notes: Vec::new(),
        };
        let better = ratio_with_previous
            .is_none_or(|old| trained.sample_ratio() <= old * (1.0 - MIN_RETRAIN_GAIN));
        let useful = trained.sample_ratio() <= trained.plain_ratio() * (1.0 - MIN_DICTIONARY_GAIN);
        if !useful {
            report.notes.push(format!(
                "not stored: with the dictionary the sample compresses to {:.3}, without it to {:.3}; a dictionary must gain at least {:.0}% (this data's repeats are already found within a chunk, or it is mostly random bytes such as hashes)",
                trained.sample_ratio(),
                trained.plain_ratio(),
                MIN_DICTIONARY_GAIN * 100.0
            ));
        } else if only_if_better && !better {
            report.notes.push(format!(
                "kept dictionary {}: the retrained one is not {:.0}% better on the same sample",
                previous.as_ref().map_or(0, |p| p.id()),
                MIN_RETRAIN_GAIN * 100.0
            ));
        } else {
            let stored =
                dictionary::save(self.fs(), self.dir(), &trained, self.clock().now_seconds())?;
            report.dictionary_id = Some(stored.id());
            *self.dictionaries.current.write() = Some(stored);
            self.dictionaries.trainings.fetch_add(1, Ordering::Relaxed);
        }
        if !c.class.uses_dictionary() {
            report.notes.push(format!(
                "the table's compression class is '{}', which does not use dictionaries; \
                 ALTER it to ZstdWithDictsCompressor or LZ4WithDictsCompressor to write with this one",
                c.class.name()
            ));
        } else if report.dictionary_id.is_some() {
            report.notes.push(
                "new sstables use the new dictionary; existing ones keep theirs until \
                 compaction or `strata upgradesstables` rewrites them"
                    .into(),
            );
        }
        report.seconds = started.elapsed().as_secs_f64();
        *self.dictionaries.last_training.lock() = Some(match report.dictionary_id {
            Some(id) => format!(
                "stored dictionary {id}: sample ratio {:.3} with it, {:.3} without",
                report.ratio_with_dictionary, report.ratio_without_dictionary
            ),
            None => format!(
                "declined: sample ratio {:.3} with it, {:.3} without{}",
                report.ratio_with_dictionary,
                report.ratio_without_dictionary,
                report
                    .ratio_with_previous
                    .map(|p| format!(", {p:.3} with the current one"))
                    .unwrap_or_default()
            ),
        });
        // The figures survive a reopen; failing to keep them fails no training.
        if let Err(e) = self.dictionaries.save_notes(self.fs(), self.dir()) {
            *self.dictionaries.last_error.lock() = Some(format!("saving training notes: {e}"));
        }
        Ok(report)
    }

    /// After a flush (invariants 3 and 4): the table's first dictionary once
    /// enough data is flushed, or a retraining when the flushed sstables drift.
    pub(crate) fn train_dictionary_after_flush(&self, flushed: &[Arc<SSTableReader>]) {
        let schema = self.schema();
        if !schema.options.compression.class.uses_dictionary() || flushed.is_empty() {
            return;
        }
        let current = self.dictionaries.current();
        let readers: Vec<Arc<SSTableReader>> = match &current {
            None => {
                let live: Vec<Arc<SSTableReader>> =
                    self.view().sstables().iter().cloned().collect();
                let bytes: u64 = live.iter().map(|r| r.uncompressed_bytes()).sum();
                if bytes < dictionary::MIN_SAMPLE_BYTES as u64 {
                    return; // Not enough data yet; the next flush tries again.
                }
                let declined = self.dictionaries.declined_at_bytes.load(Ordering::Relaxed);
                if declined > 0 && bytes < declined.saturating_mul(RETRY_GROWTH) {
                    return;
                }
                live
            }
            Some(d) => {
                if self.dictionaries.drift_declined.load(Ordering::Relaxed) == d.id() {
                    return;
                }
                let (c, u) = flushed.iter().fold((0u64, 0u64), |(c, u), r| {
                    (c + r.stats().compressed_bytes, u + r.uncompressed_bytes())
                });
                let written_with_it = flushed
                    .iter()
                    .all(|r| r.stats().codec.dictionary() == Some(d.id()));
                if !written_with_it
                    || u < dictionary::MIN_SAMPLE_BYTES as u64
                    || (c as f64 / u as f64) <= d.sample_ratio() * DRIFT_FACTOR
                {
                    return;
                }
                flushed.to_vec()
            }
        };
        match self.train_from(&readers, &TrainOptions::default(), current.is_some()) {
            Ok(report) => {
                if report.dictionary_id.is_none() && current.is_none() {
                    let bytes = readers.iter().map(|r| r.uncompressed_bytes()).sum::<u64>();
                    self.dictionaries
                        .declined_at_bytes
                        .store(bytes.max(1), Ordering::Relaxed);
                }
                if report.dictionary_id.is_none() {
                    if let Some(d) = &current {
                        self.dictionaries
                            .drift_declined
                            .store(d.id(), Ordering::Relaxed);
                    }
                }
            }
            Err(e) => {
                *self.dictionaries.last_error.lock() = Some(e.to_string());
            }
        }
    }

    /// Tablestats' dictionary figures.
    pub fn dictionary_stats(&self) -> Result<DictionaryStats> {
        let current = self.dictionaries.current();
        let mut out = DictionaryStats {
            current_id: current.as_ref().map(|d| d.id()),
            current_bytes: current.as_ref().map_or(0, |d| d.bytes().len() as u64),
            current_trained_at_seconds: current.as_ref().map(|d| d.trained_at_seconds()),
            current_sample_ratio: current.as_ref().map(|d| d.sample_ratio()),
            trainings: self.dictionaries.trainings.load(Ordering::Relaxed),
            last_training: self.dictionaries.last_training.lock().clone(),
            last_error: self.dictionaries.last_error.lock().clone(),
            ..DictionaryStats::default()
        };
        for id in dictionary::list(self.fs(), self.dir())? {
            out.stored += 1;
            out.stored_bytes += self
                .fs()
                .file_len(&self.dir().join(dictionary::file_name(id)))
                .unwrap_or(0);
        }
        let uses = self.schema().options.compression.class.uses_dictionary();
        for r in self.view().sstables().iter() {
            match r.stats().codec.dictionary() {
                Some(id) if Some(id) == out.current_id => out.sstables_with_current += 1,
                Some(_) => out.sstables_with_older += 1,
                None if uses => out.sstables_without += 1,
                None => {}
            }
        }
        Ok(out)
    }
}
