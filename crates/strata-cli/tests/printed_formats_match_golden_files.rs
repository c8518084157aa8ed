//! Every command that prints figures prints them in three formats with one
//! flag, `--format table|json|yaml` (`-F`): a table that has been flushed
//! twice, compacted and snapshotted is described by each command in each
//! format, and each text is compared with its golden file in
//! `tests/golden/formats/` (rewrite them with `STRATA_BLESS=1` after a
//! deliberate change). What changes from run to run (the data directory's
//! path, times, UUIDs, durations) is masked first. JSON and YAML must parse
//! and carry the same document; `--json`, the older flag, still means
//! `--format json`.

mod common;

use regex::Regex;
use std::path::Path;

fn golden(name: &str, actual: &str) {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/golden/formats")
        .join(name);
    if std::env::var_os("STRATA_BLESS").is_some() {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("golden dir");
        std::fs::write(&path, actual).expect("write golden file");
        return;
    }
    let expected = std::fs::read_to_string(&path)
        .unwrap_or_else(|e| panic!("golden file {}: {e}", path.display()));
    assert_eq!(
        actual, expected,
        "{name} differs from its golden file (STRATA_BLESS=1 rewrites it)"
    );
}

/// The output with the data directory, times, UUIDs and the figures that
/// depend on the clock replaced by fixed words.
fn masked(text: &str, dir: &Path) -> String {
    let text = text.replace(&dir.display().to_string(), "DIR");
    let iso = Regex::new(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z").expect("regex");
    let uuid =
        Regex::new(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}").expect("regex");
    let clocked =
        Regex::new(r#"("?(duration_ms|finished_at_seconds|created_at_micros)"?:\s*)-?\d+"#)
            .expect("regex");
    let text = iso.replace_all(&text, "<time>");
    let text = uuid.replace_all(&text, "<uuid>");
    clocked.replace_all(&text, "${1}<n>").to_string()
}

#[test]
fn printed_formats_match_golden_files() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("d");
    let d = dir.as_path();
    let run = |args: &[&str], what: &str| {
        String::from_utf8_lossy(&common::ok(&common::strata(d, args), what)).to_string()
    };
    run(
        &[
            "create-table",
            "CREATE TABLE ks.t (k int PRIMARY KEY, v text) WITH compaction = \
             {'class': 'SizeTieredCompactionStrategy'}",
        ],
        "create-table",
    );
    run(
        &[
            "cql",
            "-e",
            "INSERT INTO ks.t (k, v) VALUES (1, 'one') USING TIMESTAMP 1000; \
             INSERT INTO ks.t (k, v) VALUES (2, 'two') USING TIMESTAMP 1000",
        ],
        "first writes",
    );
    run(&["flush"], "flush");
    run(
        &[
            "cql",
            "-e",
            "INSERT INTO ks.t (k, v) VALUES (3, 'three') USING TIMESTAMP 2000; \
             DELETE FROM ks.t USING TIMESTAMP 3000 WHERE k = 1",
        ],
        "second writes",
    );
    run(&["flush"], "flush");
    run(&["compact", "ks.t"], "compact");
    run(&["snapshot", "-t", "golden", "ks"], "snapshot");

    let commands: &[(&str, &[&str])] = &[
        ("tablestats", &["tablestats", "ks.t"]),
        ("tablehistograms", &["tablehistograms", "ks.t"]),
        ("compactionhistory", &["compactionhistory"]),
        ("compactionstats", &["compactionstats"]),
        ("listsnapshots", &["listsnapshots"]),
        ("verify", &["verify"]),
        ("statusautocompaction", &["statusautocompaction"]),
        ("commitlog_stats", &["commitlog", "stats"]),
        ("expiredblockers", &["sstable", "expiredblockers"]),
        ("quarantine_list", &["quarantine", "list"]),
        ("token", &["token", "int", "1"]),
        (
            "model",
            &[
                "model",
                "--strategy",
                "lcs",
                "--data-size",
                "100GiB",
                "--ingest-rate",
                "1MiB/s",
            ],
        ),
    ];
    for (name, args) in commands {
        let mut texts = Vec::new();
        for (format, ext) in [("table", "txt"), ("json", "json"), ("yaml", "yaml")] {
            let mut full = args.to_vec();
            full.extend(["--format", format]);
            let text = if matches!(*name, "token" | "model") {
                let out = common::strata_without_dir(&full);
                String::from_utf8_lossy(&common::ok(&out, name)).to_string()
            } else {
                run(&full, name)
            };
            golden(&format!("{name}.{ext}"), &masked(&text, d));
            texts.push(text);
        }
        // The same document in both syntaxes (YAML reads JSON too), as the
        // commands read the same stored records each time.
        let json = yaml_rust2::YamlLoader::load_from_str(&texts[1])
            .unwrap_or_else(|e| panic!("{name} JSON: {e}"));
        let yaml = yaml_rust2::YamlLoader::load_from_str(&texts[2])
            .unwrap_or_else(|e| panic!("{name} YAML: {e}"));
        assert_eq!(json, yaml, "{name}: JSON and YAML differ");
        assert!(
            serde_json::from_str::<serde_json::Value>(&texts[1]).is_ok(),
            "{name}: not JSON:\n{}",
            texts[1]
        );
    }

    // The older flag still works, and means JSON.
    let old = masked(&run(&["compactionhistory", "--json"], "--json"), d);
    let new = masked(&run(&["compactionhistory", "-F", "json"], "-F json"), d);
    assert_eq!(old, new);
    let both = common::strata(d, &["tablestats", "--json", "--format", "yaml"]);
    assert!(
        !both.status.success(),
        "--json with --format yaml is refused"
    );
}
