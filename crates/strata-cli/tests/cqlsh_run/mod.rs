//! Running cqlsh (pinned, installed into a virtualenv under target/ by
//! tests/drivers/cqlsh_setup.sh) on tests/drivers/cqlsh_script.cql, for the
//! tests that compare its output with tests/drivers/cqlsh_script.expected.
#![allow(dead_code)]

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};

/// The TTL the script writes; `ttl(v)` reads it back counting down.
pub const TTL_SECONDS: i64 = 86_400;
pub const TTL_PLACEHOLDER: &str = "<ttl counting down from 86400>";

/// Replaces the value under a `ttl(v)` header when it is a remaining TTL a
/// write of `TTL_SECONDS` can have by now (within an hour of it); any other
/// value (a TTL above what was written, null, far too low) stays and fails
/// the comparison.
pub fn normalise(out: &str) -> String {
    let mut lines: Vec<String> = out.lines().map(str::to_string).collect();
    for i in 0..lines.len() {
        if lines[i].trim() != "ttl(v)" || i + 2 >= lines.len() {
            continue;
        }
        let counting_down = lines[i + 2]
            .trim()
            .parse::<i64>()
            .is_ok_and(|ttl| (TTL_SECONDS - 3600..=TTL_SECONDS).contains(&ttl));
        if counting_down {
            lines[i + 2] = format!(" {TTL_PLACEHOLDER}");
        }
    }
    lines.join("\n") + "\n"
}

/// The venv's cqlsh, installing it on first use.
pub fn cqlsh() -> String {
    let setup = Command::new("bash")
        .arg(drivers().join("cqlsh_setup.sh"))
        .output()
        .expect("run cqlsh_setup.sh");
    assert!(
        setup.status.success(),
        "installing cqlsh failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    String::from_utf8_lossy(&setup.stdout).trim().to_string()
}

pub fn drivers() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers")
}

/// Runs cqlsh with `args` (the script and the address among them) and
/// `env`, in a home of its own (cqlsh reads and creates ~/.cassandra); its
/// stdout and stderr interleaved in one pipe, so errors sit where they
/// happened, as a person at the terminal sees them.
pub fn run(args: &[&str], env: &[(&str, &str)]) -> (String, ExitStatus) {
    let home = tempfile::tempdir().unwrap();
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let mut child = {
        let mut cmd = Command::new(cqlsh());
        cmd.current_dir(drivers())
            .env("HOME", home.path())
            // Unbuffered, so Python writes each line as it goes.
            .env("PYTHONUNBUFFERED", "1")
            .env_remove("CQLSH_HOST")
            .env_remove("CQLSH_PORT")
            .envs(env.iter().copied())
            .args([
                "--no-color",
                "--connect-timeout",
                "60",
                "--request-timeout",
                "60",
            ])
            .args(args)
            .stdin(Stdio::null())
            .stdout(writer.try_clone().expect("pipe"))
            .stderr(writer);
        // `cmd` holds the pipe's write ends; it is dropped at the end of this
        // block so that the read below ends when cqlsh exits.
        cmd.spawn().expect("run cqlsh")
    };
    let mut raw = String::new();
    reader.read_to_string(&mut raw).expect("cqlsh output");
    let status = child.wait().expect("wait for cqlsh");
    (raw, status)
}

/// Panics with the first differing line unless cqlsh's output, normalised,
/// equals the golden file.
pub fn assert_matches_golden(raw: &str, server_err: &str) {
    let actual = normalise(raw);
    let expected_path = drivers().join("cqlsh_script.expected");
    let expected = std::fs::read_to_string(&expected_path).expect("golden file");
    if actual != expected {
        let line = actual
            .lines()
            .zip(expected.lines())
            .position(|(a, e)| a != e)
            .unwrap_or_else(|| actual.lines().count().min(expected.lines().count()));
        panic!(
            "cqlsh output differs from {} at line {}:\n--- actual ---\n{actual}\
             --- server stderr ---\n{server_err}",
            expected_path.display(),
            line + 1
        );
    }
}
