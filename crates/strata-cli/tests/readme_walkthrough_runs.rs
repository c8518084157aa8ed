//! The README's walk-through, run as written: the block between its
//! `walkthrough:begin` and `walkthrough:end` markers is executed by bash
//! (`set -euo pipefail`) in an empty directory with `strata` naming the
//! binary under test; every command must succeed, and what each step
//! promises is checked in its output: compaction log lines, rows through
//! the server, a drained server that exits 0, a dumped partition, write
//! amplification since creation after the restart, the server's log file.

use std::process::Command;

#[test]
fn readme_walkthrough_runs() {
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let begin = readme
        .find("<!-- walkthrough:begin -->")
        .expect("the walk-through's begin marker");
    let end = readme
        .find("<!-- walkthrough:end -->")
        .expect("the walk-through's end marker");
    let block = &readme[begin..end];
    let script: String = block
        .lines()
        .skip_while(|l| !l.starts_with("```sh"))
        .skip(1)
        .take_while(|l| !l.starts_with("```"))
        .map(|l| format!("{l}\n"))
        .collect();
    assert!(script.contains("strata"), "no commands found in:\n{block}");
    let dir = tempfile::tempdir().expect("tempdir");
    let bin = env!("CARGO_BIN_EXE_strata");
    let out = Command::new("bash")
        .current_dir(dir.path())
        .arg("-c")
        .arg(format!(
            "set -euo pipefail\nstrata() {{ \"{bin}\" \"$@\"; }}\n{script}"
        ))
        .output()
        .expect("run bash");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "the walk-through failed:\n{stdout}\n{stderr}"
    );
    let lines: Vec<&str> = stdout.lines().collect();
    // grep -c's count is the first line that is a number alone.
    let compactions: u64 = lines
        .iter()
        .find_map(|l| l.trim().parse().ok())
        .unwrap_or_else(|| panic!("a count of compaction lines:\n{stdout}"));
    assert!(compactions >= 1, "{stdout}");
    assert!(
        stdout.contains("(3 rows)"),
        "three rows through the server:\n{stdout}"
    );
    assert!(stdout.contains("the server stops serving"), "{stdout}");
    assert!(
        stdout.contains("\"key\" : [ \"0x0000000000000007\" ]"),
        "{stdout}"
    );
    assert!(
        stdout.contains("Write amplification (since creation)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("strata::"),
        "log lines from the server's log:\n{stdout}"
    );
}
