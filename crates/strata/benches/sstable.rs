//! SSTable micro-benchmarks: write throughput and point-read latency per codec on
//! 64 MiB of cassandra-stress-shaped partitions (one row of 5 columns x 34 bytes,
//! 10-byte keys), plus the zstd context-reuse measurement that justifies the
//! thread-local contexts in `sstable/compression.rs`, and LZ4's two
//! implementations on one 16 KiB chunk (why `strata::lz4` decodes with
//! liblz4; each encoder's output size is printed beside its speed, since
//! chunks are encoded by liblz4 for the bytes it saves).
//!
//! Run: `cargo bench -p strata --bench sstable`. Sample sizes are minimal so the
//! whole run stays under a minute.

use criterion::{black_box, criterion_group, criterion_main, BatchSize, Criterion, Throughput};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::sync::Arc;
use std::time::Duration;
use strata::data::{Cell, DecoratedKey, LivenessInfo, PartitionUpdate, Row};
use strata::encoding::EncodingBase;
use strata::fs::{Fs, IoCause, IoTag};
use strata::sstable::compression::{compress_chunk, Codec, CompressionParams};
use strata::sstable::{SSTableReader, SSTableWriter, WriterOptions};

const DATA_BYTES: usize = 64 << 20;
const NOW_MICROS: i64 = 1_767_225_600_000_000;

/// cassandra-stress' default table: a 10-byte blob key and five 34-byte columns.
/// Values are drawn from 64 symbols (6 bits of entropy per byte), which gives the
/// ~0.6-0.8 compression ratios the seeds' production tables report.
fn stress_partitions() -> Vec<PartitionUpdate> {
    let mut rng = ChaCha8Rng::seed_from_u64(2024);
    const SYMBOLS: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let approx = 5 * 34 + 10 + 20;
    let n = DATA_BYTES / approx;
    let mut parts: Vec<PartitionUpdate> = (0..n)
        .map(|_| {
            let key: [u8; 10] = rng.gen();
            let mut p = PartitionUpdate::new(DecoratedKey::new(&key));
            let mut row = Row::new(Vec::new());
            let ts = NOW_MICROS + rng.gen_range(0..1_000_000_000);
            row.liveness = LivenessInfo::new(ts);
            for c in 0..5 {
                let v: Vec<u8> = (0..34).map(|_| SYMBOLS[rng.gen_range(0..64)]).collect();
                row.add_cell(Cell::live(c, ts, v));
            }
            p.rows.push(row);
            p
        })
        .collect();
    parts.sort_by(|a, b| a.key.cmp(&b.key));
    parts.dedup_by(|a, b| a.key == b.key);
    parts
}

fn options(codec: Codec, n: usize) -> WriterOptions {
    WriterOptions {
        compression: CompressionParams {
            codec,
            ..CompressionParams::default()
        },
        expected_partitions: n as u64,
        base: EncodingBase::around(NOW_MICROS),
        tag: IoTag::new(IoCause::Flush),
        ..WriterOptions::default()
    }
}

fn write(
    fs: &Fs,
    dir: &std::path::Path,
    id: u64,
    parts: &[PartitionUpdate],
    codec: Codec,
) -> Arc<SSTableReader> {
    let mut w = SSTableWriter::create(fs, dir, id, options(codec, parts.len())).expect("create");
    for p in parts {
        w.append(p).expect("append");
    }
    w.finish().expect("finish")
}

const CODECS: [(&str, Codec); 4] = [
    ("none", Codec::None),
    ("lz4", Codec::Lz4),
    ("zstd3", Codec::Zstd { level: 3 }),
    ("zstd-1", Codec::Zstd { level: -1 }),
];

fn bench_sstable(c: &mut Criterion) {
    let parts = stress_partitions();
    let dir = tempfile::tempdir().expect("tempdir");
    let fs = Fs::new();
    let uncompressed = write(&fs, dir.path(), 0, &parts, Codec::None)
        .stats()
        .uncompressed_bytes;

    let mut g = c.benchmark_group("sstable_write_64MiB");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Bytes(uncompressed));
    let mut id = 1;
    for (name, codec) in CODECS {
        g.bench_function(name, |b| {
            b.iter(|| {
                id += 1;
                let r = write(&fs, dir.path(), id, &parts, codec);
                r.mark_obsolete();
            })
        });
    }
    g.finish();

    let mut g = c.benchmark_group("sstable_point_read");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(2));
    for (i, (name, codec)) in CODECS.into_iter().enumerate() {
        let r = write(&fs, dir.path(), 1000 + i as u64, &parts, codec);
        eprintln!(
            "{name}: {} partitions, {} bytes on disk, ratio {:.3}, index {} B, filter {} B",
            r.stats().partition_count,
            r.file_size(),
            r.stats().compression_ratio(),
            r.index_bytes(),
            r.filter_bytes()
        );
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        g.bench_function(name, |b| {
            b.iter_batched(
                || parts[rng.gen_range(0..parts.len())].key.clone(),
                |k| {
                    black_box(
                        r.read_partition(&k, IoTag::new(IoCause::UserRead))
                            .expect("read"),
                    )
                },
                BatchSize::SmallInput,
            )
        });
        r.mark_obsolete();
    }
    g.finish();

    // Thread-local zstd context (what compress_chunk does) vs a fresh context per
    // chunk (zstd::bulk::compress).
    let chunk: Vec<u8> = parts
        .iter()
        .take(80)
        .flat_map(|p| p.rows[0].cells.iter().flat_map(|c| c.value.clone()))
        .collect();
    let chunk = &chunk[..16384.min(chunk.len())];
    let mut g = c.benchmark_group("zstd_context_16KiB");
    g.sample_size(10)
        .warm_up_time(Duration::from_millis(100))
        .measurement_time(Duration::from_secs(1));
    g.throughput(Throughput::Bytes(chunk.len() as u64));
    g.bench_function("thread_local", |b| {
        let mut out = Vec::new();
        b.iter(|| {
            out.clear();
            compress_chunk(
                Codec::Zstd { level: 3 },
                None,
                black_box(chunk),
                &mut out,
                strata::codec::NO_COMPRESSED_LIMIT,
            )
        })
    });
    g.bench_function("fresh_context", |b| {
        b.iter(|| zstd::bulk::compress(black_box(chunk), 3).expect("zstd"))
    });
    g.finish();

    bench_lz4(c, "lz4_16KiB_stress", chunk);
    // The comparison harness's rows: 16-byte random keys, values half random
    // and half one letter.
    let mut rng = ChaCha8Rng::seed_from_u64(15);
    let mut kv = Vec::with_capacity(16384);
    while kv.len() < 16384 {
        kv.extend((0..66).map(|_| rng.gen::<u8>()));
        let letter = rng.gen_range(b'a'..=b'z');
        kv.extend(std::iter::repeat_n(letter, 50));
    }
    kv.truncate(16384);
    bench_lz4(c, "lz4_16KiB_kv", &kv);
}

/// Encoding and decoding `chunk` with lz4_flex and with liblz4.
fn bench_lz4(c: &mut Criterion, group: &str, chunk: &[u8]) {
    let block = lz4_flex::block::compress(chunk);
    let mut g = c.benchmark_group(group);
    g.sample_size(20)
        .warm_up_time(Duration::from_millis(200))
        .measurement_time(Duration::from_secs(1));
    g.throughput(Throughput::Bytes(chunk.len() as u64));
    let mut out = vec![0u8; chunk.len()];
    g.bench_function("decode_lz4_flex", |b| {
        b.iter(|| lz4_flex::block::decompress_into(black_box(&block), &mut out).expect("lz4"))
    });
    g.bench_function("decode_liblz4", |b| {
        b.iter(|| strata::lz4::decompress_into(black_box(&block), &mut out).expect("lz4"))
    });
    let mut enc = vec![0u8; lz4_flex::block::get_maximum_output_size(chunk.len())];
    let flex_len = lz4_flex::block::compress_into(chunk, &mut enc).expect("lz4");
    let lib_len = strata::lz4::compress_into(chunk, &mut enc).expect("lz4");
    eprintln!("{group}: lz4_flex encodes to {flex_len} bytes, liblz4 to {lib_len}");
    g.bench_function("encode_lz4_flex", |b| {
        b.iter(|| lz4_flex::block::compress_into(black_box(chunk), &mut enc).expect("lz4"))
    });
    // The chunk writer's call: liblz4 with this thread's kept state.
    g.bench_function("encode_liblz4", |b| {
        b.iter(|| strata::lz4::compress_into(black_box(chunk), &mut enc).expect("lz4"))
    });
    g.finish();
}

criterion_group!(benches, bench_sstable);
criterion_main!(benches);
