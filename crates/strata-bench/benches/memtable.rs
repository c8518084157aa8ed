//! Criterion component benchmark of the memtable's insert path against the
//! skiplist and locked-`BTreeMap` baselines, on the workloads and structures of
//! `strata_bench::memtable` (whose module docs state the protocol and the
//! fairness rules). `strata bench memtable` runs the same comparison with
//! overhead per cell, flush rate and JSON; this one gives criterion's
//! statistics for one thread and two.
//!
//! `cargo bench -p strata-bench --bench memtable`

use criterion::{
    criterion_group, criterion_main, BenchmarkId, Criterion, SamplingMode, Throughput,
};
use std::time::{Duration, Instant};
use strata::data::PartitionUpdate;
use strata::memtable::Memtable;
use strata_bench::memtable::{
    inputs, BTreeMapBaseline, SkipListBaseline, Structure, Workload, ROWS,
};

fn fill<S: Structure>(inputs: &[Vec<PartitionUpdate>]) -> Duration {
    let target = S::new();
    let start = Instant::now();
    if let [only] = inputs {
        // One writer runs on the bench's own thread, as `strata bench memtable`
        // does: a thread spawned per iteration would also measure thread
        // start-up and whatever per-thread state the structures build (the
        // memtable's versions were published through arc-swap, whose store
        // walks a list of every thread that used it: with a thread per
        // iteration that walk dominated the profile).
        only.iter().for_each(|u| target.apply(u));
    } else {
        std::thread::scope(|s| {
            for part in inputs {
                let t = &target;
                s.spawn(move || part.iter().for_each(|u| t.apply(u)));
            }
        });
    }
    start.elapsed()
}

fn bench_one<S: Structure>(
    group: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>,
    threads: usize,
    inputs: &[Vec<PartitionUpdate>],
) {
    group.bench_with_input(BenchmarkId::new(S::NAME, threads), &threads, |b, _| {
        b.iter_custom(|iters| (0..iters).map(|_| fill::<S>(inputs)).sum())
    });
}

fn bench_inserts(c: &mut Criterion) {
    for workload in Workload::ALL {
        for threads in [1, 2] {
            let inputs: Vec<Vec<PartitionUpdate>> =
                (0..threads).map(|t| inputs(workload, t, threads)).collect();
            let mut group = c.benchmark_group(format!("memtable-insert/{}", workload.name()));
            group.throughput(Throughput::Elements(ROWS as u64));
            group.sampling_mode(SamplingMode::Flat);
            bench_one::<Memtable>(&mut group, threads, &inputs);
            bench_one::<SkipListBaseline>(&mut group, threads, &inputs);
            bench_one::<BTreeMapBaseline>(&mut group, threads, &inputs);
            group.finish();
        }
    }
}

fn config() -> Criterion {
    // Small samples: 24 cases in about two minutes on a 2-core shared machine;
    // within-run ratios are what matter.
    Criterion::default()
        .sample_size(10)
        .warm_up_time(Duration::from_millis(300))
        .measurement_time(Duration::from_secs(2))
}

criterion_group! {
    name = benches;
    config = config();
    targets = bench_inserts
}
criterion_main!(benches);
