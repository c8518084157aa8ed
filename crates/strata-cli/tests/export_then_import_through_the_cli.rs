//! `strata export --format cassandra` then `strata import --from-cassandra`
//! into an empty data directory: the table is created from the export's
//! schema.cql and every row reads back the same (values, WRITETIME, TTL);
//! `strata sstable import` of the exported Data.db alone reads the same; an
//! import of a damaged copy is refused and changes nothing.

mod common;

fn cql(dir: &std::path::Path, statements: &str) -> String {
    common::text(&common::strata(dir, &["cql", "-e", statements]))
}

#[test]
fn an_exported_table_imports_into_a_fresh_directory() {
    let src = tempfile::tempdir().unwrap();
    let dst = tempfile::tempdir().unwrap();
    let out = tempfile::tempdir().unwrap();
    let setup = "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}; \
        CREATE TABLE ks.t (pk int, ck text, v bigint, l list<int>, s text static, PRIMARY KEY (pk, ck)) \
          WITH CLUSTERING ORDER BY (ck DESC) AND gc_grace_seconds = 3600; \
        INSERT INTO ks.t (pk, ck, v, l, s) VALUES (1, 'a', 10, [1, 2], 'x') USING TIMESTAMP 1000; \
        INSERT INTO ks.t (pk, ck, v) VALUES (1, 'b', 11) USING TTL 86400; \
        UPDATE ks.t SET l = l + [3] WHERE pk = 1 AND ck = 'a'; \
        DELETE FROM ks.t WHERE pk = 1 AND ck > 'c'; \
        INSERT INTO ks.t (pk, ck, v) VALUES (2, 'z', 12); \
        DELETE FROM ks.t WHERE pk = 3;";
    cql(src.path(), setup);
    let table_out = out.path().join("ks").join("t");
    let o = out.path().to_str().unwrap();
    common::ok(
        &common::strata(
            src.path(),
            &["export", "ks.t", "--format", "cassandra", "--out", o],
        ),
        "export",
    );
    assert!(table_out.join("schema.cql").exists());
    let imported = common::ok(
        &common::strata(
            dst.path(),
            &[
                "import",
                "--from-cassandra",
                table_out.to_str().unwrap(),
                "ks.t",
                "--json",
            ],
        ),
        "import",
    );
    let summary = common::json(&imported);
    assert_eq!(summary["partitions"], 3, "{summary}");
    let q = "SELECT pk, ck, v, l, s, writetime(v) FROM ks.t";
    let a = cql(src.path(), q);
    let b = cql(dst.path(), q);
    assert!(a.contains("(3 rows)"), "{a}");
    assert_eq!(a, b);
    // The TTL came across: 86400 s less the seconds the test took.
    let ttl = cql(
        dst.path(),
        "SELECT ttl(v) FROM ks.t WHERE pk = 1 AND ck = 'b'",
    );
    let n: u32 = ttl
        .lines()
        .filter_map(|l| l.trim().parse().ok())
        .next()
        .unwrap_or_else(|| panic!("{ttl}"));
    assert!((86_000..=86_400).contains(&n), "{ttl}");
    // The clustering order came across with the schema.
    let described = cql(dst.path(), "DESCRIBE TABLE ks.t");
    assert!(
        described.contains("CLUSTERING ORDER BY (ck DESC)"),
        "{described}"
    );

    // `strata sstable import` takes a Cassandra Data.db too. The same data
    // a second time reads the same (same timestamps), and the table now
    // holds one more sstable.
    let data = std::fs::read_dir(&table_out)
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.to_string_lossy().ends_with("-Data.db"))
        .unwrap();
    let single = common::ok(
        &common::strata(
            dst.path(),
            &[
                "sstable",
                "import",
                "ks.t",
                data.to_str().unwrap(),
                "--json",
            ],
        ),
        "sstable import",
    );
    let single = common::json(&single);
    assert_eq!(single["sstables"].as_array().unwrap().len(), 1, "{single}");
    assert_eq!(single["sstables"][0]["version"], "nb", "{single}");
    assert_eq!(single["partitions"], 3, "{single}");
    assert_eq!(cql(dst.path(), q), a);

    // A damaged copy is refused whole and the table keeps what it had.
    let mut bytes = std::fs::read(&data).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x55;
    std::fs::write(&data, &bytes).unwrap();
    let refused = common::strata(
        dst.path(),
        &[
            "import",
            "--from-cassandra",
            table_out.to_str().unwrap(),
            "ks.t",
        ],
    );
    assert!(!refused.status.success());
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(err.contains("damaged") || err.contains("CRC"), "{err}");
    assert_eq!(cql(dst.path(), q), a);
}
