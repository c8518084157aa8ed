//! `strata stress user --profile FILE`: a cassandra-stress YAML profile
//! creates its keyspace and table, an insert-only run writes each partition's
//! clustering rows (the product of the `cluster` counts), a query-only run
//! with the same seed finds a row for every query it binds from those rows,
//! a mixed run reports writes and reads, and `--graph` writes the report page.
//! A profile with a key Strata does not read, or a query binding something
//! that is not a column, is refused in one line before anything runs.

mod common;

const PROFILE: &str = "\
keyspace: shop
keyspace_definition: |
  CREATE KEYSPACE shop WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};
table: orders
table_definition: |
  CREATE TABLE orders (
    customer bigint,
    placed timestamp,
    line int,
    sku text,
    price decimal,
    note blob,
    PRIMARY KEY ((customer), placed, line)
  )
columnspec:
  - name: customer
    population: uniform(1..1B)
  - name: placed
    cluster: fixed(3)
  - name: line
    cluster: fixed(2)
  - name: sku
    size: fixed(12)
  - name: note
    size: uniform(10..50)
insert:
  partitions: fixed(1)
  select: fixed(1)/1
  batchtype: UNLOGGED
queries:
  latest:
    cql: SELECT * FROM orders WHERE customer = ? LIMIT 1
    fields: samerow
  one_line:
    cql: SELECT sku FROM orders WHERE customer = ? AND placed = ? AND line = ?
    fields: samerow
";

fn line_value(out: &str, label: &str) -> u64 {
    out.lines()
        .find(|l| l.starts_with(label))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no '{label}' line in:\n{out}"))
}

#[test]
fn stress_user_profile_runs_its_queries() {
    let tmp = tempfile::tempdir().expect("tempdir");
    let dir = tmp.path().join("d");
    let profile = tmp.path().join("orders.yaml");
    std::fs::write(&profile, PROFILE).expect("profile");
    let profile = profile.to_str().expect("utf-8 path");
    let graph = tmp.path().join("run.html");
    let graph = graph.to_str().expect("utf-8 path");

    // One run of the profile: its stdout.
    let user_run = |ratio: &str, n: &str, extra: &[&str], what: &str| {
        let mut args = vec![
            "stress",
            "user",
            "--profile",
            profile,
            "--ratio",
            ratio,
            "-n",
            n,
            "--no-tablestats",
        ];
        args.extend_from_slice(extra);
        String::from_utf8_lossy(&common::ok(&common::strata(&dir, &args), what)).to_string()
    };

    // Inserts: 100 partitions of 3 x 2 rows each.
    let text = user_run("insert=1", "100", &["--graph", graph], "insert run");
    assert_eq!(line_value(&text, "Writes"), 100, "{text}");
    assert_eq!(line_value(&text, "Total rows"), 600, "{text}");
    let page = std::fs::read_to_string(graph).expect("report page");
    assert!(page.contains("<svg") && page.contains("operations per second"));

    let count = common::strata(&dir, &["cql", "-e", "SELECT COUNT(*) FROM shop.orders"]);
    let count = String::from_utf8_lossy(&common::ok(&count, "count")).to_string();
    assert!(count.contains("600"), "{count}");

    // Queries only, the same seed and partitions: every one finds its row.
    let text = user_run("latest=1,one_line=1", "100", &[], "query run");
    assert_eq!(line_value(&text, "Reads"), 100, "{text}");
    assert_eq!(line_value(&text, "Queries returning no rows"), 0, "{text}");
    assert_eq!(line_value(&text, "Total rows"), 100, "{text}");

    // A mix: both kinds, counted apart.
    let text = user_run("insert=1,latest=3", "200", &[], "mixed run");
    let (w, r) = (line_value(&text, "Writes"), line_value(&text, "Reads"));
    assert_eq!(w + r, 200, "{text}");
    assert!(w > 0 && r > w, "{text}");

    // Refusals, each one line, nothing run.
    let refused = |yaml: &str, ratio: &str, expect: &str| {
        let p = tmp.path().join("bad.yaml");
        std::fs::write(&p, yaml).expect("profile");
        let out = common::strata(
            &dir,
            &[
                "stress",
                "user",
                "--profile",
                p.to_str().expect("path"),
                "--ratio",
                ratio,
                "-n",
                "10",
            ],
        );
        assert!(!out.status.success(), "{expect}: ran");
        let err = String::from_utf8_lossy(&out.stderr).to_string();
        assert!(err.contains(expect), "{expect}: {err}");
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    };
    refused(
        &format!("{PROFILE}token_range_queries: {{}}\n"),
        "insert=1",
        "'token_range_queries' is not a key Strata reads",
    );
    refused(
        &PROFILE.replace("LIMIT 1\n", "LIMIT ?\n"),
        "latest=1",
        "which is not a column",
    );
    refused(
        PROFILE,
        "insert=1,nosuch=2",
        "'nosuch' is not insert or a query",
    );
    let out = common::strata(&dir, &["stress", "user", "-n", "10"]);
    assert!(!out.status.success(), "user without --profile ran");
    let out = common::strata(
        &dir,
        &["stress", "user", "--profile", profile, "--columns", "3"],
    );
    let err = String::from_utf8_lossy(&out.stderr).to_string();
    assert!(err.contains("--columns shapes the stress table"), "{err}");
}
