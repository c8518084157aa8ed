//! `strata config show` on a data directory holding a `strata.yaml`, with one
//! flag given: every setting in effect, from the flag, the file or the
//! default, in the three formats (golden files in `tests/golden/`; rewrite
//! them with `STRATA_BLESS=1` after a deliberate change). The command reads
//! only: the data directory holds nothing but the file afterwards. Every
//! command that opens a data directory reads the same file: a bad key stops
//! `strata flush` before it opens anything.

use std::path::Path;
use std::process::{Command, Output};

const FILE: &str = "\
# cassandra.yaml names
cluster_name: Prod
commitlog_sync: batch
compaction_throughput: 16MiB/s
concurrent_compactors: 4
file_cache_size: 256MiB
native_transport_port: 9142
native_transport_max_frame_size: 32MiB
slow_query_log_timeout: 200ms
num_tokens:
";

fn strata(cwd: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .current_dir(cwd)
        .args(args)
        .output()
        .expect("run strata")
}

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden")
        .join(name);
    if std::env::var_os("STRATA_BLESS").is_some() {
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path).expect("golden file");
    assert_eq!(
        actual, expected,
        "{name} differs from the golden file (STRATA_BLESS=1 rewrites it)"
    );
}

#[test]
fn config_show_prints_each_setting_and_its_source() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("d");
    std::fs::create_dir(&data).expect("data dir");
    std::fs::write(data.join("strata.yaml"), FILE).expect("config file");

    for (format, name) in [
        ("table", "config_show.txt"),
        ("json", "config_show.json"),
        ("yaml", "config_show.yaml"),
    ] {
        let out = strata(
            dir.path(),
            &[
                "config",
                "show",
                "--data-dir",
                "d",
                "--concurrent-compactors",
                "2",
                "--format",
                format,
            ],
        );
        let stdout = String::from_utf8_lossy(&out.stdout).to_string();
        assert!(
            out.status.success(),
            "{format}: {stdout}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        golden(name, &stdout);
    }

    // The flag won over the file's 4; the file over the default 64 MiB/s.
    let out = strata(
        dir.path(),
        &[
            "config",
            "show",
            "--data-dir",
            "d",
            "--concurrent-compactors",
            "2",
            "--format",
            "json",
        ],
    );
    let rows: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let find = |name: &str| {
        rows.as_array()
            .and_then(|a| a.iter().find(|r| r["setting"] == name))
            .cloned()
            .unwrap_or_else(|| panic!("{name} missing from {rows}"))
    };
    assert_eq!(find("concurrent_compactors")["value"], "2");
    assert_eq!(
        find("concurrent_compactors")["source"],
        "command line (--concurrent-compactors)"
    );
    assert_eq!(find("compaction_throughput")["value"], "16MiB/s");
    assert_eq!(find("compaction_throughput")["source"], "d/strata.yaml");
    assert_eq!(find("disk_reserve")["source"], "default");

    // Reading the settings wrote nothing.
    let entries: Vec<_> = std::fs::read_dir(&data)
        .expect("read data dir")
        .map(|e| e.expect("entry").file_name())
        .collect();
    assert_eq!(entries, vec![std::ffi::OsString::from("strata.yaml")]);

    // Every command reads the file: a key Strata lacks stops a flush, named.
    std::fs::write(data.join("strata.yaml"), "memtable_heap_space: 2GiB\n").expect("rewrite");
    let out = strata(dir.path(), &["flush", "--data-dir", "d"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "flush ran despite a bad file");
    assert!(
        err.contains("memtable_heap_space: not a Strata setting") && err.contains("d/strata.yaml"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "one line: {err}");
}
