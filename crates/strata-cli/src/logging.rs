//! Where the engine's log events go. The engine emits `tracing` events
//! (flushes, compaction starts and ends with their reasons, whole-sstable
//! drops, commit-log replay, disk refusals, quarantine, failures); this
//! module chooses their destination.
//!
//! Contract:
//! 1. Commands write events to stderr; `strata serve` writes them to
//!    `logs/strata.log` in the data directory, and warnings and errors to
//!    stderr as well. stdout stays the command's answer.
//! 2. The filter is `--log-level` (a level, `info`, or a `RUST_LOG`-style
//!    list, `warn,strata::compaction=debug`), else the `STRATA_LOG`
//!    environment variable, else `RUST_LOG`, else `warn` for commands and
//!    `info` for the server. `info` shows every flush and compaction. A
//!    filter that does not parse is refused with one line, before anything
//!    runs.
//! 3. The server's log rotates as Cassandra's `system.log` does by size: at
//!    [`ROTATE_BYTES`] the file becomes `strata.log.1` (older ones shift up)
//!    and at most [`KEEP_FILES`] old files are kept; a rotation never loses
//!    an event (it happens between two events, never inside one).
//! 4. Lines carry an ISO-8601 UTC timestamp, the level, the event's target
//!    (`strata::flush`, `strata::compaction`, ...), its message and fields.

use std::fs::{File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Mutex;

use strata::{Error, Result};
use tracing_subscriber::filter::{EnvFilter, LevelFilter};
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;
use tracing_subscriber::Layer;

/// The server's log file grows to this size before it rotates.
pub const ROTATE_BYTES: u64 = 50 << 20;
/// Rotated files kept beside the current one.
pub const KEEP_FILES: u32 = 7;

/// The filter in force (contract 2), or a one-line error naming the source.
fn filter(flag: Option<&str>, default: &str) -> Result<EnvFilter> {
    let (spec, source) = match flag {
        Some(f) => (f.to_string(), "--log-level"),
        None => match std::env::var("STRATA_LOG") {
            Ok(v) if !v.is_empty() => (v, "STRATA_LOG"),
            _ => match std::env::var("RUST_LOG") {
                Ok(v) if !v.is_empty() => (v, "RUST_LOG"),
                _ => (default.to_string(), "the default"),
            },
        },
    };
    let refuse = |why: String| {
        Error::InvalidInput(format!(
            "{source}: '{spec}' is not a log level (error, warn, info, debug, trace, off) \
             or a filter such as 'warn,strata::compaction=debug'{why}"
        ))
    };
    // A lone word is a level here: RUST_LOG would read `verbose` as "every
    // event of a target named verbose", which is never what was meant.
    let levels = ["error", "warn", "info", "debug", "trace", "off"];
    let word = spec.trim();
    if !word.contains(['=', ',']) && !levels.contains(&word.to_ascii_lowercase().as_str()) {
        return Err(refuse(String::new()));
    }
    EnvFilter::builder()
        .with_default_directive(LevelFilter::OFF.into())
        .parse(word)
        .map_err(|e| refuse(format!(": {e}")))
}

/// The `--log-level` given on the command line, for the server to use once
/// it has opened its data directory.
static FLAG: std::sync::OnceLock<Option<String>> = std::sync::OnceLock::new();

/// Keeps the command line's `--log-level` for [`init_server`].
pub fn remember(flag: Option<String>) {
    let _ = FLAG.set(flag);
}

/// What [`remember`] kept.
pub fn flag() -> Option<&'static str> {
    FLAG.get().and_then(|f| f.as_deref())
}

/// Checks the filter a command would use, so a bad `--log-level` is refused
/// before the command starts (contract 2).
pub fn check(flag: Option<&str>) -> Result<()> {
    filter(flag, "warn").map(|_| ())
}

/// Events of a command to stderr (contract 1).
pub fn init_command(flag: Option<&str>) -> Result<()> {
    let filter = filter(flag, "warn")?;
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(filter);
    // Only fails when a subscriber is already set (a second call): keep it.
    let _ = tracing_subscriber::registry().with(stderr).try_init();
    Ok(())
}

/// The server's events into `DIR/logs/strata.log`, warnings and errors to
/// stderr too (contract 1). Returns the log file's path.
pub fn init_server(flag: Option<&str>, data_dir: &Path) -> Result<PathBuf> {
    let filter = filter(flag, "info")?;
    let dir = data_dir.join("logs");
    std::fs::create_dir_all(&dir).map_err(|e| Error::io(&dir, e))?;
    let path = dir.join("strata.log");
    let file = RotatingFile::open(&path, ROTATE_BYTES, KEEP_FILES)?;
    let to_file = tracing_subscriber::fmt::layer()
        .with_writer(Mutex::new(file))
        .with_ansi(false)
        .with_filter(filter);
    let stderr = tracing_subscriber::fmt::layer()
        .with_writer(std::io::stderr)
        .with_ansi(false)
        .with_filter(LevelFilter::WARN);
    let _ = tracing_subscriber::registry()
        .with(to_file)
        .with(stderr)
        .try_init();
    Ok(path)
}

/// A log file that rotates by size (contract 3).
pub struct RotatingFile {
    path: PathBuf,
    file: File,
    written: u64,
    max_bytes: u64,
    keep: u32,
}

impl RotatingFile {
    /// Opens `path` for appending; its present size counts toward the limit.
    pub fn open(path: &Path, max_bytes: u64, keep: u32) -> Result<RotatingFile> {
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|e| Error::io(path, e))?;
        let written = file.metadata().map_err(|e| Error::io(path, e))?.len();
        Ok(RotatingFile {
            path: path.to_path_buf(),
            file,
            written,
            max_bytes,
            keep,
        })
    }

    fn rotated(&self, n: u32) -> PathBuf {
        let mut name = self.path.as_os_str().to_owned();
        name.push(format!(".{n}"));
        PathBuf::from(name)
    }

    /// `strata.log.N` -> `.N+1` (the oldest dropped), the current file ->
    /// `.1`, and a new current file.
    fn rotate(&mut self) -> std::io::Result<()> {
        self.file.flush()?;
        if self.keep == 0 {
            self.file.set_len(0)?;
            self.written = 0;
            return Ok(());
        }
        let oldest = self.rotated(self.keep);
        if oldest.exists() {
            std::fs::remove_file(&oldest)?;
        }
        for n in (1..self.keep).rev() {
            let from = self.rotated(n);
            if from.exists() {
                std::fs::rename(&from, self.rotated(n + 1))?;
            }
        }
        std::fs::rename(&self.path, self.rotated(1))?;
        self.file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&self.path)?;
        self.written = 0;
        Ok(())
    }
}

impl Write for RotatingFile {
    /// One call per event (the formatter writes each line whole), so a
    /// rotation falls between two events.
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.written > 0 && self.written + buf.len() as u64 > self.max_bytes {
            self.rotate()?;
        }
        let n = self.file.write(buf)?;
        self.written += n as u64;
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rotates_between_events_and_keeps_a_bounded_number_of_files() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata.log");
        let mut f = RotatingFile::open(&path, 100, 3).unwrap();
        for i in 0..50 {
            f.write_all(format!("event {i:02} ....................\n").as_bytes())
                .unwrap();
        }
        f.flush().unwrap();
        // 30-byte events, 100-byte files: three events per file.
        let current = std::fs::read_to_string(&path).unwrap();
        assert_eq!(current.lines().count(), 50 % 3);
        let mut files: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        files.sort();
        assert_eq!(
            files,
            ["strata.log", "strata.log.1", "strata.log.2", "strata.log.3"]
        );
        // The newest rotated file holds the three events before the current.
        let newest = std::fs::read_to_string(dir.path().join("strata.log.1")).unwrap();
        assert!(
            newest.starts_with("event 45") && newest.ends_with("event 47 ....................\n")
        );
        // Every event is whole.
        for name in &files {
            for line in std::fs::read_to_string(dir.path().join(name))
                .unwrap()
                .lines()
            {
                assert_eq!(line.len(), 29, "{line}");
            }
        }
    }

    #[test]
    fn reopening_counts_what_the_file_holds() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("strata.log");
        std::fs::write(&path, vec![b'x'; 90]).unwrap();
        let mut f = RotatingFile::open(&path, 100, 2).unwrap();
        f.write_all(&[b'y'; 20]).unwrap();
        assert_eq!(
            std::fs::read(dir.path().join("strata.log.1"))
                .unwrap()
                .len(),
            90
        );
        assert_eq!(std::fs::read(&path).unwrap(), vec![b'y'; 20]);
    }

    #[test]
    fn a_filter_that_does_not_parse_is_refused() {
        for bad in ["loud", "info,strata=loud"] {
            let err = filter(Some(bad), "warn").unwrap_err();
            assert!(err.to_string().contains("--log-level"), "{err}");
        }
        assert!(filter(Some("info"), "warn").is_ok());
        assert!(filter(Some("warn,strata::compaction=debug"), "warn").is_ok());
    }
}
