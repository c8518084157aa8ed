//! `strata stress write` then `strata stress read` with the same arguments on a
//! fresh data directory: both exit 0 and the read finds every row it expects
//! (issue 2), and the `--json` summary carries the documented keys.

mod common;
use common::strata;

use serde_json::Value;
use std::path::Path;

fn summary(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("summary file");
    serde_json::from_str(&text).expect("summary is JSON")
}

fn check_keys(s: &Value) {
    for key in [
        "total_ops",
        "op_rate",
        "row_rate",
        "errors",
        "misses",
        "duration_seconds",
    ] {
        assert!(s.get(key).is_some_and(Value::is_number), "{key} in {s}");
    }
    let lat = s.get("latency_ms").expect("latency_ms");
    for key in ["mean", "p50", "p95", "p99", "p999", "max"] {
        assert!(
            lat.get(key).is_some_and(Value::is_number),
            "latency_ms.{key} in {s}"
        );
    }
}

fn write_then_read(workload: &[&str], ops: u64, rows_per_op: u64) {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    for mode in ["write", "read"] {
        let json = dir.path().join(format!("{mode}.json"));
        let json_arg = json.to_str().expect("utf-8 path");
        let mut args = vec!["stress", mode, "--json", json_arg, "--no-tablestats"];
        args.extend_from_slice(workload);
        let out = strata(&data, &args);
        assert!(
            out.status.success(),
            "stress {mode} failed: {}\n{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        );
        let s = summary(&json);
        check_keys(&s);
        assert_eq!(s["total_ops"].as_u64(), Some(ops), "{s}");
        assert_eq!(s["errors"].as_u64(), Some(0), "{s}");
        assert_eq!(s["misses"].as_u64(), Some(0), "{s}");
        let rows_per_second = s["row_rate"].as_f64().unwrap_or(0.0);
        let ops_per_second = s["op_rate"].as_f64().unwrap_or(0.0);
        assert!(ops_per_second > 0.0, "{s}");
        let ratio = rows_per_second / ops_per_second;
        assert!((ratio - rows_per_op as f64).abs() < 1e-6, "{s}");
    }
}

#[test]
fn sequential_population_reads_back_every_row() {
    write_then_read(&["-n", "3000", "--threads", "2"], 3000, 1);
}

#[test]
fn uniform_population_with_overwrites_reads_back_every_row() {
    write_then_read(
        &[
            "-n",
            "2000",
            "--threads",
            "2",
            "--population",
            "uniform",
            "--partitions",
            "300",
            "--rows-per-partition",
            "3",
            "--seed",
            "7",
        ],
        2000,
        3,
    );
}

#[test]
fn batch_commit_log_mode_reads_back_every_row() {
    // The global sync flags reach `stress` (every command that opens a database).
    write_then_read(
        &["-n", "300", "--threads", "4", "--commitlog-sync", "batch"],
        300,
        1,
    );
}
