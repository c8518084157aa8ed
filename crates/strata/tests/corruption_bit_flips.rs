//! Seeded single-bit flips in sstables and commit-log segments are always detected,
//! reported with the file and offset, and never turn into altered data.
//!
//! **SSTables** (of a cleanly closed database, three tables: LZ4 with 1 KiB chunks,
//! zstd with 2 KiB chunks, uncompressed). Every byte of an sstable is covered by a
//! CRC32C (docs/FORMAT.md; sstable invariant 1), so for every flip: either the open
//! fails with `Error::Corruption` naming the file, or it succeeds and then
//! `verify` reports the damage (naming the file) and every read either returns
//! exactly the value written or fails with `Error::Corruption` naming the file.
//! Never a wrong value, a missing row, or another kind of error. A major
//! compaction of the damaged table fails too, leaving the live set as it was: it
//! must not launder the damage into fresh, correctly checksummed files.
//!
//! **Commit-log segments** (of a crashed database: dropped without `close`, so
//! nothing was flushed and every write lives only in the log). Record boundaries
//! and keys come from `dump_segment` of the pristine files. For a flip in record
//! `r` of segment `s` the documented recovery rules (docs/DURABILITY.md) say:
//! - `r` is the last record of the newest segment: a torn tail; the open succeeds,
//!   `torn_tail_bytes` is `r`'s size, and only `r`'s row is missing;
//! - otherwise (or a flip in a segment header): the open fails with
//!   `Error::Corruption` naming `s` and the offset of `r` (0 for the header), and
//!   no segment is deleted;
//! - with `ignore_replay_errors`: the open succeeds, `replay_stats().corruptions`
//!   lists exactly `s @ offset(r)`, and exactly `r`'s row is missing (for a header
//!   flip, the segment's rows: the whole segment is the damaged region).
//!
//! **Power-loss-shaped damage**: the newest segment cut short or zero-filled to
//! its end is a torn tail; the same in an older segment, or a zeroed page followed
//! by intact records, is corruption at the first damaged record.
//!
//! Every row read back is compared with what was written. Trials: 2,500 sstable
//! flips, 1,000 segment flips (each opened twice) and 40 truncations or zeroed
//! ranges, seeded; the data directories live in /dev/shm when it exists, so
//! thousands of opens stay fast.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Instant;
use strata::clock::SimClock;
use strata::commitlog::{
    dump_segment, list_segments, CommitLogOptions, LogCompression, SegmentDump, SyncMode,
};
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::fs::{Fs, IoCause, IoTag};
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;
use strata::Error;

const SSTABLE_TRIALS: usize = 2_500;
const SEGMENT_TRIALS: usize = 1_000;

/// A scratch directory on tmpfs when available (fsync is free there).
fn scratch() -> tempfile::TempDir {
    let shm = Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::tempdir_in(shm) {
            return d;
        }
    }
    tempfile::tempdir().unwrap()
}

fn value_of(table: &str, key: i32, version: u32) -> String {
    let len = (key as usize * 37 + version as usize * 11) % 180 + 10;
    let mut s = format!("{table}:{key}:{version}:");
    let c = (b'A' + (key as u32 % 26) as u8) as char;
    s.extend(std::iter::repeat_n(c, len));
    s
}

/// Reads `key` and returns its `v`, `None` for no row.
fn read_v(t: &Arc<Table>, key: i32) -> Result<Option<String>, Error> {
    let rows = t.select(&[Value::Int(key)], &ClusteringRange::ALL, false, usize::MAX)?;
    match rows.as_slice() {
        [] => Ok(None),
        [row] => match row.iter().find(|(c, _)| c == "v").map(|(_, v)| v.clone()) {
            Some(Some(Value::Text(s))) => Ok(Some(s)),
            other => panic!("key {key}: unexpected v {other:?}"),
        },
        more => panic!("key {key}: {} rows", more.len()),
    }
}

fn flip(path: &Path, byte: u64, bit: u8) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[byte as usize] ^= 1 << bit;
    std::fs::write(path, bytes).unwrap();
}

/// `e` is a corruption naming `path`, at an offset inside the file.
fn assert_corruption_in(e: &Error, path: &Path, file_len: u64, what: &str) {
    match e {
        Error::Corruption {
            path: p, offset, ..
        } => {
            assert_eq!(p, path, "{what}: corruption names the wrong file: {e}");
            assert!(
                *offset < file_len,
                "{what}: offset {offset} outside the file of {file_len} bytes: {e}"
            );
        }
        other => panic!(
            "{what}: expected Error::Corruption naming {}, got {other:?}",
            path.display()
        ),
    }
}

// ---------------------------------------------------------------------------
// SSTables
// ---------------------------------------------------------------------------

const TABLES: [(&str, &str); 3] = [
    (
        "lz4",
        "compression = {'class': 'LZ4Compressor', 'chunk_length_in_kb': 1}",
    ),
    (
        "zstd",
        "compression = {'class': 'ZstdCompressor', 'chunk_length_in_kb': 2}",
    ),
    ("plain", "compression = {'enabled': 'false'}"),
];
const SSTABLE_KEYS: i32 = 300;

#[test]
fn sstable_bit_flips_are_detected_and_never_return_altered_data() {
    let tmp = scratch();
    let dir = tmp.path().join("db");
    // table -> key -> expected value
    let mut expected: BTreeMap<&str, BTreeMap<i32, String>> = BTreeMap::new();
    {
        let mut o = DbOptions::new(SimClock::fixed());
        o.commitlog = None;
        o.concurrent_compactors = 0; // the damaged files stay as they are
        let db = Database::open(&dir, o).unwrap();
        for (name, opts) in TABLES {
            let t = db
                .create_table_cql(&format!(
                    "CREATE TABLE ks.{name} (k int PRIMARY KEY, v text) WITH {opts}"
                ))
                .unwrap();
            let exp = expected.entry(name).or_default();
            // Three sstables; later ones overwrite some keys of earlier ones (with
            // later timestamps), so reads merge across files.
            for version in 0..3u32 {
                for key in 0..SSTABLE_KEYS {
                    if version > 0 && key % (version as i32 + 2) != 0 {
                        continue;
                    }
                    let v = value_of(name, key, version);
                    let w = WriteOptions {
                        timestamp_micros: Some(1_000_000 + version as i64),
                        ttl_seconds: None,
                    };
                    t.insert(&[("k", Value::Int(key)), ("v", Value::Text(v.clone()))], &w)
                        .unwrap();
                    exp.insert(key, v);
                }
                t.flush().unwrap();
            }
            assert_eq!(t.view().sstables().len(), 3);
        }
        db.close().unwrap();
    }
    let mut files: Vec<(&str, PathBuf, Vec<u8>)> = Vec::new();
    for (name, _) in TABLES {
        let tdir = dir.join("ks").join(name);
        for entry in std::fs::read_dir(&tdir).unwrap() {
            let p = entry.unwrap().path();
            if p.to_string_lossy().ends_with("-Data.db") {
                let bytes = std::fs::read(&p).unwrap();
                files.push((name, p, bytes));
            }
        }
    }
    files.sort_by(|a, b| a.1.cmp(&b.1));
    assert_eq!(files.len(), 9);

    let mut rng = ChaCha8Rng::seed_from_u64(0xB17F_11B5);
    let started = Instant::now();
    let (mut at_open, mut at_read, mut only_verify) = (0, 0, 0);
    for trial in 0..SSTABLE_TRIALS {
        let (name, path, pristine) = &files[rng.gen_range(0..files.len())];
        let len = pristine.len() as u64;
        let byte = rng.gen_range(0..len);
        let bit = rng.gen_range(0..8u8);
        let what = format!(
            "trial {trial}: bit {bit} of byte {byte} of {}",
            path.display()
        );
        flip(path, byte, bit);
        let mut o = DbOptions::new(SimClock::fixed());
        o.commitlog = None;
        o.concurrent_compactors = 0; // the damaged files stay as they are
        match Database::open(&dir, o) {
            Err(e) => {
                assert_corruption_in(&e, path, len, &what);
                at_open += 1;
            }
            Ok(db) => {
                let t = db.table("ks", name).unwrap();
                let mut read_errors = 0;
                for (&key, want) in &expected[name] {
                    match read_v(&t, key) {
                        Ok(got) => assert_eq!(
                            got.as_deref(),
                            Some(want.as_str()),
                            "{what}: key {key} read back altered"
                        ),
                        Err(e) => {
                            assert_corruption_in(&e, path, len, &format!("{what}, key {key}"));
                            read_errors += 1;
                        }
                    }
                }
                // Damage to the tail (footer, chunk table, summary, filter,
                // statistics, header) keeps the sstable from opening: the
                // database opens without it, reports it, and the reads above that
                // could need it failed naming the file.
                let unreadable = t.unreadable_sstables();
                if let Some(u) = unreadable.first() {
                    assert_eq!(unreadable.len(), 1, "{what}");
                    assert_eq!(&u.path, path, "{what}");
                    assert_corruption_in(&u.error(), path, len, &format!("{what}, open"));
                    assert!(
                        !strata::maintenance::verify(&t).is_clean(),
                        "{what}: verify missed the unreadable sstable"
                    );
                    at_open += 1;
                    drop(t);
                    db.close().unwrap();
                    std::fs::write(path, pristine).unwrap();
                    continue;
                }
                let view = t.view();
                let damaged = view
                    .sstables()
                    .iter()
                    .find(|s| s.path() == path.as_path())
                    .expect("damaged sstable is live");
                let problems = damaged.verify(IoTag::new(IoCause::UserRead));
                assert!(!problems.is_empty(), "{what}: verify missed the flip");
                for p in &problems {
                    assert_corruption_in(p, path, len, &format!("{what}, verify"));
                }
                if read_errors > 0 {
                    at_read += 1;
                } else {
                    only_verify += 1;
                }
                drop(view);
                // Compaction must not launder the damage into fresh, checksummed
                // files: it reads every chunk and index block, so it fails, and
                // the live set stays as it was.
                let ids: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
                match t.compact_major(db.compaction_limiter()) {
                    Err(e) => assert_corruption_in(&e, path, len, &format!("{what}, compaction")),
                    Ok(records) => {
                        panic!("{what}: compaction of a damaged sstable succeeded: {records:?}")
                    }
                }
                let after: Vec<u64> = t.view().sstables().iter().map(|s| s.id()).collect();
                assert_eq!(
                    after, ids,
                    "{what}: a failed compaction changed the live set"
                );
                drop(t);
                // Nothing is written by close: no commit log, no memtable data.
                db.close().unwrap();
            }
        }
        std::fs::write(path, pristine).unwrap();
        let extra: Vec<String> = std::fs::read_dir(path.parent().unwrap())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.contains("Data.db") && !files.iter().any(|f| f.1.ends_with(n)))
            .collect();
        assert!(extra.is_empty(), "{what}: left behind {extra:?}");
    }
    eprintln!(
        "{SSTABLE_TRIALS} sstable flips in {:.1} s: {at_open} found at open (sstable set aside \
         as unreadable), {at_read} failed \
         reads, {only_verify} found by verify only",
        started.elapsed().as_secs_f64()
    );
    assert!(
        at_open > 0 && at_read > 0,
        "the trials reach both the tail and the data"
    );
}

// ---------------------------------------------------------------------------
// Commit-log segments
// ---------------------------------------------------------------------------

const SEGMENT_KEYS: i32 = 400;

fn segment_options(ignore_replay_errors: bool) -> DbOptions {
    let mut o = DbOptions::new(SimClock::fixed());
    o.commitlog = Some(CommitLogOptions {
        sync: SyncMode::Batch,
        segment_size_bytes: 8 * 1024,
        ignore_replay_errors,
        ..CommitLogOptions::default()
    });
    o.concurrent_compactors = 0;
    o
}

/// One record of a pristine segment: its byte range and the key it wrote.
#[derive(Debug, Clone)]
struct Rec {
    start: u64,
    end: u64,
    key: i32,
}

fn key_of_hex(hex: &str) -> i32 {
    assert_eq!(hex.len(), 8, "int keys serialize to 4 bytes: {hex}");
    (u32::from_str_radix(hex, 16).unwrap()) as i32
}

/// The mutation records of a pristine segment (not its seal).
fn records_of(dump: &SegmentDump) -> Vec<Rec> {
    dump.records
        .iter()
        .filter(|r| !r.seal)
        .map(|r| {
            assert!(
                r.crc_ok && r.error.is_none(),
                "pristine segment is damaged: {r:?}"
            );
            Rec {
                start: r.offset,
                end: r.end_offset,
                key: key_of_hex(&r.mutation.as_ref().unwrap().key_hex),
            }
        })
        .collect()
}

fn restore(dir: &Path, files: &[(PathBuf, Vec<u8>)]) {
    if dir.exists() {
        std::fs::remove_dir_all(dir).unwrap();
    }
    for (rel, bytes) in files {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, bytes).unwrap();
    }
}

fn snapshot(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    fn walk(root: &Path, d: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                out.push((
                    p.strip_prefix(root).unwrap().to_path_buf(),
                    std::fs::read(&p).unwrap(),
                ));
            }
        }
    }
    let mut out = Vec::new();
    walk(dir, dir, &mut out);
    out
}

/// Reads every key and checks it: the written value, or absent if in `missing`.
fn check_rows(
    db: &Database,
    expected: &BTreeMap<i32, String>,
    missing: &BTreeSet<i32>,
    what: &str,
) {
    let t = db.table("ks", "t").unwrap();
    for (&key, want) in expected {
        let got = read_v(&t, key).unwrap_or_else(|e| panic!("{what}: key {key}: {e}"));
        if missing.contains(&key) {
            assert_eq!(
                got, None,
                "{what}: key {key} was in the damaged record, yet read back"
            );
        } else {
            assert_eq!(
                got.as_deref(),
                Some(want.as_str()),
                "{what}: key {key} lost or altered"
            );
        }
    }
}

/// (id, path, records, file length) of one segment.
type Segment = (u64, PathBuf, Vec<Rec>, u64);

/// A crashed database whose writes live only in its commit log, with the record
/// map of each segment.
struct CrashedLog {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    expected: BTreeMap<i32, String>,
    /// Every file of the data directory as it was at the crash.
    pristine: Vec<(PathBuf, Vec<u8>)>,
    /// Each segment holding records.
    segments: Vec<Segment>,
    /// Byte range of each segment's seal (every one but the newest has one).
    seals: Vec<Option<(u64, u64)>>,
    newest_index: usize,
}

fn crashed_log() -> CrashedLog {
    crashed_log_with(LogCompression::None)
}

/// [`crashed_log`] with the log written with `compression` (replay reads
/// either, so the reopens need no setting).
fn crashed_log_with(compression: LogCompression) -> CrashedLog {
    let tmp = scratch();
    let dir = tmp.path().join("db");
    let mut expected = BTreeMap::new();
    {
        let mut o = segment_options(false);
        if let Some(c) = o.commitlog.as_mut() {
            c.compression = compression;
        }
        let db = Database::open(&dir, o).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
            .unwrap();
        for key in 0..SEGMENT_KEYS {
            let v = value_of("t", key, 0);
            t.insert(
                &[("k", Value::Int(key)), ("v", Value::Text(v.clone()))],
                &WriteOptions::default(),
            )
            .unwrap();
            expected.insert(key, v);
        }
        assert_eq!(
            t.view().sstables().len(),
            0,
            "nothing flushed: the log holds everything"
        );
        // Crash: drop without close (no drain, no flush).
    }
    let pristine = snapshot(&dir);
    let fs = Fs::new();
    let listed = list_segments(&fs, &dir.join("commitlog")).unwrap();
    let (segments, seals): (Vec<Segment>, Vec<Option<(u64, u64)>>) = listed
        .into_iter()
        .map(|(id, p)| {
            let dump = dump_segment(&fs, &p).unwrap();
            // The values repeat one letter: with compression most records
            // are stored compressed (the shortest do not repay it), without
            // it none.
            let records = dump.records.iter().filter(|r| !r.seal).count();
            let packed = dump.records.iter().filter(|r| r.compressed).count();
            match compression {
                LogCompression::None => assert_eq!(packed, 0),
                LogCompression::Lz4 => assert!(2 * packed > records, "{packed} of {records}"),
            }
            let seal = dump
                .records
                .iter()
                .find(|r| r.seal)
                .map(|r| (r.offset, r.end_offset));
            ((id, p, records_of(&dump), dump.file_bytes), seal)
        })
        .filter(|((_, _, recs, _), _)| !recs.is_empty())
        .unzip();
    assert!(
        segments.len() >= 3,
        "writes span several segments: {}",
        segments.len()
    );
    let logged: usize = segments.iter().map(|s| s.2.len()).sum();
    assert_eq!(logged, SEGMENT_KEYS as usize, "one record per write");
    // The newest segment holding records: the log also made the next one
    // ahead of its roll, which holds none and is not damaged below.
    let newest_index = segments.len() - 1;
    assert!(
        segments.windows(2).all(|w| w[0].0 < w[1].0),
        "listed in id order"
    );
    for (i, seal) in seals.iter().enumerate() {
        // Rolled segments are sealed; the crash left the newest open.
        assert_eq!(seal.is_some(), i != newest_index, "segment {i}: {seal:?}");
        if let Some((_, end)) = seal {
            assert_eq!(*end, segments[i].3, "the seal is the segment's last frame");
        }
    }
    CrashedLog {
        _tmp: tmp,
        dir,
        expected,
        pristine,
        segments,
        seals,
        newest_index,
    }
}

#[test]
fn segment_bit_flips_stop_or_skip_recovery_exactly_as_documented() {
    segment_bit_flips(LogCompression::None, SEGMENT_TRIALS, 0xC0FF_EE00);
}

/// The same rules for a log of compressed records: a flip in the stored
/// (compressed) bytes fails the record's checksum like any other, so it is
/// never decompressed into a wrong mutation.
#[test]
fn compressed_segment_bit_flips_stop_or_skip_recovery_exactly_as_documented() {
    segment_bit_flips(LogCompression::Lz4, SEGMENT_TRIALS / 2, 0xC0FF_EE01);
}

fn segment_bit_flips(compression: LogCompression, trials: usize, seed: u64) {
    let CrashedLog {
        _tmp,
        dir,
        expected,
        pristine,
        segments,
        seals,
        newest_index,
    } = crashed_log_with(compression);
    let newest = segments[newest_index].0;
    let all_files: BTreeSet<PathBuf> = pristine.iter().map(|(p, _)| p.clone()).collect();

    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let started = Instant::now();
    let (mut stopped, mut torn, mut header, mut old_tail) = (0, 0, 0, 0);
    for trial in 0..trials {
        // One trial in ten aims at the newest segment's last record (a torn tail
        // when damaged), one in ten at the last record of an older segment (not a
        // torn tail: corruption); uniform flips would hit these once in hundreds.
        let aim = rng.gen_range(0..10);
        let index = match aim {
            0 => newest_index,
            1 => rng.gen_range(0..newest_index),
            _ => rng.gen_range(0..segments.len()),
        };
        let (id, path, recs, len) = &segments[index];
        let seal = seals[index];
        let byte = if aim <= 1 {
            rng.gen_range(recs.last().unwrap().start..*len)
        } else {
            rng.gen_range(0..*len)
        };
        if aim == 1 {
            old_tail += 1;
        }
        let bit = rng.gen_range(0..8u8);
        let what = format!(
            "trial {trial}: bit {bit} of byte {byte} of {}",
            path.display()
        );
        let rec = recs.iter().find(|r| r.start <= byte && byte < r.end);
        // A flipped seal loses no record but is still corruption: the segment
        // can no longer show it was not cut short.
        let in_seal = seal.filter(|&(s, e)| s <= byte && byte < e);
        let in_header = rec.is_none() && in_seal.is_none();
        assert!(
            in_header == (byte < strata::commitlog::format::HEADER_BYTES),
            "{what}: records and the seal tile the segment after its header"
        );
        let torn_tail = *id == newest && rec.is_some_and(|r| r.end == *len);
        let damaged_offset = match (rec, in_seal) {
            (Some(r), _) => r.start,
            (None, Some((s, _))) => s,
            (None, None) => 0,
        };
        let damaged_keys: BTreeSet<i32> = match (rec, in_seal) {
            (Some(r), _) => [r.key].into(),
            (None, Some(_)) => BTreeSet::new(),
            (None, None) => recs.iter().map(|r| r.key).collect(),
        };

        // 1. Default: stop, or cut a torn tail.
        restore(&dir, &pristine);
        flip(path, byte, bit);
        match Database::open(&dir, segment_options(false)) {
            Ok(db) => {
                assert!(
                    torn_tail,
                    "{what}: the open succeeded; replay {:?}",
                    db.replay_stats()
                );
                let r = db.replay_stats();
                let rec = rec.unwrap();
                assert_eq!(r.torn_tail_bytes, rec.end - rec.start, "{what}: {r:?}");
                assert!(r.corruptions.is_empty(), "{what}: {r:?}");
                check_rows(&db, &expected, &damaged_keys, &what);
                db.close().unwrap();
                torn += 1;
            }
            Err(e) => {
                assert!(
                    !torn_tail,
                    "{what}: a torn tail must not stop the open: {e}"
                );
                match &e {
                    Error::Corruption {
                        path: p, offset, ..
                    } => {
                        assert_eq!(p, path, "{what}: {e}");
                        assert_eq!(*offset, damaged_offset, "{what}: {e}");
                    }
                    other => panic!("{what}: expected Corruption, got {other:?}"),
                }
                // Nothing is deleted: every pristine file is still there.
                let now: BTreeSet<PathBuf> = snapshot(&dir).into_iter().map(|(p, _)| p).collect();
                let gone: Vec<_> = all_files.difference(&now).collect();
                assert!(
                    gone.is_empty(),
                    "{what}: a failed recovery deleted {gone:?}"
                );
                stopped += 1;
                if in_header {
                    header += 1;
                }
            }
        }

        // 2. ignore_replay_errors: skip exactly the damaged record and report it.
        restore(&dir, &pristine);
        flip(path, byte, bit);
        let db = Database::open(&dir, segment_options(true))
            .unwrap_or_else(|e| panic!("{what}: ignore_replay_errors open failed: {e}"));
        let r = db.replay_stats().clone();
        if torn_tail {
            assert!(
                r.corruptions.is_empty() && r.corrupt_records_skipped == 0,
                "{what}: {r:?}"
            );
            assert!(r.torn_tail_bytes > 0, "{what}: {r:?}");
        } else {
            assert_eq!(r.corrupt_records_skipped, 1, "{what}: {r:?}");
            assert_eq!(r.corruptions.len(), 1, "{what}: {r:?}");
            let c = &r.corruptions[0];
            assert!(
                c.contains(&path.display().to_string())
                    && c.contains(&format!("@ {damaged_offset}:")),
                "{what}: the report names the segment and offset {damaged_offset}: {c}"
            );
        }
        assert_eq!(
            r.records_replayed as usize,
            SEGMENT_KEYS as usize - damaged_keys.len(),
            "{what}: every undamaged record is replayed: {r:?}"
        );
        check_rows(&db, &expected, &damaged_keys, &what);
        db.close().unwrap();
    }
    eprintln!(
        "{trials} segment flips ({compression:?}) in {:.1} s: {stopped} stopped recovery ({header} in a \
         header, {old_tail} in the last record of an older segment), {torn} torn tails",
        started.elapsed().as_secs_f64()
    );
    assert!(stopped > 0 && torn > 0, "the trials reach both cases");
}

/// Damage shaped like a power loss rather than bit rot: the newest segment cut
/// short inside a record, or its last page(s) read back as zeros, is a torn tail
/// (cut; the rows of the records it covered are missing, all others intact). The
/// same damage in an older segment, or zeros followed by intact records, is
/// corruption naming the segment and the first damaged record.
#[test]
fn truncated_or_zeroed_segment_ends_are_torn_tails_only_at_the_end_of_the_log() {
    const PAGE: u64 = 4096;
    let log = crashed_log();
    let mut rng = ChaCha8Rng::seed_from_u64(0x2E80_0000);
    for trial in 0..40 {
        let newest = rng.gen_bool(0.5);
        let index = if newest {
            log.newest_index
        } else {
            rng.gen_range(0..log.newest_index)
        };
        let (_, path, recs, len) = &log.segments[index];
        let seal = log.seals[index];
        // Where the damage starts, past the header, and what it does. Never at a
        // record boundary: the newest segment cut exactly between two records is
        // a clean crash before those appends (an older one is covered by the
        // seal, test below).
        let mut from = rng.gen_range(recs[0].start + 1..*len);
        if recs.iter().any(|r| r.start == from) {
            from += 1;
        }
        let zero_middle_page = rng.gen_ratio(1, 3) && len - from > PAGE;
        let truncate = !zero_middle_page && rng.gen_bool(0.5);
        let what = format!(
            "trial {trial}: {} {} from byte {from} of {}",
            if truncate { "truncated" } else { "zeroed" },
            if zero_middle_page {
                "one page"
            } else {
                "to the end"
            },
            path.display()
        );
        restore(&log.dir, &log.pristine);
        let mut bytes = std::fs::read(path).unwrap();
        let original = bytes.clone();
        let damage_end = if truncate {
            bytes.truncate(from as usize);
            from
        } else if zero_middle_page {
            let end = (from + PAGE).min(*len);
            bytes[from as usize..end as usize].fill(0);
            end
        } else {
            bytes[from as usize..].fill(0);
            *len
        };
        if bytes == original {
            continue; // zeros over zeros: no damage
        }
        std::fs::write(path, &bytes).unwrap();
        // The first damaged frame: a record, or the seal of an older segment.
        let first_start = match recs.iter().find(|r| r.end > from) {
            Some(r) => r.start,
            None => seal.expect("damage past the records is in the seal").0,
        };
        // Intact records after the damage make it corruption even at the end.
        let intact_after = !truncate && recs.iter().any(|r| r.start >= damage_end);
        match Database::open(&log.dir, segment_options(false)) {
            Ok(db) => {
                assert!(
                    newest && !intact_after,
                    "{what}: the open succeeded: {:?}",
                    db.replay_stats()
                );
                let r = db.replay_stats().clone();
                assert_eq!(
                    r.torn_tail_bytes,
                    bytes.len() as u64 - first_start,
                    "{what}: {r:?}"
                );
                let missing: BTreeSet<i32> = recs
                    .iter()
                    .filter(|r| r.end > from)
                    .map(|r| r.key)
                    .collect();
                check_rows(&db, &log.expected, &missing, &what);
                db.close().unwrap();
            }
            Err(e) => {
                assert!(
                    !newest || intact_after,
                    "{what}: a torn tail must not stop the open: {e}"
                );
                match &e {
                    Error::Corruption {
                        path: p, offset, ..
                    } => {
                        assert_eq!(p, path, "{what}: {e}");
                        assert_eq!(*offset, first_start, "{what}: {e}");
                    }
                    other => panic!("{what}: expected Corruption, got {other:?}"),
                }
            }
        }
    }
}

/// An older segment cut exactly between two records has no bad frame; only the
/// missing seal (written at roll, format 2) shows that the records after the
/// cut, all acknowledged (the segment was fsynced before the roll), are gone.
#[test]
fn older_segment_cut_at_a_record_boundary_is_detected() {
    let log = crashed_log();
    let (_, path, recs, _) = &log.segments[0];
    let cut = recs[recs.len() / 2].start;
    restore(&log.dir, &log.pristine);
    let mut bytes = std::fs::read(path).unwrap();
    bytes.truncate(cut as usize);
    std::fs::write(path, &bytes).unwrap();
    match Database::open(&log.dir, segment_options(false)) {
        Err(Error::Corruption { path: p, .. }) => assert_eq!(&p, path),
        Err(other) => panic!("expected Corruption, got {other:?}"),
        Ok(db) => {
            let lost: Vec<i32> = recs
                .iter()
                .filter(|r| r.start >= cut)
                .map(|r| r.key)
                .collect();
            panic!(
                "recovery succeeded and silently lost {} acknowledged writes (keys {:?}..): {:?}",
                lost.len(),
                &lost[..3.min(lost.len())],
                db.replay_stats()
            );
        }
    }
}
