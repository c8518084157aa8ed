//! Helpers for the large-value tests (issue 13): a table of blocks
//! `(id blob, part int) -> data blob`, pseudo-random incompressible block
//! contents from a seed, and the read helpers the tests compare.
#![allow(dead_code)]

use std::sync::Arc;
use strata::data::ClusteringRange;
use strata::fs::IoCause;
use strata::read::ValueSlice;
use strata::schema::WriteOptions;
use strata::table::Table;
use strata::types::Value;

pub const MIB: usize = 1024 * 1024;

/// Compaction off: the tests decide where each version of a block lives.
pub const CREATE_BLOCKS: &str = "CREATE TABLE ks.blocks (id blob, part int, data blob, \
     note text, PRIMARY KEY ((id), part)) WITH \
     compaction = {'class': 'SizeTieredCompactionStrategy', 'enabled': 'false'}";

/// `len` bytes of xorshift output from `seed`: incompressible, so every codec
/// stores them raw and disk bytes equal value bytes.
pub fn block(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    let mut out = Vec::with_capacity(len);
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        let take = (len - out.len()).min(8);
        out.extend_from_slice(&x.to_le_bytes()[..take]);
    }
    out
}

pub fn key(id: &[u8], part: i32) -> Vec<(&'static str, Value)> {
    vec![("id", Value::Blob(id.to_vec())), ("part", Value::Int(part))]
}

pub fn put(t: &Arc<Table>, id: &[u8], part: i32, data: Vec<u8>, ts: Option<i64>) {
    let mut row = key(id, part);
    row.push(("data", Value::Blob(data)));
    let opts = WriteOptions {
        timestamp_micros: ts,
        ttl_seconds: None,
    };
    t.insert(&row, &opts).expect("insert block");
}

pub fn put_ttl(t: &Arc<Table>, id: &[u8], part: i32, data: Vec<u8>, ttl_seconds: u32) {
    let mut row = key(id, part);
    row.push(("data", Value::Blob(data)));
    let opts = WriteOptions {
        timestamp_micros: None,
        ttl_seconds: Some(ttl_seconds),
    };
    t.insert(&row, &opts).expect("insert block with ttl");
}

/// The whole value through the normal read path (`SELECT`), `None` if null.
pub fn whole(t: &Table, id: &[u8], part: i32) -> Option<Vec<u8>> {
    let rows = t
        .select(
            &[Value::Blob(id.to_vec())],
            &ClusteringRange::ALL,
            false,
            usize::MAX,
        )
        .expect("select");
    rows.into_iter()
        .find(|r| r[1].1 == Some(Value::Int(part)))
        .and_then(|r| {
            r.into_iter()
                .find(|(n, _)| n == "data")
                .and_then(|(_, v)| match v {
                    Some(Value::Blob(b)) => Some(b),
                    _ => None,
                })
        })
}

pub fn range(t: &Table, id: &[u8], part: i32, offset: u64, len: u64) -> Option<ValueSlice> {
    t.read_value_range(
        &[Value::Blob(id.to_vec())],
        &[Value::Int(part)],
        "data",
        offset,
        len,
    )
    .expect("read_value_range")
}

/// Checks that every range in `ranges` equals the same slice of the whole
/// read, and that both agree on whether the value exists.
pub fn assert_ranges_match_whole(t: &Table, id: &[u8], part: i32, ranges: &[(u64, u64)]) {
    let w = whole(t, id, part);
    for &(off, len) in ranges {
        let r = match &w {
            Some(v) if off > v.len() as u64 => continue,
            _ => range(t, id, part, off, len),
        };
        match (&w, r) {
            (None, None) => {}
            (Some(v), Some(s)) => {
                assert_eq!(s.value_len, v.len() as u64, "value length");
                let end = (off + len).min(v.len() as u64) as usize;
                assert!(
                    s.bytes == v[off as usize..end],
                    "range {off}+{len} of a {}-byte value differs from the whole read",
                    v.len()
                );
            }
            (w, r) => panic!(
                "whole read {:?} bytes, range read {:?}",
                w.as_ref().map(Vec::len),
                r.map(|s| s.value_len)
            ),
        }
    }
}

pub fn user_read_bytes(t: &Table) -> u64 {
    t.io().read(IoCause::UserRead)
}

/// Copies a directory tree (a committed fixture into a temporary directory).
pub fn copy_dir(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).expect("create dir");
    for e in std::fs::read_dir(from).expect("read dir") {
        let e = e.expect("dir entry");
        let target = to.join(e.file_name());
        if e.file_type().expect("file type").is_dir() {
            copy_dir(&e.path(), &target);
        } else {
            std::fs::copy(e.path(), target).expect("copy");
        }
    }
}
