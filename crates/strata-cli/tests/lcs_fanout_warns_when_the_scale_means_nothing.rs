//! `strata bench lcs-fanout` at a scale whose sstables hold less than a handful
//! of partitions warns on stderr (and still runs); at the default scale it does
//! not. `--scale 0.0001` with the default 512-row partitions makes node A's
//! 160 MiB sstables 16 KiB, half a partition each: the run reported a model
//! error of -92% and an "improvement" of -380.9% without saying why.
//!
//! Both runs are a few simulated seconds (`--hours 0.01`): the warning comes
//! after the calibration, before the nodes run. A run that short also warns
//! that it ends before the steady window; that warning names `--hours`, and
//! this test looks only for the one naming `--scale`.

use std::process::{Command, Output};

fn lcs_fanout(scale: Option<&str>) -> Output {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_strata"));
    cmd.args(["bench", "lcs-fanout", "--hours", "0.01", "--nodes", "A"]);
    if let Some(scale) = scale {
        cmd.args(["--scale", scale]);
    }
    let out = cmd
        .arg("--dir")
        .arg(dir.path())
        .output()
        .expect("run strata");
    assert!(
        out.status.success(),
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

fn scale_warnings(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stderr)
        .lines()
        .filter(|l| l.starts_with("warning: --scale"))
        .map(str::to_string)
        .collect()
}

#[test]
fn a_tiny_scale_warns_once_and_still_runs() {
    let out = lcs_fanout(Some("0.0001"));
    let warnings = scale_warnings(&out);
    assert_eq!(warnings.len(), 1, "{warnings:?}");
    let w = &warnings[0];
    for part in [
        "--scale 0.0001",
        "--cells-per-partition 512",
        "16 KiB",
        "partitions per sstable",
        "mean nothing",
    ] {
        assert!(w.contains(part), "{part:?} missing: {w}");
    }
    // Still ran: the report is on stdout.
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(
        stdout.contains("strata bench lcs-fanout: scale 0.0001"),
        "{stdout}"
    );
    // Nothing on stdout or stderr names a source file or an experiment's number.
    let all = format!("{stdout}{}", String::from_utf8_lossy(&out.stderr));
    for word in ["seed", ".rs", "issue"] {
        assert!(!all.to_lowercase().contains(word), "{word:?} in:\n{all}");
    }
}

#[test]
fn the_default_scale_does_not_warn() {
    let out = lcs_fanout(None);
    assert_eq!(scale_warnings(&out), Vec::<String>::new());
}
