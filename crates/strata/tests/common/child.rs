//! The child process of the kill -9 tests that loop one operation until killed
//! (`crash_kill9_upgradesstables`, `crash_kill9_dictionary_training`): the test
//! binary re-executed on its own child entry test, with the data directory in
//! an environment variable; it prints `@READY` once the database is open.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

/// Starts this test binary's `entry` test with `env=dir`, waits for its
/// `@READY`, lets it run for `run_for`, then kills it with SIGKILL and reaps it.
/// Panics (failing the test) if the child never gets ready.
pub fn run_then_kill(entry: &str, env: &str, dir: &Path, run_for: Duration, what: &str) {
    let exe = std::env::current_exe().expect("test binary");
    let mut child = Command::new(&exe)
        .args([entry, "--exact", "--nocapture", "--test-threads=1"])
        .env(env, dir)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn child");
    let stdout = child.stdout.take().expect("stdout");
    let mut lines = BufReader::new(stdout).lines();
    let ready = lines.any(|l| l.is_ok_and(|l| l.ends_with("@READY")));
    assert!(ready, "{what}: the child never opened the database");
    std::thread::sleep(run_for);
    child.kill().expect("SIGKILL");
    let _ = child.wait();
}
