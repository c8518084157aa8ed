//! Scenario: an operator copies an sstable of the same-named table of another
//! data directory over one of this table's listed sstables (same file name),
//! beside a live writer or on a stopped directory.
//!
//! Before, table ids were small sequential integers, so both directories'
//! `ks.t` were table 1 and the identity header matched; the manifest's token
//! range for the file differed but was not compared, `verify` said OK, and
//! 2,079 rows read back with the other directory's values. Now the identity
//! header names the table's UUID (unique across directories) and the manifest
//! records each file's size, tail digest and token range: the substitute is
//! set aside as unreadable (listed, never deleted, never read as data), reads
//! whose token it could hold fail naming it, and every other row reads back.

mod common;

use common::writer::{self, Writer};
use std::path::{Path, PathBuf};
use strata::db::Database;
use strata::types::Value;

#[test]
fn child_entry() {
    writer::child_entry();
}

/// Another directory's `ks.t`, with different values for keys 0..200.
fn other_directory(root: &Path) -> PathBuf {
    let other = root.join("other");
    let db = Database::open(&other, writer::options()).unwrap();
    let t = db.create_table_cql(common::CREATE).unwrap();
    for k in 0..200 {
        t.insert(
            &[
                ("k", Value::Int(k)),
                ("v", Value::Text(format!("other-{k}"))),
            ],
            &Default::default(),
        )
        .unwrap();
    }
    t.flush().unwrap();
    db.close().unwrap();
    other
}

fn only_sstable(dir: &Path) -> PathBuf {
    let files = common::sstables(&common::table_dir(dir));
    assert_eq!(files.len(), 1, "{files:?}");
    files[0].clone()
}

/// Rewrites the identity header of `path` without its table UUID (16 zero
/// bytes, checksum recomputed): a file that names no UUID, as every file
/// written before them, which only the manifest's record can tell apart.
fn strip_uuid(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    let payload_len = u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize;
    // Payload: format version (4 bytes), table id (8), then the UUID.
    bytes[24..40].fill(0);
    let end = 12 + payload_len;
    let crc = crc32c::crc32c(&bytes[..end]);
    bytes[end..end + 4].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(path, bytes).unwrap();
    let (identity, _) =
        strata::sstable::salvage::read_identity_header(&strata::fs::Fs::new(), path).unwrap();
    assert_eq!(identity.table_uuid, None);
}

/// The substitute is set aside: reported (`why`), reads of keys it may hold
/// fail, nothing reads back another directory's value, the rest reads back.
fn assert_set_aside(
    dir: &Path,
    acked: &std::collections::BTreeSet<i32>,
    substituted: &Path,
    why: &str,
) {
    let db = Database::open(dir, writer::options()).unwrap();
    let warnings = db.warnings().join("\n");
    assert!(warnings.contains(why), "{warnings}");
    let t = db.table("ks", "t").unwrap();
    let unreadable = t.unreadable_sstables();
    assert_eq!(unreadable.len(), 1);
    assert_eq!(unreadable[0].path, substituted);
    assert!(substituted.exists(), "never deleted");
    let (mut failed, mut read) = (0, 0);
    for &k in acked {
        let rows = t.select(
            &[Value::Int(k)],
            &strata::data::ClusteringRange::ALL,
            false,
            1,
        );
        match rows {
            Ok(rows) => {
                assert!(
                    rows.iter()
                        .all(|r| r[1].1 == Some(Value::Text(common::value(k)))),
                    "key {k} read back another directory's value: {rows:?}"
                );
                read += 1;
            }
            Err(e) => {
                assert!(
                    e.to_string().contains(&substituted.display().to_string()),
                    "{e}"
                );
                failed += 1;
            }
        }
    }
    // Reads outside the file's recorded token range (the manifest's) are
    // served; how many keys fall there depends on their tokens.
    assert!(failed > 0, "failed {failed}, read {read}");
    let report = strata::maintenance::verify(&t);
    assert!(!report.is_clean(), "verify reports the set-aside file");
    db.close().unwrap();
}

#[test]
fn foreign_sstable_on_a_stopped_directory_is_set_aside() {
    let tmp = tempfile::tempdir().unwrap();
    let other = other_directory(tmp.path());
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    w.write_all(200..300);
    let acked = w.kill();
    let ours = only_sstable(&dir);
    std::fs::copy(only_sstable(&other), &ours).unwrap();
    assert_set_aside(&dir, &acked, &ours, "of another data directory");
}

#[test]
fn foreign_sstable_naming_no_uuid_is_set_aside_by_the_manifest_record() {
    let tmp = tempfile::tempdir().unwrap();
    let other = other_directory(tmp.path());
    let dir = tmp.path().join("data");
    let w = Writer::start_flushed(&dir);
    let acked = w.kill();
    let ours = only_sstable(&dir);
    std::fs::copy(only_sstable(&other), &ours).unwrap();
    // Same table id (1), same generation (1), same columns, no UUID: the
    // identity header cannot tell, the size and digest the manifest recorded can.
    strip_uuid(&ours);
    assert_set_aside(&dir, &acked, &ours, "not the file the manifest listed");
}

#[test]
fn foreign_sstable_beside_a_writer_is_set_aside_at_the_next_open() {
    let tmp = tempfile::tempdir().unwrap();
    let other = other_directory(tmp.path());
    let dir = tmp.path().join("data");
    let mut w = Writer::start_flushed(&dir);
    let ours = only_sstable(&dir);
    // Renamed over it, as `cp` to a temporary name and `mv` do: the writer
    // keeps reading its own file through its open descriptor.
    let staged = common::table_dir(&dir).join("incoming");
    std::fs::copy(only_sstable(&other), &staged).unwrap();
    std::fs::rename(&staged, &ours).unwrap();
    w.write_all(200..300);
    let acked = w.kill();
    assert_set_aside(&dir, &acked, &ours, "of another data directory");
}

#[test]
fn foreign_sstable_under_an_old_manifest_is_still_refused_by_its_uuid() {
    // A manifest without sizes and digests (format 1, before them): the
    // identity header's UUID alone tells the file is another directory's.
    let tmp = tempfile::tempdir().unwrap();
    let other = other_directory(tmp.path());
    let dir = tmp.path().join("data");
    let w = Writer::start_flushed(&dir);
    let acked = w.kill();
    let manifest = common::table_dir(&dir).join("MANIFEST");
    let text = std::fs::read_to_string(&manifest).unwrap();
    let (_, body) = text.split_once('\n').unwrap();
    let mut json: serde_json::Value = serde_json::from_str(body).unwrap();
    for e in json["sstables"].as_array_mut().unwrap() {
        let e = e.as_object_mut().unwrap();
        e.remove("size_bytes");
        e.remove("tail_crc32c");
        e.remove("first_token");
        e.remove("last_token");
    }
    json.as_object_mut().unwrap().remove("table_uuid");
    let body = serde_json::to_string_pretty(&json).unwrap();
    std::fs::write(
        &manifest,
        format!(
            "strata-manifest v1 crc32c={:08x}\n{body}",
            crc32c::crc32c(body.as_bytes())
        ),
    )
    .unwrap();
    let ours = only_sstable(&dir);
    std::fs::copy(only_sstable(&other), &ours).unwrap();
    let db = Database::open(&dir, writer::options()).unwrap();
    let warnings = db.warnings().join("\n");
    assert!(warnings.contains("another data directory"), "{warnings}");
    let t = db.table("ks", "t").unwrap();
    assert_eq!(t.unreadable_sstables().len(), 1);
    assert_eq!(
        common::readable(&t, 0..200),
        0,
        "every read of the set-aside range fails"
    );
    drop((t, acked));
    db.close().unwrap();
}
