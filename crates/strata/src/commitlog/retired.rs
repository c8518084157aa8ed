//! The retired-segment record: `<commitlog dir>/RETIRED`, the ids of every segment
//! that the log deleted (or skipped) on purpose. With it, a segment id that is
//! neither on disk nor retired is a segment that went missing (docs/FORMAT.md,
//! "Commit-log segment sequence").
//!
//! Why a file and not a field in each segment header: deletions happen out of id
//! order (a segment goes when no table is dirty in it, whatever its neighbours
//! hold), so "everything below N was retired" cannot describe them, and a header
//! is written once, before the deletions it would have to describe.
//!
//! ```text
//! RETIRED  = "strata commitlog retired 1\n"
//!            ( <lo> "-" <hi> "\n" )*          inclusive id ranges, ascending,
//!                                             disjoint and not adjacent
//!            "crc32c " <8 hex digits> "\n"    crc32c of every byte before this line
//! ```
//!
//! Threads: pure functions plus [`load`] and [`store`]; the commit log calls
//! `store` under its `retired` lock, so rewrites never interleave.
//!
//! Invariants:
//! 1. The file is only ever replaced atomically ([`Fs::write_atomic`]: tmp,
//!    fsync, rename, directory fsync), and a segment is deleted only after the
//!    record naming it is durable; so after any crash every id the record lacks
//!    either is on disk or never existed.
//! 2. No id at or above the active segment is retired: the active segment is
//!    never deleted, and ids skipped by [`super::CommitLog::ensure_after`] are
//!    below the segment that skips them.

use crate::error::{Error, Result};
use crate::fs::{Fs, IoCause, IoTag};
use std::path::Path;

/// Bookkeeping like a manifest: counted as metadata, so that commit-log bytes
/// stay exactly the segments' bytes.
const TAG: IoTag = IoTag::new(IoCause::Metadata);

/// File name of the record inside the commit-log directory.
pub const RETIRED_FILE: &str = "RETIRED";
/// The largest `RETIRED` file read: a few lines of figures; anything near
/// this is not one.
const MAX_RETIRED_BYTES: u64 = 1 << 20;
/// Every log holding a segment of this format or later was written by a build
/// that writes `RETIRED` before its first segment (the record came with the
/// builds of 2026-11-25, segment format 3 two days later), so such a log
/// without it lost it; an older log may never have had one.
pub const FIRST_SEGMENT_FORMAT_WITH_RETIRED: u32 = 3;
const FIRST_LINE: &str = "strata commitlog retired 1";

/// A set of segment ids as sorted, disjoint, non-adjacent inclusive ranges.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Retired {
    ranges: Vec<(u64, u64)>,
}

impl Retired {
    /// Adds ids `lo..=hi` (nothing if `lo > hi`).
    pub fn insert_range(&mut self, lo: u64, hi: u64) {
        if lo > hi {
            return;
        }
        self.ranges.push((lo, hi));
        self.ranges = merge(std::mem::take(&mut self.ranges));
    }

    pub fn insert(&mut self, id: u64) {
        self.insert_range(id, id);
    }

    pub fn contains(&self, id: u64) -> bool {
        self.ranges.iter().any(|&(lo, hi)| lo <= id && id <= hi)
    }

    /// The highest retired id.
    pub fn max(&self) -> Option<u64> {
        self.ranges.last().map(|r| r.1)
    }

    pub fn ranges(&self) -> &[(u64, u64)] {
        &self.ranges
    }

    /// Ids in `1..=upto` that are neither retired nor in `found`, as ranges.
    pub fn missing(&self, found: &[u64], upto: u64) -> Vec<(u64, u64)> {
        let covered = merge(
            self.ranges
                .iter()
                .copied()
                .chain(found.iter().map(|&id| (id, id)))
                .collect(),
        );
        let mut out = Vec::new();
        let mut next = 1u64;
        for (lo, hi) in covered {
            if next > upto {
                break;
            }
            if lo > next {
                out.push((next, (lo - 1).min(upto)));
            }
            next = next.max(hi.saturating_add(1));
        }
        if next <= upto {
            out.push((next, upto));
        }
        out
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut s = format!("{FIRST_LINE}\n");
        for (lo, hi) in &self.ranges {
            s.push_str(&format!("{lo}-{hi}\n"));
        }
        let crc = crc32c::crc32c(s.as_bytes());
        s.push_str(&format!("crc32c {crc:08x}\n"));
        s.into_bytes()
    }

    /// Parses [`Retired::encode`]'s output; `Err` says what is wrong.
    pub fn decode(bytes: &[u8]) -> std::result::Result<Retired, String> {
        let text = std::str::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
        let body_end = text
            .rfind("crc32c ")
            .ok_or_else(|| "no crc32c line (truncated?)".to_string())?;
        let (body, crc_line) = text.split_at(body_end);
        let stored = crc_line
            .strip_prefix("crc32c ")
            .and_then(|r| r.strip_suffix('\n'))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| format!("bad crc32c line {crc_line:?}"))?;
        let computed = crc32c::crc32c(body.as_bytes());
        if stored != computed {
            return Err(format!(
                "checksum mismatch (stored {stored:08x}, computed {computed:08x})"
            ));
        }
        let mut lines = body.lines();
        if lines.next() != Some(FIRST_LINE) {
            return Err(format!("first line is not {FIRST_LINE:?}"));
        }
        let mut ranges = Vec::new();
        for line in lines {
            let (lo, hi) = line
                .split_once('-')
                .and_then(|(a, b)| Some((a.parse::<u64>().ok()?, b.parse::<u64>().ok()?)))
                .filter(|(a, b)| a <= b)
                .ok_or_else(|| format!("bad range line {line:?}"))?;
            ranges.push((lo, hi));
        }
        Ok(Retired {
            ranges: merge(ranges),
        })
    }
}

/// Sorts and merges overlapping or adjacent ranges.
fn merge(mut ranges: Vec<(u64, u64)>) -> Vec<(u64, u64)> {
    ranges.sort_unstable();
    let mut out: Vec<(u64, u64)> = Vec::with_capacity(ranges.len());
    for (lo, hi) in ranges {
        match out.last_mut() {
            Some(last) if lo <= last.1.saturating_add(1) => last.1 = last.1.max(hi),
            _ => out.push((lo, hi)),
        }
    }
    out
}

/// Reads `<dir>/RETIRED`; `Ok(None)` if there is none (a log written before the
/// record existed, or a new one). A damaged record is `Error::Corruption`.
pub fn load(fs: &Fs, dir: &Path) -> Result<Option<Retired>> {
    let path = dir.join(RETIRED_FILE);
    if !path.exists() {
        return Ok(None);
    }
    let bytes = fs.read_all(&path, MAX_RETIRED_BYTES, TAG)?;
    Retired::decode(&bytes)
        .map(Some)
        .map_err(|reason| Error::corruption(&path, 0, reason))
}

/// Durably replaces `<dir>/RETIRED` (invariant 1).
pub fn store(fs: &Fs, dir: &Path, retired: &Retired) -> Result<()> {
    fs.write_atomic(&dir.join(RETIRED_FILE), &retired.encode(), TAG)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_merge_and_round_trip() {
        let mut r = Retired::default();
        r.insert(3);
        r.insert(1);
        r.insert(2);
        r.insert_range(7, 9);
        r.insert(5);
        assert_eq!(r.ranges(), &[(1, 3), (5, 5), (7, 9)]);
        assert_eq!(Retired::decode(&r.encode()), Ok(r.clone()));
        assert!(r.contains(8) && !r.contains(4) && !r.contains(10));
        assert_eq!(r.max(), Some(9));
        let mut bad = r.encode();
        bad[30] ^= 1;
        assert!(Retired::decode(&bad).is_err());
        assert!(Retired::decode(&r.encode()[..20]).is_err());
    }

    #[test]
    fn missing_is_what_neither_the_record_nor_the_disk_explains() {
        let mut r = Retired::default();
        r.insert_range(1, 3);
        assert_eq!(r.missing(&[4, 5, 6], 6), vec![]);
        assert_eq!(r.missing(&[5, 6], 6), vec![(4, 4)]);
        assert_eq!(r.missing(&[4, 6], 6), vec![(5, 5)]);
        assert_eq!(r.missing(&[4, 5], 7), vec![(6, 7)]);
        assert_eq!(r.missing(&[], 4), vec![(4, 4)]);
        assert_eq!(Retired::default().missing(&[3, 9], 9), vec![(1, 2), (4, 8)]);
        // Found ids that are also retired (a crash between record and delete).
        assert_eq!(r.missing(&[2, 3, 4], 4), vec![]);
    }
}
