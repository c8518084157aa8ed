//! Whole-sstable tests: round trips, corruption detection, accounting, overhead.
//! Every random test is seeded.

use super::format::Footer;
use super::*;
use crate::data::{
    Cell, ClusteringBound, ClusteringRange, DecoratedKey, DeletionTime, LivenessInfo,
    PartitionDeletion, PartitionUpdate, RangeTombstone, Row,
};
use crate::encoding::EncodingBase;
use crate::error::Error;
use crate::fs::{Fs, IoCause, IoCounters, IoTag};
use rand::seq::SliceRandom;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::path::Path;
use std::sync::Arc;

const NOW_MICROS: i64 = 1_767_225_600_000_000;
const NOW_SECONDS: i64 = NOW_MICROS / 1_000_000;
const READ: IoTag = IoTag::new(IoCause::UserRead);

fn random_bytes(rng: &mut ChaCha8Rng, alphabet: &[u8], max_len: usize) -> Vec<u8> {
    let n = rng.gen_range(1..=max_len);
    (0..n)
        .map(|_| *alphabet.choose(rng).unwrap_or(&0))
        .collect()
}

fn random_cell(rng: &mut ChaCha8Rng, column: u32) -> Cell {
    let ts = NOW_MICROS + rng.gen_range(-1_000_000_000..1_000_000_000);
    let value: Vec<u8> = (0..rng.gen_range(0..40)).map(|_| rng.gen()).collect();
    let mut c = match rng.gen_range(0..10) {
        0 => Cell::tombstone(column, ts, NOW_SECONDS + rng.gen_range(-100..100)),
        1 | 2 => Cell::expiring(column, ts, rng.gen_range(1..100_000), NOW_SECONDS, value),
        _ => Cell::live(column, ts, value),
    };
    if rng.gen_ratio(1, 10) {
        c.path = Some(random_bytes(rng, b"xyz", 3).into_boxed_slice());
    }
    c
}

fn random_row(rng: &mut ChaCha8Rng, clustering: Vec<u8>, max_cells: usize) -> Row {
    let mut r = Row::new(clustering);
    match rng.gen_range(0..4) {
        0 => {}
        1 => {
            r.liveness = LivenessInfo::expiring(
                NOW_MICROS + rng.gen_range(0..1000),
                rng.gen_range(1..5000),
                NOW_SECONDS,
            )
        }
        _ => r.liveness = LivenessInfo::new(NOW_MICROS + rng.gen_range(-1000..1000)),
    }
    if rng.gen_ratio(1, 8) {
        r.deletion = DeletionTime::new(
            NOW_MICROS - rng.gen_range(0..1_000_000),
            NOW_SECONDS - rng.gen_range(0..10),
        );
    }
    for _ in 0..rng.gen_range(0..=max_cells) {
        let column = rng.gen_range(0..12);
        r.add_cell(random_cell(rng, column));
    }
    r
}

fn random_bound(rng: &mut ChaCha8Rng) -> ClusteringBound {
    if rng.gen_ratio(1, 4) {
        ClusteringBound::UNBOUNDED
    } else {
        ClusteringBound {
            prefix: random_bytes(rng, b"abc", 3),
            inclusive: rng.gen(),
        }
    }
}

/// A partition with a random mix of every kind of content; `rows` clustering rows
/// at most (duplicates collapse).
fn random_partition(rng: &mut ChaCha8Rng, key: DecoratedKey, rows: usize) -> PartitionUpdate {
    let mut p = PartitionUpdate::new(key);
    if rng.gen_ratio(1, 6) {
        p.deletion.partition = Some(DeletionTime::new(
            NOW_MICROS - 5_000_000,
            NOW_SECONDS - rng.gen_range(0..1000),
        ));
    }
    if rng.gen_ratio(1, 5) {
        p.deletion.ranges = (0..rng.gen_range(1..4))
            .map(|_| RangeTombstone {
                range: ClusteringRange {
                    start: random_bound(rng),
                    end: random_bound(rng),
                },
                deletion: DeletionTime::new(NOW_MICROS - rng.gen_range(0..5_000_000), NOW_SECONDS),
            })
            .collect();
    }
    if rng.gen_ratio(1, 4) {
        p.static_row = Some(random_row(rng, Vec::new(), 3));
    }
    for _ in 0..rows {
        // A small alphabet makes neighbouring clusterings share prefixes.
        let ck = random_bytes(rng, b"abcd", 8);
        let row = random_row(rng, ck, 6);
        p.add_row(row);
    }
    p
}

/// `n` partitions in key order, the first one wide (to span many chunks).
fn random_partitions(seed: u64, n: usize) -> Vec<PartitionUpdate> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut keys: Vec<DecoratedKey> = (0..n)
        .map(|_| DecoratedKey::new(&random_bytes(&mut rng, b"0123456789abcdef", 12)))
        .collect();
    keys.sort();
    keys.dedup();
    let mut out = Vec::new();
    for (i, k) in keys.into_iter().enumerate() {
        let rows = if i == n / 3 {
            600
        } else {
            rng.gen_range(0..12)
        };
        let p = random_partition(&mut rng, k, rows);
        if !(p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty()) {
            out.push(p);
        }
    }
    out
}

fn options(codec: Codec, chunk_length_bytes: u32, expected: u64) -> WriterOptions {
    WriterOptions {
        compression: CompressionParams {
            codec,
            chunk_length_bytes,
            ..CompressionParams::default()
        },
        expected_partitions: expected,
        base: EncodingBase::around(NOW_MICROS),
        creation_time_seconds: NOW_SECONDS,
        ..WriterOptions::default()
    }
}

fn write(
    fs: &Fs,
    dir: &Path,
    id: u64,
    parts: &[PartitionUpdate],
    opts: WriterOptions,
) -> Arc<SSTableReader> {
    let mut w = SSTableWriter::create(fs, dir, id, opts).unwrap();
    for p in parts {
        w.append(p).unwrap();
    }
    w.finish().unwrap()
}

fn codecs() -> [Codec; 4] {
    [
        Codec::None,
        Codec::Lz4,
        Codec::Zstd { level: 3 },
        Codec::Zstd { level: -7 },
    ]
}

#[test]
fn round_trip_every_codec_by_lookup_and_scan() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(11, 400);
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    for (i, codec) in codecs().into_iter().enumerate() {
        for chunk in [256u32, 16 * 1024] {
            let id = (i * 10) as u64 + u64::from(chunk == 256);
            let r = write(
                &fs,
                dir.path(),
                id,
                &parts,
                options(codec, chunk, parts.len() as u64),
            );
            assert_eq!(r.stats().partition_count, parts.len() as u64);
            for p in &parts {
                assert_eq!(
                    r.read_partition(&p.key, READ).unwrap().as_ref(),
                    Some(p),
                    "{codec:?} {chunk}"
                );
            }
            let all: Vec<PartitionUpdate> =
                r.scan(None, READ).unwrap().map(|p| p.unwrap()).collect();
            assert_eq!(all, parts, "{codec:?} full scan");
            for _ in 0..15 {
                // Start at a present key, or at a random (almost surely absent) one.
                let start = if rng.gen() {
                    parts[rng.gen_range(0..parts.len())].key.clone()
                } else {
                    DecoratedKey::new(&rng.gen::<[u8; 6]>())
                };
                let expected: Vec<&PartitionUpdate> =
                    parts.iter().filter(|p| p.key >= start).collect();
                let got: Vec<PartitionUpdate> = r
                    .scan(Some(&start), READ)
                    .unwrap()
                    .map(|p| p.unwrap())
                    .collect();
                assert_eq!(
                    got.iter().collect::<Vec<_>>(),
                    expected,
                    "{codec:?} scan from {start:?}"
                );
            }
            assert!(r.verify(READ).is_empty());
            if chunk == 256 {
                assert!(r.chunk_count() > 50, "the wide partition spans many chunks");
                assert!(r.index_block_count() > 1);
            }
        }
    }
}

#[test]
fn absent_keys_return_none_and_count_false_positives() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut rng = ChaCha8Rng::seed_from_u64(5);
    let mut keys: Vec<DecoratedKey> = (0..3000u32)
        .map(|i| DecoratedKey::new(format!("present-{i}").as_bytes()))
        .collect();
    keys.sort();
    let parts: Vec<PartitionUpdate> = keys
        .iter()
        .map(|k| random_partition(&mut rng, k.clone(), 1))
        .collect();
    let parts: Vec<PartitionUpdate> = parts
        .into_iter()
        .filter(|p| !(p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty()))
        .collect();
    let r = write(
        &fs,
        dir.path(),
        1,
        &parts,
        options(Codec::Lz4, 4096, parts.len() as u64),
    );
    let mut in_range = 0u64;
    for i in 0..20_000u32 {
        let k = DecoratedKey::new(format!("absent-{i}").as_bytes());
        if k > *r.first_key() && k < *r.last_key() {
            in_range += 1;
        }
        assert_eq!(r.read_partition(&k, READ).unwrap(), None);
    }
    let fp = r.bloom_false_positives();
    let rate = fp as f64 / in_range as f64;
    assert!(
        rate < 0.015,
        "false-positive rate {rate} ({fp} of {in_range})"
    );
    assert_eq!(r.bloom_true_positives(), 0);
    for p in parts.iter().take(10) {
        assert!(r.may_contain(&p.key));
        assert!(r.read_partition(&p.key, READ).unwrap().is_some());
    }
    assert_eq!(r.bloom_true_positives(), 10);
}

fn flip(path: &Path, bit: u64) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
    std::fs::write(path, bytes).unwrap();
}

/// Recomputes the CRC32C trailer of the stored chunk or block at `stored`
/// (payload then checksum), so that bytes a test changed inside it pass the
/// checksum: what a writer bug, not a flipped bit, would leave.
fn reseal(bytes: &mut [u8], stored: std::ops::Range<usize>) {
    let trailer = stored.end - format::CRC_BYTES;
    let crc = crc32c::crc32c(&bytes[stored.start..trailer]);
    bytes[trailer..stored.end].copy_from_slice(&crc.to_le_bytes());
}

fn corruption_offset(e: &Error, path: &Path) -> u64 {
    match e {
        Error::Corruption {
            path: p, offset, ..
        } => {
            assert_eq!(p, path, "the error names the file");
            *offset
        }
        other => panic!("expected corruption, got {other}"),
    }
}

#[test]
fn flipped_data_bit_is_corruption_never_wrong_data() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(21, 200);
    let r = write(&fs, dir.path(), 7, &parts, options(Codec::Lz4, 1024, 200));
    let path = r.path().to_path_buf();
    // A bit in the middle of chunk 3.
    let chunk = r.chunks[3];
    drop(r);
    flip(&path, (chunk.offset + u64::from(chunk.length) / 2) * 8 + 3);
    let r = SSTableReader::open(&fs, &path, 7, None).unwrap();
    let mut hit = 0;
    for p in &parts {
        match r.read_partition(&p.key, READ) {
            Ok(got) => assert_eq!(got.as_ref(), Some(p), "never wrong data"),
            Err(e) => {
                assert_eq!(corruption_offset(&e, &path), chunk.offset);
                hit += 1;
            }
        }
    }
    assert!(hit > 0, "some partition lives in the damaged chunk");
    let scanned: Vec<_> = r.scan(None, READ).unwrap().collect();
    let err = scanned.last().unwrap().as_ref().unwrap_err();
    assert_eq!(corruption_offset(err, &path), chunk.offset);
    let problems = r.verify(READ);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(corruption_offset(&problems[0], &path), chunk.offset);
}

#[test]
fn flipped_bits_in_every_tail_block_fail_open_and_index_blocks_fail_reads() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(31, 300);
    let r = write(
        &fs,
        dir.path(),
        3,
        &parts,
        options(Codec::Zstd { level: 1 }, 2048, 300),
    );
    let path = r.path().to_path_buf();
    let original = std::fs::read(&path).unwrap();
    let len = original.len() as u64;
    let footer = Footer::decode(&original[original.len() - FOOTER_BYTES..]).unwrap();
    let index_block = r.summary[1].clone();
    drop(r);
    let regions = [
        ("chunk table", footer.chunk_table_offset),
        ("summary", footer.summary_offset),
        ("filter", footer.filter_offset + 5),
        ("stats", footer.stats_offset + 1),
        ("footer", len - 30),
        ("magic", len - 1),
    ];
    for (name, at) in regions {
        std::fs::write(&path, &original).unwrap();
        flip(&path, at * 8 + 6);
        let e = SSTableReader::open(&fs, &path, 3, None).expect_err(name);
        corruption_offset(&e, &path);
    }
    std::fs::write(&path, &original).unwrap();
    flip(&path, (index_block.offset + 10) * 8);
    let r = SSTableReader::open(&fs, &path, 3, None).unwrap();
    let e = r.read_partition(&index_block.first_key, READ).unwrap_err();
    assert_eq!(corruption_offset(&e, &path), index_block.offset);
    let problems = r.verify(READ);
    assert_eq!(problems.len(), 1);
    assert_eq!(corruption_offset(&problems[0], &path), index_block.offset);
}

/// A version-2 identity for generation `id` (the writer fills in the rest).
fn identity(id: u64) -> SSTableIdentity {
    SSTableIdentity {
        table_id: 5,
        table_uuid: Some(crate::schema::TableUuid([0x5a; 16])),
        generation: id,
        keyspace: "ks".into(),
        table: "t".into(),
        // The random data's columns: a blob key, cells of columns 0..12.
        columns: std::iter::once(IdentityColumn {
            name: "k".into(),
            cql_type: "blob".into(),
            role: ColumnRole::PartitionKey,
            id: None,
        })
        .chain((0..12).map(|i| IdentityColumn {
            name: format!("v{i}"),
            cql_type: "blob".into(),
            role: ColumnRole::Regular,
            id: Some(i),
        }))
        .collect(),
        chunk_length_bytes: 0,
        codec: Codec::None,
        min_timestamp: 0,
        min_local_deletion: 0,
        min_ttl: 0,
        row_ts_bytes: 0,
    }
}

fn v2(id: u64, opts: WriterOptions) -> WriterOptions {
    WriterOptions {
        identity: Some(identity(id)),
        ..opts
    }
}

#[test]
fn version_2_records_its_identity_and_version_1_stays_readable() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(51, 100);
    let r1 = write(&fs, dir.path(), 1, &parts, options(Codec::Lz4, 1024, 100));
    assert_eq!(r1.format_version(), 1);
    assert!(r1.identity().is_none());
    assert_eq!(r1.chunk_ranges()[0].0, 0);
    let r2 = write(
        &fs,
        dir.path(),
        2,
        &parts,
        v2(2, options(Codec::Zstd { level: 2 }, 1024, 100)),
    );
    assert_eq!(r2.format_version(), FORMAT_VERSION);
    let id = r2.identity().unwrap();
    assert_eq!((id.table_id, id.generation), (5, 2));
    assert_eq!(id.chunk_length_bytes, 1024);
    assert_eq!(id.codec, Codec::Zstd { level: 2 });
    assert_eq!(id.base(), EncodingBase::around(NOW_MICROS));
    // The header is the first region; chunks follow it.
    assert!(r2.chunk_ranges()[0].0 > 0);
    for r in [&r1, &r2] {
        let got: Vec<_> = r.scan(None, READ).unwrap().map(|p| p.unwrap()).collect();
        assert_eq!(got, parts);
        assert!(r.verify(READ).is_empty());
    }
    // A writer refuses an identity of another generation.
    assert!(matches!(
        SSTableWriter::create(&fs, dir.path(), 3, v2(4, options(Codec::Lz4, 1024, 1))),
        Err(Error::InvalidInput(_))
    ));
}

/// Writes `parts`, destroys the tail (and optionally the middle chunk), and
/// returns what the offline salvage recovered.
fn salvage_after_tail_loss(
    with_identity: bool,
    damage_middle_chunk: bool,
) -> (Vec<PartitionUpdate>, crate::Result<salvage::FileSalvage>) {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(61, 200);
    // Base at the data's minimum, as every engine writer has it.
    let opts = WriterOptions {
        base: EncodingBase::ZERO,
        ..options(Codec::Lz4, 1024, 200)
    };
    let opts = if with_identity { v2(6, opts) } else { opts };
    let r = write(&fs, dir.path(), 6, &parts, opts);
    let path = r.path().to_path_buf();
    let chunks = r.chunk_ranges();
    let tail = chunks
        .iter()
        .chain(r.index_block_ranges().iter())
        .map(|(o, l)| o + l)
        .max()
        .unwrap();
    drop(r);
    let mut bytes = std::fs::read(&path).unwrap();
    bytes.truncate(tail as usize + 3);
    if damage_middle_chunk {
        let (o, l) = chunks[chunks.len() / 2];
        bytes[(o + l / 3) as usize] ^= 0x10;
    }
    std::fs::write(&path, &bytes).unwrap();
    let mut got = Vec::new();
    let r = salvage::salvage_file(&fs, &path, READ, &mut |item| {
        if let salvage::SalvageItem::Partition(p) = item {
            got.push(p);
        }
        Ok(())
    });
    assert!(r.is_err() || got.len() <= parts.len());
    for p in &got {
        assert!(parts.contains(p), "salvage invented a partition {p:?}");
    }
    (got, r)
}

#[test]
fn salvage_without_the_tail_recovers_every_partition_of_a_version_2_file() {
    let (got, r) = salvage_after_tail_loss(true, false);
    let r = r.unwrap();
    assert!(!r.tail_intact);
    let all = random_partitions(61, 200);
    assert_eq!(got, all);
    assert_eq!(r.counts.partitions_recovered, all.len() as u64);
    assert_eq!(r.counts.chunks_lost, 0);

    let (got, r) = salvage_after_tail_loss(true, true);
    let r = r.unwrap();
    assert_eq!(r.counts.chunks_lost, 1, "{r:?}");
    assert!(
        got.len() < all.len() && got.len() > all.len() / 2,
        "{}",
        got.len()
    );
    assert!(got.windows(2).all(|w| w[0].key < w[1].key));
}

#[test]
fn salvage_under_random_damage_never_invents_or_reorders() {
    // Salvage invariant 1, under seeded random flips and cuts of a tail-less and
    // of a whole file: whatever comes back was written, in order.
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(81, 150);
    // The random data reaches below `options`' base; every engine writer uses
    // the data's minimum (salvage relies on it to reject false partition starts).
    let opts = WriterOptions {
        base: EncodingBase::ZERO,
        ..options(Codec::Lz4, 512, 150)
    };
    let r = write(&fs, dir.path(), 8, &parts, v2(8, opts));
    let path = r.path().to_path_buf();
    let data_end = r
        .chunk_ranges()
        .iter()
        .chain(r.index_block_ranges().iter())
        .map(|(o, l)| o + l)
        .max()
        .unwrap();
    let header = r.chunk_ranges()[0].0;
    drop(r);
    let original = std::fs::read(&path).unwrap();
    let mut rng = ChaCha8Rng::seed_from_u64(7);
    let mut recovered_total = 0;
    for round in 0..150 {
        let mut bytes = original.clone();
        if round % 2 == 0 {
            bytes.truncate(data_end as usize + rng.gen_range(0..8));
        }
        for _ in 0..rng.gen_range(1..6) {
            let at = rng.gen_range(header..data_end) as usize;
            bytes[at] ^= 1 << rng.gen_range(0..8);
        }
        std::fs::write(&path, &bytes).unwrap();
        let mut got: Vec<PartitionUpdate> = Vec::new();
        let s = salvage::salvage_file(&fs, &path, READ, &mut |item| {
            if let salvage::SalvageItem::Partition(p) = item {
                assert!(parts.contains(&p), "round {round}: invented {:?}", p.key);
                assert!(got.last().is_none_or(|l| l.key < p.key), "round {round}");
                got.push(p);
            }
            Ok(())
        })
        .unwrap();
        assert_eq!(s.counts.partitions_recovered, got.len() as u64);
        recovered_total += got.len();
    }
    assert!(recovered_total > 150 * parts.len() / 2, "{recovered_total}");
}

#[test]
fn salvage_with_a_damaged_identity_header_uses_the_tail() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(71, 100);
    let r = write(
        &fs,
        dir.path(),
        4,
        &parts,
        v2(4, options(Codec::Lz4, 1024, 100)),
    );
    let path = r.path().to_path_buf();
    drop(r);
    flip(&path, 8 * 20 + 1);
    assert!(SSTableReader::open(&fs, &path, 4, None).is_err());
    let mut got = Vec::new();
    let mut damage = Vec::new();
    let s = salvage::salvage_file(&fs, &path, READ, &mut |item| {
        match item {
            salvage::SalvageItem::Partition(p) => got.push(p),
            salvage::SalvageItem::Damage { file_offset, .. } => damage.push(file_offset),
        }
        Ok(())
    })
    .unwrap();
    assert!(s.tail_intact && s.identity.is_none());
    assert_eq!(got, parts);
    assert_eq!(damage, vec![0]);
}

#[test]
fn salvage_without_the_tail_refuses_a_version_1_file() {
    let (got, r) = salvage_after_tail_loss(false, false);
    assert!(got.is_empty());
    let msg = r.unwrap_err().to_string();
    assert!(msg.contains("no identity header"), "{msg}");
}

#[test]
fn every_single_bit_flip_is_detected() {
    for with_identity in [false, true] {
        every_single_bit_flip_is_detected_in(with_identity);
    }
}

fn every_single_bit_flip_is_detected_in(with_identity: bool) {
    // Invariant 1: every byte is under a checksum, so each of these flips must be
    // caught by open or verify, and reads must never return wrong data.
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(41, 40);
    let opts = options(Codec::Lz4, 512, 40);
    let opts = if with_identity { v2(9, opts) } else { opts };
    let r = write(&fs, dir.path(), 9, &parts, opts);
    let path = r.path().to_path_buf();
    drop(r);
    let original = std::fs::read(&path).unwrap();
    let bits = original.len() as u64 * 8;
    let mut rng = ChaCha8Rng::seed_from_u64(42);
    let (mut at_open, mut at_verify) = (0, 0);
    for _ in 0..600 {
        let bit = rng.gen_range(0..bits);
        let mut bytes = original.clone();
        bytes[(bit / 8) as usize] ^= 1 << (bit % 8);
        std::fs::write(&path, &bytes).unwrap();
        let r = match SSTableReader::open(&fs, &path, 9, None) {
            Err(e) => {
                corruption_offset(&e, &path);
                at_open += 1;
                continue;
            }
            Ok(r) => r,
        };
        for p in &parts {
            if let Ok(got) = r.read_partition(&p.key, READ) {
                assert_eq!(got.as_ref(), Some(p), "bit {bit}: wrong data returned");
            }
        }
        let problems = r.verify(READ);
        assert!(!problems.is_empty(), "bit {bit} of {bits} went undetected");
        for e in &problems {
            corruption_offset(e, &path);
        }
        at_verify += 1;
    }
    assert_eq!(at_open + at_verify, 600);
    assert!(
        at_verify > 0 && at_open > 0,
        "flips hit both data and tail ({at_open} at open, {at_verify} by verify)"
    );
}

#[test]
fn out_of_order_append_is_invalid_input_and_abort_removes_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(51, 10);
    let mut w = SSTableWriter::create(&fs, dir.path(), 4, options(Codec::Lz4, 4096, 10)).unwrap();
    w.append(&parts[1]).unwrap();
    let before = w.uncompressed_bytes_written();
    assert!(matches!(w.append(&parts[0]), Err(Error::InvalidInput(_))));
    assert!(
        matches!(w.append(&parts[1]), Err(Error::InvalidInput(_))),
        "duplicates too"
    );
    assert_eq!(w.uncompressed_bytes_written(), before, "nothing written");
    let mut unsorted = parts[2].clone();
    unsorted.rows = vec![Row::new(b"b".to_vec()), Row::new(b"a".to_vec())];
    assert!(matches!(w.append(&unsorted), Err(Error::InvalidInput(_))));
    w.append(&parts[2]).unwrap();
    assert_eq!(
        fs.list_dir(dir.path()).unwrap(),
        vec!["strata-4-Data.db.tmp".to_string()]
    );
    w.abort();
    assert!(fs.list_dir(dir.path()).unwrap().is_empty());
    // finish with nothing appended refuses and cleans up too.
    let w = SSTableWriter::create(&fs, dir.path(), 5, options(Codec::Lz4, 4096, 10)).unwrap();
    assert!(matches!(w.finish(), Err(Error::InvalidInput(_))));
    assert!(fs.list_dir(dir.path()).unwrap().is_empty());
}

#[test]
fn bytes_written_under_the_tag_equal_the_file_size() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let table = IoCounters::new();
    let parts = random_partitions(61, 300);
    let opts = WriterOptions {
        tag: IoTag::compaction(2),
        table_io: Some(table.clone()),
        ..options(Codec::Zstd { level: 3 }, 4096, 300)
    };
    let r = write(&fs, dir.path(), 2, &parts, opts);
    let size = std::fs::metadata(r.path()).unwrap().len();
    assert_eq!(r.file_size(), size);
    let g = fs.counters().snapshot();
    assert_eq!(g.written(IoCause::Compaction), size);
    assert_eq!(g.compaction_written_level_bytes[2], size);
    assert_eq!(table.snapshot().written(IoCause::Compaction), size);
    // Reads are charged to the caller's tag, globally and per table.
    let before = table.snapshot().read(IoCause::UserRead);
    r.read_partition(&parts[0].key, READ).unwrap();
    assert!(table.snapshot().read(IoCause::UserRead) > before);
}

#[test]
fn repetitive_data_compresses_and_random_data_is_stored_raw() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut rng = ChaCha8Rng::seed_from_u64(71);
    let mut keys: Vec<DecoratedKey> = (0..2000u32)
        .map(|i| DecoratedKey::new(&i.to_be_bytes()))
        .collect();
    keys.sort();
    let make = |rng: &mut ChaCha8Rng, random: bool| -> Vec<PartitionUpdate> {
        keys.iter()
            .map(|k| {
                let mut p = PartitionUpdate::new(k.clone());
                let mut r = Row::new(Vec::new());
                r.liveness = LivenessInfo::new(NOW_MICROS);
                for c in 0..5 {
                    let v: Vec<u8> = if random {
                        (0..34).map(|_| rng.gen()).collect()
                    } else {
                        vec![b'x'; 34]
                    };
                    r.add_cell(Cell::live(c, NOW_MICROS, v));
                }
                p.rows.push(r);
                p
            })
            .collect()
    };
    let repetitive = make(&mut rng, false);
    let random = make(&mut rng, true);
    let mut id = 0;
    for codec in [Codec::Lz4, Codec::Zstd { level: 3 }] {
        id += 1;
        let r = write(
            &fs,
            dir.path(),
            id,
            &repetitive,
            options(codec, 16384, 2000),
        );
        let ratio = r.stats().compression_ratio();
        assert!(ratio < 0.5, "{codec:?} on repetitive rows: ratio {ratio}");
        id += 1;
        // min_compress_ratio 1.2: a chunk stays compressed only if it shrinks
        // to 1/1.2 of its size or less.
        let mut raw_unless_worth_it = options(codec, 16384, 2000);
        raw_unless_worth_it.compression.max_compressed_bytes =
            crate::codec::max_compressed_length(16384, 1.2);
        let r = write(&fs, dir.path(), id, &random, raw_unless_worth_it);
        let s = r.stats();
        // Random values leave only the per-row framing to compress: less than
        // 1/8, so under ratio 1.2 every full chunk is raw (5 bytes of codec +
        // crc each). The short last chunk is judged against the full chunk's
        // limit, as in Cassandra, and may stay compressed.
        let raw_total = s.uncompressed_bytes + 5 * r.chunk_count() as u64;
        let last = s.uncompressed_bytes % 16384;
        assert!(
            s.compressed_bytes <= raw_total && s.compressed_bytes + last >= raw_total,
            "{codec:?} random: {} stored, {raw_total} all raw, last chunk {last}",
            s.compressed_bytes
        );
    }
}

#[test]
fn fixed_overhead_of_a_small_sstable_is_under_1_kib() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut p = PartitionUpdate::new(DecoratedKey::new(b"user-0001"));
    let mut row = Row::new(b"ck".to_vec());
    row.liveness = LivenessInfo::new(NOW_MICROS);
    row.add_cell(Cell::live(0, NOW_MICROS, b"value".to_vec()));
    p.rows.push(row);
    let r = write(&fs, dir.path(), 1, &[p], options(Codec::Lz4, 16384, 1));
    let overhead = r.file_size() - r.index_bytes() - r.filter_bytes();
    assert!(overhead < 1024, "fixed overhead {overhead} bytes");
    eprintln!(
        "1-partition sstable: {} bytes, {} index, {} filter, {} data (fixed overhead {overhead})",
        r.file_size(),
        r.index_bytes(),
        r.filter_bytes(),
        r.stats().compressed_bytes
    );
}

#[test]
fn statistics_describe_the_content() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(81, 150);
    let opts = WriterOptions {
        level: 3,
        ..options(Codec::Lz4, 4096, 150)
    };
    let r = write(&fs, dir.path(), 8, &parts, opts);
    let s = r.stats();
    assert_eq!(s.partition_count, parts.len() as u64);
    assert_eq!(
        s.row_count,
        parts.iter().map(|p| p.rows.len() as u64).sum::<u64>()
    );
    assert_eq!(
        s.cell_count,
        parts.iter().map(|p| p.cell_count() as u64).sum::<u64>()
    );
    assert_eq!(s.first_key, parts[0].key);
    assert_eq!(s.last_key, parts[parts.len() - 1].key);
    assert_eq!(
        s.max_timestamp_micros,
        parts.iter().map(|p| p.max_timestamp()).max().unwrap()
    );
    assert_eq!(s.level, 3);
    assert_eq!(s.codec, Codec::Lz4);
    assert_eq!(s.creation_time_seconds, NOW_SECONDS);
    assert_eq!(s.partition_size_bytes.count(), s.partition_count);
    assert_eq!(
        s.max_local_deletion_seconds,
        crate::data::NO_DELETION_TIME,
        "live data never expires"
    );
    assert!(s.tombstone_count > 0);
    assert_eq!(s.droppable_tombstones.total(), s.tombstone_count);
    let far_future = s.estimate_droppable(NOW_SECONDS + 10_000_000);
    assert!((far_future - s.tombstone_count as f64 / s.tombstone_candidates as f64).abs() < 1e-9);
    assert_eq!(s.estimate_droppable(0), 0.0);
    assert_eq!(
        s.compressed_bytes,
        r.chunks.iter().map(|c| u64::from(c.length)).sum::<u64>()
    );
}

#[test]
fn obsolete_file_is_deleted_after_the_last_reader_drops_never_by_the_reader() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(91, 20);
    let r = write(&fs, dir.path(), 6, &parts, options(Codec::Lz4, 4096, 20));
    let path = r.path().to_path_buf();
    let in_flight = Arc::clone(&r);
    let scanner = r.scan(None, READ).unwrap();
    r.mark_obsolete();
    drop(r);
    drop(in_flight);
    assert!(path.exists(), "a scanner still holds the reader");
    assert_eq!(
        fs.reclaim_pending(),
        0,
        "nothing queued while a reader holds it"
    );
    assert_eq!(scanner.count(), parts.len());
    // The thread that dropped the last reference only queued the file.
    assert!(path.exists(), "the reader's thread unlinked the file");
    assert_eq!(fs.reclaim_pending(), 1);
    // The runtime's reclaim unlinks it.
    assert_eq!(fs.reclaim_obsolete(), 1);
    assert!(!path.exists());
    assert_eq!(fs.reclaim_pending(), 0);
}

#[test]
fn readers_are_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<SSTableReader>();
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = Arc::new(random_partitions(101, 200));
    let r = write(&fs, dir.path(), 1, &parts, options(Codec::Lz4, 1024, 200));
    let handles: Vec<_> = (0..4)
        .map(|t| {
            let (r, parts) = (Arc::clone(&r), Arc::clone(&parts));
            std::thread::spawn(move || {
                for p in parts.iter().skip(t).step_by(4) {
                    assert_eq!(r.read_partition(&p.key, READ).unwrap().as_ref(), Some(p));
                }
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
}

#[test]
fn file_names() {
    assert_eq!(data_file_name(42), "strata-42-Data.db");
    assert_eq!(parse_data_file_name("strata-42-Data.db"), Some(42));
    assert_eq!(parse_data_file_name("strata-42-Data.db.tmp"), None);
    assert_eq!(parse_data_file_name("other"), None);
}

#[test]
fn static_row_with_clustering_is_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut p = PartitionUpdate::new(DecoratedKey::new(b"k"));
    p.static_row = Some(Row::new(b"x".to_vec()));
    p.deletion = PartitionDeletion::default();
    let mut w = SSTableWriter::create(&fs, dir.path(), 1, options(Codec::Lz4, 4096, 1)).unwrap();
    assert!(matches!(w.append(&p), Err(Error::InvalidInput(_))));
    let bad = WriterOptions {
        bloom_fp_chance: 0.0,
        ..options(Codec::Lz4, 4096, 1)
    };
    assert!(matches!(
        SSTableWriter::create(&fs, dir.path(), 2, bad),
        Err(Error::InvalidOption { .. })
    ));
    let bad = options(Codec::Zstd { level: 40 }, 4096, 1);
    assert!(matches!(
        SSTableWriter::create(&fs, dir.path(), 2, bad),
        Err(Error::InvalidOption { .. })
    ));
}

// -- Row index (format version 3) ------------------------------------------

/// Brute force: the rows of `p` in `range`, in the requested direction.
fn filtered(p: &PartitionUpdate, range: &ClusteringRange, reversed: bool) -> Vec<Row> {
    let mut rows: Vec<Row> = p
        .rows
        .iter()
        .filter(|r| range.contains(&r.clustering))
        .cloned()
        .collect();
    if reversed {
        rows.reverse();
    }
    rows
}

/// `p` reads back whole from `r`, by the full decode and by a slice of all
/// its rows (`what` names the case in failures).
fn reads_back_whole(r: &Arc<SSTableReader>, p: &PartitionUpdate, what: &str) {
    assert_eq!(
        r.read_partition(&p.key, READ).unwrap().as_ref(),
        Some(p),
        "{what}"
    );
    let mut s = r
        .slice(&p.key, &ClusteringRange::ALL, false, READ)
        .unwrap()
        .unwrap();
    assert_eq!(drain(&mut s, usize::MAX).unwrap(), p.rows, "{what}");
}

fn drain(s: &mut SSTableSlice, limit: usize) -> crate::error::Result<Vec<Row>> {
    let mut out = Vec::new();
    while out.len() < limit {
        match s.next_row()? {
            Some(r) => out.push(r),
            None => break,
        }
    }
    Ok(out)
}

/// A bound at, just around, or a prefix of a clustering the partition holds,
/// so seeks land on block edges as well as inside blocks.
fn bound_near(rng: &mut ChaCha8Rng, p: &PartitionUpdate) -> ClusteringBound {
    if p.rows.is_empty() || rng.gen_ratio(1, 5) {
        return random_bound(rng);
    }
    let ck = &p.rows[rng.gen_range(0..p.rows.len())].clustering;
    let prefix = match rng.gen_range(0..3) {
        0 => ck[..rng.gen_range(1..=ck.len())].to_vec(),
        _ => ck.clone(),
    };
    ClusteringBound {
        prefix,
        inclusive: rng.gen(),
    }
}

/// Partitions of up to a few thousand rows (many row blocks each) between
/// small ones, in key order.
fn wide_partitions(seed: u64) -> Vec<PartitionUpdate> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut keys: Vec<DecoratedKey> = (0..12)
        .map(|i| DecoratedKey::new(format!("wide-{i}").as_bytes()))
        .collect();
    keys.sort();
    keys.into_iter()
        .enumerate()
        .map(|(i, k)| {
            let rows = [3000, 5, 0, 800, 1, 4000][i % 6];
            random_partition(&mut rng, k, rows)
        })
        .filter(|p| !(p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty()))
        .collect()
}

#[test]
fn slices_through_the_row_index_match_a_filter_of_the_whole_partition() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = wide_partitions(71);
    let mut rng = ChaCha8Rng::seed_from_u64(72);
    for (id, (codec, cl)) in [
        (Codec::Lz4, 4096u32),
        (Codec::None, 1024),
        (Codec::Zstd { level: 1 }, 16384),
    ]
    .into_iter()
    .enumerate()
    {
        let id = id as u64 + 1;
        let r = write(&fs, dir.path(), id, &parts, v2(id, options(codec, cl, 16)));
        assert_eq!(r.format_version(), FORMAT_VERSION);
        assert!(r.verify(READ).is_empty());
        let mut indexed = 0;
        for p in &parts {
            // The full decode skips the row index and returns what was written.
            assert_eq!(r.read_partition(&p.key, READ).unwrap().as_ref(), Some(p));
            let whole = r
                .slice(&p.key, &ClusteringRange::ALL, false, READ)
                .unwrap()
                .unwrap();
            assert_eq!(whole.deletion, p.deletion);
            assert_eq!(whole.static_row, p.static_row);
            for _ in 0..60 {
                let range = if rng.gen_ratio(1, 8) {
                    ClusteringRange::ALL
                } else {
                    ClusteringRange {
                        start: bound_near(&mut rng, p),
                        end: bound_near(&mut rng, p),
                    }
                };
                let reversed = rng.gen();
                let limit = *[1usize, 3, 10, 100, usize::MAX]
                    .choose(&mut rng)
                    .unwrap_or(&10);
                let mut s = r.slice(&p.key, &range, reversed, READ).unwrap().unwrap();
                let got = drain(&mut s, limit).unwrap();
                let mut want = filtered(p, &range, reversed);
                want.truncate(limit);
                assert_eq!(got, want, "{range:?} reversed={reversed} limit={limit}");
                if s.blocks_read() > 0 {
                    indexed += 1;
                }
            }
        }
        assert!(
            indexed > 100,
            "the wide partitions went through their row index"
        );
        // Absent keys: no slice.
        assert!(r
            .slice(
                &DecoratedKey::new(b"absent"),
                &ClusteringRange::ALL,
                false,
                READ
            )
            .unwrap()
            .is_none());
        // The scanner (compaction's path) still returns every partition whole.
        let scanned: Vec<PartitionUpdate> =
            r.scan(None, READ).unwrap().map(|p| p.unwrap()).collect();
        assert_eq!(scanned, parts);
    }
}

#[test]
fn a_ten_row_seek_reads_one_or_two_blocks_of_a_wide_partition() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let key = DecoratedKey::new(b"ts");
    let mut p = PartitionUpdate::new(key.clone());
    for i in 0..50_000u32 {
        let mut row = Row::new(i.to_be_bytes().to_vec());
        row.liveness = LivenessInfo::new(NOW_MICROS);
        row.add_cell(Cell::live(0, NOW_MICROS, vec![7; 24]));
        p.rows.push(row);
    }
    let r = write(
        &fs,
        dir.path(),
        1,
        &[p.clone()],
        v2(1, options(Codec::Lz4, 16384, 1)),
    );
    let at = |i: u32| i.to_be_bytes().to_vec();
    let cases = [
        (ClusteringRange::ALL, false, 0u32),
        (ClusteringRange::ALL, true, 49_999),
        (
            ClusteringRange {
                start: ClusteringBound::inclusive(at(25_000)),
                end: ClusteringBound::UNBOUNDED,
            },
            false,
            25_000,
        ),
        (
            ClusteringRange {
                start: ClusteringBound::UNBOUNDED,
                end: ClusteringBound::exclusive(at(25_000)),
            },
            true,
            24_999,
        ),
    ];
    for (range, reversed, first) in cases {
        let before = fs.counters().snapshot().read(IoCause::UserRead);
        let mut s = r.slice(&key, &range, reversed, READ).unwrap().unwrap();
        let rows = drain(&mut s, 10).unwrap();
        assert_eq!(rows.len(), 10);
        assert_eq!(rows[0].clustering, at(first));
        assert!(
            s.blocks_read() <= 2,
            "{} blocks for 10 rows",
            s.blocks_read()
        );
        // Header, root, one inner node, one or two blocks: a few chunks of a
        // partition of ~100 chunks.
        let read = fs.counters().snapshot().read(IoCause::UserRead) - before;
        assert!(read < 8 * 16384, "{read} bytes read for 10 rows");
    }
    // An empty range touches no block.
    let empty = ClusteringRange {
        start: ClusteringBound::exclusive(at(49_999)),
        end: ClusteringBound::UNBOUNDED,
    };
    let mut s = r.slice(&key, &empty, false, READ).unwrap().unwrap();
    assert!(s.next_row().unwrap().is_none());
    assert_eq!(s.blocks_read(), 0);
}

#[test]
fn flipped_bits_under_a_row_index_are_corruption_never_wrong_rows() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = wide_partitions(81);
    let r = write(
        &fs,
        dir.path(),
        1,
        &parts,
        v2(1, options(Codec::Lz4, 4096, 16)),
    );
    let clean = std::fs::read(r.path()).unwrap();
    let len_bits = clean.len() as u64 * 8;
    drop(r);
    let mut rng = ChaCha8Rng::seed_from_u64(82);
    let path = data_file_path(dir.path(), 1);
    for _ in 0..150 {
        std::fs::write(&path, &clean).unwrap();
        flip(&path, rng.gen_range(0..len_bits));
        let Ok(r) = SSTableReader::open(&fs, &path, 1, None) else {
            continue;
        };
        for p in &parts {
            for reversed in [false, true] {
                match r.slice(&p.key, &ClusteringRange::ALL, reversed, READ) {
                    Ok(Some(mut s)) => {
                        if let Ok(rows) = drain(&mut s, usize::MAX) {
                            assert_eq!(rows, filtered(p, &ClusteringRange::ALL, reversed));
                            assert_eq!(s.deletion, p.deletion);
                        }
                    }
                    Ok(None) => panic!("a flipped bit lost a partition without an error"),
                    Err(e) => {
                        corruption_offset(&e, &path);
                    }
                }
            }
        }
    }
}

#[test]
fn an_inconsistent_row_index_under_valid_checksums_is_corruption() {
    // Uncompressed chunks, so a byte of the row index can be changed and its
    // chunk's checksum recomputed: what a writer bug would leave behind.
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let key = DecoratedKey::new(b"ts");
    let mut p = PartitionUpdate::new(key.clone());
    for i in 0..5000u32 {
        let mut row = Row::new(i.to_be_bytes().to_vec());
        row.liveness = LivenessInfo::new(NOW_MICROS);
        row.add_cell(Cell::live(0, NOW_MICROS, vec![7; 24]));
        p.rows.push(row);
    }
    let cl = 4096u64;
    let r = write(
        &fs,
        dir.path(),
        1,
        &[p],
        v2(1, options(Codec::None, cl as u32, 1)),
    );
    assert!(r.verify(READ).is_empty());
    let entry = r.index_block(0, READ).unwrap()[0].clone();
    let loc = entry.row_index.expect("5000 rows have a row index");
    let chunks = r.chunk_ranges();
    let path = r.path().to_path_buf();
    drop(r);
    let mut bytes = std::fs::read(&path).unwrap();
    // Stored chunk: [codec][raw bytes][crc32c]; `at` is a data-stream offset.
    let locate = |at: u64| {
        let (off, _) = chunks[(at / cl) as usize];
        (off + 1 + at % cl) as usize
    };
    let root = entry.offset + loc.root_offset;
    assert_eq!(bytes[locate(root)], 0, "one root node at level 0");
    // Root: level, count (one byte), first entry's first clustering (length
    // byte, then 4 bytes): make it [0,0,0,1], after block 0's first row.
    let at = root + 1 + 1 + 1 + 3;
    bytes[locate(at)] = 1;
    let (off, len) = chunks[(at / cl) as usize];
    reseal(&mut bytes, off as usize..(off + len) as usize);
    std::fs::write(&path, &bytes).unwrap();

    let r = SSTableReader::open(&fs, &path, 1, None).unwrap();
    let problems = r.verify(READ);
    assert_eq!(problems.len(), 1, "{problems:?}");
    corruption_offset(&problems[0], &path);
    let mut s = r
        .slice(&key, &ClusteringRange::ALL, false, READ)
        .unwrap()
        .unwrap();
    let e = drain(&mut s, 10).unwrap_err();
    corruption_offset(&e, &path);
    // The whole-partition path does not use the index and still reads.
    assert_eq!(
        r.read_partition(&key, READ).unwrap().unwrap().rows.len(),
        5000
    );
}

/// The partitions' rows encoded against `base`, as a memtable holds them.
fn encoded_bodies(parts: &[PartitionUpdate], base: &EncodingBase) -> Vec<Vec<Vec<u8>>> {
    parts
        .iter()
        .map(|p| {
            p.rows
                .iter()
                .map(|r| {
                    let mut body = Vec::new();
                    crate::encoding::encode_row(r, base, &mut body);
                    body
                })
                .collect()
        })
        .collect()
}

#[test]
fn encoded_rows_write_the_same_file_as_decoded_ones() {
    // A flush copies the memtable's encoded rows (issue 15); the file, row
    // indexes and statistics included, must be the one `append` writes.
    let fs = Fs::new();
    let mut parts = random_partitions(91, 200);
    let wide = wide_partitions(92);
    parts.retain(|p| !wide.iter().any(|w| w.key == p.key));
    parts.extend(wide);
    parts.sort_by(|a, b| a.key.cmp(&b.key));
    // The memtable encodes varint row timestamps; a writer with a width
    // re-encodes each one that is shorter fixed, as `append` does.
    let mut sizes = Vec::new();
    for (with_identity, widen) in [(false, false), (true, false), (true, true)] {
        let opts = options(Codec::Lz4, 4096, parts.len() as u64);
        let mut opts = if with_identity { v2(5, opts) } else { opts };
        let base = opts.base;
        if widen {
            opts.base = base.with_row_ts_span_to(NOW_MICROS + 1_000_000_000);
            assert_eq!(opts.base.row_ts_bytes, 4);
        }
        let bodies = encoded_bodies(&parts, &base);
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let decoded = write(&fs, a.path(), 5, &parts, opts.clone());
        let mut w = SSTableWriter::create(&fs, b.path(), 5, opts).unwrap();
        for (p, bodies) in parts.iter().zip(&bodies) {
            let rows: Vec<EncodedRow<'_>> = p
                .rows
                .iter()
                .zip(bodies)
                .map(|(r, body)| EncodedRow {
                    clustering: &r.clustering,
                    body,
                })
                .collect();
            w.append_encoded(&EncodedPartition {
                key: &p.key,
                deletion: &p.deletion,
                static_row: p.static_row.as_ref(),
                rows: &rows,
                base,
            })
            .unwrap();
        }
        let encoded = w.finish().unwrap();
        assert_eq!(encoded.stats(), decoded.stats());
        let (fa, fb) = (
            std::fs::read(data_file_path(a.path(), 5)).unwrap(),
            std::fs::read(data_file_path(b.path(), 5)).unwrap(),
        );
        assert!(
            fa == fb,
            "files differ (identity {with_identity}, width {widen})"
        );
        sizes.push(encoded.stats().uncompressed_bytes);
    }
    assert!(
        sizes[2] < sizes[1],
        "fixed-width timestamps must shorten the rows: {sizes:?}"
    );
}

#[test]
fn encoded_rows_under_another_base_are_refused_and_change_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(93, 20);
    let opts = options(Codec::Lz4, 4096, parts.len() as u64);
    let other = EncodingBase::around(NOW_MICROS - 1);
    let bodies = encoded_bodies(&parts, &other);
    let mut w = SSTableWriter::create(&fs, dir.path(), 6, opts).unwrap();
    let p = &parts[0];
    let rows: Vec<EncodedRow<'_>> = p
        .rows
        .iter()
        .zip(&bodies[0])
        .map(|(r, body)| EncodedRow {
            clustering: &r.clustering,
            body,
        })
        .collect();
    let e = w
        .append_encoded(&EncodedPartition {
            key: &p.key,
            deletion: &p.deletion,
            static_row: p.static_row.as_ref(),
            rows: &rows,
            base: other,
        })
        .unwrap_err();
    assert!(matches!(e, Error::InvalidInput(_)), "{e}");
    // The writer is still usable and wrote nothing for the refused partition.
    for p in &parts {
        w.append(p).unwrap();
    }
    let r = w.finish().unwrap();
    assert_eq!(r.stats().partition_count, parts.len() as u64);
}

#[test]
fn an_encoded_row_that_does_not_parse_fails_the_writer() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let opts = options(Codec::Lz4, 4096, 1);
    let base = opts.base;
    let key = DecoratedKey::new(b"k");
    let deletion = PartitionDeletion::default();
    let rows = [EncodedRow {
        clustering: b"c",
        body: &[0xff],
    }];
    let mut w = SSTableWriter::create(&fs, dir.path(), 7, opts).unwrap();
    let p = EncodedPartition {
        key: &key,
        deletion: &deletion,
        static_row: None,
        rows: &rows,
        base,
    };
    assert!(w.append_encoded(&p).is_err());
    assert!(w.append_encoded(&p).is_err(), "unusable after the failure");
}

/// Every index entry of `r`, in order.
fn index_entries(r: &SSTableReader) -> Vec<format::IndexEntry> {
    (0..r.index_block_count())
        .flat_map(|b| r.index_block(b, READ).unwrap())
        .collect()
}

#[test]
fn a_sparse_index_finds_every_partition_by_lookup_slice_cell_and_scan() {
    sparse_index_round_trip(false);
}

/// The same with a chunk cache: user reads then take the cached searchable
/// index blocks, and a scan with a start seeks in one by binary search.
#[test]
fn a_sparse_index_through_the_chunk_cache_finds_every_partition() {
    sparse_index_round_trip(true);
}

fn sparse_index_round_trip(cached: bool) {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    if cached {
        fs.set_chunk_cache(Arc::new(crate::chunk_cache::ChunkCache::new(1 << 20)));
    }
    let mut rng = ChaCha8Rng::seed_from_u64(41);
    // Small partitions around one wide one (a row index, alone in its entry).
    let parts = random_partitions(40, 1500);
    for (id, chunk) in [(1u64, 256u32), (2, 4096), (3, 16 * 1024)] {
        let r = write(
            &fs,
            dir.path(),
            id,
            &parts,
            v2(id, options(Codec::Lz4, chunk, parts.len() as u64)),
        );
        assert_eq!(r.format_version(), FORMAT_VERSION);
        let entries = index_entries(&r);
        // The entries tile the data stream and count every partition once.
        assert_eq!(
            entries.iter().map(|e| e.partitions).sum::<u64>(),
            parts.len() as u64
        );
        assert_eq!(
            entries.iter().map(|e| e.length).sum::<u64>(),
            r.uncompressed_bytes()
        );
        for e in &entries {
            // A granule starts in one chunk and its partitions too; only a
            // partition of its own may be as large as a granule's target.
            assert!(e.row_index.is_none() || e.partitions == 1);
            if e.partitions > 1 {
                assert!(e.length < 2 * format::GRANULE_TARGET_BYTES, "{e:?}");
            }
        }
        if chunk >= 4096 {
            assert!(
                entries.len() * 4 < parts.len(),
                "{} entries for {} partitions",
                entries.len(),
                parts.len()
            );
        }
        for p in &parts {
            reads_back_whole(&r, p, &format!("chunk {chunk}"));
            if let Some(row) = p.rows.first() {
                let col = row.cells.first().map_or(0, |c| c.column);
                let cell = r
                    .locate_cell(&p.key, &row.clustering, col, READ)
                    .unwrap()
                    .unwrap();
                assert_eq!(cell.deletion, p.deletion, "{chunk}");
                assert!(cell.row.is_some(), "{chunk}");
            }
        }
        assert_eq!(
            r.bloom_true_positives(),
            2 * parts.len() as u64 + { parts.iter().filter(|p| !p.rows.is_empty()).count() as u64 }
        );
        for i in 0..3000u32 {
            let k = DecoratedKey::new(format!("absent-{i}").as_bytes());
            assert_eq!(r.read_partition(&k, READ).unwrap(), None);
        }
        let all: Vec<PartitionUpdate> = r.scan(None, READ).unwrap().map(|p| p.unwrap()).collect();
        assert_eq!(all, parts, "{chunk} full scan");
        for _ in 0..40 {
            let start = if rng.gen() {
                parts[rng.gen_range(0..parts.len())].key.clone()
            } else {
                DecoratedKey::new(&rng.gen::<[u8; 6]>())
            };
            let from: Vec<&PartitionUpdate> = parts.iter().filter(|p| p.key >= start).collect();
            let got: Vec<PartitionUpdate> = r
                .scan(Some(&start), READ)
                .unwrap()
                .map(|p| p.unwrap())
                .collect();
            assert_eq!(got.iter().collect::<Vec<_>>(), from, "{chunk} scan");
            let after: Vec<&PartitionUpdate> = parts.iter().filter(|p| p.key > start).collect();
            let got: Vec<PartitionUpdate> = r
                .scan_after(&start, READ)
                .unwrap()
                .map(|p| p.unwrap())
                .collect();
            assert_eq!(got.iter().collect::<Vec<_>>(), after, "{chunk} scan after");
        }
        let spans = r.partition_spans(READ).unwrap();
        assert_eq!(
            spans.iter().map(|(k, _)| k).collect::<Vec<_>>(),
            parts.iter().map(|p| &p.key).collect::<Vec<_>>()
        );
        assert_eq!(
            spans.iter().map(|(_, n)| n).sum::<u64>(),
            r.uncompressed_bytes()
        );
        assert!(r.verify(READ).is_empty(), "{chunk}");
    }
}

#[test]
fn a_sparse_index_is_a_small_part_of_a_file_of_small_partitions() {
    // The shape: 16-byte keys, one row with one 100-byte cell each.
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut keys: Vec<DecoratedKey> = (0..20_000u64)
        .map(|i| DecoratedKey::new(&[i.to_be_bytes(), (i * 7919).to_le_bytes()].concat()))
        .collect();
    keys.sort();
    let parts: Vec<PartitionUpdate> = keys
        .into_iter()
        .map(|k| {
            let mut p = PartitionUpdate::new(k);
            let mut row = Row::new(Vec::new());
            row.liveness = LivenessInfo::new(NOW_MICROS);
            row.add_cell(Cell::live(0, NOW_MICROS, vec![7u8; 100]));
            p.add_row(row);
            p
        })
        .collect();
    let dense = write(
        &fs,
        dir.path(),
        1,
        &parts,
        options(Codec::None, 16 * 1024, parts.len() as u64),
    );
    let sparse = write(
        &fs,
        dir.path(),
        2,
        &parts,
        v2(2, options(Codec::None, 16 * 1024, parts.len() as u64)),
    );
    let per_key = |r: &SSTableReader| r.index_bytes() as f64 / parts.len() as f64;
    // A dense entry is the key and its framing, about 28 bytes; a granule of
    // ~2 KiB holds some 16 partitions.
    assert!(per_key(&dense) > 25.0, "dense {}", per_key(&dense));
    assert!(per_key(&sparse) < 3.0, "sparse {}", per_key(&sparse));
}

#[test]
fn a_granule_walk_holds_its_entry_to_its_promises() {
    use super::partition::HeaderOrder;
    use super::reader::GranuleWalk;
    let base = EncodingBase::around(NOW_MICROS);
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    let parts = random_partitions(9, 6);
    let parts: Vec<PartitionUpdate> = parts.into_iter().filter(|p| p.rows.len() < 100).collect();
    let mut bytes = Vec::new();
    let mut ends = Vec::new();
    for p in &parts {
        partition::encode_partition_in_order(p, &base, HeaderOrder::FlagsFirst, &mut bytes);
        ends.push(bytes.len() as u64);
    }
    let n = parts.len() as u64;
    let first = &parts[0].key.key[..];
    let walk_all = |offset: u64,
                    partitions: u64,
                    key: &[u8],
                    window: usize|
     -> std::result::Result<Vec<(u64, usize)>, String> {
        // Data-stream offset 1000; the window slides as a reader's would.
        let mut w = GranuleWalk::new(
            1000 + offset,
            bytes.len() as u64 - offset,
            partitions,
            HeaderOrder::FlagsFirst,
        );
        let mut seen = Vec::new();
        let (mut start, mut window) = (offset as usize, window);
        loop {
            let end = (start + window).min(bytes.len());
            match w.next(key, &bytes[start..end], 1000 + start as u64)? {
                Some((at, b)) => seen.push((at - 1000, b.len())),
                // The walk checked the count on reaching the end.
                None if w.done() => return Ok(seen),
                // The window ends inside a partition: from it, and larger
                // if it held none whole.
                None if start == (w.pos - 1000) as usize => window *= 2,
                None => start = (w.pos - 1000) as usize,
            }
        }
    };
    let want: Vec<(u64, usize)> = std::iter::once(0)
        .chain(ends.iter().copied())
        .zip(ends.iter())
        .map(|(a, b)| (a, (b - a) as usize))
        .collect();
    for window in [bytes.len(), 64 + rng.gen_range(0..64), 4096] {
        assert_eq!(walk_all(0, n, first, window), Ok(want.clone()), "{window}");
    }
    assert!(
        walk_all(0, n + 1, first, bytes.len()).is_err(),
        "too many promised"
    );
    assert!(
        walk_all(0, n - 1, first, bytes.len()).is_err(),
        "too few promised"
    );
    assert!(
        walk_all(0, n, b"someone else", bytes.len()).is_err(),
        "wrong first key"
    );
    // A granule that ends inside its last partition.
    let mut w = GranuleWalk::new(0, bytes.len() as u64 - 1, n, HeaderOrder::FlagsFirst);
    let mut result = Ok(None);
    for _ in 0..=n {
        result = w.next(first, &bytes, 0);
        if !matches!(result, Ok(Some(_))) {
            break;
        }
    }
    assert!(result.is_err(), "a cut last partition is corruption");
}

#[test]
fn a_granule_count_the_data_does_not_match_is_corruption_for_scans_and_verify() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(40, 1500);
    let r = write(
        &fs,
        dir.path(),
        1,
        &parts,
        v2(1, options(Codec::Lz4, 16 * 1024, parts.len() as u64)),
    );
    let (off, len) = r.index_block_ranges()[0];
    let entries = r.index_block(0, READ).unwrap();
    let i = entries.iter().position(|e| e.partitions > 2).unwrap();
    let original = std::fs::read(r.path()).unwrap();
    for (id, delta) in [(10u64, -1i64), (11, 1)] {
        // The same block with one count off by one, under a valid checksum
        // (a writer bug, not a flipped bit).
        let mut b =
            format::IndexBlockBuilder::new(format::IndexLayout::for_version(FORMAT_VERSION));
        for (j, e) in entries.iter().enumerate() {
            let n = if j == i {
                (e.partitions as i64 + delta) as u64
            } else {
                e.partitions
            };
            b.add(&e.key, e.offset, e.length, e.row_index, n);
        }
        let mut block = Vec::new();
        b.finish_into(&mut block);
        assert_eq!(block.len() as u64, len);
        let mut bytes = original.clone();
        bytes[off as usize..(off + len) as usize].copy_from_slice(&block);
        let path = data_file_path(dir.path(), id);
        std::fs::write(&path, &bytes).unwrap();
        let bad = SSTableReader::open(&fs, &path, id, None).unwrap();
        let scanned: Vec<_> = bad.scan(None, READ).unwrap().collect();
        assert!(
            scanned.iter().any(|p| p.is_err()),
            "a scan notices a count off by {delta}"
        );
        assert!(!bad.verify(READ).is_empty(), "verify notices it ({delta})");
        assert!(
            bad.partition_spans(READ).is_err(),
            "spans notice it ({delta})"
        );
    }
}

/// `verify` compares the statistics reads trust (newest timestamp, clustering
/// coverage) with the data: statistics that lie, which no checksum catches,
/// are reported; true ones are not.
#[test]
fn verify_reports_statistics_that_contradict_the_data() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(41, 200);
    // With an identity: the current format, which records the coverage.
    let opts = v2(1, options(Codec::Lz4, 4096, 200));
    let mut r = write(&fs, dir.path(), 1, &parts, opts);
    assert!(r.verify(READ).is_empty());
    let truth = r.stats().clone();
    assert!(truth.coverage.is_some());
    let lie = |r: &mut Arc<SSTableReader>, f: &dyn Fn(&mut SSTableStats)| {
        let mut s = truth.clone();
        f(&mut s);
        *Arc::get_mut(r).expect("sole owner").stats_mut() = s;
        let problems = r.verify(READ);
        assert_eq!(problems.len(), 1, "{problems:?}");
        problems[0].to_string()
    };
    let m = lie(&mut r, &|s| s.max_timestamp_micros -= 1);
    assert!(m.contains("newer than the statistics' maximum"), "{m}");
    let m = lie(&mut r, &|s| {
        if let Some((min, _)) = s.coverage.as_mut().and_then(|c| c.rows.as_mut()) {
            min.push(0xff);
        }
    });
    assert!(m.contains("outside the statistics' clustering span"), "{m}");
    let m = lie(&mut r, &|s| {
        if let Some(c) = s.coverage.as_mut() {
            c.rows = None;
        }
    });
    assert!(m.contains("say it has none"), "{m}");
    if truth.coverage.as_ref().is_some_and(|c| c.beyond_rows) {
        let m = lie(&mut r, &|s| {
            if let Some(c) = s.coverage.as_mut() {
                c.beyond_rows = false;
            }
        });
        assert!(m.contains("say it holds none"), "{m}");
    }
    // Wider statistics than the data are true, only less useful.
    *Arc::get_mut(&mut r).unwrap().stats_mut() = SSTableStats {
        max_timestamp_micros: truth.max_timestamp_micros + 1,
        coverage: None,
        ..truth.clone()
    };
    assert!(r.verify(READ).is_empty());
}

/// Partitions of a table without clustering columns, in the short form of
/// format 6 (one row, empty clustering; a lone cell of column 0 without its
/// bitmap), some with a deletion or a static row and one with a 200 KB value:
/// every read path answers what was written, for every codec.
#[test]
fn one_row_partitions_in_the_short_form_read_every_way() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut rng = ChaCha8Rng::seed_from_u64(61);
    let mut keys: Vec<DecoratedKey> = (0..400)
        .map(|_| DecoratedKey::new(&random_bytes(&mut rng, b"0123456789abcdef", 16)))
        .collect();
    keys.sort();
    keys.dedup();
    let parts: Vec<PartitionUpdate> = keys
        .into_iter()
        .enumerate()
        .map(|(i, key)| {
            let mut p = PartitionUpdate::new(key);
            let row = if i == 7 {
                let mut r = Row::new(Vec::new());
                r.liveness = LivenessInfo::new(NOW_MICROS);
                let big: Vec<u8> = (0..200_000u32).map(|j| (j * 31 % 251) as u8).collect();
                r.add_cell(Cell::live(0, NOW_MICROS, big));
                r
            } else if rng.gen_ratio(1, 2) {
                // The key-value shape: the marker and one cell of column 0.
                let mut r = Row::new(Vec::new());
                r.liveness = LivenessInfo::new(NOW_MICROS + rng.gen_range(-1000..1000));
                r.add_cell(random_cell(&mut rng, 0));
                r
            } else {
                random_row(&mut rng, Vec::new(), 4)
            };
            p.add_row(row);
            if rng.gen_ratio(1, 8) {
                p.deletion.partition = Some(DeletionTime::new(NOW_MICROS - 5_000_000, NOW_SECONDS));
            }
            if rng.gen_ratio(1, 8) {
                p.static_row = Some(random_row(&mut rng, Vec::new(), 2));
            }
            p
        })
        .collect();
    for (id, codec) in codecs().into_iter().enumerate() {
        let r = write(
            &fs,
            dir.path(),
            id as u64 + 1,
            &parts,
            v2(id as u64 + 1, options(codec, 4096, 400)),
        );
        assert_eq!(r.format_version(), format::FORMAT_VERSION);
        for p in &parts {
            reads_back_whole(&r, p, &format!("{codec:?}"));
            let row = &p.rows[0];
            for col in 0..3u32 {
                let cell = r.locate_cell(&p.key, &[], col, READ).unwrap().unwrap();
                assert_eq!(cell.deletion, p.deletion, "{codec:?}");
                let (deletion, loc) = cell.row.expect("the row is there");
                assert_eq!(deletion, row.deletion);
                let want = row
                    .cells
                    .iter()
                    .find(|c| c.column == col && c.path.is_none());
                match (loc, want) {
                    (None, None) => {}
                    (Some(l), Some(c)) => {
                        assert_eq!(l.timestamp_micros, c.timestamp_micros);
                        let mut value = Vec::new();
                        r.read_value_range(l.value_at, l.value_len, READ, &mut value)
                            .unwrap();
                        assert_eq!(value, c.value, "{codec:?} column {col}");
                    }
                    other => panic!("{codec:?} column {col}: {other:?}"),
                }
            }
            // No row with a clustering in a partition of one row without.
            let cell = r.locate_cell(&p.key, b"x", 0, READ).unwrap().unwrap();
            assert!(cell.row.is_none());
        }
        let all: Vec<PartitionUpdate> = r.scan(None, READ).unwrap().map(|p| p.unwrap()).collect();
        assert_eq!(all, parts, "{codec:?} full scan");
    }
}

#[test]
fn verify_reports_a_filter_that_refuses_a_key_the_file_holds() {
    // A filter whose bits are cleared and whose block checksum is recomputed:
    // what a writer or layout bug would leave. Reads trust a "no", so the
    // partitions vanish from point reads; verify must say so, naming the
    // filter's block.
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = random_partitions(93, 60);
    let r = write(
        &fs,
        dir.path(),
        1,
        &parts,
        options(Codec::Lz4, 4096, parts.len() as u64),
    );
    assert!(r.verify(READ).is_empty());
    let path = r.path().to_path_buf();
    drop(r);
    let mut bytes = std::fs::read(&path).unwrap();
    let footer = Footer::decode(&bytes[bytes.len() - FOOTER_BYTES..]).unwrap();
    let block = footer.filter_offset as usize..footer.stats_offset as usize;
    let (from, to) = (block.start, block.end - format::CRC_BYTES);
    // [hash id][k][units varint][bits]: clear the bits.
    let mut bits_at = from + 2;
    while bytes[bits_at] & 0x80 != 0 {
        bits_at += 1;
    }
    bits_at += 1;
    assert!(bits_at < to, "the filter has bits");
    bytes[bits_at..to].fill(0);
    reseal(&mut bytes, block);
    std::fs::write(&path, &bytes).unwrap();

    let r = SSTableReader::open(&fs, &path, 1, None).unwrap();
    assert!(
        r.read_partition(&parts[0].key, READ).unwrap().is_none(),
        "a cleared filter hides the partition from point reads"
    );
    let problems = r.verify(READ);
    assert_eq!(problems.len(), 1, "{problems:?}");
    assert_eq!(corruption_offset(&problems[0], &path), footer.filter_offset);
    assert!(
        problems[0].to_string().contains("Bloom filter refuses"),
        "{}",
        problems[0]
    );
}

/// Partitions of every shape the streaming paths treat apart: random ones,
/// wide ones (row indexes), short-form ones (one empty-clustering row, a
/// 200 KB one among them), an empty-clustering row followed by others, a
/// header with no rows, and a large row spanning many chunks.
fn streaming_partitions(seed: u64) -> Vec<PartitionUpdate> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let mut parts = random_partitions(seed, 150);
    parts.extend(wide_partitions(seed + 1));
    for i in 0..40u32 {
        let mut p = PartitionUpdate::new(DecoratedKey::new(format!("shape-{i}").as_bytes()));
        match i % 5 {
            0 => p.rows.push(random_row(&mut rng, Vec::new(), 4)),
            1 => {
                let mut r = Row::new(Vec::new());
                r.liveness = LivenessInfo::new(NOW_MICROS);
                let big: Vec<u8> = (0..200_000u32).map(|j| (j * 31 % 251) as u8).collect();
                r.add_cell(Cell::live(0, NOW_MICROS, big));
                p.rows.push(r);
            }
            2 => {
                p.rows.push(random_row(&mut rng, Vec::new(), 3));
                p.rows.push(random_row(&mut rng, b"a".to_vec(), 3));
                p.rows.push(random_row(&mut rng, b"b".to_vec(), 3));
            }
            3 => {
                p.deletion.partition = Some(DeletionTime::new(NOW_MICROS, NOW_SECONDS));
                if rng.gen() {
                    p.static_row = Some(random_row(&mut rng, Vec::new(), 2));
                }
            }
            _ => {
                for b in 0..3u8 {
                    let mut r = Row::new(vec![b'k', b]);
                    r.liveness = LivenessInfo::new(NOW_MICROS);
                    let big: Vec<u8> = (0..70_000u32).map(|j| (j * 7 % 253) as u8 ^ b).collect();
                    r.add_cell(Cell::live(0, NOW_MICROS, big));
                    p.rows.push(r);
                }
            }
        }
        if rng.gen_ratio(1, 3) {
            p.static_row = Some(random_row(&mut rng, Vec::new(), 2));
        }
        parts.push(p);
    }
    parts.sort_by(|a, b| a.key.cmp(&b.key));
    parts.dedup_by(|a, b| a.key == b.key);
    parts
}

/// Appends `parts` row by row (`begin_partition`, `append_row`,
/// `end_partition`); returns how many partitions wrote something.
fn append_streamed(w: &mut SSTableWriter, parts: &[PartitionUpdate]) -> usize {
    let mut written = 0;
    for p in parts {
        w.begin_partition(p.key.clone(), p.deletion.clone(), p.static_row.clone())
            .unwrap();
        for r in &p.rows {
            w.append_row(r.clone()).unwrap();
        }
        written += usize::from(w.end_partition().unwrap());
    }
    written
}

#[test]
fn rows_appended_one_at_a_time_write_the_same_file() {
    // Compaction appends its merged stream a row at a time; the file, row
    // indexes and statistics included, must be the one `append` writes.
    let fs = Fs::new();
    let mut parts = streaming_partitions(301);
    // An empty partition in between: both paths skip it.
    parts.push(PartitionUpdate::new(DecoratedKey::new(b"nothing")));
    parts.sort_by(|a, b| a.key.cmp(&b.key));
    let kept = parts
        .iter()
        .filter(|p| !(p.deletion.is_empty() && p.static_row.is_none() && p.rows.is_empty()))
        .count();
    for with_identity in [false, true] {
        let opts = options(Codec::Lz4, 4096, parts.len() as u64);
        let opts = if with_identity { v2(5, opts) } else { opts };
        let (a, b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let whole = write(&fs, a.path(), 5, &parts, opts.clone());
        let mut w = SSTableWriter::create(&fs, b.path(), 5, opts).unwrap();
        assert_eq!(append_streamed(&mut w, &parts), kept);
        let streamed = w.finish().unwrap();
        assert_eq!(streamed.stats(), whole.stats());
        let (fa, fb) = (
            std::fs::read(data_file_path(a.path(), 5)).unwrap(),
            std::fs::read(data_file_path(b.path(), 5)).unwrap(),
        );
        assert!(fa == fb, "files differ (identity {with_identity})");
    }
}

#[test]
fn rows_appended_out_of_order_or_outside_a_partition_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut w =
        SSTableWriter::create(&fs, dir.path(), 1, v2(1, options(Codec::Lz4, 4096, 4))).unwrap();
    let row = |ck: &[u8]| {
        let mut r = Row::new(ck.to_vec());
        r.liveness = LivenessInfo::new(NOW_MICROS);
        r
    };
    assert!(matches!(
        w.append_row(row(b"a")),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(w.end_partition(), Err(Error::InvalidInput(_))));
    let (k1, k2) = {
        let mut k = [DecoratedKey::new(b"k1"), DecoratedKey::new(b"k2")];
        k.sort();
        (k[0].clone(), k[1].clone())
    };
    w.begin_partition(k2.clone(), PartitionDeletion::default(), None)
        .unwrap();
    assert!(matches!(
        w.begin_partition(k1.clone(), PartitionDeletion::default(), None),
        Err(Error::InvalidInput(_))
    ));
    w.append_row(row(b"b")).unwrap();
    // Out of order, then equal: refused, and the partition goes on.
    assert!(matches!(
        w.append_row(row(b"a")),
        Err(Error::InvalidInput(_))
    ));
    assert!(matches!(
        w.append_row(row(b"b")),
        Err(Error::InvalidInput(_))
    ));
    w.append_row(row(b"c")).unwrap();
    assert!(w.end_partition().unwrap());
    // A key before the last one written is refused at the start.
    assert!(matches!(
        w.begin_partition(k1, PartitionDeletion::default(), None),
        Err(Error::InvalidInput(_))
    ));
    let r = w.finish().unwrap();
    let p = r.read_partition(&k2, READ).unwrap().unwrap();
    let cks: Vec<&[u8]> = p.rows.iter().map(|r| r.clustering.as_slice()).collect();
    assert_eq!(cks, [&b"b"[..], b"c"]);
}

/// Every partition of `r` read back through a [`RowScanner`] streaming
/// partitions over `over` bytes; partitions whose index is in `skip_rows`
/// are left after their first row (their rest is passed over).
fn read_streamed(
    r: &Arc<SSTableReader>,
    over: u64,
    skip_rows: &[usize],
) -> crate::error::Result<Vec<PartitionUpdate>> {
    let mut s = r.scan_rows_over(IoTag::compaction(0), over)?;
    let mut out = Vec::new();
    while let Some(h) = s.next_partition()? {
        let mut p = PartitionUpdate::new(h.key);
        p.deletion = h.deletion;
        p.static_row = h.static_row;
        let skip = skip_rows.contains(&out.len());
        while let Some(row) = s.next_row()? {
            p.rows.push(row);
            if skip {
                break;
            }
        }
        out.push(p);
    }
    Ok(out)
}

#[test]
fn streamed_rows_equal_whole_partitions() {
    let fs = Fs::new();
    let parts = streaming_partitions(311);
    for (id, codec) in codecs().into_iter().enumerate() {
        let id = id as u64 + 1;
        for with_identity in [false, true] {
            let dir = tempfile::tempdir().unwrap();
            let opts = options(codec, 4096, parts.len() as u64);
            let opts = if with_identity { v2(id, opts) } else { opts };
            let r = write(&fs, dir.path(), id, &parts, opts);
            for over in [0, 1 << 10, STREAM_PARTITIONS_OVER_BYTES, u64::MAX] {
                let got = read_streamed(&r, over, &[]).unwrap();
                assert!(
                    got == parts,
                    "{codec:?}, identity {with_identity}, over {over}"
                );
            }
            // Rows left unread are passed over; the partitions after read whole.
            let skip: Vec<usize> = (0..parts.len()).step_by(3).collect();
            let got = read_streamed(&r, 0, &skip).unwrap();
            for (i, (g, p)) in got.iter().zip(&parts).enumerate() {
                let want = if skip.contains(&i) {
                    &p.rows[..p.rows.len().min(1)]
                } else {
                    &p.rows[..]
                };
                assert_eq!(g.key, p.key);
                assert!(g.rows == want, "partition {i} after skipped rows");
            }
        }
    }
}

#[test]
fn streamed_rows_under_flipped_bits_are_corruption_never_wrong_rows() {
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let parts = streaming_partitions(321);
    let r = write(
        &fs,
        dir.path(),
        1,
        &parts,
        v2(1, options(Codec::Lz4, 4096, parts.len() as u64)),
    );
    let clean = std::fs::read(r.path()).unwrap();
    let len_bits = clean.len() as u64 * 8;
    drop(r);
    let mut rng = ChaCha8Rng::seed_from_u64(322);
    let path = data_file_path(dir.path(), 1);
    let mut detected = 0;
    for _ in 0..150 {
        std::fs::write(&path, &clean).unwrap();
        flip(&path, rng.gen_range(0..len_bits));
        let Ok(r) = SSTableReader::open(&fs, &path, 1, None) else {
            continue;
        };
        match read_streamed(&r, 0, &[]) {
            Ok(got) => assert!(got == parts, "a flipped bit changed what reads back"),
            Err(e) => {
                corruption_offset(&e, &path);
                detected += 1;
            }
        }
    }
    assert!(
        detected > 50,
        "only {detected} of 150 flips reached the data"
    );
}

#[test]
fn a_streamed_partition_under_valid_checksums_reads_as_a_whole_decode_does() {
    // Uncompressed chunks, so a byte can be changed and its chunk's checksum
    // recomputed: what a writer bug would leave, which no checksum catches.
    // Whatever the bytes, the streamed read must give what a whole decode
    // gives: the same partition, or an error where it errs.
    let dir = tempfile::tempdir().unwrap();
    let fs = Fs::new();
    let mut parts = Vec::new();
    for (k, rows) in [(&b"big"[..], 40u32), (b"one", 1)] {
        let mut p = PartitionUpdate::new(DecoratedKey::new(k));
        for i in 0..rows {
            let ck = if rows == 1 {
                Vec::new()
            } else {
                i.to_be_bytes().to_vec()
            };
            let mut row = Row::new(ck);
            row.liveness = LivenessInfo::new(NOW_MICROS);
            row.add_cell(Cell::live(0, NOW_MICROS, vec![i as u8; 3000]));
            p.rows.push(row);
        }
        parts.push(p);
    }
    parts.sort_by(|a, b| a.key.cmp(&b.key));
    let cl = 4096u64;
    let r = write(
        &fs,
        dir.path(),
        1,
        &parts,
        v2(1, options(Codec::None, cl as u32, 2)),
    );
    let entries = r.index_block(0, READ).unwrap();
    let chunks = r.chunk_ranges();
    let path = r.path().to_path_buf();
    drop(r);
    let clean = std::fs::read(&path).unwrap();
    let locate = |at: u64| {
        let (off, _) = chunks[(at / cl) as usize];
        (off + 1 + at % cl) as usize
    };
    let (mut errors, mut changed) = (0, 0);
    for e in &entries {
        for at in e.offset..e.offset + e.length {
            // Every byte near the framing (the ends, each row's start), a
            // sample of the values.
            if at % 61 != 0 && at >= e.offset + 48 && at + 48 < e.offset + e.length {
                continue;
            }
            let mut bytes = clean.clone();
            bytes[locate(at)] ^= 0x5a;
            let (off, len) = chunks[(at / cl) as usize];
            reseal(&mut bytes, off as usize..(off + len) as usize);
            std::fs::write(&path, &bytes).unwrap();
            let r = SSTableReader::open(&fs, &path, 1, None).unwrap();
            let whole: crate::error::Result<Vec<PartitionUpdate>> =
                r.scan(None, IoTag::compaction(0)).unwrap().collect();
            match (whole, read_streamed(&r, 0, &[])) {
                (Ok(w), Ok(s)) => {
                    assert!(w == s, "byte {at}: streamed and whole reads differ");
                    changed += usize::from(w != parts);
                }
                (Err(_), Err(e)) => {
                    corruption_offset(&e, &path);
                    errors += 1;
                }
                (w, s) => panic!(
                    "byte {at}: whole read {:?}, streamed read {:?}",
                    w.err(),
                    s.err()
                ),
            }
        }
    }
    assert!(
        errors > 0 && changed > 0,
        "{errors} errors, {changed} changed reads"
    );
}
