//! Helpers shared by the CLI's integration tests: run the `strata` binary on a
//! data directory, insist on success, read its JSON, list a table's sstables.
#![allow(dead_code)]

use serde_json::Value;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs `strata --data-dir DIR ARGS...` to completion.
pub fn strata(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--data-dir")
        .arg(dir)
        .args(args)
        .output()
        .expect("run strata")
}

/// Stdout and stderr, for assertion messages.
pub fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// The stdout of a command that must have succeeded.
pub fn ok(out: &Output, what: &str) -> Vec<u8> {
    assert!(out.status.success(), "{what}: {}", text(out));
    out.stdout.clone()
}

pub fn json(bytes: &[u8]) -> Value {
    serde_json::from_slice(bytes).expect("JSON output")
}

/// The sstable files of a table directory, sorted.
pub fn sstables(table_dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = std::fs::read_dir(table_dir)
        .expect("table dir")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with("-Data.db"))
        .collect();
    v.sort();
    v
}

/// Runs `strata ARGS...` with no data directory (the benches and single-file
/// tools, which refuse `--data-dir`).
pub fn strata_without_dir(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .output()
        .expect("run strata")
}

/// Reads a JSON file a command wrote.
pub fn json_file(path: &Path) -> Value {
    let text = std::fs::read_to_string(path).expect("JSON file written");
    serde_json::from_str(&text).expect("valid JSON")
}

/// Where a bench run in a test writes: its `--json` file, `--charts` and
/// `--dir` (created), under one temporary directory that lives as long as this.
pub struct BenchScratch {
    _tmp: tempfile::TempDir,
    pub json: PathBuf,
    pub charts: PathBuf,
    pub work: PathBuf,
}

pub fn bench_scratch(json_name: &str) -> BenchScratch {
    let tmp = tempfile::tempdir().expect("tempdir");
    let work = tmp.path().join("work");
    std::fs::create_dir_all(&work).expect("work dir");
    BenchScratch {
        json: tmp.path().join(json_name),
        charts: tmp.path().join("charts"),
        work,
        _tmp: tmp,
    }
}

/// Starts `strata serve --data-dir DIR EXTRA...` and reads the address it
/// printed as its first line.
pub fn serve(dir: &Path, extra: &[&str]) -> (std::process::Child, std::net::SocketAddr) {
    use std::io::BufRead;
    let mut child = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .args(extra)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn strata serve");
    let mut line = String::new();
    std::io::BufReader::new(child.stdout.as_mut().expect("stdout"))
        .read_line(&mut line)
        .expect("first line");
    let addr = line
        .trim()
        .strip_prefix("listening for CQL clients on ")
        .and_then(|rest| rest.split(' ').next())
        .unwrap_or_else(|| panic!("unexpected first line: {line:?}"))
        .parse()
        .expect("address");
    (child, addr)
}

/// SIGTERM to a `strata serve`, which must then exit 0; its stderr.
pub fn stop_server(mut child: std::process::Child) -> String {
    use std::io::Read;
    // SAFETY: signalling a child process the test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let status = child.wait().expect("wait");
    let mut err = String::new();
    if let Some(mut e) = child.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "exit {status:?}: {err}");
    err
}
