//! Property tests: every decoder of the sstable format, fed arbitrary bytes,
//! mutated real files and crafted lengths, returns a value or an error, never
//! a panic, and never allocates by a length it has not bounded (module
//! invariant 2 and fs invariant 7; issue: a crafted footer once made open
//! allocate 21 GB and abort).
//!
//! The allocation half is shown on sparse files: a footer can claim a tail of
//! 20 GiB that takes no disk; were it believed, the test would allocate (and
//! read) 20 GiB. Cases stay small otherwise, so the suite runs in seconds.

use super::format::{
    decode_chunk_table, decode_index_block, decode_summary, Footer, IndexLayout, MAX_TAIL_BYTES,
};
use super::*;
use crate::data::{Cell, DecoratedKey, LivenessInfo, PartitionUpdate, Row};
use crate::encoding::{EncodingBase, Reader};
use crate::error::Error;
use crate::fs::{Fs, IoCause, IoTag};
use proptest::prelude::*;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

const NOW_MICROS: i64 = 1_767_225_600_000_000;
const READ: IoTag = IoTag::new(IoCause::UserRead);

fn identity() -> SSTableIdentity {
    SSTableIdentity {
        table_id: 3,
        table_uuid: Some(crate::schema::TableUuid([0x5a; 16])),
        generation: 1,
        keyspace: "ks".into(),
        table: "t".into(),
        columns: vec![
            IdentityColumn {
                name: "k".into(),
                cql_type: "blob".into(),
                role: ColumnRole::PartitionKey,
                id: None,
            },
            IdentityColumn {
                name: "v".into(),
                cql_type: "blob".into(),
                role: ColumnRole::Regular,
                id: Some(0),
            },
        ],
        chunk_length_bytes: 0,
        codec: Codec::None,
        min_timestamp: 0,
        min_local_deletion: 0,
        min_ttl: 0,
        row_ts_bytes: 0,
    }
}

/// A small real sstable (80 partitions, LZ4, 1 KiB chunks, with an identity
/// header): the starting point every mutation changes.
fn sample(dir: &Path) -> PathBuf {
    let fs = Fs::new();
    let mut keys: Vec<DecoratedKey> = (0..80u32)
        .map(|i| DecoratedKey::new(format!("key-{i:04}").as_bytes()))
        .collect();
    keys.sort();
    let opts = WriterOptions {
        compression: CompressionParams {
            codec: Codec::Lz4,
            chunk_length_bytes: 1024,
            max_compressed_bytes: crate::codec::NO_COMPRESSED_LIMIT,
        },
        expected_partitions: 80,
        base: EncodingBase::around(NOW_MICROS),
        identity: Some(identity()),
        ..WriterOptions::default()
    };
    let mut w = SSTableWriter::create(&fs, dir, 1, opts).expect("writer");
    for (i, k) in keys.into_iter().enumerate() {
        let mut p = PartitionUpdate::new(k);
        let mut r = Row::new(vec![]);
        r.liveness = LivenessInfo::new(NOW_MICROS + i as i64);
        r.add_cell(Cell::live(0, NOW_MICROS + i as i64, vec![i as u8; 20 + i]));
        p.rows.push(r);
        w.append(&p).expect("append");
    }
    w.finish().expect("finish").path().to_path_buf()
}

/// Opens `path` and, if it opens, reads every partition and verifies it, then
/// (when `salvage`) salvages it: any outcome but a panic is fine; an error
/// must be one a damaged file can cause. Salvage reads the whole file for
/// chunks when the tail is gone, so it is not run on the sparse giants.
fn exercise(path: &Path, salvage: bool) {
    let fs = Fs::new();
    match SSTableReader::open(&fs, path, 1, None) {
        Ok(r) => {
            if let Ok(scan) = r.scan(None, READ) {
                for p in scan {
                    if p.is_err() {
                        break;
                    }
                }
            }
            let _ = r.verify(READ);
        }
        Err(Error::Corruption { .. } | Error::InvalidInput(_)) => {}
        Err(e) => panic!("open of a damaged file failed as {e:?}"),
    }
    if salvage {
        let _ = salvage::salvage_file(&fs, path, READ, &mut |_| Ok(()));
    }
}

/// A footer with a valid checksum, magic and version and the given fields.
fn footer(fields: [u64; 5], chunk_length_bytes: u32) -> Vec<u8> {
    Footer {
        chunk_table_offset: fields[0],
        summary_offset: fields[1],
        filter_offset: fields[2],
        stats_offset: fields[3],
        uncompressed_bytes: fields[4],
        chunk_length_bytes,
        format_version: FORMAT_VERSION,
    }
    .encode()
}

/// Replaces the last `FOOTER_BYTES` of `path` with `f` after growing the file
/// (sparsely) to `len`.
fn put_footer(path: &Path, len: u64, f: &[u8]) {
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .expect("open");
    file.set_len(len).expect("grow");
    file.write_all_at(f, len - FOOTER_BYTES as u64)
        .expect("footer");
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn block_decoders_never_panic(
        bytes in proptest::collection::vec(any::<u8>(), 0..1024),
        version in 1u32..=FORMAT_VERSION,
    ) {
        let _ = Footer::decode(&bytes);
        let _ = format::open_block(&bytes);
        let _ = decode_chunk_table(&bytes);
        let _ = decode_summary(&bytes);
        let _ = decode_index_block(&bytes, IndexLayout::for_version(version));
        let _ = BloomFilter::decode(&bytes);
        let _ = SSTableStats::decode(&mut Reader::new(&bytes), version);
        let _ = SSTableIdentity::block_length(&bytes);
        let _ = SSTableIdentity::decode(&bytes);
        let _ = row_index::decode_node(bytes.clone());
        let mut out = Vec::new();
        let _ = compression::decompress_chunk(&bytes, 1024, None, &mut out);
    }

    /// Huge counts and lengths written as varints in front of short payloads:
    /// each decoder bounds what it allocates by the bytes it was given.
    #[test]
    fn claimed_counts_are_bounded_by_the_payload(
        count in any::<u64>(),
        rest in proptest::collection::vec(any::<u8>(), 0..64),
        version in 1u32..=FORMAT_VERSION,
    ) {
        let mut bytes = Vec::new();
        crate::encoding::put_varint(&mut bytes, count);
        bytes.extend_from_slice(&rest);
        let _ = decode_chunk_table(&bytes);
        let _ = decode_summary(&bytes);
        let _ = decode_index_block(&bytes, IndexLayout::for_version(version));
        let _ = BloomFilter::decode(&bytes);
        let _ = SSTableStats::decode(&mut Reader::new(&bytes), version);
        let _ = row_index::decode_node(bytes.clone());
    }

    /// A real file with bytes overwritten anywhere: open refuses it or serves
    /// it; reading, verifying and salvaging it never panic.
    #[test]
    fn mutated_files_open_or_are_refused(
        edits in proptest::collection::vec((any::<proptest::sample::Index>(), any::<u8>()), 1..6),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = sample(dir.path());
        let mut bytes = std::fs::read(&path).expect("read");
        for (at, b) in &edits {
            let i = at.index(bytes.len());
            bytes[i] = *b;
        }
        std::fs::write(&path, &bytes).expect("write");
        exercise(&path, true);
    }

    /// A valid footer with arbitrary offsets and lengths, at the end of the
    /// real file or of a sparse one of up to 64 GiB: refused unless it
    /// describes the file, and never by allocating what it claims.
    #[test]
    fn crafted_footers_are_refused_without_allocating_their_claims(
        fields in proptest::array::uniform5(any::<u64>()),
        fractions in proptest::array::uniform4(0.0f64..=1.0),
        use_fractions: bool,
        chunk_length_bytes in prop_oneof![any::<u32>(), Just(1024u32)],
        sparse in prop_oneof![Just(0u64), Just(2u64 << 30), Just(64u64 << 30)],
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = sample(dir.path());
        let len = std::fs::metadata(&path).expect("len").len() + sparse;
        // Offsets anywhere in u64, or in order inside the file: the latter
        // reach the tail-length bound, the former the order checks.
        let mut f = fields;
        if use_fractions {
            let end = len - FOOTER_BYTES as u64;
            let mut sorted = fractions;
            sorted.sort_by(f64::total_cmp);
            for (field, fraction) in f.iter_mut().zip(sorted) {
                *field = (fraction * end as f64) as u64;
            }
            // A tail within the bound of a sparse file would be read whole:
            // keep such cases to the real file, where that is cheap.
            if sparse > 0 && end - f[0] <= MAX_TAIL_BYTES {
                f[0] = 0;
            }
        }
        put_footer(&path, len, &footer(f, chunk_length_bytes));
        exercise(&path, sparse == 0);
    }
}

/// The adversarial round's file: a valid footer pointing every tail block at
/// offset 0 of a 20 GiB sparse file. Open refuses it from the footer alone.
#[test]
fn a_tail_claimed_at_offset_0_of_a_20_gib_file_is_refused_from_the_footer() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sample(dir.path());
    let real = std::fs::read(&path).expect("read");
    let f = Footer::decode(&real[real.len() - FOOTER_BYTES..]).expect("footer");
    // A new file, all holes but its footer.
    std::fs::write(&path, b"").expect("empty");
    put_footer(
        &path,
        20 << 30,
        &footer([0, 0, 0, 0, f.uncompressed_bytes], f.chunk_length_bytes),
    );
    let err = match SSTableReader::open(&Fs::new(), &path, 1, None) {
        Ok(_) => panic!("a 20 GiB tail opened"),
        Err(e) => e.to_string(),
    };
    assert!(err.contains("the most an sstable's tail holds"), "{err}");
    // Salvage refuses it too (no identity header at offset 0 any more).
    assert!(salvage::salvage_file(&Fs::new(), &path, READ, &mut |_| Ok(())).is_err());
}

/// A chunk length no writer produces (the identity's or the footer's) is
/// refused before a chunk buffer is allocated by it.
#[test]
fn chunk_lengths_outside_the_writers_bounds_are_refused() {
    let dir = tempfile::tempdir().expect("tempdir");
    let path = sample(dir.path());
    let real = std::fs::read(&path).expect("read");
    let f = Footer::decode(&real[real.len() - FOOTER_BYTES..]).expect("footer");
    for cl in [0, 255, (16 << 20) + 1, u32::MAX] {
        std::fs::write(&path, &real).expect("restore");
        let fields = [
            f.chunk_table_offset,
            f.summary_offset,
            f.filter_offset,
            f.stats_offset,
            f.uncompressed_bytes,
        ];
        put_footer(&path, real.len() as u64, &footer(fields, cl));
        let err = match SSTableReader::open(&Fs::new(), &path, 1, None) {
            Ok(_) => panic!("chunk length {cl} opened"),
            Err(e) => e.to_string(),
        };
        assert!(err.contains("chunk length"), "{cl}: {err}");
    }
}
