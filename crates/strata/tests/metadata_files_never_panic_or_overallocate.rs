//! Every file the engine reads whole (MANIFEST, schema.json, commit-log
//! segments, RETIRED, compression dictionaries), fed arbitrary bytes,
//! mutations of real files and huge sparse files: each read returns the file
//! or an error naming it, never panics, never blocks on a FIFO, and never
//! allocates more than the stated bound of its kind (fs invariant 7).
//!
//! The adversarial round's cases were sstables; these are the same attack on
//! the other files: a 20 GiB sparse file is 20 GiB of memory to a reader that
//! trusts the size.

use proptest::prelude::*;
use std::path::Path;
use strata::commitlog::{self, retired, CommitLog, CommitLogOptions, SyncMode};
use strata::data::{Cell, DecoratedKey, LivenessInfo, PartitionUpdate, Row};
use strata::error::Error;
use strata::fs::Fs;
use strata::manifest::{Manifest, MANIFEST_FILE};
use strata::schema::Catalog;

const NOW_MICROS: i64 = 1_767_225_600_000_000;

/// A short real commit log in `dir`; returns its first segment's path.
fn real_segment(dir: &Path) -> std::path::PathBuf {
    let fs = Fs::new();
    let log = CommitLog::open(
        &fs,
        dir,
        CommitLogOptions {
            sync: SyncMode::Periodic {
                period: std::time::Duration::from_secs(3600),
            },
            ..CommitLogOptions::default()
        },
    )
    .expect("log");
    for i in 0..40u32 {
        let mut u = PartitionUpdate::new(DecoratedKey::new(format!("k{i}").as_bytes()));
        let mut r = Row::new(vec![]);
        r.liveness = LivenessInfo::new(NOW_MICROS + i64::from(i));
        r.add_cell(Cell::live(0, NOW_MICROS, vec![i as u8; 40]));
        u.rows.push(r);
        let (_, ticket) = log.append(1, &u).expect("append");
        log.wait(ticket).expect("wait");
    }
    log.close().expect("close");
    commitlog::list_segments(&fs, dir).expect("segments")[0]
        .1
        .clone()
}

/// A file of `len` bytes that are all holes.
fn sparse(path: &Path, len: u64) {
    std::fs::File::create(path)
        .expect("create")
        .set_len(len)
        .expect("grow");
}

fn mkfifo(path: &Path) {
    let c = std::ffi::CString::new(path.to_str().expect("utf-8")).expect("c string");
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
}

/// The refusal of a file too large or not regular: corruption or bad input
/// naming it, never an I/O error from trying.
fn refused<T>(r: strata::Result<T>, what: &str) {
    match r {
        Ok(_) => panic!("{what} was read"),
        Err(Error::Corruption { .. } | Error::InvalidInput(_)) => {}
        Err(e) => panic!("{what}: {e:?}"),
    }
}

#[test]
fn huge_sparse_metadata_files_and_fifos_are_refused_from_their_size_and_kind() {
    for (kind, len) in [("huge", 20u64 << 30), ("fifo", 0)] {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let fs = Fs::new();
        let make = |p: &Path| {
            if kind == "fifo" {
                mkfifo(p)
            } else {
                sparse(p, len)
            }
        };
        make(&d.join(MANIFEST_FILE));
        refused(Manifest::open(&fs, d), &format!("{kind} MANIFEST"));
        make(&d.join(retired::RETIRED_FILE));
        refused(retired::load(&fs, d), &format!("{kind} RETIRED"));
        let seg = d.join("CommitLog-6-1.log");
        make(&seg);
        refused(
            commitlog::dump_segment(&fs, &seg),
            &format!("{kind} segment"),
        );
        make(&d.join(strata::dictionary::file_name(7)));
        refused(
            strata::dictionary::load(&fs, d, 7),
            &format!("{kind} dictionary"),
        );
        let data = d.join("data");
        std::fs::create_dir_all(&data).expect("data dir");
        make(&data.join("schema.json"));
        let opened = strata::db::Database::open(
            &data,
            strata::db::DbOptions::new(strata::clock::SimClock::new(NOW_MICROS)),
        );
        refused(opened, &format!("{kind} schema.json"));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_in_any_metadata_file_are_refused_or_read(
        bytes in proptest::collection::vec(any::<u8>(), 0..2048),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let d = dir.path();
        let fs = Fs::new();
        std::fs::write(d.join(MANIFEST_FILE), &bytes).expect("write");
        let _ = Manifest::open(&fs, d);
        std::fs::write(d.join(retired::RETIRED_FILE), &bytes).expect("write");
        let _ = retired::load(&fs, d);
        let seg = d.join("CommitLog-6-1.log");
        std::fs::write(&seg, &bytes).expect("write");
        let _ = commitlog::dump_segment(&fs, &seg);
        std::fs::write(d.join(strata::dictionary::file_name(3)), &bytes).expect("write");
        let _ = strata::dictionary::load(&fs, d, 3);
        let _ = Catalog::from_json(&String::from_utf8_lossy(&bytes));
    }

    /// A real segment with bytes overwritten anywhere: dumped, or refused.
    #[test]
    fn mutated_segments_are_dumped_or_refused(
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let seg = real_segment(dir.path());
        let mut bytes = std::fs::read(&seg).expect("read");
        for (at, b) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        std::fs::write(&seg, &bytes).expect("write");
        let fs = Fs::new();
        let _ = commitlog::dump_segment(&fs, &seg);
        let _ = commitlog::check_segment_sequence(
            &fs,
            dir.path(),
            &commitlog::LogExpectation { tables: Vec::new() },
        );
    }

    /// A schema.json edited anywhere (a field's number made huge, a name
    /// cut): parsed and validated, or refused.
    #[test]
    fn mutated_catalogs_are_parsed_or_refused(
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<char>()), 1..4),
    ) {
        let mut c = Catalog::default();
        let t = strata::schema::CreateTableStatement::parse(
            "CREATE TABLE ks.t (k int, c text, v blob, PRIMARY KEY (k, c))",
        )
        .expect("cql");
        c.keyspaces
            .entry("ks".into())
            .or_insert_with(|| strata::schema::Keyspace {
                name: "ks".into(),
                tables: Default::default(),
                replication: [
                    ("class".to_string(), "SimpleStrategy".to_string()),
                    ("replication_factor".to_string(), "1".to_string()),
                ]
                .into(),
                durable_writes: true,
                types: Default::default(),
            })
            .tables
            .insert("t".into(), t.schema);
        let mut text: Vec<char> = c.to_json().expect("json").chars().collect();
        for (at, ch) in &edits {
            let i = at.index(text.len());
            text[i] = *ch;
        }
        let _ = Catalog::from_json(&text.into_iter().collect::<String>());
    }
}
