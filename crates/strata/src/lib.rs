//! Strata: a wide-column LSM storage engine with Cassandra's data model.
//!
//! Module map (see docs/ARCHITECTURE.md for the write and read flows):
//! - [`error`], [`clock`], [`fs`]: the error type, injected time, accounted file I/O.
//! - [`types`], [`token`]: CQL types and values, byte-comparable clustering
//!   encoding, Cassandra's Murmur3 partitioner.
//! - [`cql`]: the CQL language: lexer, literals, CREATE TABLE and WITH settings;
//!   error kinds one to one with the native protocol's error codes.
//! - [`data`], [`encoding`]: rows, cells, deletions, reconciliation; the compact row codec.
//! - [`version`]: the live set of a table's sstables as one immutable `Version`,
//!   changed only by a checked `VersionEdit` (table, manifest, executor, simulator
//!   and property tests all apply edits with `Version::apply`).
//! - [`compaction`]: strategies (pure deciders), [`compaction::executor`] (the I/O,
//!   over the narrow `CompactionHost`), [`compaction::runtime`] (decisions under
//!   each table's decision lock, the database-wide `Scheduler`).
//! - [`table`], [`table_compaction`], [`db`]: a table's write/read/flush paths and
//!   its side of the compaction runtime; the database over them.
//!
//! Layers and the check that the module graph has no cycles: docs/ARCHITECTURE.md.

pub mod clock;
pub mod codec;
pub mod commitlog;
pub mod compaction;
pub mod cql;
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
pub mod split;
pub mod sstable;
pub mod table;
pub mod table_compaction;
pub mod tablestats;
pub mod token;
pub mod types;
pub mod version;

pub use error::{Error, Result};
