//! Every command, with a symbolic link in each place it walks, writes or
//! deletes: nothing outside the data directory changes, ever. A link is
//! skipped (and reported) or the command is refused; the link's target is
//! never read as the engine's own, written or deleted.
//!
//! Found by the adversarial round: `clearsnapshot --all` followed a link
//! under `snapshots/` and deleted the files of its target. One test per
//! command family: snapshots (snapshot, listsnapshots, clearsnapshot, scrub
//! and upgradesstables with --snapshot), the quarantine (open, list, purge,
//! import), the directories open walks (keyspace, table, commit log), files
//! written by name (schema.json, LOCK, compaction history, sstable
//! temporaries, report files), the repairs (manifest rebuild, schema rebuild)
//! and the benches' outputs.
//!
//! A symbolic link as the data directory itself (the operator's `--data-dir`)
//! is allowed, and is exercised here too: every test's data directory is
//! reached through one.

mod common;

use common::{strata, strata_without_dir, text};
use std::collections::BTreeMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

/// A data directory reached through a link (allowed: the operator's root),
/// with `stress.standard1` holding a few sstables, and an `outside` directory
/// of canary files next to it.
struct Setup {
    _tmp: tempfile::TempDir,
    data: PathBuf,
    outside: PathBuf,
}

impl Setup {
    fn new() -> Setup {
        let tmp = tempfile::tempdir().unwrap();
        let real = tmp.path().join("real-data");
        std::fs::create_dir_all(&real).unwrap();
        let data = tmp.path().join("data");
        symlink(&real, &data).unwrap();
        for _ in 0..2 {
            let out = strata(&data, &["stress", "write", "-n", "50", "--no-tablestats"]);
            assert!(out.status.success(), "{}", text(&out));
        }
        let outside = tmp.path().join("outside");
        std::fs::create_dir_all(outside.join("sub")).unwrap();
        std::fs::write(outside.join("canary"), b"not the engine's").unwrap();
        std::fs::write(outside.join("sub").join("canary"), b"nor this").unwrap();
        Setup {
            _tmp: tmp,
            data,
            outside,
        }
    }

    fn table(&self) -> PathBuf {
        self.data.join("stress").join("standard1")
    }

    /// Every file and directory outside, with contents.
    fn outside_now(&self) -> BTreeMap<String, String> {
        tree(&self.outside)
    }

    fn run(&self, args: &[&str]) -> std::process::Output {
        strata(&self.data, args)
    }
}

/// Every file under `dir` (directories as `path/`) with the start of its
/// contents and its length: enough to see any change, short to print.
fn tree(dir: &Path) -> BTreeMap<String, String> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, String>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let rel = e.path().strip_prefix(root).unwrap().display().to_string();
            let t = e.file_type().unwrap();
            if t.is_dir() {
                out.insert(format!("{rel}/"), String::new());
                walk(root, &e.path(), out);
            } else {
                let bytes = std::fs::read(e.path()).unwrap_or_default();
                let head = String::from_utf8_lossy(&bytes[..bytes.len().min(24)]).into_owned();
                out.insert(rel, format!("{} bytes: {head:?}", bytes.len()));
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out
}

/// Runs `args` and checks that nothing outside changed; returns the output.
fn untouched(s: &Setup, args: &[&str]) -> std::process::Output {
    let before = s.outside_now();
    let out = s.run(args);
    assert_eq!(
        s.outside_now(),
        before,
        "`strata {args:?}` changed files outside the data directory: {}",
        text(&out)
    );
    assert!(
        !String::from_utf8_lossy(&out.stderr).contains("panicked"),
        "{}",
        text(&out)
    );
    out
}

#[test]
fn snapshot_commands_skip_or_refuse_links() {
    let s = Setup::new();
    let out = s.run(&["snapshot", "-t", "real"]);
    assert!(out.status.success(), "{}", text(&out));
    let snaps = s.table().join("snapshots");
    // A link among the snapshots: never cleared, listed or sized.
    symlink(&s.outside, snaps.join("evil")).unwrap();
    let out = untouched(&s, &["listsnapshots", "--json"]);
    assert!(out.status.success(), "{}", text(&out));
    assert!(
        !String::from_utf8_lossy(&out.stdout).contains("evil"),
        "a link listed as a snapshot: {}",
        text(&out)
    );
    let out = untouched(&s, &["clearsnapshot", "-t", "evil"]);
    assert!(!out.status.success(), "{}", text(&out));
    let out = untouched(&s, &["clearsnapshot", "--all"]);
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("evil"),
        "the skipped link is not reported: {}",
        text(&out)
    );
    assert!(
        !snaps.join("real").exists(),
        "the real snapshot was not cleared"
    );
    assert!(
        snaps.join("evil").symlink_metadata().is_ok(),
        "the link, not the engine's, was removed"
    );
    // A link where a snapshot's temporary directory goes.
    symlink(&s.outside, snaps.join("next.tmp")).unwrap();
    let out = untouched(&s, &["snapshot", "-t", "next"]);
    assert!(!out.status.success(), "{}", text(&out));
}

#[test]
fn a_link_as_the_snapshots_directory_is_refused_by_every_command_that_uses_it() {
    let s = Setup::new();
    symlink(&s.outside, s.table().join("snapshots")).unwrap();
    for args in [
        &["snapshot", "-t", "x"][..],
        &["listsnapshots"],
        &["clearsnapshot", "--all"],
        &["clearsnapshot", "-t", "sub"],
        &["scrub", "--snapshot"],
        &["upgradesstables", "-a", "--snapshot"],
    ] {
        untouched(&s, args);
    }
}

#[test]
fn quarantine_commands_and_open_never_follow_links() {
    let s = Setup::new();
    let q = s.table().join("quarantine");
    // The quarantine directory itself a link: purge deletes nothing outside,
    // and open does not move an unlisted file out through it.
    symlink(&s.outside, &q).unwrap();
    untouched(&s, &["quarantine", "list"]);
    untouched(&s, &["quarantine", "purge"]);
    std::fs::write(s.table().join("strata-999-Data.db"), b"unlisted").unwrap();
    untouched(&s, &["flush"]);
    assert!(
        !s.outside.join("strata-999-Data.db").exists(),
        "open moved a file out of the data directory"
    );
    // A link inside a real quarantine: purge leaves its target alone.
    std::fs::remove_file(&q).unwrap();
    std::fs::create_dir_all(&q).unwrap();
    symlink(s.outside.join("canary"), q.join("strata-7-Data.db")).unwrap();
    symlink(s.outside.join("sub"), q.join("strata-8-Data.db")).unwrap();
    untouched(&s, &["quarantine", "purge"]);
    let link = q.join("strata-7-Data.db");
    let link = link.to_str().unwrap();
    untouched(&s, &["sstable", "import", "stress.standard1", link]);
}

#[test]
fn links_in_place_of_the_directories_open_walks_are_refused() {
    // A table directory that is a link: nothing is written through it.
    let s = Setup::new();
    let moved = s.outside.join("standard1");
    std::fs::rename(s.table(), &moved).unwrap();
    symlink(&moved, s.table()).unwrap();
    for args in [
        &["stress", "write", "-n", "20", "--no-tablestats"][..],
        &["flush"],
        &["compact"],
    ] {
        let out = untouched(&s, args);
        assert!(!out.status.success(), "{args:?}: {}", text(&out));
    }
    // A keyspace directory that is a link.
    let s = Setup::new();
    let moved = s.outside.join("stress");
    std::fs::rename(s.data.join("stress"), &moved).unwrap();
    symlink(&moved, s.data.join("stress")).unwrap();
    let out = untouched(&s, &["stress", "write", "-n", "20", "--no-tablestats"]);
    assert!(!out.status.success(), "{}", text(&out));
    // The commit-log directory a link.
    let s = Setup::new();
    let moved = s.outside.join("commitlog");
    std::fs::rename(s.data.join("commitlog"), &moved).unwrap();
    symlink(&moved, s.data.join("commitlog")).unwrap();
    let out = untouched(&s, &["stress", "write", "-n", "20", "--no-tablestats"]);
    assert!(!out.status.success(), "{}", text(&out));
}

#[test]
fn files_written_by_name_are_never_written_through_a_link() {
    let s = Setup::new();
    let canary = s.outside.join("canary");
    // The schema's temporary name.
    symlink(&canary, s.data.join("schema.json.tmp")).unwrap();
    untouched(
        &s,
        &[
            "create-table",
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text)",
        ],
    );
    std::fs::remove_file(s.data.join("schema.json.tmp")).unwrap();
    // The compaction history, appended to by name.
    symlink(&canary, s.table().join("compaction_history")).unwrap();
    untouched(&s, &["compact"]);
    std::fs::remove_file(s.table().join("compaction_history")).unwrap();
    // The lock file.
    std::fs::remove_file(s.data.join("LOCK")).unwrap();
    symlink(&canary, s.data.join("LOCK")).unwrap();
    untouched(&s, &["flush"]);
    std::fs::remove_file(s.data.join("LOCK")).unwrap();
    // A report file.
    let report = s.outside.join("report.json");
    symlink(&canary, &report).unwrap();
    let report = report.to_str().unwrap();
    untouched(
        &s,
        &[
            "stress",
            "write",
            "-n",
            "5",
            "--no-tablestats",
            "--json",
            report,
        ],
    );
    // A report file inside the data directory is refused outright.
    let manifest = s.table().join("MANIFEST");
    let before = std::fs::read(&manifest).unwrap();
    let out = s.run(&[
        "stress",
        "write",
        "-n",
        "5",
        "--no-tablestats",
        "--json",
        manifest.to_str().unwrap(),
    ]);
    assert!(!out.status.success(), "{}", text(&out));
    assert_eq!(std::fs::read(&manifest).unwrap(), before);
    // The offline scrub's output temporary.
    let sstable = common::sstables(&s.table()).remove(0);
    let out_dir = s.outside.join("scrubbed");
    std::fs::create_dir_all(&out_dir).unwrap();
    let name = sstable.file_name().unwrap().to_str().unwrap().to_string();
    symlink(&canary, out_dir.join(format!("{name}.tmp"))).unwrap();
    let before = s.outside_now();
    let out = strata_without_dir(&[
        "sstable",
        "scrub",
        sstable.to_str().unwrap(),
        "--out",
        out_dir.to_str().unwrap(),
    ]);
    let mut after = s.outside_now();
    // The scrub may write its own new output, never through the link.
    after.remove(&format!("scrubbed/{name}"));
    assert_eq!(after, before, "{}", text(&out));
}

#[test]
fn repairs_never_follow_links() {
    let s = Setup::new();
    // manifest rebuild quarantines a file it cannot list: never out through a link.
    std::fs::remove_file(s.table().join("MANIFEST")).unwrap();
    std::fs::write(s.table().join("strata-999-Data.db"), b"not an sstable").unwrap();
    symlink(&s.outside, s.table().join("quarantine")).unwrap();
    untouched(&s, &["manifest", "rebuild", "stress.standard1"]);
    // schema rebuild writes schema.json by name: never through a link.
    let s = Setup::new();
    std::fs::remove_file(s.data.join("schema.json")).unwrap();
    symlink(s.outside.join("canary"), s.data.join("schema.json.tmp")).unwrap();
    symlink(&s.outside, s.table().join("snapshots")).unwrap();
    untouched(&s, &["schema", "rebuild"]);
}

#[test]
fn bench_charts_are_never_written_through_a_link() {
    let tmp = tempfile::tempdir().unwrap();
    let charts = tmp.path().join("charts");
    let outside = tmp.path().join("canary");
    std::fs::write(&outside, b"not a chart").unwrap();
    std::fs::create_dir_all(&charts).unwrap();
    symlink(&outside, charts.join("lcs_levels_write_amplification.svg")).unwrap();
    let out = strata_without_dir(&[
        "bench",
        "lcs-levels",
        "--skip-engine",
        "--sizes",
        "1GiB",
        "--configs",
        "normal4",
        "--dir",
        tmp.path().to_str().unwrap(),
        "--charts",
        charts.to_str().unwrap(),
    ]);
    assert_eq!(
        std::fs::read(&outside).unwrap(),
        b"not a chart",
        "{}",
        text(&out)
    );
}
