//! `strata bench blobstore --json FILE` at a tiny scale (4 files of 1 MiB in
//! 256 KiB blocks, 2 runs): the report carries, per strategy under
//! "strategies", a list "runs" with the figures issue 13 names, the input
//! figures are exact, the runs settled, the charts are drawn, and the blob
//! strategy rewrites (almost) nothing and leaves (almost) nothing on disk.

mod common;
use common::{bench_scratch, json_file, ok, strata_without_dir};

const STRATEGIES: [&str; 3] = ["Blob", "STCS", "LCS"];
const RUN_KEYS: [&str; 7] = [
    "bytes_ingested",
    "live_bytes",
    "bytes_on_disk_after_run",
    "bytes_on_disk_after_idle",
    "compaction_bytes_written",
    "write_mib_per_s",
    "seconds_to_idle",
];

#[test]
fn tiny_blobstore_bench_reports_every_figure_per_strategy_and_run() {
    let scratch = bench_scratch("blobstore.json");
    let (json, charts, work) = (
        scratch.json.clone(),
        scratch.charts.clone(),
        scratch.work.clone(),
    );
    let out = strata_without_dir(&[
        "bench",
        "blobstore",
        "--files",
        "4",
        "--file-size-mib",
        "1",
        "--block-size-kib",
        "256",
        "--runs",
        "2",
        "--memtable-mb",
        "1",
        "--strategies",
        &STRATEGIES.join(","),
        "--dir",
        work.to_str().expect("utf-8"),
        "--json",
        json.to_str().expect("utf-8"),
        "--charts",
        charts.to_str().expect("utf-8"),
    ]);
    ok(&out, "bench blobstore");
    let report = json_file(&json);
    for label in STRATEGIES {
        let runs = report["strategies"][label]["runs"]
            .as_array()
            .unwrap_or_else(|| panic!("strategies.{label}.runs in {report}"));
        assert_eq!(runs.len(), 2, "{label}");
        for (i, run) in runs.iter().enumerate() {
            for key in RUN_KEYS {
                assert!(
                    run.get(key).is_some_and(|v| v.is_number()),
                    "{label} run {i}: {key} in {run}"
                );
            }
            // The input is known exactly: 4 files of 1 MiB, all deleted.
            assert_eq!(run["bytes_ingested"].as_u64(), Some(4 << 20), "{run}");
            assert_eq!(run["live_bytes"].as_u64(), Some(0), "{run}");
            assert_eq!(run["settled"].as_bool(), Some(true), "{run}");
            // The deletions were flushed: at least their sstable is on disk.
            assert!(run["bytes_on_disk_after_run"].as_u64() > Some(0), "{run}");
            assert!(run["write_mib_per_s"].as_f64() > Some(0.0), "{run}");
            // Flushes wrote the incompressible blocks whole at least once.
            assert!(run["flush_bytes"].as_u64() >= Some(4 << 20), "{run}");
        }
    }
    // The blob strategy's claims (seed 002), which hold at any scale: dead
    // sstables are dropped whole, not rewritten, and once gc grace has passed
    // the tombstones go too, leaving (with no file live) next to nothing.
    for run in report["strategies"]["Blob"]["runs"]
        .as_array()
        .expect("Blob runs")
    {
        let ingested = run["bytes_ingested"].as_u64().unwrap_or(0);
        let compacted = run["compaction_bytes_written"].as_u64().unwrap_or(u64::MAX);
        assert!(compacted * 10 <= ingested, "Blob compaction bytes: {run}");
        let left = run["bytes_on_disk_after_idle"].as_u64().unwrap_or(u64::MAX);
        assert!(left * 10 <= ingested, "Blob disk once idle: {run}");
    }
    let svgs = std::fs::read_dir(&charts).expect("charts dir").count();
    assert_eq!(svgs, 5, "one chart per figure");
    assert_eq!(
        std::fs::read_dir(&work).expect("work dir").count(),
        0,
        "the per-strategy databases are removed"
    );
}
