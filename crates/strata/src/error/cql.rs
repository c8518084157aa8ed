//! CQL error kinds: one per error code of the CQL native protocol v4 (section 9
//! of `native_protocol_v4.spec`), and the error a CQL parse returns.
//!
//! Owns the mapping kind <-> code; pure values, any thread.
//!
//! Invariants:
//! 1. [`CqlErrorKind`] maps one to one onto the v4 codes: [`CqlErrorKind::code`]
//!    and [`CqlErrorKind::from_code`] are inverse, and `ALL` lists every kind once.
//!    The codes go on the wire: a kind's code never changes.
//! 2. A [`CqlError`] of kind `SyntaxError` produced by a parser carries the byte
//!    offset into the statement text where the problem is (`position`), also
//!    written in its message, so an operator can find it in what they typed.

use std::fmt;

/// The error codes of the CQL native protocol v4. The names follow the spec.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CqlErrorKind {
    /// 0x0000: something unexpected happened on the server (a bug, an I/O fault).
    ServerError,
    /// 0x000A: a client message violated the protocol.
    ProtocolError,
    /// 0x0100: the credentials were refused.
    BadCredentials,
    /// 0x1000: not enough replicas alive for the consistency level.
    Unavailable,
    /// 0x1001: the coordinator is overloaded.
    Overloaded,
    /// 0x1002: the coordinator is bootstrapping.
    IsBootstrapping,
    /// 0x1003: a TRUNCATE failed.
    TruncateError,
    /// 0x1100: replicas did not acknowledge a write in time.
    WriteTimeout,
    /// 0x1200: replicas did not answer a read in time.
    ReadTimeout,
    /// 0x1300: a non-timeout failure during a read.
    ReadFailure,
    /// 0x1400: a user-defined function failed.
    FunctionFailure,
    /// 0x1500: a non-timeout failure during a write.
    WriteFailure,
    /// 0x2000: the statement has a syntax error.
    SyntaxError,
    /// 0x2100: the user lacks the permission.
    Unauthorized,
    /// 0x2200: syntactically correct but invalid (unknown column, wrong type, ...).
    Invalid,
    /// 0x2300: invalid because of configuration (a table option, say).
    ConfigError,
    /// 0x2400: the keyspace or table already exists.
    AlreadyExists,
    /// 0x2500: the prepared statement id is unknown.
    Unprepared,
}

impl CqlErrorKind {
    /// Every kind, in code order.
    pub const ALL: [CqlErrorKind; 18] = [
        CqlErrorKind::ServerError,
        CqlErrorKind::ProtocolError,
        CqlErrorKind::BadCredentials,
        CqlErrorKind::Unavailable,
        CqlErrorKind::Overloaded,
        CqlErrorKind::IsBootstrapping,
        CqlErrorKind::TruncateError,
        CqlErrorKind::WriteTimeout,
        CqlErrorKind::ReadTimeout,
        CqlErrorKind::ReadFailure,
        CqlErrorKind::FunctionFailure,
        CqlErrorKind::WriteFailure,
        CqlErrorKind::SyntaxError,
        CqlErrorKind::Unauthorized,
        CqlErrorKind::Invalid,
        CqlErrorKind::ConfigError,
        CqlErrorKind::AlreadyExists,
        CqlErrorKind::Unprepared,
    ];

    /// The protocol's `[int]` error code (invariant 1).
    pub fn code(self) -> u32 {
        match self {
            CqlErrorKind::ServerError => 0x0000,
            CqlErrorKind::ProtocolError => 0x000A,
            CqlErrorKind::BadCredentials => 0x0100,
            CqlErrorKind::Unavailable => 0x1000,
            CqlErrorKind::Overloaded => 0x1001,
            CqlErrorKind::IsBootstrapping => 0x1002,
            CqlErrorKind::TruncateError => 0x1003,
            CqlErrorKind::WriteTimeout => 0x1100,
            CqlErrorKind::ReadTimeout => 0x1200,
            CqlErrorKind::ReadFailure => 0x1300,
            CqlErrorKind::FunctionFailure => 0x1400,
            CqlErrorKind::WriteFailure => 0x1500,
            CqlErrorKind::SyntaxError => 0x2000,
            CqlErrorKind::Unauthorized => 0x2100,
            CqlErrorKind::Invalid => 0x2200,
            CqlErrorKind::ConfigError => 0x2300,
            CqlErrorKind::AlreadyExists => 0x2400,
            CqlErrorKind::Unprepared => 0x2500,
        }
    }

    /// The kind of a protocol error code; `None` for a code v4 does not define.
    pub fn from_code(code: u32) -> Option<CqlErrorKind> {
        CqlErrorKind::ALL.into_iter().find(|k| k.code() == code)
    }

    /// The spec's name for the code (`Syntax_error`, `Already_exists`, ...).
    pub fn spec_name(self) -> &'static str {
        match self {
            CqlErrorKind::ServerError => "Server error",
            CqlErrorKind::ProtocolError => "Protocol error",
            CqlErrorKind::BadCredentials => "Bad credentials",
            CqlErrorKind::Unavailable => "Unavailable exception",
            CqlErrorKind::Overloaded => "Overloaded",
            CqlErrorKind::IsBootstrapping => "Is_bootstrapping",
            CqlErrorKind::TruncateError => "Truncate_error",
            CqlErrorKind::WriteTimeout => "Write_timeout",
            CqlErrorKind::ReadTimeout => "Read_timeout",
            CqlErrorKind::ReadFailure => "Read_failure",
            CqlErrorKind::FunctionFailure => "Function_failure",
            CqlErrorKind::WriteFailure => "Write_failure",
            CqlErrorKind::SyntaxError => "Syntax_error",
            CqlErrorKind::Unauthorized => "Unauthorized",
            CqlErrorKind::Invalid => "Invalid",
            CqlErrorKind::ConfigError => "Config_error",
            CqlErrorKind::AlreadyExists => "Already_exists",
            CqlErrorKind::Unprepared => "Unprepared",
        }
    }
}

/// An error in a CQL statement: its kind (the code a server would answer) and a
/// message for the operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CqlError {
    pub kind: CqlErrorKind,
    /// The whole message, position included when there is one.
    pub message: String,
    /// Byte offset into the statement text (invariant 2).
    pub position: Option<usize>,
}

impl CqlError {
    /// A syntax error in `statement` (e.g. "CREATE TABLE") at byte `position`.
    pub fn syntax(statement: &str, position: usize, msg: &str) -> CqlError {
        CqlError {
            kind: CqlErrorKind::SyntaxError,
            message: format!("{statement}: syntax error at byte {position}: {msg}"),
            position: Some(position),
        }
    }
}

impl fmt::Display for CqlError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The codes as `native_protocol_v4.spec` section 9 lists them.
    #[test]
    fn codes_are_the_v4_protocol_codes() {
        let expected: [(CqlErrorKind, u32); 18] = [
            (CqlErrorKind::ServerError, 0x0000),
            (CqlErrorKind::ProtocolError, 0x000A),
            (CqlErrorKind::BadCredentials, 0x0100),
            (CqlErrorKind::Unavailable, 0x1000),
            (CqlErrorKind::Overloaded, 0x1001),
            (CqlErrorKind::IsBootstrapping, 0x1002),
            (CqlErrorKind::TruncateError, 0x1003),
            (CqlErrorKind::WriteTimeout, 0x1100),
            (CqlErrorKind::ReadTimeout, 0x1200),
            (CqlErrorKind::ReadFailure, 0x1300),
            (CqlErrorKind::FunctionFailure, 0x1400),
            (CqlErrorKind::WriteFailure, 0x1500),
            (CqlErrorKind::SyntaxError, 0x2000),
            (CqlErrorKind::Unauthorized, 0x2100),
            (CqlErrorKind::Invalid, 0x2200),
            (CqlErrorKind::ConfigError, 0x2300),
            (CqlErrorKind::AlreadyExists, 0x2400),
            (CqlErrorKind::Unprepared, 0x2500),
        ];
        for (kind, code) in expected {
            assert_eq!(kind.code(), code, "{kind:?}");
            assert_eq!(CqlErrorKind::from_code(code), Some(kind), "{code:#06x}");
        }
        assert_eq!(CqlErrorKind::ALL.map(|k| k.code()), expected.map(|e| e.1));
    }

    #[test]
    fn unknown_codes_have_no_kind() {
        // 0x1600 (CDC write failure) and 0x2600 arrived after v4.
        for code in [0x0001, 0x1600, 0x2600, u32::MAX] {
            assert_eq!(CqlErrorKind::from_code(code), None, "{code:#x}");
        }
    }

    #[test]
    fn syntax_errors_carry_their_position() {
        let e = CqlError::syntax("CREATE TABLE", 38, "expected ',' or ')', found 'v'");
        assert_eq!(e.kind, CqlErrorKind::SyntaxError);
        assert_eq!(e.position, Some(38));
        assert_eq!(
            e.to_string(),
            "CREATE TABLE: syntax error at byte 38: expected ',' or ')', found 'v'"
        );
    }
}
