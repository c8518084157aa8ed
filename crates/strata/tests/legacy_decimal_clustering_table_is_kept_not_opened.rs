//! A table with a decimal clustering column created before decimal keys compared
//! by value (a version-1 `schema.json`) holds keys in the old encoding, in its
//! sstables and in the commit log. Opening it would read `1.5` and `1.50` as one
//! key in some places and two in others, so it is refused with a clear reason,
//! while its files and its unreplayed commit-log records are kept untouched and
//! every other table works (issue 10, item 7; docs/FORMAT.md).

mod common;

use std::collections::BTreeMap;
use std::path::Path;
use strata::cql::literal::parse_value;
use strata::schema::WriteOptions;
use strata::types::{CqlType, Value};

/// Every file under `dir` (relative path → bytes), the lock file excepted.
fn files(dir: &Path) -> BTreeMap<String, Vec<u8>> {
    fn walk(root: &Path, dir: &Path, out: &mut BTreeMap<String, Vec<u8>>) {
        for e in std::fs::read_dir(dir).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else {
                let rel = p.strip_prefix(root).unwrap().to_string_lossy().to_string();
                out.insert(rel, std::fs::read(&p).unwrap());
            }
        }
    }
    let mut out = BTreeMap::new();
    walk(dir, dir, &mut out);
    out.remove("LOCK");
    out
}

fn legacy_files(all: &BTreeMap<String, Vec<u8>>) -> BTreeMap<String, Vec<u8>> {
    all.iter()
        .filter(|(k, _)| k.starts_with("ks/prices/") || k.starts_with("commitlog/"))
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}

#[test]
fn a_pre_fix_decimal_clustering_table_is_refused_and_kept() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    {
        let db = common::open(data);
        let prices = db
            .create_table_cql(
                "CREATE TABLE ks.prices (k int, price decimal, v text, PRIMARY KEY (k, price))",
            )
            .unwrap();
        let t = db.create_table_cql(common::CREATE).unwrap();
        for (i, p) in ["1.5", "2.25", "10"].iter().enumerate() {
            prices
                .insert(
                    &[
                        ("k", Value::Int(1)),
                        ("price", parse_value(&CqlType::Decimal, p).unwrap()),
                        ("v", Value::Text(format!("row {i}"))),
                    ],
                    &WriteOptions::default(),
                )
                .unwrap();
            if i == 0 {
                prices.flush().unwrap();
            }
        }
        common::write(&t, 0..50);
        t.flush().unwrap();
        // Dropped without close: two rows of ks.prices live only in the commit log.
        drop((prices, t));
        drop(db);
    }
    // Make the catalog look as the build before the fix wrote it.
    let schema_path = data.join("schema.json");
    let text = std::fs::read_to_string(&schema_path).unwrap();
    let mut json: serde_json::Value = serde_json::from_str(&text).unwrap();
    json["format_version"] = 1.into();
    std::fs::write(&schema_path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    let before = legacy_files(&files(data));
    assert!(
        before.keys().any(|k| k.ends_with("-Data.db")),
        "{:?}",
        before.keys()
    );

    for round in 0..2 {
        let db = common::open(data);
        assert!(
            db.warnings()
                .iter()
                .any(|w| w.contains("ks.prices") && w.contains("decimal")),
            "round {round}: {:?}",
            db.warnings()
        );
        let err = db.table("ks", "prices").unwrap_err();
        assert!(
            matches!(err, strata::Error::NeedsRepair(_)) && err.to_string().contains("1.50"),
            "round {round}: {err}"
        );
        let t = db.table("ks", "t").unwrap();
        assert_eq!(common::readable(&t, 0..50), 50, "round {round}");
        common::write(&t, 50..60);
        if round == 0 {
            // A schema change persists the catalog as version 2; the refusal must
            // survive it.
            db.create_table_cql("CREATE TABLE ks.other (k int PRIMARY KEY, v text)")
                .unwrap();
        }
        drop(t);
        db.close().unwrap();
        let after = legacy_files(&files(data));
        for (name, bytes) in &before {
            if name.starts_with("commitlog/") && !name.ends_with(".log") {
                continue;
            }
            if name.starts_with("commitlog/") {
                // Segments may be sealed or gain records of other tables, but the
                // one holding ks.prices's unflushed rows must still be there.
                assert!(after.contains_key(name), "round {round}: {name} deleted");
                continue;
            }
            assert_eq!(
                after.get(name),
                Some(bytes),
                "round {round}: {name} changed"
            );
        }
    }
    let text = std::fs::read_to_string(&schema_path).unwrap();
    let json: serde_json::Value = serde_json::from_str(&text).unwrap();
    assert_eq!(json["format_version"], 2);
    assert_eq!(json["legacy_decimal_clustering"][0], "ks.prices", "{json}");
}
