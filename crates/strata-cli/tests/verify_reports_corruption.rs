//! A flipped byte in an sstable data chunk: `strata verify` exits non-zero naming
//! the file and the chunk's offset; `strata scrub` drops exactly the partitions it
//! cannot read, keeps the rest, and snapshots the originals first; afterwards
//! `verify` is clean and `stress read` misses exactly the dropped rows.

mod common;
use common::{json, ok, sstables, strata};

use serde_json::Value;
use std::path::Path;

const OPS: u64 = 3000;

fn flip(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).expect("read sstable");
    bytes[offset as usize] ^= 0x41;
    std::fs::write(path, bytes).expect("write sstable");
}

#[test]
fn verify_names_the_damage_and_scrub_keeps_every_readable_partition() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    let n = OPS.to_string();
    ok(
        &strata(&data, &["stress", "write", "-n", &n, "--no-tablestats"]),
        "stress write",
    );
    let table_dir = data.join("stress").join("standard1");
    let files = sstables(&table_dir);
    assert_eq!(files.len(), 1, "{files:?}");
    let sstable = files[0].clone();
    let file_name = sstable
        .file_name()
        .and_then(|n| n.to_str())
        .expect("file name")
        .to_string();
    let original_len = std::fs::metadata(&sstable).expect("metadata").len();

    let clean = strata(&data, &["verify", "--json"]);
    assert!(json(&ok(&clean, "verify (clean)"))["clean"] == Value::Bool(true));

    // Chunk 0 starts right after the identity header (format version 2): 100
    // bytes on is inside it. A second flip in the middle makes scrub
    // resynchronise after a bad region that is not the first.
    let meta = json(&ok(
        &strata(
            &data,
            &[
                "sstable",
                "metadata",
                sstable.to_str().expect("utf-8"),
                "--json",
            ],
        ),
        "sstable metadata",
    ));
    let chunk0 = meta["first_chunk_offset"]
        .as_u64()
        .expect("first chunk offset");
    flip(&sstable, chunk0 + 100);
    flip(&sstable, original_len / 2);

    let text = strata(&data, &["verify"]);
    assert!(!text.status.success(), "verify must fail on corruption");
    let stdout = String::from_utf8_lossy(&text.stdout);
    assert!(
        stdout.contains(&file_name) && stdout.contains(&format!("@ offset {chunk0}:")),
        "verify names file and offset:\n{stdout}"
    );
    let out = strata(&data, &["verify", "--json"]);
    assert!(!out.status.success());
    let v = json(&out.stdout);
    assert_eq!(v["clean"], Value::Bool(false));
    let problems = v["tables"][0]["problems"].as_array().expect("problems");
    assert_eq!(problems.len(), 2, "{v}");
    assert!(problems
        .iter()
        .all(|p| p["path"].as_str().is_some_and(|s| s.ends_with(&file_name))));
    assert_eq!(problems[0]["offset"].as_u64(), Some(chunk0), "{v}");
    assert!(problems[1]["offset"]
        .as_u64()
        .is_some_and(|o| o > 0 && o <= original_len / 2));

    let out = strata(
        &data,
        &["scrub", "stress.standard1", "--snapshot", "--json"],
    );
    let report = json(&ok(&out, "scrub"));
    let r = &report[0];
    let kept = r["partitions_kept"].as_u64().expect("kept");
    let dropped = r["partitions_dropped"].as_u64().expect("dropped");
    assert!(dropped > 0 && kept > 0, "{r}");
    assert_eq!(kept + dropped, OPS, "{r}");
    let regions = r["sstables"][0]["bad_regions"].as_array().expect("regions");
    assert_eq!(regions.len(), 2, "{r}");
    assert_eq!(regions[0]["offset"].as_u64(), Some(chunk0));
    let snapshot = r["snapshot"].as_str().expect("a snapshot was taken");
    assert!(snapshot.starts_with("pre-scrub-"));
    let snap_file = table_dir.join("snapshots").join(snapshot).join(&file_name);
    assert_eq!(
        std::fs::metadata(&snap_file)
            .expect("original kept in snapshot")
            .len(),
        original_len
    );

    ok(&strata(&data, &["verify"]), "verify after scrub");

    let listed = json(&ok(
        &strata(&data, &["listsnapshots", "--json"]),
        "listsnapshots",
    ));
    assert_eq!(listed.as_array().map(Vec::len), Some(1), "{listed}");
    assert!(listed[0]["true_size_bytes"].as_u64().unwrap_or(0) >= original_len);

    // Every dropped partition held one row: the read misses exactly those.
    let read_json = dir.path().join("read.json");
    let out = strata(
        &data,
        &[
            "stress",
            "read",
            "-n",
            &n,
            "--no-tablestats",
            "--json",
            read_json.to_str().expect("utf-8"),
        ],
    );
    assert!(
        !out.status.success(),
        "read reports the dropped rows as misses"
    );
    let s: Value =
        serde_json::from_str(&std::fs::read_to_string(&read_json).expect("read summary"))
            .expect("JSON");
    assert_eq!(s["misses"].as_u64(), Some(dropped), "{s}");
    assert_eq!(s["errors"].as_u64(), Some(0), "{s}");

    ok(
        &strata(&data, &["clearsnapshot", "--all"]),
        "clearsnapshot --all",
    );
    let listed = json(&ok(
        &strata(&data, &["listsnapshots", "--json"]),
        "listsnapshots",
    ));
    assert_eq!(listed.as_array().map(Vec::len), Some(0));
}

#[test]
fn scrub_no_snapshot_takes_none_and_snapshot_commands_round_trip() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    ok(
        &strata(&data, &["stress", "write", "-n", "500", "--no-tablestats"]),
        "stress write",
    );
    let r = json(&ok(
        &strata(&data, &["scrub", "--no-snapshot", "--json"]),
        "scrub",
    ));
    assert_eq!(r[0]["snapshot"], Value::Null);
    // No snapshot is the default too.
    let r = json(&ok(&strata(&data, &["scrub", "--json"]), "scrub"));
    assert_eq!(r[0]["snapshot"], Value::Null);
    assert_eq!(r[0]["warnings"].as_array().map(Vec::len), Some(0));
    assert_eq!(r[0]["partitions_kept"].as_u64(), Some(500));
    ok(
        &strata(&data, &["snapshot", "-t", "before-upgrade", "stress"]),
        "snapshot",
    );
    let out = strata(&data, &["snapshot", "-t", "before-upgrade", "stress"]);
    assert!(!out.status.success(), "a snapshot name cannot be reused");
    let listed = json(&ok(
        &strata(&data, &["listsnapshots", "--json"]),
        "listsnapshots",
    ));
    assert_eq!(listed[0]["name"], "before-upgrade");
    let out = strata(&data, &["clearsnapshot", "-t", "nope"]);
    assert!(!out.status.success(), "clearing an unknown snapshot fails");
    ok(
        &strata(
            &data,
            &["clearsnapshot", "-t", "before-upgrade", "stress.standard1"],
        ),
        "clearsnapshot",
    );
}
