//! `strata sstable import` adopts copied-in sstables only after checking their
//! column signature (from each file's identity header) and reading every
//! partition; a file with other column types is refused and changes nothing.
//! `strata sstable scrub` salvages a file whose footer is destroyed into one
//! that imports. `strata sstable metadata` shows the identity the checks use.

mod common;
use common::{json, ok, sstables, strata};

use serde_json::Value;

const OPS: u64 = 500;

/// `CREATE TABLE` for `name` with the columns an identity records, with the
/// type of `retype` (if any) replaced.
fn create_cql(identity: &Value, name: &str, retype: Option<(&str, &str)>) -> String {
    let mut cols = Vec::new();
    let (mut pk, mut ck) = (Vec::new(), Vec::new());
    for c in identity["columns"].as_array().expect("columns") {
        let n = c["name"].as_str().expect("name");
        let mut ty = c["cql_type"].as_str().expect("type");
        if let Some((col, other)) = retype {
            if col == n {
                ty = other;
            }
        }
        let role = c["role"].as_str().expect("role");
        match role {
            "partition_key" => pk.push(n.to_string()),
            "clustering_asc" => ck.push(n.to_string()),
            "regular" => {}
            other => panic!("test does not handle role {other}"),
        }
        cols.push(format!("{n} {ty}"));
    }
    format!(
        "CREATE TABLE {name} ({}, PRIMARY KEY (({}), {}))",
        cols.join(", "),
        pk.join(", "),
        ck.join(", ")
    )
}

#[test]
fn import_checks_columns_and_salvaged_files_import() {
    let dir = tempfile::tempdir().expect("tempdir");
    let source = dir.path().join("source");
    let n = OPS.to_string();
    ok(
        &strata(&source, &["stress", "write", "-n", &n, "--no-tablestats"]),
        "stress write",
    );
    let files = sstables(&source.join("stress").join("standard1"));
    assert_eq!(files.len(), 1, "{files:?}");
    let file = files[0].to_str().expect("utf-8").to_string();
    let meta = json(&ok(
        &strata(&source, &["sstable", "metadata", &file, "--json"]),
        "sstable metadata",
    ));
    assert_eq!(
        meta["format_version"].as_u64(),
        Some(u64::from(strata::sstable::FORMAT_VERSION)),
        "{meta}"
    );
    assert_eq!(meta["partition_count"].as_u64(), Some(OPS), "{meta}");
    // One row per partition, its clustering `ck = 0` in every one: a span
    // of one clustering, nothing beyond the rows.
    let coverage = &meta["clustering_coverage"];
    assert_eq!(coverage["min_clustering_hex"], "80000000", "{meta}");
    assert_eq!(coverage["max_clustering_hex"], "80000000", "{meta}");
    assert_eq!(coverage["beyond_rows"], false, "{meta}");
    let identity = &meta["identity"];
    assert_eq!(identity["keyspace"], "stress");
    assert_eq!(identity["table"], "standard1");

    // A fresh data directory with the same table, and one with ck as text.
    let target = dir.path().join("target");
    ok(
        &strata(
            &target,
            &[
                "create-table",
                &create_cql(identity, "stress.standard1", None),
            ],
        ),
        "create table",
    );
    ok(
        &strata(
            &target,
            &[
                "create-table",
                &create_cql(identity, "stress.other", Some(("ck", "text"))),
            ],
        ),
        "create other table",
    );

    // Other column types: refused, naming the column, nothing adopted.
    let out = strata(&target, &["sstable", "import", "stress.other", &file]);
    assert!(!out.status.success(), "import with other types must fail");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("column ck is int in the file, text in the schema"),
        "{err}"
    );
    assert!(sstables(&target.join("stress").join("other")).is_empty());

    // Matching columns: adopted; every row reads back.
    let report = json(&ok(
        &strata(
            &target,
            &["sstable", "import", "stress.standard1", &file, "--json"],
        ),
        "sstable import",
    ));
    assert_eq!(report["imported"].as_array().map(Vec::len), Some(1));
    assert_eq!(report["imported"][0][2].as_u64(), Some(OPS), "{report}");
    ok(
        &strata(&target, &["stress", "read", "-n", &n, "--no-tablestats"]),
        "stress read after import",
    );

    // A copy whose footer is destroyed does not import, but salvages whole.
    let salvage = dir.path().join("salvage");
    std::fs::create_dir(&salvage).expect("mkdir");
    let broken = salvage.join("broken-Data.db");
    let mut bytes = std::fs::read(&files[0]).expect("read");
    let len = bytes.len();
    bytes.truncate(len - 40);
    std::fs::write(&broken, &bytes).expect("write");
    let broken = broken.to_str().expect("utf-8").to_string();
    let out = strata(&target, &["sstable", "import", "stress.other", &broken]);
    assert!(!out.status.success());
    let out_dir = salvage.join("out");
    std::fs::create_dir(&out_dir).expect("mkdir");
    let r = json(&ok(
        &strata(
            &target,
            &[
                "sstable",
                "scrub",
                &broken,
                "--out",
                out_dir.to_str().expect("utf-8"),
                "--generation",
                "9",
                "--json",
            ],
        ),
        "sstable scrub",
    ));
    assert_eq!(r["salvage"]["tail_intact"], Value::Bool(false), "{r}");
    assert_eq!(
        r["salvage"]["counts"]["partitions_recovered"].as_u64(),
        Some(OPS),
        "{r}"
    );
    let output = r["output"].as_str().expect("output").to_string();
    assert!(output.ends_with("strata-9-Data.db"), "{output}");
    let fresh = dir.path().join("fresh");
    ok(
        &strata(
            &fresh,
            &[
                "create-table",
                &create_cql(identity, "stress.standard1", None),
            ],
        ),
        "create table",
    );
    ok(
        &strata(&fresh, &["sstable", "import", "stress.standard1", &output]),
        "import salvaged",
    );
    ok(
        &strata(&fresh, &["stress", "read", "-n", &n, "--no-tablestats"]),
        "stress read after salvage",
    );
}
