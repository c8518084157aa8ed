//! Strata: a wide-column LSM storage engine with Cassandra's data model.
//!
//! Module map, bottom layer first (docs/ARCHITECTURE.md has the write, read,
//! flush and compaction flows and the check that the graph has no cycles):
//! - [`error`]: the one error type; corruption carries file and offset;
//!   `error::cql` maps every error to a CQL native-protocol error kind.
//! - [`clock`]: injected time (`SystemClock`, `SimClock`); no engine code reads
//!   the system time.
//! - [`codec`]: an sstable's codec and chunk settings as values.
//! - [`chunk_cache`]: the database's cache of decompressed chunks (user reads).
//! - [`hash`]: a fast hasher for maps keyed by the engine's own integers.
//! - [`lz4`]: LZ4 block decoding by the reference C library.
//! - [`dictionary`]: trained compression dictionaries, one file each per table.
//! - [`fs`]: every file access, counted per cause and level, with fault injection
//!   and incremental disk usage; the queue of obsolete files to unlink.
//! - [`quarantine`]: files an open does not explain, moved aside, never deleted.
//! - [`dirlock`]: one owner per data directory (`flock` on `LOCK`).
//! - [`token`]: Cassandra's Murmur3 partitioner.
//! - [`data`]: rows, cells, deletions, decorated keys, reconciliation.
//! - [`encoding`]: varints and the compact row codec shared by memtable and sstables.
//! - [`types`]: CQL types and values, native serialization, byte-comparable keys.
//! - [`cql`]: the CQL language: lexer, literals, CREATE TABLE and WITH settings.
//! - [`options`]: table options (compaction, compression, TTL, ...), validated.
//! - [`schema`]: keyspaces, tables, columns, typed mutation builders, the catalog.
//! - [`schema_rebuild`]: a lost `schema.json` re-created from sstable identities.
//! - [`sstable`]: the immutable file: chunks, partition and row indexes, filter,
//!   statistics, seeking slices, salvage.
//! - [`split`]: output splitting (none, size, token shard, time window) for flush
//!   and compaction alike.
//! - [`version`]: the live set as one immutable `Version`, changed only by a
//!   checked `VersionEdit`.
//! - [`manifest`]: the durable live-sstable list of a table.
//! - [`commitlog`]: segments, sync modes, replay, retirement.
//! - [`memtable`]: token-sharded copy-on-write B-trees of partitions.
//! - [`read`]: views, lazy merges of seeking slices, paged token-order scans.
//! - [`compaction`]: strategies (pure deciders: STCS, LCS, TWCS, DTCS), the
//!   shared decision steps, the executor, the runtime and its scheduler, the
//!   row-level expiry check.
//! - [`table`]: one table's write, read and flush paths and back-pressure.
//! - [`table_compaction`]: a table's side of the compaction runtime and its
//!   operator commands.
//! - [`db`]: the data directory, recovery, the flush and compactor threads.
//! - [`query`]: the CQL executor: statements run against a database, system
//!   and virtual tables, roles; what the CQL server and the shell call.
//! - [`maintenance`]: verify, scrub, snapshots, single-sstable rewrites.
//! - [`repair`]: manifest rebuild and `sstable import`.
//! - [`tablestats`]: `tablestats` and `compactionstats` figures.
//! - [`model`], [`sim`]: the compaction model and the simulator over synthetic
//!   sstable metadata.
//!
//! Layers and the check that the module graph has no cycles: docs/ARCHITECTURE.md.

pub mod cassandra;
pub mod chunk_cache;
pub mod clock;
pub mod codec;
pub mod commitlog;
pub mod compaction;
pub mod complex;
pub mod counter;
pub mod cql;
pub mod data;
pub mod db;
pub mod dictionary;
pub mod dirlock;
pub mod encoding;
pub mod error;
pub mod fs;
pub mod hash;
pub mod latency;
pub mod lz4;
pub mod maintenance;
pub mod manifest;
pub mod memtable;
pub mod model;
pub mod options;
pub mod quarantine;
pub mod query;
pub mod read;
pub mod repair;
pub mod schema;
pub mod schema_rebuild;
pub mod sim;
pub mod split;
pub mod sstable;
pub mod table;
pub mod table_compaction;
pub mod table_dictionary;
pub mod tablestats;
pub mod token;
pub mod types;
pub mod upgrade;
pub mod version;

pub use error::{Error, Result};
