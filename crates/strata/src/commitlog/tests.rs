//! Commit-log tests: round trips across segments, group commit, torn tails,
//! corruption (a seeded bit-flip loop), faults, segment deletion. Every random
//! test is seeded.

use super::*;
use crate::data::{Cell, DecoratedKey, DeletionTime, LivenessInfo, Row};
use crate::fs::Fault;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Barrier;

const NOW_MICROS: i64 = 1_767_225_600_000_000;
const NOW_SECONDS: i64 = NOW_MICROS / 1_000_000;
const HOUR: Duration = Duration::from_secs(3600);

fn opts(sync: SyncMode, segment_size_bytes: u64) -> CommitLogOptions {
    CommitLogOptions {
        sync,
        segment_size_bytes,
        ..CommitLogOptions::default()
    }
}

/// Periodic with a period no test reaches: appends cost no fsync.
fn quiet(segment_size_bytes: u64) -> CommitLogOptions {
    opts(SyncMode::Periodic { period: HOUR }, segment_size_bytes)
}

fn random_update(rng: &mut ChaCha8Rng) -> PartitionUpdate {
    let key = format!("key-{}", rng.gen_range(0..500));
    let mut p = PartitionUpdate::new(DecoratedKey::new(key.as_bytes()));
    if rng.gen_ratio(1, 20) {
        p.deletion.partition = Some(DeletionTime::new(
            NOW_MICROS - rng.gen_range(0..1000),
            NOW_SECONDS,
        ));
    }
    for _ in 0..rng.gen_range(0..4) {
        let ck: Vec<u8> = (0..rng.gen_range(1..6))
            .map(|_| rng.gen_range(b'a'..b'e'))
            .collect();
        let mut r = Row::new(ck);
        let ts = NOW_MICROS + rng.gen_range(-1_000_000..1_000_000);
        if rng.gen() {
            r.liveness = LivenessInfo::new(ts);
        }
        for _ in 0..rng.gen_range(0..4) {
            let column = rng.gen_range(0..6);
            let cell = match rng.gen_range(0..8) {
                0 => Cell::tombstone(column, ts, NOW_SECONDS),
                1 => Cell::expiring(column, ts, rng.gen_range(1..1000), NOW_SECONDS, vec![7; 3]),
                _ => {
                    let value = (0..rng.gen_range(0..60)).map(|_| rng.gen()).collect();
                    Cell::live(column, ts + rng.gen_range(0..3), value)
                }
            };
            r.add_cell(cell);
        }
        p.add_row(r);
    }
    p
}

fn update_with_value(key: &[u8], value_len: usize) -> PartitionUpdate {
    let mut p = PartitionUpdate::new(DecoratedKey::new(key));
    let mut r = Row::new(b"c".to_vec());
    r.add_cell(Cell::live(0, NOW_MICROS, vec![0xab; value_len]));
    p.add_row(r);
    p
}

type Appended = Vec<(u64, PartitionUpdate, ReplayPosition)>;

/// Appends `n` random mutations over tables 1..=3 and closes the log.
fn write_log(dir: &Path, fs: &Fs, o: CommitLogOptions, seed: u64, n: usize) -> Appended {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let log = CommitLog::open(fs, dir, o).unwrap();
    let mut out = Vec::new();
    for _ in 0..n {
        let table = rng.gen_range(1..=3);
        let u = random_update(&mut rng);
        let (pos, ticket) = log.append(table, &u).unwrap();
        log.wait(ticket).unwrap();
        out.push((table, u, pos));
    }
    log.close().unwrap();
    out
}

fn replay_all(
    log: &CommitLog,
    flushed: &dyn Fn(u64) -> Option<ReplayPosition>,
) -> Result<(Vec<(u64, PartitionUpdate)>, ReplayStats)> {
    let mut got = Vec::new();
    let stats = log.replay(flushed, &mut |t, _pos, u| {
        got.push((t, u));
        Ok(())
    })?;
    Ok((got, stats))
}

fn segment_files(dir: &Path) -> Vec<(u64, PathBuf)> {
    list_segments(&Fs::new(), dir).unwrap()
}

/// The segments up to `active`, and whether the next one was made ahead of
/// its roll (it is once the active segment has passed half its size).
fn segments_through(dir: &Path, active: u64) -> (Vec<u64>, bool) {
    let all: Vec<u64> = segment_files(dir).iter().map(|s| s.0).collect();
    let prepared = all.contains(&(active + 1));
    assert!(all.iter().all(|id| *id <= active + 1), "{all:?}");
    (
        all.into_iter().filter(|id| *id <= active).collect(),
        prepared,
    )
}

#[test]
fn round_trip_across_segments_honours_flushed_positions() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(16 * 1024), 11, 3000);
    let segments = segment_files(dir.path());
    assert!(segments.len() >= 5, "{} segments", segments.len());
    // Positions strictly increase (invariant 1).
    assert!(appended.windows(2).all(|w| w[0].2 < w[1].2));

    // Table 1 never flushed, table 2 flushed a third of the way, table 3 two thirds.
    let cut2 = appended[1000].2;
    let cut3 = appended[2000].2;
    let flushed = move |t: u64| match t {
        2 => Some(cut2),
        3 => Some(cut3),
        _ => None,
    };
    let expected: Vec<(u64, PartitionUpdate)> = appended
        .iter()
        .filter(|(t, _, pos)| flushed(*t).is_none_or(|f| *pos > f))
        .map(|(t, u, _)| (*t, u.clone()))
        .collect();

    let log = CommitLog::open(&fs, dir.path(), quiet(16 * 1024)).unwrap();
    let (got, stats) = replay_all(&log, &flushed).unwrap();
    assert_eq!(got.len(), expected.len());
    assert!(got == expected, "replay differs from what was appended");
    assert_eq!(
        stats.records_replayed + stats.records_skipped_flushed,
        appended.len() as u64
    );
    assert_eq!(stats.segments_replayed, segments.len());
    assert_eq!(stats.corrupt_records_skipped, 0);
    assert_eq!(stats.torn_tail_bytes, 0);
    // The newest old segment ends where the last append ended, plus the seal
    // the open added before starting a new segment.
    let last = appended.last().map(|a| a.2).unwrap();
    assert_eq!(
        std::fs::metadata(segment_path(dir.path(), last.segment))
            .unwrap()
            .len(),
        last.offset + format::SEAL_BYTES
    );
    // New positions are beyond every old one.
    assert!(log.current_position() > last);
    // A second replay has nothing to do.
    let (again, _) = replay_all(&log, &flushed).unwrap();
    assert!(again.is_empty());
}

#[test]
fn replay_deletes_segments_no_table_needs() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 5, 1000);
    let before = segment_files(dir.path()).len();
    // Every table flushed up to record 600: segments wholly before it are dropped.
    let cut = appended[600].2;
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let (got, stats) = replay_all(&log, &|_| Some(cut)).unwrap();
    assert_eq!(got.len(), 399);
    assert!(stats.segments_deleted > 0);
    let after = segment_files(dir.path());
    // Old segments still needed, plus the new active one.
    assert_eq!(after.len(), before - stats.segments_deleted + 1);
    assert!(after.iter().all(|(id, _)| *id >= cut.segment));
    // Once the tables flush what they replayed, only the active segment remains.
    let now = log.current_position();
    for t in 1..=3 {
        log.mark_flushed(t, now).unwrap();
    }
    assert_eq!(
        segment_files(dir.path()),
        vec![(now.segment, segment_path(dir.path(), now.segment))]
    );
    assert_eq!(log.stats().segments_live, 1);
}

#[test]
fn mark_flushed_keeps_segments_while_any_dirty_table_needs_them() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), quiet(4096)).unwrap();
    let first = log.current_position().segment;
    // Table 2 writes only into the first segment; table 1 everywhere.
    let (t2_pos, _) = log.append(2, &update_with_value(b"t2", 100)).unwrap();
    let mut t1_positions = Vec::new();
    for i in 0..60 {
        let (pos, _) = log
            .append(1, &update_with_value(format!("k{i}").as_bytes(), 200))
            .unwrap();
        t1_positions.push(pos);
    }
    let active = log.current_position().segment;
    assert!(active >= first + 3, "active segment {active}");
    assert_eq!(
        segments_through(dir.path(), active).0.len() as u64,
        active - first + 1
    );

    // Flushing table 1 partway frees nothing: table 1 is still dirty after the cut,
    // and the first segment still holds table 2's record.
    let mid = t1_positions[10];
    log.mark_flushed(1, mid).unwrap();
    let (ids, _) = segments_through(dir.path(), active);
    assert!(ids.contains(&first));
    assert!(ids.iter().all(|id| *id == first || *id >= mid.segment));

    // Table 1 flushes everything: only the first segment (table 2) and the active one stay.
    log.mark_flushed(1, log.current_position()).unwrap();
    let (ids, _) = segments_through(dir.path(), active);
    assert_eq!(ids, vec![first, active]);

    // Flushing table 2 up to just before its record changes nothing; past it frees it.
    log.mark_flushed(
        2,
        ReplayPosition {
            segment: t2_pos.segment,
            offset: t2_pos.offset - 1,
        },
    )
    .unwrap();
    assert_eq!(segments_through(dir.path(), active).0.len(), 2);
    log.mark_flushed(2, t2_pos).unwrap();
    let (ids, _) = segments_through(dir.path(), active);
    assert_eq!(ids, vec![active], "the active segment is never deleted");
    let stats = log.stats();
    assert_eq!(stats.segments_live, 1);
    assert_eq!(stats.segments_deleted, active - first);

    // A position beyond the log is a caller bug, reported.
    let ahead = ReplayPosition {
        segment: active + 1,
        offset: 0,
    };
    assert!(matches!(
        log.mark_flushed(1, ahead),
        Err(Error::InvalidInput(_))
    ));
}

#[test]
fn group_commit_shares_fsyncs_between_writers() {
    for sync in [
        SyncMode::Batch,
        SyncMode::Group {
            window: Duration::from_millis(2),
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let log = Arc::new(CommitLog::open(&fs, dir.path(), opts(sync, 1 << 20)).unwrap());
        let threads = 8;
        let per_thread = 40;
        let barrier = Arc::new(Barrier::new(threads));
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let log = log.clone();
                let barrier = barrier.clone();
                std::thread::spawn(move || {
                    barrier.wait();
                    let mut positions = Vec::new();
                    for i in 0..per_thread {
                        let key = format!("t{t}-{i}");
                        let (pos, ticket) = log
                            .append(t as u64, &update_with_value(key.as_bytes(), 50))
                            .unwrap();
                        log.wait(ticket).unwrap();
                        // Acknowledged means durable: the log says so too.
                        assert!(log.shared.sync.lock().durable >= pos);
                        positions.push(pos);
                    }
                    positions
                })
            })
            .collect();
        let mut all = Vec::new();
        for h in handles {
            let positions = h.join().unwrap();
            assert!(positions.windows(2).all(|w| w[0] < w[1]));
            all.extend(positions);
        }
        all.sort();
        all.dedup();
        let total = (threads * per_thread) as u64;
        assert_eq!(all.len() as u64, total, "positions are unique");
        let s = log.stats();
        eprintln!(
            "{}: {} mutations, {} fsyncs, {:.2} mutations per fsync",
            sync.name(),
            s.synced_mutations,
            s.fsyncs,
            s.mutations_per_fsync
        );
        assert_eq!(s.appends, total);
        assert_eq!(s.synced_mutations, total, "{s:?}");
        assert!(
            s.fsyncs < total && s.mutations_per_fsync > 1.0,
            "{}: {} fsyncs for {total} mutations ({:.2} per fsync)",
            sync.name(),
            s.fsyncs,
            s.mutations_per_fsync
        );
        drop(log);
        let reopened = CommitLog::open(&fs, dir.path(), quiet(1 << 20)).unwrap();
        let (got, _) = replay_all(&reopened, &|_| None).unwrap();
        assert_eq!(got.len() as u64, total);
    }
}

#[test]
fn batch_wait_is_durable_for_a_single_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), opts(SyncMode::Batch, 1 << 20)).unwrap();
    for i in 0..5 {
        let (pos, ticket) = log.append(1, &update_with_value(&[i], 10)).unwrap();
        log.wait(ticket).unwrap();
        assert_eq!(log.shared.io.lock().synced, pos);
    }
    let s = log.stats();
    assert_eq!((s.fsyncs, s.synced_mutations), (5, 5));
    // Nothing new: waiting again or syncing costs no fsync.
    log.sync_now().unwrap();
    assert_eq!(log.stats().fsyncs, 5);
}

#[test]
fn periodic_syncer_fsyncs_in_the_background() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let sync = SyncMode::Periodic {
        period: Duration::from_millis(20),
    };
    let log = CommitLog::open(&fs, dir.path(), opts(sync, 1 << 20)).unwrap();
    let (pos, ticket) = log.append(1, &update_with_value(b"k", 10)).unwrap();
    log.wait(ticket).unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while log.shared.sync.lock().durable < pos {
        assert!(Instant::now() < deadline, "periodic syncer never synced");
        std::thread::sleep(Duration::from_millis(5));
    }
    assert_eq!(log.stats().fsyncs, 1);
    log.close().unwrap();
    assert!(log.syncer.lock().is_none(), "close joins the syncer");
    assert!(matches!(
        log.append(1, &update_with_value(b"k", 10)),
        Err(Error::Cancelled)
    ));
}

#[test]
fn torn_tail_in_the_newest_segment_is_tolerated_and_cut() {
    for damage in ["truncate", "zeros", "both"] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 21, 300);
        let (last_id, last_path) = segment_files(dir.path()).pop().unwrap();
        let last_pos = appended.last().unwrap().2;
        assert_eq!(last_id, last_pos.segment);
        let prev_end = appended[appended.len() - 2].2;
        assert_eq!(
            prev_end.segment, last_id,
            "the last two records share a segment"
        );
        let mut bytes = std::fs::read(&last_path).unwrap();
        let mut survivors = appended.len();
        if damage != "zeros" {
            // Cut the last record in half.
            let mid = (prev_end.offset + last_pos.offset) / 2;
            bytes.truncate(mid as usize);
            survivors -= 1;
        }
        if damage != "truncate" {
            bytes.extend_from_slice(&[0u8; 1000]);
        }
        std::fs::write(&last_path, &bytes).unwrap();

        let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
        let (got, stats) = replay_all(&log, &|_| None).unwrap();
        assert_eq!(got.len(), survivors, "{damage}");
        for (g, a) in got.iter().zip(&appended) {
            assert!(g.0 == a.0 && g.1 == a.1);
        }
        assert!(stats.torn_tail_bytes > 0);
        // The tail was cut, so once newer segments exist it is not corruption.
        for i in 0..50 {
            log.append(1, &update_with_value(format!("n{i}").as_bytes(), 300))
                .unwrap();
        }
        log.close().unwrap();
        drop(log);
        let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
        let (got, stats) = replay_all(&log, &|_| None).unwrap();
        assert_eq!(got.len(), survivors + 50, "{damage}");
        assert_eq!(stats.torn_tail_bytes, 0);
    }
}

#[test]
fn newest_segment_with_a_torn_header_is_removed() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 3, 50);
    // A crash while creating the next segment left a file with part of a
    // header (longer than a header before format 6, shorter than this
    // format's); the old one is unsealed, since a roll seals only after its
    // successor is durable (invariant 3).
    let last = appended.last().unwrap().2.segment;
    let next = last + 1;
    std::fs::write(
        segment_path(dir.path(), next),
        &format::encode_header(next, 7)[..28],
    )
    .unwrap();
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    assert_eq!(log.current_position().segment, next);
    let (got, _) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got.len(), 50);
}

/// Flips a bit of a record in the middle of a segment that is not the newest.
fn flip_in_old_segment(dir: &Path, appended: &Appended) -> (PathBuf, u64) {
    let first_seg = appended[0].2.segment;
    let in_first: Vec<&(u64, PartitionUpdate, ReplayPosition)> = appended
        .iter()
        .filter(|a| a.2.segment == first_seg)
        .collect();
    assert!(in_first.len() >= 5);
    // Record 2 spans from the end of record 1 to its own position.
    let victim_start = in_first[1].2.offset;
    let victim_end = in_first[2].2.offset;
    let path = segment_path(dir, first_seg);
    let mut bytes = std::fs::read(&path).unwrap();
    let at = ((victim_start + victim_end) / 2) as usize;
    bytes[at] ^= 0x04;
    std::fs::write(&path, bytes).unwrap();
    (path, victim_start)
}

#[test]
fn corruption_mid_segment_stops_replay_naming_file_and_offset() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 8, 400);
    let (path, offset) = flip_in_old_segment(dir.path(), &appended);
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let err = replay_all(&log, &|_| None).unwrap_err();
    match &err {
        Error::Corruption {
            path: p, offset: o, ..
        } => {
            assert_eq!(p, &path);
            assert_eq!(*o, offset);
        }
        other => panic!("expected corruption, got {other}"),
    }
    assert!(err.to_string().contains("ignore_replay_errors"), "{err}");
    // Nothing was deleted: the operator can still inspect and retry.
    drop(log);

    let mut o = quiet(8 * 1024);
    o.ignore_replay_errors = true;
    let log = CommitLog::open(&fs, dir.path(), o).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(stats.corrupt_records_skipped, 1);
    assert_eq!(got.len(), appended.len() - 1);
    assert!(stats.corruptions[0].contains(&format!("@ {offset}")));
    let expected: Vec<_> = appended
        .iter()
        .enumerate()
        .filter(|(i, _)| *i != 2)
        .map(|(_, a)| (a.0, a.1.clone()))
        .collect();
    assert!(got == expected);
}

#[test]
fn damaged_last_record_of_an_older_segment_is_corruption_not_a_torn_tail() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 9, 400);
    let first_seg = appended[0].2.segment;
    let path = segment_path(dir.path(), first_seg);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(bytes.len() - 3);
    std::fs::write(&path, bytes).unwrap();
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    match replay_all(&log, &|_| None) {
        Err(Error::Corruption { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected corruption, got {other:?}"),
    }
}

#[test]
fn seeded_bit_flips_are_always_detected() {
    let src = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(src.path(), &fs, quiet(4096), 77, 150);
    let active = appended[appended.len() - 1].2.segment;
    // Without the next segment, made ahead and still empty: the newest
    // segment is the one holding the last record, as after any crash.
    let files: Vec<(u64, Vec<u8>)> = segment_files(src.path())
        .into_iter()
        .filter(|(id, _)| *id <= active)
        .map(|(id, p)| (id, std::fs::read(p).unwrap()))
        .collect();
    assert!(files.len() >= 3, "{} segments", files.len());
    let newest = files.last().map(|f| f.0).unwrap();
    let last_record_start = appended[appended.len() - 2].2;
    assert_eq!(last_record_start.segment, newest);
    let originals: Vec<(u64, PartitionUpdate)> =
        appended.iter().map(|a| (a.0, a.1.clone())).collect();

    let mut rng = ChaCha8Rng::seed_from_u64(0xB17F11B);
    let (mut errors, mut torn) = (0, 0);
    let trials = 1200;
    for trial in 0..trials {
        let dir = tempfile::tempdir().unwrap();
        let (victim, bit) = {
            let i = rng.gen_range(0..files.len());
            (i, rng.gen_range(0..files[i].1.len() * 8))
        };
        for (i, (id, bytes)) in files.iter().enumerate() {
            let mut b = bytes.clone();
            if i == victim {
                b[bit / 8] ^= 1 << (bit % 8);
            }
            std::fs::write(segment_path(dir.path(), *id), b).unwrap();
        }
        let outcome = CommitLog::open(&fs, dir.path(), quiet(4096))
            .and_then(|log| replay_all(&log, &|_| None));
        match outcome {
            Err(Error::Corruption { path, .. }) => {
                assert_eq!(path, segment_path(dir.path(), files[victim].0));
                errors += 1;
            }
            Err(e) => panic!("trial {trial}: unexpected error {e}"),
            Ok((got, stats)) => {
                // Only a flip inside the newest segment's last record may pass as a
                // torn tail, and then that record (only) is missing; nothing altered.
                let byte = (bit / 8) as u64;
                assert!(
                    files[victim].0 == newest && byte >= last_record_start.offset,
                    "trial {trial}: flip at byte {byte} of segment {} went undetected",
                    files[victim].0
                );
                assert!(stats.torn_tail_bytes > 0);
                assert!(got[..] == originals[..originals.len() - 1]);
                torn += 1;
            }
        }
    }
    eprintln!("{trials} flips: {errors} reported as corruption, {torn} as a torn tail");
    assert_eq!(errors + torn, trials);
    assert!(errors > trials * 9 / 10, "{errors} errors, {torn} torn");
}

#[test]
fn oversized_mutation_is_rejected_and_nothing_is_written() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let o = CommitLogOptions {
        max_mutation_size_bytes: 4 * 1024,
        ..quiet(8 * 1024)
    };
    let log = CommitLog::open(&fs, dir.path(), o).unwrap();
    log.append(1, &update_with_value(b"small", 10)).unwrap();
    log.sync_now().unwrap();
    let before = log.current_position();
    let bytes_before = fs
        .counters()
        .snapshot()
        .written(crate::fs::IoCause::CommitLog);
    let err = log
        .append(1, &update_with_value(b"big", 4 * 1024))
        .unwrap_err();
    match &err {
        Error::InvalidInput(m) => assert!(m.contains("max_mutation_size (4096 bytes)"), "{m}"),
        other => panic!("expected InvalidInput, got {other}"),
    }
    log.sync_now().unwrap();
    assert_eq!(log.current_position(), before);
    assert_eq!(log.stats().appends, 1);
    assert_eq!(
        fs.counters()
            .snapshot()
            .written(crate::fs::IoCause::CommitLog),
        bytes_before
    );
    // Just under the limit fits (in a fresh segment if need be).
    log.append(1, &update_with_value(b"big", 4 * 1024 - 100))
        .unwrap();
}

/// The limit is the option, not half a segment: records larger than a whole
/// segment are accepted, each in a segment of its own that grows to hold it,
/// small records around them keep sharing segments, and everything replays in
/// order, across the direct (unbuffered) write path for records of 1 MiB or more.
#[test]
fn records_larger_than_a_segment_get_their_own_segment_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let seg = 64 * 1024;
    let sizes = [
        10usize,
        20,
        3 * seg as usize,
        30,
        (DIRECT_WRITE_BYTES as usize) + 5,
        40,
        seg as usize / 2,
        seg as usize / 2,
        50,
    ];
    let mut written = Vec::new();
    {
        let log = CommitLog::open(&fs, dir.path(), quiet(seg)).unwrap();
        for (i, &n) in sizes.iter().enumerate() {
            let mut u = update_with_value(format!("k{i}").as_bytes(), n);
            u.rows[0].cells[0].value = (0..n).map(|b| (b * 31 + i) as u8).collect();
            log.append(1, &u).unwrap();
            written.push(u);
        }
        log.close().unwrap();
    }
    let files = segment_files(dir.path());
    let sizes_on_disk: Vec<u64> = files
        .iter()
        .map(|(_, p)| std::fs::metadata(p).unwrap().len())
        .collect();
    assert!(
        sizes_on_disk.iter().filter(|&&s| s > seg).count() == 2,
        "two oversized segments expected: {sizes_on_disk:?}"
    );
    let log = CommitLog::open(&fs, dir.path(), quiet(seg)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(stats.corrupt_records_skipped, 0);
    let got: Vec<PartitionUpdate> = got.into_iter().map(|(_, u)| u).collect();
    assert_eq!(got, written);
}

#[test]
fn unsorted_rows_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::open(&Fs::new(), dir.path(), quiet(8 * 1024)).unwrap();
    let mut p = PartitionUpdate::new(DecoratedKey::new(b"k"));
    p.rows.push(Row::new(b"b".to_vec()));
    p.rows.push(Row::new(b"a".to_vec()));
    assert!(matches!(log.append(1, &p), Err(Error::InvalidInput(_))));
    assert_eq!(log.stats().appends, 0);
}

#[test]
fn failed_fsync_poisons_the_log() {
    for sync in [
        SyncMode::Batch,
        SyncMode::Group {
            window: Duration::from_millis(1),
        },
    ] {
        let dir = tempfile::tempdir().unwrap();
        let fs = Fs::new();
        let log = CommitLog::open(&fs, dir.path(), opts(sync, 1 << 20)).unwrap();
        let (_, ok) = log.append(1, &update_with_value(b"a", 10)).unwrap();
        log.wait(ok).unwrap();
        fs.faults().inject("CommitLog", Fault::SyncError, 1);
        let (_, ticket) = log.append(1, &update_with_value(b"b", 10)).unwrap();
        let err = log.wait(ticket).unwrap_err();
        assert!(matches!(err, Error::Io { .. }), "{err}");
        // The ticket stays unsatisfied; the log never retries the fsync.
        assert!(matches!(log.wait(ticket), Err(Error::Poisoned(_))));
        match log.append(1, &update_with_value(b"c", 10)) {
            Err(Error::Poisoned(reason)) => {
                assert!(reason.contains("fsync"), "{reason}");
                assert!(reason.contains("injected fsync failure"), "{reason}");
            }
            other => panic!("expected Poisoned, got {other:?}"),
        }
        // An acknowledged write stays acknowledged.
        log.wait(ok).unwrap();
        assert!(log.stats().poisoned.is_some());
        assert!(matches!(log.sync_now(), Err(Error::Poisoned(_))));
        assert!(matches!(log.close(), Err(Error::Poisoned(_))));
    }
}

#[test]
fn failed_periodic_fsync_poisons_the_log() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), quiet(1 << 20)).unwrap();
    log.append(1, &update_with_value(b"a", 10)).unwrap();
    fs.faults().inject("CommitLog", Fault::SyncError, 1);
    assert!(log.sync_now().is_err());
    assert!(matches!(
        log.append(1, &update_with_value(b"b", 10)),
        Err(Error::Poisoned(_))
    ));
}

#[test]
fn torn_write_poisons_and_recovery_keeps_every_acknowledged_write() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), opts(SyncMode::Batch, 1 << 20)).unwrap();
    let mut acked = Vec::new();
    for i in 0..20u8 {
        let u = update_with_value(&[i], 40);
        let (_, t) = log.append(7, &u).unwrap();
        log.wait(t).unwrap();
        acked.push(u);
    }
    fs.faults().inject("CommitLog", Fault::TornWrite, 1);
    let (_, t) = log.append(7, &update_with_value(b"lost", 40)).unwrap();
    assert!(log.wait(t).is_err());
    assert!(matches!(
        log.append(7, &update_with_value(b"x", 1)),
        Err(Error::Poisoned(_))
    ));
    drop(log);
    let log = CommitLog::open(&fs, dir.path(), quiet(1 << 20)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert!(stats.torn_tail_bytes > 0);
    let got: Vec<PartitionUpdate> = got.into_iter().map(|g| g.1).collect();
    assert!(got == acked);
}

#[test]
fn ensure_after_moves_ids_past_a_manifest_position() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), quiet(1 << 20)).unwrap();
    assert_eq!(log.current_position().segment, 1);
    let manifest = ReplayPosition {
        segment: 9,
        offset: 1234,
    };
    log.ensure_after(manifest).unwrap();
    let (pos, _) = log.append(1, &update_with_value(b"k", 1)).unwrap();
    assert!(pos > manifest);
    assert_eq!(pos.segment, 10);
    // The superseded empty segment is gone; ensuring an older position is a no-op.
    assert_eq!(segment_files(dir.path()).len(), 1);
    log.ensure_after(ReplayPosition::default()).unwrap();
    assert_eq!(log.current_position().segment, 10);
    // The skipped ids 2..=9 were recorded as retired: not missing at reopen.
    log.close().unwrap();
    drop(log);
    let log = CommitLog::open(&fs, dir.path(), quiet(1 << 20)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got.len(), 1);
    assert!(stats.missing_segments.is_empty(), "{stats:?}");
}

/// A damaged `RETIRED` stops the open (the sequence cannot be checked); with
/// `ignore_replay_errors` it is rebuilt from the files and reported.
#[test]
fn damaged_retired_record_is_corruption_unless_ignored() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    write_log(dir.path(), &fs, quiet(8 * 1024), 4, 300);
    let path = dir.path().join(retired::RETIRED_FILE);
    let mut bytes = std::fs::read(&path).unwrap();
    let last = bytes.len() - 3;
    bytes[last] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    match CommitLog::open(&fs, dir.path(), quiet(8 * 1024)) {
        Err(Error::Corruption { path: p, .. }) => assert_eq!(p, path),
        other => panic!("expected corruption, got {other:?}"),
    }
    let mut o = quiet(8 * 1024);
    o.ignore_replay_errors = true;
    let log = CommitLog::open(&fs, dir.path(), o).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got.len(), 300);
    assert!(
        stats.corruptions[0].contains(retired::RETIRED_FILE),
        "{stats:?}"
    );
    drop(log);
    CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
}

#[test]
fn dump_lists_records_and_damage() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), quiet(1 << 20)).unwrap();
    let mut positions = Vec::new();
    for (t, key) in [(1u64, &b"\x01\x02"[..]), (2, b"ab"), (3, b"zz")] {
        positions.push(log.append(t, &update_with_value(key, 5)).unwrap().0);
    }
    log.close().unwrap();
    let path = segment_path(dir.path(), positions[0].segment);
    let dump = dump_segment(&fs, &path).unwrap();
    assert_eq!(dump.segment_id, positions[0].segment);
    assert_eq!(dump.format_version, format::SEGMENT_FORMAT_VERSION);
    assert_eq!(dump.records.len(), 3);
    let r = &dump.records[0];
    assert_eq!(r.table_id, Some(1));
    assert!(r.crc_ok);
    assert_eq!(r.end_offset, positions[0].offset);
    let m = r.mutation.as_ref().unwrap();
    assert_eq!((m.key_hex.as_str(), m.rows, m.cells), ("0102", 1, 1));

    let mut bytes = std::fs::read(&path).unwrap();
    let mid = (positions[0].offset + positions[1].offset) / 2;
    bytes[mid as usize] ^= 0xff;
    std::fs::write(&path, bytes).unwrap();
    let dump = dump_segment(&fs, &path).unwrap();
    assert_eq!(dump.records.len(), 3);
    assert!(!dump.records[1].crc_ok);
    assert!(!dump.records[1].tail);
    assert_eq!(dump.records[1].offset, positions[0].offset);
    assert!(dump.records[2].crc_ok);
    assert!(serde_json::to_string(&dump).is_ok());
}

#[test]
fn options_are_validated_with_their_names() {
    let bad = quiet(100);
    match CommitLogOptions::validate(&bad) {
        Err(Error::InvalidOption { option, .. }) => assert_eq!(option, "commitlog_segment_size"),
        other => panic!("{other:?}"),
    }
    let zero = opts(
        SyncMode::Periodic {
            period: Duration::ZERO,
        },
        1 << 20,
    );
    assert!(matches!(
        zero.validate(),
        Err(Error::InvalidOption { option, .. }) if option == "commitlog_sync_period"
    ));
    let forever = opts(
        SyncMode::Periodic {
            period: Duration::from_millis(u64::MAX),
        },
        1 << 20,
    );
    assert!(matches!(
        forever.validate(),
        Err(Error::InvalidOption { option, .. }) if option == "commitlog_sync_period"
    ));
    let hour = opts(
        SyncMode::Periodic {
            period: Duration::from_secs(3600),
        },
        1 << 20,
    );
    assert!(hour.validate().is_ok());
    let d = CommitLogOptions::default();
    assert_eq!(d.segment_size_bytes, 32 * 1024 * 1024);
    // Not half a segment any more: a 64 MiB block fits with defaults.
    assert_eq!(d.max_mutation_bytes(), 128 * 1024 * 1024);
    let tiny = CommitLogOptions {
        max_mutation_size_bytes: 100,
        ..CommitLogOptions::default()
    };
    assert!(matches!(
        tiny.validate(),
        Err(Error::InvalidOption { option, .. }) if option == "max_mutation_size"
    ));
    assert_eq!(d.sync.name(), "periodic");
    let p = Duration::from_millis(5);
    assert_eq!(
        SyncMode::from_name("group", p, p).unwrap(),
        SyncMode::Group { window: p }
    );
    assert!(SyncMode::from_name("always", p, p).is_err());
}

#[test]
fn io_is_accounted_to_the_commit_log() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), opts(SyncMode::Batch, 1 << 20)).unwrap();
    let (pos, t) = log.append(1, &update_with_value(b"k", 100)).unwrap();
    log.wait(t).unwrap();
    let snap = fs.counters().snapshot();
    assert_eq!(snap.written(crate::fs::IoCause::CommitLog), pos.offset);
    // The retired-segment record started by open (file, directory: counted as
    // metadata), header fsync, directory fsync, one data fsync.
    assert_eq!(
        snap.written(crate::fs::IoCause::Metadata),
        retired::Retired::default().encode().len() as u64
    );
    assert_eq!(snap.fsyncs, 5);
}

/// A segment that is not the newest, cut exactly at a record boundary, holds
/// only valid frames: without its seal the cut would lose acknowledged writes
/// silently. Cutting just the seal counts too.
#[test]
fn older_segment_cut_at_a_record_boundary_is_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 21, 400);
    let first_seg = appended[0].2.segment;
    let in_first: Vec<u64> = appended
        .iter()
        .filter(|a| a.2.segment == first_seg)
        .map(|a| a.2.offset)
        .collect();
    assert!(
        in_first.len() > 4,
        "want several records in the first segment"
    );
    let path = segment_path(dir.path(), first_seg);
    let pristine = std::fs::read(&path).unwrap();
    assert!(pristine.ends_with(&format::encode_seal()));
    for cut in [in_first[in_first.len() / 2], *in_first.last().unwrap()] {
        std::fs::write(&path, &pristine[..cut as usize]).unwrap();
        let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
        match replay_all(&log, &|_| None) {
            Err(Error::Corruption {
                path: p,
                offset,
                reason,
            }) => {
                assert_eq!((p, offset), (path.clone(), cut));
                assert!(reason.contains("without its seal"), "{reason}");
            }
            other => panic!("cut at {cut}: expected corruption, got {other:?}"),
        }
        log.close().unwrap();
    }
    // Skipping damage is the operator's explicit choice, and it is counted.
    let log = CommitLog::open(
        &fs,
        dir.path(),
        CommitLogOptions {
            ignore_replay_errors: true,
            ..quiet(8 * 1024)
        },
    )
    .unwrap();
    let (_, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(stats.corrupt_records_skipped, 1, "{stats:?}");
}

/// Nothing is ever appended after a seal: a valid frame there is corruption.
#[test]
fn frames_after_a_seal_are_corruption() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 22, 400);
    let path = segment_path(dir.path(), appended[0].2.segment);
    let mut bytes = std::fs::read(&path).unwrap();
    let sealed_at = bytes.len() as u64 - format::SEAL_BYTES;
    bytes.extend_from_slice(&format::encode_record(1, &update_with_value(b"late", 4)));
    std::fs::write(&path, bytes).unwrap();
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    match replay_all(&log, &|_| None) {
        Err(Error::Corruption { offset, reason, .. }) => {
            assert_eq!(offset, sealed_at);
            assert!(reason.contains("follow the segment's seal"), "{reason}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
}

/// Writes segments 4 and 5 as a build of segment format `version` did: three
/// plain records each of `value_len`-byte values, and for format 2 on, a seal
/// on segment 4 (the older one). Returns what they hold, in order.
fn write_old_format_segments(
    dir: &Path,
    version: u32,
    value_len: usize,
) -> Vec<(u64, PartitionUpdate)> {
    let mut expected = Vec::new();
    for id in [4u64, 5] {
        let mut seg = if version >= format::TIME_BASE_SINCE_VERSION {
            format::encode_header_of(version, id, 1_700_000_000_000_000)
        } else {
            format::encode_header_before_time_base(version, id)
        };
        let header = format::decode_header(&seg).unwrap();
        for i in 0..3u8 {
            let u = update_with_value(&[id as u8, i], value_len);
            seg.extend_from_slice(&format::encode_record_for(&header, 1, &u));
            expected.push((1u64, u));
        }
        if id == 4 && format::is_sealed_format(version) {
            seg.extend_from_slice(&format::encode_seal());
        }
        std::fs::write(dir.join(segment_file_name_for(version, id)), seg).unwrap();
    }
    if version >= retired::FIRST_SEGMENT_FORMAT_WITH_RETIRED {
        // The builds that wrote these formats recorded the ids before 4 as
        // retired, as this one does (a log without the record lost it).
        let mut r = retired::Retired::default();
        r.insert_range(1, 3);
        retired::store(&Fs::new(), dir, &r).unwrap();
    }
    expected
}

/// Segments written by a build before the seal (format 1: `CommitLog-1-<id>.log`,
/// no seal) replay as before, and are deleted under their own name.
#[test]
fn format_1_segments_replay_and_are_deleted_by_their_own_name() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let expected = write_old_format_segments(dir.path(), 1, 10);
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    assert_eq!(log.current_position().segment, 6);
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got, expected);
    assert_eq!(stats.corrupt_records_skipped, 0);
    // Format 1 has no seal, so open did not add one.
    let newest_v1 = std::fs::read(dir.path().join(segment_file_name_for(1, 5))).unwrap();
    assert!(!newest_v1.ends_with(&format::encode_seal()));
    // Once the table flushes past them, both go, found by their format-1 names.
    log.mark_flushed(1, log.current_position()).unwrap();
    let names: Vec<String> = fs.list_dir(dir.path()).unwrap();
    assert_eq!(
        names,
        vec![segment_file_name(6), retired::RETIRED_FILE.to_string()],
        "{names:?}"
    );
    log.close().unwrap();
}

/// A crash after a roll (or an open) created its successor but before the old
/// segment got its seal leaves an unsealed segment with records followed by
/// header-only ones: that tail opens cleanly, is sealed, and loses nothing; a
/// sealed newest segment, by contrast, means a newer one is gone.
#[test]
fn crash_between_successor_and_seal_opens_cleanly_but_sealed_newest_is_missing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let appended = write_log(dir.path(), &fs, quiet(8 * 1024), 9, 200);
    let last = appended.last().unwrap().2.segment;
    for id in [last + 1, last + 2] {
        std::fs::write(segment_path(dir.path(), id), format::encode_header(id, 7)).unwrap();
    }
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    assert_eq!(log.current_position().segment, last + 3);
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got.len(), 200);
    assert!(stats.corruptions.is_empty(), "{:?}", stats.corruptions);
    drop(log);
    for id in [last, last + 1, last + 2] {
        let b = std::fs::read(segment_path(dir.path(), id)).unwrap_or_default();
        assert!(
            b.is_empty() || b.ends_with(&format::encode_seal()),
            "segment {id}"
        );
    }

    // Remove the newest (now sealed-predecessor'd) segment: detected, named,
    // and nothing changed by the refused open.
    let newest = segment_files(dir.path()).last().unwrap().0;
    std::fs::remove_file(segment_path(dir.path(), newest)).unwrap();
    // The read-only check (for opens that do not open the log) says the same.
    let note = check_segment_sequence(&fs, dir.path(), &LogExpectation::default())
        .unwrap()
        .unwrap();
    assert!(note.contains(&segment_file_name(newest)), "{note}");
    let before = fs.list_dir(dir.path()).unwrap();
    match CommitLog::open(&fs, dir.path(), quiet(8 * 1024)) {
        Err(Error::Corruption { path, reason, .. }) => {
            assert_eq!(path, segment_path(dir.path(), newest), "{reason}");
            assert!(reason.contains(&segment_file_name(newest)), "{reason}");
        }
        other => panic!("expected corruption, got {other:?}"),
    }
    assert_eq!(fs.list_dir(dir.path()).unwrap(), before);

    // Going on without it reports it, and the next open is clean.
    let mut o = quiet(8 * 1024);
    o.ignore_replay_errors = true;
    let log = CommitLog::open(&fs, dir.path(), o).unwrap();
    assert!(
        log.current_position().segment > newest,
        "a lost id is never reused"
    );
    let (_, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(stats.missing_segments, vec![segment_file_name(newest)]);
    log.close().unwrap();
    drop(log);
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let (_, stats) = replay_all(&log, &|_| None).unwrap();
    assert!(stats.missing_segments.is_empty());
    drop(log);
    assert_eq!(
        check_segment_sequence(&fs, dir.path(), &LogExpectation::default()).unwrap(),
        None
    );
}

/// A log written with compression on, then off, then on again replays every
/// record in order (replay needs no setting); compressed records are smaller
/// as stored, and `max_mutation_size` limits the uncompressed record.
#[test]
fn compressed_and_plain_records_replay_together() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let with = |compression| CommitLogOptions {
        compression,
        ..quiet(8 * 1024)
    };
    let mut expected = Vec::new();
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    for (round, compression) in [
        LogCompression::Lz4,
        LogCompression::None,
        LogCompression::Lz4,
    ]
    .into_iter()
    .enumerate()
    {
        let log = CommitLog::open(&fs, dir.path(), with(compression)).unwrap();
        for i in 0..40u8 {
            // Alternately a compressible value and a random update.
            let u = if i % 2 == 0 {
                update_with_value(&[round as u8, i], 300)
            } else {
                random_update(&mut rng)
            };
            let (_, ticket) = log.append(1, &u).unwrap();
            log.wait(ticket).unwrap();
            expected.push((1u64, u));
        }
        log.close().unwrap();
    }
    let mut compressed = (0, 0);
    for (_, path) in segment_files(dir.path()) {
        for r in dump_segment(&fs, &path).unwrap().records {
            if r.compressed {
                compressed.0 += 1;
                // 300 bytes of one value: stored in a small fraction of that.
                assert!(r.size_bytes < 100, "{r:?}");
            } else if r.mutation.is_some() {
                compressed.1 += 1;
            }
        }
    }
    // The compressible half of the two compressed rounds.
    assert!(compressed.0 >= 40, "{compressed:?}");
    assert!(compressed.1 >= 40, "{compressed:?}");
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got, expected);
    assert!(stats.corruptions.is_empty());
    log.close().unwrap();

    // The limit is on the mutation, not on what it compresses to.
    let small = tempfile::tempdir().unwrap();
    let o = CommitLogOptions {
        max_mutation_size_bytes: 4 * 1024,
        ..with(LogCompression::Lz4)
    };
    let log = CommitLog::open(&fs, small.path(), o).unwrap();
    match log.append(1, &update_with_value(b"big", 4 * 1024)) {
        Err(Error::InvalidInput(m)) => assert!(m.contains("max_mutation_size"), "{m}"),
        other => panic!("expected InvalidInput, got {other:?}"),
    }
    log.close().unwrap();
}

/// Segments of format 2 (sealed, never compressed) replay under format 3.
#[test]
fn format_2_segments_replay() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let expected = write_old_format_segments(dir.path(), 2, 200);
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got, expected);
    assert!(stats.corruptions.is_empty(), "{:?}", stats.corruptions);
    log.close().unwrap();
}

/// Segments of format 5 (24-byte header, whole record timestamps) replay
/// beside this build's, whose records are stored from each segment's time
/// base: a log that holds both kinds gives back every mutation, in order.
#[test]
fn format_5_segments_replay_beside_time_based_ones() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut expected = write_old_format_segments(dir.path(), 5, 200);
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got, expected);
    assert!(stats.corruptions.is_empty(), "{:?}", stats.corruptions);
    // Enough new records to roll through several segments of this format.
    for i in 0..60u32 {
        let u = update_with_value(&i.to_be_bytes(), 300);
        log.append(1, &u).unwrap();
        expected.push((1, u));
    }
    log.close().unwrap();
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    assert!(log.stats().segments_live > 3);
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got, expected);
    assert!(stats.corruptions.is_empty(), "{:?}", stats.corruptions);
    log.close().unwrap();
}

/// Segments of format 6 (before counter cells) replay through the same
/// decoder beside this build's.
#[test]
fn format_6_segments_replay_beside_this_builds() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut expected = write_old_format_segments(dir.path(), 6, 200);
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let u = update_with_value(b"new", 300);
    log.append(1, &u).unwrap();
    expected.push((1, u));
    log.close().unwrap();
    let log = CommitLog::open(&fs, dir.path(), quiet(8 * 1024)).unwrap();
    let (got, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(got, expected);
    assert!(stats.corruptions.is_empty(), "{:?}", stats.corruptions);
    log.close().unwrap();
}

/// Writers racing segment rolls: a record encoded against the time base of a
/// segment that a roll has just sealed is encoded again for the new one
/// (format invariant 9), so every mutation replays with the timestamps it was
/// written with. Tiny segments make rolls, and writers waiting on them,
/// frequent.
#[test]
fn records_racing_a_roll_replay_with_their_own_timestamps() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = Arc::new(CommitLog::open(&fs, dir.path(), quiet(4 * 1024)).unwrap());
    let threads = 4u64;
    let per_thread = 600u64;
    let barrier = Arc::new(Barrier::new(threads as usize));
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (log, barrier) = (log.clone(), barrier.clone());
            std::thread::spawn(move || {
                barrier.wait();
                let mut written = Vec::new();
                for i in 0..per_thread {
                    // Timestamps far from any time base and different for
                    // every record: a record decoded against the wrong base
                    // would come back with other ones.
                    let ts = NOW_MICROS + (t as i64) * 3_600_000_000 + i as i64 * 7;
                    let mut p = PartitionUpdate::new(DecoratedKey::new(&[
                        t as u8,
                        (i >> 8) as u8,
                        i as u8,
                    ]));
                    let mut r = Row::new(Vec::new());
                    r.liveness = LivenessInfo::new(ts);
                    r.add_cell(Cell::live(0, ts, vec![t as u8; 90]));
                    p.add_row(r);
                    log.append(t + 1, &p).unwrap();
                    written.push((t + 1, p));
                }
                written
            })
        })
        .collect();
    let mut expected: Vec<(u64, PartitionUpdate)> = handles
        .into_iter()
        .flat_map(|h| h.join().unwrap())
        .collect();
    let stats = log.stats();
    eprintln!(
        "{} segments, {} records encoded again",
        stats.segments_created, stats.records_reencoded
    );
    assert!(stats.segments_created > 50, "{stats:?}");
    log.close().unwrap();
    drop(log);
    let log = CommitLog::open(&fs, dir.path(), quiet(4 * 1024)).unwrap();
    let (mut got, replay) = replay_all(&log, &|_| None).unwrap();
    assert!(replay.corruptions.is_empty(), "{:?}", replay.corruptions);
    let order = |a: &(u64, PartitionUpdate), b: &(u64, PartitionUpdate)| {
        (a.0, &a.1.key.key).cmp(&(b.0, &b.1.key.key))
    };
    got.sort_by(order);
    expected.sort_by(order);
    assert_eq!(got.len(), expected.len());
    assert!(
        got == expected,
        "a replayed mutation differs from what was written"
    );
}

fn expecting(pos: Option<ReplayPosition>) -> LogExpectation {
    LogExpectation {
        tables: vec![("ks.t".to_string(), pos)],
    }
}

/// Invariant 11, the manifests' rule: a table flushed up to a position in
/// segment 7 means the log reached 7; an empty (deleted) log is missing
/// segments, refused unless ignored, and then restarts after them.
#[test]
fn a_log_behind_a_flushed_position_is_missing_segments() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let flushed = Some(ReplayPosition {
        segment: 7,
        offset: 100,
    });
    let log_dir = dir.path().join("commitlog");
    let err =
        CommitLog::open_expecting(&fs, &log_dir, quiet(1 << 20), &expecting(flushed)).unwrap_err();
    assert!(
        err.to_string().contains("whole commit-log directory"),
        "{err}"
    );
    assert!(!log_dir.exists(), "a refused open creates nothing");
    let note = check_segment_sequence(&fs, &log_dir, &expecting(flushed))
        .unwrap()
        .unwrap();
    assert!(note.contains("CommitLog-7-7.log"), "{note}");
    // Nothing is known to be missing for a table that recorded no position,
    // nor for a log that reaches the position.
    assert!(check_segment_sequence(&fs, &log_dir, &expecting(None))
        .unwrap()
        .is_none());
    let mut o = quiet(1 << 20);
    o.ignore_replay_errors = true;
    let log = CommitLog::open_expecting(&fs, &log_dir, o, &expecting(flushed)).unwrap();
    assert_eq!(log.current_position().segment, 8);
    let (_, stats) = replay_all(&log, &|_| None).unwrap();
    assert_eq!(stats.missing_segments.len(), 7, "{stats:?}");
    log.close().unwrap();
    drop(log);
    let log =
        CommitLog::open_expecting(&fs, &log_dir, quiet(1 << 20), &expecting(flushed)).unwrap();
    log.close().unwrap();
}

/// Invariant 11, a deleted `RETIRED`: an id not on disk that the table had not
/// flushed past is missing; ids it had are rebuilt into the record, reported.
#[test]
fn a_deleted_retired_record_is_judged_by_the_flushed_positions() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), quiet(4096)).unwrap();
    let mut positions = Vec::new();
    for i in 0..120u32 {
        positions.push(
            log.append(1, &update_with_value(&i.to_be_bytes(), 300))
                .unwrap()
                .0,
        );
    }
    // The table flushed up to the first record of segment 3: older segments
    // go, and segment 3 is still needed (its later records).
    let flushed = *positions.iter().find(|p| p.segment == 3).unwrap();
    log.mark_flushed(1, flushed).unwrap();
    log.close().unwrap();
    drop(log);
    let segs = segment_files(dir.path());
    assert!(segs[0].0 > 1 && segs.len() >= 4, "{segs:?}");
    std::fs::remove_file(dir.path().join(retired::RETIRED_FILE)).unwrap();
    // RETIRED alone: every id not on disk is below the flushed position.
    let log =
        CommitLog::open_expecting(&fs, dir.path(), quiet(4096), &expecting(Some(flushed))).unwrap();
    let (_, stats) = replay_all(&log, &|_| Some(flushed)).unwrap();
    assert!(
        stats
            .corruptions
            .iter()
            .any(|c| c.contains("RETIRED was missing; rebuilt")),
        "{stats:?}"
    );
    log.close().unwrap();
    drop(log);
    // With a segment the table still needs: refused, naming the record.
    std::fs::remove_file(dir.path().join(retired::RETIRED_FILE)).unwrap();
    let segs = segment_files(dir.path());
    let victim = segs[segs.len() / 2].clone();
    assert!(victim.0 > flushed.segment);
    std::fs::remove_file(&victim.1).unwrap();
    let err = CommitLog::open_expecting(&fs, dir.path(), quiet(4096), &expecting(Some(flushed)))
        .unwrap_err();
    let msg = err.to_string();
    assert!(msg.contains("RETIRED is missing"), "{msg}");
    assert!(msg.contains(&segment_file_name(victim.0)), "{msg}");
    // A bare log (no table known) cannot tell, and takes it as complete.
    let log = CommitLog::open(&fs, dir.path(), quiet(4096)).unwrap();
    log.close().unwrap();
}

/// Invariant 10: a sync acknowledges nothing once the segment it wrote has no
/// name, or the owner check fails.
#[test]
fn a_deleted_active_segment_or_a_lost_owner_poisons_before_acknowledging() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), opts(SyncMode::Batch, 1 << 20)).unwrap();
    let (_, t) = log.append(1, &update_with_value(b"a", 10)).unwrap();
    log.wait(t).unwrap();
    let active = segment_files(dir.path()).pop().unwrap().1;
    std::fs::remove_file(&active).unwrap();
    let (_, t) = log.append(1, &update_with_value(b"b", 10)).unwrap();
    let err = log.wait(t).unwrap_err();
    assert!(matches!(err, Error::Poisoned(_)), "{err}");
    assert!(err.to_string().contains("was deleted or replaced"), "{err}");
    assert!(log.append(1, &update_with_value(b"c", 10)).is_err());

    let dir = tempfile::tempdir().unwrap();
    let log = CommitLog::open(&fs, dir.path(), opts(SyncMode::Batch, 1 << 20)).unwrap();
    let lost = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let seen = lost.clone();
    log.set_owner_check(crate::fs::OwnerCheck::new(move || {
        if seen.load(std::sync::atomic::Ordering::SeqCst) {
            Err(Error::Poisoned("the data directory was deleted".into()))
        } else {
            Ok(())
        }
    }));
    let (_, t) = log.append(1, &update_with_value(b"a", 10)).unwrap();
    log.wait(t).unwrap();
    lost.store(true, std::sync::atomic::Ordering::SeqCst);
    let (_, t) = log.append(1, &update_with_value(b"b", 10)).unwrap();
    let err = log.wait(t).unwrap_err();
    assert!(
        err.to_string().contains("the data directory was deleted"),
        "{err}"
    );
}

/// What a read-only open reports: records after their table's flushed
/// position, none of a table flushed past everything, none of unknown tables.
#[test]
fn unflushed_records_count_against_the_flushed_positions() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let log = CommitLog::open(&fs, dir.path(), quiet(4096)).unwrap();
    let mut last = ReplayPosition::default();
    for i in 0..30u32 {
        last = log
            .append(1, &update_with_value(&i.to_be_bytes(), 100))
            .unwrap()
            .0;
        log.append(2, &update_with_value(&i.to_be_bytes(), 100))
            .unwrap();
    }
    log.sync_now().unwrap();
    let all = unflushed_records(&fs, dir.path(), &|_| Some(None)).unwrap();
    assert_eq!(all.records, 60);
    let t1_done = unflushed_records(&fs, dir.path(), &|t| match t {
        1 => Some(Some(last)),
        _ => Some(None),
    })
    .unwrap();
    assert_eq!(t1_done.records, 30);
    assert_eq!(t1_done.per_table.get(&2), Some(&30));
    let unknown = unflushed_records(&fs, dir.path(), &|_| None).unwrap();
    assert_eq!(unknown, UnflushedRecords::default());
    log.close().unwrap();
}
