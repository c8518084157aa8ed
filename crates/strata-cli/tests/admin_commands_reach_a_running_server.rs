//! The admin commands against a data directory a running `strata serve` owns:
//! the CLI finds the server's admin socket and the server runs the command on
//! its open database (flush, tablestats, compact, compactionhistory,
//! compactionstats, snapshot, listsnapshots, clearsnapshot, verify, scrub,
//! garbagecollect, expiredblockers), printing what the command prints
//! offline; data-directory options are refused rather than ignored; a
//! command that opens the directory for itself is still refused by the lock;
//! the socket is gone after the server stops, and a stale socket left by a
//! killed server neither blocks the offline commands nor the next server; an
//! admin connection that sends nothing does not hold the server's stop.

mod common;

use common::{json, ok, strata, text};
use scylla::client::session::Session;
use scylla::client::session_builder::SessionBuilder;

fn sstable_count(dir: &std::path::Path) -> u64 {
    let stats = json(&ok(
        &strata(dir, &["tablestats", "--json", "adm.t"]),
        "tablestats",
    ));
    stats[0]["sstable_count"]
        .as_u64()
        .unwrap_or_else(|| panic!("sstable_count in {stats}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn admin_commands_reach_a_running_server() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (server, addr) = common::serve(d, &["--port", "0"]);
    assert!(d.join("admin.sock").exists(), "the server's admin socket");
    let session: Session = SessionBuilder::new()
        .known_node(addr.to_string())
        .build()
        .await
        .expect("connect");
    for cql in [
        "CREATE KEYSPACE adm WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE adm.t (k int, c int, v text, PRIMARY KEY (k, c))",
    ] {
        session.query_unpaged(cql, ()).await.expect(cql);
    }
    let insert = session
        .prepare("INSERT INTO adm.t (k, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");

    // Two flushed sstables, made through the server.
    for round in 0..2 {
        for c in 0..100 {
            session
                .execute_unpaged(&insert, (round, c, "v"))
                .await
                .expect("insert");
        }
        ok(&strata(d, &["flush", "adm.t"]), "flush");
    }
    assert_eq!(sstable_count(d), 2);

    // Compaction in the server, and its record.
    ok(&strata(d, &["compact", "adm.t"]), "compact");
    assert_eq!(sstable_count(d), 1);
    let history = json(&ok(
        &strata(d, &["compactionhistory", "--json", "adm.t"]),
        "compactionhistory",
    ));
    assert!(
        history.as_array().is_some_and(|h| !h.is_empty()),
        "{history}"
    );
    let stats = String::from_utf8(ok(&strata(d, &["compactionstats"]), "compactionstats")).unwrap();
    assert!(stats.contains("pending tasks: 0"), "{stats}");

    // Snapshots.
    ok(&strata(d, &["snapshot", "-t", "before", "adm"]), "snapshot");
    let listed = String::from_utf8(ok(&strata(d, &["listsnapshots"]), "listsnapshots")).unwrap();
    assert!(listed.contains("before"), "{listed}");
    ok(
        &strata(d, &["clearsnapshot", "-t", "before", "adm"]),
        "clearsnapshot",
    );
    let listed_after =
        String::from_utf8(ok(&strata(d, &["listsnapshots"]), "listsnapshots")).unwrap();
    assert!(!listed_after.contains("before"), "{listed_after}");

    // Checks and rewrites.
    let verify_served = ok(&strata(d, &["verify", "--json"]), "verify");
    assert_eq!(json(&verify_served)["clean"], true);
    ok(&strata(d, &["scrub", "adm.t"]), "scrub");
    ok(&strata(d, &["garbagecollect", "adm.t"]), "garbagecollect");
    ok(
        &strata(d, &["sstable", "expiredblockers", "adm.t"]),
        "expiredblockers",
    );

    // Errors come back as offline: one line and a failing exit.
    let missing = strata(d, &["compact", "adm.nope"]);
    assert!(!missing.status.success());
    assert!(text(&missing).contains("error: "), "{}", text(&missing));

    // Settings the server would not apply are refused, not ignored.
    let refused = strata(d, &["compact", "adm.t", "--commitlog-sync", "batch"]);
    assert!(!refused.status.success());
    assert!(
        text(&refused).contains("runs with its own settings"),
        "{}",
        text(&refused)
    );

    // A command that opens the directory for itself still meets the lock.
    let stress = strata(d, &["stress", "write", "-n", "10"]);
    assert!(!stress.status.success(), "{}", text(&stress));
    assert!(
        text(&stress).contains("data directory is in use"),
        "{}",
        text(&stress)
    );

    // The server still serves, and it wrote what the commands did.
    let rows = session
        .query_unpaged("SELECT count(*) FROM adm.t", ())
        .await
        .expect("count")
        .into_rows_result()
        .expect("rows")
        .single_row::<(i64,)>()
        .expect("one row");
    assert_eq!(rows.0, 200);
    drop(session);
    // A connection to the admin socket that never sends its request does
    // not keep the server from stopping.
    let idle = std::os::unix::net::UnixStream::connect(d.join("admin.sock")).expect("connect");
    common::stop_server(server);
    drop(idle);
    assert!(
        !d.join("admin.sock").exists(),
        "the socket is removed at stop"
    );

    // Offline, the same command prints the same thing.
    let verify_offline = ok(&strata(d, &["verify", "--json"]), "verify offline");
    assert_eq!(
        String::from_utf8_lossy(&verify_served),
        String::from_utf8_lossy(&verify_offline)
    );

    // A killed server's socket: the offline commands and the next server
    // both go on.
    let (mut killed, _) = common::serve(d, &["--port", "0"]);
    killed.kill().expect("kill -9");
    killed.wait().expect("reap");
    assert!(d.join("admin.sock").exists(), "a stale socket left behind");
    assert_eq!(sstable_count(d), 1, "offline beside a stale socket");
    let (server, _) = common::serve(d, &["--port", "0"]);
    assert_eq!(sstable_count(d), 1, "served again");
    common::stop_server(server);
}
