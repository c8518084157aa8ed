//! A Bloom filter lookup, the first step of every point read for each
//! candidate sstable and the whole cost of a key no sstable holds: the spread
//! layout (hash id 1, every filter before sstable format 7: `k` probes over
//! the whole bit array, a division and a likely cache miss each) against the
//! blocked one (hash id 2: the probes in one 64-byte line). The filters hold
//! 2 million keys at the default `bloom_filter_fp_chance` 0.01, about 2.4
//! MiB, larger than this machine's L2, as the harness's filters are; lookups
//! cycle over 1 << 16 precomputed hashes so the hash is not measured.
//!
//! Run: `cargo bench -p strata --bench bloom`.

use criterion::{black_box, criterion_group, criterion_main, Criterion};
use std::time::Duration;
use strata::sstable::bloom::{BloomFilter, KeyHash, Layout};

const KEYS: u64 = 2_000_000;
const LOOKUPS: usize = 1 << 16;

fn bloom(c: &mut Criterion) {
    let present: Vec<KeyHash> = (0..KEYS)
        .map(|i| KeyHash::of(format!("key-{i:012}").as_bytes()))
        .collect();
    let absent: Vec<KeyHash> = (0..LOOKUPS)
        .map(|i| KeyHash::of(format!("missing-{i:012}").as_bytes()))
        .collect();
    // Every 30th present key, so the lookups spread over the whole filter.
    let hits: Vec<KeyHash> = present.iter().step_by(30).take(LOOKUPS).copied().collect();
    let mut g = c.benchmark_group("bloom_may_contain");
    g.sample_size(30)
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    for (name, layout) in [("spread", Layout::Spread), ("blocked", Layout::Blocked)] {
        let mut f = BloomFilter::with_layout(KEYS, 0.01, layout);
        for h in &present {
            f.add(*h);
        }
        for (what, probes) in [("absent", &absent), ("present", &hits)] {
            let mut i = 0;
            g.bench_function(format!("{name}_{what}"), |b| {
                b.iter(|| {
                    i = (i + 1) & (LOOKUPS - 1);
                    f.may_contain(black_box(probes[i]))
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, bloom);
criterion_main!(benches);
