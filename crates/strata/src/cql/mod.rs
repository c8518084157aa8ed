//! CQL, the language: lexer, literals, data definition (DDL) now; data
//! manipulation (INSERT, UPDATE, DELETE, SELECT) and the native-protocol server
//! later. Callers: `schema` (CREATE TABLE), `options` (the `WITH` settings of
//! `--table-options` and ALTER), the CLI (`token`), tests (literals).
//!
//! Layers, each using only those above it:
//! - [`error`]: [`CqlErrorKind`], one kind per CQL native protocol v4 error code,
//!   and [`CqlError`], the structured error a statement returns.
//! - [`lexer`]: tokens with byte offsets.
//! - [`literal`]: values of CQL types from text; option scalars and maps.
//! - [`ast`]: the statement tree; [`parser`]: text to tree for every statement of
//!   Cassandra 5.0's grammar ([`parse_statement`], [`split_statements`] for
//!   scripts); [`print`]: tree to text.
//! - [`settings`]: the `WITH` settings clause, shared by statements and
//!   `--table-options`.
//! - [`ddl`]: CREATE TABLE as the schema layer takes it (scalar types), on top of
//!   the parser.
//!
//! Invariants:
//! 1. Parsing is pure: no I/O, no clock, no catalog; what a statement means for
//!    the database (does the table exist? are its columns consistent?) is
//!    decided by its caller, so the same parser serves the CLI, recovery and a
//!    future server.
//! 2. Every parse error names the byte offset into the text it was given.
//! 3. Every engine error maps to a CQL error kind (`Error::cql_kind`), so a
//!    server can answer any failure with the right protocol code.
//! 4. No cycles: the kinds are `error::cql`, below everything, so the crate's `error` can
//!    hold a `CqlError`; the parsers (`lexer`, `literal`, `ddl`) depend only on
//!    `error` and `types`; `options` and `schema` call the parsers, never the
//!    reverse, so a parser never reaches into the schema or option models.

pub mod ast;
pub mod ddl;
pub mod lexer;
pub mod literal;
pub mod parser;
pub mod print;
pub mod settings;

pub use parser::{parse_statement, split_statements};

/// The error kinds live with the crate's error type (`crate::error::cql`), so
/// that `error`, at the bottom of the module graph, depends on nothing above it.
pub use crate::error::cql as error;
pub use crate::error::cql::{CqlError, CqlErrorKind};
