//! Segment files: naming, creation, and the one writable handle of the active
//! segment. Every byte and fsync goes through [`crate::fs`] with
//! [`IoCause::CommitLog`], so it is counted and faults can be injected.
//!
//! Threads: a [`SegmentFile`] is owned by the commit log's I/O lock; one thread at
//! a time writes or syncs it.
//!
//! Invariants:
//! 1. A segment is usable (records may be appended) only once its header is
//!    fsynced and the directory entry is fsynced ([`SegmentFile::create`]): a
//!    record acknowledged in batch mode can never vanish with its file.
//! 2. Segment ids are never reused while a file with that id exists, and a new
//!    segment's id is greater than every existing one, so replay positions
//!    `(segment, offset)` only grow.

use super::format::{encode_header, HEADER_BYTES};
use crate::error::Result;
use crate::fs::{Fs, IoCause, IoTag, SyncHandle, WritableFile};
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub(crate) const TAG: IoTag = IoTag::new(IoCause::CommitLog);

const PREFIX: &str = "CommitLog-";
const SUFFIX: &str = ".log";

/// `CommitLog-<format version>-<id>.log`, as Cassandra names them
/// (`CommitLog-7-<id>.log`): the version in the name lets a tool tell formats
/// apart without opening the file.
pub fn segment_file_name(id: u64) -> String {
    segment_file_name_for(super::format::SEGMENT_FORMAT_VERSION, id)
}

/// The name of segment `id` written in format `version` (older segments keep
/// the name they were created with).
pub fn segment_file_name_for(version: u32, id: u64) -> String {
    format!("{PREFIX}{version}-{id}{SUFFIX}")
}

/// Parses a segment file name into `(format version, id)`.
pub fn parse_segment_file_name(name: &str) -> Option<(u32, u64)> {
    let rest = name.strip_prefix(PREFIX)?.strip_suffix(SUFFIX)?;
    let (version, id) = rest.split_once('-')?;
    let all_digits = |s: &str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
    if !all_digits(version) || !all_digits(id) {
        return None;
    }
    Some((version.parse().ok()?, id.parse().ok()?))
}

/// Path of segment `id` in this build's format (the active segment's).
pub fn segment_path(dir: &Path, id: u64) -> PathBuf {
    dir.join(segment_file_name(id))
}

pub fn segment_path_for(dir: &Path, version: u32, id: u64) -> PathBuf {
    dir.join(segment_file_name_for(version, id))
}

/// The active segment's writable handle.
#[derive(Debug)]
pub struct SegmentFile {
    pub id: u64,
    file: WritableFile,
    /// fsyncs the segment without the I/O lock (periodic mode's syncer).
    syncer: Arc<SyncHandle>,
    /// The wall-clock reference its records are encoded against (format
    /// invariant 9).
    time_base: i64,
}

impl SegmentFile {
    /// Creates segment `id` with its header, fsyncs the file and the directory
    /// (invariant 1). No preallocation: see docs/DURABILITY.md ("Preallocation").
    /// Its records are encoded against `time_base` (format invariant 9).
    pub fn create(fs: &Fs, dir: &Path, id: u64, time_base: i64) -> Result<SegmentFile> {
        let path = segment_path(dir, id);
        let mut file = fs.create(&path, TAG, None)?;
        file.write_all(&encode_header(id, time_base))?;
        file.sync()?;
        fs.sync_dir(dir)?;
        debug_assert_eq!(file.position(), HEADER_BYTES);
        let syncer = Arc::new(file.sync_handle()?);
        Ok(SegmentFile {
            id,
            file,
            syncer,
            time_base,
        })
    }

    /// A handle that fsyncs this segment and nothing else: bytes [`write`] has
    /// handed to the OS before its `sync` call are durable after it. Held
    /// outside the I/O lock, so appends go on during the fsync.
    ///
    /// [`write`]: SegmentFile::write
    pub fn sync_handle(&self) -> Arc<SyncHandle> {
        self.syncer.clone()
    }

    pub fn time_base(&self) -> i64 {
        self.time_base
    }

    /// Offset of the next byte to be written (buffered bytes included).
    pub fn position(&self) -> u64 {
        self.file.position()
    }

    /// Appends whole records and hands them to the OS (write(2), no fsync): the
    /// periodic mode promises that a process crash loses nothing acknowledged, so
    /// no acknowledged byte may wait in this process's buffers.
    pub fn write(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_and_flush(bytes)
    }

    /// Appends bytes that are part of a record still being written: they may
    /// stay in this process's buffer until the next [`write`](Self::write),
    /// which the caller issues before acknowledging anything.
    pub fn write_unflushed(&mut self, bytes: &[u8]) -> Result<()> {
        self.file.write_all(bytes)
    }

    /// Hands buffered bytes to the OS and fsyncs (fdatasync) the segment.
    pub fn sync(&mut self) -> Result<()> {
        self.file.sync()
    }

    /// Whether the segment was deleted (or replaced) under the log.
    pub fn unlinked(&self) -> Result<bool> {
        self.syncer.unlinked()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip() {
        assert_eq!(segment_file_name(17), "CommitLog-7-17.log");
        assert_eq!(segment_file_name_for(1, 17), "CommitLog-1-17.log");
        assert_eq!(parse_segment_file_name("CommitLog-1-17.log"), Some((1, 17)));
        assert_eq!(parse_segment_file_name("CommitLog-1-17.log.tmp"), None);
        assert_eq!(parse_segment_file_name("CommitLog-1-.log"), None);
        assert_eq!(parse_segment_file_name("CommitLog-x-1.log"), None);
        assert_eq!(parse_segment_file_name("MANIFEST"), None);
    }
}
