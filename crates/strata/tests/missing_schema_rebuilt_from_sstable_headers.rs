//! A lost `schema.json` refuses the open (tested in `missing_schema_refuses_open`);
//! `schema rebuild` re-creates it from what the directory records: each table's
//! columns, column ids and table id from its sstables' identity headers, its
//! options from the newest snapshot's `schema.cql`. The same table ids mean the
//! commit log's unflushed records replay into the right tables: every
//! acknowledged row is back. What cannot be rebuilt (a table only in the commit
//! log) is named, and nothing is written unless the operator allows a partial
//! rebuild (issue 10, item 3; docs/DURABILITY.md).

mod common;

use strata::data::ClusteringRange;
use strata::schema_rebuild::{rebuild_schema, RebuildSchemaOptions};
use strata::types::Value;

const EVENTS: &str = "CREATE TABLE ks.events (id int, ts bigint, s text static, v text, \
     PRIMARY KEY (id, ts)) WITH CLUSTERING ORDER BY (ts DESC) \
     AND gc_grace_seconds = 3600 \
     AND compaction = {'class': 'LeveledCompactionStrategy', 'fanout_size': 4}";

fn event(t: &std::sync::Arc<strata::table::Table>, id: i32, ts: i64) {
    t.insert(
        &[
            ("id", Value::Int(id)),
            ("ts", Value::BigInt(ts)),
            ("s", Value::Text(format!("static {id}"))),
            ("v", Value::Text(format!("v {id} {ts}"))),
        ],
        &Default::default(),
    )
    .unwrap();
}

fn events_rows(t: &strata::table::Table, id: i32) -> usize {
    t.select(&[Value::Int(id)], &ClusteringRange::ALL, false, usize::MAX)
        .unwrap()
        .len()
}

#[test]
fn schema_rebuild_restores_tables_ids_options_and_unflushed_rows() {
    let dir = tempfile::tempdir().unwrap();
    let data = dir.path();
    let (events_id, t_id, events_cql);
    {
        let db = common::open(data);
        let t = db.create_table_cql(common::CREATE).unwrap();
        let logonly = db
            .create_table_cql("CREATE TABLE ks.logonly (k int PRIMARY KEY, v text)")
            .unwrap();
        let events = db.create_table_cql(EVENTS).unwrap();
        events_id = events.schema().id;
        t_id = t.schema().id;
        events_cql = events.schema().to_cql();
        for ts in 0..20 {
            event(&events, 1, ts);
        }
        events.flush().unwrap();
        strata::maintenance::snapshot(&events, "before").unwrap();
        common::write(&t, 0..100);
        t.flush().unwrap();
        // Acknowledged but only in the commit log.
        for ts in 20..30 {
            event(&events, 1, ts);
        }
        common::write(&t, 100..150);
        logonly
            .insert(
                &[("k", Value::Int(1)), ("v", Value::Text("x".into()))],
                &Default::default(),
            )
            .unwrap();
        drop((t, logonly, events));
        drop(db); // no close: nothing more is flushed
    }
    std::fs::remove_file(data.join("schema.json")).unwrap();
    assert!(strata::db::Database::open(data, common::options()).is_err());

    let fs = strata::fs::Fs::new();
    // The table written only to the commit log cannot be rebuilt: refused, nothing
    // written.
    let err = rebuild_schema(&fs, data, &RebuildSchemaOptions::default()).unwrap_err();
    assert!(matches!(err, strata::Error::NeedsRepair(_)), "{err}");
    assert!(err.to_string().contains("--allow-partial"), "{err}");
    assert!(!data.join("schema.json").exists());
    // A dry run reports what it would write and writes nothing.
    let dry = rebuild_schema(
        &fs,
        data,
        &RebuildSchemaOptions {
            dry_run: true,
            allow_partial: false,
        },
    )
    .unwrap();
    assert!(!dry.written);
    assert_eq!(dry.tables.len(), 2, "{dry:?}");
    assert_eq!(dry.unresolved.len(), 1, "{dry:?}");
    assert!(!data.join("schema.json").exists());

    let report = rebuild_schema(
        &fs,
        data,
        &RebuildSchemaOptions {
            dry_run: false,
            allow_partial: true,
        },
    )
    .unwrap();
    assert!(report.written);
    let events_report = report
        .tables
        .iter()
        .find(|t| t.table == "ks.events")
        .unwrap();
    assert!(events_report.options_from.is_some(), "{events_report:?}");
    let t_report = report.tables.iter().find(|t| t.table == "ks.t").unwrap();
    assert!(t_report.options_from.is_none());
    // Above every id seen, including the never-flushed tables'.
    assert!(report.next_table_id > events_id, "{report:?}");

    // A second rebuild refuses: the catalog exists.
    assert!(matches!(
        rebuild_schema(&fs, data, &RebuildSchemaOptions::default()),
        Err(strata::Error::AlreadyExists(_))
    ));

    let db = common::open(data);
    let events = db.table("ks", "events").unwrap();
    assert_eq!(events.schema().id, events_id);
    assert_eq!(events.schema().to_cql(), events_cql, "options and columns");
    assert_eq!(events_rows(&events, 1), 30, "flushed and replayed rows");
    let t = db.table("ks", "t").unwrap();
    assert_eq!(t.schema().id, t_id);
    assert_eq!(common::readable(&t, 0..150), 150);
    assert!(db.table("ks", "logonly").is_err());
    // New tables get ids never used before.
    let new = db
        .create_table_cql("CREATE TABLE ks.new (k int PRIMARY KEY)")
        .unwrap();
    assert!(new.schema().id > events_id);
    drop((events, t, new));
    db.close().unwrap();
}
