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
        Lexer::at(src, 0)
    }

    /// A lexer over `src` starting at byte `pos` (a token boundary), its offsets
    /// counted from the start of `src`: the statement parser hands it the text of a
    /// `WITH` setting in place, so positions point into the whole statement.
    pub(crate) fn at(src: &'a str, pos: usize) -> Lexer<'a> {
        Lexer {
            src,
            pos: pos.min(src.len()),
            peeked: None,
        }
    }

    /// Where the next token starts (or where scanning resumes): the byte after the
    /// last token consumed, before any whitespace.
    pub(crate) fn offset(&self) -> usize {
        match &self.peeked {
            Some((_, pos)) => *pos,
            None => self.pos,
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

    /// Skips whitespace and comments (`-- ...`, `// ...` to the end of the line,
    /// `/* ... */`), which the statement lexer skips too.
    fn skip_blanks(&mut self) -> std::result::Result<(), SyntaxError> {
        loop {
            let rest = &self.src[self.pos..];
            let trimmed = rest.trim_start();
            self.pos += rest.len() - trimmed.len();
            if trimmed.starts_with("--") || trimmed.starts_with("//") {
                self.pos += trimmed.find(['\n', '\r']).unwrap_or(trimmed.len());
            } else if let Some(body) = trimmed.strip_prefix("/*") {
                match body.find("*/") {
                    Some(i) => self.pos += 2 + i + 2,
                    None => {
                        return Err(SyntaxError {
                            pos: self.pos,
                            msg: "unterminated comment".to_string(),
                        })
                    }
                }
            } else {
                return Ok(());
            }
        }
    }

    fn lex(&mut self) -> std::result::Result<(Tok, usize), SyntaxError> {
        self.skip_blanks()?;
        let trimmed = &self.src[self.pos..];
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
        if let Some(body) = trimmed.strip_prefix("$$") {
            // A pg-style string: everything up to the next `$$`, no escapes.
            return match body.find("$$") {
                Some(i) => {
                    self.pos = start + 2 + i + 2;
                    Ok((
                        Tok::Str {
                            text: body[..i].to_string(),
                            double: false,
                        },
                        start,
                    ))
                }
                None => Err(SyntaxError {
                    pos: start,
                    msg: "unterminated string".to_string(),
                }),
            };
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

// ---------------------------------------------------------------------------
// Statement tokens
// ---------------------------------------------------------------------------

/// The kind of a statement token ([`tokenize`]); the token syntax of Cassandra's
/// `Lexer.g`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A word: an identifier or a keyword, as typed (`IDENT` and every `K_*`).
    Word,
    /// `"..."`, at least one character (`QUOTED_NAME`).
    Quoted,
    /// `""` (`EMPTY_QUOTED_NAME`): the legacy empty column name.
    EmptyQuoted,
    /// `'...'` or `$$...$$` (`STRING_LITERAL`).
    Str,
    /// `-?[0-9]+`
    Integer,
    /// `-?[0-9]+(.[0-9]*)?([eE][+-]?[0-9]+)?` with a dot or an exponent; also
    /// `-NaN` and `-Infinity`.
    Float,
    /// `1h30m`, `P1DT2H`, `P2W`, `P0001-02-03T04:05:06`.
    Duration,
    /// An unquoted UUID.
    Uuid,
    /// `0x` and hex digits.
    Hex,
    /// `?`
    Qmark,
    /// Punctuation: `( ) [ ] { } , ; . : = < > <= >= != + - * / % += -= ..`.
    Punct,
    Eof,
}

/// A statement token: its kind and byte range; `value` holds the unescaped
/// text of a string or a quoted name.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct Token {
    pub kind: Kind,
    pub start: usize,
    pub end: usize,
    pub value: Option<String>,
}

fn is_ident_byte(b: u8) -> bool {
    b.is_ascii_alphanumeric() || b == b'_'
}

fn digits(b: &[u8], i: usize) -> usize {
    b[i.min(b.len())..]
        .iter()
        .take_while(|c| c.is_ascii_digit())
        .count()
}

/// Length of a UUID (`8-4-4-4-12` hex digits) at `i`, or 0.
fn uuid_len(b: &[u8], i: usize) -> usize {
    let Some(s) = b.get(i..i + 36) else {
        return 0;
    };
    let ok = s.iter().enumerate().all(|(k, &c)| match k {
        8 | 13 | 18 | 23 => c == b'-',
        _ => c.is_ascii_hexdigit(),
    });
    if ok {
        36
    } else {
        0
    }
}

/// Length of a duration in units (`12h30m`, `1us`, `2µs`) at `i` (after an
/// optional sign), or 0.
fn unit_duration_len(b: &[u8], i: usize) -> usize {
    let mut j = i;
    loop {
        let d = digits(b, j);
        if d == 0 {
            break;
        }
        let u = j + d;
        let lower = |k: usize| b.get(k).map(|c| c.to_ascii_lowercase());
        let unit = match (lower(u), lower(u + 1)) {
            (Some(b'm'), Some(b'o')) | (Some(b'm'), Some(b's')) => 2,
            (Some(b'u'), Some(b's')) | (Some(b'n'), Some(b's')) => 2,
            (Some(b'y' | b'w' | b'd' | b'h' | b'm' | b's'), _) => 1,
            // U+00B5 MICRO SIGN, then 's'.
            (Some(0xc2), _) if b.get(u + 1) == Some(&0xb5) && lower(u + 2) == Some(b's') => 3,
            _ => 0,
        };
        if unit == 0 {
            break;
        }
        j = u + unit;
    }
    j - i
}

/// Length of an ISO 8601 duration starting with `P` at `i`, or 0.
fn iso_duration_len(b: &[u8], i: usize) -> usize {
    if b.get(i) != Some(&b'P') {
        return 0;
    }
    let p = i + 1;
    // The alternative format: PYYYY-MM-DDThh:mm:ss.
    let alt = b"0000-00-00T00:00:00";
    if b.get(p..p + alt.len()).is_some_and(|s| {
        s.iter().zip(alt).all(|(&c, &f)| {
            if f == b'0' {
                c.is_ascii_digit()
            } else {
                c == f
            }
        })
    }) {
        return 1 + alt.len();
    }
    // Components `digits designator` in the order given, each at most once.
    let components = |mut j: usize, order: &[u8]| -> usize {
        let start = j;
        let mut next = 0;
        loop {
            let d = digits(b, j);
            if d == 0 {
                return j - start;
            }
            match b.get(j + d) {
                Some(c) if order[next..].contains(c) => {
                    next += order[next..].iter().position(|o| o == c).unwrap_or(0) + 1;
                    j += d + 1;
                }
                _ => return j - start,
            }
        }
    };
    let weeks = digits(b, p);
    if weeks > 0 && b.get(p + weeks) == Some(&b'W') {
        return 1 + weeks + 1;
    }
    let date = components(p, b"YMD");
    let mut len = 1 + date;
    if b.get(p + date) == Some(&b'T') {
        let time = components(p + date + 1, b"HMS");
        if time > 0 {
            len += 1 + time;
        }
    }
    if len == 1 {
        0
    } else {
        len
    }
}

/// Length of a number at `i` (after an optional sign) and whether it is a
/// float. `1..2` is an integer and a range; `1...2` a float `1.` and a range.
fn number_len(b: &[u8], i: usize) -> (usize, bool) {
    let d = digits(b, i);
    let mut j = i + d;
    let mut float = false;
    if b.get(j) == Some(&b'.') && !(b.get(j + 1) == Some(&b'.') && b.get(j + 2) != Some(&b'.')) {
        j += 1 + digits(b, j + 1);
        float = true;
    }
    if matches!(b.get(j), Some(b'e' | b'E')) {
        let mut k = j + 1;
        if matches!(b.get(k), Some(b'+' | b'-')) {
            k += 1;
        }
        let e = digits(b, k);
        if e > 0 {
            j = k + e;
            float = true;
        }
    }
    (j - i, float)
}

/// Splits a statement (or a script) into tokens, skipping whitespace and
/// comments; the last token is `Eof`. Linear in the text's length.
pub(crate) fn tokenize(src: &str) -> std::result::Result<Vec<Token>, SyntaxError> {
    let b = src.as_bytes();
    let mut out = Vec::new();
    let mut i = 0;
    let tok = |kind, start, end| Token {
        kind,
        start,
        end,
        value: None,
    };
    while i < b.len() {
        let c = b[i];
        let start = i;
        match c {
            b' ' | b'\t' | b'\n' | b'\r' | 0x0b | 0x0c => {
                i += 1;
                continue;
            }
            b'-' if b.get(i + 1) == Some(&b'-') => {
                i += b[i..]
                    .iter()
                    .position(|&c| c == b'\n' || c == b'\r')
                    .unwrap_or(b.len() - i);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'/') => {
                i += b[i..]
                    .iter()
                    .position(|&c| c == b'\n' || c == b'\r')
                    .unwrap_or(b.len() - i);
                continue;
            }
            b'/' if b.get(i + 1) == Some(&b'*') => {
                match src[i + 2..].find("*/") {
                    Some(k) => i += 2 + k + 2,
                    None => {
                        return Err(SyntaxError {
                            pos: start,
                            msg: "unterminated comment".to_string(),
                        })
                    }
                }
                continue;
            }
            b'\'' | b'"' => {
                let mut text = String::new();
                let mut j = i + 1;
                let mut run = j;
                loop {
                    match b.get(j) {
                        None => {
                            return Err(SyntaxError {
                                pos: start,
                                msg: if c == b'"' {
                                    "unterminated quoted name".to_string()
                                } else {
                                    "unterminated string".to_string()
                                },
                            })
                        }
                        Some(&q) if q == c => {
                            text.push_str(&src[run..j]);
                            if b.get(j + 1) == Some(&c) {
                                text.push(c as char);
                                j += 2;
                                run = j;
                            } else {
                                j += 1;
                                break;
                            }
                        }
                        Some(_) => j += 1,
                    }
                }
                let kind = match c {
                    b'\'' => Kind::Str,
                    _ if j == i + 2 => Kind::EmptyQuoted,
                    _ => Kind::Quoted,
                };
                out.push(Token {
                    kind,
                    start,
                    end: j,
                    value: Some(text),
                });
                i = j;
                continue;
            }
            b'$' if b.get(i + 1) == Some(&b'$') => match src[i + 2..].find("$$") {
                Some(k) => {
                    out.push(Token {
                        kind: Kind::Str,
                        start,
                        end: i + 2 + k + 2,
                        value: Some(src[i + 2..i + 2 + k].to_string()),
                    });
                    i += 2 + k + 2;
                    continue;
                }
                None => {
                    return Err(SyntaxError {
                        pos: start,
                        msg: "unterminated $$ string".to_string(),
                    })
                }
            },
            _ => {}
        }
        // Literals and words: the longest match wins, a duration over a word of
        // the same length (Lexer.g lists DURATION first).
        let neg = usize::from(c == b'-');
        let word = if c.is_ascii_alphabetic() {
            b[i..].iter().take_while(|&&c| is_ident_byte(c)).count()
        } else {
            0
        };
        let uuid = if neg == 0 { uuid_len(b, i) } else { 0 };
        let hex = if c == b'0' && matches!(b.get(i + 1), Some(b'x' | b'X')) {
            2 + b[i + 2..]
                .iter()
                .take_while(|c| c.is_ascii_hexdigit())
                .count()
        } else {
            0
        };
        let (num, float) = if b.get(i + neg).is_some_and(u8::is_ascii_digit) {
            let (n, f) = number_len(b, i + neg);
            (neg + n, f)
        } else {
            (0, false)
        };
        let dur = {
            let u = unit_duration_len(b, i + neg);
            let iso = iso_duration_len(b, i + neg);
            let d = u.max(iso);
            if d > 0 {
                neg + d
            } else {
                0
            }
        };
        let best = word.max(uuid).max(hex).max(num).max(dur);
        if best > 0 {
            let kind = if best == uuid {
                Kind::Uuid
            } else if best == hex && hex > num {
                Kind::Hex
            } else if best == dur && dur >= word && dur > num {
                Kind::Duration
            } else if best == word {
                Kind::Word
            } else if float {
                Kind::Float
            } else {
                Kind::Integer
            };
            out.push(tok(kind, start, i + best));
            i += best;
            continue;
        }
        if c == b'-' {
            // `-NaN`, `-Infinity` are tokens of their own (K_NEGATIVE_NAN, ...).
            let w = b[i + 1..].iter().take_while(|&&c| is_ident_byte(c)).count();
            let word = &src[i + 1..i + 1 + w];
            if word.eq_ignore_ascii_case("nan") || word.eq_ignore_ascii_case("infinity") {
                out.push(tok(Kind::Float, start, i + 1 + w));
                i += 1 + w;
                continue;
            }
            // Cassandra's lexer commits to those tokens at `-i` or `-n` (any
            // case), so `-i` or `-nx` is a syntax error at the first character
            // that leaves the word, where `- i` is a negated column.
            for whole in ["nan", "infinity"] {
                let at = b[i + 1..]
                    .iter()
                    .zip(whole.bytes())
                    .take_while(|(c, w)| c.eq_ignore_ascii_case(w))
                    .count();
                if at > 0 {
                    let ch = src[i + 1 + at..].chars().next();
                    return Err(SyntaxError {
                        pos: i + 1 + at,
                        msg: match ch {
                            Some(ch) => format!(
                                "mismatched character {ch:?}: '-' then '{}' begins -{}",
                                &src[i + 1..i + 1 + at],
                                if whole == "nan" { "NaN" } else { "Infinity" }
                            ),
                            None => format!(
                                "unexpected end of input: '-' then '{}' begins -{}",
                                &src[i + 1..i + 1 + at],
                                if whole == "nan" { "NaN" } else { "Infinity" }
                            ),
                        },
                    });
                }
            }
        }
        let two = b.get(i..i + 2).unwrap_or(&[]);
        let len = match two {
            b"<=" | b">=" | b"!=" | b"+=" | b"-=" | b".." => 2,
            _ if b"()[]{},;.:=<>+-*/%".contains(&c) => 1,
            _ if c == b'?' => {
                out.push(tok(Kind::Qmark, start, i + 1));
                i += 1;
                continue;
            }
            _ => {
                let ch = src[i..].chars().next().unwrap_or('?');
                return Err(SyntaxError {
                    pos: start,
                    msg: format!("unexpected character {ch:?}"),
                });
            }
        };
        out.push(tok(Kind::Punct, start, i + len));
        i += len;
    }
    out.push(tok(Kind::Eof, b.len(), b.len()));
    Ok(out)
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
