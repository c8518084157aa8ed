//! nodetool's node-level commands against a running `strata serve`: `status`
//! says UN with the address it serves on, `info` that the native transport
//! is active, `setcompactionthroughput` changes the server's limit (and
//! `getcompactionthroughput` reads it back), `disable/enableautocompaction`
//! switch background compaction (`statusautocompaction` shows it, and four
//! flushes stay four sstables while it is off), `getsstables` names the files
//! holding a key, `tablehistograms` has every distribution filled, `stop`
//! answers, and `drain` flushes and ends the server with
//! every acknowledged row readable afterwards. Offline, the runtime switches
//! refuse in one line and change nothing.

mod common;

use common::{ok, strata};
use std::io::Read;

fn out(bytes: Vec<u8>) -> String {
    String::from_utf8(bytes).expect("UTF-8")
}

fn sstables(d: &std::path::Path) -> usize {
    common::sstables(&d.join("nd").join("t")).len()
}

#[test]
fn node_commands_against_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();

    // Offline: a runtime switch has nothing to act on.
    let refused = strata(d, &["setcompactionthroughput", "8"]);
    let err = String::from_utf8_lossy(&refused.stderr);
    assert!(
        !refused.status.success() && err.contains("no server owns"),
        "{err}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(out(ok(&strata(d, &["status"]), "status")).contains("\nDN "));

    let (mut server, addr) = common::serve(d, &["--port", "0"]);
    ok(
        &common::strata_without_dir(
            &[
                "cql",
                &addr.ip().to_string(),
                &addr.port().to_string(),
                "-e",
                "CREATE KEYSPACE nd WITH replication = {'class':'SimpleStrategy','replication_factor':1};
                 CREATE TABLE nd.t (k int PRIMARY KEY, v int);",
            ],
        ),
        "create",
    );
    let cql = |stmt: &str| {
        ok(
            &common::strata_without_dir(&[
                "cql",
                &addr.ip().to_string(),
                &addr.port().to_string(),
                "-e",
                stmt,
            ]),
            stmt,
        )
    };

    let status = out(ok(&strata(d, &["status"]), "status"));
    assert!(
        status.contains(&format!("UN      {}", addr.ip())),
        "{status}"
    );
    let info = out(ok(&strata(d, &["info", "--format", "json"]), "info"));
    let info: serde_json::Value = serde_json::from_str(&info).expect("JSON");
    let field = |name: &str| {
        info.as_array()
            .and_then(|a| a.iter().find(|r| r["name"] == name))
            .map(|r| r["value"].clone())
            .unwrap_or_else(|| panic!("{name} in {info}"))
    };
    assert_eq!(field("Native Transport active"), "true");
    assert!(field("Started").as_str().is_some_and(|t| t.ends_with('Z')));

    ok(
        &strata(d, &["setcompactionthroughput", "7"]),
        "set throughput",
    );
    let got = out(ok(
        &strata(d, &["getcompactionthroughput"]),
        "get throughput",
    ));
    assert!(got.contains("7 MiB/s (the running server)"), "{got}");

    // Off: four flushes stay four sstables; the status says so.
    ok(&strata(d, &["disableautocompaction", "nd.t"]), "disable");
    let st = out(ok(
        &strata(d, &["statusautocompaction", "nd"]),
        "status auto",
    ));
    assert!(st.contains("not running"), "{st}");
    for k in 0..4 {
        cql(&format!("INSERT INTO nd.t (k, v) VALUES ({k}, {k})"));
        ok(&strata(d, &["flush", "nd.t"]), "flush");
    }
    assert_eq!(sstables(d), 4, "no background compaction while off");
    let holding = out(ok(&strata(d, &["getsstables", "nd.t", "2"]), "getsstables"));
    assert_eq!(holding.lines().count(), 1, "{holding}");
    assert!(holding.trim_end().ends_with("-Data.db"), "{holding}");
    ok(&strata(d, &["enableautocompaction", "nd.t"]), "enable");
    let st = out(ok(
        &strata(d, &["statusautocompaction", "nd.t"]),
        "status auto",
    ));
    assert!(
        st.contains("running") && !st.contains("not running"),
        "{st}"
    );
    let stop = out(ok(&strata(d, &["stop"]), "stop"));
    assert!(stop.contains("compaction(s) to stop"), "{stop}");

    // Histograms of what the server did: five writes, four sstables.
    cql("SELECT * FROM nd.t WHERE k = 1");
    let h = out(ok(
        &strata(d, &["tablehistograms", "nd.t", "--format", "json"]),
        "tablehistograms",
    ));
    let h: serde_json::Value = serde_json::from_str(&h).expect("JSON");
    let rows = h.as_array().expect("rows");
    let names: Vec<&str> = rows
        .iter()
        .filter_map(|r| r["percentile"].as_str())
        .collect();
    assert_eq!(names, ["50%", "75%", "95%", "98%", "99%", "Min", "Max"]);
    for r in rows {
        for col in [
            "read_latency_micros",
            "write_latency_micros",
            "sstables_per_read",
            "partition_size_bytes",
            "cell_count",
        ] {
            assert_ne!(r[col], "-", "{col} empty in {r}");
        }
    }

    // A last acknowledged write, then drain: the server exits 0 by itself.
    cql("INSERT INTO nd.t (k, v) VALUES (9, 9)");
    let drained = out(ok(&strata(d, &["drain"]), "drain"));
    assert!(drained.contains("the server stops serving"), "{drained}");
    let status = server.wait().expect("the server exits after drain");
    let mut err = String::new();
    if let Some(mut e) = server.stderr.take() {
        let _ = e.read_to_string(&mut err);
    }
    assert!(status.success(), "{status:?}: {err}");
    let rows = out(ok(
        &strata(d, &["cql", "-e", "SELECT k FROM nd.t"]),
        "read after drain",
    ));
    for k in [0, 1, 2, 3, 9] {
        assert!(rows.contains(&format!(" {k}\n")), "row {k} in {rows}");
    }
}
