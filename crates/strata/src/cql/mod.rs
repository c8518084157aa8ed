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
//! - [`ddl`]: CREATE TABLE and the `WITH` settings clause.
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

/// The error kinds live with the crate's error type (`crate::error::cql`), so
/// that `error`, at the bottom of the module graph, depends on nothing above it.
pub use crate::error::cql as error;
pub use crate::error::cql::{CqlError, CqlErrorKind};

/// Parses one statement. (Stand-in until the statement parser lands: refuses
/// everything with a syntax error.)
pub fn parse_statement(text: &str) -> std::result::Result<ast::Parsed, CqlError> {
    let _ = text;
    Err(CqlError::syntax(
        "statement",
        0,
        "the statement parser is not built yet",
    ))
}

/// Splits a script into statements, as byte ranges. (Stand-in until the
/// statement parser lands: splits at `;` outside quotes.)
pub fn split_statements(text: &str) -> std::result::Result<Vec<(usize, usize)>, CqlError> {
    let mut out = Vec::new();
    let mut start = 0;
    let mut quote: Option<char> = None;
    for (i, c) in text.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '\'' | '"') => quote = Some(c),
            (None, ';') => {
                out.push((start, i));
                start = i + 1;
            }
            _ => {}
        }
    }
    if !text[start..].trim().is_empty() {
        out.push((start, text.len()));
    }
    Ok(out)
}
