//! kill -9 of `strata serve` while drivers add elements to non-frozen
//! collections (a set add, a map put and a list append in each statement):
//! after a restart every acknowledged element is in its set, map and list,
//! each list holds its writer's acknowledged appends in the order they were
//! acknowledged, and nothing is there twice (the commit log replays each
//! element write once). Writes in flight at the kill may or may not be there.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

const WRITERS: i32 = 4;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn serve_kill9_keeps_acknowledged_collection_elements() {
    let dir = tempfile::tempdir().unwrap();
    let (mut server, addr) =
        common::serve(dir.path(), &["--port", "0", "--commitlog-sync", "batch"]);
    let s = Arc::new(common::driver_session(addr).await);
    for cql in [
        "CREATE KEYSPACE k9 WITH replication = {'class': 'SimpleStrategy', 'replication_factor': 1}",
        "CREATE TABLE k9.c (k int PRIMARY KEY, s set<int>, m map<int, int>, l list<int>)",
    ] {
        s.query_unpaged(cql, ()).await.expect(cql);
    }
    let add = s
        .prepare("UPDATE k9.c SET s = s + ?, m[?] = ?, l = l + ? WHERE k = ?")
        .await
        .expect("prepare");

    // Each writer owns one row and records the elements acknowledged to it.
    let acked: Arc<Mutex<Vec<Vec<i32>>>> = Arc::new(Mutex::new(vec![Vec::new(); WRITERS as usize]));
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
            let mut i = 0;
            while !stop.load(Ordering::SeqCst) {
                let bound = (vec![i], i, i * 10, vec![i], w);
                match s.execute_unpaged(&add, bound).await {
                    Ok(_) => {
                        acked.lock().unwrap()[w as usize].push(i);
                        total.fetch_add(1, Ordering::SeqCst);
                    }
                    Err(_) => break,
                }
                i += 1;
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
        .prepare("SELECT s, m, l FROM k9.c WHERE k = ?")
        .await
        .expect("prepare");
    for (w, elements) in acknowledged.iter().enumerate() {
        type Collections = (
            Option<Vec<i32>>,
            Option<HashMap<i32, i32>>,
            Option<Vec<i32>>,
        );
        let (set, map, list) = s
            .execute_unpaged(&select, (w as i32,))
            .await
            .expect("read")
            .into_rows_result()
            .expect("rows")
            .maybe_first_row::<Collections>()
            .expect("row")
            .unwrap_or((None, None, None));
        let (set, map, list) = (
            set.unwrap_or_default(),
            map.unwrap_or_default(),
            list.unwrap_or_default(),
        );
        for &i in elements {
            assert!(set.contains(&i), "writer {w}: set element {i} lost");
            assert_eq!(map.get(&i), Some(&(i * 10)), "writer {w}: map key {i} lost");
        }
        // The list: the acknowledged appends in order, at most the one write
        // in flight after them, and no element twice.
        assert!(
            list.starts_with(elements),
            "writer {w}: list {list:?} does not start with the {} acknowledged appends",
            elements.len()
        );
        assert!(
            list.len() <= elements.len() + 1,
            "writer {w}: {} list elements for {} acknowledged appends",
            list.len(),
            elements.len()
        );
        assert!(set.len() <= elements.len() + 1 && map.len() <= elements.len() + 1);
    }
    drop(s);
    common::stop_server(server);
}
