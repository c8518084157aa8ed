//! `strata bench memtable --json FILE` (one thread, one run): the report has,
//! under "cases", every workload with the issue's keys (rates of the memtable
//! and both baselines, overhead bytes per cell) and a flush rate; the figures
//! are sane (positive rates; an overhead per cell a structure can have).

mod common;
use common::{json_file, ok, strata_without_dir};

#[test]
fn bench_memtable_reports_every_workload_with_the_issue_keys() {
    let dir = tempfile::tempdir().expect("tempdir");
    let json = dir.path().join("memtable.json");
    let out = strata_without_dir(&[
        "bench",
        "memtable",
        "--threads",
        "1",
        "--runs",
        "1",
        "--json",
        json.to_str().expect("utf-8"),
    ]);
    let stdout = String::from_utf8_lossy(&ok(&out, "bench memtable")).to_string();
    assert!(stdout.contains("flush iteration"), "{stdout}");
    let report = json_file(&json);
    let cases = report["cases"].as_array().expect("cases");
    let workloads: Vec<&str> = cases
        .iter()
        .filter_map(|c| c["workload"].as_str())
        .collect();
    assert_eq!(
        workloads,
        [
            "random-partitions",
            "few-partitions",
            "few-partitions-batch32",
            "hot-rows"
        ]
    );
    for c in cases {
        assert_eq!(c["threads"], 1, "{c}");
        for key in [
            "memtable_inserts_per_s",
            "skiplist_inserts_per_s",
            "btreemap_inserts_per_s",
        ] {
            assert!(c[key].as_f64() > Some(1000.0), "{key} in {c}");
        }
        for key in [
            "memtable_overhead_bytes_per_cell",
            "skiplist_overhead_bytes_per_cell",
        ] {
            let v = c[key].as_f64().unwrap_or(f64::NAN);
            assert!((0.0..10_000.0).contains(&v), "{key} in {c}");
        }
    }
    assert!(report["flush_mib_per_s"].as_f64() > Some(1.0), "{report}");
}
