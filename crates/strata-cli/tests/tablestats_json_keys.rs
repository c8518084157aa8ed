//! `strata tablestats --json` prints every key issue 2 lists, after a stress run
//! that flushed sstables.

use serde_json::Value;
use std::process::Command;

const KEYS: [&str; 18] = [
    "sstable_count",
    "space_used_live_bytes",
    "space_used_total_bytes",
    "sstable_compression_ratio",
    "number_of_partitions_estimate",
    "memtable_cell_count",
    "memtable_data_size_bytes",
    "bloom_filter_false_positives",
    "bloom_filter_false_ratio",
    "bloom_filter_space_used_bytes",
    "local_read_count",
    "local_read_latency_ms",
    "local_write_count",
    "local_write_latency_ms",
    "compacted_partition_minimum_bytes",
    "compacted_partition_maximum_bytes",
    "compacted_partition_mean_bytes",
    "bytes_flushed",
];

#[test]
fn tablestats_json_has_every_issue_2_key() {
    let dir = tempfile::tempdir().expect("tempdir");
    let strata = |args: &[&str]| {
        let out = Command::new(env!("CARGO_BIN_EXE_strata"))
            .arg("--data-dir")
            .arg(dir.path())
            .args(args)
            .output()
            .expect("run strata");
        assert!(
            out.status.success(),
            "strata {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        out.stdout
    };
    strata(&["stress", "write", "-n", "2000", "--no-tablestats"]);
    let stdout = strata(&["tablestats", "stress.standard1", "--json"]);
    let v: Value = serde_json::from_slice(&stdout).expect("tablestats --json is JSON");
    let tables = v.as_array().expect("an array of tables");
    assert_eq!(tables.len(), 1);
    let t = &tables[0];
    assert_eq!(t["keyspace"], "stress");
    assert_eq!(t["table"], "standard1");
    for key in KEYS {
        assert!(
            t.get(key).is_some_and(Value::is_number),
            "{key} missing in {t}"
        );
    }
    assert!(t["sstable_count"].as_u64().unwrap_or(0) >= 1, "{t}");
    assert!(t["space_used_live_bytes"].as_u64().unwrap_or(0) > 0, "{t}");
    // `bytes_flushed` counts this process's flushes: 0 here, the write flushed.
    assert!(
        t["number_of_partitions_estimate"].as_u64().unwrap_or(0) >= 2000,
        "{t}"
    );
}
