//! `strata bench compression --json FILE` at a tiny scale (1 MiB raw per
//! dataset, 0.2 s of reads per cell): the report carries, under "datasets",
//! `small_rows` and `directory_entries`, each with every codec of issue 14's
//! matrix; measured codecs have the ratio, write figures and p50..p99/mean
//! latency at 50, 100, 150 and 200 readers; `zstd_dict` is measured with the
//! dictionary class, and either a dictionary the engine trained or the
//! engine's reason for declining one (never larger than plain zstd 3 by more
//! than the chunk framing); the figures are sane (no compression is
//! a ratio of ~1, zstd 9 is no larger than zstd 1 on directory listings); the
//! charts are drawn and the databases removed.

mod common;
use common::{bench_scratch, json_file, ok, strata_without_dir};

const DATASETS: [&str; 2] = ["small_rows", "directory_entries"];
const MEASURED: [&str; 6] = ["none", "lz4", "zstd1", "zstd3", "zstd9", "zstd_dict"];
const CONCURRENCY: [&str; 4] = ["50", "100", "150", "200"];
const PERCENTILES: [&str; 5] = ["p50", "p75", "p95", "p99", "mean"];

#[test]
fn tiny_compression_bench_reports_every_codec_dataset_and_concurrency() {
    let scratch = bench_scratch("compression.json");
    let (json, charts, work) = (
        scratch.json.clone(),
        scratch.charts.clone(),
        scratch.work.clone(),
    );
    let out = strata_without_dir(&[
        "bench",
        "compression",
        "--raw-mib",
        "1",
        "--read-seconds",
        "0.2",
        "--rounds",
        "1",
        "--recompression-quota-mb",
        "4",
        "--dir",
        work.to_str().expect("utf-8"),
        "--json",
        json.to_str().expect("utf-8"),
        "--charts",
        charts.to_str().expect("utf-8"),
    ]);
    let stdout = String::from_utf8_lossy(&ok(&out, "bench compression")).to_string();
    assert!(stdout.contains("zstd_dict vs zstd3"), "{stdout}");
    let report = json_file(&json);
    for dataset in DATASETS {
        let codecs = &report["datasets"][dataset];
        assert!(codecs.is_object(), "datasets.{dataset} in {report}");
        // Measured with a trained dictionary, or says why the engine
        // declined one: never plain zstd under its name without a reason.
        let d = &codecs["zstd_dict"];
        assert!(
            d["dictionary_bytes"].as_u64() > Some(0)
                || d["dictionary_note"]
                    .as_str()
                    .is_some_and(|n| n.starts_with("declined")),
            "{dataset}: zstd_dict: {d}"
        );
        for codec in MEASURED {
            let c = &codecs[codec];
            for key in ["compression_ratio", "write_mib_per_s", "cpu_seconds"] {
                assert!(
                    c.get(key).is_some_and(|v| v.is_number()),
                    "{dataset}.{codec}.{key} in {c}"
                );
            }
            let ratio = c["compression_ratio"].as_f64().unwrap_or(-1.0);
            assert!(ratio > 0.0 && ratio < 1.02, "{dataset}.{codec}: {ratio}");
            assert!(c["write_mib_per_s"].as_f64() > Some(0.0), "{c}");
            assert!(c["cpu_seconds"].as_f64() > Some(0.0), "{c}");
            assert_eq!(c["sstable_count"].as_u64(), Some(1), "{c}");
            for threads in CONCURRENCY {
                let l = &c["read_latency_ms"][threads];
                let p: Vec<f64> = PERCENTILES
                    .iter()
                    .map(|k| {
                        l[*k].as_f64().unwrap_or_else(|| {
                            panic!("{dataset}.{codec}.read_latency_ms.{threads}.{k} in {l}")
                        })
                    })
                    .collect();
                assert!(
                    p[0] > 0.0 && p[0] <= p[1] && p[1] <= p[2] && p[2] <= p[3],
                    "percentiles in order: {l}"
                );
                assert!(l["reads"].as_u64() > Some(0), "{l}");
            }
        }
        // No compression: compressed = uncompressed but for 5 bytes a chunk.
        let none = codecs["none"]["compression_ratio"].as_f64().unwrap_or(0.0);
        assert!((0.99..1.01).contains(&none), "{dataset} none: {none}");
        // Every codec writes the same data (invariant 1 of the bench).
        let u = codecs["none"]["uncompressed_bytes"].as_u64();
        for codec in MEASURED {
            assert_eq!(codecs[codec]["uncompressed_bytes"].as_u64(), u, "{codec}");
        }
    }
    let dirs = &report["datasets"]["directory_entries"];
    let ratio = |c: &str| dirs[c]["compression_ratio"].as_f64().unwrap_or(f64::NAN);
    assert!(ratio("zstd9") <= ratio("zstd1"), "{dirs}");
    // Directory listings compress (names, permissions and types repeat).
    assert!(
        ratio("lz4") < 0.9 && ratio("zstd3") < ratio("lz4"),
        "{dirs}"
    );
    let small = &report["datasets"]["small_rows"];
    let bytes = |c: &str| small[c]["compressed_bytes"].as_u64().unwrap_or(0);
    assert!(
        (bytes("zstd_dict") as f64) < 1.01 * bytes("zstd3") as f64,
        "{small}"
    );
    // The recompression experiment (seed 001's worry) at the tiny quota.
    let rc = &report["recompression"];
    for key in [
        "quota_bytes",
        "largest_sstable_bytes",
        "peak_extra_bytes",
        "dry_run_estimate_bytes",
        "final_bytes",
        "final_ratio",
        "refused_with_snapshot",
        "refusal_message",
    ] {
        assert!(rc.get(key).is_some(), "recompression.{key} missing: {rc}");
    }
    assert_eq!(rc["refused_with_snapshot"], true, "{rc}");
    let num = |k: &str| rc[k].as_f64().unwrap_or(f64::NAN);
    assert!(
        num("peak_extra_bytes") <= 2.0 * num("largest_sstable_bytes"),
        "{rc}"
    );
    assert!(
        (num("dry_run_estimate_bytes") - num("final_bytes")).abs() <= 0.1 * num("final_bytes"),
        "{rc}"
    );
    let svgs = std::fs::read_dir(&charts).expect("charts dir").count();
    assert_eq!(svgs, 3, "ratio chart + one p99 chart per dataset");
    assert_eq!(
        std::fs::read_dir(&work).expect("work dir").count(),
        0,
        "the per-codec databases are removed"
    );
}
