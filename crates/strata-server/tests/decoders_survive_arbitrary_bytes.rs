//! Property tests: arbitrary bytes, and valid frames mutated (bits flipped,
//! bytes cut, inserted, overwritten), fed to every decoder the server runs
//! on client input: envelope headers, every request body in v3, v4 and v5,
//! v4 body decompression (LZ4, Snappy), v5 segments (plain and LZ4). None may
//! panic, and none may allocate more than a bounded multiple of its input
//! (a counting allocator measures the largest single allocation made while
//! decoding: a length field claiming gigabytes must not turn into a
//! gigabyte reservation).
//!
//! Shrunk failures are kept by proptest in
//! `proptest-regressions/decoders_survive_arbitrary_bytes.txt` and replayed
//! first on every run.

use proptest::prelude::*;
use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use strata::query::{BoundValue, Consistency, QueryParams, Values};
use strata_server::frame::{self, Compression, Opcode};
use strata_server::request::{self, encode, BatchRequest, RawBatchItem};
use strata_server::segment::{encode_segment, SegmentDecoder};

struct Counting;

thread_local! {
    static TRACK: Cell<bool> = const { Cell::new(false) };
    static LARGEST: Cell<usize> = const { Cell::new(0) };
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        System.realloc(ptr, layout, new_size)
    }
}

fn note(size: usize) {
    // try_with: the thread-locals may be gone during thread teardown.
    let _ = TRACK.try_with(|t| {
        if t.get() {
            let _ = LARGEST.try_with(|l| l.set(l.get().max(size)));
        }
    });
}

#[global_allocator]
static ALLOC: Counting = Counting;

/// Runs `f` and returns the largest single allocation it made.
fn largest_allocation(f: impl FnOnce()) -> usize {
    LARGEST.with(|l| l.set(0));
    TRACK.with(|t| t.set(true));
    f();
    TRACK.with(|t| t.set(false));
    LARGEST.with(|l| l.get())
}

/// What decoding `n` input bytes may allocate at once: a multiple of the
/// input (decoded structs are larger than their bytes; a compressed body
/// expands at most 256 times) plus one v5 segment's payload.
fn bound(n: usize) -> usize {
    256 * n + (256 << 10)
}

const MAX_FRAME: usize = 16 << 20;

fn decode_everything(bytes: &[u8]) {
    let _ = frame::parse_header(bytes);
    for version in [3u8, 4, 5] {
        for flags in [0u8, frame::flags::CUSTOM_PAYLOAD] {
            for op in 0..=0x10u8 {
                if let Some(op) = Opcode::from_byte(op) {
                    let _ = request::decode(version, flags, op, bytes);
                }
            }
        }
    }
    let _ = Compression::Lz4.decompress(bytes, MAX_FRAME);
    let _ = Compression::Snappy.decompress(bytes, MAX_FRAME);
    for compressed in [false, true] {
        let dec = SegmentDecoder { compressed };
        let _ = dec.segment_len(bytes);
        let _ = dec.decode(bytes);
    }
}

/// Valid request bodies of every kind, for mutation.
fn valid_bodies() -> Vec<(u8, Opcode, Vec<u8>)> {
    let params = QueryParams {
        consistency: Consistency::LocalQuorum,
        values: Values::Positional(vec![
            BoundValue::Value(vec![0, 0, 0, 1]),
            BoundValue::Null,
            BoundValue::Unset,
        ]),
        page_size: Some(5000),
        paging_state: Some(vec![9; 12]),
        serial_consistency: Some(Consistency::Serial),
        timestamp_micros: Some(1),
        keyspace: Some("ks".into()),
        now_seconds: Some(7),
    };
    let named = QueryParams {
        values: Values::Named(vec![("a".into(), BoundValue::Value(b"xyz".to_vec()))]),
        ..encode::one()
    };
    let batch = BatchRequest {
        kind: strata::cql::ast::BatchKind::Logged,
        items: vec![
            RawBatchItem::Query {
                text: "INSERT INTO t (k) VALUES (?)".into(),
                values: Values::Positional(vec![BoundValue::Value(vec![1])]),
            },
            RawBatchItem::Prepared {
                id: vec![3; 16],
                values: Values::Positional(vec![BoundValue::Null]),
            },
        ],
        params: QueryParams {
            timestamp_micros: Some(99),
            ..encode::one()
        },
    };
    let mut out = Vec::new();
    for v in [3u8, 4, 5] {
        out.push((
            v,
            Opcode::Query,
            encode::query(v, "SELECT * FROM ks.t WHERE k = ?", &params, true),
        ));
        out.push((
            v,
            Opcode::Query,
            encode::query(v, "SELECT :a", &named, false),
        ));
        out.push((
            v,
            Opcode::Execute,
            encode::execute(v, &[1; 16], Some(&[2; 16]), &params, false),
        ));
        out.push((
            v,
            Opcode::Prepare,
            encode::prepare(v, "SELECT 1", Some("ks")),
        ));
        out.push((v, Opcode::Batch, encode::batch(v, &batch)));
        out.push((
            v,
            Opcode::Startup,
            encode::startup(&[("CQL_VERSION", "3.0.0"), ("COMPRESSION", "lz4")]),
        ));
        out.push((
            v,
            Opcode::Register,
            encode::register(&["SCHEMA_CHANGE", "STATUS_CHANGE"]),
        ));
        out.push((
            v,
            Opcode::AuthResponse,
            encode::auth_response(Some(b"\0user\0pass")),
        ));
    }
    out
}

#[derive(Debug, Clone)]
enum Mutation {
    Flip(usize, u8),
    Set(usize, u8),
    Truncate(usize),
    Insert(usize, Vec<u8>),
    /// Overwrite 4 bytes with a large length (the classic attack).
    BigLength(usize, u32),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    prop_oneof![
        (any::<usize>(), 0u8..8).prop_map(|(i, b)| Mutation::Flip(i, b)),
        (any::<usize>(), any::<u8>()).prop_map(|(i, b)| Mutation::Set(i, b)),
        any::<usize>().prop_map(Mutation::Truncate),
        (
            any::<usize>(),
            proptest::collection::vec(any::<u8>(), 1..16)
        )
            .prop_map(|(i, v)| Mutation::Insert(i, v)),
        (
            any::<usize>(),
            prop_oneof![
                Just(0x7FFF_FFFFu32),
                Just(0xFFFF_FFFF),
                Just(0x8000_0000),
                any::<u32>()
            ]
        )
            .prop_map(|(i, n)| Mutation::BigLength(i, n)),
    ]
}

fn apply(bytes: &mut Vec<u8>, m: &Mutation) {
    if bytes.is_empty() {
        return;
    }
    match m {
        Mutation::Flip(i, b) => {
            let i = i % bytes.len();
            bytes[i] ^= 1 << b;
        }
        Mutation::Set(i, b) => {
            let i = i % bytes.len();
            bytes[i] = *b;
        }
        Mutation::Truncate(n) => bytes.truncate(n % bytes.len()),
        Mutation::Insert(i, v) => {
            let i = i % (bytes.len() + 1);
            bytes.splice(i..i, v.iter().copied());
        }
        Mutation::BigLength(i, n) => {
            if bytes.len() >= 4 {
                let i = i % (bytes.len() - 3);
                bytes[i..i + 4].copy_from_slice(&n.to_be_bytes());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_bytes_never_panic_nor_over_allocate(bytes in proptest::collection::vec(any::<u8>(), 0..2048)) {
        let largest = largest_allocation(|| decode_everything(&bytes));
        prop_assert!(largest <= bound(bytes.len()), "{largest} bytes allocated for {} input bytes", bytes.len());
    }

    #[test]
    fn mutated_requests_never_panic_nor_over_allocate(
        which in any::<usize>(),
        mutations in proptest::collection::vec(mutation(), 1..6),
    ) {
        let bodies = valid_bodies();
        let (version, opcode, body) = &bodies[which % bodies.len()];
        let mut bytes = body.clone();
        for m in &mutations {
            apply(&mut bytes, m);
        }
        let largest = largest_allocation(|| {
            let _ = request::decode(*version, 0, *opcode, &bytes);
            let _ = request::decode(*version, frame::flags::CUSTOM_PAYLOAD, *opcode, &bytes);
        });
        prop_assert!(largest <= bound(bytes.len()));
    }

    #[test]
    fn mutated_segments_and_compressed_bodies_never_panic(
        payload in proptest::collection::vec(any::<u8>(), 0..4096),
        compressed in any::<bool>(),
        self_contained in any::<bool>(),
        mutations in proptest::collection::vec(mutation(), 1..4),
    ) {
        let mut seg = Vec::new();
        encode_segment(&mut seg, &payload, self_contained, compressed);
        let mut lz4 = Compression::Lz4.compress(&payload);
        let mut snappy = Compression::Snappy.compress(&payload);
        for m in &mutations {
            apply(&mut seg, m);
            apply(&mut lz4, m);
            apply(&mut snappy, m);
        }
        let largest = largest_allocation(|| {
            let _ = SegmentDecoder { compressed }.decode(&seg);
            let _ = Compression::Lz4.decompress(&lz4, MAX_FRAME);
            let _ = Compression::Snappy.decompress(&snappy, MAX_FRAME);
        });
        prop_assert!(largest <= bound(seg.len().max(lz4.len()).max(snappy.len())));
    }
}

#[test]
fn lengths_claiming_gigabytes_allocate_nothing_large() {
    // A [long string] of 2 GiB, a [bytes] of 2 GiB, 65,535 values claimed.
    let cases: Vec<(Opcode, Vec<u8>)> = vec![
        (Opcode::Query, vec![0x7F, 0xFF, 0xFF, 0xFF, b'x']),
        (Opcode::Execute, vec![0, 1, 7, 0, 1, 0x01, 0xFF, 0xFF]),
        (Opcode::Startup, vec![0xFF, 0xFF]),
        (Opcode::Register, vec![0xFF, 0xFF, 0, 1, b'A']),
        (Opcode::AuthResponse, vec![0x7F, 0xFF, 0xFF, 0xFF]),
        (Opcode::Batch, vec![0, 0xFF, 0xFF, 0]),
    ];
    for (op, body) in cases {
        let largest = largest_allocation(|| {
            assert!(request::decode(4, 0, op, &body).is_err(), "{op:?}");
        });
        assert!(largest <= bound(body.len()), "{op:?}: {largest}");
    }
}
