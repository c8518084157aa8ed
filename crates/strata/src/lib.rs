//! Strata: a wide-column LSM storage engine with Cassandra's data model.
//!
//! Module map (see docs/ARCHITECTURE.md for the write and read flows):
//! - [`error`], [`clock`], [`fs`]: the error type, injected time, accounted file I/O.
//! - [`types`], [`token`]: CQL types and values, byte-comparable clustering
//!   encoding, Cassandra's Murmur3 partitioner.
//! - [`data`], [`encoding`]: rows, cells, deletions, reconciliation; the compact row codec.

pub mod bench_slice;
pub mod clock;
pub mod commitlog;
pub mod compaction;
pub mod data;
pub mod db;
pub mod dirlock;
pub mod encoding;
pub mod error;
pub mod fs;
pub mod maintenance;
pub mod manifest;
pub mod memtable;
pub mod model;
pub mod options;
pub mod quarantine;
pub mod read;
pub mod repair;
pub mod schema;
pub mod schema_rebuild;
pub mod sim;
pub mod sstable;
pub mod table;
pub mod table_compaction;
pub mod tablestats;
pub mod token;
pub mod types;

pub use error::{Error, Result};
