//! Strata -> `strata export --format cassandra` -> `nodetool import -e` into a
//! real Apache Cassandra 5.0.9, then every row, `WRITETIME()` and `TTL()` read
//! through the Python driver from both must agree: right after the import
//! (which also runs Cassandra's extended verification of every file), after
//! `nodetool verify -e`, after a restart of Cassandra, after `nodetool flush`
//! and `compact`, and once the short TTLs have passed with gc grace 0 and a
//! compaction has purged (nothing deleted comes back, nothing expires late).
//! Cassandra's offline tools read every exported file first: `sstabledump`
//! (every partition), `sstablemetadata` (its timestamps and deletion time
//! equal the export's), and, with the node stopped, `sstableverify -e` of the
//! imported tables before any compaction rewrote them.
//!
//! The data (tests/drivers/cassandra_roundtrip.py, `load`) is a seeded mix
//! written through a Strata server: inserts and updates with old and current
//! timestamps, TTLs of a day and of 120 s, collections, a static column, cell,
//! row, range and partition deletions, a composite partition key and a DESC
//! date clustering, and two partitions of about 700 KB (table `deep`) that
//! Cassandra reads through their row index: the comparison also takes
//! clustering slices of them in both orders.
//!
//! Needs a Cassandra 5.0.9 to start and stop: set `STRATA_CASSANDRA` to a
//! directory holding `start.sh`, `stop.sh` and `nodetool.sh` (this machine:
//! `../shared/cassandra`), and `STRATA_CASSANDRA_DATA` to its data directory
//! when it is not `/tmp/cassandra/data/data`. A copy of that directory whose
//! yaml sets `storage_compatibility_mode: NONE` (and `sstable:
//! selected_format: bti`) makes the import test read `oa` (`da`) sstables. Without it the test says so and passes, as
//! `.ci/run` does not start Cassandra (a start takes a minute and 2 GB); the
//! last result on the developer's machine is in BENCHMARKS.md.

mod common;

use common::{cassandra_script as sh, roundtrip_py as py};

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

/// One Cassandra serves both tests, and the export test restarts it: they
/// take turns.
static CASSANDRA: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn cassandra_dir() -> Option<PathBuf> {
    std::env::var_os("STRATA_CASSANDRA").map(PathBuf::from)
}

/// One of Cassandra's offline tools (tests/drivers/cassandra_tool.sh); its
/// stdout.
fn tool(cass: &Path, class: &str, args: &[&str]) -> String {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/drivers/cassandra_tool.sh");
    let out = Command::new("bash")
        .arg(script)
        .arg(cass)
        .arg(class)
        .args(args)
        .output()
        .expect("run a Cassandra tool");
    let text = String::from_utf8_lossy(&out.stdout).to_string();
    assert!(
        out.status.success(),
        "{class} {args:?} failed: {text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    text
}

/// The number in parentheses on `sstablemetadata`'s line `label: ...`.
fn metadata_figure(text: &str, label: &str) -> i64 {
    let line = text
        .lines()
        .find(|l| l.starts_with(label))
        .unwrap_or_else(|| panic!("no '{label}' in {text}"));
    let inner = line.rsplit_once('(').and_then(|(_, r)| r.strip_suffix(')'));
    inner
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no figure in '{line}'"))
}

/// sstabledump and sstablemetadata on every sstable of an export.
fn offline_tools_read(cass: &Path, table_dir: &Path, summary: &serde_json::Value) {
    for sst in summary["sstables"].as_array().unwrap() {
        let data = table_dir.join(format!("nb-{}-big-Data.db", sst["generation"]));
        let data = data.to_str().unwrap();
        let dump = tool(cass, "SSTableExport", &[data]);
        let partitions = dump.matches("\"partition\"").count() as u64;
        assert_eq!(partitions, sst["partitions"].as_u64().unwrap(), "{data}");
        let meta = tool(cass, "SSTableMetadataViewer", &[data]);
        for (label, field) in [
            ("Minimum timestamp", "min_timestamp_micros"),
            ("Maximum timestamp", "max_timestamp_micros"),
        ] {
            assert_eq!(
                Some(metadata_figure(&meta, label)),
                sst[field].as_i64(),
                "{label} of {data}"
            );
        }
        let max_ldt = metadata_figure(&meta, "SSTable max local deletion time");
        match sst["max_local_deletion_seconds"].as_i64() {
            Some(s) => assert_eq!(max_ldt, s, "{data}"),
            None => assert_eq!(max_ldt, i64::MAX, "{data}: no tombstones"),
        }
    }
}

#[test]
fn exported_sstables_load_into_cassandra_and_read_the_same() {
    let Some(cass) = cassandra_dir() else {
        eprintln!("skipped: set STRATA_CASSANDRA to a Cassandra 5.0.9 script directory");
        return;
    };
    let _turn = CASSANDRA.lock().unwrap_or_else(|e| e.into_inner());
    let nodetool = cass.join("nodetool.sh");
    sh(&cass.join("start.sh"), &[]);
    let ks = format!("strata_export_{}", std::process::id());
    let dir = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();

    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let port = addr.port().to_string();
    assert!(py(&["load", &port, "41", &ks]).contains("loaded"));
    let loaded = Instant::now();
    common::stop_server(server);

    let tables = ["wide", "rev", "deep"];
    // A second export of each table, for the offline tools once the data is
    // compared (the import moves the first one's files away).
    let copy = tempfile::tempdir().unwrap();
    let export = |t: &str, to: &Path| {
        let summary = common::ok(
            &common::strata(
                dir.path(),
                &[
                    "export",
                    &format!("{ks}.{t}"),
                    "--format",
                    "cassandra",
                    "--out",
                    to.to_str().unwrap(),
                    "--json",
                ],
            ),
            "export",
        );
        common::json(&summary)
    };
    let mut copies = Vec::new();
    for t in tables {
        let summary = export(t, out.path());
        assert!(summary["partitions"].as_u64().unwrap() > 0, "{summary}");
        copies.push((copy.path().join(&ks).join(t), export(t, copy.path())));
        let table_dir = out.path().join(&ks).join(t);
        py(&[
            "run",
            "9042",
            table_dir.join("schema.cql").to_str().unwrap(),
        ]);
        let imported = sh(
            &nodetool,
            &["import", "-e", &ks, t, table_dir.to_str().unwrap()],
        );
        assert!(!imported.contains("failed"), "{imported}");
        // The import moved every file of the sstables away.
        let left: Vec<_> = std::fs::read_dir(&table_dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .filter(|n| n.ends_with("Data.db"))
            .collect();
        assert!(left.is_empty(), "not imported: {left:?}");
    }

    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let port = addr.port().to_string();
    let compare = |phase: &str| -> u64 {
        let mut args = vec!["compare", "9042", &port, &ks];
        args.extend(tables);
        let r = py(&args);
        assert!(r.contains("equal"), "{phase}: {r}");
        eprintln!("{phase}: {}", r.trim());
        r.split_whitespace()
            .find_map(|w| w.parse().ok())
            .unwrap_or_else(|| panic!("{r}"))
    };
    let live = compare("imported");
    for (table_dir, summary) in &copies {
        offline_tools_read(&cass, table_dir, summary);
    }
    sh(&nodetool, &["verify", "-e", "-f", &ks]);
    sh(&cass.join("stop.sh"), &[]);
    for t in tables {
        // Exit status 1 on any failure; one "succeeded" line per sstable.
        let verified = tool(&cass, "StandaloneVerifier", &["-f", "-e", "-v", &ks, t]);
        let ok = verified.matches("succeeded. All").count();
        assert!(ok >= 1, "sstableverify {ks} {t}: {verified}");
        eprintln!("sstableverify -e {ks} {t}: {ok} sstables verified");
    }
    sh(&cass.join("start.sh"), &[]);
    compare("restarted");
    sh(&nodetool, &["flush", &ks]);
    sh(&nodetool, &["compact", &ks]);
    compare("compacted");
    // Past the 120 s TTLs: expired on both sides, and after a purge with gc
    // grace 0 nothing deleted comes back.
    let wait = Duration::from_secs(125).saturating_sub(loaded.elapsed());
    std::thread::sleep(wait);
    sh(&nodetool, &["compact", &ks]);
    let left = compare("expired and purged");
    assert!(
        left < live,
        "no row expired between the first comparison and this one ({live} rows, then {left}): \
         the first came after the 120 s TTLs ran out"
    );
    let drop = out.path().join("drop.cql");
    std::fs::write(&drop, format!("DROP KEYSPACE {ks};")).unwrap();
    py(&["run", "9042", drop.to_str().unwrap()]);
    common::stop_server(server);
}

/// The other direction: the same kind of data written into Cassandra itself
/// (one keyspace per compressor Cassandra ships: LZ4, Zstd, Snappy,
/// Deflate, none), flushed and snapshotted; `strata import
/// --from-cassandra` of each snapshot directory, the table created from its
/// schema.cql, must read exactly as Cassandra does.
#[test]
fn cassandra_snapshots_import_and_read_the_same() {
    let Some(cass) = cassandra_dir() else {
        eprintln!("skipped: set STRATA_CASSANDRA to a Cassandra 5.0.9 script directory");
        return;
    };
    let _turn = CASSANDRA.lock().unwrap_or_else(|e| e.into_inner());
    let nodetool = cass.join("nodetool.sh");
    sh(&cass.join("start.sh"), &[]);
    let compressors = [
        ("lz4", "{'class': 'LZ4Compressor'}"),
        (
            "zstd",
            "{'class': 'ZstdCompressor', 'compression_level': '5'}",
        ),
        (
            "snappy",
            "{'class': 'SnappyCompressor', 'chunk_length_in_kb': '64'}",
        ),
        ("deflate", "{'class': 'DeflateCompressor'}"),
        ("none", "{'enabled': 'false'}"),
    ];
    let dir = tempfile::tempdir().unwrap();
    let mut keyspaces = Vec::new();
    for (i, (tag, compression)) in compressors.iter().enumerate() {
        let ks = format!("strata_import_{tag}_{}", std::process::id());
        py(&["load", "9042", &(100 + i).to_string(), &ks, compression]);
        sh(&nodetool, &["flush", &ks]);
        sh(&nodetool, &["snapshot", "-t", "strata", &ks]);
        keyspaces.push(ks);
    }
    // Where that Cassandra keeps its tables (its yaml's data_file_directories).
    let data_root = std::env::var_os("STRATA_CASSANDRA_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from("/tmp/cassandra/data/data"));
    for ks in &keyspaces {
        for t in ["wide", "rev", "deep"] {
            let table_dir = std::fs::read_dir(data_root.join(ks))
                .unwrap()
                .map(|e| e.unwrap().path())
                .find(|p| {
                    p.file_name()
                        .unwrap()
                        .to_string_lossy()
                        .starts_with(&format!("{t}-"))
                })
                .unwrap();
            let snapshot = table_dir.join("snapshots").join("strata");
            let out = common::ok(
                &common::strata(
                    dir.path(),
                    &[
                        "import",
                        "--from-cassandra",
                        snapshot.to_str().unwrap(),
                        &format!("{ks}.{t}"),
                        "--json",
                    ],
                ),
                "import",
            );
            let summary = common::json(&out);
            assert_eq!(summary["table_created"], true, "{summary}");
            let versions: Vec<String> = summary["sstables"]
                .as_array()
                .unwrap()
                .iter()
                .map(|s| s["version"].as_str().unwrap().to_string())
                .collect();
            eprintln!("{ks}.{t}: imported versions {versions:?}");
        }
    }
    let (server, addr) = common::serve(dir.path(), &["--port", "0"]);
    let port = addr.port().to_string();
    for ks in &keyspaces {
        let r = py(&["compare", "9042", &port, ks, "wide", "rev", "deep"]);
        assert!(r.contains("equal"), "{ks}: {r}");
        eprintln!("{ks}: {}", r.trim());
        let drop = dir.path().join("drop.cql");
        std::fs::write(&drop, format!("DROP KEYSPACE {ks};")).unwrap();
        py(&["run", "9042", drop.to_str().unwrap()]);
    }
    common::stop_server(server);
}
