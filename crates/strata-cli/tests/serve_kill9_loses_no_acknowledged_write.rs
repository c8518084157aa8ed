//! kill -9 of `strata serve` under the batch and group commit logs, with
//! writes in flight: every write the driver saw acknowledged before the kill
//! is there after a restart. Writes in flight at the kill may or may not be
//! there; none is asserted either way. A kill leaves the kernel's page cache
//! alone, so what this proves is that no acknowledged write waits in the
//! server's own buffers (true of periodic mode too, which passes it); that
//! batch and group acknowledge only after the fsync, which a power loss
//! needs, is shown by the engine's fsync fault-injection tests.

mod common;

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

async fn kill_with_writes_in_flight(mode: &str) {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, addr) = common::serve(dir.path(), &["--port", "0", "--commitlog-sync", mode]);
    let s = Arc::new(common::driver_session(addr).await);
    for cql in [
        "CREATE KEYSPACE k9 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE k9.t (k int, c int, v text, PRIMARY KEY (k, c))",
    ] {
        s.query_unpaged(cql, ()).await.expect(cql);
    }
    let insert = s
        .prepare("INSERT INTO k9.t (k, c, v) VALUES (?, ?, ?)")
        .await
        .expect("prepare");

    // Eight writers; each records the writes acknowledged to it.
    let acked = Arc::new(Mutex::new(Vec::<(i32, i32)>::new()));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..8 {
        let (s, insert, acked, stop) = (s.clone(), insert.clone(), acked.clone(), stop.clone());
        writers.push(tokio::spawn(async move {
            let mut c = 0;
            while !stop.load(Ordering::SeqCst) {
                match s.execute_unpaged(&insert, (w, c, "acknowledged")).await {
                    Ok(_) => acked.lock().unwrap().push((w, c)),
                    Err(_) => break,
                }
                c += 1;
            }
        }));
    }
    // Kill once 2,000 writes are acknowledged, with the writers still going.
    while acked.lock().unwrap().len() < 2000 {
        tokio::task::yield_now().await;
    }
    server.kill().expect("kill -9");
    server.wait().expect("reap");
    let acknowledged = acked.lock().unwrap().clone();
    stop.store(true, Ordering::SeqCst);
    for w in writers {
        let _ = w.await;
    }
    drop(s);

    let (server, addr) = common::serve(dir.path(), &["--port", "0", "--commitlog-sync", mode]);
    let s = common::driver_session(addr).await;
    let select = s
        .prepare("SELECT v FROM k9.t WHERE k = ? AND c = ?")
        .await
        .expect("prepare");
    for &(k, c) in &acknowledged {
        let row = s
            .execute_unpaged(&select, (k, c))
            .await
            .expect("read")
            .into_rows_result()
            .expect("rows")
            .maybe_first_row::<(String,)>()
            .expect("row");
        assert_eq!(
            row,
            Some(("acknowledged".to_string(),)),
            "{mode}: acknowledged write ({k}, {c}) lost by kill -9 ({} acknowledged)",
            acknowledged.len()
        );
    }
    drop(s);
    common::stop_server(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_kill9_loses_no_acknowledged_write() {
    kill_with_writes_in_flight("batch").await;
    kill_with_writes_in_flight("group").await;
}
