//! The CQL lexer: identifiers, quoted strings and identifiers, numbers and
//! punctuation, each with its byte offset.
//!
//! Owns the token syntax every CQL parser shares (`ddl` for CREATE TABLE and the
//! `WITH` settings, `options` through `ddl` for `--table-options` text, and the
//! DML parsers to come). Pure, any thread; a lexer borrows its text.
//!
//! Invariants:
//! 1. Every token and every error carries the byte offset where it starts in the
//!    text, so errors point into what the operator typed.
//! 2. Strings use CQL's escape: a doubled quote character is one quote; `"..."`
//!    is a quoted identifier (`Tok::Str { double: true }`), `'...'` a string.
//! 3. A number token is text that `f64` parses (sign included), kept as typed so
//!    that integer options keep their exact digits.
//! 4. Unquoted identifiers are returned as typed; folding to lower case (CQL's
//!    rule) is the parser's job, since option values must keep their case.

/// `s` as a CQL string literal: single quotes, inner quotes doubled.
pub(crate) fn quote(s: &str) -> String {
    format!("'{}'", s.replace('\'', "''"))
}

/// A token of the option / DDL syntax.
#[derive(Clone, Debug, PartialEq)]
pub(crate) enum Tok {
    /// Unquoted identifier or keyword, as typed.
    Ident(String),
    /// Quoted text; `double` tells `"..."` (a quoted identifier in DDL) from `'...'`.
    Str {
        text: String,
        double: bool,
    },
    /// Number literal, as typed (sign included).
    Num(String),
    /// One of `{ } ( ) : , = . ; < >`.
    Punct(char),
    Eof,
}

impl Tok {
    pub(crate) fn describe(&self) -> String {
        match self {
            Tok::Ident(s) => format!("'{s}'"),
            Tok::Str { text, .. } => format!("string {}", quote(text)),
            Tok::Num(n) => format!("number {n}"),
            Tok::Punct(c) => format!("'{c}'"),
            Tok::Eof => "end of input".to_string(),
        }
    }

    pub(crate) fn is_keyword(&self, kw: &str) -> bool {
        matches!(self, Tok::Ident(s) if s.eq_ignore_ascii_case(kw))
    }
}

/// A syntax error at a byte offset; callers turn it into the error of their
/// context ([`super::CqlError::syntax`] for statements, an option error for a
/// table option).
#[derive(Debug)]
pub(crate) struct SyntaxError {
    pub pos: usize,
    pub msg: String,
}

pub(crate) struct Lexer<'a> {
    src: &'a str,
    pos: usize,
    peeked: Option<(Tok, usize)>,
}

impl<'a> Lexer<'a> {
    pub(crate) fn new(src: &'a str) -> Lexer<'a> {
        Lexer {
            src,
            pos: 0,
            peeked: None,
        }
    }

    pub(crate) fn peek(&mut self) -> std::result::Result<&(Tok, usize), SyntaxError> {
        if self.peeked.is_none() {
            let t = self.lex()?;
            self.peeked = Some(t);
        }
        // Just filled above.
        Ok(self.peeked.get_or_insert((Tok::Eof, self.src.len())))
    }

    pub(crate) fn next_tok(&mut self) -> std::result::Result<(Tok, usize), SyntaxError> {
        match self.peeked.take() {
            Some(t) => Ok(t),
            None => self.lex(),
        }
    }

    /// Consumes `c` or fails naming what was found instead.
    pub(crate) fn expect_punct(&mut self, c: char) -> std::result::Result<usize, SyntaxError> {
        let (t, pos) = self.next_tok()?;
        if t == Tok::Punct(c) {
            Ok(pos)
        } else {
            Err(SyntaxError {
                pos,
                msg: format!("expected '{c}', found {}", t.describe()),
            })
        }
    }

    /// Consumes `c` if it is next.
    pub(crate) fn eat_punct(&mut self, c: char) -> std::result::Result<bool, SyntaxError> {
        if self.peek()?.0 == Tok::Punct(c) {
            self.next_tok()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    /// Consumes keyword `kw` (case-insensitive) if it is next.
    pub(crate) fn eat_keyword(&mut self, kw: &str) -> std::result::Result<bool, SyntaxError> {
        if self.peek()?.0.is_keyword(kw) {
            self.next_tok()?;
            Ok(true)
        } else {
            Ok(false)
        }
    }

    pub(crate) fn expect_keyword(&mut self, kw: &str) -> std::result::Result<usize, SyntaxError> {
        let (t, pos) = self.next_tok()?;
        if t.is_keyword(kw) {
            Ok(pos)
        } else {
            Err(SyntaxError {
                pos,
                msg: format!("expected {kw}, found {}", t.describe()),
            })
        }
    }

    fn lex(&mut self) -> std::result::Result<(Tok, usize), SyntaxError> {
        let rest = &self.src[self.pos..];
        let trimmed = rest.trim_start();
        self.pos += rest.len() - trimmed.len();
        let start = self.pos;
        let mut chars = trimmed.chars();
        let Some(c) = chars.next() else {
            return Ok((Tok::Eof, start));
        };
        if c.is_ascii_alphabetic() || c == '_' {
            let len = trimmed
                .find(|ch: char| !(ch.is_ascii_alphanumeric() || ch == '_'))
                .unwrap_or(trimmed.len());
            self.pos += len;
            return Ok((Tok::Ident(trimmed[..len].to_string()), start));
        }
        if c.is_ascii_digit()
            || ((c == '-' || c == '+')
                && chars.next().is_some_and(|d| d.is_ascii_digit() || d == '.'))
        {
            return self.lex_number(start);
        }
        if c == '\'' || c == '"' {
            return self.lex_string(c, start);
        }
        if "{}():,=.;<>".contains(c) {
            self.pos += 1;
            return Ok((Tok::Punct(c), start));
        }
        Err(SyntaxError {
            pos: start,
            msg: format!("unexpected character {c:?}"),
        })
    }

    fn lex_number(&mut self, start: usize) -> std::result::Result<(Tok, usize), SyntaxError> {
        let bytes = self.src.as_bytes();
        let mut i = start;
        if i < bytes.len() && (bytes[i] == b'-' || bytes[i] == b'+') {
            i += 1;
        }
        while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
            i += 1;
        }
        if i < bytes.len() && (bytes[i] == b'e' || bytes[i] == b'E') {
            i += 1;
            if i < bytes.len() && (bytes[i] == b'-' || bytes[i] == b'+') {
                i += 1;
            }
            while i < bytes.len() && bytes[i].is_ascii_digit() {
                i += 1;
            }
        }
        let text = &self.src[start..i];
        if text.parse::<f64>().is_err() {
            return Err(SyntaxError {
                pos: start,
                msg: format!("malformed number '{text}'"),
            });
        }
        self.pos = i;
        Ok((Tok::Num(text.to_string()), start))
    }

    fn lex_string(
        &mut self,
        quote_char: char,
        start: usize,
    ) -> std::result::Result<(Tok, usize), SyntaxError> {
        let mut text = String::new();
        let mut iter = self.src[start + 1..].char_indices().peekable();
        while let Some((i, ch)) = iter.next() {
            if ch == quote_char {
                // A doubled quote is an escaped quote character.
                if iter.peek().is_some_and(|&(_, n)| n == quote_char) {
                    iter.next();
                    text.push(quote_char);
                    continue;
                }
                self.pos = start + 1 + i + 1;
                return Ok((
                    Tok::Str {
                        text,
                        double: quote_char == '"',
                    },
                    start,
                ));
            }
            text.push(ch);
        }
        Err(SyntaxError {
            pos: start,
            msg: "unterminated string".to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lexer_handles_escapes_and_signs() {
        let mut lex = Lexer::new("'it''s' \"a\"\"b\" -1.5e3 +2 x_1 {");
        let toks: Vec<Tok> = std::iter::from_fn(|| match lex.next_tok() {
            Ok((Tok::Eof, _)) | Err(_) => None,
            Ok((t, _)) => Some(t),
        })
        .collect();
        assert_eq!(
            toks,
            vec![
                Tok::Str {
                    text: "it's".into(),
                    double: false
                },
                Tok::Str {
                    text: "a\"b".into(),
                    double: true
                },
                Tok::Num("-1.5e3".into()),
                Tok::Num("+2".into()),
                Tok::Ident("x_1".into()),
                Tok::Punct('{'),
            ]
        );
        assert!(Lexer::new("1.2.3").next_tok().is_err());
        assert!(Lexer::new("@").next_tok().is_err());
    }
}
