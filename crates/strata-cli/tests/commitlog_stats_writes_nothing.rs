//! Scenario: `strata commitlog stats` on a data directory whose commit log
//! holds writes not yet flushed (a crashed writer).
//!
//! docs/DURABILITY.md says it writes nothing, but it opened the directory as
//! its owner: took the lock, replayed the log, flushed, deleted segments and
//! started a new one, so running it to look changed what it looked at (and
//! could not run beside a writer). Now it reads the log and the manifests
//! only: every file is byte for byte the same afterwards, and it reports the
//! unflushed records the owner's next open will replay.

mod common;
use common::{json, ok, strata};

use std::collections::BTreeMap;
use std::path::Path;
use strata::clock::SimClock;
use strata::db::{Database, DbOptions};
use strata::types::Value;

/// Every file under `dir` with its contents (the directory is small).
fn listing(dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.insert(format!("{}/", p.display()), Vec::new());
            listing(&p, out);
        } else {
            out.insert(p.display().to_string(), std::fs::read(&p).unwrap());
        }
    }
}

#[test]
fn commitlog_stats_reads_and_writes_nothing() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("data");
    {
        let mut o = DbOptions::new(SimClock::fixed());
        o.concurrent_compactors = 0;
        let db = Database::open(&dir, o).unwrap();
        let t = db
            .create_table_cql("CREATE TABLE ks.t (k int PRIMARY KEY, v text)")
            .unwrap();
        for k in 0..50 {
            t.insert(
                &[("k", Value::Int(k)), ("v", Value::Text(format!("v{k}")))],
                &Default::default(),
            )
            .unwrap();
        }
        t.flush().unwrap();
        for k in 50..80 {
            t.insert(
                &[("k", Value::Int(k)), ("v", Value::Text(format!("v{k}")))],
                &Default::default(),
            )
            .unwrap();
        }
        // Dropped without close: the last 30 writes are only in the log.
        drop(t);
        drop(db);
    }
    let mut before = BTreeMap::new();
    listing(&dir, &mut before);
    let out = strata(&dir, &["commitlog", "stats", "--json"]);
    let report = json(&ok(&out, "commitlog stats"));
    let mut after = BTreeMap::new();
    listing(&dir, &mut after);
    assert_eq!(before, after, "commitlog stats changed the data directory");
    assert_eq!(
        report["unflushed"]["records"].as_u64(),
        Some(30),
        "{report}"
    );
    assert!(report["problem"].is_null(), "{report}");
    assert!(
        !report["segments"].as_array().unwrap().is_empty(),
        "{report}"
    );
    // The text form says the same.
    let out = strata(&dir, &["commitlog", "stats"]);
    let text = String::from_utf8(ok(&out, "commitlog stats")).unwrap();
    assert!(text.contains("Not yet flushed: 30 records"), "{text}");
    let mut again = BTreeMap::new();
    listing(&dir, &mut again);
    assert_eq!(before, again);
}
