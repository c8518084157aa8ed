//! `strata cql HOST PORT` against `strata serve`: a script of DDL, writes of
//! several types, deletes, slices in both orders, aggregates and a read of
//! 250 rows (three pages of the shell's 100) prints exactly what the same
//! script prints embedded on a fresh data directory, errors included (same
//! message, same line, same exit status). Data-directory options are refused
//! with a host, and a closed port is a one-line connection error.

mod common;

use std::process::{Command, Output};

fn script() -> String {
    let mut s = String::from(
        "CREATE KEYSPACE ks WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1};\n\
         USE ks;\n\
         CREATE TABLE t (k int, c int, v text, d date, b blob, f double, PRIMARY KEY (k, c)) \
           WITH CLUSTERING ORDER BY (c DESC) AND compaction = {'class': 'LeveledCompactionStrategy'};\n\
         INSERT INTO t (k, c, v, d, b, f) VALUES (1, 1, 'it''s', '2024-05-01', 0xcafe, 1.5);\n\
         INSERT INTO t (k, c, v) VALUES (1, 2, 'two') USING TIMESTAMP 1000;\n\
         UPDATE t USING TIMESTAMP 999 SET v = 'older' WHERE k = 1 AND c = 2;\n\
         INSERT INTO t (k, c, v) VALUES (1, 3, 'three');\n\
         DELETE v FROM t WHERE k = 1 AND c = 3;\n\
         SELECT * FROM t WHERE k = 1;\n\
         SELECT c, v FROM t WHERE k = 1 AND c >= 2 ORDER BY c ASC;\n\
         SELECT k, writetime(v) FROM t WHERE k = 1 AND c = 2;\n\
         INSERT INTO t (k, c, v) VALUES (1, 9, 'lwt') IF NOT EXISTS;\n\
         INSERT INTO t (k, c, v) VALUES (1, 9, 'again') IF NOT EXISTS;\n\
         DELETE FROM t WHERE k = 1 AND c > 2;\n",
    );
    for i in 0..250 {
        s.push_str(&format!(
            "INSERT INTO t (k, c, v) VALUES (2, {i}, 'row {i}');\n"
        ));
    }
    s.push_str(
        "SELECT count(*), min(c), max(c) FROM t WHERE k = 2;\n\
         SELECT c, v FROM t WHERE k = 2;\n\
         SELECT * FROM t WHERE k = 1;\n\
         SELECT nothing FROM t;\n\
         SELECT * FROM t;\n",
    );
    s
}

fn shell(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_strata"))
        .arg("cql")
        .args(args)
        .output()
        .expect("run strata cql")
}

#[test]
fn strata_cql_against_a_server() {
    let work = tempfile::tempdir().unwrap();
    let file = work.path().join("script.cql");
    std::fs::write(&file, script()).unwrap();
    let file = file.to_str().unwrap();

    let embedded_dir = work.path().join("embedded");
    let embedded = common::strata(&embedded_dir, &["cql", "-f", file]);

    let served_dir = work.path().join("served");
    let (server, addr) = common::serve(&served_dir, &["--port", "0"]);
    let host = addr.ip().to_string();
    let port = addr.port().to_string();
    let served = shell(&[&host, &port, "-f", file]);

    let out = String::from_utf8_lossy(&served.stdout);
    let err = String::from_utf8_lossy(&served.stderr);
    // The script ran to its error, reading every page on the way.
    assert!(out.contains("(250 rows)"), "{out}\n{err}");
    assert!(out.contains(" row 249"), "{out}");
    assert!(out.contains("[applied]"), "{out}");
    let error_line = script()
        .lines()
        .position(|l| l == "SELECT nothing FROM t;")
        .unwrap()
        + 1;
    assert!(
        err.contains(&format!(
            "script.cql:{error_line}:InvalidRequest: Error from server: code=2200"
        )),
        "{err}"
    );
    assert!(!out.contains("lwt') IF"), "{out}");
    assert_eq!(served.status.code(), Some(1), "{err}");

    assert_eq!(embedded.status.code(), served.status.code());
    assert_eq!(
        String::from_utf8_lossy(&embedded.stdout),
        out,
        "served and embedded print the same"
    );
    assert_eq!(String::from_utf8_lossy(&embedded.stderr), err);

    // The server kept what the shell wrote.
    let again = shell(&[&host, &port, "-k", "ks", "-e", "SELECT count(*) FROM t"]);
    assert!(again.status.success(), "{}", common::text(&again));
    assert!(
        String::from_utf8_lossy(&again.stdout).contains("   252\n"),
        "{}",
        common::text(&again)
    );

    // A host and a data directory together are refused before connecting.
    let both = shell(&[&host, &port, "--data-dir", "x", "-e", "SELECT 1"]);
    assert_eq!(both.status.code(), Some(1));
    assert!(
        String::from_utf8_lossy(&both.stderr)
            .contains("connects to a server and opens no data directory: --data-dir"),
        "{}",
        common::text(&both)
    );
    assert!(!std::path::Path::new("x").exists());

    // The embedded shell on the server's directory says where to go.
    let locked = common::strata(&served_dir, &["cql", "-e", "SELECT 1"]);
    assert!(
        String::from_utf8_lossy(&locked.stderr).contains("a server owns"),
        "{}",
        common::text(&locked)
    );
    common::stop_server(server);

    let closed = shell(&[&host, &port, "-e", "SELECT * FROM system.local"]);
    assert_eq!(closed.status.code(), Some(1));
    let err = String::from_utf8_lossy(&closed.stderr);
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("Connection error: cannot connect to"), "{err}");
}
