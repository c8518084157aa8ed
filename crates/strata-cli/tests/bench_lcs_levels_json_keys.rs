//! `strata bench lcs-levels --json FILE` at its smallest: fixed 3 levels and
//! normal LCS at 10 GiB in the simulator, and fixed 3 levels on the real
//! engine at 10 GiB scaled (1 MiB of data, 84 simulated hours; about a second).
//! The steady window (after TTL and gc grace, 48 h) is 36 hours: at 12 (60
//! simulated hours) the few compactions that land in it made the engine
//! over its simulator swing from 0.98 to 1.19 on a 2-byte change per row,
//! while windows of 18 to 48 hours kept 0.93-1.06 for both encodings
//! (BENCHMARKS.md, "One-row partitions in short").
//! The report carries the keys issue 16 item 4 names under "simulated" and
//! "engine", the acceptance lines, sane figures, both charts and the text
//! table; the work directory is left empty.

mod common;
use common::{bench_scratch, json_file, ok, strata_without_dir};

const SIMULATED_KEYS: [&str; 11] = [
    "mode",
    "fanout",
    "level_count",
    "data_bytes",
    "write_amplification",
    "predicted_write_amplification",
    "levels",
    "sstables_per_read_p99",
    "max_sstable_bytes",
    "peak_space_bytes",
    "sim_wall_seconds",
];
const ENGINE_KEYS: [&str; 5] = [
    "mode",
    "level_count",
    "data_bytes",
    "measured_write_amplification",
    "simulated_write_amplification",
];

#[test]
fn smallest_lcs_levels_sweep_reports_the_issues_keys() {
    let scratch = bench_scratch("lcs_levels.json");
    let out = strata_without_dir(&[
        "bench",
        "lcs-levels",
        "--sizes",
        "10GiB",
        "--configs",
        "fixed3,normal4",
        "--engine-sizes",
        "10GiB",
        "--engine-configs",
        "fixed3",
        "--engine-hours",
        "84",
        "--dir",
        scratch.work.to_str().expect("utf-8"),
        "--json",
        scratch.json.to_str().expect("utf-8"),
        "--charts",
        scratch.charts.to_str().expect("utf-8"),
    ]);
    let stdout = String::from_utf8_lossy(&ok(&out, "bench lcs-levels")).to_string();
    assert!(
        stdout
            .lines()
            .any(|l| l.starts_with("fixed3 ") && l.contains(" 10 GiB |")),
        "one row per configuration and size: {stdout}"
    );
    assert!(stdout.contains("acceptance:"), "{stdout}");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("sim fixed3 10 GiB"), "progress: {stderr}");

    let report = json_file(&scratch.json);
    let simulated = report["simulated"].as_array().expect("simulated");
    let modes: Vec<&str> = simulated
        .iter()
        .filter_map(|c| c["mode"].as_str())
        .collect();
    assert_eq!(modes, ["fixed", "normal"], "{report}");
    for c in simulated {
        for key in SIMULATED_KEYS {
            assert!(!c[key].is_null(), "simulated {key} in {c}");
        }
        assert_eq!(c["data_bytes"].as_u64(), Some(10 << 30), "{c}");
        let wa = c["write_amplification"].as_f64().unwrap_or(0.0);
        let model = c["predicted_write_amplification"].as_f64().unwrap_or(0.0);
        assert!(wa > 5.0 && (model / wa - 1.0).abs() < 0.10, "{c}");
    }
    let fixed = &simulated[0];
    assert_eq!(fixed["level_count"], 3);
    assert!(fixed["levels"].as_f64() <= Some(3.25), "{fixed}");
    assert!(
        fixed["sstables_per_read_p99"].as_u64() <= Some(7),
        "{fixed}"
    );
    assert_eq!(simulated[1]["level_count"], 0);

    let engine = report["engine"].as_array().expect("engine");
    assert_eq!(engine.len(), 1, "{report}");
    for key in ENGINE_KEYS {
        assert!(!engine[0][key].is_null(), "engine {key} in {}", engine[0]);
    }
    let measured = engine[0]["measured_write_amplification"]
        .as_f64()
        .unwrap_or(0.0);
    let simulated_wa = engine[0]["simulated_write_amplification"]
        .as_f64()
        .unwrap_or(0.0);
    assert!(
        measured > 5.0 && (measured / simulated_wa - 1.0).abs() < 0.10,
        "engine {measured:.2} vs its simulator {simulated_wa:.2}"
    );

    let acceptance = report["acceptance"].as_array().expect("acceptance");
    // Five of the issue's checks, and fixed against normal at 10 GiB (equal there).
    assert_eq!(acceptance.len(), 6, "{report}");
    assert!(
        acceptance.iter().all(|a| a["holds"] == true),
        "{acceptance:?}"
    );
    for chart in [
        "lcs_levels_write_amplification.svg",
        "lcs_levels_sstables_per_read.svg",
    ] {
        assert!(scratch.charts.join(chart).is_file(), "{chart}");
    }
    let left = std::fs::read_dir(&scratch.work).expect("work dir").count();
    assert_eq!(left, 0, "the engine's data directories are removed");
}
