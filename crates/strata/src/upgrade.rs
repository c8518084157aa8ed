//! `upgradesstables` (issue 14 part 3): rewrite the sstables whose compression
//! or format differs from the table's current settings, one at a time, within
//! the disk space there is, answering the seed's worry ("will it be possible to
//! recompact the entire table with the limited remaining space?") with an
//! estimate before anything is written.
//!
//! Who calls: the CLI (`strata upgradesstables`), benches, tests; one thread
//! (the run itself may use `jobs` threads). Background compaction of the table
//! is paused for the run, so the set being rewritten does not change under it.
//!
//! Protocol:
//! 1. Candidates: live sstables whose codec, chunk length or format version
//!    differ from the table's (every live sstable with `all`), smallest first,
//!    so the first rewrites free room for the larger ones.
//! 2. Estimate, per candidate: a sample of its chunks (up to
//!    [`SAMPLE_CHUNKS`], evenly spread) is decompressed and compressed again with
//!    the target settings; the output size is the input's non-data bytes
//!    (index, filter, tail) plus its uncompressed bytes times the sampled ratio.
//!    `dry_run` stops here and reports; with `estimate_all`, every candidate
//!    setting's ratio on samples of every live sstable (not only the ones this
//!    run would rewrite), and its size for the whole table's data.
//! 3. Space: an input whose file a snapshot also links (link count > 1) frees
//!    nothing when replaced. The peak extra space is therefore the sum of the
//!    estimated outputs of snapshotted inputs plus the largest `jobs` estimates
//!    of the others; if that does not fit the guard's headroom
//!    (`Table::disk_room`), the run is refused before writing, with a message
//!    that says how much is needed, how much there is, and where more would
//!    come from (clearing the snapshot). Each rewrite passes the guard again
//!    with its own estimate.
//! 4. Rewrite: `maintenance::rewrite_sstable_within`, each output replacing its
//!    input in one manifest commit, so space comes back as the run goes.
//!
//! Invariants:
//! 1. A run killed or failed at any point leaves a consistent table: every
//!    sstable is either an untouched input or a committed output (maintenance
//!    invariant 1). Without `all`, the next run selects exactly the inputs not
//!    yet rewritten, so it continues where the killed one stopped.
//! 2. A dry run writes nothing.
//! 3. Nothing is snapshotted unless asked (`snapshot`); an existing snapshot
//!    holding candidate files is reported as a warning with its size.

use crate::codec::{Codec, CompressionParams};
use crate::dictionary::CompressionDictionary;
use crate::error::{Error, Result};
use crate::fs::{IoCause, IoTag};
use crate::maintenance;
use crate::sstable::compression::compress_chunk;
use crate::sstable::{SSTableReader, FORMAT_VERSION};
use crate::table::Table;
use serde::Serialize;
use std::sync::Arc;
use std::time::Duration;

/// Chunks sampled per sstable for the estimate: enough for a ratio within a
/// few percent on the benches' data, few enough that a dry run of a large
/// table reads a sliver of it.
pub const SAMPLE_CHUNKS: usize = 32;

/// How to run.
#[derive(Clone, Debug, Default)]
pub struct UpgradeOptions {
    /// Rewrite every live sstable, not only those with other settings
    /// (`upgradesstables -a`).
    pub all: bool,
    /// Rewrites at a time (`--jobs`); 0 is taken as 1.
    pub jobs: usize,
    /// Estimate and report; write nothing.
    pub dry_run: bool,
    /// With `dry_run`: the sampled ratio of every candidate setting.
    pub estimate_all: bool,
    /// Take a snapshot of the table first (never by default).
    pub snapshot: bool,
}

/// One candidate sstable and its estimate.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    pub id: u64,
    pub level: u32,
    pub file_bytes: u64,
    pub uncompressed_bytes: u64,
    /// The settings it was written with, as the CQL option would name them.
    pub codec: String,
    pub chunk_length_bytes: u64,
    pub format_version: u32,
    /// Sampled stored/uncompressed ratio under the target settings.
    pub estimated_ratio: f64,
    pub estimated_output_bytes: u64,
    /// A snapshot links this file: rewriting it frees nothing.
    pub held_by_snapshot: bool,
}

/// One rewrite done: input and output (none if nothing was kept).
#[derive(Clone, Debug, Serialize)]
pub struct Rewrite {
    pub input_id: u64,
    pub input_bytes: u64,
    pub output_id: Option<u64>,
    pub output_bytes: u64,
}

/// The sampled ratio of one candidate setting over all candidates.
#[derive(Clone, Debug, Serialize)]
pub struct SettingEstimate {
    pub setting: String,
    pub ratio: f64,
    pub estimated_bytes: u64,
}

/// What a run did, or (dry run) would do.
#[derive(Clone, Debug, Serialize)]
pub struct UpgradeReport {
    pub keyspace: String,
    pub table: String,
    pub target: String,
    pub dry_run: bool,
    pub candidates: Vec<Candidate>,
    pub bytes_before: u64,
    /// Sum of the candidates' estimated outputs plus the untouched sstables.
    pub estimated_bytes_after: u64,
    /// The most the run adds to the disk at any moment (protocol step 3).
    pub peak_extra_bytes_estimate: u64,
    /// The guard's headroom when the run started (`None`: no limit known).
    pub headroom_bytes: Option<u64>,
    /// Each rewrite done, in order.
    pub rewritten: Vec<Rewrite>,
    /// Live sstable bytes when the run ended.
    pub bytes_after: u64,
    pub snapshot: Option<String>,
    pub warnings: Vec<String>,
    /// With `estimate_all`: each candidate setting's ratio on samples of every
    /// live sstable, and the whole table's data size under it.
    pub setting_estimates: Vec<SettingEstimate>,
}

/// Progress after each rewrite: (bytes of inputs done, bytes of inputs in all).
pub type Progress<'a> = dyn FnMut(u64, u64) + 'a;

pub use crate::codec::setting_name;

/// Whether `r` was written with other settings than `target` (or an older
/// format). An older dictionary of the same class and level is the same
/// setting (`Codec::same_setting`): it still serves, and `-a` moves it on.
pub fn is_stale(r: &SSTableReader, target: &CompressionParams) -> bool {
    !r.stats().codec.same_setting(target.codec)
        || r.chunk_length() != u64::from(target.chunk_length_bytes)
        || r.format_version() < FORMAT_VERSION
}

/// The uncompressed bytes of up to `SAMPLE_CHUNKS` chunks of `r`, evenly spread.
fn sample(r: &SSTableReader) -> Result<Vec<u8>> {
    let n = r.chunk_count();
    let take = n.min(SAMPLE_CHUNKS);
    let mut out = Vec::new();
    for k in 0..take {
        let i = k * n / take.max(1);
        out.extend_from_slice(&r.chunk(i, IoTag::new(IoCause::Recompression))?);
    }
    Ok(out)
}

/// Stored bytes of `data` cut into `target` chunks and compressed (codec byte
/// and checksum included, as the writer stores them) over its length; `dict`
/// is the dictionary a dictionary codec uses.
fn ratio_of(data: &[u8], target: &CompressionParams, dict: Option<&CompressionDictionary>) -> f64 {
    if data.is_empty() {
        return 1.0;
    }
    let mut stored = 0usize;
    let mut buf = Vec::new();
    for piece in data.chunks(target.chunk_length_bytes.max(1) as usize) {
        buf.clear();
        compress_chunk(
            target.codec,
            dict,
            piece,
            &mut buf,
            target.max_compressed_bytes,
        );
        stored += buf.len();
    }
    stored as f64 / data.len() as f64
}

/// The settings `--estimate-all` compares (ScyllaDB's estimate lists several
/// candidates at once): none, LZ4, Zstd 1, 3 and 9, at the target chunk length.
fn all_settings(chunk_length_bytes: u32, max_compressed_bytes: u32) -> Vec<CompressionParams> {
    [
        Codec::None,
        Codec::Lz4,
        Codec::Zstd { level: 1 },
        Codec::Zstd { level: 3 },
        Codec::Zstd { level: 9 },
    ]
    .into_iter()
    .map(|codec| CompressionParams {
        codec,
        chunk_length_bytes,
        max_compressed_bytes,
    })
    .collect()
}

/// Plans (and unless `dry_run`, runs) `upgradesstables` on `table` (module
/// docs). `progress` is called after each rewrite.
pub fn upgrade_sstables(
    table: &Table,
    opts: &UpgradeOptions,
    progress: &mut Progress<'_>,
) -> Result<UpgradeReport> {
    use std::os::unix::fs::MetadataExt;
    let schema = table.schema();
    let target = table.target_compression();
    let dictionary = table.compression_dictionary();
    let dict = dictionary
        .as_deref()
        .filter(|_| target.codec.dictionary().is_some());
    let jobs = opts.jobs.max(1);
    // The set must not change while it is planned and rewritten.
    let _pause = table.pause_compactions(Duration::from_secs(600))?;
    // The plan's view is dropped before anything is rewritten: a view keeps
    // its readers, and so their files, alive, and an input must be unlinked as
    // soon as its output replaces it for space to come back as the run goes.
    let view = table.view();
    let mut candidates = Vec::new();
    let mut samples = Vec::new();
    let mut bytes_before = 0u64;
    let mut untouched = 0u64;
    let mut estimate_uncompressed = 0u64;
    for s in view.version.iter() {
        let r = &s.handle;
        bytes_before += r.file_size();
        if !opts.all && !is_stale(r, &target) {
            untouched += r.file_size();
            if opts.estimate_all {
                // Every setting's estimate covers the whole table, not only
                // what this run would rewrite ("what would zstd save here?").
                samples.push(sample(r)?);
                estimate_uncompressed += r.uncompressed_bytes();
            }
            continue;
        }
        let data = sample(r)?;
        let ratio = ratio_of(&data, &target, dict);
        let non_data = r.file_size().saturating_sub(r.stats().compressed_bytes);
        let held = table
            .fs()
            .metadata(r.path())
            .map(|m| m.nlink() > 1)
            .unwrap_or(false);
        candidates.push(Candidate {
            id: s.id,
            level: s.level,
            file_bytes: r.file_size(),
            uncompressed_bytes: r.uncompressed_bytes(),
            codec: setting_name(r.stats().codec, r.chunk_length()),
            chunk_length_bytes: r.chunk_length(),
            format_version: r.format_version(),
            estimated_ratio: ratio,
            estimated_output_bytes: non_data
                + (r.uncompressed_bytes() as f64 * ratio).ceil() as u64,
            held_by_snapshot: held,
        });
        if opts.estimate_all {
            samples.push(data);
            estimate_uncompressed += r.uncompressed_bytes();
        }
    }
    drop(view);
    // Smallest first: early rewrites free room for the large ones.
    candidates.sort_by_key(|c| (c.file_bytes, c.id));
    let estimated_after = untouched
        + candidates
            .iter()
            .map(|c| c.estimated_output_bytes)
            .sum::<u64>();
    let held: u64 = candidates
        .iter()
        .filter(|c| c.held_by_snapshot)
        .map(|c| c.estimated_output_bytes)
        .sum();
    let mut free_outputs: Vec<u64> = candidates
        .iter()
        .filter(|c| !c.held_by_snapshot)
        .map(|c| c.estimated_output_bytes)
        .collect();
    free_outputs.sort_unstable_by(|a, b| b.cmp(a));
    let peak = held + free_outputs.iter().take(jobs).sum::<u64>();
    let headroom = table.disk_room()?.headroom_bytes();
    let mut report = UpgradeReport {
        keyspace: schema.keyspace.clone(),
        table: schema.name.clone(),
        target: setting_name(target.codec, u64::from(target.chunk_length_bytes)),
        dry_run: opts.dry_run,
        bytes_before,
        estimated_bytes_after: estimated_after,
        peak_extra_bytes_estimate: peak,
        headroom_bytes: headroom,
        rewritten: Vec::new(),
        bytes_after: bytes_before,
        snapshot: None,
        warnings: Vec::new(),
        setting_estimates: Vec::new(),
        candidates,
    };
    report
        .warnings
        .extend(maintenance::snapshot_space_warning(table)?);
    if opts.estimate_all {
        let all: Vec<u8> = samples.concat();
        let uncompressed = estimate_uncompressed;
        for setting in all_settings(target.chunk_length_bytes, target.max_compressed_bytes) {
            let ratio = ratio_of(&all, &setting, None);
            report.setting_estimates.push(SettingEstimate {
                setting: setting_name(setting.codec, u64::from(setting.chunk_length_bytes)),
                ratio,
                estimated_bytes: (uncompressed as f64 * ratio).ceil() as u64,
            });
        }
        // With a dictionary (ScyllaDB's estimate includes its dictionary
        // compressors): the table's current one, else one trained on the same
        // samples and not stored, so the figure is what training would give.
        let trial;
        // What a dictionary setting is measured on: all the samples for the
        // table's own dictionary; for a trial one, only the samples it did not
        // learn from (dictionary::train's hold-out).
        let mut measured_on: std::borrow::Cow<'_, [u8]> = std::borrow::Cow::Borrowed(&all);
        let with_dict = match &dictionary {
            Some(d) => Some(d.as_ref()),
            None => {
                let chunk = target.chunk_length_bytes.max(1) as usize;
                let pieces: Vec<Vec<u8>> = all.chunks(chunk).map(<[u8]>::to_vec).collect();
                measured_on =
                    std::borrow::Cow::Owned(crate::dictionary::held_out(&pieces).concat());
                let level = target.codec.level();
                let codec = Codec::ZstdDict {
                    level: if level == 0 { 3 } else { level },
                    dict: 0,
                };
                match crate::dictionary::train(
                    &pieces,
                    crate::dictionary::DEFAULT_MAX_DICTIONARY_BYTES,
                    codec,
                ) {
                    Ok(t) => {
                        trial = t.unsaved();
                        Some(&trial)
                    }
                    Err(e) => {
                        report.warnings.push(format!("no dictionary estimate: {e}"));
                        None
                    }
                }
            }
        };
        if let Some(d) = with_dict {
            for codec in [
                Codec::ZstdDict {
                    level: 3,
                    dict: d.id(),
                },
                Codec::Lz4Dict { dict: d.id() },
            ] {
                let setting = CompressionParams { codec, ..target };
                let ratio = ratio_of(&measured_on, &setting, Some(d));
                report.setting_estimates.push(SettingEstimate {
                    setting: setting_name(codec, u64::from(setting.chunk_length_bytes)),
                    ratio,
                    estimated_bytes: (uncompressed as f64 * ratio).ceil() as u64,
                });
            }
        }
    }
    if opts.dry_run || report.candidates.is_empty() {
        return Ok(report);
    }
    if let Some(room) = headroom {
        if peak > room {
            let snapshot_note = if held > 0 {
                format!(
                    "; {held} bytes of that are outputs of sstables a snapshot also holds \
                     (strata clearsnapshot would let each rewrite free its input)"
                )
            } else {
                String::new()
            };
            return Err(Error::Io {
                path: table.dir().to_path_buf(),
                source: std::io::Error::new(
                    std::io::ErrorKind::StorageFull,
                    format!(
                        "upgradesstables needs up to {peak} bytes of extra space (estimated \
                         from sampled chunks) and the disk-space guard allows {room} \
                         (free space minus the reserve, and max_disk_bytes){snapshot_note}; \
                         nothing was rewritten"
                    ),
                ),
            });
        }
    }
    if opts.snapshot {
        let name = format!(
            "pre-upgradesstables-{}",
            table.clock().now_micros().div_euclid(1000)
        );
        maintenance::snapshot(table, &name)?;
        report.snapshot = Some(name);
    }
    let total: u64 = report.candidates.iter().map(|c| c.file_bytes).sum();
    let mut done = 0u64;
    let plan: Vec<Candidate> = report.candidates.clone();
    for batch in plan.chunks(jobs) {
        let view = table.view();
        let readers: Vec<Option<Arc<SSTableReader>>> = batch
            .iter()
            .map(|c| view.sstables().iter().find(|r| r.id() == c.id).cloned())
            .collect();
        drop(view);
        let results: Vec<Result<Rewrite>> = std::thread::scope(|scope| {
            let handles: Vec<_> = batch
                .iter()
                .zip(readers)
                .map(|(c, reader)| {
                    scope.spawn(move || -> Result<Rewrite> {
                        let reader = reader.ok_or_else(|| {
                            Error::NotFound(format!("sstable {} is no longer live", c.id))
                        })?;
                        let out = maintenance::rewrite_sstable_within(
                            table,
                            &reader,
                            c.estimated_output_bytes,
                            |_| true,
                        )?;
                        // This job's reader is the input's last: let the
                        // reclaimer unlink it now.
                        drop(reader);
                        table.fs().reclaim_obsolete();
                        Ok(Rewrite {
                            input_id: c.id,
                            input_bytes: c.file_bytes,
                            output_id: out.as_ref().map(|o| o.id()),
                            output_bytes: out.as_ref().map_or(0, |o| o.file_size()),
                        })
                    })
                })
                .collect();
            handles
                .into_iter()
                .map(|h| {
                    h.join().unwrap_or_else(|_| {
                        Err(Error::InvalidInput(
                            "an upgradesstables job panicked".into(),
                        ))
                    })
                })
                .collect()
        });
        for r in results {
            let r = r?;
            done += r.input_bytes;
            report.rewritten.push(r);
        }
        progress(done, total);
    }
    report.bytes_after = table.view().sstables().iter().map(|s| s.file_size()).sum();
    Ok(report)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ratio_counts_the_stored_framing_and_falls_back_to_none() {
        let target = CompressionParams {
            codec: Codec::Lz4,
            chunk_length_bytes: 4096,
            max_compressed_bytes: crate::codec::max_compressed_length(4096, 1.1),
        };
        // Zeros compress to almost nothing.
        assert!(ratio_of(&vec![0u8; 64 * 1024], &target, None) < 0.05);
        // Incompressible bytes are stored raw: ratio just above 1 (codec byte +
        // checksum per chunk).
        let mut x = 0x9e37_79b9_u32;
        let noise: Vec<u8> = (0..64 * 1024)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 17;
                x ^= x << 5;
                x as u8
            })
            .collect();
        let r = ratio_of(&noise, &target, None);
        assert!((1.0..1.01).contains(&r), "{r}");
        assert_eq!(ratio_of(&[], &target, None), 1.0);
    }

    #[test]
    fn setting_names_read_like_the_options() {
        assert_eq!(
            setting_name(Codec::Zstd { level: 3 }, 16384),
            "ZstdCompressor level 3, 16 KiB chunks"
        );
        assert_eq!(setting_name(Codec::None, 65536), "none, 64 KiB chunks");
    }
}
