//! `strata stress --table-options` creates the stress table with those
//! options; given for a table that exists, they are refused with a one-line
//! error naming `--alter`, and the table keeps its options (it used to be
//! ALTERed without a word: STCS became LCS). With `--alter` the table is
//! changed; `--alter` alone is refused.

mod common;

fn compaction_of(dir: &std::path::Path) -> String {
    let out = common::text(&common::strata(
        dir,
        &["cql", "-e", "DESCRIBE TABLE stress.standard1"],
    ));
    out.lines()
        .find(|l| l.contains("compaction"))
        .unwrap_or_else(|| panic!("{out}"))
        .to_string()
}

#[test]
fn table_options_change_an_existing_table_only_with_alter() {
    let dir = tempfile::tempdir().unwrap();
    let write = |extra: &[&str]| {
        let mut args = vec!["stress", "write", "-n", "100", "--no-tablestats"];
        args.extend_from_slice(extra);
        common::strata(dir.path(), &args)
    };
    let leveled = "compaction = {'class': 'LeveledCompactionStrategy'}";
    let tiered = "compaction = {'class': 'SizeTieredCompactionStrategy'}";

    common::ok(&write(&["--table-options", leveled]), "create with options");
    assert!(compaction_of(dir.path()).contains("LeveledCompactionStrategy"));

    let refused = write(&["--table-options", tiered]);
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("exists") && err.contains("--alter"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "one line: {err}");
    assert!(compaction_of(dir.path()).contains("LeveledCompactionStrategy"));

    // Without options an existing table is used as it is.
    common::ok(&write(&[]), "write without options");
    assert!(compaction_of(dir.path()).contains("LeveledCompactionStrategy"));

    common::ok(
        &write(&["--table-options", tiered, "--alter"]),
        "write with --alter",
    );
    assert!(compaction_of(dir.path()).contains("SizeTieredCompactionStrategy"));

    let alone = write(&["--alter"]);
    assert!(!alone.status.success(), "--alter without --table-options");
}
