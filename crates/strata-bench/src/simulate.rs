//! A simulator configuration from a seed-node preset plus overrides: what
//! `strata simulate` runs. The command line parses its options into
//! [`SimulateOverrides`] (values as the operator wrote them: `160MiB`, `1MB/s`,
//! `2d`) and calls [`SimulateOverrides::config`], then `strata::sim::run`.
//!
//! Contract:
//! 1. Without a preset, the base is LCS with default options; explicit overrides
//!    always win over the preset.
//! 2. Changing the strategy away from LCS drops the LCS-only options the preset
//!    set (`fanout_size`, `sstable_size_in_mb`); options given explicitly are
//!    still passed, so an option the new strategy does not take is refused by
//!    the same validation as a table's.
//! 3. A value that cannot be simulated exactly (an sstable size that is not
//!    whole MiB) is rounded and said so in the returned notes, never silently.

use std::fmt::Write as _;
use strata::model::{
    self, parse_duration_seconds, parse_rate_bytes_per_second, parse_size_bytes, ModelStrategy,
};
use strata::options::TableOptions;
use strata::sim::SimConfig;
use strata::{Error, Result};

/// `strata simulate`'s options, unparsed strings as given (`None`: not given).
#[derive(Clone, Debug, Default)]
pub struct SimulateOverrides {
    /// A seed node preset: 'A', 'B' or 'C'.
    pub node: Option<char>,
    /// stcs, lcs, twcs or dtcs.
    pub strategy: Option<String>,
    pub fanout: Option<u32>,
    /// LCS sstable size: a bare number is MiB, as `sstable_size_in_mb`
    /// (`160`); or with a unit (`160MiB`). Rounded to whole MiB.
    pub sstable_size: Option<String>,
    pub level_count: Option<u32>,
    /// Extra compaction sub-options in CQL map syntax, e.g. "'min_threshold': 8".
    pub options: Option<String>,
    pub ingest_rate: Option<String>,
    pub flush_size: Option<String>,
    /// TTL of every write (0 = none).
    pub ttl: Option<String>,
    pub gc_grace: Option<String>,
    pub duration: Option<String>,
    pub sample_interval: String,
    /// Compaction throughput limit (`None`: unthrottled).
    pub throughput: Option<String>,
    pub concurrent_compactors: usize,
    /// Skip the per-task invariant checks.
    pub no_checks: bool,
    /// Width of the simulator's write-time buckets (`None`: its default,
    /// `max(60 s, TTL / 256)`).
    pub bucket_width: Option<String>,
}

fn opt<T>(v: &Option<String>, parse: fn(&str) -> Result<T>) -> Result<Option<T>> {
    v.as_deref().map(parse).transpose()
}

impl SimulateOverrides {
    /// The configuration to simulate, and notes for the operator (contract 3).
    pub fn config(&self) -> Result<(SimConfig, Vec<String>)> {
        let a = self;
        let mut notes = Vec::new();
        let mut cfg = match a.node {
            Some(n) => SimConfig::seed_node(n)?,
            None => SimConfig::with_compaction("'class': 'LeveledCompactionStrategy'")?,
        };
        // Rebuild the compaction map from the preset plus the overrides.
        let mut map: Vec<(String, String)> = cfg
            .compaction
            .options()
            .iter()
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect();
        let mut class = cfg.compaction.class().name().to_string();
        let set = |k: &str, v: String, map: &mut Vec<(String, String)>| {
            map.retain(|(key, _)| key != k);
            map.push((k.to_string(), v));
        };
        if let Some(s) = &a.strategy {
            class = match ModelStrategy::parse(s)? {
                ModelStrategy::Stcs => "SizeTieredCompactionStrategy",
                ModelStrategy::Lcs => "LeveledCompactionStrategy",
                ModelStrategy::Twcs => "TimeWindowCompactionStrategy",
                ModelStrategy::Dtcs => "DateTieredCompactionStrategy",
            }
            .to_string();
            if class != "LeveledCompactionStrategy" {
                map.retain(|(k, _)| k != "fanout_size" && k != "sstable_size_in_mb");
            }
        }
        if let Some(f) = a.fanout {
            set("fanout_size", f.to_string(), &mut map);
        }
        if let Some(s) = &a.sstable_size {
            let bytes = model::parse_sstable_size_bytes(s)?;
            let mib = (bytes / model::MIB).round();
            if mib < 1.0 {
                return Err(Error::InvalidInput(format!(
                    "--sstable-size {s} is below 1 MiB (sstable_size_in_mb is whole MiB)"
                )));
            }
            if (bytes - mib * model::MIB).abs() > 0.5 {
                // sstable_size_in_mb counts MiB: say what is actually simulated.
                notes.push(format!(
                    "note: --sstable-size {s} rounded to {mib} MiB (sstable_size_in_mb)"
                ));
            }
            set("sstable_size_in_mb", format!("{mib}"), &mut map);
        }
        if let Some(n) = a.level_count {
            set("level_count", n.to_string(), &mut map);
        }
        let mut text = format!("'class': '{class}'");
        for (k, v) in &map {
            let _ = write!(text, ", '{k}': '{v}'");
        }
        if let Some(extra) = &a.options {
            let _ = write!(text, ", {extra}");
        }
        cfg.compaction = TableOptions::parse(&format!("compaction = {{{text}}}"))?.compaction;
        if let Some(r) = &a.ingest_rate {
            cfg.ingest_bytes_per_second = parse_rate_bytes_per_second(r)?;
        }
        if let Some(f) = &a.flush_size {
            cfg.flush_bytes = parse_size_bytes(f)?.round() as u64;
        }
        if let Some(t) = &a.ttl {
            cfg.ttl_seconds = parse_duration_seconds(t)?.round() as u64;
        }
        if let Some(g) = &a.gc_grace {
            let g = parse_duration_seconds(g)?.round();
            cfg.gc_grace_seconds = u32::try_from(g as u64)
                .map_err(|_| Error::InvalidInput("--gc-grace too large".into()))?;
        }
        if let Some(d) = &a.duration {
            cfg.duration_seconds = parse_duration_seconds(d)?.round() as u64;
        }
        cfg.sample_interval_seconds = parse_duration_seconds(&a.sample_interval)?.round() as u64;
        cfg.compaction_throughput_bytes_per_second =
            opt(&a.throughput, parse_rate_bytes_per_second)?;
        cfg.concurrent_compactors = a.concurrent_compactors;
        cfg.check_invariants = !a.no_checks;
        if let Some(w) = &a.bucket_width {
            let seconds = parse_duration_seconds(w)?.round();
            if seconds < 1.0 {
                return Err(Error::InvalidInput(format!(
                    "--bucket-width {w} is below one second"
                )));
            }
            cfg.bucket_seconds = Some(seconds as u64);
        }
        check_work(&cfg)?;
        Ok((cfg, notes))
    }
}

/// Most flushes one simulation may run: each costs a decision (about 20 ms
/// with the invariant checks on at a thousand sstables), so this is hours at
/// the most; the seed's 88 hours are 1,237.
pub const MAX_FLUSHES: f64 = 1_000_000.0;
/// Most samples of the series (each holds every level's figures).
pub const MAX_SAMPLES: f64 = 1_000_000.0;
/// Most write-time buckets a simulated sstable may need (its span over the
/// bucket width): every sstable holds its histogram in memory.
pub const MAX_BUCKETS: f64 = 65_536.0;

/// The flags together must describe a finite run of bounded memory: a flush
/// size of one byte made `--node A` run without end.
fn check_work(cfg: &SimConfig) -> Result<()> {
    let duration = cfg.duration_seconds as f64;
    let flushes = duration * cfg.ingest_bytes_per_second / cfg.flush_bytes.max(1) as f64;
    if flushes.is_nan() || flushes > MAX_FLUSHES {
        return Err(Error::InvalidInput(format!(
            "--duration x --ingest-rate / --flush-size is {flushes:.3e} flushes, more than \
             {MAX_FLUSHES:.0}: shorten the run, lower the rate or raise the flush size"
        )));
    }
    let samples = duration / cfg.sample_interval_seconds.max(1) as f64;
    if samples > MAX_SAMPLES {
        return Err(Error::InvalidInput(format!(
            "--duration / --sample-interval is {samples:.3e} samples, more than {MAX_SAMPLES:.0}: \
             raise --sample-interval"
        )));
    }
    let span = if cfg.ttl_seconds > 0 {
        cfg.ttl_seconds as f64
    } else {
        duration
    };
    let width = cfg
        .bucket_seconds
        .unwrap_or_else(|| (cfg.ttl_seconds / 256).max(60)) as f64;
    if span / width > MAX_BUCKETS {
        return Err(Error::InvalidInput(format!(
            "{} / --bucket-width is {:.3e} buckets per sstable, more than {MAX_BUCKETS:.0}: \
             raise --bucket-width",
            if cfg.ttl_seconds > 0 {
                "--ttl"
            } else {
                "--duration"
            },
            span / width
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn base() -> SimulateOverrides {
        SimulateOverrides {
            sample_interval: "1h".into(),
            concurrent_compactors: 2,
            ..SimulateOverrides::default()
        }
    }

    #[test]
    fn bucket_width_is_a_duration_and_not_zero() {
        let (cfg, _) = SimulateOverrides {
            bucket_width: Some("1h".into()),
            ..base()
        }
        .config()
        .unwrap();
        assert_eq!(cfg.bucket_seconds, Some(3600));
        let (cfg, _) = base().config().unwrap();
        assert_eq!(cfg.bucket_seconds, None, "the simulator's default");
        let err = SimulateOverrides {
            bucket_width: Some("0s".into()),
            ..base()
        }
        .config()
        .unwrap_err()
        .to_string();
        assert!(err.contains("--bucket-width"), "{err}");
    }

    /// The adversarial round's `simulate --node A --flush-size 1`: 3.2e11
    /// flushes, a run without end; refused before it starts, naming the flags.
    #[test]
    fn a_run_of_unbounded_work_is_refused_before_it_starts() {
        for (o, flag) in [
            (
                SimulateOverrides {
                    node: Some('A'),
                    flush_size: Some("1".into()),
                    ..base()
                },
                "--flush-size",
            ),
            (
                SimulateOverrides {
                    node: Some('A'),
                    sample_interval: "1s".into(),
                    duration: Some("3650d".into()),
                    flush_size: Some("1TiB".into()),
                    ..base()
                },
                "--sample-interval",
            ),
            (
                SimulateOverrides {
                    node: Some('A'),
                    bucket_width: Some("1s".into()),
                    ..base()
                },
                "--bucket-width",
            ),
        ] {
            let err = o.config().unwrap_err().to_string();
            assert!(err.contains(flag), "{err}");
        }
        // The seed's own runs stay well inside.
        assert!(SimulateOverrides {
            node: Some('A'),
            ..base()
        }
        .config()
        .is_ok());
    }

    #[test]
    fn explicit_options_override_the_preset() {
        let (cfg, notes) = SimulateOverrides {
            node: Some('B'),
            fanout: Some(7),
            ..base()
        }
        .config()
        .unwrap();
        assert!(notes.is_empty());
        let text = cfg.compaction.to_string();
        assert!(text.contains("'fanout_size': '7'"), "{text}");
        // The preset's 160 MiB sstables survive the fanout override.
        assert!(text.contains("'sstable_size_in_mb': '160'"), "{text}");
    }

    #[test]
    fn a_size_that_is_not_whole_mib_is_rounded_with_a_note() {
        let (_, notes) = SimulateOverrides {
            sstable_size: Some("1.4MiB".into()),
            ..base()
        }
        .config()
        .unwrap();
        assert_eq!(notes.len(), 1, "{notes:?}");
        assert!(notes[0].contains("rounded to 1 MiB"), "{notes:?}");
        let err = SimulateOverrides {
            sstable_size: Some("100KiB".into()),
            ..base()
        }
        .config()
        .unwrap_err()
        .to_string();
        assert!(err.contains("below 1 MiB"), "{err}");
        // A bare number is MiB, as Cassandra's sstable_size_in_mb (issue 16
        // found `--sstable-size 160` refused as "below 1 MiB").
        let (cfg, notes) = SimulateOverrides {
            sstable_size: Some("160".into()),
            ..base()
        }
        .config()
        .unwrap();
        assert!(notes.is_empty(), "{notes:?}");
        let text = cfg.compaction.to_string();
        assert!(text.contains("'sstable_size_in_mb': '160'"), "{text}");
    }
}
