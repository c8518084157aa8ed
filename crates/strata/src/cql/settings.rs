//! The `WITH` settings clause of CQL (`name = value AND ...`): its syntax,
//! shared by every statement that has one (through `cql::parser`),
//! `--table-options` text and ALTER (through `options`).
//!
//! Owns the syntax only: `options` turns settings into validated
//! `TableOptions`. Pure, any thread.
//!
//! Invariants:
//! 1. A syntax error inside a setting of `--table-options` is an option error
//!    naming the option and the byte (`Error::InvalidOption`, "syntax error at
//!    byte N: ..."), so the operator sees which option to fix; `Error::cql_kind`
//!    maps it to `ConfigError`, as Cassandra answers a bad table option. Inside a
//!    statement the parser reports it as the statement's syntax error, naming
//!    the option ([`parse_setting_syntax`]).
//! 2. A setting's value is a scalar (string, number or boolean, as text) or a
//!    map of scalars; the executor and `options` decide what each name takes.

use super::lexer::{Lexer, SyntaxError, Tok};
use super::literal::{parse_map, scalar, Literal};
use crate::error::{Error, Result};

// ---------------------------------------------------------------------------

/// `name = value`.
#[derive(Clone, Debug, PartialEq)]
pub struct Setting {
    /// Lower-cased, as CQL folds unquoted identifiers.
    pub name: String,
    pub name_pos: usize,
    pub value: Literal,
    pub value_pos: usize,
}

/// Turns a syntax error into an option error naming the option being parsed.
fn syntax(option: &str, e: SyntaxError) -> Error {
    Error::option(option, format!("syntax error at byte {}: {}", e.pos, e.msg))
}

/// `setting (AND setting)*` up to the end of input (empty input: no settings).
pub(crate) fn parse_settings(lex: &mut Lexer<'_>) -> Result<Vec<Setting>> {
    let mut out = Vec::new();
    if lex.peek().map_err(|e| syntax("WITH", e))?.0 == Tok::Eof {
        return Ok(out);
    }
    loop {
        out.push(parse_setting(lex)?);
        let (t, pos) = lex.next_tok().map_err(|e| syntax("WITH", e))?;
        match t {
            Tok::Eof => return Ok(out),
            t if t.is_keyword("AND") => {}
            t => {
                let option = out
                    .last()
                    .map_or("WITH", |s: &Setting| s.name.as_str())
                    .to_string();
                return Err(syntax(
                    &option,
                    SyntaxError {
                        pos,
                        msg: format!("expected AND, found {}", t.describe()),
                    },
                ));
            }
        }
    }
}

/// One `name = value`.
pub(crate) fn parse_setting(lex: &mut Lexer<'_>) -> Result<Setting> {
    parse_setting_syntax(lex).map_err(|(option, e)| syntax(&option, e))
}

/// One `name = value`; a syntax error comes with the option it is in ("WITH"
/// before the name is read), for the caller to report in its own terms: an
/// option error for `--table-options`, a statement syntax error for the CQL
/// parser.
pub(crate) fn parse_setting_syntax(
    lex: &mut Lexer<'_>,
) -> std::result::Result<Setting, (String, SyntaxError)> {
    let with = |e| ("WITH".to_string(), e);
    let (t, name_pos) = lex.next_tok().map_err(with)?;
    let name = match t {
        Tok::Ident(s) => s.to_ascii_lowercase(),
        t => {
            return Err(with(SyntaxError {
                pos: name_pos,
                msg: format!("expected an option name, found {}", t.describe()),
            }))
        }
    };
    let named = |e| (name.clone(), e);
    lex.expect_punct('=').map_err(named)?;
    let (t, value_pos) = lex.next_tok().map_err(named)?;
    let value = match t {
        Tok::Punct('{') => Literal::Map(parse_map(lex).map_err(named)?),
        t => Literal::Scalar(scalar(t, value_pos).map_err(named)?),
    };
    Ok(Setting {
        name,
        name_pos,
        value,
        value_pos,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_syntax_error_in_a_setting_names_the_option_and_the_byte() {
        let err = parse_settings(&mut Lexer::new(
            "gc_grace_seconds = 1 AND compaction = {'class' 'x'}",
        ))
        .unwrap_err();
        match err {
            Error::InvalidOption { option, reason } => {
                assert_eq!(option, "compaction");
                assert!(reason.contains("syntax error at byte 47"), "{reason}");
            }
            other => panic!("expected InvalidOption, got {other:?}"),
        }
        assert!(parse_settings(&mut Lexer::new("")).unwrap().is_empty());
    }
}
