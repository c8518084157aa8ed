//! Issue 5: the real engine and the simulator agree on levels and write
//! amplification, at a small scale that runs in CI (the full comparison, scale
//! 1/160 with the seed's 512-cell partitions, is `strata bench lcs-fanout` in
//! BENCHMARKS.md).
//!
//! Scale 1/5000 with 16-cell partitions keeps ~30 partitions per sstable for A
//! and B; 72 simulated hours reach 24 h of steady state (after TTL 2 d + gc
//! grace). Bounds are the issue's: measured within 10% of the simulator, levels
//! within 0.25, and the refined model within 10%. At this scale (both sides are
//! deterministic) the run gives -2.6 / -2.7 / +6.7% against the simulator,
//! +1.6 / -1.9 / -2.1% against the refined model, level gaps 0.06 / 0.13 /
//! 0.09, C 31% below A; the full run (BENCHMARKS.md) is within 5.2% of the
//! simulator. The steady window was 12 h (60 hours) until sstable format 4:
//! C's 1 GiB sstables are ~180 partitions here, so 12 h held a few dozen of
//! its compactions and a 1% change in bytes per partition (the sparse index)
//! moved C from +9.7% to +11.7%; over 24 h the same two builds give +5.0% and
//! +6.7% (84 h: +3.9% and +1.4%). The seed's formula is not bounded here: it
//! is 21-29% high for reasons BENCHMARKS.md shows with per-level data.

use std::process::Command;

#[test]
fn real_engine_matches_simulator_and_refined_model_at_small_scale() {
    let dir = tempfile::tempdir().unwrap();
    let json = dir.path().join("lcs.json");
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args([
            "bench",
            "lcs-fanout",
            "--scale",
            "0.0002",
            "--cells-per-partition",
            "16",
            "--hours",
            "72",
        ])
        .args(["--nodes", "A,B,C", "--dir"])
        .arg(dir.path().join("data"))
        .arg("--json")
        .arg(&json)
        .output()
        .expect("run strata");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    let v: serde_json::Value = serde_json::from_slice(&std::fs::read(&json).unwrap()).unwrap();
    let get = |node: &str, key: &str| {
        v[node][key]
            .as_f64()
            .unwrap_or_else(|| panic!("{node}.{key} missing: {v}"))
    };
    for node in ["A", "B", "C"] {
        let measured = get(node, "measured_write_amplification");
        let simulated = get(node, "simulated_write_amplification");
        let refined = get(node, "refined_write_amplification");
        let (ml, sl) = (get(node, "measured_levels"), get(node, "simulated_levels"));
        assert!(
            (measured / simulated - 1.0).abs() < 0.10,
            "{node}: measured WA {measured:.2} vs simulated {simulated:.2}"
        );
        assert!(
            (measured / refined - 1.0).abs() < 0.10,
            "{node}: measured WA {measured:.2} vs refined model {refined:.2}"
        );
        assert!(
            (ml - sl).abs() < 0.25,
            "{node}: measured levels {ml:.2} vs simulated {sl:.2}"
        );
        assert!(get(node, "final_data_bytes") > 0.0);
    }
    let (a, b, c) = (
        get("A", "measured_write_amplification"),
        get("B", "measured_write_amplification"),
        get("C", "measured_write_amplification"),
    );
    // The seed's ordering and C's advantage (the issue asks for 25%; 32% in the
    // full run with 256 MiB flushes, the default).
    assert!(a > b && b > c, "want A {a:.2} > B {b:.2} > C {c:.2}");
    assert!(
        c < 0.75 * a,
        "C {c:.2} should be at least 25% below A {a:.2}"
    );
}
