//! Decimal *partition* keys are Cassandra's serialized bytes, scale included, so
//! `1.5` and `1.50` are two partitions with two tokens, each found by its own
//! spelling, exactly as in Cassandra (whose partitioner hashes those bytes). Strata
//! keeps this rather than canonicalising, because tokens must equal Cassandra's
//! (DESIGN.md §2) and data already stored under a spelling must stay reachable by
//! it. Contrast `decimal_keys_equal_in_value_are_one_row.rs` (clustering keys).

use strata::clock::SimClock;
use strata::cql::literal::parse_value;
use strata::data::ClusteringRange;
use strata::db::{Database, DbOptions};
use strata::schema::WriteOptions;
use strata::token::token_of;
use strata::types::{serialize, CqlType, Value};

fn dec(s: &str) -> Value {
    parse_value(&CqlType::Decimal, s).expect("decimal literal")
}

#[test]
fn decimal_partition_keys_keep_their_spelling() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut opts = DbOptions::new(SimClock::fixed());
    opts.concurrent_compactors = 0;
    let db = Database::open(dir.path(), opts).expect("open");
    let t = db
        .create_table_cql("CREATE TABLE ks.p (k decimal PRIMARY KEY, v text)")
        .expect("create");
    for (k, v) in [("1.5", "short"), ("1.50", "long")] {
        t.insert(
            &[("k", dec(k)), ("v", Value::Text(v.into()))],
            &WriteOptions::default(),
        )
        .expect("insert");
    }
    let schema = t.schema();
    let (a, b) = (
        schema.decorated_key(&[dec("1.5")]).expect("key"),
        schema.decorated_key(&[dec("1.50")]).expect("key"),
    );
    // The token is Murmur3 of Cassandra's bytes: scale (4 bytes) then unscaled.
    assert_eq!(serialize(&dec("1.50")), [0, 0, 0, 2, 0, 150]);
    assert_eq!(a.token, token_of(&serialize(&dec("1.5"))));
    assert_eq!(b.token, token_of(&serialize(&dec("1.50"))));
    assert_ne!(a.token, b.token, "two spellings, two partitions");

    let read = |k: &str| -> Vec<Option<Value>> {
        t.select(&[dec(k)], &ClusteringRange::ALL, false, 10)
            .expect("select")
            .into_iter()
            .map(|row| row[1].1.clone())
            .collect()
    };
    for when in ["memtable", "after flush"] {
        assert_eq!(read("1.5"), [Some(Value::Text("short".into()))], "{when}");
        assert_eq!(read("1.50"), [Some(Value::Text("long".into()))], "{when}");
        assert!(
            read("1.500").is_empty(),
            "{when}: a third spelling is a third key"
        );
        let page = t.scan(None, 100).expect("scan");
        assert_eq!(page.partitions.len(), 2, "{when}");
        t.flush().expect("flush");
    }
    db.close().expect("close");
}
