//! The operator's path from LZ4 to Zstd: `alter-table` changes the table's
//! compression (new sstables only), `tablestats` counts the sstables still on
//! the old setting, `upgradesstables --dry-run` estimates and writes nothing,
//! `upgradesstables` rewrites them, and a bad option changes nothing.

mod common;

use common::*;

#[test]
fn alter_table_then_upgradesstables() {
    let dir = tempfile::tempdir().expect("tempdir");
    let data = dir.path().join("data");
    ok(
        &strata(&data, &["stress", "write", "-n", "3000", "--no-tablestats"]),
        "stress write",
    );
    ok(&strata(&data, &["flush"]), "flush");
    let out = strata(
        &data,
        &[
            "alter-table",
            "stress.standard1",
            "compression = {'class': 'BrotliCompressor'}",
        ],
    );
    assert!(!out.status.success(), "an unknown compressor is refused");
    assert!(text(&out).contains("BrotliCompressor"), "{}", text(&out));
    ok(
        &strata(
            &data,
            &[
                "alter-table",
                "stress.standard1",
                "compression = {'class': 'ZstdCompressor', 'compression_level': 3}",
            ],
        ),
        "alter-table",
    );
    let stats = json(&ok(
        &strata(&data, &["tablestats", "stress.standard1", "--json"]),
        "tablestats",
    ));
    let t = &stats[0];
    let stale = t["sstables_with_other_compression"]
        .as_u64()
        .expect("count");
    assert!(stale >= 1, "{t}");
    let files = sstables(&data.join("stress").join("standard1"));

    let dry = json(&ok(
        &strata(
            &data,
            &[
                "upgradesstables",
                "stress.standard1",
                "--dry-run",
                "--estimate-all",
                "--json",
            ],
        ),
        "dry run",
    ));
    assert_eq!(dry[0]["dry_run"], true);
    assert_eq!(
        dry[0]["candidates"].as_array().map(Vec::len),
        Some(stale as usize)
    );
    // none, LZ4, zstd 1/3/9, and zstd and LZ4 with a dictionary trained on
    // the sample (the table has none yet).
    assert_eq!(
        dry[0]["setting_estimates"].as_array().map(Vec::len),
        Some(7),
        "{dry}"
    );
    assert_eq!(
        sstables(&data.join("stress").join("standard1")),
        files,
        "a dry run writes nothing"
    );

    let run = json(&ok(
        &strata(&data, &["upgradesstables", "stress.standard1", "--json"]),
        "upgradesstables",
    ));
    assert_eq!(
        run[0]["rewritten"].as_array().map(Vec::len),
        Some(stale as usize)
    );
    let stats = json(&ok(
        &strata(&data, &["tablestats", "stress.standard1", "--json"]),
        "tablestats",
    ));
    assert_eq!(stats[0]["sstables_with_other_compression"], 0);
    // A dictionary trained on demand: stored, or declined with both ratios.
    let trained = json(&ok(
        &strata(
            &data,
            &["traincompressiondictionary", "stress.standard1", "--json"],
        ),
        "traincompressiondictionary",
    ));
    assert!(
        trained["ratio_with_dictionary"].as_f64() > Some(0.0)
            && trained["ratio_without_dictionary"].as_f64() > Some(0.0),
        "{trained}"
    );
    let refused = strata(&data, &["traincompressiondictionary", "nosuch.table"]);
    assert!(!refused.status.success());
    let read = strata(&data, &["stress", "read", "-n", "3000", "--no-tablestats"]);
    assert!(
        read.status.success(),
        "every row reads back: {}",
        text(&read)
    );
}
