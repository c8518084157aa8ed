//! Scenario: a data directory written by the build before per-sstable
//! clustering bounds (sstable format version 4: a sparse partition index,
//! statistics without the rows' clustering range, committed under
//! `tests/data/format4_sstables/`) opens with this build, and every slice read
//! of it returns what the version-4 build returned: four partitions (two wide,
//! with row indexes) and 300 small ones across two sstables, with a range
//! tombstone, a row deletion and a static row (`common::old_format`).

mod common;

use common::old_format::{check, generate, Fixture};

const FIXTURE: Fixture = Fixture {
    dir: "format4_sstables",
    version: 4,
    small_partitions: true,
    kv_table: false,
};

/// Writes the fixture the test below reads. Ignored because it must run with a
/// format-4 build, or it would record newer files: it was run from a checkout
/// of commit 593c033 (the last before format 5) with this file and
/// `common/old_format.rs` copied in: `cargo test --release -p strata --test
/// format4_sstables_still_read -- --ignored generate_fixture`.
#[test]
#[ignore = "generator, run once with the format-4 build (commit 593c033)"]
fn generate_fixture() {
    generate(FIXTURE);
}

#[test]
fn format4_sstables_answer_as_they_did() {
    check(FIXTURE);
}
