//! Issue 10: `--ignore-replay-errors` used to drop damaged records without a word,
//! and the closing flush then deleted the segment, the only evidence. Now the
//! replay report lists each skipped region precisely (segment, offset, bytes,
//! mutations lost), and the damaged segment is copied to
//! `commitlog/quarantine/` before anything can delete it.

mod common_commitlog;
use common_commitlog::*;
use strata::commitlog::dump_segment;
use strata::db::Database;
use strata::fs::Fs;

#[test]
fn ignore_replay_errors_reports_and_keeps_damaged_segment() {
    let dir = tempfile::tempdir().unwrap();
    crash_with_segments(dir.path(), 0, 1000);
    let segs = segments(dir.path());
    assert!(segs.len() >= 3);
    // A flipped bit in the payload of the fifth record of the second segment.
    let (_, victim) = segs[1].clone();
    let dump = dump_segment(&Fs::new(), &victim).unwrap();
    let rec = dump.records[4].clone();
    assert!(rec.mutation.is_some());
    let mut bytes = std::fs::read(&victim).unwrap();
    bytes[(rec.offset + 12) as usize] ^= 0x08;
    std::fs::write(&victim, &bytes).unwrap();

    // Without the option: refused, naming file and offset.
    match Database::open(dir.path(), options(false)) {
        Err(strata::Error::Corruption { path, offset, .. }) => {
            assert_eq!((path, offset), (victim.clone(), rec.offset));
        }
        other => panic!("expected corruption, got {:?}", other.map(|_| ())),
    }

    let db = Database::open(dir.path(), options(true)).expect("open ignoring errors");
    let stats = db.replay_stats().clone();
    assert_eq!(stats.skipped.len(), 1, "{stats:?}");
    let s = &stats.skipped[0];
    assert_eq!(s.segment, victim);
    assert_eq!(s.offset, rec.offset);
    assert_eq!(s.bytes, rec.size_bytes);
    assert_eq!(
        s.mutations_lost,
        Some(1),
        "one record's frame, length intact"
    );
    assert_eq!(stats.corrupt_records_skipped, 1);
    assert_eq!(stats.corrupt_bytes_skipped, rec.size_bytes);
    // The line the CLI prints says all of it.
    let line = &stats.corruptions[0];
    for part in [
        victim.display().to_string(),
        format!("@ {}", rec.offset),
        format!("{} bytes skipped", rec.size_bytes),
        "mutations lost: 1".to_string(),
        "quarantine".to_string(),
    ] {
        assert!(line.contains(&part), "{line} lacks {part}");
    }
    // Exactly one row is lost.
    assert_eq!(readable(&db, 0..1000), 999);
    let copy = s.quarantined_copy.clone().expect("a copy was kept");
    assert_eq!(stats.quarantined, vec![copy.clone()]);
    assert!(copy.starts_with(log_dir(dir.path()).join("quarantine")));
    db.close().unwrap();

    // The recovery flush and the close deleted the segment itself; the copy,
    // byte for byte the damaged file, is still there.
    assert!(
        !victim.exists(),
        "the replayed segment was deleted after the flush"
    );
    assert_eq!(std::fs::read(&copy).unwrap(), bytes);
    // And a later open does not replay the quarantine.
    let db = Database::open(dir.path(), options(false)).expect("clean open");
    assert!(db.replay_stats().skipped.is_empty());
    assert_eq!(readable(&db, 0..1000), 999);
    db.close().unwrap();
}
