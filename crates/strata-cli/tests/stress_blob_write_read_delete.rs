//! `strata stress --workload blob`: write files of fixed-size blocks, read
//! them back verified block by block, delete them whole, and a read after the
//! delete fails every file (issue 13 part 4).

mod common;
use common::{json_file, strata, text};

const FILES: u64 = 6;
/// 600 KiB in 64 KiB blocks: nine full blocks and a short tenth.
const BLOCKS: u64 = 10;

fn stress(data: &std::path::Path, mode: &str, json: &std::path::Path) -> std::process::Output {
    strata(
        data,
        &[
            "stress",
            mode,
            "--workload",
            "blob",
            "-n",
            "6",
            "--threads",
            "2",
            "--file-size-kib",
            "600",
            "--block-size-kib",
            "64",
            "--no-tablestats",
            "--json",
            json.to_str().expect("utf-8 path"),
        ],
    )
}

#[test]
fn blob_files_read_back_intact_then_vanish_when_deleted() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    for mode in ["write", "read", "delete"] {
        let json = dir.path().join(format!("{mode}.json"));
        let out = stress(&data, mode, &json);
        assert!(out.status.success(), "stress {mode}: {}", text(&out));
        let s = json_file(&json);
        assert_eq!(s["total_ops"].as_u64(), Some(FILES), "{mode}: {s}");
        assert_eq!(s["errors"].as_u64(), Some(0), "{mode}: {s}");
        assert_eq!(s["misses"].as_u64(), Some(0), "{mode}: {s}");
        let per_op = s["row_rate"].as_f64().unwrap_or(0.0) / s["op_rate"].as_f64().unwrap_or(1.0);
        assert!((per_op - BLOCKS as f64).abs() < 1e-6, "{mode}: {s}");
        if mode != "delete" {
            assert!(s["mib_rate"].as_f64() > Some(0.0), "{mode}: {s}");
        }
    }
    // Every block of every file is gone: each file's read is a failed
    // operation, and the command says so with a non-zero exit.
    let json = dir.path().join("read_after_delete.json");
    let out = stress(&data, "read", &json);
    assert!(!out.status.success(), "read after delete: {}", text(&out));
    let s = json_file(&json);
    assert_eq!(s["total_ops"].as_u64(), Some(0), "{s}");
    assert_eq!(s["failed_ops"].as_u64(), Some(FILES), "{s}");
    assert_eq!(s["misses"].as_u64(), Some(FILES * BLOCKS), "{s}");
    assert!(
        text(&out).contains("blocks missing"),
        "the first failure is named: {}",
        text(&out)
    );
}
