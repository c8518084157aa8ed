//! Scenario: the same `CREATE TABLE` in two data directories, and a data
//! directory written before table UUIDs.
//!
//! Before, a table's only id was a small sequential integer, so both
//! directories' `ks.t` were table 1, and files of one passed for files of the
//! other. Now the catalog gives every new table a random 128-bit UUID
//! (Cassandra's table id, which the CQL server publishes as
//! `system_schema.tables.id`), kept in `schema.json`, in the MANIFEST and in
//! each sstable's identity header; a table of an older directory gets one at
//! the first read-write open, kept from then on, while its old sstables stay
//! readable.

mod common;

use strata::db::Database;

fn uuid_of(dir: &std::path::Path) -> [u8; 16] {
    let db = common::open(dir);
    let u = db
        .table("ks", "t")
        .unwrap()
        .schema()
        .uuid()
        .expect("a UUID");
    db.close().unwrap();
    u
}

#[test]
fn the_same_table_in_two_directories_has_two_uuids_each_kept_everywhere() {
    let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    common::populated(a.path(), 100, 1);
    common::populated(b.path(), 100, 1);
    let (ua, ub) = (uuid_of(a.path()), uuid_of(b.path()));
    assert_ne!(ua, ub);
    assert_eq!(ua[6] >> 4, 4, "version 4");
    assert_eq!(ua[8] >> 6, 0b10, "RFC 4122 variant");
    // Kept across reopens, and named by the manifest and every sstable.
    assert_eq!(uuid_of(a.path()), ua);
    let text = strata::schema::TableUuid(ua).to_string();
    let manifest = std::fs::read_to_string(common::table_dir(a.path()).join("MANIFEST")).unwrap();
    assert!(manifest.starts_with("strata-manifest v2 "), "{manifest}");
    assert!(manifest.contains(&text), "{manifest}");
    assert!(manifest.contains("\"size_bytes\""), "{manifest}");
    assert!(manifest.contains("\"tail_crc32c\""), "{manifest}");
    for f in common::sstables(&common::table_dir(a.path())) {
        let (identity, version) =
            strata::sstable::salvage::read_identity_header(&strata::fs::Fs::new(), &f).unwrap();
        assert_eq!(version, strata::sstable::FORMAT_VERSION);
        assert_eq!(identity.table_uuid.map(|u| u.0), Some(ua));
    }
}

/// The format-9 fixture (`tests/data/format9_sstables`, written by the build
/// before UUIDs) gets a UUID for each table at its first read-write open, in
/// `schema.json` and in each MANIFEST, and keeps it.
#[test]
fn a_directory_from_before_uuids_gets_them_at_its_first_read_write_open() {
    let fixture =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/format9_sstables/db");
    let dir = tempfile::tempdir().unwrap();
    for sub in ["", "fx", "fx/ts", "fx/kv"] {
        std::fs::create_dir_all(dir.path().join(sub)).unwrap();
        for e in std::fs::read_dir(fixture.join(sub)).unwrap() {
            let e = e.unwrap();
            if e.file_type().unwrap().is_file() {
                std::fs::copy(e.path(), dir.path().join(sub).join(e.file_name())).unwrap();
            }
        }
    }
    let schema_path = dir.path().join("schema.json");
    assert!(!std::fs::read_to_string(&schema_path)
        .unwrap()
        .contains("uuid"));
    let mut opts = common::options();
    opts.commitlog = None;
    // A read-only open gives none (it writes nothing).
    let mut ro = opts.clone();
    ro.read_only = true;
    let db = Database::open(dir.path(), ro).unwrap();
    assert_eq!(db.table("fx", "ts").unwrap().schema().uuid(), None);
    db.close().unwrap();
    // The first read-write open gives each table one, kept after.
    let uuids = |o: &strata::db::DbOptions| {
        let db = Database::open(dir.path(), o.clone()).unwrap();
        let u = ["ts", "kv"].map(|t| db.table("fx", t).unwrap().schema().uuid().unwrap());
        db.close().unwrap();
        u
    };
    let first = uuids(&opts);
    assert_ne!(first[0], first[1]);
    assert_eq!(uuids(&opts), first);
    let text = std::fs::read_to_string(&schema_path).unwrap();
    let manifest = std::fs::read_to_string(dir.path().join("fx/ts/MANIFEST")).unwrap();
    let ts = strata::schema::TableUuid(first[0]).to_string();
    assert!(text.contains(&ts) && manifest.contains(&ts), "{manifest}");
    assert!(manifest.starts_with("strata-manifest v2 "), "{manifest}");
    assert!(manifest.contains("\"tail_crc32c\""), "{manifest}");
}

/// A `schema.json` that lost a table's UUID (edited by hand, restored from an
/// older copy) gets back the one the table's MANIFEST and files name, not a
/// new one its own files would not match.
#[test]
fn a_schema_that_lost_a_uuid_gets_back_the_one_its_files_name() {
    let dir = tempfile::tempdir().unwrap();
    common::populated(dir.path(), 100, 2);
    let u = uuid_of(dir.path());
    let path = dir.path().join("schema.json");
    let mut json: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
    json["keyspaces"]["ks"]["tables"]["t"]
        .as_object_mut()
        .unwrap()
        .remove("uuid");
    std::fs::write(&path, serde_json::to_string_pretty(&json).unwrap()).unwrap();
    assert_eq!(uuid_of(dir.path()), u);
    let db = common::open(dir.path());
    assert_eq!(common::readable(&db.table("ks", "t").unwrap(), 0..100), 100);
    db.close().unwrap();
}
