//! Strata's experiments and load generators, on the engine library: what `strata
//! stress` and `strata bench` run, with their measurements and charts. The
//! `strata` binary parses arguments, calls this crate and prints; nothing here
//! parses a command line or writes to stdout.
//!
//! Why a crate of its own rather than modules of `strata`: the experiments need
//! plotters and hdrhistogram, which the engine never uses and which must not
//! enter an embedder's build, and the engine must not depend on its own
//! benchmarks (DESIGN.md section 1: later crates sit beside the engine).
//!
//! Module map:
//! - [`stress`]: the cassandra-stress-like workload (`strata stress
//!   write|read|delete`, standard or blob): per-thread seeded populations,
//!   verification on read.
//! - [`values`]: the deterministic value generator every workload writes and
//!   every read recomputes.
//! - [`blobfile`]: files as partitions of fixed-size blocks with a checksum per
//!   block (seed 002's CFS data model), shared by the blob stress workload and
//!   `blobstore`.
//! - [`blobstore`]: seed 002's TestDFSIO test (`strata bench blobstore`, issue
//!   13): write files, delete them, six runs, per compaction strategy.
//! - [`compression`]: seed 001's codec matrix (`strata bench compression`,
//!   issue 14 part 5): ratio, write cost and read latency per codec on two
//!   datasets shaped like the seed's archive tables.
//! - [`memtable`]: seed 004's experiment (`strata bench memtable`, issue 15
//!   part 5): the memtable against a skiplist and a locked `BTreeMap`, inserts
//!   per second, overhead per cell, flush iteration rate.
//! - [`commitlog`]: write throughput and latency per commit-log sync mode and
//!   writer-thread count (`strata bench commitlog`).
//! - [`lcs_fanout`]: seed 000's leveling-multiplier experiment on the real
//!   engine beside the model and the simulator (`strata bench lcs-fanout`).
//! - [`lcs_levels`]: issue 16 item 4, normal LCS against fixed-levels mode
//!   from 10 GiB to 10 TiB in the simulator beside the model, then on the
//!   real engine at scaled sizes (`strata bench lcs-levels`).
//! - [`simulate`]: a simulator configuration from a seed-node preset plus
//!   overrides (`strata simulate`).
//! - [`slice`]: 10-row slice reads from partitions of 1e3..1e6 rows, memtable
//!   and sstable (`strata bench slice`, issue 11).
//! - [`timeseries`]: seed 003's time-series test in simulated time and its
//!   workload (`strata bench timeseries`, issue 12).
//! - [`recompression`]: seed 001's worry as an experiment: LZ4 to Zstd with
//!   `upgradesstables -a` at 60% of a disk quota, and the run refused with a
//!   snapshot present (issue 14).
//! - [`charts`]: the SVG line charts the experiments draw.
//! - [`workdir`]: the fresh work directory an experiment runs in and removes
//!   (and nothing else), and the writer of the report files the operator names.
//!
//! Invariants every module keeps:
//! 1. Runs are reproducible: every random stream is seeded from the caller's
//!    seed; only wall-clock figures differ between two runs.
//! 2. Progress is reported through a callback the caller passes; results are
//!    returned as values (serializable for `--json`), never printed here.
//! 3. Bad input is an `Error::InvalidInput` naming the option, before any work
//!    and before anything is created on disk.
//! 4. An experiment deletes only what it created: it runs in a [`workdir::WorkDir`]
//!    made fresh for it, never in a directory it was given.

pub mod blobfile;
pub mod blobstore;
pub mod charts;
pub mod commitlog;
pub mod compression;
pub mod lcs_fanout;
pub mod lcs_levels;
pub mod memtable;
pub mod recompression;
pub mod simulate;
pub mod slice;
pub mod stress;
pub mod stress_profile;
pub mod stress_report;
pub mod timeseries;
pub mod values;
pub mod workdir;
