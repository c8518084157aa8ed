//! One owner per data directory. While `strata stress write` runs, every command
//! that would change the directory (`flush`, `snapshot`, `clearsnapshot`, a second
//! `stress write`) is refused with a message naming the running writer, and the
//! inspection commands (`tablestats`, `verify`) run beside it read-only. Afterwards
//! `stress read` with the writer's arguments finds every acknowledged row.
//!
//! Before the lock, the same sequence replayed the writer's commit log from the
//! second process, sealed and deleted its active segment, and lost 40-60% of the
//! acknowledged rows while `verify` said OK.

mod common;
use common::{strata, text};

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

#[test]
fn second_process_is_refused_and_nothing_acknowledged_is_lost() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let n = "200000";
    // Small memtables and segments: the writer flushes, rolls and deletes
    // segments all through the run, which is what a second process used to break.
    let workload = [
        "-n",
        n,
        "--threads",
        "2",
        "--no-tablestats",
        "--table-options",
        "memtable_flush_threshold_kb = 512",
    ];
    let mut args = vec!["--commitlog-segment-size-mb", "1", "stress", "write"];
    args.extend_from_slice(&workload);
    let mut writer = Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("--data-dir")
        .arg(&data)
        .args(&args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("start writer");
    let started = Instant::now();
    let (mut refused, mut inspected) = (0u32, 0u32);
    let mut round = 0u32;
    let status = loop {
        if let Some(status) = writer.try_wait().expect("writer status") {
            break status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(600),
            "writer did not finish"
        );
        if !data.join("LOCK").exists() || !data.join("schema.json").exists() {
            std::thread::sleep(Duration::from_millis(20));
            continue;
        }
        round += 1;
        let (cmd, must_change): (&[&str], bool) = match round % 6 {
            0 => (&["flush"], true),
            1 => (&["tablestats", "--json"], false),
            2 => (&["snapshot", "-t", "s1"], true),
            3 => (&["verify"], false),
            4 => (&["clearsnapshot", "--all"], true),
            _ => (&["stress", "write", "-n", "10", "--no-tablestats"], true),
        };
        let out = strata(&data, cmd);
        if writer.try_wait().expect("writer status").is_some() {
            // The writer may have ended while this command ran: not conclusive.
            continue;
        }
        let said = text(&out);
        if must_change {
            assert!(
                !out.status.success(),
                "{cmd:?} ran beside the writer: {said}"
            );
            assert!(said.contains("in use"), "{cmd:?}: {said}");
            assert!(
                said.contains("stress write"),
                "{cmd:?} must name the holder: {said}"
            );
            assert!(!said.contains("panicked"), "{said}");
            refused += 1;
        } else {
            assert!(out.status.success(), "{cmd:?} beside the writer: {said}");
            inspected += 1;
        }
    };
    let mut err = String::new();
    if let Some(mut e) = writer.stderr.take() {
        use std::io::Read;
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "writer failed: {err}");
    assert!(
        refused >= 2,
        "only {refused} refusals: the writer ended too soon"
    );
    assert!(inspected >= 1, "no read-only command ran beside the writer");

    let summary = dir.path().join("read.json");
    let mut args = vec!["stress", "read", "--json", summary.to_str().expect("utf-8")];
    // The same rows; the table exists now, so without its creation options.
    args.extend_from_slice(&workload[..workload.len() - 2]);
    let out = strata(&data, &args);
    assert!(out.status.success(), "stress read: {}", text(&out));
    let s: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&summary).expect("summary")).expect("JSON");
    assert_eq!(s["misses"].as_u64(), Some(0), "{s}");
    assert_eq!(s["errors"].as_u64(), Some(0), "{s}");
}
