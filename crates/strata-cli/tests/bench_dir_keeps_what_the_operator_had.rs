//! `--dir D` of every bench: the bench runs in a directory of its own that it
//! creates under `D` and removes, and nothing the operator had in `D` is
//! touched, whether the arguments are refused or the run succeeds.
//!
//! Found by the adversarial round: `strata bench slice --dir D` removed `D`
//! itself with everything in it, also when its arguments were refused; `bench
//! commitlog --dir D` removed `D/batch-1t` (its per-run name) if the operator
//! had one.

mod common;

use common::{strata_without_dir, text};
use std::collections::BTreeMap;
use std::path::Path;

/// Every file under `dir` with its contents (directories as `path/`).
fn contents(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    let mut out = BTreeMap::new();
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).expect("read_dir") {
            let e = e.expect("entry");
            let rel = e
                .path()
                .strip_prefix(root)
                .expect("under root")
                .display()
                .to_string();
            let t = e.file_type().expect("type");
            if t.is_dir() {
                out.insert(format!("{rel}/"), Vec::new());
                walk(root, &e.path(), out);
            } else {
                out.insert(rel, std::fs::read(e.path()).unwrap_or_default());
            }
        }
    }
    walk(dir, dir, &mut out);
    out
}

/// An operator's directory: a file, and directories named as the benches
/// name their per-run directories.
fn operator_dir(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("precious.txt"), b"the operator's").unwrap();
    for sub in [
        "batch-1t",
        "run-0-20",
        "calibration",
        "blobstore-STCS",
        "timeseries-STCS",
    ] {
        std::fs::create_dir_all(dir.join(sub)).unwrap();
        std::fs::write(dir.join(sub).join("keep"), sub.as_bytes()).unwrap();
    }
}

/// `(bench, refused arguments, a small run that succeeds)`.
fn benches() -> Vec<(&'static str, Vec<&'static str>, Vec<&'static str>)> {
    vec![
        (
            "commitlog",
            vec!["--threads", "0"],
            vec![
                "--ops",
                "20",
                "--threads",
                "1",
                "--modes",
                "batch",
                "--max-seconds",
                "5",
            ],
        ),
        (
            "slice",
            vec!["--rows", "5"],
            vec!["--rows", "20", "--min-millis", "0"],
        ),
        (
            "lcs-fanout",
            vec!["--nodes", "Z"],
            vec![
                "--scale",
                "0.0001",
                "--hours",
                "0.01",
                "--nodes",
                "A",
                "--cells-per-partition",
                "1",
                "--flush-mib",
                "1",
            ],
        ),
        (
            "lcs-levels",
            vec!["--configs", "bogus"],
            vec!["--skip-engine", "--sizes", "1GiB", "--configs", "normal4"],
        ),
        (
            "timeseries",
            vec!["--strategies", "NOPE"],
            vec![
                "--series",
                "1",
                "--write-days",
                "0.01",
                "--recent-read-days",
                "0",
                "--cold-read-days",
                "0",
                "--strategies",
                "STCS",
                "--no-out-of-order",
            ],
        ),
        (
            "blobstore",
            vec!["--strategies", "NOPE"],
            vec![
                "--files",
                "1",
                "--file-size-mib",
                "1",
                "--block-size-kib",
                "64",
                "--runs",
                "1",
                "--strategies",
                "STCS",
                "--memtable-mb",
                "1",
            ],
        ),
        (
            "compression",
            vec!["--rounds", "0"],
            vec![
                "--raw-mib",
                "1",
                "--concurrency",
                "1",
                "--read-seconds",
                "0.01",
                "--rounds",
                "1",
                "--recompression-quota-mb",
                "0",
            ],
        ),
    ]
}

#[test]
fn a_bench_removes_only_the_directory_it_created() {
    let tmp = tempfile::tempdir().unwrap();
    for (bench, refused, good) in benches() {
        let d = tmp.path().join(bench);
        operator_dir(&d);
        let before = contents(&d);
        let dir = d.to_str().unwrap();
        let mut args = vec!["bench", bench];
        args.extend(&refused);
        args.extend(["--dir", dir]);
        let out = strata_without_dir(&args);
        assert!(!out.status.success(), "{args:?} accepted: {}", text(&out));
        assert_eq!(
            contents(&d),
            before,
            "{args:?} changed --dir: {}",
            text(&out)
        );
        let mut args = vec!["bench", bench];
        args.extend(&good);
        args.extend(["--dir", dir]);
        let out = strata_without_dir(&args);
        assert!(out.status.success(), "{args:?}: {}", text(&out));
        assert_eq!(
            contents(&d),
            before,
            "{args:?} left its work directory or touched the operator's: {}",
            text(&out)
        );
    }
}
