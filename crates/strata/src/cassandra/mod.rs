//! Interoperation with Apache Cassandra's own files: writing a table's data
//! as Cassandra sstables that a stock Cassandra 5.0 loads (`export`, `nb`),
//! with the type names and byte rules of Cassandra's serializers
//! (`marshal`, `vint`).
//!
//! Everything here follows Cassandra 5.0.9's code; where a choice is
//! Strata's own it says so in the submodule's contract, and docs/cassandra.md
//! lists what crosses and what does not.

pub mod export;
pub mod import;
pub mod marshal;
pub mod nb;
pub mod reader;
pub mod vint;
