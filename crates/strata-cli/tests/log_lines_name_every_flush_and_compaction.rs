//! The log: a command run with `--log-level info` prints a line per flush on
//! stderr; by default (`warn`) it prints none; `strata serve` writes its
//! lines into logs/strata.log in the data directory (the commit-log replay
//! at open, and a compaction run for `strata compact` with its inputs,
//! outputs, bytes, time and reason), each stamped in ISO-8601 UTC; a level
//! that does not parse is refused in one line.

mod common;

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).to_string()
}

#[test]
fn log_lines_name_every_flush_and_compaction() {
    let quiet = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();

    // Default level: nothing but warnings.
    let out = common::strata(
        quiet.path(),
        &["stress", "write", "-n", "100", "--no-tablestats"],
    );
    common::ok(&out, "stress write");
    assert!(
        !stderr(&out).contains("flushed memtable"),
        "{}",
        stderr(&out)
    );

    // `info`: every flush. Small memtables flush many times; the STCS
    // threshold of 32 keeps them apart for the compaction below.
    let options = "memtable_flush_threshold_kb = 64 AND compaction = \
        {'class': 'SizeTieredCompactionStrategy', 'min_threshold': 32, 'max_threshold': 32}";
    let out = common::strata(
        dir.path(),
        &[
            "--log-level",
            "info",
            "stress",
            "write",
            "-n",
            "3000",
            "--no-tablestats",
            "--table-options",
            options,
        ],
    );
    common::ok(&out, "stress write --log-level info");
    let err = stderr(&out);
    let flushes: Vec<&str> = err
        .lines()
        .filter(|l| l.contains("strata::flush") && l.contains("flushed memtable to"))
        .collect();
    assert!(flushes.len() >= 2, "{err}");
    assert!(flushes[0].contains("stress.standard1"), "{}", flushes[0]);

    // The server logs into its data directory; `strata compact` runs in it.
    let (server, _) = common::serve(dir.path(), &["--port", "0"]);
    let out = common::strata(dir.path(), &["compact", "stress.standard1"]);
    common::ok(&out, "compact (run by the server)");
    common::stop_server(server);
    let log = std::fs::read_to_string(dir.path().join("logs").join("strata.log"))
        .expect("logs/strata.log");
    let replay = log
        .lines()
        .find(|l| l.contains("strata::replay"))
        .unwrap_or_else(|| panic!("no replay line: {log}"));
    assert!(replay.contains("commit log replayed"), "{replay}");
    let compacted = log
        .lines()
        .find(|l| l.contains("strata::compaction") && l.contains("compacted "))
        .unwrap_or_else(|| panic!("no compaction line: {log}"));
    for field in [
        "inputs=",
        "outputs=",
        "bytes_in=",
        "bytes_out=",
        "ms=",
        "reason=",
    ] {
        assert!(compacted.contains(field), "{field} in {compacted}");
    }
    // ISO-8601 UTC: 2026-11-30T10:41:07.123456Z
    let stamp = compacted.split_whitespace().next().unwrap();
    assert!(
        stamp.len() >= 20 && stamp.as_bytes()[10] == b'T' && stamp.ends_with('Z'),
        "{stamp}"
    );

    // A level that does not parse: one line, nothing run.
    let out = common::strata(dir.path(), &["--log-level", "loud", "tablestats"]);
    assert!(!out.status.success());
    let err = stderr(&out);
    assert!(err.contains("--log-level"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
}
