//! Write amplification since a table's creation survives restarts: a stress
//! run that flushes several times, a major compaction in another process,
//! then `tablestats --json` in a third: the since-creation figures (flushed
//! bytes from the table's counters file, compacted bytes from its compaction
//! history, by cause) are those of the earlier processes, while the
//! since-open figures of a process that wrote nothing are zero.

mod common;
use common::{json, ok, strata};

#[test]
fn tablestats_since_creation_survives_a_restart() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    ok(
        &strata(
            d,
            &[
                "stress",
                "write",
                "-n",
                "4000",
                "--no-tablestats",
                "--table-options",
                "memtable_flush_threshold_kb = 64 AND compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}",
            ],
        ),
        "stress",
    );
    let stats = json(&ok(
        &strata(d, &["tablestats", "--json", "stress.standard1"]),
        "stats",
    ));
    let t = &stats[0];
    let flushed = t["bytes_flushed_since_creation"].as_u64().expect("flushed");
    assert!(flushed > 0, "{t}");
    assert_eq!(t["bytes_flushed"], 0, "this process flushed nothing: {t}");
    assert_eq!(t["bytes_compacted_written_since_creation"], 0, "{t}");
    let sstables = t["sstable_count"].as_u64().expect("count");
    assert!(sstables >= 2, "several flushes: {t}");

    ok(&strata(d, &["compact", "stress.standard1"]), "compact");
    let stats = json(&ok(
        &strata(d, &["tablestats", "--json", "stress.standard1"]),
        "stats",
    ));
    let t = &stats[0];
    assert_eq!(
        t["bytes_flushed_since_creation"].as_u64(),
        Some(flushed),
        "{t}"
    );
    let compacted = t["bytes_compacted_written_since_creation"]
        .as_u64()
        .expect("compacted");
    assert!(compacted > 0, "{t}");
    assert_eq!(
        t["bytes_compacted_by_reason"]["major"].as_u64(),
        Some(compacted),
        "{t}"
    );
    // What compaction read since creation: the history's inputs.
    let history = json(&ok(
        &strata(d, &["compactionhistory", "-F", "json"]),
        "history",
    ));
    let read: u64 = history
        .as_array()
        .expect("records")
        .iter()
        .map(|r| r["bytes_in"].as_u64().expect("bytes_in"))
        .sum();
    assert!(read > 0, "{history}");
    assert_eq!(
        t["bytes_compacted_read_since_creation"].as_u64(),
        Some(read),
        "{t}"
    );
    let wa = t["write_amplification_since_creation"]
        .as_f64()
        .expect("wa");
    let expected = (flushed + compacted) as f64 / flushed as f64;
    assert!((wa - expected).abs() < 1e-9, "{wa} vs {expected}");
    assert_eq!(
        t["write_amplification"], 0.0,
        "since open: nothing written here"
    );
}
