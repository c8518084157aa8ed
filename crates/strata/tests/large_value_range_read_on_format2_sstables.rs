//! Value range reads need no format change, so they work on sstables written
//! before the row index (format 2, the committed fixture of
//! `format2_sstables_still_read.rs`: a 3000-row partition, a range tombstone,
//! a row deletion, overwrites across two sstables, a static row): for every
//! clustering of every partition, the range read of column `v` agrees with
//! the normal read path, whole and in pieces, and shadowed rows are `None`.

mod common;

use common::large_values::copy_dir;
use std::path::Path;
use strata::clock::SimClock;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::types::Value;

const T0: i64 = 1_700_000_000_000_000;

#[test]
fn range_reads_agree_with_slices_on_format2_sstables() {
    let tmp = tempfile::tempdir().unwrap();
    let fixture = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format2_sstables/db");
    copy_dir(&fixture, tmp.path());
    let mut o = DbOptions::new(SimClock::new(T0 + 10_000_000));
    o.concurrent_compactors = 0;
    o.commitlog = None;
    let db = Database::open(tmp.path(), o).unwrap();
    let t = db.table("fx", "ts").unwrap();
    assert!(t.view().sstables().iter().all(|s| s.format_version() == 2));
    let schema = t.schema();
    let v = schema.column("v").unwrap().id.unwrap();
    let (mut live, mut shadowed_k0) = (0, 0);
    for k in 0..4 {
        let key = schema.decorated_key(&[Value::Int(k)]).unwrap();
        let rows = t
            .read(&key, &ClusteringRange::ALL, false, usize::MAX)
            .unwrap()
            .rows;
        for ts in 0..3000i64 {
            let ck = schema.encode_clustering(&[Value::BigInt(ts)]).unwrap();
            let want = rows
                .iter()
                .find(|r| r.clustering == ck)
                .and_then(|r| r.cells.iter().find(|c| c.column == v))
                .map(|c| c.value.clone());
            let got = t.read_cell_range(&key, &ck, v, 0, u64::MAX).unwrap();
            assert_eq!(
                got.as_ref().map(|s| &s.bytes),
                want.as_ref(),
                "k={k} t={ts}"
            );
            match want {
                Some(w) => {
                    live += 1;
                    let half = w.len() as u64 / 2;
                    let tail = t.read_cell_range(&key, &ck, v, half, 3).unwrap().unwrap();
                    let end = (half as usize + 3).min(w.len());
                    assert_eq!(tail.bytes, w[half as usize..end].to_vec(), "k={k} t={ts}");
                }
                None if k == 0 => shadowed_k0 += 1,
                None => {}
            }
        }
    }
    // k=0 wrote t in 0..3000; the range tombstone over [100, 200] hides 101
    // rows but t=150 was written again after it, and t=2995 is deleted: 101
    // absent. k=1 and k=2 hold 20 rows, k=3 one: 2899 + 40 + 1 live.
    assert_eq!((live, shadowed_k0), (2940, 101));
}
