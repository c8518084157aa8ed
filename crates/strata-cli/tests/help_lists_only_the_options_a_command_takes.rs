//! Issue 11: each command shows only the options it takes. `model` and
//! `simulate` open no data directory, so their help must not list `--data-dir`
//! or the commit-log flags (they did while those were clap `global` options),
//! and giving one before them is an error rather than silently ignored. Commands
//! that open a data directory list them and take them on either side of the
//! subcommand.

mod common;

use common::{ok, strata, text};
use std::process::Command;

fn help(args: &[&str]) -> String {
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(args)
        .arg("--help")
        .output()
        .expect("run strata");
    String::from_utf8(ok(&out, &format!("{args:?} --help"))).expect("UTF-8 help")
}

#[test]
fn help_lists_data_directory_options_only_where_a_data_directory_is_opened() {
    for cmd in [
        &["model"][..],
        &["model", "advise"],
        &["simulate"],
        &["token"],
    ] {
        let h = help(cmd);
        for flag in ["--data-dir", "--commitlog-sync", "--max-disk-bytes"] {
            assert!(
                !h.contains(flag),
                "`strata {cmd:?} --help` lists {flag}:\n{h}"
            );
        }
    }
    for cmd in [
        &[][..],
        &["stress", "write"],
        &["flush"],
        &["sstable", "import"],
    ] {
        let h = help(cmd);
        for flag in ["--data-dir", "--commitlog-sync"] {
            assert!(
                h.contains(flag),
                "`strata {cmd:?} --help` omits {flag}:\n{h}"
            );
        }
    }
    // A single-file tool opens no data directory either.
    assert!(!help(&["sstable", "metadata"]).contains("--data-dir"));
}

#[test]
fn a_data_directory_option_before_a_command_without_one_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let out = strata(dir.path(), &["model"]);
    assert!(!out.status.success(), "{}", text(&out));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("`strata model` opens no data directory: --data-dir"),
        "{err}"
    );
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "the refused command wrote into the directory"
    );
}

#[test]
fn data_directory_options_work_after_the_subcommand_but_not_twice() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path().join("data");
    let data = data.to_str().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_strata"))
        .args(["stress", "write", "-n", "50", "--no-tablestats"])
        .args(["--data-dir", data, "--commitlog-sync", "batch"])
        .output()
        .expect("run strata");
    ok(&out, "stress write with --data-dir after the subcommand");
    assert!(dir.path().join("data").is_dir());
    let out = strata(&dir.path().join("data"), &["flush", "--data-dir", data]);
    assert!(!out.status.success(), "{}", text(&out));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("--data-dir given both"),
        "{}",
        text(&out)
    );
}
