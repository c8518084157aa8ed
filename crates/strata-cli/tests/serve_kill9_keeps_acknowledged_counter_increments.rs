//! kill -9 of `strata serve` while drivers increment counters: each writer
//! its own counter and all of them one shared counter. After a restart each
//! writer's counter holds its acknowledged increments (plus at most the one
//! in flight at the kill), and the shared counter their sum (plus at most one
//! in flight per writer): no acknowledged increment is lost, none lost to a
//! concurrent one, and none counted twice by the commit log's replay.

mod common;

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use scylla::value::Counter;

const WRITERS: i32 = 4;
const SHARED: i32 = 100;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_kill9_keeps_acknowledged_counter_increments() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, addr) =
        common::serve(dir.path(), &["--port", "0", "--commitlog-sync", "batch"]);
    let s = Arc::new(common::driver_session(addr).await);
    for cql in [
        "CREATE KEYSPACE k9 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE k9.n (k int PRIMARY KEY, c counter)",
    ] {
        s.query_unpaged(cql, ()).await.expect(cql);
    }
    let add = s
        .prepare("BEGIN COUNTER BATCH UPDATE k9.n SET c = c + ? WHERE k = ?; UPDATE k9.n SET c = c + 1 WHERE k = 100; APPLY BATCH")
        .await
        .expect("prepare");

    let acked: Arc<Mutex<Vec<i64>>> = Arc::new(Mutex::new(vec![0; WRITERS as usize]));
    let total = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let mut writers = Vec::new();
    for w in 0..WRITERS {
        let (s, add, acked, total, stop) = (
            s.clone(),
            add.clone(),
            acked.clone(),
            total.clone(),
            stop.clone(),
        );
        writers.push(tokio::spawn(async move {
            while !stop.load(Ordering::SeqCst) {
                match s.execute_unpaged(&add, (Counter(1), w)).await {
                    Ok(_) => {
                        acked.lock().unwrap()[w as usize] += 1;
                        total.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => break,
                }
            }
        }));
    }
    while total.load(Ordering::SeqCst) < 800 {
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

    let (server, addr) = common::serve(dir.path(), &["--port", "0", "--commitlog-sync", "batch"]);
    let s = common::driver_session(addr).await;
    let select = s
        .prepare("SELECT c FROM k9.n WHERE k = ?")
        .await
        .expect("prepare");
    let read = |k: i32| {
        let (s, select) = (&s, &select);
        async move {
            s.execute_unpaged(select, (k,))
                .await
                .expect("read")
                .into_rows_result()
                .expect("rows")
                .maybe_first_row::<(Option<Counter>,)>()
                .expect("row")
                .and_then(|(c,)| c)
                .map_or(0, |c| c.0)
        }
    };
    for (w, &n) in acknowledged.iter().enumerate() {
        let got = read(w as i32).await;
        assert!(
            got == n || got == n + 1,
            "writer {w}: counter {got} for {n} acknowledged increments"
        );
    }
    let sum: i64 = acknowledged.iter().sum();
    let shared = read(SHARED).await;
    assert!(
        shared >= sum && shared <= sum + i64::from(WRITERS),
        "shared counter {shared} for {sum} acknowledged increments"
    );
    drop(s);
    common::stop_server(server);
}
