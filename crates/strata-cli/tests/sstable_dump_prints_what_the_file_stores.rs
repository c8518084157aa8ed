//! `strata sstable dump` prints what an sstable stores, in `sstabledump`'s
//! shape: a partition deletion, a static row, row liveness with TTL, a cell
//! tombstone, collection elements by their path, a range tombstone's bounds
//! placed after the rows before it, composite keys selected with `-k a:b`,
//! raw timestamps with `-t`, the table form beside a file alone, and a clear
//! error for a key of the wrong type.

mod common;
use common::{ok, strata};
use serde_json::Value;

#[test]
fn sstable_dump_prints_what_the_file_stores() {
    let dir = tempfile::tempdir().expect("tempdir");
    let d = dir.path();
    ok(
        &strata(
            d,
            &[
                "cql",
                "-e",
                "CREATE KEYSPACE ks WITH replication = {'class':'SimpleStrategy','replication_factor':1};
                 CREATE TABLE ks.t (k int, c text, v int, m map<text,int>, s int static, PRIMARY KEY (k, c));
                 INSERT INTO ks.t (k, c, v, m, s) VALUES (1, 'a', 10, {'x': 1}, 7);
                 INSERT INTO ks.t (k, c, v) VALUES (1, 'b', 20) USING TTL 1000;
                 INSERT INTO ks.t (k, c, v) VALUES (1, 'd', 40);
                 DELETE FROM ks.t WHERE k = 1 AND c > 'b';
                 DELETE v FROM ks.t WHERE k = 1 AND c = 'a';
                 DELETE FROM ks.t WHERE k = 3;
                 CREATE TABLE ks.two (a int, b text, v int, PRIMARY KEY ((a, b)));
                 INSERT INTO ks.two (a, b, v) VALUES (1, 'x', 5);
                 INSERT INTO ks.two (a, b, v) VALUES (1, 'y', 6);",
            ],
        ),
        "cql",
    );
    ok(&strata(d, &["flush"]), "flush");

    let out = ok(&strata(d, &["sstable", "dump", "ks.t"]), "dump ks.t");
    let files: Value = serde_json::from_slice(&out).expect("JSON");
    let files = files.as_array().expect("one entry per sstable");
    assert_eq!(files.len(), 1, "{files:?}");
    let parts = files[0]["partitions"].as_array().expect("partitions");
    let part = |k: &str| {
        parts
            .iter()
            .find(|p| p["partition"]["key"][0] == k)
            .unwrap_or_else(|| panic!("partition {k} in {parts:?}"))
    };

    // The deleted partition is there, with its deletion and no rows.
    let p3 = part("3");
    assert!(p3["partition"]["deletion_info"]["marked_deleted"]
        .as_str()
        .is_some_and(|t| t.ends_with('Z')));
    assert_eq!(p3["rows"], Value::Array(vec![]));

    let rows = part("1")["rows"].as_array().expect("rows").clone();
    let kinds: Vec<String> = rows
        .iter()
        .map(|r| match r["type"].as_str() {
            Some("range_tombstone_bound") => {
                if r.get("start").is_some() {
                    "start".into()
                } else {
                    "end".into()
                }
            }
            Some("row") => format!("row {}", r["clustering"][0].as_str().unwrap_or("?")),
            other => other.unwrap_or("?").to_string(),
        })
        .collect();
    // Nothing merged: row d is still stored under the range that deletes it,
    // and the bounds sit where the range starts and ends.
    assert_eq!(
        kinds,
        ["static_block", "row a", "row b", "start", "row d", "end"],
        "{rows:?}"
    );
    assert_eq!(rows[0]["cells"][0]["name"], "s");
    assert_eq!(rows[0]["cells"][0]["value"], 7);
    let a = &rows[1]["cells"];
    let v = a
        .as_array()
        .and_then(|c| c.iter().find(|c| c["name"] == "v"))
        .expect("v's tombstone");
    assert!(v.get("value").is_none() && v["deletion_info"]["local_delete_time"].is_string());
    let elem = a
        .as_array()
        .and_then(|c| {
            c.iter()
                .find(|c| c["name"] == "m" && c.get("path").is_some())
        })
        .expect("the map element");
    assert_eq!(elem["path"][0], "x");
    assert_eq!(elem["value"], 1);
    assert_eq!(rows[2]["liveness_info"]["ttl"], 1000);
    assert_eq!(rows[2]["cells"][0]["ttl"], 1000);
    assert_eq!(rows[3]["start"]["type"], "exclusive");
    assert_eq!(rows[3]["start"]["clustering"][0], "b");

    // A file alone, one composite partition, raw timestamps.
    let file = common::sstables(&d.join("ks").join("two"))
        .pop()
        .expect("ks.two's sstable");
    let file = file.to_string_lossy().to_string();
    let out = ok(
        &common::strata_without_dir(&["sstable", "dump", &file, "-k", "1:y", "-t"]),
        "dump FILE -k",
    );
    let one: Value = serde_json::from_slice(&out).expect("JSON");
    assert_eq!(one.as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one[0]["partition"]["key"], serde_json::json!(["1", "y"]));
    assert!(
        one[0]["rows"][0]["liveness_info"]["tstamp"].is_number(),
        "{one}"
    );
    assert_eq!(one[0]["rows"][0]["cells"][0]["value"], 6);

    // Bad keys: one clear line each, nothing printed.
    for (key, says) in [("1", "joined by ':'"), ("x:y", "x")] {
        let out = common::strata_without_dir(&["sstable", "dump", &file, "-k", key]);
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(!out.status.success() && err.contains(says), "{key}: {err}");
        assert!(out.stdout.is_empty(), "{key}: printed before the error");
    }
}
