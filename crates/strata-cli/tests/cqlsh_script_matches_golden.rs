//! cqlsh (pinned, installed into a virtualenv under target/ by
//! tests/drivers/cqlsh_setup.sh) runs tests/drivers/cqlsh_script.cql against
//! `strata serve`: schema with compaction and compression options, DESCRIBE,
//! writes with TTL and timestamps, slices in both orders, row and range
//! deletes, lightweight transactions and a few errors. Its output, stdout and
//! stderr interleaved as a person at the terminal sees them, must equal
//! tests/drivers/cqlsh_script.expected; the only value normalised is the
//! remaining TTL, which counts down with the clock.

mod common;

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};

/// The TTL the script writes; `ttl(v)` reads it back counting down.
const TTL_SECONDS: i64 = 86_400;
const TTL_PLACEHOLDER: &str = "<ttl counting down from 86400>";

/// Replaces the value under a `ttl(v)` header when it is a remaining TTL a
/// write of `TTL_SECONDS` can have by now (within an hour of it); any other
/// value (a TTL above what was written, null, far too low) stays and fails
/// the comparison.
fn normalise(out: &str) -> String {
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

#[test]
fn cqlsh_script_matches_golden() {
    let drivers = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers");
    let setup = Command::new("bash")
        .arg(drivers.join("cqlsh_setup.sh"))
        .output()
        .expect("run cqlsh_setup.sh");
    assert!(
        setup.status.success(),
        "installing cqlsh failed: {}",
        String::from_utf8_lossy(&setup.stderr)
    );
    let cqlsh = String::from_utf8_lossy(&setup.stdout).trim().to_string();

    let dir = tempfile::tempdir().unwrap();
    // cqlsh reads and creates ~/.cassandra; it gets a home of its own.
    let home = tempfile::tempdir().unwrap();
    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);

    // One pipe for stdout and stderr, so errors sit where they happened;
    // unbuffered so Python writes each line as it goes.
    let (mut reader, writer) = std::io::pipe().expect("pipe");
    let mut child = {
        let mut cmd = Command::new(&cqlsh);
        cmd.current_dir(&drivers)
            .env("HOME", home.path())
            .env("PYTHONUNBUFFERED", "1")
            .env_remove("CQLSH_HOST")
            .env_remove("CQLSH_PORT")
            .args([
                "--no-color",
                "--connect-timeout",
                "60",
                "--request-timeout",
                "60",
            ])
            .args(["-f", "cqlsh_script.cql"])
            .arg(addr.ip().to_string())
            .arg(addr.port().to_string())
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
    let server_err = common::stop_server(server);

    let actual = normalise(&raw);
    let expected_path = drivers.join("cqlsh_script.expected");
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
    // The script has errors on purpose; cqlsh reports them by its exit code.
    assert_eq!(status.code(), Some(2), "cqlsh exit status");
}

#[test]
fn normalise_keeps_a_ttl_the_write_cannot_have() {
    let table = |v: &str| format!("\n ttl(v)\n--------\n {v}\n\n(1 rows)\n");
    assert!(normalise(&table("86399")).contains(TTL_PLACEHOLDER));
    assert!(normalise(&table("86400")).contains(TTL_PLACEHOLDER));
    for kept in ["86401", "null", "3600", "80000"] {
        assert_eq!(normalise(&table(kept)), table(kept), "{kept}");
    }
}
