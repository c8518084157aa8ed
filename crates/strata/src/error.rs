//! The one error type of the engine.
//!
//! Contract:
//! 1. Every fallible public function returns [`Result`]; no engine code panics on
//!    anything that input or the disk can cause.
//! 2. Corruption is its own variant and always carries the file and byte offset, so
//!    an operator can find the damage with `strata verify` or a hex dump.
//! 3. Bad input ([`Error::InvalidInput`], [`Error::InvalidOption`], [`Error::NotFound`],
//!    [`Error::Cql`]) is reported before anything is written: such an error leaves
//!    the database as it was.
//! 4. Every error maps to one CQL native-protocol error kind ([`Error::cql_kind`]),
//!    so a CQL server can answer any failure with a code; a CQL statement's own
//!    errors are [`Error::Cql`], which carries its kind (and the byte position of a
//!    syntax error) itself.

use std::fmt;
use std::path::PathBuf;

pub mod cql;

pub use cql::{CqlError, CqlErrorKind};

#[derive(Debug)]
#[non_exhaustive]
pub enum Error {
    /// Bad input from a caller: names what was wrong.
    InvalidInput(String),
    /// A table or compaction/compression option that is unknown or out of range.
    InvalidOption { option: String, reason: String },
    /// An unknown keyspace, table or column.
    NotFound(String),
    /// A keyspace or table that already exists.
    AlreadyExists(String),
    /// An I/O error, with the file it happened on.
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// On-disk data failed a checksum or could not be decoded.
    Corruption {
        path: PathBuf,
        offset: u64,
        reason: String,
    },
    /// The database refuses writes after a failed fsync (see docs/DURABILITY.md).
    Poisoned(String),
    /// The database is shutting down or the operation was cancelled.
    Cancelled,
    /// Another process owns the data directory (docs/DURABILITY.md, "Ownership"):
    /// names the holder and what to do.
    Locked(String),
    /// A write (or any change) was attempted on a database opened read-only.
    ReadOnly(String),
    /// The data directory is inconsistent in a way only an operator can settle
    /// (a missing manifest or schema, a missing commit-log segment's data): the
    /// message names what is wrong and the command that repairs it. Nothing was
    /// changed.
    NeedsRepair(String),
    /// An error in a CQL statement, with its protocol error kind and, for a
    /// syntax error, the byte position (`cql::error`).
    Cql(CqlError),
    /// The clock cannot stamp writes (it reads before 1970): names its reading.
    Clock(String),
}

pub type Result<T> = std::result::Result<T, Error>;

impl Error {
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Error {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    pub fn corruption(path: impl Into<PathBuf>, offset: u64, reason: impl Into<String>) -> Error {
        Error::Corruption {
            path: path.into(),
            offset,
            reason: reason.into(),
        }
    }

    /// The CQL native-protocol error kind a server answers this error with
    /// (invariant 4). Bad input is `Invalid`; a table option, `ConfigError` (as
    /// Cassandra's ConfigurationException); faults of the engine itself,
    /// `ServerError`.
    pub fn cql_kind(&self) -> CqlErrorKind {
        match self {
            Error::Cql(e) => e.kind,
            Error::InvalidInput(_) | Error::NotFound(_) => CqlErrorKind::Invalid,
            Error::InvalidOption { .. } => CqlErrorKind::ConfigError,
            Error::AlreadyExists(_) => CqlErrorKind::AlreadyExists,
            // A refused write on a read-only open is the server's state, not the
            // statement's fault; likewise everything below.
            Error::ReadOnly(_)
            | Error::Io { .. }
            | Error::Corruption { .. }
            | Error::Poisoned(_)
            | Error::Cancelled
            | Error::Locked(_)
            | Error::NeedsRepair(_)
            | Error::Clock(_) => CqlErrorKind::ServerError,
        }
    }

    pub fn option(option: impl Into<String>, reason: impl Into<String>) -> Error {
        Error::InvalidOption {
            option: option.into(),
            reason: reason.into(),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::InvalidInput(m) => write!(f, "invalid input: {m}"),
            Error::InvalidOption { option, reason } => {
                write!(f, "invalid option '{option}': {reason}")
            }
            Error::NotFound(m) => write!(f, "not found: {m}"),
            Error::AlreadyExists(m) => write!(f, "already exists: {m}"),
            Error::Io { path, source } => write!(f, "I/O error on {}: {source}", path.display()),
            Error::Corruption {
                path,
                offset,
                reason,
            } => {
                write!(
                    f,
                    "corruption in {} at offset {offset}: {reason}",
                    path.display()
                )
            }
            Error::Poisoned(m) => write!(f, "database refuses writes: {m}"),
            Error::Cancelled => write!(f, "operation cancelled"),
            Error::Locked(m) => write!(f, "data directory is in use: {m}"),
            Error::ReadOnly(m) => write!(f, "read-only: {m}"),
            Error::NeedsRepair(m) => write!(f, "refusing to open: {m}"),
            Error::Clock(m) => write!(f, "refusing to write: {m}"),
            Error::Cql(e) => write!(f, "{e}"),
        }
    }
}

impl std::error::Error for Error {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }
}

/// The message of an `InvalidInput` without its "invalid input: " prefix, to nest it.
pub(crate) fn strip_prefix(e: &Error) -> String {
    match e {
        Error::InvalidInput(m) => m.clone(),
        other => other.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_maps_to_a_cql_kind() {
        let syntax = CqlError::syntax("CREATE TABLE", 7, "expected TABLE, found 'x'");
        let cases = [
            (Error::Cql(syntax.clone()), CqlErrorKind::SyntaxError),
            (Error::InvalidInput("x".into()), CqlErrorKind::Invalid),
            (Error::NotFound("ks.t".into()), CqlErrorKind::Invalid),
            (
                Error::option("gc_grace", "unknown"),
                CqlErrorKind::ConfigError,
            ),
            (
                Error::AlreadyExists("ks.t".into()),
                CqlErrorKind::AlreadyExists,
            ),
            (Error::corruption("f", 1, "crc"), CqlErrorKind::ServerError),
            (Error::Poisoned("fsync".into()), CqlErrorKind::ServerError),
        ];
        for (e, kind) in cases {
            assert_eq!(e.cql_kind(), kind, "{e}");
        }
        // The message is the statement's, position included, with no prefix.
        assert_eq!(
            Error::Cql(syntax).to_string(),
            "CREATE TABLE: syntax error at byte 7: expected TABLE, found 'x'"
        );
    }
}
